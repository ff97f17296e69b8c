//! Statements a hostile or careless client may send: expressions nested
//! or chained far deeper than any thread's stack would take if walked
//! naively, names with bytes the dictionary must not trip over. Each
//! either runs or is refused with MySQL's error, and the session (and a
//! restarted database) keeps working.

use std::sync::Arc;

use cairndb_sql::{Collect, Session, SqlDb, SqlOptions, Value};

fn open(dir: &std::path::Path) -> Arc<SqlDb> {
    SqlDb::open(dir, SqlOptions::default()).unwrap()
}

fn q(s: &mut Session, sql: &str) -> Collect {
    let mut c = Collect::default();
    if let Err(e) = s.query(sql, &mut c) {
        panic!("{}: {e}", &sql[..sql.len().min(200)]);
    }
    c
}

fn err(s: &mut Session, sql: &str) -> u16 {
    let mut c = Collect::default();
    match s.query(sql, &mut c) {
        Ok(()) => panic!("{}: expected an error", &sql[..sql.len().min(200)]),
        Err(e) => e.code,
    }
}

fn one(c: &Collect) -> String {
    match c.rows.first().and_then(|r| r.first()) {
        Some(Value::Null) => "NULL".into(),
        Some(v) => v.to_string(),
        None => "<no row>".into(),
    }
}

/// Runs `f` on a thread with a small stack (256 KiB), as a worker thread
/// of an embedding application might have.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn long_arithmetic_chain_does_not_overflow_the_stack() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::new(open(dir.path()), "root");
        let sql = format!("SELECT 1{}", "+1".repeat(9_999));
        assert_eq!(one(&q(&mut s, &sql)), "10000");
        // A syntax error at the end of a long chain: the parser drops the
        // chain it built.
        assert_eq!(err(&mut s, &format!("{sql} +")), 1064);
        assert_eq!(one(&q(&mut s, "SELECT 2")), "2");
    });
}

#[test]
fn long_or_chain_runs_as_a_balanced_condition() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::new(open(dir.path()), "root");
        q(&mut s, "CREATE DATABASE d");
        q(&mut s, "USE d");
        q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
        q(
            &mut s,
            "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30), (70000, 7)",
        );
        let ors: String = (0..30_000)
            .map(|i| format!(" OR v = {}", i * 3 + 1))
            .collect();
        let sql = format!("SELECT COUNT(*) FROM t WHERE v = 20{ors}");
        // v = 20, and 10 = 3*3+1, 7 = 2*3+1.
        assert_eq!(one(&q(&mut s, &sql)), "3");
        let ands: String = (0..20_000).map(|_| " AND v > 0").collect();
        assert_eq!(
            one(&q(
                &mut s,
                &format!("SELECT COUNT(*) FROM t WHERE id > 1{ands}")
            )),
            "3"
        );
        let ids: String = (0..20_000).map(|i| format!(" OR id = {i}")).collect();
        q(&mut s, &format!("DELETE FROM t WHERE id = -1{ids}"));
        assert_eq!(one(&q(&mut s, "SELECT COUNT(*) FROM t")), "1");
    });
}

#[test]
fn deep_nesting_is_refused_with_1436_and_the_session_survives() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::new(open(dir.path()), "root");
        // Past the parser's nesting limit.
        let parens = format!("SELECT {}1{}", "(".repeat(2_000), ")".repeat(2_000));
        assert_eq!(err(&mut s, &parens), 1436);
        // Within it.
        let parens = format!("SELECT {}1{}", "(".repeat(100), ")".repeat(100));
        assert_eq!(one(&q(&mut s, &parens)), "1");
        let nots = format!("SELECT {}1", "NOT ".repeat(100));
        assert_eq!(one(&q(&mut s, &nots)), "1");
        let negs = format!("SELECT {}1", "- ".repeat(101));
        assert_eq!(one(&q(&mut s, &negs)), "-1");
        // Past the chain limit: refused before it is parsed.
        let chain = format!("SELECT 1{}", "+1".repeat(200_000));
        assert_eq!(err(&mut s, &chain), 1436);
        let cases = format!(
            "SELECT {}1{}",
            "CASE WHEN 1 THEN ".repeat(3),
            " END".repeat(3)
        );
        assert_eq!(one(&q(&mut s, &cases)), "1");
        let cases = format!(
            "SELECT {}1{}",
            "CASE WHEN 1 THEN ".repeat(300),
            " END".repeat(300)
        );
        // Refused (sqlparser gives up on CASE past its nesting limit and
        // reads the word as a column name: 1054).
        let mut c = Collect::default();
        assert!(s.query(&cases, &mut c).is_err());
        assert_eq!(one(&q(&mut s, "SELECT 3")), "3");
    });
}

