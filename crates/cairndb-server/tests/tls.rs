//! TLS: the SSLRequest upgrade with a rustls client trusting the
//! generated CA, queries over TLS, require_secure_transport, caching_sha2
//! full authentication (clear password over TLS, RSA without), and
//! hostile clients after an SSLRequest.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cairndb_server::{auto_generate_certs, Config, RsaKeys, Server, Tls};
use common::raw::{err_code, packet, Raw};
use common::{config, Mock};
use mysql_common::scramble::{scramble_native, scramble_sha256};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CLIENT_SSL: u32 = 0x0800;
/// PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | DEPRECATE_EOF |
/// TRANSACTIONS.
const CAPS: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x0100_0000 | 0x2000;

/// A fresh directory under the system's temporary one.
fn temp_dir() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "cairndb-tls-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Generated certificates in a fresh directory, and a config using them.
fn tls_config(dir: &Path) -> Config {
    let f = auto_generate_certs(dir).unwrap();
    Config {
        tls: Some(Tls::from_files(&f.cert, &f.key, None).unwrap()),
        ..config()
    }
}

/// A rustls client config trusting `dir/ca.pem` only.
fn client_config(dir: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(dir.join("ca.pem")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// A server on its own runtime, with its counters.
struct Srv {
    port: u16,
    counters: cairndb_server::Counters,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Srv {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

fn start(config: Config) -> Srv {
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let server = Server::bind(config, Arc::new(Mock)).await.unwrap();
            tx.send((server.local_addr().unwrap().port(), server.counters()))
                .unwrap();
            server
                .run(async {
                    let _ = stop_rx.await;
                })
                .await
                .unwrap();
        })
    });
    let (port, counters) = rx.recv().unwrap();
    Srv {
        port,
        counters,
        stop: Some(stop_tx),
        thread: Some(thread),
    }
}

/// (capabilities, nonce) of a greeting payload.
fn parse_greeting(g: &[u8]) -> (u32, Vec<u8>) {
    assert_eq!(g[0], 10);
    let v_end = g.iter().position(|&b| b == 0).unwrap();
    let rest = &g[v_end + 1..];
    let mut nonce = rest[4..12].to_vec();
    let low = u16::from_le_bytes([rest[13], rest[14]]) as u32;
    let high = u16::from_le_bytes([rest[18], rest[19]]) as u32;
    nonce.extend_from_slice(&rest[4 + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10..][..12]);
    (low | high << 16, nonce)
}

