//! What operators see and stop: `SHOW PROCESSLIST` of every session,
//! `KILL [QUERY]` and `max_execution_time` (of running statements and of
//! statements waiting for a row lock), `SHOW STATUS` counters, what
//! monitoring tools read (replica status, InnoDB's compression tables),
//! and the slow log's lock time and rows examined.

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
    // MySQL's hint sets the statement's own limit, and wins over the
    // session's value either way.
    let hinted = LONG.replacen("SELECT", "SELECT /*+ MAX_EXECUTION_TIME(100) */", 1);
    assert_ne!(hinted, LONG);
    let t = Instant::now();
    assert_eq!(s.query(&hinted, &mut c).unwrap_err().code, 3024);
    assert!(t.elapsed() < Duration::from_secs(10));
    let p = s.prepare(&hinted).unwrap();
    assert_eq!(s.execute(p.id, &[], &mut c).unwrap_err().code, 3024);
    q(&mut s, "SET SESSION max_execution_time = 1");
    assert_eq!(
        cell(
            &q(
                &mut s,
                "SELECT /*+ MAX_EXECUTION_TIME(0) */ COUNT(*) FROM d.t"
            )
            .rows[0][0]
        ),
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

/// `Handler_*` count what MySQL's handler calls would: a key looked up,
/// a range entered at a key and stepped through, a table read row by row
/// (its end included), rows written, changed and removed, commits and
/// rollbacks.
#[test]
fn handler_counters_count_reads_writes_and_transactions() {
    let (_dir, db) = setup(1);
    let mut s = Session::new(db.clone(), "root");
    q(
        &mut s,
        "CREATE TABLE d.h (id INT PRIMARY KEY, v INT, w INT, KEY iv (v))",
    );
    let rows: Vec<String> = (0..10).map(|i| format!("({i}, {}, {i})", i % 7)).collect();
    q(
        &mut s,
        &format!("INSERT INTO d.h VALUES {}", rows.join(",")),
    );
    const NAMES: [&str; 9] = [
        "Handler_read_key",
        "Handler_read_next",
        "Handler_read_rnd_next",
        "Handler_read_first",
        "Handler_write",
        "Handler_update",
        "Handler_delete",
        "Handler_commit",
        "Handler_rollback",
    ];
    // What `sql` added to each counter (the session's own).
    let delta = |s: &mut Session, sql: &str| -> Vec<(&'static str, u64)> {
        let before: Vec<u64> = NAMES.iter().map(|n| status(s, "SESSION", n)).collect();
        for one in sql.split(';') {
            q(s, one);
        }
        NAMES
            .iter()
            .zip(before)
            .map(|(n, b)| (*n, status(s, "SESSION", n) - b))
            .filter(|(_, d)| *d != 0)
            .collect()
    };
    assert_eq!(
        delta(&mut s, "SELECT w FROM d.h WHERE id = 3"),
        [("Handler_read_key", 1)]
    );
    assert_eq!(
        delta(&mut s, "SELECT w FROM d.h WHERE w >= 0"),
        [("Handler_read_rnd_next", 11)]
    );
    // v = 2 holds for ids 2 and 9: entered at the key, two steps.
    assert_eq!(
        delta(&mut s, "SELECT w FROM d.h WHERE v = 2"),
        [("Handler_read_key", 1), ("Handler_read_next", 2)]
    );
    let d = delta(&mut s, "INSERT INTO d.h VALUES (100, 1, 1), (101, 1, 1)");
    assert!(d.contains(&("Handler_write", 2)), "{d:?}");
    assert!(d.contains(&("Handler_commit", 1)), "{d:?}");
    let d = delta(&mut s, "UPDATE d.h SET w = 5 WHERE id = 100");
    assert!(d.contains(&("Handler_update", 1)), "{d:?}");
    let d = delta(&mut s, "DELETE FROM d.h WHERE id = 101");
    assert!(d.contains(&("Handler_delete", 1)), "{d:?}");
    let d = delta(
        &mut s,
        "BEGIN; INSERT INTO d.h VALUES (102, 1, 1); ROLLBACK",
    );
    assert!(d.contains(&("Handler_rollback", 1)), "{d:?}");
    assert!(!d.iter().any(|(n, _)| *n == "Handler_commit"), "{d:?}");
    // A closed session's counts stay in the global ones.
    let g = status(&mut s, "GLOBAL", "Handler_write");
    drop(s);
    let mut t = Session::new(db.clone(), "root");
    assert_eq!(status(&mut t, "GLOBAL", "Handler_write"), g);
}

/// `Created_tmp_tables` counts what MySQL would hold in an internal
/// temporary table: groups, a DISTINCT set, window partitions, a derived
/// table, a UNION's result, a CTE; a point select or an ordered scan
/// none. Nothing goes to disk as a table (`Created_tmp_disk_tables` 0).
#[test]
fn created_tmp_tables_counts_groupings_derived_tables_and_unions() {
    let (_dir, db) = setup(50);
    let mut s = Session::new(db.clone(), "root");
    let delta = |s: &mut Session, sql: &str| -> u64 {
        let before = status(s, "SESSION", "Created_tmp_tables");
        q(s, sql);
        status(s, "SESSION", "Created_tmp_tables") - before
    };
    assert_eq!(delta(&mut s, "SELECT v FROM d.t WHERE id = 3"), 0);
    assert_eq!(delta(&mut s, "SELECT v FROM d.t ORDER BY id"), 0);
    assert_eq!(delta(&mut s, "SELECT COUNT(*) FROM d.t"), 0);
    assert_eq!(delta(&mut s, "SELECT v, COUNT(*) FROM d.t GROUP BY v"), 1);
    assert_eq!(delta(&mut s, "SELECT DISTINCT v FROM d.t"), 1);
    assert_eq!(
        delta(
            &mut s,
            "SELECT id, ROW_NUMBER() OVER (PARTITION BY v) FROM d.t"
        ),
        1
    );
    assert_eq!(
        delta(
            &mut s,
            "SELECT COUNT(*) FROM (SELECT v FROM d.t WHERE id < 10) x"
        ),
        1
    );
    assert!(delta(&mut s, "SELECT v FROM d.t UNION SELECT id FROM d.t") >= 1);
    assert_eq!(
        delta(
            &mut s,
            "WITH c AS (SELECT v FROM d.t) SELECT COUNT(*) FROM c JOIN c AS c2 USING (v)"
        ),
        1
    );
    let g = status(&mut s, "GLOBAL", "Created_tmp_tables");
    assert!(g >= 6, "{g}");
    assert_eq!(status(&mut s, "GLOBAL", "Created_tmp_disk_tables"), 0);
}

/// A commit that fails (its WAL write refused) counts as a rollback: the
/// transaction is gone.
#[test]
fn handler_rollback_counts_a_commit_that_failed() {
    use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
    let fault = FaultFs::new(Arc::new(cairndb::env::mem::MemFs::new()));
    let mut opts = SqlOptions::default();
    opts.engine.fs = Arc::new(fault.clone());
    let db = SqlDb::open("/db", opts).unwrap();
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "CREATE TABLE d.t (id INT PRIMARY KEY)");
    let commits = status(&mut s, "SESSION", "Handler_commit");
    let rollbacks = status(&mut s, "SESSION", "Handler_rollback");
    q(&mut s, "BEGIN");
    q(&mut s, "INSERT INTO d.t VALUES (1)");
    fault.inject(FaultRule::new(FaultOp::Write, 5));
    fault.inject(FaultRule::new(FaultOp::Sync, 5));
    let mut c = Collect::default();
    assert!(s.query("COMMIT", &mut c).is_err());
    fault.clear();
    assert_eq!(status(&mut s, "SESSION", "Handler_commit"), commits);
    assert_eq!(status(&mut s, "SESSION", "Handler_rollback"), rollbacks + 1);
}