#[test]
fn deep_prepared_statement_executes_and_closes_on_a_small_stack() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::new(open(dir.path()), "root");
        let sql = format!("SELECT ?{}", " + ?".repeat(4_999));
        let p = s.prepare(&sql).unwrap();
        let params = vec![Value::Int(2); 5_000];
        let mut c = Collect::default();
        s.execute(p.id, &params, &mut c).unwrap();
        assert_eq!(one(&c), "10000");
        s.close_statement(p.id);
        // One left open is dropped with the session.
        let p = s.prepare(&sql).unwrap();
        let mut c = Collect::default();
        s.execute(p.id, &params, &mut c).unwrap();
        drop(s);
    });
}

#[test]
fn long_chain_in_set_and_having_runs() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::new(open(dir.path()), "root");
        q(&mut s, &format!("SET @x = 0{}", " + 2".repeat(5_000)));
        assert_eq!(one(&q(&mut s, "SELECT @x")), "10000");
        q(&mut s, "CREATE DATABASE d");
        q(&mut s, "USE d");
        q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, g INT)");
        q(&mut s, "INSERT INTO t VALUES (1, 1), (2, 1), (3, 2)");
        let having = format!(
            "SELECT g, COUNT(*) AS n FROM t GROUP BY g HAVING n > 1{} ORDER BY g",
            " AND n > 0".repeat(5_000)
        );
        assert_eq!(one(&q(&mut s, &having)), "1");
    });
}

#[test]
fn names_with_nul_trailing_space_or_too_long_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    assert_eq!(err(&mut s, "CREATE DATABASE `a\0b`"), 1102);
    assert_eq!(err(&mut s, "CREATE DATABASE `ab `"), 1102);
    assert_eq!(
        err(&mut s, &format!("CREATE DATABASE `{}`", "é".repeat(65))),
        1059
    );
    // 64 characters of two bytes each is within the limit.
    q(&mut s, &format!("CREATE DATABASE `{}`", "é".repeat(64)));
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    assert_eq!(err(&mut s, "CREATE TABLE `t\0` (id INT PRIMARY KEY)"), 1103);
    assert_eq!(err(&mut s, "CREATE TABLE `t ` (id INT PRIMARY KEY)"), 1103);
    assert_eq!(err(&mut s, "CREATE TABLE t (`i\0d` INT PRIMARY KEY)"), 1166);
    assert_eq!(err(&mut s, "CREATE TABLE t (`id ` INT PRIMARY KEY)"), 1166);
    assert_eq!(
        err(
            &mut s,
            "CREATE TABLE t (id INT PRIMARY KEY, v INT, KEY `k\0` (v))"
        ),
        1280
    );
    q(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    assert_eq!(err(&mut s, "CREATE INDEX `k\0` ON t (v)"), 1280);
    drop(s);
    // Every database opens again.
    let db = open(dir.path());
    let mut s = Session::new(db, "root");
    q(&mut s, "SELECT * FROM d.t");
}

/// Writes dictionary entries the way a version that did not check names
/// did: database `a\0b` with table `t` (moved there from database `ab`).
fn plant_nul_database(db: &SqlDb) {
    use cairndb::WriteOptions;
    use cairndb_sql::internals::catalog;
    let def = db.table("ab", "t").unwrap();
    let e = db.engine().db();
    let w = WriteOptions {
        sync: true,
        disable_wal: false,
    };
    e.put(
        &w,
        &catalog::database_key("a\0b"),
        &catalog::encode_database("a\0b"),
    )
    .unwrap();
    e.put(
        &w,
        &catalog::table_key("a\0b", "t"),
        &catalog::encode_table(&def).unwrap(),
    )
    .unwrap();
    e.delete(&w, &catalog::table_key("ab", "t")).unwrap();
    e.delete(&w, &catalog::database_key("ab")).unwrap();
}

