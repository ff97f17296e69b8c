//! End-to-end tests of the file workload of `cairndb bench` (fillfile,
//! readfile, readfileseq from --datafile / --keyfile), dirsize, the
//! --table_format / --zip_* flags, and `cairndb compare` with them, through
//! the built binary on small generated data files.

use std::path::{Path, PathBuf};

mod common;

use common::{fails, line, ok, parse_lines};

/// `n` records like the Debian rows: package, version, architecture, then
/// more fields; keys (fields 0,1,2) unique. Returns the lines.
fn records(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                "pkg-{:04}\t{}.{}-{}\t{}\tMaintainer: Someone <s{i}@example.org>\tDescription: record {i} {}",
                i * 7919 % 10007,
                i % 5,
                i % 13,
                i % 3,
                ["amd64", "all", "arm64"][i % 3],
                "x".repeat(i % 50)
            )
        })
        .collect()
}

fn key_of(line: &str) -> String {
    line.split('\t').take(3).collect::<Vec<_>>().join("\t")
}

struct Files {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    keys: PathBuf,
    rows: Vec<String>,
}

fn files(n: usize) -> Files {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let rows = records(n);
    let data = root.join("data.tsv");
    std::fs::write(&data, rows.join("\n") + "\n").unwrap();
    let keys = root.join("data.keys");
    let k: Vec<String> = rows.iter().map(|r| key_of(r)).collect();
    std::fs::write(&keys, k.join("\n") + "\n").unwrap();
    Files {
        _dir: dir,
        root,
        data,
        keys,
        rows,
    }
}

fn flag(name: &str, p: &Path) -> String {
    format!("--{name}={}", p.display())
}

/// Opens the database the run left behind and checks every record's value
/// is its whole line.
fn check_values(db: &Path, rows: &[String]) {
    let d = cairndb::Db::open(db, cairndb::Options::default()).unwrap();
    for r in rows {
        let v = d
            .get(&cairndb::ReadOptions::default(), key_of(r).as_bytes())
            .unwrap();
        assert_eq!(v.as_deref(), Some(r.as_bytes()), "value of {}", key_of(r));
    }
    d.close().unwrap();
}

#[test]
fn fillfile_then_reads_find_every_key() {
    let f = files(300);
    let db = f.root.join("db");
    let (out, _) = ok(&[
        "bench",
        "--benchmarks=fillfile,readfile,readfileseq",
        &flag("datafile", &f.data),
        &flag("keyfile", &f.keys),
        "--keyfields=0,1,2",
        &flag("db", &db),
        "--seed=11",
    ]);
    let ls = parse_lines(&out);
    let fill = line(&ls, "fillfile");
    assert_eq!(fill.ops, 300, "{out}");
    assert!(fill.mb_per_sec.is_some(), "{out}");
    assert_eq!(line(&ls, "readfile").found, Some((300, 300)), "{out}");
    assert_eq!(line(&ls, "readfileseq").found, Some((300, 300)), "{out}");
    assert!(
        out.contains("Data file:") && out.contains("(300 records"),
        "{out}"
    );
    check_values(&db, &f.rows);
}

#[test]
fn threads_and_batches_load_every_record_once() {
    let f = files(301);
    let db = f.root.join("db");
    let (out, _) = ok(&[
        "bench",
        "--benchmarks=fillfile,readfileseq",
        &flag("datafile", &f.data),
        &flag("keyfile", &f.keys),
        "--keyfields=0,1,2",
        &flag("db", &db),
        "--threads=3",
        "--batch_size=7",
    ]);
    let ls = parse_lines(&out);
    assert_eq!(line(&ls, "fillfile").ops, 301, "{out}");
    assert_eq!(line(&ls, "readfileseq").found, Some((301, 301)), "{out}");
    check_values(&db, &f.rows);
}

