//! `BACKUP DATABASE TO 'dir'` against the real `cairndb server`: a
//! checkpoint taken while client threads commit two-row transactions
//! opens as a database of its own, passes the SQL consistency check, and
//! holds for each thread exactly a prefix of its commits that includes
//! every commit acknowledged before the statement began, each whole; a
//! server starts on a checkpoint with the accounts and rows.
//! Also the refusals: no RELOAD privilege (1227), an existing target
//! (1086), a relative target or one inside the data directory (1210), a
//! malformed statement (1064).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cairndb_sql::{Collect, Session, SqlDb, SqlOptions, Value};
use mysql_async::prelude::*;

mod common;
use common::server::{code, connect, start};

const WRITERS: u64 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_under_committing_writers_holds_whole_acknowledged_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let target = dir.path().join("ck");
    let srv = start(&data, &[]);
    let mut root = connect(srv.port, "root", "").await.unwrap();
    root.query_drop("CREATE DATABASE d").await.unwrap();
    root.query_drop(
        "CREATE TABLE d.t (w INT, n INT, part INT, v VARCHAR(20), \
         PRIMARY KEY (w, n, part), KEY (v))",
    )
    .await
    .unwrap();

    // Writers: transaction n of writer w inserts (w, n, 0) and (w, n, 1);
    // acked[w] is the last n whose COMMIT returned.
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (stop, acked) = (stop.clone(), acked.clone());
        let port = srv.port;
        tasks.push(tokio::spawn(async move {
            let mut c = connect(port, "root", "").await.unwrap();
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                c.query_drop("BEGIN").await.unwrap();
                c.query_drop(format!("INSERT INTO d.t VALUES ({w}, {n}, 0, 'v{w}_{n}')"))
                    .await
                    .unwrap();
                c.query_drop(format!("INSERT INTO d.t VALUES ({w}, {n}, 1, 'v{w}_{n}')"))
                    .await
                    .unwrap();
                c.query_drop("COMMIT").await.unwrap();
                acked[w as usize].store(n, Ordering::SeqCst);
            }
            n
        }));
    }

    tokio::time::sleep(Duration::from_millis(400)).await;
    let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::SeqCst)).collect();
    let seq: Option<u64> = root
        .query_first(format!("BACKUP DATABASE TO '{}'", target.display()))
        .await
        .unwrap();
    assert!(seq.unwrap() > 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::SeqCst);
    let mut last = Vec::new();
    for t in tasks {
        last.push(t.await.unwrap());
    }
    assert!(
        before.iter().all(|&b| b > 0),
        "every writer committed before the backup: {before:?}"
    );

    // The refusals, with the writers stopped.
    assert_eq!(
        code(
            root.query_drop(format!("BACKUP DATABASE TO '{}'", target.display()))
                .await
                .unwrap_err()
        ),
        1086
    );
    assert_eq!(
        code(
            root.query_drop("BACKUP DATABASE TO 'relative/dir'")
                .await
                .unwrap_err()
        ),
        1210
    );
    assert_eq!(
        code(
            root.query_drop(format!(
                "BACKUP DATABASE TO '{}'",
                data.join("sub").display()
            ))
            .await
            .unwrap_err()
        ),
        1210
    );
    assert_eq!(
        code(
            root.query_drop("BACKUP DATABASE '/tmp/x'")
                .await
                .unwrap_err()
        ),
        1064
    );
    root.query_drop("CREATE USER 'u'@'%' IDENTIFIED BY 'pw'")
        .await
        .unwrap();
    root.query_drop("GRANT ALL ON d.* TO 'u'@'%'")
        .await
        .unwrap();
    let mut u = connect(srv.port, "u", "pw").await.unwrap();
    let other = dir.path().join("by-u");
    assert_eq!(
        code(
            u.query_drop(format!("BACKUP DATABASE TO '{}'", other.display()))
                .await
                .unwrap_err()
        ),
        1227
    );
    assert!(!other.exists());
    root.query_drop("GRANT RELOAD ON *.* TO 'u'@'%'")
        .await
        .unwrap();
    u.query_drop(format!("BACKUP DATABASE TO '{}'", other.display()))
        .await
        .unwrap();
    drop(srv);

    // A server starts on a checkpoint: the accounts and rows came along.
    let srv2 = start(&other, &[]);
    let mut u2 = connect(srv2.port, "u", "pw").await.unwrap();
    let rows: Option<u64> = u2.query_first("SELECT COUNT(*) FROM d.t").await.unwrap();
    assert_eq!(rows, Some(2 * last.iter().sum::<u64>()));
    drop(u2);
    drop(srv2);

    // The checkpoint opens as a database of its own and is consistent.
    let db = SqlDb::open(&target, SqlOptions::default()).unwrap();
    let rep = cairndb_sql::check::check(&db).unwrap();
    assert!(rep.problems.is_empty(), "{:?}", rep.problems);
    let mut s = Session::new(db.clone(), "root");
    let mut out = Collect::default();
    s.query("SELECT w, n, part FROM d.t ORDER BY w, n, part", &mut out)
        .unwrap();
    let int = |v: &Value| match v {
        Value::Int(i) => *i as u64,
        Value::UInt(u) => *u,
        other => panic!("an integer was expected, got {other:?}"),
    };
    let mut parts: BTreeMap<(u64, u64), Vec<u64>> = BTreeMap::new();
    for r in &out.rows {
        parts
            .entry((int(&r[0]), int(&r[1])))
            .or_default()
            .push(int(&r[2]));
    }
    let mut kept = Vec::new();
    for w in 0..WRITERS {
        let ns: Vec<u64> = parts.keys().filter(|k| k.0 == w).map(|k| k.1).collect();
        let k = ns.len() as u64;
        assert_eq!(ns, (1..=k).collect::<Vec<_>>(), "writer {w}: not a prefix");
        assert!(
            k >= before[w as usize],
            "writer {w}: {k} commits kept, {} acknowledged before the backup",
            before[w as usize]
        );
        assert!(k <= last[w as usize], "writer {w}: more than it committed");
        kept.push(k);
        for n in 1..=k {
            assert_eq!(
                parts[&(w, n)],
                vec![0, 1],
                "writer {w} transaction {n} is partial"
            );
        }
    }
    eprintln!("acknowledged before: {before:?}, kept: {kept:?}, committed: {last:?}");
    assert!(
        parts.keys().all(|k| k.0 < WRITERS),
        "rows of an unknown writer"
    );
    db.close().unwrap();
}
