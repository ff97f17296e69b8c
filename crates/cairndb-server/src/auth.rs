//! The connection phase: the server's greeting (Handshake v10) and the
//! authentication exchange, as a state machine fed one client payload at a
//! time ([`Auth::on_packet`]) that writes its replies into an [`Out`].
//!
//! Supported: `mysql_native_password`, and `caching_sha2_password`. The
//! account is looked up once, when the handshake response names it
//! ([`AccountAuth`]: hashes of its password, never the password). A
//! native scramble is checked against `SHA1(SHA1(password))`: the
//! scramble XOR `SHA1(nonce ‖ stored)` is `SHA1(password)`, whose SHA-1
//! must be the stored hash; a caching_sha2 scramble likewise against
//! `SHA256(SHA256(password))` with `SHA256(stored ‖ nonce)` when the
//! account has that value (it is "in the cache"): a right scramble then
//! gets "fast auth success" at once. A scramble that does not match, or
//! an account without that value (a backend keeping salted strings,
//! whose cache has not seen the password yet), gets "perform full
//! authentication", as in MySQL: over TLS the client then sends its
//! password in clear, without TLS it asks for the server's RSA public key
//! (or has it) and sends the password encrypted with it; the password is
//! checked by the account's `check` (the backend) or hashed and compared
//! with a stored hash. A client that proposes a
//! plugin whose hash the account does not keep (or any other plugin) gets
//! an AuthSwitchRequest to the account's plugin (the server's default for
//! an unknown user), with the same nonce. An account with `require_ssl`
//! is refused over plain TCP (1045).
//!
//! TLS: when it is offered the greeting carries CLIENT_SSL, and a first
//! response with CLIENT_SSL set is an SSLRequest: [`AuthStep::Upgrade`]
//! tells the caller to run the TLS handshake, then [`Auth::secured`], and
//! the full response follows over TLS (sequence id 2). With
//! `require_secure` a response over plain TCP gets ERR 3159.
//!
//! Invariants: the nonce is 20 random printable bytes, never sent twice;
//! scrambles and passwords are compared in constant time; every parse is
//! bounds-checked (the handshake response is parsed by `mysql_common`'s
//! checked parser); a clear password is accepted only over TLS. No
//! locking: one connection.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::sync::Arc;

use mysql_common::constants::{CapabilityFlags, StatusFlags};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{self, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;
use rand::Rng;
use sha1::{Digest, Sha1};
use sha2::Sha256;

use crate::api::{AccountAuth, SqlError};
use crate::tls::RsaKeys;
use crate::wire::Out;

/// The server version sent in the greeting.
pub(crate) const SERVER_VERSION: &str = "8.0.36-CairnDB";
/// utf8mb4_general_ci.
pub(crate) const DEFAULT_COLLATION: u8 = 45;

/// Capabilities the server offers; the connection uses those the client
/// also asks for.
pub(crate) fn server_capabilities() -> CapabilityFlags {
    CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_FOUND_ROWS
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_CONNECT_WITH_DB
        | CapabilityFlags::CLIENT_NO_SCHEMA
        | CapabilityFlags::CLIENT_IGNORE_SPACE
        | CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_INTERACTIVE
        | CapabilityFlags::CLIENT_IGNORE_SIGPIPE
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_RESERVED
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_MULTI_STATEMENTS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_CONNECT_ATTRS
        | CapabilityFlags::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | CapabilityFlags::CLIENT_DEPRECATE_EOF
}

/// An authentication method the server verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthPlugin {
    /// `mysql_native_password` (SHA-1 scramble).
    #[default]
    MysqlNativePassword,
    /// `caching_sha2_password`: fast authentication, and full
    /// authentication over TLS or with the server's RSA key.
    CachingSha2Password,
}

impl AuthPlugin {
    pub(crate) fn name(self) -> &'static [u8] {
        match self {
            AuthPlugin::MysqlNativePassword => b"mysql_native_password",
            AuthPlugin::CachingSha2Password => b"caching_sha2_password",
        }
    }
}

/// A successful login.
#[derive(Debug)]
pub(crate) struct Login {
    pub(crate) user: String,
    pub(crate) db: Option<String>,
    /// The capabilities both sides have.
    pub(crate) caps: CapabilityFlags,
    /// The account may take the connection kept beyond `max_connections`.
    pub(crate) connection_admin: bool,
}

