//! Hostile clients against the real `cairndb server`: statements nested
//! or chained far past any thread's stack if walked naively, IN lists of
//! 100,000 values, names with a NUL; after each the server answers
//! another connection, and after a SIGKILL and a restart every database
//! opens. Bounded in time: a few seconds.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use mysql_async::prelude::*;
use mysql_async::{Conn, Opts};

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server on `dir` and a free port; returns once it listens.
fn start(dir: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairndb"))
        .arg("server")
        .arg(format!("--datadir={}", dir.display()))
        .arg("--port=0")
        .arg("--worker-threads=2")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
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
    }
}

async fn connect(port: u16) -> Conn {
    let url = format!("mysql://root@127.0.0.1:{port}/");
    Conn::new(Opts::from_url(&url).unwrap()).await.unwrap()
}

fn code(e: mysql_async::Error) -> u16 {
    match e {
        mysql_async::Error::Server(s) => s.code,
        other => panic!("expected a server error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_statements_leave_the_server_serving_and_restartable() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path());
    let mut c = connect(srv.port).await;

    // A 20 KB sum: 10,000 terms.
    let sum = format!("SELECT 1{}", "+1".repeat(9_999));
    let v: Option<i64> = c.query_first(&sum).await.unwrap();
    assert_eq!(v, Some(10_000));
    // The same prepared, as ORMs send it.
    let st = c
        .prep(format!("SELECT ?{}", " + ?".repeat(2_999)))
        .await
        .unwrap();
    let v: Option<f64> = c.exec_first(&st, vec![1i64; 3_000]).await.unwrap();
    assert_eq!(v, Some(3_000.0));
    c.close(st).await.unwrap();

    c.query_drop("CREATE DATABASE d").await.unwrap();
    c.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO d.t VALUES (1, 1), (2, 2), (99999, 3)")
        .await
        .unwrap();
    // An ORM's OR chain, and an IN list of 100,000 values.
    let ors: String = (3..20_000).map(|i| format!(" OR id = {i}")).collect();
    let n: Option<i64> = c
        .query_first(format!("SELECT COUNT(*) FROM d.t WHERE id = 1{ors}"))
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    let list: Vec<String> = (2..100_002).map(|i| i.to_string()).collect();
    let n: Option<i64> = c
        .query_first(format!(
            "SELECT COUNT(*) FROM d.t WHERE id IN ({})",
            list.join(",")
        ))
        .await
        .unwrap();
    assert_eq!(n, Some(2));
    // Past the limits: MySQL's error 1436, and the connection goes on.
    let e = c
        .query_drop(format!("SELECT 1{}", "+1".repeat(200_000)))
        .await
        .unwrap_err();
    assert_eq!(code(e), 1436);
    let e = c
        .query_drop(format!(
            "SELECT {}1{}",
            "(".repeat(5_000),
            ")".repeat(5_000)
        ))
        .await
        .unwrap_err();
    assert_eq!(code(e), 1436);
    // A NUL in a name is refused.
    let e = c.query_drop("CREATE DATABASE `a\0b`").await.unwrap_err();
    assert_eq!(code(e), 1102);
    let v: Option<i64> = c.query_first("SELECT 7").await.unwrap();
    assert_eq!(v, Some(7));
    // Another connection is served.
    let mut other = connect(srv.port).await;
    let v: Option<i64> = other.query_first("SELECT 8").await.unwrap();
    assert_eq!(v, Some(8));
    drop(c);
    drop(other);

    // SIGKILL, restart: every database opens.
    drop(srv);
    let srv = start(dir.path());
    let mut c = connect(srv.port).await;
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM d.t").await.unwrap();
    assert_eq!(n, Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_closes_an_idle_connection_and_frees_its_locks() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path());
    let mut a = connect(srv.port).await;
    a.query_drop("CREATE DATABASE d").await.unwrap();
    a.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    a.query_drop("INSERT INTO d.t VALUES (1, 0)").await.unwrap();
    let a_id: Option<u64> = a.query_first("SELECT CONNECTION_ID()").await.unwrap();
    a.query_drop("BEGIN").await.unwrap();
    a.query_drop("UPDATE d.t SET v = 1 WHERE id = 1")
        .await
        .unwrap();
    // A sits idle in its transaction, holding the row lock.
    let mut b = connect(srv.port).await;
    let list: Vec<(u64, String)> = b
        .query("SELECT ID, COMMAND FROM information_schema.PROCESSLIST")
        .await
        .unwrap();
    assert!(
        list.contains(&(a_id.unwrap(), "Sleep".to_string())),
        "{list:?}"
    );
    b.query_drop(format!("KILL {}", a_id.unwrap()))
        .await
        .unwrap();
    // A's transaction rolled back: B gets the lock at once.
    b.query_drop("SET SESSION innodb_lock_wait_timeout = 5")
        .await
        .unwrap();
    b.query_drop("UPDATE d.t SET v = 2 WHERE id = 1")
        .await
        .unwrap();
    let v: Option<i64> = b
        .query_first("SELECT v FROM d.t WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(v, Some(2));
    assert!(a.query_drop("SELECT 1").await.is_err(), "a was closed");

    // A session's own wait_timeout closes it when idle that long.
    let mut c = connect(srv.port).await;
    c.query_drop("SET SESSION wait_timeout = 1").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    assert!(c.query_drop("SELECT 1").await.is_err(), "c timed out");
}
