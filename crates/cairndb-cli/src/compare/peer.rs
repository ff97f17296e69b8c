//! The peers `cairndb compare` runs as external programs: RocksDB's own
//! release `db_bench` (9.10.0, in shared/peers/rocksdb-9.10.0) and LevelDB
//! 1.23's own `db_bench` (built by shared/peers/leveldb-1.23/build_db_bench.sh).
//! Finds each binary, asks its version, translates the db_bench command line
//! into what that binary understands (naming everything it could not
//! translate), and reads its output back as [`Parsed`] results.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bench::flags::{self, Flags};
use crate::bench::report::{parse_output, Parsed};

/// Which external db_bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerKind {
    /// RocksDB's `tools/db_bench`.
    RocksDb,
    /// LevelDB's `benchmarks/db_bench`.
    LevelDb,
}

impl PeerKind {
    /// The engine name in compare's tables.
    pub fn name(self) -> &'static str {
        match self {
            PeerKind::RocksDb => "rocksdb",
            PeerKind::LevelDb => "leveldb",
        }
    }

    /// compare's flag naming the binary.
    pub fn flag(self) -> &'static str {
        match self {
            PeerKind::RocksDb => "db_bench",
            PeerKind::LevelDb => "leveldb_db_bench",
        }
    }

    /// The environment variable naming the binary.
    pub fn env_var(self) -> &'static str {
        match self {
            PeerKind::RocksDb => "CAIRNDB_ROCKSDB_DB_BENCH",
            PeerKind::LevelDb => "CAIRNDB_LEVELDB_DB_BENCH",
        }
    }

    /// Where the binary lives relative to a directory that holds shared/
    /// (the repository's parent: /work beside /work/main, or beside CI's clone).
    fn shared_path(self) -> &'static str {
        match self {
            PeerKind::RocksDb => "shared/peers/rocksdb-9.10.0/db_bench",
            PeerKind::LevelDb => "shared/peers/leveldb-1.23/leveldb_db_bench",
        }
    }

    /// Places outside the tree: build_db_bench.sh's default output.
    fn other_places(self) -> Vec<PathBuf> {
        match (self, std::env::var_os("HOME")) {
            (PeerKind::LevelDb, Some(home)) => {
                vec![PathBuf::from(home).join(".cache/cairndb-anchors/leveldb_db_bench")]
            }
            _ => Vec::new(),
        }
    }

    fn how_to_get(self) -> &'static str {
        match self {
            PeerKind::RocksDb => {
                "the release build ships in shared/peers/rocksdb-9.10.0/ beside the repository"
            }
            PeerKind::LevelDb => {
                "build it with shared/peers/leveldb-1.23/build_db_bench.sh (beside the \
                 repository), which writes ~/.cache/cairndb-anchors/leveldb_db_bench"
            }
        }
    }
}

/// The first `start/../REL` that is a file, trying each start and then each
/// directory above it.
fn search_upward(starts: &[PathBuf], rel: &str) -> Option<PathBuf> {
    starts
        .iter()
        .flat_map(|s| s.ancestors())
        .map(|a| a.join(rel))
        .find(|p| p.is_file())
}