/// The 32-byte SSLRequest.
fn ssl_request() -> Vec<u8> {
    let mut p = (CAPS | CLIENT_SSL).to_le_bytes().to_vec();
    p.extend((1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend([0u8; 23]);
    p
}

/// A HandshakeResponse41 with CLIENT_SSL set.
fn response(user: &str, data: &[u8], plugin: &str) -> Vec<u8> {
    let mut p = Raw::response(user, data, plugin);
    p[..4].copy_from_slice(&(CAPS | CLIENT_SSL).to_le_bytes());
    p
}

/// Packets over any blocking stream.
struct Pk<S>(S);

impl<S: Read + Write> Pk<S> {
    fn read(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 4];
        self.0.read_exact(&mut h).ok()?;
        let n = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        let mut p = vec![0u8; n];
        self.0.read_exact(&mut p).ok()?;
        Some((h[3], p))
    }

    fn send(&mut self, seq: u8, payload: &[u8]) {
        self.0.write_all(&packet(seq, payload)).unwrap();
        self.0.flush().unwrap();
    }

    /// COM_QUERY `SELECT 1`: checks the one row holds "1".
    fn select_1(&mut self) {
        self.send(0, b"\x03SELECT 1");
        let (_, count) = self.read().unwrap();
        assert_eq!(count, [1]);
        let (_, _def) = self.read().unwrap();
        let (_, row) = self.read().unwrap();
        assert_eq!(row, [1, b'1']);
        let (_, ok) = self.read().unwrap();
        assert_eq!(ok[0], 0xFE);
    }
}

/// Connects, reads the greeting, sends an SSLRequest and the TLS
/// ClientHello in one write (as a client that does not wait may), and
/// finishes the handshake: a blocking TLS stream and the nonce.
fn tls_connect(
    port: u16,
    dir: &Path,
) -> (
    Pk<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>,
    Vec<u8>,
) {
    let mut raw = Raw::connect(port);
    let (seq, g) = raw.read().unwrap();
    assert_eq!(seq, 0);
    let (caps, nonce) = parse_greeting(&g);
    assert!(caps & CLIENT_SSL != 0, "CLIENT_SSL offered");
    let mut conn = rustls::ClientConnection::new(
        client_config(dir),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut bytes = packet(1, &ssl_request());
    conn.write_tls(&mut bytes).unwrap();
    raw.s.write_all(&bytes).unwrap();
    let mut s = rustls::StreamOwned::new(conn, raw.s);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).unwrap();
    }
    (Pk(s), nonce)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_login_and_query_with_tokio_rustls() {
    let dir = temp_dir();
    let srv = start(tls_config(&dir));
    let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", srv.port))
        .await
        .unwrap();
    let greeting = read_async(&mut sock).await;
    let (caps, nonce) = parse_greeting(&greeting.1);
    assert!(caps & CLIENT_SSL != 0);
    sock.write_all(&packet(1, &ssl_request())).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(client_config(&dir));
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), sock)
        .await
        .unwrap();
    let (_, conn) = tls.get_ref();
    assert!(conn.protocol_version().is_some());
    let s = scramble_native(&nonce, b"secret").unwrap();
    tls.write_all(&packet(2, &response("u", &s, "mysql_native_password")))
        .await
        .unwrap();
    let (seq, ok) = read_async(&mut tls).await;
    assert_eq!((seq, ok[0]), (3, 0), "OK after the login over TLS: {ok:?}");
    tls.write_all(&packet(0, b"\x03SELECT rows")).await.unwrap();
    let (_, count) = read_async(&mut tls).await;
    assert_eq!(count, [4]);
    for _ in 0..4 {
        read_async(&mut tls).await;
    }
    let mut names = Vec::new();
    loop {
        let (_, p) = read_async(&mut tls).await;
        if p[0] == 0xFE {
            break;
        }
        names.push(p);
    }
    assert_eq!(names.len(), 3);
    assert!(names[0].windows(5).any(|w| w == b"name1"));
    tls.write_all(&packet(0, b"\x01")).await.unwrap();
    drop(srv);
    let _ = std::fs::remove_dir_all(dir);
}

async fn read_async<S: tokio::io::AsyncRead + Unpin>(s: &mut S) -> (u8, Vec<u8>) {
    let mut h = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut h))
        .await
        .unwrap()
        .unwrap();
    let n = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
    let mut p = vec![0u8; n];
    s.read_exact(&mut p).await.unwrap();
    (h[3], p)
}