#[test]
fn dictionary_with_a_nul_in_a_database_name_opens() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = Session::new(db.clone(), "root");
        q(&mut s, "CREATE DATABASE keep");
        q(&mut s, "CREATE TABLE keep.k (id INT PRIMARY KEY)");
        q(&mut s, "INSERT INTO keep.k VALUES (1)");
        q(&mut s, "CREATE DATABASE ab");
        q(&mut s, "CREATE TABLE ab.t (id INT PRIMARY KEY)");
        q(&mut s, "INSERT INTO ab.t VALUES (7)");
        plant_nul_database(&db);
        drop(s);
        db.close().unwrap();
    }
    let db = open(dir.path());
    assert!(
        db.damaged_entries().is_empty(),
        "{:?}",
        db.damaged_entries()
    );
    let mut s = Session::new(db.clone(), "root");
    assert_eq!(one(&q(&mut s, "SELECT id FROM keep.k")), "1");
    // The table under the odd name kept its rows.
    let t = db.table("a\0b", "t").unwrap();
    assert_eq!(t.name, "t");
    let shown: Vec<String> = q(&mut s, "SHOW DATABASES")
        .rows
        .iter()
        .map(|r| r[0].to_string())
        .collect();
    assert!(shown.iter().any(|n| n == "a\0b"), "{shown:?}");
}

#[test]
fn damaged_dictionary_entry_is_reported_and_the_rest_opens() {
    use cairndb::WriteOptions;
    let dir = tempfile::tempdir().unwrap();
    let bad_id;
    {
        let db = open(dir.path());
        let mut s = Session::new(db.clone(), "root");
        q(&mut s, "CREATE DATABASE keep");
        q(&mut s, "CREATE TABLE keep.k (id INT PRIMARY KEY)");
        q(&mut s, "INSERT INTO keep.k VALUES (1)");
        q(&mut s, "CREATE TABLE keep.bad (id INT PRIMARY KEY)");
        q(&mut s, "INSERT INTO keep.bad VALUES (5)");
        bad_id = db.table("keep", "bad").unwrap().primary.id;
        let w = WriteOptions {
            sync: true,
            disable_wal: false,
        };
        db.engine()
            .db()
            .put(
                &w,
                &cairndb_sql::internals::catalog::table_key("keep", "bad"),
                b"{not json",
            )
            .unwrap();
        drop(s);
        db.close().unwrap();
    }
    let db = open(dir.path());
    let damaged = db.damaged_entries();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    assert!(damaged[0].contains("damaged"), "{damaged:?}");
    let mut s = Session::new(db.clone(), "root");
    assert_eq!(one(&q(&mut s, "SELECT id FROM keep.k")), "1");
    assert_eq!(err(&mut s, "SELECT id FROM keep.bad"), 1146);
    // The damaged table's rows were not swept as orphans.
    assert_eq!(keys_of(&db, bad_id), 1);
}

/// How many keys index `id` has.
fn keys_of(db: &SqlDb, id: u32) -> usize {
    let mut n = 0;
    let mut it = db.engine().db().iter(&Default::default()).unwrap();
    it.seek_to_first();
    while it.valid() {
        if cairndb_sql::internals::index_id(it.key()) == Some(id) {
            n += 1;
        }
        it.next();
    }
    n
}

#[test]
fn concurrent_create_index_on_one_table_keeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "CREATE DATABASE d");
    q(
        &mut s,
        "CREATE TABLE d.t (id INT PRIMARY KEY, a INT, b INT)",
    );
    q(&mut s, "INSERT INTO d.t VALUES (1, 1, 1), (2, 2, 2)");
    for round in 0..10 {
        let threads: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|c| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let mut s = Session::new(db, "root");
                    q(&mut s, &format!("CREATE INDEX i{c}{round} ON d.t ({c})"));
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let def = db.table("d", "t").unwrap();
        for c in ["a", "b"] {
            let name = format!("i{c}{round}");
            assert!(
                def.secondary.iter().any(|i| i.name == name),
                "round {round}: index {name} lost"
            );
        }
    }
    let rep = cairndb_sql::check::check(&db).unwrap();
    assert!(rep.problems.is_empty(), "{:?}", rep.problems);
}

