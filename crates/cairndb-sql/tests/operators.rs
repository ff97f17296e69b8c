//! What operators see and stop: `SHOW PROCESSLIST` of every session,
//! `KILL [QUERY]`, `max_execution_time`, and `SHOW STATUS` counters.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairndb_sql::{Collect, Session, SqlDb, SqlOptions, Value};

fn q(s: &mut Session, sql: &str) -> Collect {
    let mut c = Collect::default();
    if let Err(e) = s.query(sql, &mut c) {
        panic!("{sql}: {e}");
    }
    c
}

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        v => v.to_string(),
    }
}

/// A database with table d.t of `n` rows.
fn setup(n: usize) -> (tempfile::TempDir, Arc<SqlDb>) {
    let dir = tempfile::tempdir().unwrap();
    let db = SqlDb::open(dir.path(), SqlOptions::default()).unwrap();
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)");
    let rows: Vec<String> = (0..n).map(|i| format!("({i}, {})", i % 7)).collect();
    q(
        &mut s,
        &format!("INSERT INTO d.t VALUES {}", rows.join(",")),
    );
    (dir, db)
}

/// A statement that runs for many seconds: a three-way cross join.
const LONG: &str = "SELECT COUNT(*) FROM d.t a JOIN d.t b JOIN d.t c WHERE a.v + b.v + c.v = -1";

fn status(s: &mut Session, scope: &str, name: &str) -> u64 {
    let c = q(s, &format!("SHOW {scope} STATUS LIKE '{name}'"));
    cell(&c.rows[0][1]).parse().unwrap()
}

#[test]
fn processlist_shows_every_session_and_kill_query_stops_a_running_statement() {
    let (_dir, db) = setup(400);
    let mut a = Session::new(db.clone(), "app");
    let a_id = a.connection_id();
    q(&mut a, "USE d");
    let runner = std::thread::spawn(move || {
        let mut c = Collect::default();
        let r = a.query(LONG, &mut c);
        // The session goes on after its statement was killed.
        let after = q(&mut a, "SELECT 5");
        (r.map_err(|e| e.code), cell(&after.rows[0][0]))
    });
    let mut b = Session::new(db.clone(), "root");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let c = q(&mut b, "SHOW FULL PROCESSLIST");
        let row = c
            .rows
            .iter()
            .find(|r| cell(&r[0]) == a_id.to_string())
            .expect("session a is listed")
            .clone();
        assert!(c.rows.len() >= 2, "both sessions are listed");
        if cell(&row[4]) == "Query" {
            assert_eq!(cell(&row[1]), "app");
            assert_eq!(cell(&row[3]), "d");
            assert_eq!(cell(&row[7]), LONG);
            break;
        }
        assert!(Instant::now() < deadline, "a never showed as running");
        std::thread::sleep(Duration::from_millis(5));
    }
    let c = q(
        &mut b,
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query'",
    );
    assert_eq!(cell(&c.rows[0][0]), "2");
    q(&mut b, &format!("KILL QUERY {a_id}"));
    let (r, after) = runner.join().unwrap();
    assert_eq!(r, Err(1317));
    assert_eq!(after, "5");
    let mut c = Collect::default();
    assert_eq!(b.query("KILL 999999", &mut c).unwrap_err().code, 1094);
}

#[test]
fn max_execution_time_stops_a_select() {
    let (_dir, db) = setup(400);
    let mut s = Session::new(db, "root");
    q(&mut s, "SET SESSION max_execution_time = 100");
    let t = Instant::now();
    let mut c = Collect::default();
    assert_eq!(s.query(LONG, &mut c).unwrap_err().code, 3024);
    assert!(t.elapsed() < Duration::from_secs(10));
    q(&mut s, "SET SESSION max_execution_time = 0");
    assert_eq!(
        cell(&q(&mut s, "SELECT COUNT(*) FROM d.t").rows[0][0]),
        "400"
    );
}

#[test]
fn status_counts_statements_and_sessions() {
    let (_dir, db) = setup(10);
    let mut s = Session::new(db.clone(), "root");
    let q0 = status(&mut s, "GLOBAL", "Questions");
    let sel0 = status(&mut s, "GLOBAL", "Com_select");
    q(&mut s, "SELECT 1");
    q(&mut s, "SELECT v FROM d.t WHERE id = 3");
    let p = s.prepare("SELECT v FROM d.t WHERE id = ?").unwrap();
    let mut c = Collect::default();
    s.execute(p.id, &[Value::Int(4)], &mut c).unwrap();
    // The two SHOWs, two SELECTs and the execution.
    assert_eq!(status(&mut s, "GLOBAL", "Questions"), q0 + 5);
    assert_eq!(status(&mut s, "GLOBAL", "Com_select"), sel0 + 3);
    assert_eq!(status(&mut s, "GLOBAL", "Com_stmt_execute"), 1);
    let other = Session::new(db.clone(), "root");
    assert_eq!(status(&mut s, "GLOBAL", "Threads_connected"), 2);
    drop(other);
    assert_eq!(status(&mut s, "GLOBAL", "Threads_connected"), 1);
    assert!(status(&mut s, "GLOBAL", "Max_used_connections") >= 2);
    // The session's own counts.
    let mine = status(&mut s, "SESSION", "Com_select");
    assert_eq!(mine, 3);
    let c = q(&mut s, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'THREADS_CONNECTED'");
    assert_eq!(cell(&c.rows[0][0]), "1");
    let c = q(&mut s, "SHOW ENGINE CAIRNDB STATUS");
    assert!(
        cell(&c.rows[0][2]).contains("Level"),
        "{}",
        cell(&c.rows[0][2])
    );
    let c = q(&mut s, "SHOW STATUS LIKE 'Cairndb_wal_syncs'");
    assert_eq!(c.rows.len(), 1);
}
