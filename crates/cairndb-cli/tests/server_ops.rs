//! Operator-facing parts of `cairndb server` end to end: the status
//! counters the network server keeps (`Bytes_received`, `Bytes_sent`,
//! `Aborted_connects`), `max_connect_errors` with `FLUSH HOSTS` and
//! their privileges, the slow query log and the general log (files in
//! MySQL's formats, `Slow_queries` agreeing with the slow log), and the
//! net timeouts as variables, and `KILL [QUERY]` and `max_execution_time`
//! stopping a statement that waits for a row lock.

use std::io::Read;
use std::process::Command;
use std::time::{Duration, Instant};

use mysql_async::prelude::*;
use mysql_async::Conn;

mod common;
use common::server::{code, connect, start};

async fn status(c: &mut Conn, scope: &str, name: &str) -> u64 {
    let row: Option<(String, String)> = c
        .query_first(format!("SHOW {scope} STATUS LIKE '{name}'"))
        .await
        .unwrap();
    row.unwrap_or_else(|| panic!("no {name}"))
        .1
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_and_aborted_connects_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path(), &[]);
    let mut c = connect(srv.port, "root", "").await.unwrap();
    let r0 = status(&mut c, "SESSION", "Bytes_received").await;
    let s0 = status(&mut c, "SESSION", "Bytes_sent").await;
    assert!(r0 > 0 && s0 > 0, "{r0} {s0}");
    let long = format!("SELECT '{}'", "x".repeat(5000));
    c.query_drop(&long).await.unwrap();
    let r1 = status(&mut c, "SESSION", "Bytes_received").await;
    let s1 = status(&mut c, "SESSION", "Bytes_sent").await;
    assert!(r1 >= r0 + 5000, "{r0} -> {r1}");
    assert!(s1 >= s0 + 5000, "{s0} -> {s1}");
    let g = status(&mut c, "GLOBAL", "Bytes_received").await;
    assert!(g >= r1, "global {g} < session {r1}");

    // A connection that never logs in: Aborted_connects.
    let a0 = status(&mut c, "GLOBAL", "Aborted_connects").await;
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    let mut greeting = [0u8; 16];
    raw.read_exact(&mut greeting).unwrap();
    drop(raw);
    let t = Instant::now();
    while status(&mut c, "GLOBAL", "Aborted_connects").await == a0 {
        assert!(t.elapsed() < Duration::from_secs(10), "not counted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let v: Option<(String, String)> = c
        .query_first("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'Aborted_clients'")
        .await
        .unwrap();
    assert!(v.is_some());
    let m = status(&mut c, "GLOBAL", "Max_used_connections").await;
    assert!(m >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_connect_errors_and_flush_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(
        dir.path(),
        &["--max-connect-errors=3", "--block-loopback-hosts"],
    );
    let mut root = connect(srv.port, "root", "").await.unwrap();
    root.query_drop("CREATE USER plain IDENTIFIED BY 'p'")
        .await
        .unwrap();
    let mut plain = connect(srv.port, "plain", "p").await.unwrap();
    let n: Option<i64> = root
        .query_first("SELECT @@max_connect_errors")
        .await
        .unwrap();
    assert_eq!(n, Some(3));
    // Global only; SUPER or CONNECTION_ADMIN to set it; RELOAD to flush.
    assert_eq!(
        code(
            root.query_drop("SET max_connect_errors = 5")
                .await
                .unwrap_err()
        ),
        1229
    );
    assert_eq!(
        code(
            plain
                .query_drop("SET GLOBAL max_connect_errors = 5")
                .await
                .unwrap_err()
        ),
        1227
    );
    assert_eq!(
        code(plain.query_drop("FLUSH HOSTS").await.unwrap_err()),
        1227
    );

    for _ in 0..3 {
        assert_eq!(
            code(connect(srv.port, "plain", "bad").await.unwrap_err()),
            1045
        );
    }
    // Blocked, even with the right password.
    assert_eq!(
        code(connect(srv.port, "plain", "p").await.unwrap_err()),
        1129
    );
    let blocked = status(&mut root, "GLOBAL", "Connection_errors_host_blocked").await;
    assert_eq!(blocked, 1);
    root.query_drop("FLUSH HOSTS").await.unwrap();
    connect(srv.port, "plain", "p").await.unwrap();

    // A success resets the count; raising the limit lets a host in.
    for _ in 0..2 {
        connect(srv.port, "plain", "bad").await.unwrap_err();
    }
    connect(srv.port, "plain", "p").await.unwrap();
    for _ in 0..2 {
        connect(srv.port, "plain", "bad").await.unwrap_err();
    }
    connect(srv.port, "plain", "p").await.unwrap();
    root.query_drop("SET GLOBAL max_connect_errors = 50")
        .await
        .unwrap();
    let n: Option<i64> = plain
        .query_first("SELECT @@global.max_connect_errors")
        .await
        .unwrap();
    assert_eq!(n, Some(50));
    let v: Option<(String, String)> = plain
        .query_first("SHOW GLOBAL VARIABLES LIKE 'max_connect_errors'")
        .await
        .unwrap();
    assert_eq!(v.unwrap().1, "50");
}

/// The `Id:` of each slow log entry.
fn slow_ids(text: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| l.starts_with("# User@Host:"))
        .map(|l| l.rsplit("Id:").next().unwrap().trim().parse().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_general_logs_in_mysql_formats() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path(), &[]);
    let mut root = connect(srv.port, "root", "").await.unwrap();
    let v: Option<(String, String)> = root
        .query_first("SHOW GLOBAL VARIABLES LIKE 'slow_query_log'")
        .await
        .unwrap();
    assert_eq!(v.unwrap().1, "OFF");
    let file: Option<String> = root
        .query_first("SELECT @@slow_query_log_file")
        .await
        .unwrap();
    let file = file.unwrap();
    assert!(file.ends_with("-slow.log"), "{file}");
    assert!(
        file.starts_with(&dir.path().display().to_string()),
        "{file}"
    );

    // log_output: FILE only.
    assert_eq!(
        code(
            root.query_drop("SET GLOBAL log_output = 'TABLE'")
                .await
                .unwrap_err()
        ),
        1235
    );
    assert_eq!(
        code(
            root.query_drop("SET slow_query_log = ON")
                .await
                .unwrap_err()
        ),
        1229
    );
    root.query_drop("CREATE USER plain IDENTIFIED BY 'p'")
        .await
        .unwrap();
    let mut plain = connect(srv.port, "plain", "p").await.unwrap();
    assert_eq!(
        code(
            plain
                .query_drop("SET GLOBAL slow_query_log = ON")
                .await
                .unwrap_err()
        ),
        1227
    );
    // A session sets its own long_query_time.
    plain.query_drop("SET long_query_time = 0.5").await.unwrap();

    root.query_drop("SET GLOBAL slow_query_log_file = 'my-slow.log'")
        .await
        .unwrap();
    root.query_drop("SET GLOBAL general_log_file = 'my-general.log'")
        .await
        .unwrap();
    root.query_drop("SET GLOBAL slow_query_log = ON")
        .await
        .unwrap();
    root.query_drop("SET GLOBAL general_log = ON")
        .await
        .unwrap();
    // Not for sessions already open: the global value is copied at login.
    root.query_drop("SET GLOBAL long_query_time = 0.001")
        .await
        .unwrap();
    let lqt: Option<f64> = root.query_first("SELECT @@long_query_time").await.unwrap();
    assert_eq!(lqt, Some(10.0));

    let mut c = connect(srv.port, "root", "").await.unwrap();
    let id: Option<u64> = c.query_first("SELECT CONNECTION_ID()").await.unwrap();
    let id = id.unwrap();
    c.query_drop("SET cte_max_recursion_depth = 100000")
        .await
        .unwrap();
    let slow_sql = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000) SELECT COUNT(*) FROM n";
    let n: Option<i64> = c.query_first(slow_sql).await.unwrap();
    assert_eq!(n, Some(30000));
    c.query_drop("SELECT 42").await.unwrap();
    root.query_drop("SET GLOBAL slow_query_log = OFF")
        .await
        .unwrap();
    let slow = status(&mut c, "SESSION", "Slow_queries").await;
    c.query_drop("SELECT 43").await.unwrap();
    root.query_drop("SET GLOBAL general_log = OFF")
        .await
        .unwrap();

    let text = std::fs::read_to_string(dir.path().join("my-slow.log")).unwrap();
    assert!(
        text.contains("Time                 Id Command    Argument"),
        "{text}"
    );
    assert!(text.contains(&format!("{slow_sql};\n")), "{text}");
    let at = text.find(slow_sql).unwrap();
    let entry = &text[..at];
    let entry = &entry[entry.rfind("# Time: ").unwrap()..];
    let lines: Vec<&str> = entry.lines().collect();
    assert!(
        lines[0].ends_with('Z') && lines[0].len() == "# Time: 2024-05-01T10:00:00.123456Z".len(),
        "{entry}"
    );
    assert!(
        lines[1].starts_with("# User@Host: root[root] @ localhost [127.0.0.1]  Id:"),
        "{entry}"
    );
    assert!(
        lines[2].starts_with("# Query_time: ")
            && lines[2].contains("  Lock_time: ")
            && lines[2].contains(" Rows_sent: 1  Rows_examined: "),
        "{entry}"
    );
    assert!(
        lines.last().unwrap().starts_with("SET timestamp="),
        "{entry}"
    );
    // Slow_queries agrees with the log.
    let mine = slow_ids(&text).into_iter().filter(|i| *i == id).count() as u64;
    assert!(mine >= 1);
    assert_eq!(mine, slow, "{text}");

    let g = std::fs::read_to_string(dir.path().join("my-general.log")).unwrap();
    assert!(
        g.contains(&format!(
            "{id:>5} Connect\troot@127.0.0.1 on  using TCP/IP\n"
        )),
        "{g}"
    );
    assert!(g.contains(&format!("{id:>5} Query\tSELECT 42\n")), "{g}");
    assert!(g.contains(&format!("{id:>5} Query\tSELECT 43\n")), "{g}");
    assert!(!g.contains("IDENTIFIED BY"), "{g}");
    let line = g.lines().find(|l| l.ends_with("Query\tSELECT 42")).unwrap();
    let (time, rest) = line.split_once('\t').unwrap();
    assert!(time.ends_with('Z') && time.contains('T'), "{line}");
    assert!(rest.starts_with(&format!("{id:>5} ")), "{line}");
    // Turned off: nothing more is written.
    c.query_drop("SELECT 44").await.unwrap();
    let g2 = std::fs::read_to_string(dir.path().join("my-general.log")).unwrap();
    assert!(!g2.contains("SELECT 44"));

    // A file in a missing directory is refused; FLUSH LOGS needs RELOAD.
    assert_eq!(
        code(
            root.query_drop("SET GLOBAL general_log_file = '/nonexistent/dir/x.log'")
                .await
                .unwrap_err()
        ),
        1231
    );
    assert_eq!(
        code(plain.query_drop("FLUSH LOGS").await.unwrap_err()),
        1227
    );
    root.query_drop("FLUSH LOGS").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_options_at_start_and_net_timeouts_as_variables() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(
        dir.path(),
        &[
            "--general-log=on",
            "--general-log-file=g.log",
            "--net-read-timeout=7",
            "--net_write_timeout=9",
        ],
    );
    let mut c = connect(srv.port, "root", "").await.unwrap();
    c.query_drop("SELECT 7").await.unwrap();
    let g = std::fs::read_to_string(dir.path().join("g.log")).unwrap();
    assert!(g.contains("Query\tSELECT 7\n"), "{g}");
    let t: Option<(i64, i64)> = c
        .query_first("SELECT @@net_read_timeout, @@net_write_timeout")
        .await
        .unwrap();
    assert_eq!(t, Some((7, 9)));
    c.query_drop("SET net_read_timeout = 3").await.unwrap();
    let t: Option<i64> = c.query_first("SELECT @@net_read_timeout").await.unwrap();
    assert_eq!(t, Some(3));
    // A bad option value stops the server at start, naming the option.
    let out = Command::new(env!("CARGO_BIN_EXE_cairndb"))
        .arg("server")
        .arg(format!("--datadir={}", dir.path().join("other").display()))
        .arg("--port=0")
        .arg("--log-output=TABLE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let mut err = String::new();
    out.stderr.as_slice().read_to_string(&mut err).unwrap();
    assert!(err.contains("--log-output"), "{err}");
}

/// `@@global.x` read the session's value (a `SET SESSION` showed through
/// it), and `@@port` was 3306 whatever port the server listened on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_at_global_reads_the_global_value_and_port_is_the_servers() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path(), &[]);
    let mut c = connect(srv.port, "root", "").await.unwrap();
    c.query_drop("SET SESSION long_query_time = 3")
        .await
        .unwrap();
    let v: Option<(f64, f64)> = c
        .query_first("SELECT @@long_query_time, @@global.long_query_time")
        .await
        .unwrap();
    assert_eq!(v, Some((3.0, 10.0)));
    let p: Option<(i64, i64)> = c.query_first("SELECT @@port, @@global.port").await.unwrap();
    assert_eq!(p, Some((i64::from(srv.port), i64::from(srv.port))));
}

