//! Hostile and unusual byte streams, from a raw socket: each must close
//! (or answer) that connection alone, and a second connection must still
//! work. Also the commands no client library here sends on its own
//! (COM_INIT_DB, COM_FIELD_LIST, COM_STATISTICS, unknown commands, an
//! AuthSwitchRequest).

mod common;

use cairndb_server::Config;
use common::raw::{err_code, packet, Raw};
use common::{config, start};
use mysql_common::scramble::scramble_native;

/// A fresh connection logs in and answers COM_PING.
fn still_serves(port: u16) {
    let mut r = Raw::login(port);
    let a = r.command(&[0x0e]);
    assert_eq!((a[0].0, a[0].1[0]), (1, 0));
}

#[test]
fn truncated_header_closes_that_connection() {
    let srv = start(config());
    let mut r = Raw::login(srv.port);
    r.send(&[5, 0]);
    r.s.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(r.closed());
    // Truncated payload too.
    let mut r = Raw::login(srv.port);
    r.send(&[10, 0, 0, 0, 3, b's']);
    r.s.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(r.closed());
    still_serves(srv.port);
}

#[test]
fn length_beyond_max_allowed_packet_is_1153_then_close() {
    let srv = start(Config {
        max_allowed_packet: 1024,
        ..config()
    });
    let mut r = Raw::login(srv.port);
    r.send(&[0x01, 0x04, 0, 0, 3]); // 1025 bytes announced, none sent
    let (_, p) = r.read().expect("an error");
    assert_eq!(err_code(&p), Some(1153));
    assert!(r.closed());
    // In the handshake too.
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.send(&[0xff, 0xff, 0xff, 1]);
    let (_, p) = r.read().expect("an error");
    assert_eq!(err_code(&p), Some(1153));
    assert!(r.closed());
    still_serves(srv.port);
}

#[test]
fn garbage_after_handshake_closes_that_connection() {
    let srv = start(config());
    let mut r = Raw::login(srv.port);
    r.send(b"\xde\xad\xbe\xef garbage garbage garbage");
    let (_, p) = r.read().expect("an error");
    assert_eq!(err_code(&p), Some(1156));
    assert!(r.closed());
    // Garbage instead of the handshake response.
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.send(&packet(1, b"\x01\x02\x03 not a handshake response"));
    let (seq, p) = r.read().expect("an error");
    assert_eq!((seq, err_code(&p)), (2, Some(1043)));
    assert!(r.closed());
    // A well-framed command whose body is cut short.
    let mut r = Raw::login(srv.port);
    let a = r.command(&[0x17, 1, 0]);
    assert_eq!(err_code(&a[0].1), Some(1835));
    assert!(r.closed());
    still_serves(srv.port);
}

#[test]
fn wrong_sequence_id_closes_that_connection() {
    let srv = start(config());
    let mut r = Raw::login(srv.port);
    r.send(&packet(3, b"\x03SELECT 1"));
    let (_, p) = r.read().expect("an error");
    assert_eq!(err_code(&p), Some(1156));
    assert!(r.closed());
    // In the handshake: the response must be packet 1.
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.send(&packet(
        0,
        &Raw::response("root", b"", "mysql_native_password"),
    ));
    let (_, p) = r.read().expect("an error");
    assert_eq!(err_code(&p), Some(1156));
    assert!(r.closed());
    still_serves(srv.port);
}

#[test]
fn other_commands() {
    let srv = start(config());
    let mut r = Raw::login(srv.port);
    // COM_INIT_DB
    let a = r.command(b"\x02db");
    assert_eq!(a[0].1[0], 0);
    let a = r.command(b"\x02nope");
    assert_eq!(err_code(&a[0].1), Some(1049));
    // COM_FIELD_LIST: an empty list (with DEPRECATE_EOF, an 0xFE OK).
    let a = r.command(b"\x04t\x00");
    assert_eq!(a[0].1[0], 0xFE);
    // COM_STATISTICS
    let a = r.command(b"\x09");
    assert!(a[0].1.starts_with(b"Uptime: "), "{:?}", a[0].1);
    // Unknown commands: ERR 1047, connection kept.
    for cmd in [0x05u8, 0x11, 0x1c, 0x20, 0xff] {
        let a = r.command(&[cmd]);
        assert_eq!(err_code(&a[0].1), Some(1047), "command {cmd:#x}");
    }
    // COM_SET_OPTION off: a multi-statement is now a syntax error.
    let a = r.command(b"\x1b\x01\x00");
    assert_eq!(a[0].1[0], 0xFE);
    let a = r.command(b"\x03SELECT 1; SELECT 1");
    assert_eq!(err_code(&a[0].1), Some(1064));
    // COM_STMT_RESET of an unknown statement.
    let a = r.command(b"\x1a\x09\x00\x00\x00");
    assert_eq!(err_code(&a[0].1), Some(1243));
    // Still alive; COM_QUIT closes without an answer.
    let a = r.command(&[0x0e]);
    assert_eq!(a[0].1[0], 0);
    r.send(&packet(0, &[0x01]));
    assert!(r.closed());
}

#[test]
fn auth_switch_from_an_unknown_plugin() {
    let srv = start(config());
    let mut r = Raw::connect(srv.port);
    let nonce = r.greeting();
    r.send(&packet(1, &Raw::response("u", b"whatever", "dialog")));
    let (seq, p) = r.read().expect("switch request");
    assert_eq!((seq, p[0]), (2, 0xFE));
    assert!(p[1..].starts_with(b"mysql_native_password\0"));
    let data = &p[1 + 22..];
    assert_eq!(&data[..20], &nonce[..]);
    let s = scramble_native(&nonce, b"secret").unwrap();
    r.send(&packet(3, &s));
    let (seq, p) = r.read().expect("OK");
    assert_eq!((seq, p[0]), (4, 0));
    // The status flags of the login OK carry AUTOCOMMIT.
    assert_eq!(u16::from_le_bytes([p[3], p[4]]) & 2, 2);
    still_serves(srv.port);
}

#[test]
fn caching_sha2_fast_auth_from_a_mysql8_client() {
    let srv = start(config());
    let mut r = Raw::connect(srv.port);
    let nonce = r.greeting();
    let s = mysql_common::scramble::scramble_sha256(&nonce, b"secret").unwrap();
    r.send(&packet(1, &Raw::response("u", &s, "caching_sha2_password")));
    assert_eq!(r.read().unwrap(), (2, vec![1, 3]));
    let (seq, p) = r.read().unwrap();
    assert_eq!((seq, p[0]), (3, 0));
}
