//! What a connection waits on beside its socket: the idle timeouts
//! (`connect_timeout` before login, `wait_timeout` after) and the
//! server's shutdown. The idle deadline moves with every command though
//! the connection's timer is armed once, so these check that activity
//! keeps a connection open past several timeouts, that silence then
//! closes it, and that shutdown reaches a connection waiting for a
//! command.

mod common;

use std::thread::sleep;
use std::time::{Duration, Instant};

use cairndb_server::Config;
use common::raw::Raw;
use common::{config, start};

fn ping(r: &mut Raw) {
    let a = r.command(&[0x0e]);
    assert_eq!((a[0].0, a[0].1[0]), (1, 0), "ping answered OK");
}

#[test]
fn wait_timeout_counts_from_the_last_command() {
    let wait = Duration::from_millis(400);
    let srv = start(Config {
        wait_timeout: wait,
        ..config()
    });
    let mut r = Raw::login(srv.port);
    // Commands every 150 ms for 1.2 s: three timeouts' worth from login.
    for _ in 0..8 {
        sleep(Duration::from_millis(150));
        ping(&mut r);
    }
    // Then silence: closed once the timeout has passed since the last one.
    let quiet = Instant::now();
    assert!(r.closed(), "an idle connection stays open");
    let waited = quiet.elapsed();
    assert!(
        waited >= wait - Duration::from_millis(50),
        "closed after {waited:?} of silence, before wait_timeout {wait:?}"
    );
    // The server goes on serving others.
    let mut other = Raw::login(srv.port);
    ping(&mut other);
}

#[test]
fn connect_timeout_closes_a_connection_that_never_logs_in() {
    let srv = start(Config {
        connect_timeout: Duration::from_millis(300),
        ..config()
    });
    let mut r = Raw::connect(srv.port);
    r.greeting();
    let t = Instant::now();
    assert!(r.closed(), "a connection without a login stays open");
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    let mut other = Raw::login(srv.port);
    ping(&mut other);
}

#[test]
fn shutdown_closes_connections_waiting_for_a_command() {
    let srv = start(config());
    let mut waiting = Raw::login(srv.port);
    ping(&mut waiting);
    // One still in its login phase, too.
    let mut greeted = Raw::connect(srv.port);
    greeted.greeting();
    let t = Instant::now();
    srv.stop().unwrap();
    assert!(waiting.closed());
    assert!(greeted.closed());
    // Stopping waited for both; their timeouts (hours, seconds) did not.
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// A COM_QUERY payload.
fn query(sql: &str) -> Vec<u8> {
    let mut p = vec![0x03];
    p.extend_from_slice(sql.as_bytes());
    p
}

#[test]
fn an_answer_waits_for_its_commits_sync_without_holding_up_others() {
    let srv = start(config());
    let mut r = Raw::login(srv.port);
    let port = srv.port;
    let other = std::thread::spawn(move || {
        let mut o = Raw::login(port);
        sleep(Duration::from_millis(100));
        // During the other connection's wait: answered at once.
        let t = Instant::now();
        ping(&mut o);
        t.elapsed()
    });
    let t = Instant::now();
    let a = r.command(&query("DURABLE WAIT 500"));
    let waited = t.elapsed();
    assert_eq!((a[0].0, a[0].1[0]), (1, 0), "OK once durable: {a:?}");
    assert!(
        waited >= Duration::from_millis(450),
        "answered after {waited:?}, before its sync"
    );
    let pinged = other.join().unwrap();
    assert!(
        pinged < Duration::from_millis(300),
        "another connection waited {pinged:?}"
    );
    // The connection goes on.
    ping(&mut r);
}

#[test]
fn a_failed_sync_answers_its_error_instead_of_ok_and_closes() {
    let srv = start(config());
    let mut r = Raw::login(srv.port);
    let a = r.command(&query("DURABLE FAIL"));
    assert_eq!(a[0].0, 1, "the answer's sequence id");
    assert_eq!(common::raw::err_code(&a[0].1), Some(1180), "{a:?}");
    assert!(r.closed(), "the connection stays open after a failed sync");
    let mut other = Raw::login(srv.port);
    ping(&mut other);
}