/// Waits until connection `id` runs a statement (the process list).
async fn wait_running(admin: &mut Conn, id: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let rows: Vec<(u64, String)> = admin
            .query("SELECT ID, COMMAND FROM information_schema.PROCESSLIST")
            .await
            .unwrap();
        if rows.iter().any(|(i, c)| *i == id && c == "Query") {
            return;
        }
        assert!(Instant::now() < deadline, "connection {id} never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_and_max_execution_time_stop_a_statement_waiting_for_a_row_lock() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path(), &["--lock-wait-timeout=50"]);
    let mut admin = connect(srv.port, "root", "").await.unwrap();
    admin.query_drop("CREATE DATABASE d").await.unwrap();
    admin
        .query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    admin
        .query_drop("INSERT INTO d.t VALUES (1, 1), (2, 2)")
        .await
        .unwrap();
    let mut holder = connect(srv.port, "root", "").await.unwrap();
    holder.query_drop("BEGIN").await.unwrap();
    holder
        .query_drop("UPDATE d.t SET v = 10 WHERE id = 1")
        .await
        .unwrap();

    // KILL QUERY: the waiting UPDATE ends with 1317; the connection goes on.
    let mut w = connect(srv.port, "root", "").await.unwrap();
    let id = u64::from(w.id());
    let task = tokio::spawn(async move {
        let r = w.query_drop("UPDATE d.t SET v = 20 WHERE id = 1").await;
        (r.map_err(code), w)
    });
    wait_running(&mut admin, id).await;
    let killed = Instant::now();
    admin.query_drop(format!("KILL QUERY {id}")).await.unwrap();
    let (r, mut w) = task.await.unwrap();
    assert_eq!(r, Err(1317));
    assert!(killed.elapsed() < Duration::from_secs(5));
    let one: Option<i64> = w.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));

    // max_execution_time: a locking SELECT that waits ends with 3024.
    w.query_drop("SET SESSION max_execution_time = 300")
        .await
        .unwrap();
    w.query_drop("BEGIN").await.unwrap();
    let t = Instant::now();
    let e = w
        .query_drop("SELECT v FROM d.t WHERE id = 1 FOR UPDATE")
        .await
        .unwrap_err();
    assert_eq!(code(e), 3024);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    w.query_drop("ROLLBACK").await.unwrap();

    // KILL CONNECTION: the waiting statement ends at once and the
    // connection closes.
    let id = u64::from(w.id());
    let task = tokio::spawn(async move {
        let r = w.query_drop("DELETE FROM d.t WHERE id = 1").await;
        let next = w.query_drop("SELECT 1").await;
        (r.is_err(), next.is_err())
    });
    wait_running(&mut admin, id).await;
    let killed = Instant::now();
    admin.query_drop(format!("KILL {id}")).await.unwrap();
    let (failed, closed) = task.await.unwrap();
    assert!(failed && closed);
    assert!(killed.elapsed() < Duration::from_secs(5));
    // The holder was never disturbed.
    holder.query_drop("COMMIT").await.unwrap();
    let v: Option<i64> = admin
        .query_first("SELECT v FROM d.t WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(v, Some(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_while_rows_are_sent_is_the_statements_error_not_a_later_result() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path(), &[]);
    let mut admin = connect(srv.port, "root", "").await.unwrap();
    admin.query_drop("CREATE DATABASE d").await.unwrap();
    admin
        .query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    admin
        .query_drop("INSERT INTO d.t VALUES (1, 1)")
        .await
        .unwrap();
    admin.query_drop("BEGIN").await.unwrap();
    admin
        .query_drop("UPDATE d.t SET v = 10 WHERE id = 1")
        .await
        .unwrap();
    // The locking SELECT has sent its columns when its lock wait is cut
    // short: the ERR must end that result set, so reading the first (and
    // only) result set fails, as with MySQL.
    let mut w = connect(srv.port, "root", "").await.unwrap();
    w.query_drop("SET SESSION max_execution_time = 200")
        .await
        .unwrap();
    w.query_drop("BEGIN").await.unwrap();
    let mut r = w
        .query_iter("SELECT v FROM d.t WHERE id = 1 FOR UPDATE")
        .await
        .unwrap();
    let first: Result<Vec<mysql_async::Row>, _> = r.collect().await;
    assert_eq!(first.map_err(code).map(|v| v.len()), Err(3024));
    drop(r);
    // The connection is in step: the next statement gets its own answer.
    let one: Option<i64> = w.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    admin.query_drop("ROLLBACK").await.unwrap();
}