#[test]
fn create_index_racing_drop_table_never_brings_the_table_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "CREATE DATABASE d");
    for round in 0..20 {
        q(&mut s, "CREATE TABLE d.t (id INT PRIMARY KEY, a INT)");
        let vals: Vec<String> = (0..300).map(|i| format!("({i}, {})", i % 7)).collect();
        q(
            &mut s,
            &format!("INSERT INTO d.t VALUES {}", vals.join(",")),
        );
        let start = Arc::new(std::sync::Barrier::new(2));
        let (db1, b1) = (db.clone(), start.clone());
        let index = std::thread::spawn(move || {
            let mut s = Session::new(db1, "root");
            b1.wait();
            let mut c = Collect::default();
            s.query(&format!("CREATE INDEX ia{round} ON d.t (a)"), &mut c)
                .err()
                .map(|e| e.code)
        });
        let (db2, b2) = (db.clone(), start);
        let dropper = std::thread::spawn(move || {
            let mut s = Session::new(db2, "root");
            b2.wait();
            q(&mut s, "DROP TABLE d.t");
        });
        let index = index.join().unwrap();
        dropper.join().unwrap();
        // The index was made before the drop, or found no table (1146).
        assert!(
            matches!(index, None | Some(1146)),
            "round {round}: {index:?}"
        );
        assert!(
            db.table("d", "t").is_err(),
            "round {round}: the dropped table came back"
        );
    }
    let rep = cairndb_sql::check::check(&db).unwrap();
    assert!(rep.problems.is_empty(), "{:?}", rep.problems);
    drop(s);
    db.close().unwrap();
    // Nor after a reopen.
    let db = open(dir.path());
    assert!(db.table("d", "t").is_err());
}

#[test]
fn writes_racing_create_index_get_entries_in_the_new_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut s = Session::new(db, "root");
                let p = s.prepare("INSERT INTO d.t VALUES (?, ?)").unwrap();
                let u = s.prepare("UPDATE d.t SET v = v + 1 WHERE id = ?").unwrap();
                let mut i = 0i64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let id = w * 1_000_000 + i;
                    let mut c = Collect::default();
                    s.execute(p.id, &[Value::Int(id), Value::Int(i)], &mut c)
                        .unwrap();
                    s.execute(u.id, &[Value::Int(id)], &mut c).unwrap();
                    q(&mut s, &format!("UPDATE d.t SET v = v + 1 WHERE id = {id}"));
                    i += 1;
                }
            })
        })
        .collect();
    for k in 0..6 {
        std::thread::sleep(std::time::Duration::from_millis(30));
        q(&mut s, &format!("CREATE INDEX k{k} ON d.t (v)"));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let rep = cairndb_sql::check::check(&db).unwrap();
    assert!(
        rep.problems.is_empty(),
        "{:?}",
        &rep.problems[..rep.problems.len().min(5)]
    );
}

#[test]
fn writes_racing_drop_table_fail_instead_of_writing_to_the_dropped_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "CREATE DATABASE d");
    for round in 0..5 {
        q(&mut s, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)");
        let id = db.table("d", "t").unwrap().primary.id;
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let mut s = Session::new(db, "root");
                    let p = s.prepare("INSERT INTO d.t VALUES (?, ?)").unwrap();
                    for i in 0..100_000i64 {
                        let mut c = Collect::default();
                        match s.execute(
                            p.id,
                            &[Value::Int(w * 1_000_000 + i), Value::Int(i)],
                            &mut c,
                        ) {
                            Ok(()) => {}
                            Err(e) if e.code == 1146 => return,
                            Err(e) => panic!("insert: {e}"),
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(20));
        q(&mut s, "DROP TABLE d.t");
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(
            keys_of(&db, id),
            0,
            "round {round}: rows written to the dropped table"
        );
    }
}

