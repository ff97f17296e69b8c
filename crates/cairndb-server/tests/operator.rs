//! What operators see of connections: `max_connect_errors` blocking a
//! client address after consecutive failed connections (ERR 1129 before
//! the greeting, `FLUSH HOSTS` through [`cairndb_server::Hosts`], a
//! login resetting the count), the growing delay of refused logins,
//! `net_read_timeout` (a client that stops in the middle of a command)
//! and `net_write_timeout` (a client that stops reading an answer), and
//! the counters (`Aborted_clients`, `Aborted_connects`, bytes).

mod common;

use std::time::{Duration, Instant};

use cairndb_server::Config;
use common::raw::{err_code, packet, Raw};
use common::{config, start};

/// A login as `u` with a wrong scramble; returns the ERR's code.
fn fail_login(port: u16) -> Option<u16> {
    let mut r = Raw::connect(port);
    let (_, first) = r.read()?;
    if let Some(code) = err_code(&first) {
        return Some(code);
    }
    r.send(&packet(
        1,
        &Raw::response("u", &[7u8; 20], "mysql_native_password"),
    ));
    let (_, answer) = r.read()?;
    err_code(&answer)
}

/// The first packet a new connection gets: its error code, or None for a
/// greeting.
fn first_packet_error(port: u16) -> Option<u16> {
    let mut r = Raw::connect(port);
    let (_, first) = r.read().expect("a first packet");
    err_code(&first)
}

fn status(srv: &common::Running, name: &str) -> u64 {
    srv.counters
        .status()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or(u64::MAX, |(_, v)| v)
}

#[test]
fn max_connect_errors_blocks_a_host_until_flush_hosts() {
    let srv = start(Config {
        max_connect_errors: 3,
        ..config()
    });
    // Loopback is never blocked unless asked (as in MySQL).
    for _ in 0..4 {
        assert_eq!(fail_login(srv.port), Some(1045));
    }
    assert_eq!(first_packet_error(srv.port), None);
    // (That connection, closed before logging in, counts as it ends.)
    std::thread::sleep(Duration::from_millis(200));
    srv.hosts.flush();
    srv.hosts.set_block_loopback(true);

    for _ in 0..3 {
        assert_eq!(fail_login(srv.port), Some(1045));
    }
    let mut r = Raw::connect(srv.port);
    let (seq, p) = r.read().expect("an answer");
    assert_eq!((seq, err_code(&p)), (0, Some(1129)));
    let msg = String::from_utf8_lossy(&p[9..]).into_owned();
    assert_eq!(
        msg,
        "Host '127.0.0.1' is blocked because of many connection errors; unblock with 'mariadb-admin flush-hosts'"
    );
    assert!(r.closed());
    assert_eq!(status(&srv, "Connection_errors_host_blocked"), 1);
    // A connection open before the block is not affected; FLUSH HOSTS
    // unblocks.
    srv.hosts.flush();
    Raw::login(srv.port);

    // A login resets the count: two failures, a login, two failures.
    for _ in 0..2 {
        assert_eq!(fail_login(srv.port), Some(1045));
    }
    Raw::login(srv.port);
    for _ in 0..2 {
        assert_eq!(fail_login(srv.port), Some(1045));
    }
    // A connection closed before logging in (this check's) counts too:
    // the third failure.
    assert_eq!(first_packet_error(srv.port), None);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(first_packet_error(srv.port), Some(1129));
    // Raised at run time: the host is let in again.
    srv.hosts.set_max_connect_errors(10);
    assert_eq!(first_packet_error(srv.port), None);
}

#[test]
fn refused_logins_are_delayed_more_and_more() {
    let srv = start(config());
    let mut took = Vec::new();
    for _ in 0..6 {
        let t = Instant::now();
        assert_eq!(fail_login(srv.port), Some(1045));
        took.push(t.elapsed());
    }
    // Failures 4, 5, 6: 100, 200, 300 ms.
    assert!(took[3] >= Duration::from_millis(100), "{took:?}");
    assert!(took[5] >= Duration::from_millis(300), "{took:?}");
    // Other connections are not held up meanwhile.
    let t = Instant::now();
    Raw::login(srv.port);
    assert!(
        t.elapsed() < Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn net_read_timeout_closes_a_client_that_stops_mid_command() {
    let srv = start(Config {
        net_read_timeout: Duration::from_millis(300),
        wait_timeout: Duration::from_secs(30),
        ..config()
    });
    let mut r = Raw::login(srv.port);
    // A COM_QUERY announcing 100 bytes, 10 of them sent.
    let mut p = packet(0, &[0x03; 100]);
    p.truncate(14);
    r.send(&p);
    let t = Instant::now();
    assert!(r.closed());
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    // An idle connection (no command begun) waits for wait_timeout.
    let mut idle = Raw::login(srv.port);
    std::thread::sleep(Duration::from_millis(600));
    let a = idle.command(&[0x0e]);
    assert_eq!(a[0].1[0], 0, "ping answered OK after an idle spell");
}

#[test]
fn net_write_timeout_closes_a_client_that_stops_reading() {
    let srv = start(Config {
        net_write_timeout: Duration::from_millis(300),
        ..config()
    });
    let mut r = Raw::login(srv.port);
    // 64 MiB of rows, never read: more than the socket buffers hold.
    r.send(&packet(0, b"\x03SELECT big 65536"));
    let t = Instant::now();
    while srv.counters.threads_connected() > 0 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(srv.counters.threads_connected(), 0, "the connection ended");
    assert_eq!(srv.counters.aborted_clients(), 1);
    // The server goes on serving others.
    let mut other = Raw::login(srv.port);
    assert_eq!(other.command(&[0x0e])[0].1[0], 0);
}

#[test]
fn aborted_clients_and_connects_and_bytes_are_counted() {
    let srv = start(config());
    // A goodbye (COM_QUIT) is not an abort; closing without one is.
    let mut q = Raw::login(srv.port);
    q.send(&packet(0, &[0x01]));
    assert!(q.closed());
    drop(Raw::login(srv.port));
    // A connection that never logs in.
    let mut c = Raw::connect(srv.port);
    c.greeting();
    drop(c);
    let t = Instant::now();
    while (srv.counters.aborted_clients() < 1 || status(&srv, "Aborted_connects") < 1)
        && t.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(srv.counters.aborted_clients(), 1);
    assert_eq!(status(&srv, "Aborted_connects"), 1);
    // The greeting sent to the connection that never logged in.
    assert!(
        status(&srv, "Bytes_sent") > 50,
        "{:?}",
        srv.counters.status()
    );
}