/// What the caller does after a packet.
#[derive(Debug)]
pub(crate) enum AuthStep {
    /// Send what was written and wait for the client's next packet.
    More,
    /// Authenticated: open the session, then answer OK (or ERR).
    Done(Login),
    /// Send the ERR written and close.
    Fail,
    /// The client sent an SSLRequest: nothing to send; run the TLS
    /// handshake on the socket, call [`Auth::secured`], and read the
    /// next packet (sequence id 2) over TLS.
    Upgrade,
}

/// What the connection phase may do beside checking passwords.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuthOptions {
    /// TLS is configured: CLIENT_SSL is offered.
    pub(crate) tls: bool,
    /// Refuse a login over plain TCP (ERR 3159).
    pub(crate) require_secure: bool,
    /// The RSA key pair for caching_sha2 full authentication without TLS.
    pub(crate) rsa: Option<Arc<RsaKeys>>,
}

/// Who is logging in: what the handshake response said and the account
/// it names (None: no such account; the exchange goes on to its 1045
/// as it would for a wrong password, so as not to tell).
#[derive(Debug)]
struct Client {
    user: String,
    db: Option<String>,
    caps: CapabilityFlags,
    account: Option<AccountAuth>,
}

/// Looks an account up by user name (the client's host is known to the
/// caller).
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<AccountAuth>;

#[derive(Debug)]
enum State {
    Response,
    /// An AuthSwitchRequest to this plugin was sent: its scramble comes
    /// next.
    Switched(AuthPlugin, Client),
    /// caching_sha2 "perform full authentication" sent: the password
    /// comes next (clear over TLS, RSA-encrypted otherwise), or a request
    /// for the public key.
    FullAuth(Client),
    Over,
}

pub(crate) struct Auth {
    conn_id: u32,
    nonce: [u8; 20],
    plugin: AuthPlugin,
    state: State,
    opts: AuthOptions,
    /// The TLS handshake has completed.
    secure: bool,
}

/// Constant-time equality of two scrambles.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A mysql_native_password scramble against `SHA1(SHA1(password))`.
fn native_matches(nonce: &[u8], scramble: &[u8], stored: &[u8; 20]) -> bool {
    if scramble.len() != 20 {
        return false;
    }
    let mask = Sha1::new()
        .chain_update(nonce)
        .chain_update(stored)
        .finalize();
    let mut candidate = [0u8; 20];
    for ((c, s), m) in candidate.iter_mut().zip(scramble).zip(mask.iter()) {
        *c = s ^ m;
    }
    same(&Sha1::digest(candidate), stored)
}

/// A caching_sha2_password scramble against `SHA256(SHA256(password))`.
fn sha2_matches(nonce: &[u8], scramble: &[u8], stored: &[u8; 32]) -> bool {
    if scramble.len() != 32 {
        return false;
    }
    let mask = Sha256::new()
        .chain_update(stored)
        .chain_update(nonce)
        .finalize();
    let mut candidate = [0u8; 32];
    for ((c, s), m) in candidate.iter_mut().zip(scramble).zip(mask.iter()) {
        *c = s ^ m;
    }
    same(&Sha256::digest(candidate), stored)
}

/// A clear password against the account's hashes.
fn password_matches(a: &AccountAuth, password: &[u8]) -> bool {
    if a.empty_password {
        return password.is_empty();
    }
    if password.is_empty() {
        return false;
    }
    if let Some(check) = &a.check {
        // A salted check hashes for milliseconds: the worker's other
        // connections move on meanwhile.
        return crate::server::blocking(|| check(password));
    }
    if let Some(h) = &a.sha2 {
        return same(&Sha256::digest(Sha256::digest(password)), h);
    }
    if let Some(h) = &a.native {
        return same(&Sha1::digest(Sha1::digest(password)), h);
    }
    false
}

impl Auth {
    pub(crate) fn new(conn_id: u32, plugin: AuthPlugin, opts: AuthOptions) -> Self {
        let mut rng = rand::thread_rng();
        let mut nonce = [0u8; 20];
        for b in &mut nonce {
            *b = rng.gen_range(33..127);
        }
        Auth {
            conn_id,
            nonce,
            plugin,
            state: State::Response,
            opts,
            secure: false,
        }
    }

