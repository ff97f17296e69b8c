//! End-to-end tests of `cairndb bench --benchmarks=randomtransaction` and
//! of the transaction flags on the write benchmarks: each mode runs
//! briefly, prints db_bench's line and message, and passes
//! `RandomTransactionVerify`; compare runs the benchmark too. A database
//! whose sets disagree is in randomtransaction_verify.rs.

mod common;

use common::{fails, line, ok, parse_lines};

/// `( transactions:N aborts:M)` or `( batches:N )` at the end of the line
/// named `name`: (N, Some(M)) or (N, None).
fn message(out: &str, name: &str) -> (u64, Option<u64>) {
    let l = out
        .lines()
        .find(|l| l.starts_with(name) && l.contains(" micros/op "))
        .unwrap_or_else(|| panic!("no {name} line in\n{out}"));
    let open = l.rfind("( ").unwrap_or_else(|| panic!("no message in {l}"));
    let msg = &l[open..];
    let num = |tag: &str| -> Option<u64> {
        let at = msg.find(tag)? + tag.len();
        let digits: String = msg[at..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        Some(digits.parse().unwrap())
    };
    if let Some(n) = num("batches:") {
        assert!(msg.ends_with(" )"), "{l}");
        return (n, None);
    }
    assert!(msg.ends_with(')') && !msg.ends_with(" )"), "{l}");
    (
        num("transactions:").unwrap_or_else(|| panic!("{l}")),
        Some(num("aborts:").unwrap_or_else(|| panic!("{l}"))),
    )
}

fn run(engine: &str, mode: &[&str], threads: u32, num: u32, ops: u32) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "bench".to_string(),
        format!("--db={}", dir.path().join("db").display()),
        format!("--engine={engine}"),
        "--benchmarks=randomtransaction".into(),
        format!("--num={num}"),
        format!("--reads={ops}"),
        format!("--threads={threads}"),
        "--seed=11".into(),
        "--histogram=1".into(),
    ];
    args.extend(mode.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&refs)
}

const MODES: &[&[&str]] = &[
    &[],
    &["--transaction_db=1"],
    &["--transaction_db", "--transaction_set_snapshot"],
    &["--transaction_db=1", "--transaction_lock_timeout=5"],
    &["--optimistic_transaction_db=1"],
    &["--optimistic_transaction_db=1", "--transaction_sets=5"],
];

fn every_mode_verifies(engine: &str) {
    for mode in MODES {
        for threads in [1, 3] {
            // 40 keys per set and 3 threads: conflicts and lock waits happen.
            let (out, _) = run(engine, mode, threads, 40, 300);
            let lines = parse_lines(&out);
            let l = line(&lines, "randomtransaction");
            assert_eq!(l.ops, 300 * u64::from(threads), "{mode:?}\n{out}");
            assert!(l.mb_per_sec.is_some(), "{out}");
            assert!(out.contains("Microseconds per op:"), "{out}");
            let (n, aborts) = message(&out, "randomtransaction");
            // db_bench keeps thread 0's message: its own count.
            assert_eq!(n, 300, "{mode:?}\n{out}");
            let verified = out.contains("RandomTransactionVerify Success.");
            if mode.is_empty() {
                assert_eq!(aborts, None, "{out}");
                assert!(!verified, "no verification without transactions:\n{out}");
            } else {
                assert!(aborts.unwrap() <= n, "{out}");
                assert!(verified, "{engine} {mode:?} x{threads}:\n{out}");
                assert!(out.contains("Transactions: "), "{out}");
            }
            if threads == 1 && !mode.is_empty() {
                assert_eq!(aborts, Some(0), "one thread has no conflicts:\n{out}");
            }
        }
    }
}

#[test]
fn randomtransaction_verifies_in_every_mode() {
    every_mode_verifies("cairndb");
}

#[cfg(feature = "rocksdb")]
#[test]
fn randomtransaction_verifies_in_every_mode_on_rocksdb() {
    every_mode_verifies("rocksdb");
}

#[test]
fn operations_count_as_in_db_bench() {
    // readwrites_: --num unless --writes/--reads, then the larger, per thread.
    for (extra, expect) in [
        (&[][..], 60u64),
        (&["--reads=25"][..], 25),
        (&["--writes=70", "--reads=30"][..], 70),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("--db={}", dir.path().join("db").display());
        let mut args = vec![
            "bench",
            &db,
            "--benchmarks=randomtransaction",
            "--num=60",
            "--threads=2",
            "--transaction_db=1",
        ];
        args.extend_from_slice(extra);
        let (out, _) = ok(&args);
        assert_eq!(
            line(&parse_lines(&out), "randomtransaction").ops,
            2 * expect,
            "{extra:?}\n{out}"
        );
        assert_eq!(message(&out, "randomtransaction").0, expect, "{out}");
    }
}

#[test]
fn bad_transaction_flags_are_errors() {
    let e = fails(&[
        "bench",
        "--benchmarks=randomtransaction",
        "--transaction_sets=0",
    ]);
    assert!(e.contains("invalid value for transaction_sets"), "{e}");
    let e = fails(&["bench", "--transaction_sets=10000"]);
    assert!(e.contains("invalid value for transaction_sets"), "{e}");
    let e = fails(&["bench", "--benchmarks=fillrandom", "--write_as_transaction"]);
    assert!(e.contains("--transaction_db"), "{e}");
}

#[test]
fn write_benchmarks_on_transaction_databases() {
    for mode in [
        &["--transaction_db=1"][..],
        &["--transaction_db=1", "--write_as_transaction=1"],
        &["--optimistic_transaction_db=1"],
        &["--optimistic_transaction_db=1", "--write_as_transaction=1"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("--db={}", dir.path().join("db").display());
        let mut args = vec![
            "bench",
            &db,
            "--benchmarks=fillseq,overwrite,readrandom,fillrandom,deleterandom",
            "--num=400",
            "--threads=2",
            "--batch_size=4",
            "--seed=3",
        ];
        args.extend_from_slice(mode);
        let (out, _) = ok(&args);
        let lines = parse_lines(&out);
        // fillseq wrote every key (twice, from two threads), so every read finds one.
        let (found, of) = line(&lines, "readrandom").found.unwrap();
        assert_eq!((found, of), (800, 800), "{mode:?}\n{out}");
        assert_eq!(line(&lines, "fillrandom").ops, 800, "{out}");
    }
}

#[test]
fn compare_runs_randomtransaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut engines = String::from("cairndb");
    if cfg!(feature = "rocksdb") {
        // RocksDB's db_bench cannot run it: compare runs RocksDB in-process.
        engines = "rocksdb,cairndb".into();
    }
    let (out, err) = ok(&[
        "compare",
        &format!("--out={}", dir.path().display()),
        &format!("--db_dir={}", dir.path().display()),
        "--repeat=1",
        "--skip_device",
        &format!("--engines={engines}"),
        "--num=1000",
        "--benchmarks=randomtransaction",
        "--transaction_db=1",
    ]);
    assert!(out.contains("| randomtransaction |"), "{out}");
    if cfg!(feature = "rocksdb") {
        assert!(err.contains("RocksDB runs in-process instead"), "{err}");
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("compare.json")).unwrap(),
        )
        .unwrap();
        let row = &json["medians"][0]["ops_per_sec"];
        assert!(row["rocksdb"].as_f64().unwrap() > 0.0, "{json}");
        assert!(row["cairndb"].as_f64().unwrap() > 0.0, "{json}");
    }
}