/// Finds `kind`'s binary: `explicit` (compare's flag), else its environment
/// variable, else `shared/peers/...` above the current directory or above
/// this executable, else (LevelDB) the build script's default output. The
/// error names every place it looked.
pub fn locate(kind: PeerKind, explicit: Option<&Path>) -> Result<PathBuf, String> {
    let checked = |p: PathBuf, from: String| {
        if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "{from}={}: no such file ({})",
                p.display(),
                kind.how_to_get()
            ))
        }
    };
    if let Some(p) = explicit {
        return checked(p.to_path_buf(), format!("--{}", kind.flag()));
    }
    if let Some(p) = std::env::var_os(kind.env_var()).filter(|v| !v.is_empty()) {
        return checked(PathBuf::from(p), format!("${}", kind.env_var()));
    }
    let mut starts = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.canonicalize().ok())
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        starts.push(dir);
    }
    if let Some(p) = search_upward(&starts, kind.shared_path()) {
        return Ok(p);
    }
    let others = kind.other_places();
    if let Some(p) = others.iter().find(|p| p.is_file()) {
        return Ok(p.clone());
    }
    let mut looked = vec![
        format!("--{} (not given)", kind.flag()),
        format!("${} (unset)", kind.env_var()),
    ];
    looked.extend(starts.iter().map(|s| {
        format!(
            "{} in {} and every directory above it",
            kind.shared_path(),
            s.display()
        )
    }));
    looked.extend(others.iter().map(|p| p.display().to_string()));
    Err(format!(
        "{}'s db_bench not found; looked at: {}. {}; or leave it out with --engines",
        kind.name(),
        looked.join("; "),
        kind.how_to_get()
    ))
}

/// What a peer is given instead of compare's command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Translation {
    /// Arguments for the binary (without `--db`, which each run adds).
    pub args: Vec<String>,
    /// The benchmarks it runs, in order (named as in our output).
    pub benchmarks: Vec<String>,
    /// One line per flag or benchmark not passed as given, and why.
    pub notes: Vec<String>,
}

/// An external db_bench ready to run.
pub struct Peer {
    /// Which one.
    pub kind: PeerKind,
    /// The binary.
    pub path: PathBuf,
    /// Its version, as it states it (`db_bench version 9.10.0`, `LevelDB version 1.23`).
    pub version: String,
    /// Its command line for this comparison.
    pub translation: Translation,
    /// `--threads` (LevelDB's micros/op is per thread).
    threads: usize,
}

impl Peer {
    /// Finds `kind`'s binary, asks its version and translates `args`
    /// (compare's db_bench flags, already validated). `scratch` is an empty
    /// directory LevelDB's version probe may use.
    pub fn new(
        kind: PeerKind,
        explicit: Option<&Path>,
        args: &[String],
        scratch: &Path,
    ) -> Result<Peer, String> {
        let path = locate(kind, explicit)?;
        let f = flags::parse(args)?;
        let (version, translation) = match kind {
            PeerKind::RocksDb => {
                let out = run_capture(Command::new(&path).arg("--version"))?;
                let version = out.0.trim().to_string();
                // Its --help lists every flag it defines; fall back to 7.8's list.
                let help = run_capture(Command::new(&path).arg("--help"))
                    .map(|(o, e)| format!("{o}{e}"))
                    .unwrap_or_default();
                let known = help_flags(&help);
                (version, translate_rocksdb(args, &f, &known))
            }
            PeerKind::LevelDb => {
                // LevelDB's db_bench has no --version; its header (stderr)
                // names it. An empty --benchmarks opens a database and stops.
                let (o, e) = run_capture(Command::new(&path).arg("--benchmarks=").arg(format!(
                    "--db={}",
                    scratch.join("leveldb-version").display()
                )))?;
                let version = format!("{o}{e}")
                    .lines()
                    .find_map(|l| l.strip_prefix("LevelDB:"))
                    .map(|v| format!("LevelDB {}", v.trim()))
                    .ok_or_else(|| {
                        format!(
                            "{}: printed no `LevelDB:    version` header",
                            path.display()
                        )
                    })?;
                (version, translate_leveldb(&flags::split_args(args)?, &f))
            }
        };
        Ok(Peer {
            kind,
            path,
            version,
            translation,
            threads: f.threads,
        })
    }

    /// The command for one run in `dir`.
    pub fn command(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args(&self.translation.args)
            .arg(format!("--db={}", dir.display()));
        cmd
    }

    /// Reads one run's output back; LevelDB's micros/op become ops/sec.
    pub fn parse(&self, out: &str) -> Vec<Parsed> {
        let mut v = parse_output(out);
        if self.kind == PeerKind::LevelDb {
            for p in &mut v {
                p.ops_per_sec = leveldb_ops_per_sec(&p.name, p.micros_per_op, self.threads);
            }
        }
        v
    }
}