#[test]
fn truncate_gives_the_table_new_ids_and_leaves_no_old_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    q(&mut s, "CREATE DATABASE d");
    q(
        &mut s,
        "CREATE TABLE d.t (id INT PRIMARY KEY AUTO_INCREMENT, v INT, KEY kv (v))",
    );
    q(&mut s, "INSERT INTO d.t (v) VALUES (1), (2), (3)");
    let old = db.table("d", "t").unwrap();
    q(&mut s, "TRUNCATE TABLE d.t");
    assert_eq!(one(&q(&mut s, "SELECT COUNT(*) FROM d.t")), "0");
    assert_eq!(one(&q(&mut s, "SELECT COUNT(*) FROM d.t WHERE v > 0")), "0");
    assert_eq!(keys_of(&db, old.primary.id), 0);
    assert_eq!(keys_of(&db, old.secondary[0].id), 0);
    q(&mut s, "INSERT INTO d.t (v) VALUES (9)");
    // AUTO_INCREMENT starts again, as in MySQL.
    assert_eq!(one(&q(&mut s, "SELECT id FROM d.t WHERE v = 9")), "1");
    drop(s);
    db.close().unwrap();
    let db = open(dir.path());
    let mut s = Session::new(db.clone(), "root");
    assert_eq!(one(&q(&mut s, "SELECT COUNT(*) FROM d.t")), "1");
    let rep = cairndb_sql::check::check(&db).unwrap();
    assert!(rep.problems.is_empty(), "{:?}", rep.problems);
}

/// A table `t (id INT PRIMARY KEY, k INT, c VARCHAR(64))` of `n` rows
/// whose `k` repeats and whose `c` strings differ in length.
fn filled(s: &mut Session, n: u32) {
    q(
        s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(64))",
    );
    for start in (0..n).step_by(1000) {
        let vals: Vec<String> = (start..(start + 1000).min(n))
            .map(|i| {
                let k = (i * 7919) % 613;
                format!("({i}, {k}, '{}{}')", "x".repeat((i % 40) as usize), i % 97)
            })
            .collect();
        q(s, &format!("INSERT INTO t VALUES {}", vals.join(",")));
    }
}