    /// The capabilities offered in the greeting.
    fn capabilities(&self) -> CapabilityFlags {
        if self.opts.tls {
            server_capabilities() | CapabilityFlags::CLIENT_SSL
        } else {
            server_capabilities()
        }
    }

    /// The TLS handshake that followed an SSLRequest has completed.
    pub(crate) fn secured(&mut self) {
        self.secure = true;
    }

    /// Writes the greeting (sequence id 0).
    pub(crate) fn greeting(&self, out: &mut Out) {
        let (s1, s2) = self.nonce.split_at(8);
        let mut scramble_1 = [0u8; 8];
        scramble_1.copy_from_slice(s1);
        let mut scramble_2 = [0u8; 13];
        if let Some(d) = scramble_2.get_mut(..12) {
            d.copy_from_slice(s2);
        }
        let hs = HandshakePacket::new(
            10,
            SERVER_VERSION.as_bytes(),
            self.conn_id,
            scramble_1,
            Some(scramble_2.as_slice()),
            self.capabilities(),
            DEFAULT_COLLATION,
            StatusFlags::SERVER_STATUS_AUTOCOMMIT,
            Some(self.plugin.name()),
        );
        out.begin();
        hs.serialize(&mut out.buf);
        out.end();
    }

    /// Handles one client payload of the connection phase; `lookup`
    /// finds the account a user name logs in as.
    pub(crate) fn on_packet(
        &mut self,
        payload: &[u8],
        lookup: Lookup<'_>,
        host: &str,
        out: &mut Out,
    ) -> AuthStep {
        match std::mem::replace(&mut self.state, State::Over) {
            State::Response => self.on_response(payload, lookup, host, out),
            State::Switched(plugin, client) => {
                self.verify(plugin, payload, client, false, host, out)
            }
            State::FullAuth(client) => self.full_auth(payload, client, host, out),
            State::Over => {
                out.err(&SqlError::packets_out_of_order());
                AuthStep::Fail
            }
        }
    }