#[test]
fn pipelined_client_hello_plain_clients_and_certificate_reuse() {
    let dir = temp_dir();
    let first = auto_generate_certs(&dir).unwrap();
    assert!(first.generated);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for k in [&first.key, &first.ca_key] {
            let mode = std::fs::metadata(k).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", k.display());
        }
    }
    let ca = std::fs::read(&first.ca).unwrap();
    let again = auto_generate_certs(&dir).unwrap();
    assert!(!again.generated);
    assert_eq!(std::fs::read(&again.ca).unwrap(), ca, "reused, not remade");

    let srv = start(tls_config(&dir));
    let (mut c, nonce) = tls_connect(srv.port, &dir);
    let s = scramble_native(&nonce, b"secret").unwrap();
    c.send(2, &response("u", &s, "mysql_native_password"));
    let (seq, ok) = c.read().unwrap();
    assert_eq!((seq, ok[0]), (3, 0));
    c.select_1();
    // A plain client of the same server.
    let mut r = Raw::login(srv.port);
    let a = r.command(&[0x0e]);
    assert_eq!(a[0].1[0], 0);
    assert_eq!(srv.counters.aborted_connects(), 0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn require_secure_transport_refuses_plain_logins() {
    let dir = temp_dir();
    let srv = start(Config {
        require_secure_transport: true,
        ..tls_config(&dir)
    });
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.send(&packet(
        1,
        &Raw::response("root", b"", "mysql_native_password"),
    ));
    let (seq, p) = r.read().unwrap();
    assert_eq!((seq, err_code(&p)), (2, Some(3159)));
    let msg = String::from_utf8_lossy(&p[9..]).into_owned();
    assert_eq!(
        msg,
        "Connections using insecure transport are prohibited while --require_secure_transport=ON."
    );
    assert!(r.closed());
    assert_eq!(srv.counters.aborted_connects(), 1);
    // Over TLS the same login works.
    let (mut c, _) = tls_connect(srv.port, &dir);
    c.send(2, &response("root", b"", "mysql_native_password"));
    let (seq, ok) = c.read().unwrap();
    assert_eq!((seq, ok[0]), (3, 0));
    c.select_1();
    // And without TLS configured the server does not start.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = rt
        .block_on(Server::bind(
            Config {
                require_secure_transport: true,
                ..config()
            },
            Arc::new(Mock),
        ))
        .err()
        .unwrap();
    assert!(e.to_string().contains("TLS"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn caching_sha2_full_authentication_over_tls() {
    let dir = temp_dir();
    let srv = start(tls_config(&dir));
    // The right scramble: fast auth.
    let (mut c, nonce) = tls_connect(srv.port, &dir);
    let s = scramble_sha256(&nonce, b"secret").unwrap();
    c.send(2, &response("u", &s, "caching_sha2_password"));
    assert_eq!(c.read().unwrap(), (3, vec![1, 3]));
    assert_eq!(c.read().unwrap().1[0], 0);
    // A scramble the server cannot match: full authentication, the
    // password in clear over TLS.
    let (mut c, _) = tls_connect(srv.port, &dir);
    c.send(2, &response("u", &[7; 32], "caching_sha2_password"));
    assert_eq!(c.read().unwrap(), (3, vec![1, 4]));
    c.send(4, b"secret\0");
    let (seq, ok) = c.read().unwrap();
    assert_eq!((seq, ok[0]), (5, 0), "{ok:?}");
    c.select_1();
    // A wrong password in full authentication.
    let (mut c, _) = tls_connect(srv.port, &dir);
    c.send(2, &response("u", &[7; 32], "caching_sha2_password"));
    assert_eq!(c.read().unwrap(), (3, vec![1, 4]));
    c.send(4, b"wrong\0");
    let (seq, p) = c.read().unwrap();
    assert_eq!((seq, err_code(&p)), (5, Some(1045)));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn caching_sha2_full_authentication_without_tls_uses_the_rsa_key() {
    use rsa::pkcs8::DecodePublicKey;
    let keys = Arc::new(RsaKeys::generate().unwrap());
    let srv = start(Config {
        rsa_keys: Some(keys),
        ..config()
    });
    let attempt = |password: &[u8]| -> (u8, Vec<u8>) {
        let mut r = Raw::connect(srv.port);
        let nonce = r.greeting();
        r.send(&packet(
            1,
            &Raw::response("u", &[9; 32], "caching_sha2_password"),
        ));
        assert_eq!(r.read().unwrap(), (2, vec![1, 4]));
        // A clear password is not accepted without TLS: ask for the key.
        r.send(&packet(3, &[2]));
        let (seq, key) = r.read().unwrap();
        assert_eq!((seq, key[0]), (4, 1));
        let pem = std::str::from_utf8(&key[1..]).unwrap();
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"), "{pem}");
        let public = rsa::RsaPublicKey::from_public_key_pem(pem).unwrap();
        let mut plain = password.to_vec();
        plain.push(0);
        for (b, n) in plain.iter_mut().zip(nonce.iter().cycle()) {
            *b ^= n;
        }
        let block = public
            .encrypt(
                &mut rand::rngs::OsRng,
                rsa::Oaep::new::<sha1::Sha1>(),
                &plain,
            )
            .unwrap();
        r.send(&packet(5, &block));
        r.read().unwrap()
    };
    let (seq, ok) = attempt(b"secret");
    assert_eq!((seq, ok[0]), (6, 0), "{ok:?}");
    let (seq, p) = attempt(b"wrong");
    assert_eq!((seq, err_code(&p)), (6, Some(1045)));
    // Without a key pair the request is refused, clearly.
    let srv = start(config());
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.send(&packet(
        1,
        &Raw::response("u", &[9; 32], "caching_sha2_password"),
    ));
    assert_eq!(r.read().unwrap(), (2, vec![1, 4]));
    r.send(&packet(3, &[2]));
    let (_, p) = r.read().unwrap();
    assert_eq!(err_code(&p), Some(1045));
    assert!(String::from_utf8_lossy(&p).contains("needs TLS"));
    // A clear password over plain TCP is taken for an RSA block, and fails.
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.send(&packet(
        1,
        &Raw::response("u", &[9; 32], "caching_sha2_password"),
    ));
    assert_eq!(r.read().unwrap(), (2, vec![1, 4]));
    r.send(&packet(3, b"secret\0"));
    let (_, p) = r.read().unwrap();
    assert_eq!(err_code(&p), Some(1045));
}

#[test]
fn garbage_after_an_ssl_request_closes_that_connection_only() {
    let dir = temp_dir();
    let srv = start(tls_config(&dir));
    let hostile: [&[u8]; 4] = [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        // A TLS record header announcing a huge handshake, then nothing.
        b"\x16\x03\x01\xff\xff\x01",
        // A ClientHello cut short.
        b"\x16\x03\x01\x00\x30\x01\x00\x00\x2c\x03\x03",
        b"",
    ];
    for (i, bytes) in hostile.iter().enumerate() {
        let mut r = Raw::connect(srv.port);
        r.greeting();
        let mut b = packet(1, &ssl_request());
        b.extend_from_slice(bytes);
        r.send(&b);
        r.s.shutdown(std::net::Shutdown::Write).unwrap();
        // At most a TLS alert, then the end (or a reset).
        let mut rest = Vec::new();
        match r.s.read_to_end(&mut rest) {
            Ok(_) => assert!(rest.len() < 64 && rest.first() != Some(&0xFF), "case {i}"),
            Err(e) => assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "case {i}"),
        }
    }
    // An SSLRequest to a server without TLS is a bad handshake.
    let plain = start(config());
    let mut r = Raw::connect(plain.port);
    r.greeting();
    r.send(&packet(1, &ssl_request()));
    let (seq, p) = r.read().unwrap();
    assert_eq!((seq, err_code(&p)), (2, Some(1043)));
    // The TLS server still serves, over TLS and not.
    let (mut c, _) = tls_connect(srv.port, &dir);
    c.send(2, &response("root", b"", "mysql_native_password"));
    assert_eq!(c.read().unwrap().1[0], 0);
    c.select_1();
    let mut r = Raw::login(srv.port);
    assert_eq!(r.command(&[0x0e])[0].1[0], 0);
    // The server counts a failed connect once its task has ended.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while srv.counters.aborted_connects() < hostile.len() as u64 {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(srv.counters.aborted_connects(), hostile.len() as u64);
    let _ = std::fs::remove_dir_all(dir);
}

/// Whether `cmd args` runs and succeeds.
fn have(cmd: &str, args: &[&str]) -> bool {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The mariadb client verifying the server against the generated CA, and
/// PyMySQL with it: both run over TLS. Each is skipped with a message
/// when not installed.
#[test]
fn real_clients_over_tls() {
    let dir = temp_dir();
    let srv = start(tls_config(&dir));
    let ca = dir.join("ca.pem");
    let port = srv.port.to_string();
    if have("mariadb", &["--version"]) {
        let o = std::process::Command::new("mariadb")
            .args(["-h127.0.0.1", &format!("-P{port}"), "-uu", "-psecret"])
            .arg(format!("--ssl-ca={}", ca.display()))
            .args(["--ssl-verify-server-cert", "--batch", "-e", "select 1"])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(out, "1\n1\n");
    } else {
        eprintln!("SKIPPED mariadb over TLS: no `mariadb` client");
    }
    if have("python3", &["-c", "import pymysql"]) {
        let py = r#"
import sys, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="u",
                    password="secret", ssl={"ca": sys.argv[2]})
assert c._sock.version().startswith("TLSv1."), c._sock.version()
cur = c.cursor()
cur.execute("SELECT 1")
assert cur.fetchall() == ((1,),)
c.close()
print("pymysql tls ok")
"#;
        let o = std::process::Command::new("python3")
            .args(["-c", py, &port, &ca.display().to_string()])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && out.contains("pymysql tls ok"),
            "{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    } else {
        eprintln!("SKIPPED pymysql over TLS: python3 cannot import pymysql");
    }
    let _ = std::fs::remove_dir_all(dir);
}
