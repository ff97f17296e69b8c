//! TLS for the protocol (MySQL's SSLRequest upgrade) and the RSA key pair
//! of `caching_sha2_password`: loading certificates and keys from PEM
//! files, generating a self-signed CA and server certificate (MySQL's
//! `auto_generate_certs`), and what a secured connection reports
//! ([`TlsInfo`]).
//!
//! rustls with the `ring` provider; TLS 1.2 and 1.3. A client certificate
//! is asked for only when a CA to check it against is configured, and is
//! optional even then: a client that sends one must present one that CA
//! issued, a client that sends none is not refused for it.
//!
//! Invariants: keys written to disk are created with mode 0600 before any
//! byte is written; a directory holding some but not all of the generated
//! files is an error, never overwritten. No locking.

use std::fmt;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{CipherSuite, ProtocolVersion, RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// A server's TLS configuration: its certificate chain and key, and
/// optionally the CA that client certificates must chain to.
#[derive(Clone)]
pub struct Tls {
    pub(crate) acceptor: TlsAcceptor,
    verifies_clients: bool,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("verifies_clients", &self.verifies_clients)
            .finish_non_exhaustive()
    }
}

fn invalid(what: impl fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Tls {
    /// From PEM text: `cert` the server's certificate chain (leaf first),
    /// `key` its private key (PKCS#8, PKCS#1 or SEC1), `ca` the
    /// certificates client certificates are checked against, if any.
    pub fn from_pem(cert: &[u8], key: &[u8], ca: Option<&[u8]>) -> io::Result<Tls> {
        let chain = CertificateDer::pem_slice_iter(cert)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(format!("server certificate: {e}")))?;
        if chain.is_empty() {
            return Err(invalid("server certificate: no CERTIFICATE in the PEM"));
        }
        let key =
            PrivateKeyDer::from_pem_slice(key).map_err(|e| invalid(format!("server key: {e}")))?;
        let builder = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(invalid)?;
        let builder = match ca {
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                for c in CertificateDer::pem_slice_iter(ca) {
                    let c = c.map_err(|e| invalid(format!("CA certificate: {e}")))?;
                    roots
                        .add(c)
                        .map_err(|e| invalid(format!("CA certificate: {e}")))?;
                }
                if roots.is_empty() {
                    return Err(invalid("CA certificate: no CERTIFICATE in the PEM"));
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                        .allow_unauthenticated()
                        .build()
                        .map_err(|e| invalid(format!("CA certificate: {e}")))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let config = builder
            .with_single_cert(chain, key)
            .map_err(|e| invalid(format!("server certificate and key: {e}")))?;
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            verifies_clients: ca.is_some(),
        })
    }

    /// From PEM files (see [`Tls::from_pem`]); errors name the file.
    pub fn from_files(cert: &Path, key: &Path, ca: Option<&Path>) -> io::Result<Tls> {
        let read = |p: &Path| {
            fs::read(p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
        };
        let ca = ca.map(read).transpose()?;
        Tls::from_pem(&read(cert)?, &read(key)?, ca.as_deref())
    }

    /// Whether client certificates are checked (a CA was given).
    pub fn verifies_clients(&self) -> bool {
        self.verifies_clients
    }
}

/// The TLS session of a connection, as `SHOW STATUS` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsInfo {
    /// `TLSv1.3` or `TLSv1.2` (`Ssl_version`).
    pub version: &'static str,
    /// The cipher suite in OpenSSL's spelling, as MySQL reports it
    /// (`Ssl_cipher`): `TLS_AES_256_GCM_SHA384`,
    /// `ECDHE-ECDSA-AES128-GCM-SHA256`.
    pub cipher: &'static str,
}

impl TlsInfo {
    pub(crate) fn of(conn: &rustls::ServerConnection) -> TlsInfo {
        let version = match conn.protocol_version() {
            Some(ProtocolVersion::TLSv1_3) => "TLSv1.3",
            Some(ProtocolVersion::TLSv1_2) => "TLSv1.2",
            _ => "",
        };
        let cipher = conn
            .negotiated_cipher_suite()
            .map_or("", |s| openssl_name(s.suite()));
        TlsInfo { version, cipher }
    }
}

