//! `cairndb server` running a write by primary key on its connection's
//! network thread (`Session::is_quick_write`): a write that waits for a row
//! lock must give that thread up (the engine's blocking hook), or with one
//! network thread the lock's holder could never be served. Driven with
//! prepared statements through `mysql_async`, as sysbench drives it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mysql_async::prelude::*;
use mysql_async::{Conn, Opts};

struct Server {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server on a free port with `args`; returns once it listens.
fn start(args: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairndb"))
        .arg("server")
        .arg(format!("--datadir={}", dir.path().display()))
        .arg("--port=0")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut port = None;
    for line in BufReader::new(out).lines() {
        let line = line.unwrap();
        if let Some(addr) = line.split("listening on ").nth(1) {
            port = addr.rsplit(':').next().and_then(|p| p.trim().parse().ok());
            break;
        }
    }
    Server {
        child,
        port: port.expect("the server printed where it listens"),
        _dir: dir,
    }
}

async fn connect(port: u16) -> Conn {
    let url = format!("mysql://root@127.0.0.1:{port}/");
    Conn::new(Opts::from_url(&url).unwrap()).await.unwrap()
}

async fn lock_wait_on_one_network_thread(commit_wait: &str) {
    let srv = start(&["--worker-threads=1", "--lock-wait-timeout=30", commit_wait]);
    let mut a = connect(srv.port).await;
    a.query_drop("CREATE DATABASE d").await.unwrap();
    a.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v INT NOT NULL)")
        .await
        .unwrap();
    a.query_drop("INSERT INTO d.t VALUES (1, 0), (2, 0)")
        .await
        .unwrap();
    a.query_drop("BEGIN").await.unwrap();
    a.query_drop("UPDATE d.t SET v = 1 WHERE id = 1")
        .await
        .unwrap();

    // B's prepared update by primary key waits for A's row lock.
    let port = srv.port;
    let b = tokio::spawn(async move {
        let mut b = connect(port).await;
        let st = b
            .prep("UPDATE d.t SET v = v + 10 WHERE id = ?")
            .await
            .unwrap();
        // Once to cache the plan on an unlocked row, then on the locked one.
        b.exec_drop(&st, (2,)).await.unwrap();
        b.exec_drop(&st, (1,)).await.unwrap();
        b.affected_rows()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!b.is_finished(), "the update did not wait for the row lock");

    // The one network thread still serves others, and A's COMMIT.
    let mut c = connect(srv.port).await;
    let one: Option<i64> = tokio::time::timeout(Duration::from_secs(10), c.query_first("SELECT 1"))
        .await
        .expect("a lock wait held the network thread")
        .unwrap();
    assert_eq!(one, Some(1));
    tokio::time::timeout(Duration::from_secs(10), a.query_drop("COMMIT"))
        .await
        .expect("the lock holder's COMMIT was not served")
        .unwrap();
    let changed = tokio::time::timeout(Duration::from_secs(10), b)
        .await
        .expect("the waiting update never finished")
        .unwrap();
    assert_eq!(changed, 1);
    let v: Option<i64> = c
        .query_first("SELECT v FROM d.t WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(v, Some(11));
}

/// mysql_async reads `@@socket` when it connects (to move to the socket);
/// an unknown variable there failed every connection with error 1193.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_async_connects_with_its_default_options_reading_socket() {
    let srv = start(&[]);
    let mut c = connect(srv.port).await;
    let socket: Option<Option<String>> = c.query_first("SELECT @@socket").await.unwrap();
    assert_eq!(socket, Some(None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_write_waiting_for_a_row_lock_gives_up_the_network_thread() {
    lock_wait_on_one_network_thread("--commit-wait=task").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_unsynced_commits_too() {
    lock_wait_on_one_network_thread("--flush-log-at-trx-commit=2").await;
}

/// `--connect-timeout` sets how long a connection may take to log in,
/// and `SET GLOBAL connect_timeout` changes it for the next connections
/// of the running server (GLOBAL only, as in MySQL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_timeout_is_an_option_and_a_global_variable() {
    use std::io::Read;
    let srv = start(&["--connect-timeout=30"]);
    let mut c = connect(srv.port).await;
    let t: Option<i64> = c
        .query_first("SELECT @@global.connect_timeout")
        .await
        .unwrap();
    assert_eq!(t, Some(30));
    assert!(c
        .query_drop("SET SESSION connect_timeout = 5")
        .await
        .is_err());
    c.query_drop("SET GLOBAL connect_timeout = 2")
        .await
        .unwrap();
    // A client that never answers the greeting: closed after about 2 s
    // (with the 30 s it started with, the read below would time out).
    let began = std::time::Instant::now();
    let waited = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
        }
        began.elapsed()
    })
    .await
    .unwrap();
    assert!(
        waited >= Duration::from_millis(1500) && waited < Duration::from_secs(15),
        "{waited:?}"
    );
    // The server goes on serving.
    connect(srv.port)
        .await
        .query_drop("SELECT 1")
        .await
        .unwrap();
}