    fn on_response(
        &mut self,
        payload: &[u8],
        lookup: Lookup<'_>,
        host: &str,
        out: &mut Out,
    ) -> AuthStep {
        let bad = || SqlError::new(1043, b"08S01", "Bad handshake");
        let client = payload
            .first_chunk::<4>()
            .map_or(CapabilityFlags::empty(), |c| {
                CapabilityFlags::from_bits_truncate(u32::from_le_bytes(*c))
            });
        // A pre-4.1 client.
        if !client.contains(CapabilityFlags::CLIENT_PROTOCOL_41) {
            out.err(&bad());
            return AuthStep::Fail;
        }
        // An SSLRequest (the first 32 bytes of a response, CLIENT_SSL
        // set): the TLS handshake follows, then the response again. When
        // TLS is not offered, CLIENT_SSL is ignored (and an SSLRequest,
        // too short for a response, is a bad handshake).
        if self.opts.tls && !self.secure && client.contains(CapabilityFlags::CLIENT_SSL) {
            self.state = State::Response;
            return AuthStep::Upgrade;
        }
        let resp: HandshakeResponse<'_> = match ParseBuf(payload).parse(()) {
            Ok(r) => r,
            Err(_) => {
                out.err(&bad());
                return AuthStep::Fail;
            }
        };
        if self.opts.require_secure && !self.secure {
            out.err(&SqlError::insecure_transport());
            return AuthStep::Fail;
        }
        let caps = self.capabilities() & resp.capabilities();
        let user = String::from_utf8_lossy(resp.user()).into_owned();
        let db = resp
            .db_name()
            .filter(|d| !d.is_empty())
            .map(|d| String::from_utf8_lossy(d).into_owned());
        let account = lookup(&user);
        let client = Client {
            user,
            db,
            caps,
            account,
        };
        let proposed = match resp.auth_plugin() {
            Some(packets::AuthPlugin::MysqlNativePassword) | None => {
                Some(AuthPlugin::MysqlNativePassword)
            }
            Some(packets::AuthPlugin::CachingSha2Password) => Some(AuthPlugin::CachingSha2Password),
            Some(_) => None,
        };
        match proposed {
            Some(p) => {
                let data = resp.scramble_buf();
                self.verify(p, data, client, true, host, out)
            }
            None => {
                let to = client.account.as_ref().map_or(self.plugin, |a| a.plugin);
                self.switch(to, client, out)
            }
        }
    }

    /// Sends an AuthSwitchRequest to `to`, with the same nonce.
    fn switch(&mut self, to: AuthPlugin, client: Client, out: &mut Out) -> AuthStep {
        let mut data = self.nonce.to_vec();
        data.push(0);
        let sw = packets::AuthSwitchRequest::new(to.name(), data);
        out.begin();
        sw.serialize(&mut out.buf);
        out.end();
        self.state = State::Switched(to, client);
        AuthStep::More
    }

    /// The login succeeded: refused still if the account requires TLS
    /// and the connection has none.
    fn done(&self, client: Client, host: &str, out: &mut Out) -> AuthStep {
        let Some(a) = client.account else {
            out.err(&SqlError::access_denied(&client.user, host, true));
            return AuthStep::Fail;
        };
        if a.require_ssl && !self.secure {
            out.err(&SqlError::access_denied(&client.user, host, true));
            return AuthStep::Fail;
        }
        AuthStep::Done(Login {
            user: client.user,
            db: client.db,
            caps: client.caps,
            connection_admin: a.connection_admin,
        })
    }

    /// Checks a scramble made with `plugin`; `may_switch`: the plugin is
    /// the client's first choice, and a plugin whose hash the account does
    /// not keep is switched to the account's.
    fn verify(
        &mut self,
        plugin: AuthPlugin,
        data: &[u8],
        client: Client,
        may_switch: bool,
        host: &str,
        out: &mut Out,
    ) -> AuthStep {
        // Some clients end an empty response with a NUL.
        let data = if data == [0] { &[][..] } else { data };
        let ok = match &client.account {
            None => false,
            Some(a) if a.empty_password => data.is_empty(),
            Some(a) => match (plugin, &a.native, &a.sha2) {
                (AuthPlugin::MysqlNativePassword, Some(h), _) => {
                    native_matches(&self.nonce, data, h)
                }
                (AuthPlugin::CachingSha2Password, _, Some(h)) => sha2_matches(&self.nonce, data, h),
                _ if may_switch && a.plugin != plugin => {
                    let to = a.plugin;
                    return self.switch(to, client, out);
                }
                _ => false,
            },
        };
        // caching_sha2: a scramble that does not match (or an unknown
        // user, so as not to tell which) gets full authentication.
        if !ok && plugin == AuthPlugin::CachingSha2Password && data.len() == 32 {
            out.begin();
            out.buf.extend_from_slice(&[0x01, 0x04]);
            out.end();
            self.state = State::FullAuth(client);
            return AuthStep::More;
        }
        if !ok {
            out.err(&SqlError::access_denied(
                &client.user,
                host,
                !data.is_empty(),
            ));
            return AuthStep::Fail;
        }
        if plugin == AuthPlugin::CachingSha2Password {
            // AuthMoreData: fast_auth_success.
            out.begin();
            out.buf.extend_from_slice(&[0x01, 0x03]);
            out.end();
        }
        self.done(client, host, out)
    }

    /// caching_sha2 full authentication: the password in clear over TLS;
    /// without TLS, a request for the public key (0x02) or the password
    /// (NUL-terminated, XORed with the nonce) encrypted with it.
    fn full_auth(&mut self, payload: &[u8], client: Client, host: &str, out: &mut Out) -> AuthStep {
        let user = client.user.as_str();
        let password = if self.secure {
            payload.to_vec()
        } else if payload == [0x02] {
            let Some(rsa) = &self.opts.rsa else {
                out.err(&SqlError::new(
                    1045,
                    b"28000",
                    format!(
                        "Access denied for user '{user}'@'{host}': caching_sha2_password full \
                         authentication needs TLS (the server has no RSA key)"
                    ),
                ));
                return AuthStep::Fail;
            };
            // AuthMoreData: the public key.
            out.begin();
            out.buf.push(0x01);
            out.buf.extend_from_slice(&rsa.public_pem);
            out.end();
            self.state = State::FullAuth(client);
            return AuthStep::More;
        } else {
            let Some(mut p) = self.opts.rsa.as_ref().and_then(|k| k.decrypt(payload)) else {
                out.err(&SqlError::access_denied(user, host, true));
                return AuthStep::Fail;
            };
            for (b, n) in p.iter_mut().zip(self.nonce.iter().cycle()) {
                *b ^= n;
            }
            p
        };
        let password = password.strip_suffix(&[0]).unwrap_or(&password);
        let ok = client
            .account
            .as_ref()
            .is_some_and(|a| password_matches(a, password));
        if !ok {
            out.err(&SqlError::access_denied(user, host, true));
            return AuthStep::Fail;
        }
        self.done(client, host, out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
    use super::*;
    use mysql_common::scramble::{scramble_native, scramble_sha256};

    fn users(name: &str) -> Option<AccountAuth> {
        match name {
            "root" => Some(AccountAuth::from_password("")),
            "u" => Some(AccountAuth::from_password("pw")),
            // Only the caching_sha2 hash kept, and TLS required.
            "s" => Some(AccountAuth {
                plugin: AuthPlugin::CachingSha2Password,
                native: None,
                ..AccountAuth::from_password("pw")
            }),
            "t" => Some(AccountAuth {
                require_ssl: true,
                ..AccountAuth::from_password("pw")
            }),
            _ => None,
        }
    }

    fn response(user: &str, plugin: &[u8], data: &[u8]) -> Vec<u8> {
        let caps = CapabilityFlags::CLIENT_PROTOCOL_41
            | CapabilityFlags::CLIENT_SECURE_CONNECTION
            | CapabilityFlags::CLIENT_PLUGIN_AUTH
            | CapabilityFlags::CLIENT_DEPRECATE_EOF;
        let mut p = caps.bits().to_le_bytes().to_vec();
        p.extend((1u32 << 24).to_le_bytes());
        p.push(45);
        p.extend([0u8; 23]);
        p.extend(user.as_bytes());
        p.push(0);
        p.push(data.len() as u8);
        p.extend(data);
        p.extend(plugin);
        p.push(0);
        p
    }

    #[test]
    fn greeting_parses_back() {
        let a = Auth::new(7, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let mut out = Out::default();
        a.greeting(&mut out);
        let hs: HandshakePacket<'_> = ParseBuf(&out.buf[4..]).parse(()).unwrap();
        assert_eq!(hs.connection_id(), 7);
        assert_eq!(hs.server_version_ref(), SERVER_VERSION.as_bytes());
        assert_eq!(hs.nonce(), a.nonce);
        assert_eq!(
            hs.auth_plugin_name_ref(),
            Some(&b"mysql_native_password"[..])
        );
        assert_eq!(hs.default_collation(), 45);
        assert!(hs
            .capabilities()
            .contains(CapabilityFlags::CLIENT_DEPRECATE_EOF));
    }

    /// The client's mysql_native_password scramble of "pw" (zeros when
    /// the nonce is unusable: the login asserted on then fails).
    fn native_of(nonce: &[u8]) -> [u8; 20] {
        scramble_native(nonce, b"pw").unwrap_or_default()
    }

    /// The client's caching_sha2_password scramble of "pw" (as above).
    fn sha2_of(nonce: &[u8]) -> [u8; 32] {
        scramble_sha256(nonce, b"pw").unwrap_or_default()
    }

    #[test]
    fn native_sha2_switch_and_denial() {
        let u = users;
        // native
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let s = native_of(&a.nonce);
        let mut out = Out::default();
        let r = a.on_packet(
            &response("u", b"mysql_native_password", &s),
            &u,
            "h",
            &mut out,
        );
        assert!(matches!(r, AuthStep::Done(ref l) if l.user == "u"));
        // sha2 fast auth
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let s = sha2_of(&a.nonce);
        let mut out = Out::default();
        let r = a.on_packet(
            &response("u", b"caching_sha2_password", &s),
            &u,
            "h",
            &mut out,
        );
        assert!(matches!(r, AuthStep::Done(_)));
        assert_eq!(out.buf, [2, 0, 0, 0, 1, 3]);
        // switch from an unknown plugin
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let mut out = Out::default();
        let r = a.on_packet(&response("u", b"dialog", b"xx"), &u, "h", &mut out);
        assert!(matches!(r, AuthStep::More));
        assert_eq!(out.buf[4], 0xFE);
        let s = native_of(&a.nonce);
        let r = a.on_packet(&s, &u, "h", &mut out);
        assert!(matches!(r, AuthStep::Done(_)));
        // wrong password, unknown user, empty password
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let mut out = Out::default();
        let r = a.on_packet(
            &response("u", b"mysql_native_password", &[1; 20]),
            &u,
            "h",
            &mut out,
        );
        assert!(matches!(r, AuthStep::Fail));
        assert_eq!(out.buf[4], 0xFF);
        assert_eq!(&out.buf[5..7], &1045u16.to_le_bytes());
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let r = a.on_packet(
            &response("nobody", b"mysql_native_password", b""),
            &u,
            "h",
            &mut Out::default(),
        );
        assert!(matches!(r, AuthStep::Fail));
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let r = a.on_packet(
            &response("root", b"mysql_native_password", b""),
            &u,
            "h",
            &mut Out::default(),
        );
        assert!(matches!(r, AuthStep::Done(_)));
    }

    #[test]
    fn stored_hash_only_switches_plugin_and_require_ssl_refuses_plain_tcp() {
        // A native response for an account that keeps only the sha2
        // hash: switched to caching_sha2, then fast auth.
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let s = native_of(&a.nonce);
        let mut out = Out::default();
        let r = a.on_packet(
            &response("s", b"mysql_native_password", &s),
            &users,
            "h",
            &mut out,
        );
        assert!(matches!(r, AuthStep::More));
        assert_eq!(out.buf[4], 0xFE);
        assert!(out.buf.windows(21).any(|w| w == b"caching_sha2_password"));
        let s = sha2_of(&a.nonce);
        let mut out = Out::default();
        let r = a.on_packet(&s, &users, "h", &mut out);
        assert!(matches!(r, AuthStep::Done(_)));
        // A wrong sha2 scramble after the switch: full authentication.
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let mut out = Out::default();
        let _ = a.on_packet(
            &response("s", b"mysql_native_password", &[7; 20]),
            &users,
            "h",
            &mut out,
        );
        let mut out = Out::default();
        let r = a.on_packet(&[9; 32], &users, "h", &mut out);
        assert!(matches!(r, AuthStep::More));
        assert_eq!(&out.buf[4..], &[1, 4]);
        // REQUIRE SSL: the right password over plain TCP is refused.
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let s = native_of(&a.nonce);
        let mut out = Out::default();
        let r = a.on_packet(
            &response("t", b"mysql_native_password", &s),
            &users,
            "h",
            &mut out,
        );
        assert!(matches!(r, AuthStep::Fail));
        assert_eq!(&out.buf[5..7], &1045u16.to_le_bytes());
    }

    /// An account whose backend keeps a salted string: no fast-auth
    /// value, so even the right scramble gets full authentication, and
    /// the clear password (over TLS) goes to the backend's check.
    #[test]
    fn salted_account_gets_full_authentication_checked_by_the_backend() {
        let salted = |u: &str| -> Option<AccountAuth> {
            (u == "c").then(|| AccountAuth {
                plugin: AuthPlugin::CachingSha2Password,
                check: Some(std::sync::Arc::new(|pw: &[u8]| pw == b"pw")),
                ..Default::default()
            })
        };
        for (password, done) in [(&b"pw"[..], true), (b"nope", false)] {
            let mut a = Auth::new(1, AuthPlugin::CachingSha2Password, AuthOptions::default());
            a.secured();
            let s = sha2_of(&a.nonce);
            let mut out = Out::default();
            let r = a.on_packet(
                &response("c", b"caching_sha2_password", &s),
                &salted,
                "h",
                &mut out,
            );
            assert!(matches!(r, AuthStep::More));
            assert_eq!(&out.buf[4..], &[1, 4]);
            let mut clear = password.to_vec();
            clear.push(0);
            let mut out = Out::default();
            let r = a.on_packet(&clear, &salted, "h", &mut out);
            assert_eq!(matches!(r, AuthStep::Done(_)), done);
        }
    }

    #[test]
    fn garbage_is_a_bad_handshake() {
        for p in [&b""[..], b"\x00\x02\x00\x00", b"\xff\xff\xff\xff\x00"] {
            let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
            let mut out = Out::default();
            assert!(matches!(
                a.on_packet(p, &users, "h", &mut out),
                AuthStep::Fail
            ));
        }
    }
}