/// OpenSSL's name of each suite the ring provider offers.
fn openssl_name(s: CipherSuite) -> &'static str {
    use CipherSuite as C;
    match s {
        C::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        C::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        C::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        _ => "",
    }
}

/// The files of a generated certificate set in a directory.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// `ca.pem`: the self-signed CA that issued the server certificate
    /// (what a client trusts to verify the server).
    pub ca: PathBuf,
    /// `ca-key.pem`: the CA's key.
    pub ca_key: PathBuf,
    /// `server-cert.pem`.
    pub cert: PathBuf,
    /// `server-key.pem`.
    pub key: PathBuf,
    /// Whether they were made by this call (else they were already there).
    pub generated: bool,
}

impl CertFiles {
    fn in_dir(dir: &Path) -> CertFiles {
        CertFiles {
            ca: dir.join("ca.pem"),
            ca_key: dir.join("ca-key.pem"),
            cert: dir.join("server-cert.pem"),
            key: dir.join("server-key.pem"),
            generated: false,
        }
    }

    fn all(&self) -> [&Path; 4] {
        [&self.ca, &self.ca_key, &self.cert, &self.key]
    }
}

/// The names the generated server certificate is valid for.
const SERVER_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Writes `data` to a new file `path` (failing if it exists), with mode
/// 0600 for a key.
fn write_new(path: &Path, data: &[u8], secret: bool) -> io::Result<()> {
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        o.mode(if secret { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut f = o
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    f.write_all(data)?;
    f.sync_all()
}

/// The current year (UTC), from the system clock.
fn this_year() -> i32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Mean Gregorian year; off by a day at most around New Year.
    1970 + (secs / 31_556_952) as i32
}

/// MySQL's `auto_generate_certs`: if `dir` has none of `ca.pem`,
/// `ca-key.pem`, `server-cert.pem`, `server-key.pem`, makes a self-signed
/// CA (ECDSA P-256) and a server certificate it signs, valid for
/// `localhost`, `127.0.0.1` and `::1` for ten years, keys mode 0600; if
/// it has all four, reuses them; if only some, fails naming the missing.
pub fn auto_generate_certs(dir: &Path) -> io::Result<CertFiles> {
    let mut files = CertFiles::in_dir(dir);
    let present: Vec<bool> = files.all().iter().map(|p| p.exists()).collect();
    if present.iter().all(|&p| p) {
        return Ok(files);
    }
    if present.iter().any(|&p| p) {
        let missing: Vec<String> = files
            .all()
            .iter()
            .zip(&present)
            .filter(|(_, &p)| !p)
            .map(|(f, _)| f.display().to_string())
            .collect();
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "some certificate files are missing ({}): remove the others to have \
                 them made again, or name the files with --ssl-cert and --ssl-key",
                missing.join(", ")
            ),
        ));
    }
    let err = |e: rcgen::Error| invalid(format!("generating certificates: {e}"));
    let year = this_year();
    let validity = |p: &mut rcgen::CertificateParams| {
        p.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
        p.not_after = rcgen::date_time_ymd(year + 10, 1, 1);
    };

    let ca_key = rcgen::KeyPair::generate().map_err(err)?;
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.distinguished_name.push(
        rcgen::DnType::CommonName,
        "CairnDB_Server_Auto_Generated_CA_Certificate",
    );
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut ca);
    let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
    let issuer = rcgen::Issuer::new(ca, &ca_key);

    let key = rcgen::KeyPair::generate().map_err(err)?;
    let names: Vec<String> = SERVER_NAMES.iter().map(|s| s.to_string()).collect();
    let mut server = rcgen::CertificateParams::new(names).map_err(err)?;
    server.distinguished_name.push(
        rcgen::DnType::CommonName,
        "CairnDB_Server_Auto_Generated_Server_Certificate",
    );
    server.key_usages = vec![
        rcgen::KeyUsagePurpose::DigitalSignature,
        rcgen::KeyUsagePurpose::KeyEncipherment,
    ];
    server.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    server.use_authority_key_identifier_extension = true;
    validity(&mut server);
    let cert = server.signed_by(&key, &issuer).map_err(err)?;

    fs::create_dir_all(dir)?;
    // Keys first, so a crash leaves a set that is refused, not reused.
    write_new(&files.ca_key, ca_key.serialize_pem().as_bytes(), true)?;
    write_new(&files.key, key.serialize_pem().as_bytes(), true)?;
    write_new(&files.cert, cert.pem().as_bytes(), false)?;
    write_new(&files.ca, ca_cert.pem().as_bytes(), false)?;
    files.generated = true;
    Ok(files)
}