#[test]
fn keys_missing_from_the_data_are_counted_as_not_found() {
    let f = files(200);
    let mut keys: Vec<String> = f.rows.iter().map(|r| key_of(r)).collect();
    // 40 keys that are not in the data, interleaved.
    for i in 0..40 {
        keys.insert(i * 5, format!("absent-{i}\t0\tall"));
    }
    let kf = f.root.join("mixed.keys");
    std::fs::write(&kf, keys.join("\n")).unwrap(); // no final line break
    let none = f.root.join("none.keys");
    std::fs::write(&none, "nope\t1\tall\nnada\t2\tall\n").unwrap();
    let db = f.root.join("db");
    let (out, _) = ok(&[
        "bench",
        "--benchmarks=fillfile,readfileseq",
        &flag("datafile", &f.data),
        &flag("keyfile", &kf),
        "--keyfields=0,1,2",
        &flag("db", &db),
    ]);
    assert_eq!(
        line(&parse_lines(&out), "readfileseq").found,
        Some((200, 240)),
        "{out}"
    );
    // Random reads of keys none of which is there.
    let (out, _) = ok(&[
        "bench",
        "--benchmarks=readfile",
        "--use_existing_db=1",
        &flag("keyfile", &none),
        &flag("db", &db),
        "--reads=50",
        "--seed=3",
    ]);
    assert_eq!(
        line(&parse_lines(&out), "readfile").found,
        Some((0, 50)),
        "{out}"
    );
    // --reads limits readfileseq to the first keys of the file: the first
    // key is absent, the next four present.
    let (out, _) = ok(&[
        "bench",
        "--benchmarks=readfileseq",
        "--use_existing_db=1",
        &flag("keyfile", &kf),
        &flag("db", &db),
        "--reads=5",
    ]);
    assert_eq!(
        line(&parse_lines(&out), "readfileseq").found,
        Some((4, 5)),
        "{out}"
    );
}

#[test]
fn num_given_limits_the_records_loaded() {
    let f = files(250);
    let (out, _) = ok(&[
        "bench",
        "--benchmarks=fillfile,readfileseq",
        &flag("datafile", &f.data),
        &flag("keyfile", &f.keys),
        "--keyfields=0,1,2",
        "--num=100",
        "--reads=250",
    ]);
    let ls = parse_lines(&out);
    assert_eq!(line(&ls, "fillfile").ops, 100, "{out}");
    // The first 100 records are in, the other 150 keys are not.
    assert_eq!(line(&ls, "readfileseq").found, Some((100, 250)), "{out}");
}

#[test]
fn reads_without_a_keyfile_use_the_data_files_keys_and_other_separators() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("rows.csv");
    let rows: Vec<String> = (0..120)
        .map(|i| format!("{},{},payload number {i}", i % 10, i / 10))
        .collect();
    std::fs::write(&data, rows.join("\n") + "\n").unwrap();
    let (out, _) = ok(&[
        "bench",
        "--benchmarks=fillfile,readfileseq,readfile",
        &flag("datafile", &data),
        "--keyfields=1,0",
        "--field_separator=,",
    ]);
    let ls = parse_lines(&out);
    assert_eq!(line(&ls, "readfileseq").found, Some((120, 120)), "{out}");
    assert_eq!(line(&ls, "readfile").found, Some((120, 120)), "{out}");
    // A tab written as backslash-t.
    let f = files(50);
    let (out, _) = ok(&[
        "bench",
        "--benchmarks=fillfile,readfileseq",
        &flag("datafile", &f.data),
        &flag("keyfile", &f.keys),
        "--keyfields=0,1,2",
        "--field_separator=\\t",
    ]);
    assert_eq!(
        line(&parse_lines(&out), "readfileseq").found,
        Some((50, 50)),
        "{out}"
    );
}