/// Runs a short command; (stdout, stderr), or an error naming it.
fn run_capture(cmd: &mut Command) -> Result<(String, String), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("running {:?}: {e}", cmd.get_program()))?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// The flag names gflags' `--help` lists (`    -name (description) type: ...`).
fn help_flags(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('-')?;
            let (name, tail) = rest.split_once(' ')?;
            (tail.starts_with('(')
                && !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| name.to_string())
        })
        .collect()
}

/// RocksDB's db_bench takes our flags as they are (they are its own); only
/// the ones this binary does not define are left out (gflags would refuse
/// them). `known` empty: the 7.8.3 list this CLI carries.
fn translate_rocksdb(args: &[String], f: &Flags, known: &[String]) -> Translation {
    let knows = |n: &str| {
        if known.is_empty() {
            flags::is_dbbench_7_8_flag(n)
        } else {
            known.iter().any(|k| k == n)
        }
    };
    let mut t = Translation {
        benchmarks: f.benchmarks.clone(),
        ..Translation::default()
    };
    let mut dropped = Vec::new();
    for a in args {
        let name = a.trim_start_matches('-').split('=').next().unwrap_or("");
        let base = name.strip_prefix("no").unwrap_or(name);
        if knows(name) || knows(base) {
            t.args.push(a.clone());
        } else {
            dropped.push(a.clone());
        }
    }
    if !dropped.is_empty() {
        t.notes.push(format!(
            "not passed (this db_bench does not define them): {}",
            dropped.join(" ")
        ));
    }
    t
}

/// The benchmarks LevelDB 1.23's db_bench has under the same name and
/// meaning (checked against its source: fillsync is fillrandom with
/// sync=true over num/1000 keys in both; seekrandom seeks without nexts).
const LEVELDB_BENCHMARKS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "fillsync",
    "overwrite",
    "readrandom",
    "readseq",
    "readreverse",
    "seekrandom",
    "readwhilewriting",
    "deleterandom",
    "compact",
    "stats",
];

/// Benchmarks that start from an empty database (db_bench's fresh_db).
const FRESH_FILLS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "fillsync",
    "filluniquerandom",
    "fillfile",
];

/// Benchmarks that change what the database holds.
const WRITES: &[&str] = &[
    "fillseq",
    "fillrandom",
    "fillsync",
    "filluniquerandom",
    "fillfile",
    "overwrite",
    "updaterandom",
    "readrandomwriterandom",
    "deleterandom",
    "readwhilewriting",
    "randomtransaction",
];

/// LevelDB's `micros/op` is the sum of every thread's seconds over all
/// operations, so ops/sec = threads * 1e6 / micros; readwhilewriting
/// runs one writer thread beside the readers, whose time is summed too.
pub fn leveldb_ops_per_sec(bench: &str, micros_per_op: f64, threads: usize) -> f64 {
    let n = threads + usize::from(bench == "readwhilewriting");
    if micros_per_op > 0.0 {
        n as f64 * 1e6 / micros_per_op
    } else {
        0.0
    }
}

/// LevelDB's db_bench takes `--name=N` integers (`%d`).
fn int_arg(name: &str, v: i64) -> Result<String, String> {
    i32::try_from(v)
        .map(|n| format!("--{name}={n}"))
        .map_err(|_| format!("--{name}={v}: too large for LevelDB's db_bench (an int); not passed"))
}

