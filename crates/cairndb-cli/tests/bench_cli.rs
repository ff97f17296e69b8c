//! End-to-end tests of `cairndb bench` and `cairndb compare` through the
//! built binary: every benchmark name on a tiny database, db_bench-shaped
//! output parsed back, flag errors, ignored flags, the seed command lines,
//! found counts equal to RocksDB db_bench 7.8.3's, and JSON output.

mod common;

use common::{cairndb, ok, parse_lines};

#[test]
fn every_benchmark_runs_and_prints_db_bench_lines() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let (out, _) = ok(&[
        "bench",
        &db,
        "--num=300",
        "--seed=7",
        "--compression_type=none",
        "--histogram=1",
        "--benchmarks=fillseq,fillrandom,filluniquerandom,fillsync,overwrite,readrandom,\
readseq,readreverse,seekrandom,readwhilewriting,readrandomwriterandom,updaterandom,\
deleterandom,flush,compact,waitforcompaction,stats",
    ]);
    let lines = parse_lines(&out);
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "fillseq",
            "fillrandom",
            "filluniquerandom",
            "fillsync",
            "overwrite",
            "readrandom",
            "readseq",
            "readreverse",
            "seekrandom",
            "readwhilewriting",
            "readrandomwriterandom",
            "updaterandom",
            "deleterandom",
            "flush",
            "compact"
        ]
    );
    for l in &lines {
        assert!(l.micros >= 0.0 && l.ops >= 1, "{l:?}");
        assert!(l.ops_sec > 0, "{l:?}");
    }
    let get = |n: &str| lines.iter().find(|l| l.name == n).unwrap();
    assert_eq!(get("fillseq").ops, 300);
    assert_eq!(get("fillsync").ops, 1); // num / 1000, at least one
    assert_eq!(get("readrandom").found.unwrap().1, 300);
    assert!(out.contains("Microseconds per read:"));
    assert!(out.contains("Percentiles: P50: "));
    assert!(out.contains("Keys:       16 bytes each"));
    assert!(out.contains("RawSize:"));
    assert!(out.contains("DB path: ["));
}

#[test]
fn found_counts_match_rocksdb_db_bench() {
    // RocksDB db_bench 7.8.3 with these flags prints
    // "(664 of 1000 found)" for readrandom and "(661 of 1000 found)" for
    // seekrandom, and readseq sees 642 keys.
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let (out, _) = ok(&[
        "bench",
        &db,
        "--num=1000",
        "--seed=42",
        "--benchmarks=fillrandom,readrandom,seekrandom,readseq",
    ]);
    let lines = parse_lines(&out);
    assert_eq!(lines[1].found, Some((664, 1000)), "{out}");
    assert_eq!(lines[2].found, Some((661, 1000)), "{out}");
    assert_eq!(lines[3].ops, 642, "{out}");
}

#[test]
fn default_run_reads_every_key_back() {
    let (out, _) = ok(&["bench", "--num=3000", "--seed=3"]);
    let lines = parse_lines(&out);
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["filluniquerandom", "readrandom", "readseq"]);
    assert_eq!(lines[1].found, Some((3000, 3000)));
    assert_eq!(lines[2].ops, 3000);
}

