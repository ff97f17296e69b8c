//! `RandomTransactionVerify` on databases made to break its invariant:
//! unequal set totals and a value of 0 fail it, with db_bench's messages
//! and a non-zero exit; equal totals pass.

mod common;

use common::cairndb;

/// A CairnDB database at `dir` holding `rows`.
fn craft(dir: &std::path::Path, rows: &[(&str, &str)]) {
    let db = cairndb::Db::open(dir, cairndb::Options::default()).unwrap();
    for (k, v) in rows {
        db.put(
            &cairndb::WriteOptions::default(),
            k.as_bytes(),
            v.as_bytes(),
        )
        .unwrap();
    }
    db.close().unwrap();
}

/// Runs no operation on the crafted database, only the verification.
fn verify_existing(dir: &std::path::Path, mode: &str) -> std::process::Output {
    cairndb(&[
        "bench",
        &format!("--db={}", dir.display()),
        "--use_existing_db=1",
        "--benchmarks=randomtransaction",
        "--num=10",
        "--reads=0",
        mode,
    ])
}

fn unequal_set_totals_fail_verification() {
    for mode in ["--transaction_db=1", "--optimistic_transaction_db=1"] {
        let dir = tempfile::tempdir().unwrap();
        // Set 1 sums to 12, set 2 to 11: one increment was lost.
        craft(
            dir.path(),
            &[("00013", "5"), ("00017", "7"), ("00024", "11")],
        );
        let out = verify_existing(dir.path(), mode);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stdout}");
        assert!(
            stdout.contains("RandomTransactionVerify FAILED!!"),
            "{stdout}"
        );
        assert!(stdout.contains("inconsistent totals"), "{stdout}");
        assert!(
            stdout.contains("Set[0]: 12") && stdout.contains("Set[1]: 11"),
            "{stdout}"
        );
        assert!(
            stderr.contains("the sets' totals must be equal"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");

        // Equal totals pass (with no operation run).
        let dir = tempfile::tempdir().unwrap();
        craft(
            dir.path(),
            &[("00013", "5"), ("00017", "7"), ("00024", "12")],
        );
        let out = verify_existing(dir.path(), mode);
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("RandomTransactionVerify Success."));
    }
}

fn a_zero_value_fails_verification() {
    let dir = tempfile::tempdir().unwrap();
    craft(dir.path(), &[("00011", "0"), ("00021", "0")]);
    let out = verify_existing(dir.path(), "--transaction_db=1");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stderr.contains("Iter returned unexpected value: 0"),
        "{stderr}"
    );
    assert!(
        stdout.contains("RandomTransactionVerify FAILED!!"),
        "{stdout}"
    );
}

#[test]
fn broken_invariants_fail_verification() {
    unequal_set_totals_fail_verification();
    a_zero_value_fails_verification();
}