/// Waits until session `id` shows as running a statement.
fn wait_running(b: &mut Session, id: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let c = q(b, "SHOW FULL PROCESSLIST");
        if c.rows
            .iter()
            .any(|r| cell(&r[0]) == id.to_string() && cell(&r[4]) == "Query")
        {
            return;
        }
        assert!(Instant::now() < deadline, "session {id} never ran");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a waiter's thread returns: the statement's error code, how long
/// it took, and what `SELECT 5` gave after it.
type Waited = (Result<(), u16>, Duration, String);

/// Runs `sql` in a new session of `db` on its own thread (after `first`);
/// returns the thread and the session's id.
fn waiter(
    db: &Arc<SqlDb>,
    first: &'static str,
    sql: &'static str,
) -> (std::thread::JoinHandle<Waited>, u64) {
    let mut w = Session::new(db.clone(), "app");
    let id = w.connection_id();
    let t = std::thread::spawn(move || {
        q(&mut w, first);
        let started = Instant::now();
        let mut c = Collect::default();
        let r = w.query(sql, &mut c).map(|_| ()).map_err(|e| e.code);
        let took = started.elapsed();
        // The session goes on.
        let after = cell(&q(&mut w, "SELECT 5").rows[0][0]);
        (r, took, after)
    });
    (t, id)
}

#[test]
fn kill_query_stops_a_statement_waiting_for_a_row_lock() {
    let (_dir, db) = setup(10);
    let mut holder = Session::new(db.clone(), "root");
    q(&mut holder, "BEGIN");
    q(&mut holder, "UPDATE d.t SET v = 100 WHERE id = 1");
    // Waits up to 50 s (innodb_lock_wait_timeout) unless stopped.
    let (t, id) = waiter(
        &db,
        "SET SESSION innodb_lock_wait_timeout = 50",
        "UPDATE d.t SET v = 200 WHERE id = 1",
    );
    let mut b = Session::new(db.clone(), "root");
    wait_running(&mut b, id);
    std::thread::sleep(Duration::from_millis(100));
    let killed = Instant::now();
    q(&mut b, &format!("KILL QUERY {id}"));
    let (r, took, after) = t.join().unwrap();
    assert_eq!(r, Err(1317));
    assert!(killed.elapsed() < Duration::from_secs(5), "{took:?}");
    assert_eq!(after, "5");
    // The holder's transaction is untouched and commits.
    q(&mut holder, "COMMIT");
    assert_eq!(
        cell(&q(&mut b, "SELECT v FROM d.t WHERE id = 1").rows[0][0]),
        "100"
    );
}

#[test]
fn kill_connection_stops_a_statement_waiting_for_a_row_lock() {
    let (_dir, db) = setup(10);
    let mut holder = Session::new(db.clone(), "root");
    q(&mut holder, "BEGIN");
    q(&mut holder, "SELECT v FROM d.t WHERE id = 1 FOR UPDATE");
    let (t, id) = waiter(&db, "BEGIN", "DELETE FROM d.t WHERE id = 1");
    let mut b = Session::new(db.clone(), "root");
    wait_running(&mut b, id);
    let killed = Instant::now();
    q(&mut b, &format!("KILL CONNECTION {id}"));
    let (r, _, _) = t.join().unwrap();
    assert_eq!(r, Err(1317));
    assert!(killed.elapsed() < Duration::from_secs(5));
    q(&mut holder, "ROLLBACK");
}

#[test]
fn max_execution_time_stops_a_select_waiting_for_a_row_lock() {
    let (_dir, db) = setup(10);
    let mut holder = Session::new(db.clone(), "root");
    q(&mut holder, "BEGIN");
    q(&mut holder, "UPDATE d.t SET v = 100 WHERE id = 1");
    let (t, _) = waiter(
        &db,
        "SET SESSION max_execution_time = 200",
        "SELECT v FROM d.t WHERE id = 1 FOR UPDATE",
    );
    let (r, took, after) = t.join().unwrap();
    assert_eq!(r, Err(3024));
    assert!(took >= Duration::from_millis(190), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(after, "5");
    q(&mut holder, "ROLLBACK");
}

#[test]
fn replica_status_is_empty_and_innodb_compression_tables_exist() {
    let (_dir, db) = setup(1);
    let mut s = Session::new(db, "root");
    let c = q(&mut s, "SHOW SLAVE STATUS");
    assert!(c.rows.is_empty());
    let names: Vec<&str> = c.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), 60);
    assert!(names.contains(&"Master_Host") && names.contains(&"Slave_IO_Running"));
    let c = q(&mut s, "SHOW REPLICA STATUS FOR CHANNEL ''");
    assert!(c.rows.is_empty());
    let names: Vec<&str> = c.columns.iter().map(|c| c.name.as_str()).collect();
    assert!(names.contains(&"Source_Host") && names.contains(&"Channel_Name"));
    // Not MySQL's syntax: refused, so a tool tries the next form.
    let mut c = Collect::default();
    let e = s
        .query("SHOW SLAVE STATUS NONBLOCKING", &mut c)
        .unwrap_err();
    assert_eq!(e.code, 1064);
    assert!(s.query("SHOW ALL SLAVES STATUS", &mut c).is_err());
    for table in ["innodb_cmp", "innodb_cmpmem", "INNODB_CMP_RESET"] {
        let c = q(
            &mut s,
            &format!("SELECT page_size FROM information_schema.{table}"),
        );
        assert!(c.rows.is_empty(), "{table}");
    }
}