#[test]
fn unknown_flag_is_an_error_naming_it() {
    let out = cairndb(&["bench", "--num=10", "--no_such_flag=3"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--no_such_flag"), "{err}");
    let out = cairndb(&["bench", "--value_size=big"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--value_size"));
}

#[test]
fn all_supported_flags_parse_and_ignored_ones_are_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let json = dir.path().join("out.json");
    let json_flag = format!("--json={}", json.display());
    let (out, err) = ok(&[
        "bench",
        &db,
        &json_flag,
        "--benchmarks=fillrandom,readrandom,readwhilewriting",
        "--num=200",
        "--reads=100",
        "--threads=2",
        "--duration=0",
        "--key_size=20",
        "--value_size=64",
        "--compression_type=lz4",
        "--compression_ratio=0.4",
        "--use_existing_db=0",
        "--sync=false",
        "--disable_wal=0",
        "--write_buffer_size=1048576",
        "--max_write_buffer_number=3",
        "--cache_size=1048576",
        "--bloom_bits=10",
        "--block_size=4096",
        "--histogram=0",
        "--writes_per_second=100000",
        "--benchmark_write_rate_limit=0",
        "--seed=5",
        "--prefix_size=12",
        "--keys_per_prefix=10",
        "--batch_size=1",
        "--entries_per_batch=2",
        "--level0_file_num_compaction_trigger=4",
        "--level0_slowdown_writes_trigger=20",
        "--level0_stop_writes_trigger=36",
        "--max_bytes_for_level_base=10485760",
        "--target_file_size_base=2097152",
        "--max_background_compactions=2",
        "--max_background_jobs=3",
        "--statistics",
        "--stats_interval_seconds=0",
        // Ignored or mapped RocksDB tuning flags.
        "--mmap_read=1",
        "--use_plain_table=1",
        "--memtablerep=prefix_hash",
        "--hard_rate_limit=2",
        "--disable_seek_compaction=1",
        "--cache_numshardbits=6",
        "--bloom_locality=1",
        "--min_level_to_compress=-1",
        "--open_files=-1",
        "--delete_obsolete_files_period_micros=314572800",
        "--disable_data_sync=1",
        "--verify_checksum=1",
        "--num_levels=6",
        "-mmap_write=0",
        "--nouse_fsync",
    ]);
    for f in [
        "mmap_read",
        "use_plain_table",
        "memtablerep",
        "hard_rate_limit",
        "disable_seek_compaction",
        "cache_numshardbits",
        "bloom_locality",
        "min_level_to_compress",
        "open_files",
        "delete_obsolete_files_period_micros",
        "disable_data_sync",
        "verify_checksum",
        "num_levels",
    ] {
        assert_eq!(
            err.matches(&format!("--{f}:")).count(),
            1,
            "--{f} should be named once on stderr:\n{err}"
        );
    }
    assert!(out.contains("STATISTICS:"));
    let lines = parse_lines(&out);
    // 2 threads x 100 reads.
    assert_eq!(lines[1].found.unwrap().1, 200);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["name"], "fillrandom");
    assert!(results[1]["ops_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn seed_001_command_line_runs_as_written() {
    // From the project's seed notes (db_bench lines for prefix workloads),
    // with --num and --duration scaled down and the paths moved to a temp dir.
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("rocksdb").display());
    let wal = format!("--wal_dir={}", dir.path().join("WAL_LOG").display());
    let common = [
        "--num_levels=6",
        "--key_size=20",
        "--prefix_size=12",
        "--keys_per_prefix=10",
        "--value_size=100",
        "--cache_size=17179869184",
        "--cache_numshardbits=6",
        "--compression_type=none",
        "--compression_ratio=1",
        "--min_level_to_compress=-1",
        "--disable_seek_compaction=1",
        "--hard_rate_limit=2",
        "--write_buffer_size=134217728",
        "--max_write_buffer_number=2",
        "--level0_file_num_compaction_trigger=8",
        "--target_file_size_base=134217728",
        "--max_bytes_for_level_base=1073741824",
        "--disable_wal=0",
        "--sync=0",
        "--disable_data_sync=1",
        "--verify_checksum=1",
        "--delete_obsolete_files_period_micros=314572800",
        "--max_background_compactions=4",
        "--max_background_flushes=0",
        "--level0_slowdown_writes_trigger=16",
        "--level0_stop_writes_trigger=24",
        "--statistics=0",
        "--stats_per_interval=0",
        "--stats_interval=1048576",
        "--histogram=0",
        "--use_plain_table=1",
        "--open_files=-1",
        "--mmap_read=1",
        "--mmap_write=0",
        "--memtablerep=prefix_hash",
        "--bloom_bits=10",
        "--bloom_locality=1",
    ];
    let mut fill = vec!["bench", db.as_str(), wal.as_str()];
    fill.extend(common);
    fill.extend([
        "--benchmarks=filluniquerandom",
        "--use_existing_db=0",
        "--num=2000",
        "--threads=1",
    ]);
    let (out, _) = ok(&fill);
    assert_eq!(parse_lines(&out)[0].ops, 2000);
    let mut read = vec!["bench", db.as_str(), wal.as_str()];
    read.extend(common);
    read.extend([
        "--duration=1",
        "--benchmarks=readwhilewriting",
        "--use_existing_db=1",
        "--num=2000",
        "--threads=4",
        "--writes_per_second=1000",
    ]);
    let (out, _) = ok(&read);
    let l = &parse_lines(&out)[0];
    assert_eq!(l.name, "readwhilewriting");
    let (found, of) = l.found.unwrap();
    assert_eq!(found, of, "every key was written, so every read finds one");
}

#[test]
fn compare_with_cairndb_only() {
    let dir = tempfile::tempdir().unwrap();
    let out_flag = format!("--out={}", dir.path().display());
    let db_dir = format!("--db_dir={}", dir.path().display());
    let (out, _) = ok(&[
        "compare",
        &out_flag,
        &db_dir,
        "--repeat=2",
        "--skip_device",
        "--engines=cairndb",
        "--num=200",
        "--benchmarks=fillrandom,readrandom",
    ]);
    assert!(out.contains("| fillrandom |"), "{out}");
    assert!(out.contains("| readrandom |"), "{out}");
    let md = std::fs::read_to_string(dir.path().join("compare.md")).unwrap();
    assert!(md.contains("cairndb ops/s"));
    assert!(dir.path().join("compare.json").exists());
}

/// A peer binary, where compare itself would find it from this crate
/// (its environment variable, then shared/peers/ above the crate), or the
/// LevelDB build script's output; None (with a printed note) when missing.
fn peer_binary(env: &str, shared: &str, other: Option<&str>) -> Option<std::path::PathBuf> {
    let found = std::env::var_os(env)
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .ancestors()
                .map(|a| a.join(shared))
                .find(|p| p.is_file())
        })
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(std::path::Path::new(&home).join(other?)).filter(|p| p.is_file())
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        eprintln!(
            "NOTE: {shared} not found (nor ${env}); the part of this test that runs it is skipped"
        );
    }
    found
}