#[test]
fn a_short_line_is_an_error_naming_file_and_line() {
    let f = files(100);
    let mut rows = f.rows.clone();
    rows[56] = "lonely\tfield".into();
    let bad = f.root.join("bad.tsv");
    std::fs::write(&bad, rows.join("\n")).unwrap();
    let err = fails(&[
        "bench",
        "--benchmarks=fillfile",
        &flag("datafile", &bad),
        "--keyfields=0,1,2",
    ]);
    assert!(err.contains("bad.tsv:57:"), "{err}");
    assert!(
        err.contains("2 fields") && err.contains("--keyfields=0,1,2"),
        "{err}"
    );
    // An empty line in the middle of the key file.
    let keys = f.root.join("holes.keys");
    std::fs::write(&keys, "a\tb\tc\n\nd\te\tf\n").unwrap();
    let err = fails(&["bench", "--benchmarks=readfile", &flag("keyfile", &keys)]);
    assert!(err.contains("holes.keys:2:"), "{err}");
}

#[test]
fn missing_flags_files_and_bad_values_are_named() {
    let f = files(10);
    let err = fails(&["bench", "--benchmarks=fillfile", "--keyfields=0"]);
    assert!(err.contains("--datafile"), "{err}");
    let err = fails(&["bench", "--benchmarks=readfileseq"]);
    assert!(err.contains("--keyfile"), "{err}");
    let missing = f.root.join("no-such.tsv");
    let err = fails(&[
        "bench",
        "--benchmarks=fillfile",
        &flag("datafile", &missing),
    ]);
    assert!(
        err.contains("--datafile=") && err.contains("no-such.tsv"),
        "{err}"
    );
    let empty = f.root.join("empty.tsv");
    std::fs::write(&empty, "").unwrap();
    let err = fails(&["bench", "--benchmarks=fillfile", &flag("datafile", &empty)]);
    assert!(err.contains("empty.tsv") && err.contains("empty"), "{err}");
    let err = fails(&["bench", "--benchmarks=readfile", &flag("keyfile", &empty)]);
    assert!(err.contains("--keyfile=") && err.contains("empty"), "{err}");
    for (bad, name) in [
        ("--keyfields=0,x", "--keyfields"),
        ("--keyfields=", "--keyfields"),
        ("--keyfields=-1", "--keyfields"),
        ("--field_separator=", "--field_separator"),
        ("--field_separator=\\q", "--field_separator"),
        ("--table_format=columnar", "--table_format"),
        ("--zip_from_level=7", "--zip_from_level"),
        ("--zip_group_size=0", "--zip_group_size"),
        ("--zip_sample_ratio=1.5", "--zip_sample_ratio"),
        ("--zip_level=99", "--zip_level"),
        ("--zip_dict_size=lots", "--zip_dict_size"),
        ("--zip_format_version=5", "--zip_format_version"),
        ("--zip_min_match=2", "--zip_min_match"),
        ("--zip_level_gain=1", "--zip_level_gain"),
        ("--benchmarks=fillfile,readfilez", "readfilez"),
    ] {
        let err = fails(&["bench", bad, &flag("datafile", &f.data)]);
        assert!(err.contains(name), "{bad}: {err}");
    }
}