/// The slow log's entries: (Query_time line, statement) pairs.
fn slow_entries(path: &std::path::Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("# Query_time:") {
            let stmt = lines[i + 1..]
                .iter()
                .find(|x| !x.starts_with("use ") && !x.starts_with("SET timestamp"))
                .unwrap();
            out.push((l.to_string(), stmt.to_string()));
        }
    }
    out
}

/// A field of a `# Query_time:` line.
fn field(line: &str, name: &str) -> f64 {
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == format!("{name}:") {
            return it.next().unwrap().parse().unwrap();
        }
    }
    panic!("no {name} in {line}");
}

#[test]
fn slow_log_reports_lock_time_and_rows_examined() {
    // Enough rows that each statement below takes the 1 ms a statement
    // needs to be logged at all.
    let (dir, db) = setup(20_000);
    let log = dir.path().join("slow.log");
    let mut root = Session::new(db.clone(), "root");
    q(
        &mut root,
        &format!("SET GLOBAL slow_query_log_file = '{}'", log.display()),
    );
    q(&mut root, "SET GLOBAL long_query_time = 0");
    q(&mut root, "SET GLOBAL slow_query_log = ON");
    let mut s = Session::new(db.clone(), "app");
    // 20,000 rows read, one sent.
    q(&mut s, "SELECT COUNT(*) FROM d.t WHERE v > 3");
    // Each of the 20,000 rows, then the partner by primary key of the
    // 5,714 with v > 4: counted per statement, not per session.
    q(
        &mut s,
        "SELECT COUNT(*) FROM d.t a JOIN d.t b ON b.id = a.id WHERE a.v > 4",
    );
    // A statement that waits about 300 ms for a row lock.
    q(&mut root, "BEGIN");
    q(&mut root, "UPDATE d.t SET v = 100 WHERE id = 1");
    let (t, id) = waiter(&db, "SELECT 1", "UPDATE d.t SET v = 200 WHERE id = 1");
    let mut b = Session::new(db.clone(), "root");
    wait_running(&mut b, id);
    std::thread::sleep(Duration::from_millis(300));
    q(&mut root, "COMMIT");
    let (r, _, _) = t.join().unwrap();
    assert_eq!(r, Ok(()));
    let entries = slow_entries(&log);
    let find = |stmt: &str| {
        entries
            .iter()
            .find(|(_, s)| s.starts_with(stmt))
            .unwrap_or_else(|| panic!("no entry for {stmt} in {entries:?}"))
            .0
            .clone()
    };
    let count = find("SELECT COUNT(*) FROM d.t WHERE v > 3");
    assert_eq!(field(&count, "Rows_sent"), 1.0, "{count}");
    assert_eq!(field(&count, "Rows_examined"), 20_000.0, "{count}");
    assert_eq!(field(&count, "Lock_time"), 0.0, "{count}");
    let join = find("SELECT COUNT(*) FROM d.t a JOIN d.t b");
    assert_eq!(field(&join, "Rows_examined"), 25_714.0, "{join}");
    let waited = find("UPDATE d.t SET v = 200 WHERE id = 1");
    let lock = field(&waited, "Lock_time");
    assert!((0.25..30.0).contains(&lock), "{waited}");
    assert!(field(&waited, "Query_time") >= lock, "{waited}");
}