fn compare_with(
    engines: &str,
    benchmarks: &str,
    env: &[(&str, &str)],
) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cairndb"))
        .args([
            "compare",
            &format!("--out={}", dir.path().display()),
            &format!("--db_dir={}", dir.path().display()),
            "--repeat=1",
            "--skip_device",
            &format!("--engines={engines}"),
            "--num=2000",
            &format!("--benchmarks={benchmarks}"),
        ])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (out, dir)
}

#[test]
fn compare_names_where_it_looked_for_a_missing_peer() {
    for (engine, env) in [
        ("rocksdb", "CAIRNDB_ROCKSDB_DB_BENCH"),
        ("leveldb", "CAIRNDB_LEVELDB_DB_BENCH"),
    ] {
        let (out, _dir) = compare_with(
            &format!("{engine},cairndb"),
            "fillrandom",
            &[(env, "/nonexistent/db_bench")],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!("${env}=/nonexistent/db_bench: no such file")),
            "{stderr}"
        );
    }
}

#[test]
fn compare_runs_rocksdbs_release_db_bench() {
    let Some(bin) = peer_binary(
        "CAIRNDB_ROCKSDB_DB_BENCH",
        "shared/peers/rocksdb-9.10.0/db_bench",
        None,
    ) else {
        return;
    };
    let bin = bin.display().to_string();
    let (out, dir) = compare_with(
        "rocksdb,cairndb",
        "fillrandom,readrandom",
        &[("CAIRNDB_ROCKSDB_DB_BENCH", &bin)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("rocksdb: {bin} (db_bench version ")),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("compare.json")).unwrap())
            .unwrap();
    assert_eq!(json["peers"][0]["binary"], bin.as_str());
    for row in json["medians"].as_array().unwrap() {
        assert!(
            row["ops_per_sec"]["rocksdb"].as_f64().unwrap() > 0.0,
            "{row}"
        );
    }
}

#[test]
fn compare_runs_leveldbs_own_db_bench() {
    let Some(bin) = peer_binary(
        "CAIRNDB_LEVELDB_DB_BENCH",
        "shared/peers/leveldb-1.23/leveldb_db_bench",
        Some(".cache/cairndb-anchors/leveldb_db_bench"),
    ) else {
        return;
    };
    let bin = bin.display().to_string();
    let (out, dir) = compare_with(
        "leveldb,cairndb",
        "fillrandom,readrandom,filluniquerandom,readseq",
        &[("CAIRNDB_LEVELDB_DB_BENCH", &bin)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("(LevelDB version 1."), "{stdout}");
    let md = std::fs::read_to_string(dir.path().join("compare.md")).unwrap();
    // filluniquerandom is absent from LevelDB's db_bench, and the readseq after it is left out.
    assert!(md.contains("| filluniquerandom | - |"), "{md}");
    assert!(md.contains("| readseq | - |"), "{md}");
    assert!(md.contains("benchmark filluniquerandom: left out"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("compare.json")).unwrap())
            .unwrap();
    for b in ["fillrandom", "readrandom"] {
        let row = json["medians"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["benchmark"] == b)
            .unwrap();
        assert!(
            row["ops_per_sec"]["leveldb"].as_f64().unwrap() > 0.0,
            "{row}"
        );
    }
}