fn all_rows(c: &Collect) -> Vec<Vec<String>> {
    c.rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| match v {
                    Value::Null => "NULL".to_string(),
                    v => v.to_string(),
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_sort_past_sort_buffer_size_spills_and_keeps_the_in_memory_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    filled(&mut s, 20_000);
    q(&mut s, "SET sort_buffer_size = 1000000000");
    let sorts = [
        // Ties on k keep the primary-key order they were read in.
        "SELECT id, k, c FROM t ORDER BY k",
        "SELECT id, k, c FROM t ORDER BY c DESC, k",
        "SELECT c, id FROM t ORDER BY k DESC, id LIMIT 50 OFFSET 9000",
        "SELECT k FROM t ORDER BY LENGTH(c), k LIMIT 3000",
        "SELECT DISTINCT k, c FROM t ORDER BY k, c",
        "SELECT id FROM t ORDER BY c, id LIMIT 5 OFFSET 19990",
    ];
    let in_memory: Vec<Vec<Vec<String>>> =
        sorts.iter().map(|sql| all_rows(&q(&mut s, sql))).collect();
    assert!(in_memory.iter().all(|r| !r.is_empty()));
    // The smallest sort buffer: a run every few dozen rows, hundreds of
    // runs, merged in more than one pass.
    let status = |s: &mut Session, name: &str| -> u64 {
        let c = q(s, &format!("SHOW SESSION STATUS LIKE '{name}'"));
        let v = c.rows.first().and_then(|r| r.get(1)).map(|v| v.to_string());
        v.unwrap_or_default().parse().unwrap()
    };
    assert_eq!(status(&mut s, "Created_tmp_files"), 0);
    q(&mut s, "SET sort_buffer_size = 1");
    assert_eq!(one(&q(&mut s, "SELECT @@sort_buffer_size")), "8192");
    for (sql, want) in sorts.iter().zip(&in_memory) {
        let (files, passes) = (
            status(&mut s, "Created_tmp_files"),
            status(&mut s, "Sort_merge_passes"),
        );
        assert_eq!(&all_rows(&q(&mut s, sql)), want, "{sql}");
        // Each spilled; the whole-table sorts merged in two passes (more
        // than 64 runs).
        assert_eq!(status(&mut s, "Created_tmp_files"), files + 1, "{sql}");
        assert!(status(&mut s, "Sort_merge_passes") > passes, "{sql}");
    }
    assert!(status(&mut s, "Sort_merge_passes") > status(&mut s, "Created_tmp_files"));
    // The files were anonymous: nothing is left in the data directory.
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = names(dir.path());
    q(&mut s, sorts[0]);
    assert_eq!(names(dir.path()), before);
    // A sort spills under a small max_session_mem_used too, instead of
    // failing.
    q(
        &mut s,
        "SET sort_buffer_size = DEFAULT, max_session_mem_used = 100000",
    );
    assert_eq!(&all_rows(&q(&mut s, sorts[1])), &in_memory[1]);
}

#[test]
fn rows_held_past_max_session_mem_used_fail_with_1290_and_are_freed() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(open(dir.path()), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    filled(&mut s, 20_000);
    q(&mut s, "SET max_session_mem_used = 1000000");
    assert_eq!(one(&q(&mut s, "SELECT @@max_session_mem_used")), "1000000");
    let held = [
        "SELECT id, COUNT(*) FROM t GROUP BY id",
        "SELECT COUNT(DISTINCT id) FROM t",
        "SELECT GROUP_CONCAT(c ORDER BY id) FROM t",
        "SELECT DISTINCT id, c FROM t",
        "SELECT COUNT(*) FROM (SELECT id, c FROM t) AS d",
        "SELECT COUNT(*) FROM (SELECT id, c FROM t UNION SELECT id + 1, c FROM t) AS u",
        "SELECT id, ROW_NUMBER() OVER (ORDER BY c) FROM t",
        // Sets of subqueries and CTEs are kept to the statement's end.
        "SELECT COUNT(*) FROM t WHERE c + 0 IN (SELECT c FROM t)",
        "SELECT COUNT(*) FROM t WHERE (k, c) IN (SELECT k, c FROM t)",
        "WITH w AS (SELECT id, c FROM t) SELECT COUNT(*) FROM w",
    ];
    for sql in held {
        assert_eq!(err(&mut s, sql), 1290, "{sql}");
    }
    // A set that fits is given back at the statement's end, however many
    // statements keep one.
    for _ in 0..50 {
        assert_eq!(
            one(&q(
                &mut s,
                "SELECT COUNT(*) FROM t WHERE id < 5 AND c IN (SELECT c FROM t WHERE id < 1000)"
            )),
            "5"
        );
    }
    // What the failed statements held was given back: small ones run, as
    // many times as asked.
    for _ in 0..200 {
        assert_eq!(one(&q(&mut s, "SELECT COUNT(*) FROM t WHERE k = 5")), "32");
    }
    assert_eq!(
        one(&q(
            &mut s,
            "SELECT COUNT(*) FROM (SELECT k FROM t GROUP BY k) AS g"
        )),
        "613"
    );
    // A correlated subquery's groups are freed after each outer row.
    assert_eq!(
        one(&q(
            &mut s,
            "SELECT COUNT(*) FROM t AS o WHERE o.id < 300 AND o.k = \
             (SELECT MAX(k) FROM t AS i WHERE i.k = o.k GROUP BY i.k)"
        )),
        "300"
    );
    // The session's own limit, not another's, and back to the default.
    let mut other = s.fresh();
    q(&mut other, "USE d");
    assert_eq!(all_rows(&q(&mut other, held[0])).len(), 20_000);
    q(&mut s, "SET max_session_mem_used = DEFAULT");
    assert_eq!(all_rows(&q(&mut s, held[0])).len(), 20_000);
    // SET GLOBAL sets the value new sessions start with.
    q(&mut s, "SET GLOBAL max_session_mem_used = 500000");
    let mut third = s.fresh();
    q(&mut third, "USE d");
    assert_eq!(err(&mut third, held[0]), 1290);
    assert_eq!(all_rows(&q(&mut other, held[0])).len(), 20_000);
}