#[test]
fn interactive_clients_start_with_interactive_timeout_as_wait_timeout() {
    let (_dir, db) = setup(1);
    let var = |s: &mut Session, v: &str| cell(&q(s, &format!("SELECT @@{v}")).rows[0][0]);
    let mut root = Session::new(db.clone(), "root");
    // At the defaults nothing is set: the server's own idle limit holds.
    let mut plain = Session::new(db.clone(), "root");
    plain.set_interactive();
    assert_eq!(var(&mut plain, "wait_timeout"), "28800");
    assert_eq!(plain.wait_timeout(), None);
    q(&mut root, "SET GLOBAL interactive_timeout = 5");
    let mut i = Session::new(db.clone(), "root");
    i.set_interactive();
    assert_eq!(var(&mut i, "wait_timeout"), "5");
    assert_eq!(i.wait_timeout(), Some(Duration::from_secs(5)));
    let mut b = Session::new(db.clone(), "root");
    assert_eq!(var(&mut b, "wait_timeout"), "28800");
    assert_eq!(var(&mut b, "interactive_timeout"), "5");
    // The global wait_timeout is what a new session starts with.
    q(&mut root, "SET GLOBAL wait_timeout = 7");
    let mut c = Session::new(db.clone(), "root");
    assert_eq!(var(&mut c, "wait_timeout"), "7");
    assert_eq!(var(&mut c, "global.wait_timeout"), "7");
    assert_eq!(c.wait_timeout(), Some(Duration::from_secs(7)));
    let mut ci = Session::new(db.clone(), "root");
    ci.set_interactive();
    assert_eq!(ci.wait_timeout(), Some(Duration::from_secs(5)));
    // A session's own value, clamped to MySQL's range.
    q(&mut c, "SET SESSION wait_timeout = 0");
    assert_eq!(var(&mut c, "wait_timeout"), "1");
    assert_eq!(var(&mut b, "wait_timeout"), "28800");
}