#[test]
fn dirsize_reports_the_database_size_and_json_records_it() {
    let f = files(300);
    let json = f.root.join("out.json");
    let (out, _) = ok(&[
        "bench",
        "--benchmarks=fillfile,compact,dirsize",
        &flag("datafile", &f.data),
        "--keyfields=0,1,2",
        &flag("db", &f.root.join("db")),
        &flag("json", &json),
    ]);
    let line = out
        .lines()
        .find(|l| l.starts_with("dirsize : "))
        .unwrap_or_else(|| panic!("no dirsize line:\n{out}"));
    let t: Vec<&str> = line.split_whitespace().collect();
    let bytes: u64 = t[2].parse().unwrap();
    let nfiles: u64 = t[5].parse().unwrap();
    assert!(bytes > 0 && nfiles > 0, "{line}");
    assert_eq!((t[3], t[4], t[6]), ("bytes", "in", "files"), "{line}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "dirsize")
        .unwrap();
    assert_eq!(r["dir_size"]["bytes"].as_u64(), Some(bytes));
    assert_eq!(r["dir_size"]["files"].as_u64(), Some(nfiles));
}

#[test]
fn zip_flags_are_accepted_mapped_and_read_back() {
    let f = files(300);
    let db = f.root.join("db");
    let (out, err) = ok(&[
        "bench",
        "--benchmarks=fillfile,compact,readfileseq,readfile",
        &flag("datafile", &f.data),
        &flag("keyfile", &f.keys),
        "--keyfields=0,1,2",
        &flag("db", &db),
        "--table_format=zip",
        "--zip_from_level=0",
        "--zip_dict_size=4096",
        "--zip_group_size=8",
        "--zip_sample_ratio=0.5",
        "--zip_level=3",
        "--zip_min_match=5",
        "--zip_level_gain=0",
    ]);
    assert!(
        out.contains("Table format: zip from level 0"),
        "the header names the table format:\n{out}"
    );
    assert!(
        err.contains("table_format_per_level = [zip, zip, zip, zip, zip, zip, zip]"),
        "{err}"
    );
    assert!(
        err.contains(
            "format_version: 4, dict_size: 4096, group_size: 8, sample_ratio: 0.5, \
             compression_level: 3, min_match: 5, level_trial_gain: 0 }"
        ),
        "{err}"
    );
    let ls = parse_lines(&out);
    assert_eq!(line(&ls, "readfileseq").found, Some((300, 300)), "{out}");
    assert_eq!(line(&ls, "readfile").found, Some((300, 300)), "{out}");
    check_values(&db, &f.rows);
    // Zip from level 2: the levels above stay block-based.
    let (_, err) = ok(&[
        "bench",
        "--benchmarks=fillfile",
        &flag("datafile", &f.data),
        "--table_format=zip",
        "--zip_from_level=2",
    ]);
    assert!(
        err.contains("table_format_per_level = [block, block, zip, zip, zip, zip, zip]"),
        "{err}"
    );
}

#[test]
fn compare_runs_the_file_workload_and_tables_dirsize() {
    let f = files(200);
    let out_flag = flag("out", &f.root.join("cmp"));
    let db_dir = flag("db_dir", &f.root);
    let (out, _) = ok(&[
        "compare",
        &out_flag,
        &db_dir,
        "--repeat=1",
        "--skip_device",
        "--engines=cairndb",
        "--benchmarks=fillfile,compact,dirsize,readfile",
        &flag("datafile", &f.data),
        &flag("keyfile", &f.keys),
        "--keyfields=0,1,2",
        "--table_format=zip",
    ]);
    assert!(out.contains("| readfile |"), "{out}");
    assert!(out.contains("| dirsize after compact |"), "{out}");
    let json = std::fs::read_to_string(f.root.join("cmp").join("compare.json")).unwrap();
    assert!(json.contains("dirsize after compact"), "{json}");
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_runs_the_file_workload_and_names_zip_flags_not_applicable() {
    let f = files(300);
    let (out, err) = ok(&[
        "bench",
        "--engine=rocksdb",
        "--benchmarks=fillfile,compact,dirsize,readfileseq",
        &flag("datafile", &f.data),
        &flag("keyfile", &f.keys),
        "--keyfields=0,1,2",
        "--table_format=zip",
        "--zip_level=3",
    ]);
    assert_eq!(
        err.matches("--table_format: not applicable").count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches("--zip_level: not applicable").count(),
        1,
        "{err}"
    );
    assert_eq!(
        line(&parse_lines(&out), "readfileseq").found,
        Some((300, 300)),
        "{out}"
    );
    assert!(out.contains("dirsize : "), "{out}");
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_runs_the_file_workload() {
    let f = files(300);
    let (out, err) = ok(&[
        "bench",
        "--engine=leveldb",
        "--benchmarks=fillfile,compact,dirsize,readfileseq",
        &flag("datafile", &f.data),
        &flag("keyfile", &f.keys),
        "--keyfields=0,1,2",
        "--zip_from_level=2",
    ]);
    assert_eq!(
        err.matches("--zip_from_level: not applicable").count(),
        1,
        "{err}"
    );
    assert_eq!(
        line(&parse_lines(&out), "readfileseq").found,
        Some((300, 300)),
        "{out}"
    );
}
