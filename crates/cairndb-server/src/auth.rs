//! The connection phase: the server's greeting (Handshake v10) and the
//! authentication exchange, as a state machine fed one client payload at a
//! time ([`Auth::on_packet`]) that writes its replies into an [`Out`].
//!
//! Supported: `mysql_native_password`, and `caching_sha2_password`. The
//! server knows each password, so every user is "in the cache": a right
//! caching_sha2 scramble gets "fast auth success" at once. A scramble that
//! does not match gets "perform full authentication", as in MySQL: over
//! TLS the client then sends its password in clear, without TLS it asks
//! for the server's RSA public key (or has it) and sends the password
//! encrypted with it. A client that proposes any other plugin gets an
//! AuthSwitchRequest to the server's default plugin, with the same nonce.
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

use std::collections::HashMap;
use std::sync::Arc;

use mysql_common::constants::{CapabilityFlags, StatusFlags};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{self, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;
use mysql_common::scramble::{scramble_native, scramble_sha256};
use rand::Rng;

use crate::api::SqlError;
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

#[derive(Debug)]
enum State {
    Response,
    Switched {
        user: String,
        db: Option<String>,
        caps: CapabilityFlags,
    },
    /// caching_sha2 "perform full authentication" sent: the password
    /// comes next (clear over TLS, RSA-encrypted otherwise), or a request
    /// for the public key.
    FullAuth {
        user: String,
        db: Option<String>,
        caps: CapabilityFlags,
    },
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

    /// Handles one client payload of the connection phase.
    pub(crate) fn on_packet(
        &mut self,
        payload: &[u8],
        users: &HashMap<String, String>,
        host: &str,
        out: &mut Out,
    ) -> AuthStep {
        match std::mem::replace(&mut self.state, State::Over) {
            State::Response => self.on_response(payload, users, host, out),
            State::Switched { user, db, caps } => {
                self.verify(self.plugin, payload, user, db, caps, users, host, out)
            }
            State::FullAuth { user, db, caps } => {
                self.full_auth(payload, user, db, caps, users, host, out)
            }
            State::Over => {
                out.err(&SqlError::packets_out_of_order());
                AuthStep::Fail
            }
        }
    }

    fn on_response(
        &mut self,
        payload: &[u8],
        users: &HashMap<String, String>,
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
                self.verify(p, data, user, db, caps, users, host, out)
            }
            None => {
                let mut data = self.nonce.to_vec();
                data.push(0);
                let sw = packets::AuthSwitchRequest::new(self.plugin.name(), data);
                out.begin();
                sw.serialize(&mut out.buf);
                out.end();
                self.state = State::Switched { user, db, caps };
                AuthStep::More
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn verify(
        &mut self,
        plugin: AuthPlugin,
        data: &[u8],
        user: String,
        db: Option<String>,
        caps: CapabilityFlags,
        users: &HashMap<String, String>,
        host: &str,
        out: &mut Out,
    ) -> AuthStep {
        // Some clients end an empty response with a NUL.
        let data = if data == [0] { &[][..] } else { data };
        let ok = match users.get(&user) {
            None => false,
            Some(pw) if pw.is_empty() => data.is_empty(),
            Some(pw) => match plugin {
                AuthPlugin::MysqlNativePassword => {
                    scramble_native(&self.nonce, pw.as_bytes()).is_some_and(|s| same(&s, data))
                }
                AuthPlugin::CachingSha2Password => {
                    scramble_sha256(&self.nonce, pw.as_bytes()).is_some_and(|s| same(&s, data))
                }
            },
        };
        // caching_sha2: a scramble that does not match (or an unknown
        // user, so as not to tell which) gets full authentication.
        if !ok && plugin == AuthPlugin::CachingSha2Password && data.len() == 32 {
            out.begin();
            out.buf.extend_from_slice(&[0x01, 0x04]);
            out.end();
            self.state = State::FullAuth { user, db, caps };
            return AuthStep::More;
        }
        if !ok {
            out.err(&SqlError::access_denied(&user, host, !data.is_empty()));
            return AuthStep::Fail;
        }
        if plugin == AuthPlugin::CachingSha2Password {
            // AuthMoreData: fast_auth_success.
            out.begin();
            out.buf.extend_from_slice(&[0x01, 0x03]);
            out.end();
        }
        AuthStep::Done(Login { user, db, caps })
    }

    /// caching_sha2 full authentication: the password in clear over TLS;
    /// without TLS, a request for the public key (0x02) or the password
    /// (NUL-terminated, XORed with the nonce) encrypted with it.
    #[allow(clippy::too_many_arguments)]
    fn full_auth(
        &mut self,
        payload: &[u8],
        user: String,
        db: Option<String>,
        caps: CapabilityFlags,
        users: &HashMap<String, String>,
        host: &str,
        out: &mut Out,
    ) -> AuthStep {
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
            self.state = State::FullAuth { user, db, caps };
            return AuthStep::More;
        } else {
            let Some(mut p) = self.opts.rsa.as_ref().and_then(|k| k.decrypt(payload)) else {
                out.err(&SqlError::access_denied(&user, host, true));
                return AuthStep::Fail;
            };
            for (b, n) in p.iter_mut().zip(self.nonce.iter().cycle()) {
                *b ^= n;
            }
            p
        };
        let password = password.strip_suffix(&[0]).unwrap_or(&password);
        let ok = users
            .get(&user)
            .is_some_and(|pw| same(pw.as_bytes(), password));
        if !ok {
            out.err(&SqlError::access_denied(&user, host, true));
            return AuthStep::Fail;
        }
        AuthStep::Done(Login { user, db, caps })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn users() -> HashMap<String, String> {
        [
            ("root".to_string(), String::new()),
            ("u".into(), "pw".into()),
        ]
        .into()
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

    #[test]
    fn native_sha2_switch_and_denial() {
        let u = users();
        // native
        let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
        let s = scramble_native(&a.nonce, b"pw").unwrap();
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
        let s = scramble_sha256(&a.nonce, b"pw").unwrap();
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
        let s = scramble_native(&a.nonce, b"pw").unwrap();
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
    fn garbage_is_a_bad_handshake() {
        for p in [&b""[..], b"\x00\x02\x00\x00", b"\xff\xff\xff\xff\x00"] {
            let mut a = Auth::new(1, AuthPlugin::MysqlNativePassword, AuthOptions::default());
            let mut out = Out::default();
            assert!(matches!(
                a.on_packet(p, &users(), "h", &mut out),
                AuthStep::Fail
            ));
        }
    }
}