/// Translates a db_bench command line (`pairs` as [`flags::split_args`]
/// gives them, `f` parsed from it) for LevelDB 1.23's db_bench, which has
/// its own small flag set (`--name=value` only), always 16-byte keys and
/// snappy, its own defaults (4 MB write buffer, 8 MB cache, 2 MB files,
/// 1000 open files, no bloom filter) and no seed.
pub fn translate_leveldb(pairs: &[(String, String)], f: &Flags) -> Translation {
    let mut t = Translation::default();
    let mut seen: Vec<&str> = Vec::new();
    for (name, _) in pairs {
        let n = name.as_str();
        if seen.contains(&n) {
            continue;
        }
        seen.push(n);
        let bool_arg = |b: bool| Ok(format!("--{n}={}", u8::from(b)));
        let r: Option<Result<String, String>> = match n {
            "benchmarks" | "compression_ratio" => None, // below
            "num" => Some(int_arg(n, f.num as i64)),
            "value_size" => Some(int_arg(n, f.value_size as i64)),
            "threads" => Some(int_arg(n, f.threads as i64)),
            "reads" => Some(int_arg(n, f.reads)),
            "bloom_bits" => Some(int_arg(n, f.bloom_bits as i64)),
            "block_size" => Some(int_arg(n, f.block_size as i64)),
            "write_buffer_size" => Some(int_arg(n, f.write_buffer_size as i64)),
            "cache_size" if f.cache_size < 0 => {
                t.notes.push(format!(
                    "--cache_size={}: no block cache; LevelDB's db_bench reads a negative \
                     size as its default 8 MB cache, so it gets --cache_size=0",
                    f.cache_size
                ));
                Some(Ok("--cache_size=0".into()))
            }
            "cache_size" => Some(int_arg(n, f.cache_size)),
            "open_files" if f.open_files > 0 => Some(int_arg(n, f.open_files)),
            "open_files" => Some(Err(format!(
                "--open_files={}: LevelDB's db_bench has no \"unlimited\"; it keeps its 1000",
                f.open_files
            ))),
            "target_file_size_base" => {
                t.notes.push(format!(
                    "--target_file_size_base={}: passed as LevelDB's --max_file_size",
                    f.target_file_size_base
                ));
                Some(int_arg("max_file_size", f.target_file_size_base as i64))
            }
            "histogram" => Some(bool_arg(f.histogram)),
            "use_existing_db" => Some(bool_arg(f.use_existing_db)),
            "key_size" if f.key_size == 16 => None,
            "key_size" => Some(Err(format!(
                "--key_size={}: not translated; LevelDB's db_bench always uses 16-byte keys",
                f.key_size
            ))),
            "compression_type" => Some(Err(format!(
                "--compression_type={}: not translated; LevelDB's db_bench always uses snappy{}",
                f.compression_type,
                if f.compression_type == "none" {
                    " (so it gets --compression_ratio=1: values snappy cannot shrink, \
                     stored at full size as the uncompressed engines store theirs)"
                } else {
                    ""
                }
            ))),
            "seed" => Some(Err(format!(
                "--seed={}: not translated; LevelDB's db_bench seeds its own generators, so \
                 it draws other keys from the same distribution",
                f.seed
            ))),
            "sync" if !f.sync => None,
            "disable_wal" if !f.disable_wal => None,
            "sync" => Some(Err(
                "--sync=1: LevelDB's db_bench has no such flag (only its fillsync writes \
                 synced); its other write benchmarks are left out below"
                    .into(),
            )),
            "disable_wal" => Some(Err(
                "--disable_wal=1: LevelDB's db_bench always writes its log; its write \
                 benchmarks are left out below"
                    .into(),
            )),
            "transaction_db" if f.txn_mode() == flags::TxnMode::Pessimistic => Some(Err(
                "--transaction_db=1: LevelDB has no transactions, and its writes would \
                 take no locks; its write benchmarks are left out below"
                    .into(),
            )),
            other => Some(Err(format!(
                "--{other}: not translated (LevelDB's db_bench has no such flag)"
            ))),
        };
        match r {
            Some(Ok(a)) => t.args.push(a),
            Some(Err(note)) => t.notes.push(note),
            None => {}
        }
    }
    // compression_ratio shapes the values; LevelDB's default is ours (0.5).
    let ratio = if f.compression_type == "none" {
        1.0
    } else {
        f.compression_ratio
    };
    t.args.push(format!("--compression_ratio={ratio}"));

    // Benchmarks: the ones it has, except where its run would differ from
    // ours; after a left-out write the database differs, so every later
    // benchmark is left out until a fill starts a fresh one.
    let mut tainted: Option<&str> = None;
    for b in &f.benchmarks {
        let b = b.as_str();
        let why = if !LEVELDB_BENCHMARKS.contains(&b) {
            Some("LevelDB's db_bench has no such benchmark".to_string())
        } else if f.sync && WRITES.contains(&b) && b != "fillsync" {
            Some("--sync=1, and LevelDB's db_bench would run it unsynced".into())
        } else if f.txn_mode() == flags::TxnMode::Pessimistic && WRITES.contains(&b) {
            Some("--transaction_db=1, and LevelDB's db_bench would write without locks".into())
        } else if f.disable_wal && WRITES.contains(&b) {
            Some("--disable_wal=1, and LevelDB's db_bench would write its log".into())
        } else if b == "seekrandom" && f.seek_nexts > 0 {
            Some(format!(
                "--seek_nexts={}, and LevelDB's seekrandom does no nexts",
                f.seek_nexts
            ))
        } else {
            None
        };
        if FRESH_FILLS.contains(&b) && why.is_none() && !f.use_existing_db {
            tainted = None;
        }
        match (why, tainted) {
            (Some(why), _) => {
                t.notes
                    .push(format!("benchmark {b}: left out (absent): {why}"));
                if WRITES.contains(&b) {
                    tainted = Some(b);
                }
            }
            (None, Some(w)) => t.notes.push(format!(
                "benchmark {b}: left out (absent): it follows {w}, which LevelDB did not run, \
                 so it would see another database"
            )),
            (None, None) => t.benchmarks.push(b.to_string()),
        }
    }
    t.args
        .insert(0, format!("--benchmarks={}", t.benchmarks.join(",")));
    if !pairs.iter().any(|(n, _)| n == "write_buffer_size") {
        t.notes.push(
            "LevelDB keeps its own defaults where no flag was given: 4 MB write buffer, \
             2 MB files, snappy"
                .into(),
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leveldb(args: &[&str]) -> Translation {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let f = flags::parse(&args).unwrap();
        translate_leveldb(&flags::split_args(&args).unwrap(), &f)
    }

    #[test]
    fn leveldb_gets_the_flags_it_has() {
        let t = leveldb(&[
            "--num=100000",
            "--value_size=400",
            "--benchmarks=fillrandom,readrandom",
            "--threads=2",
            "--reads=5000",
            "--cache_size=1048576",
            "--bloom_bits=10",
            "--histogram",
            "--write_buffer_size=8388608",
            "--compression_ratio=0.25",
        ]);
        assert_eq!(
            t.args,
            [
                "--benchmarks=fillrandom,readrandom",
                "--num=100000",
                "--value_size=400",
                "--threads=2",
                "--reads=5000",
                "--cache_size=1048576",
                "--bloom_bits=10",
                "--histogram=1",
                "--write_buffer_size=8388608",
                "--compression_ratio=0.25",
            ]
        );
        assert_eq!(t.benchmarks, ["fillrandom", "readrandom"]);
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }

    #[test]
    fn leveldb_notes_every_flag_it_lacks() {
        let t = leveldb(&[
            "--benchmarks=fillrandom",
            "--compression_type=none",
            "--seed=7",
            "--key_size=20",
            "--max_background_jobs=4",
            "--open_files=-1",
        ]);
        assert!(
            t.args.contains(&"--compression_ratio=1".to_string()),
            "{:?}",
            t.args
        );
        for flag in [
            "compression_type",
            "seed",
            "key_size",
            "max_background_jobs",
            "open_files",
        ] {
            assert!(
                t.notes.iter().any(|n| n.starts_with(&format!("--{flag}"))),
                "no note for --{flag}: {:?}",
                t.notes
            );
        }
        assert!(t.notes.iter().any(|n| n.contains("4 MB write buffer")));
        assert!(t.args.iter().all(|a| !a.starts_with("--seed")));
    }

    #[test]
    fn leveldb_leaves_out_what_it_cannot_run_faithfully() {
        let t = leveldb(&[
            "--benchmarks=filluniquerandom,readrandom,fillseq,readseq,seekrandom,dirsize,fillsync",
            "--sync=1",
        ]);
        // filluniquerandom is absent, so the readrandom after it would read
        // an empty database; fillseq with sync=1 would run unsynced, so
        // readseq too; seekrandom still follows that; fillsync is synced.
        assert_eq!(t.benchmarks, ["fillsync"]);
        assert_eq!(t.args[0], "--benchmarks=fillsync");
        assert_eq!(
            t.notes
                .iter()
                .filter(|n| n.starts_with("benchmark "))
                .count(),
            6,
            "{:?}",
            t.notes
        );
        let t = leveldb(&[
            "--benchmarks=fillseq,waitforcompaction,readrandom,seekrandom",
            "--seek_nexts=10",
        ]);
        assert_eq!(t.benchmarks, ["fillseq", "readrandom"]);
    }

    #[test]
    fn leveldb_runs_no_locked_writes_and_no_randomtransaction() {
        // --transaction_db locks every write's keys: LevelDB's would not.
        let t = leveldb(&[
            "--transaction_db=1",
            "--benchmarks=fillrandom,readrandom,fillseq",
        ]);
        assert!(t.benchmarks.is_empty(), "{:?}", t.benchmarks);
        assert!(
            t.notes.iter().any(|n| n.starts_with("--transaction_db=1:")),
            "{:?}",
            t.notes
        );
        // Optimistic: plain writes are plain, as in db_bench.
        let t = leveldb(&[
            "--optimistic_transaction_db=1",
            "--benchmarks=fillrandom,randomtransaction,readrandom,fillseq",
        ]);
        assert_eq!(t.benchmarks, ["fillrandom", "fillseq"]);
    }

    #[test]
    fn leveldb_micros_become_ops_per_sec() {
        assert_eq!(leveldb_ops_per_sec("readrandom", 4.0, 1), 250_000.0);
        assert_eq!(leveldb_ops_per_sec("readrandom", 4.0, 2), 500_000.0);
        assert_eq!(leveldb_ops_per_sec("readwhilewriting", 4.0, 1), 500_000.0);
        assert_eq!(leveldb_ops_per_sec("stats", 0.0, 1), 0.0);
    }

    #[test]
    fn rocksdb_gets_the_flags_its_help_lists() {
        let help = "db_bench [OPTIONS]...\n\n  Flags from tools/db_bench_tool.cc:\n    \
                    -num (Number of key/values to place in database) type: int64\n      \
                    default: 1000000\n    -sync (Sync all writes to disk) type: bool default: false\n";
        let known = help_flags(help);
        assert_eq!(known, ["num", "sync"]);
        let args: Vec<String> = ["--num=10", "--nosync", "--zip_level=3"]
            .map(String::from)
            .to_vec();
        let t = translate_rocksdb(&args, &flags::parse(&args).unwrap(), &known);
        assert_eq!(t.args, ["--num=10", "--nosync"]);
        assert_eq!(t.notes.len(), 1);
        assert!(t.notes[0].contains("--zip_level=3"), "{:?}", t.notes);
    }

    #[test]
    fn finds_shared_peers_above_a_start_directory() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("shared/peers/rocksdb-9.10.0/db_bench");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, "").unwrap();
        let deep = root.path().join("main/target/release");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(
            search_upward(std::slice::from_ref(&deep), PeerKind::RocksDb.shared_path()),
            Some(bin)
        );
        assert_eq!(
            search_upward(&[deep], PeerKind::LevelDb.shared_path()),
            None
        );
        let e = locate(PeerKind::RocksDb, Some(&root.path().join("nope"))).unwrap_err();
        assert!(
            e.contains("--db_bench=") && e.contains("no such file"),
            "{e}"
        );
    }
}