/// The RSA key pair of `caching_sha2_password`, for a client without TLS:
/// it asks for the public key and sends its password encrypted with it
/// (RSA-OAEP with SHA-1, the password XORed with the nonce).
#[derive(Clone)]
pub struct RsaKeys {
    private: rsa::RsaPrivateKey,
    /// The public key as PEM (`-----BEGIN PUBLIC KEY-----`), sent to
    /// clients.
    pub(crate) public_pem: Arc<[u8]>,
}

impl fmt::Debug for RsaKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RsaKeys").finish_non_exhaustive()
    }
}

impl RsaKeys {
    /// A new 2048-bit key pair.
    pub fn generate() -> io::Result<RsaKeys> {
        let key = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048)
            .map_err(|e| invalid(format!("generating an RSA key: {e}")))?;
        RsaKeys::from_key(key)
    }

    fn from_key(private: rsa::RsaPrivateKey) -> io::Result<RsaKeys> {
        use rsa::pkcs8::EncodePublicKey as _;
        let public_pem = private
            .to_public_key()
            .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
            .map_err(|e| invalid(format!("RSA public key: {e}")))?;
        Ok(RsaKeys {
            private,
            public_pem: public_pem.into_bytes().into(),
        })
    }

    /// From a private key in PEM (PKCS#8 or PKCS#1).
    pub fn from_pem(pem: &str) -> io::Result<RsaKeys> {
        use rsa::pkcs1::DecodeRsaPrivateKey as _;
        use rsa::pkcs8::DecodePrivateKey as _;
        let key = rsa::RsaPrivateKey::from_pkcs8_pem(pem)
            .or_else(|_| rsa::RsaPrivateKey::from_pkcs1_pem(pem))
            .map_err(|e| invalid(format!("RSA private key: {e}")))?;
        RsaKeys::from_key(key)
    }

    /// MySQL's `caching_sha2_password_auto_generate_rsa_keys`: reads
    /// `private_key.pem` in `dir`, or makes a key pair and writes it there
    /// with `public_key.pem` (the private key mode 0600).
    pub fn load_or_generate(dir: &Path) -> io::Result<RsaKeys> {
        let private = dir.join("private_key.pem");
        match fs::read_to_string(&private) {
            Ok(pem) => {
                RsaKeys::from_pem(&pem).map_err(|e| invalid(format!("{}: {e}", private.display())))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                use rsa::pkcs8::EncodePrivateKey as _;
                let keys = RsaKeys::generate()?;
                let pem = keys
                    .private
                    .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
                    .map_err(|e| invalid(format!("RSA private key: {e}")))?;
                fs::create_dir_all(dir)?;
                write_new(&private, pem.as_bytes(), true)?;
                let public = dir.join("public_key.pem");
                let _ = fs::remove_file(&public);
                write_new(&public, &keys.public_pem, false)?;
                Ok(keys)
            }
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("{}: {e}", private.display()),
            )),
        }
    }

    /// The public key as PEM.
    pub fn public_key_pem(&self) -> &[u8] {
        &self.public_pem
    }

    /// Decrypts a client's RSA-OAEP (SHA-1) block; `None` if it does not
    /// decrypt.
    pub(crate) fn decrypt(&self, block: &[u8]) -> Option<Vec<u8>> {
        self.private
            .decrypt_blinded(
                &mut rand::rngs::OsRng,
                rsa::Oaep::new::<sha1::Sha1>(),
                block,
            )
            .ok()
    }
}
