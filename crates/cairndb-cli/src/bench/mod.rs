//! `cairndb bench`: RocksDB db_bench 7.8 command lines, run against CairnDB
//! (or, with the `rocksdb` / `leveldb` features, against those engines
//! in-process), printing what db_bench prints. This module owns the
//! benchmark driver: database lifecycle, threads, the benchmark bodies and
//! the output; `flags`, `keygen`, `report` and `engine` own their parts.

pub mod clock;
pub mod engine;
pub mod filework;
pub mod flags;
pub mod keygen;
pub mod report;
pub mod txn;

#[cfg(feature = "leveldb")]
pub mod engine_leveldb;
#[cfg(feature = "rocksdb")]
pub mod engine_rocksdb;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use engine::{CairnEngine, Engine, Op};
use filework::{FileWorkload, Lines};
use flags::{Flags, TxnMode};
use keygen::{KeyGen, KeyLayout, Mt64, Order, ValueGen};
use report::{BenchResult, Stats};

/// Runs `cairndb bench ARGS`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    if args
        .iter()
        .any(|a| a == "--help" || a == "-h" || a == "-help")
    {
        print!("{}", help());
        return Ok(());
    }
    let f = flags::parse(&args)?;
    run(f).map(|_| ())
}

/// The help text's part on the CairnDB extensions.
const EXTENSIONS_HELP: &str = r#"
File workload (CairnDB additions; docs/bench/FILE_WORKLOAD.md):
  fillfile      load --datafile's records in file order: the key is the
                --keyfields of a line joined by --field_separator, the value
                the whole line (--threads split the records, --batch_size
                groups them)
  readfile      point reads of keys drawn at random (--seed) from --keyfile;
                prints (F of T found)
  readfileseq   point reads of --keyfile's keys in file order (--threads
                split them)
  dirsize       prints `dirsize : N bytes in M files` for the database
                directory (all files, recursively); in --json too
  --datafile=FILE         records, one per line
  --keyfile=FILE          keys, one per line (default: the data file's keys)
  --keyfields=0,1,2       0-based fields that make the key (default 0)
  --field_separator=SEP   default a tab (also written \t)
  --empty_values          fillfile stores empty values (the key side alone)
  --num=N                 records fillfile loads (default: all)
  --reads=N               reads per thread for readfile, keys in all for
                          readfileseq (default: --num when given, else
                          the number of keys)

Transactions (db_bench's flags; docs/bench/transactions.md):
  randomtransaction   one transaction over --transaction_sets keys per
                operation, then RandomTransactionVerify (a failure exits
                non-zero); with --engine=rocksdb through RocksDB's
                TransactionDB / OptimisticTransactionDB
  --transaction_db, --optimistic_transaction_db, --transaction_sets=2,
  --transaction_set_snapshot, --transaction_lock_timeout=100 (ms)
  --write_as_transaction  (ours) with a transaction database, each write of
                the write benchmarks is a transaction: begin, put, commit

Table format (CairnDB only; other engines name them as not applicable):
  --table_format=block|zip   default block
  --zip_from_level=N         with zip, levels N and deeper are zip (default 1)
  --zip_dict_size=BYTES      largest dictionary (default 4194304; format 1
                             wants about 65536)
  --zip_group_size=N         records compressed together (default 8)
  --zip_sample_ratio=F       share of the values sampled for the dictionary
                             (default 0.03)
  --zip_level=N              zstd level of the groups (default 9)
  --zip_min_match=N          zstd minimum match length, 0 = the level's
                             own (default 6)
  --zip_level_gain=F         keep --zip_level for a table only when a trial
                             shows it saves this share of bytes over level 1
                             (default 0.05; 0 = always)
  --zip_format_version=1|2|3|4 layout of new zip tables (default 4)
"#;

fn help() -> String {
    let mut s = format!(
        "usage: cairndb bench [--flag=value ...]\n\n\
         Takes RocksDB db_bench 7.8 flags (same names, meanings, defaults) and prints\n\
         what db_bench prints. Benchmarks: {}.\n\
         Without --benchmarks it runs {} and checks every read finds its key.\n\
         Without --db it uses a fresh temporary directory, removed afterwards.\n\
         Additions: --json=FILE, --engine=cairndb|rocksdb|leveldb, --progress=0|1.\n\
         db_bench tuning flags without a CairnDB meaning are accepted and named on stderr.\n",
        flags::BENCHMARKS.join(","),
        flags::DEFAULT_BENCHMARKS
    );
    s.push_str(EXTENSIONS_HELP);
    s
}

/// A running database and where it lives.
struct Ctx {
    files: Option<FileWorkload>,
    flags: Flags,
    layout: KeyLayout,
    dir: PathBuf,
    engine: Option<Box<dyn Engine>>,
    thread_count: u64,
    seed: u64,
    notes_printed: bool,
    progress: bool,
}

fn open_engine(dir: &Path, f: &Flags, notes: &mut Vec<String>) -> Result<Box<dyn Engine>, String> {
    match f.engine.as_str() {
        "cairndb" => Ok(Box::new(CairnEngine::open(dir, f, notes)?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(engine_rocksdb::RocksEngine::open(dir, f, notes)?)),
        "leveldb" if f.txn_mode() != TxnMode::None => {
            Err("--transaction_db/--optimistic_transaction_db: LevelDB has no transactions".into())
        }
        #[cfg(feature = "leveldb")]
        "leveldb" => Ok(Box::new(engine_leveldb::LevelEngine::open(dir, f, notes)?)),
        other => Err(format!(
            "--engine={other}: this cairndb was built without the `{other}` feature \
             (cargo build --release -p cairndb-cli --features {other})"
        )),
    }
}

impl Ctx {
    fn open(&mut self) -> Result<(), String> {
        let mut notes = Vec::new();
        let e = open_engine(&self.dir, &self.flags, &mut notes)?;
        if !self.notes_printed {
            for n in &notes {
                eprintln!("cairndb bench: {n}");
            }
            self.notes_printed = true;
        }
        self.engine = Some(e);
        Ok(())
    }

    fn close(&mut self) -> Result<(), String> {
        if let Some(e) = self.engine.take() {
            e.close()?;
        }
        Ok(())
    }

    fn destroy_and_open(&mut self) -> Result<(), String> {
        self.close()?;
        destroy(&self.dir)?;
        self.open()
    }

    fn engine(&self) -> &dyn Engine {
        self.engine.as_deref().expect("engine is open")
    }
}

fn destroy(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("removing {}: {e}", dir.display())),
    }
}

fn compression_name(s: &str) -> String {
    match s {
        "none" => "NoCompression".into(),
        "snappy" => "Snappy".into(),
        "lz4" => "LZ4".into(),
        "zstd" => "ZSTD".into(),
        "zlib" => "Zlib".into(),
        other => other.to_string(),
    }
}

fn print_header(f: &Flags, files: Option<&FileWorkload>) {
    let engine = match f.engine.as_str() {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => format!(
            "RocksDB (in-process, via cairndb bench)\nRocksDB:    version {}",
            engine_rocksdb::library_version()
        ),
        "leveldb" => "LevelDB (in-process, via cairndb bench)".to_string(),
        _ => format!("version {}", env!("CARGO_PKG_VERSION")),
    };
    println!("CairnDB:    {engine}");
    if let Ok(cpu) = std::fs::read_to_string("/proc/cpuinfo") {
        let n = cpu.lines().filter(|l| l.starts_with("processor")).count();
        if let Some(model) = cpu.lines().find(|l| l.starts_with("model name")) {
            let m = model.split_once(':').map(|x| x.1.trim()).unwrap_or("");
            println!("CPU:        {n} * {m}");
        }
    }
    // The generated keys and values mean nothing to a run of file benchmarks only.
    let generated = f.benchmarks.iter().any(|b| {
        !flags::FILE_BENCHMARKS.contains(&b.as_str())
            && !["compact", "flush", "dirsize", "stats", "waitforcompaction"].contains(&b.as_str())
    });
    if generated {
        let comp_value = (f.value_size as f64 * f.compression_ratio + 0.5) as usize;
        println!(
            "Keys:       {} bytes each (+ 0 bytes user-defined timestamp)",
            f.key_size
        );
        println!(
            "Values:     {} bytes each ({} bytes after compression)",
            f.value_size, comp_value
        );
        println!("Entries:    {}", f.num);
        println!("Prefix:    {} bytes", f.prefix_size);
        println!("Keys per prefix:    {}", f.keys_per_prefix);
        let raw = (f.key_size + f.value_size) as f64 * f.num as f64 / 1048576.0;
        let file = (f.key_size as f64 + f.value_size as f64 * f.compression_ratio) * f.num as f64
            / 1048576.0;
        println!("RawSize:    {raw:.1} MB (estimated)");
        println!("FileSize:   {file:.1} MB (estimated)");
    }
    println!("Write rate: {} bytes/second", f.benchmark_write_rate_limit);
    println!("Read rate: 0 ops/second");
    println!("Compression: {}", compression_name(&f.compression_type));
    println!("Compression sampling rate: 0");
    if f.engine == "cairndb" && f.hash_memtable {
        println!("Memtablerep: SkipListFactory with a hash index (memtable_hash_index)");
    } else {
        println!("Memtablerep: SkipListFactory");
    }
    println!("Perf Level: 1");
    if f.engine == "cairndb" {
        match f.table_format {
            cairndb::TableFormat::Zip => println!(
                "Table format: zip from level {} (format version {}, dict {} bytes, group {}, sample ratio {}, zstd level {}, min match {}, level gain {})",
                f.zip_from_level, f.zip_format_version, f.zip_dict_size, f.zip_group_size, f.zip_sample_ratio, f.zip_level, f.zip_min_match, f.zip_level_gain
            ),
            cairndb::TableFormat::BlockBased => {
                if f.hash_index.unwrap_or(f.use_plain_table) {
                    let interval = if f.use_plain_table && !f.block_restart_interval_set {
                        1
                    } else {
                        f.block_restart_interval
                    };
                    println!("Table format: block with a hash index (restart interval {interval})");
                } else {
                    println!("Table format: block");
                }
            }
        }
    }
    match f.txn_mode() {
        TxnMode::None => {}
        TxnMode::Pessimistic => println!(
            "Transactions: pessimistic (TransactionDB: 16 lock stripes; benchmark transactions \
             wait {} ms for a lock, deadlock detection off){}",
            f.transaction_lock_timeout,
            if f.write_as_transaction {
                "; each write of the write benchmarks is a transaction"
            } else {
                "; writes lock their keys"
            }
        ),
        TxnMode::Optimistic => println!(
            "Transactions: optimistic (OptimisticTransactionDB: benchmark transactions take a \
             snapshot at begin){}",
            if f.write_as_transaction {
                "; each write of the write benchmarks is a transaction"
            } else {
                ""
            }
        ),
    }
    for l in files.map(|w| w.describe()).unwrap_or_default() {
        println!("{l}");
    }
    println!("------------------------------------------------");
}

/// Runs the benchmarks `f` names; returns their results.
pub fn run(mut f: Flags) -> Result<Vec<BenchResult>, String> {
    for n in &f.notes {
        eprintln!("cairndb bench: {n}");
    }
    if f.seed == 0 {
        f.seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(1);
        println!("Set seed to {} because --seed was 0", f.seed);
    }
    let tmp;
    let dir = match &f.db {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::Builder::new()
                .prefix("cairndb-bench-")
                .tempdir()
                .map_err(|e| format!("creating a temporary directory: {e}"))?;
            tmp.path().join("dbbench")
        }
    };
    // Load (and check) the data and key files before anything is timed or
    // any database is removed.
    let files = FileWorkload::load(&f)?;
    print_header(&f, files.as_ref());
    let progress = f
        .progress
        .unwrap_or_else(|| std::io::stderr().is_terminal());
    let layout = KeyLayout {
        key_size: f.key_size,
        prefix_size: f.prefix_size,
        keys_per_prefix: f.keys_per_prefix,
    };
    let mut ctx = Ctx {
        files,
        seed: f.seed,
        flags: f,
        layout,
        dir,
        engine: None,
        thread_count: 0,
        notes_printed: false,
        progress,
    };
    if !ctx.flags.use_existing_db {
        destroy(&ctx.dir)?;
    }
    ctx.open()?;
    let mut results = Vec::new();
    let benches = ctx.flags.benchmarks.clone();
    let outcome = (|| -> Result<(), String> {
        for name in &benches {
            if let Some(r) = run_one(&mut ctx, name)? {
                println!("{}", r.line);
                if ctx.flags.histogram {
                    if let Some(l) = &r.latency {
                        println!("{}", report::histogram_text(op_kind(name), l));
                    }
                }
                if name == "randomtransaction" {
                    random_transaction_verify(&ctx)?;
                }
                let _ = std::io::stdout().flush();
                results.push(r);
            }
        }
        Ok(())
    })();
    if outcome.is_ok() && ctx.flags.statistics {
        println!("STATISTICS:\n{}", ctx.engine().stats());
    }
    let closed = ctx.close();
    outcome?;
    closed?;
    if ctx.flags.default_benchmarks {
        verify_default_run(&ctx.flags, &results)?;
    }
    if let Some(path) = &ctx.flags.json {
        let doc = serde_json::json!({
            "engine": ctx.flags.engine,
            "datafile": ctx.flags.datafile,
            "keyfile": ctx.flags.keyfile,
            "table_format": match ctx.flags.table_format {
                cairndb::TableFormat::Zip => "zip",
                cairndb::TableFormat::BlockBased => "block",
            },
            "num": ctx.flags.num,
            "key_size": ctx.flags.key_size,
            "value_size": ctx.flags.value_size,
            "threads": ctx.flags.threads,
            "seed": ctx.seed,
            "results": results,
        });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("--json={}: {e}", path.display()))?;
    }
    Ok(results)
}

/// db_bench's `RandomTransactionVerify`, run untimed after
/// randomtransaction's line: with a transaction database, every set must
/// sum to the same total. Prints `RandomTransactionVerify Success.` or
/// `... FAILED!!`; a failure is an error (db_bench goes on with exit 0).
fn random_transaction_verify(ctx: &Ctx) -> Result<(), String> {
    if ctx.flags.txn_mode() == TxnMode::None {
        return Ok(());
    }
    let r = txn::verify(
        ctx.engine(),
        ctx.flags.transaction_sets as u16,
        ctx.seed ^ 0x7665_7269_6679,
    );
    let _ = std::io::stdout().flush();
    match r {
        Ok(()) => {
            println!("RandomTransactionVerify Success.");
            Ok(())
        }
        Err(e) => {
            // db_bench prints a bad value on stderr, unequal totals on stdout.
            if e.starts_with("Iter returned") {
                eprintln!("{e}");
            } else {
                println!("{e}");
            }
            println!("RandomTransactionVerify FAILED!!");
            Err(format!(
                "randomtransaction: the sets' totals must be equal after transactions, \
                 and are not: {e}"
            ))
        }
    }
}

/// The default run promises that every key written is read back.
fn verify_default_run(f: &Flags, results: &[BenchResult]) -> Result<(), String> {
    for r in results {
        match r.name.as_str() {
            "readrandom" => {
                if let Some((found, of)) = r.found {
                    if found != of {
                        return Err(format!(
                            "readrandom found {found} of {of} keys, expected all"
                        ));
                    }
                }
            }
            "readseq" if r.ops != f.reads().min(f.num) => {
                return Err(format!("readseq saw {} keys, expected {}", r.ops, f.num));
            }
            _ => {}
        }
    }
    Ok(())
}

fn op_kind(name: &str) -> &'static str {
    match name {
        "fillseq" | "fillrandom" | "filluniquerandom" | "fillsync" | "overwrite" | "fillfile" => {
            "write"
        }
        "deleterandom" => "delete",
        "seekrandom" => "seek",
        "updaterandom" | "readrandomwriterandom" | "randomtransaction" => "op",
        _ => "read",
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Write(Order, bool),
    ReadRandom,
    ReadSeq(bool),
    SeekRandom,
    ReadWhileWriting,
    ReadRandomWriteRandom,
    UpdateRandom,
    DeleteRandom,
    RandomTransaction,
    FillFile,
    ReadFile,
    ReadFileSeq,
}

fn run_one(ctx: &mut Ctx, name: &str) -> Result<Option<BenchResult>, String> {
    let fresh = matches!(
        name,
        "fillseq" | "fillrandom" | "filluniquerandom" | "fillsync" | "fillfile"
    );
    if fresh {
        if ctx.flags.use_existing_db {
            println!("{name:<12} : skipped (--use_existing_db is true)");
            return Ok(None);
        }
        ctx.destroy_and_open()?;
    }
    if !matches!(name, "stats" | "waitforcompaction") {
        println!("DB path: [{}]", ctx.dir.display());
    }
    let kind = match name {
        "fillseq" => Kind::Write(Order::Sequential, false),
        "fillrandom" | "overwrite" => Kind::Write(Order::Random, false),
        "filluniquerandom" => Kind::Write(Order::UniqueRandom, false),
        "fillsync" => Kind::Write(Order::Random, true),
        "readrandom" => Kind::ReadRandom,
        "readseq" => Kind::ReadSeq(false),
        "readreverse" => Kind::ReadSeq(true),
        "seekrandom" => Kind::SeekRandom,
        "readwhilewriting" => Kind::ReadWhileWriting,
        "readrandomwriterandom" => Kind::ReadRandomWriteRandom,
        "updaterandom" => Kind::UpdateRandom,
        "deleterandom" => Kind::DeleteRandom,
        "randomtransaction" => Kind::RandomTransaction,
        "fillfile" => Kind::FillFile,
        "readfile" => Kind::ReadFile,
        "readfileseq" => Kind::ReadFileSeq,
        "dirsize" => {
            let d = filework::dir_size(&ctx.dir)?;
            return Ok(Some(report::dir_size_result(&ctx.flags.engine, d)));
        }
        "flush" | "compact" => {
            let mut s = Stats::new(ctx.flags.histogram);
            s.start();
            if name == "flush" {
                ctx.engine().flush()?;
            } else {
                ctx.engine().compact()?;
            }
            s.finished_ops(1);
            s.stop();
            return Ok(Some(report::merge(name, &ctx.flags.engine, &[s], false)));
        }
        "waitforcompaction" => {
            ctx.engine().wait_for_compactions()?;
            return Ok(None);
        }
        "stats" => {
            println!(
                "\n** {} stats **\n{}",
                ctx.flags.engine,
                ctx.engine().stats()
            );
            return Ok(None);
        }
        other => return Err(format!("unknown benchmark `{other}`")),
    };
    let readers = ctx.flags.threads;
    let with_writer = kind == Kind::ReadWhileWriting;
    let n_threads = readers + usize::from(with_writer);
    let seeds: Vec<u64> = (0..n_threads)
        .map(|_| {
            // db_bench: `total_thread_count_++; ThreadState(i, total_thread_count_)`
            // seeds each thread's Random64 with seed + 1, + 2, ... across benchmarks.
            ctx.thread_count += 1;
            ctx.seed.wrapping_add(ctx.thread_count)
        })
        .collect();
    let data = ctx.files.as_ref().and_then(|w| w.data.as_ref());
    let read_keys = ctx.files.as_ref().and_then(|w| w.read_keys());
    // For the file benchmarks --num means "all" unless given.
    let file_reads = |n: usize| -> u64 {
        match (ctx.flags.reads, ctx.flags.num_set) {
            (r, _) if r >= 0 => r as u64,
            (_, true) => ctx.flags.num,
            (_, false) => n as u64,
        }
    };
    let per_thread = match kind {
        Kind::Write(_, true) => (ctx.flags.num / 1000).max(1),
        Kind::Write(..) | Kind::DeleteRandom => ctx.flags.num,
        Kind::RandomTransaction => ctx.flags.readwrites(),
        Kind::FillFile => data.map_or(0, |d| d.keys.len() as u64),
        Kind::ReadFile => file_reads(read_keys.map_or(0, |k| k.len())),
        Kind::ReadFileSeq => {
            let n = read_keys.map_or(0, |k| k.len());
            file_reads(n).min(n as u64)
        }
        _ => ctx.flags.reads(),
    };
    // fillfile and readfileseq split their records among the threads.
    let bar_total = match kind {
        Kind::FillFile | Kind::ReadFileSeq => per_thread,
        _ => per_thread * readers as u64,
    };
    let bar = make_bar(ctx, name, bar_total);
    let shared = Shared {
        f: &ctx.flags,
        layout: ctx.layout,
        db: ctx.engine(),
        barrier: Barrier::new(n_threads),
        readers_done: AtomicU64::new(0),
        stop_writer: AtomicBool::new(false),
        bar: bar.as_ref(),
        interval: Mutex::new(None),
        data,
        read_keys,
    };
    let mut all = Vec::new();
    let mut writer_stats = None;
    let mut first_err = None;
    std::thread::scope(|s| {
        let handles: Vec<_> = seeds
            .iter()
            .enumerate()
            .map(|(i, &seed)| {
                let sh = &shared;
                s.spawn(move || {
                    let is_writer = with_writer && i == readers;
                    let r = if is_writer {
                        bg_writer(sh, seed)
                    } else {
                        let r = thread_body(sh, kind, i, seed, per_thread);
                        sh.readers_done.fetch_add(1, Ordering::SeqCst);
                        r
                    };
                    (is_writer, r)
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok((true, Ok(st))) => writer_stats = Some(st),
                Ok((false, Ok(st))) => all.push(st),
                Ok((_, Err(e))) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert_with(|| "a benchmark thread panicked".to_string());
                }
            }
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(e) = first_err {
        return Err(format!("{name}: {e}"));
    }
    let show_found = matches!(
        kind,
        Kind::ReadRandom
            | Kind::SeekRandom
            | Kind::ReadWhileWriting
            | Kind::ReadFile
            | Kind::ReadFileSeq
    );
    let r = report::merge(name, &ctx.flags.engine, &all, show_found);
    if let Some(w) = writer_stats {
        eprintln!(
            "{name}: the writer thread did {} puts ({:.0}/s)",
            w.done,
            w.done as f64 / w.seconds().max(1e-9)
        );
    }
    Ok(Some(r))
}

fn make_bar(ctx: &Ctx, name: &str, total: u64) -> Option<indicatif::ProgressBar> {
    if !ctx.progress {
        return None;
    }
    let bar = if ctx.flags.duration > 0 {
        indicatif::ProgressBar::new_spinner()
    } else {
        indicatif::ProgressBar::new(total)
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{msg:12} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, eta {eta})",
    ) {
        bar.set_style(style);
    }
    bar.set_message(name.to_string());
    Some(bar)
}

struct Shared<'a> {
    f: &'a Flags,
    layout: KeyLayout,
    db: &'a dyn Engine,
    barrier: Barrier,
    readers_done: AtomicU64,
    stop_writer: AtomicBool,
    bar: Option<&'a indicatif::ProgressBar>,
    interval: Mutex<Option<(Instant, u64)>>,
    /// The records of `--datafile`, for fillfile.
    data: Option<&'a filework::DataFile>,
    /// The keys readfile and readfileseq read.
    read_keys: Option<&'a Lines>,
}

/// db_bench's `Duration`: a count of operations, or seconds when `--duration`.
struct Budget {
    max_ops: u64,
    deadline: Option<Instant>,
    ops: u64,
}

impl Budget {
    fn new(f: &Flags, max_ops: u64) -> Budget {
        Budget {
            max_ops,
            deadline: (f.duration > 0).then(|| Instant::now() + Duration::from_secs(f.duration)),
            ops: 0,
        }
    }
    fn done(&mut self, n: u64) -> bool {
        self.ops += n;
        match self.deadline {
            Some(d) => self.ops % 256 < n && Instant::now() >= d,
            None => self.ops > self.max_ops,
        }
    }
}

impl Shared<'_> {
    /// One point read of `key` (readrandom, readfile, readfileseq): counts
    /// it, and when found, its key and value bytes.
    fn point_read(&self, tid: usize, st: &mut Stats, key: &[u8]) -> Result<(), String> {
        thread_local! {
            /// The value of the last point read on this thread, reused.
            static VALUE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        st.reads += 1;
        let found = VALUE.with_borrow_mut(|val| -> Result<Option<usize>, String> {
            Ok(self.db.get_into(key, val)?.then_some(val.len()))
        })?;
        if let Some(len) = found {
            st.found += 1;
            st.bytes += (key.len() + len) as u64;
        }
        st.finished_ops(1);
        self.tick(tid, st, 1);
        Ok(())
    }

    fn tick(&self, tid: usize, st: &Stats, n: u64) {
        if st.done % 1024 < n {
            if let Some(b) = self.bar {
                b.inc(1024);
            }
            if tid == 0 && self.f.stats_interval_seconds > 0 {
                self.interval_report(st);
            }
        }
    }

    fn interval_report(&self, st: &Stats) {
        let now = Instant::now();
        let mut g = match self.interval.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let (last_t, last_ops) = g.unwrap_or((st.start, 0));
        let dt = now.duration_since(last_t).as_secs_f64();
        if dt < self.f.stats_interval_seconds as f64 {
            return;
        }
        let total = now.duration_since(st.start).as_secs_f64();
        let d_ops = st.done - last_ops;
        eprintln!(
            "... thread 0: ({},{}) ops and ({:.1},{:.1}) ops/second in ({:.6},{:.6}) seconds",
            d_ops,
            st.done,
            d_ops as f64 / dt,
            st.done as f64 / total,
            dt,
            total
        );
        if self.f.statistics {
            eprintln!("{}", self.db.stats());
        }
        *g = Some((now, st.done));
    }
}

fn thread_body(
    sh: &Shared<'_>,
    kind: Kind,
    tid: usize,
    seed: u64,
    per_thread: u64,
) -> Result<Stats, String> {
    let f = sh.f;
    let num = f.num;
    let mut rand = Mt64::new(seed);
    let mut st = Stats::new(f.histogram);
    let mut key = Vec::with_capacity(f.key_size);
    let mut values = ValueGen::new(f.compression_ratio, f.value_size);
    let kv = (f.key_size + f.value_size) as u64;
    sh.barrier.wait();
    st.start();
    match kind {
        Kind::Write(order, _) => {
            let mut gen = KeyGen::new(order, num, seed);
            let mut budget = Budget::new(f, per_thread);
            let epb = f.entries_per_batch as u64;
            let mut keys: Vec<Vec<u8>> = vec![Vec::new(); f.entries_per_batch];
            let (mut txns, mut txn_aborts) = (0u64, 0u64);
            while !budget.done(epb) {
                for k in keys.iter_mut() {
                    // db_bench draws a DB index (`rand.Next() % num_dbs`) before each key.
                    rand.next_u64();
                    let v = gen.next(&mut rand);
                    sh.layout.make_key(v, num, k);
                }
                if f.write_as_transaction {
                    // A conflict or lock timeout between threads writing the
                    // same key is counted, not retried (as randomtransaction's).
                    let tdb = sh
                        .db
                        .transactions()
                        .ok_or("--write_as_transaction: not a transaction database")?;
                    let mut t = tdb.begin(false);
                    let mut r = Ok(());
                    for k in &keys {
                        r = t.put(k, values.generate(f.value_size));
                        if r.is_err() {
                            break;
                        }
                    }
                    let r = match r {
                        Ok(()) => t.commit(),
                        Err(e) => t.rollback().and(Err(e)),
                    };
                    match r {
                        Ok(()) => {}
                        Err(e) if e.is_conflict() => txn_aborts += 1,
                        Err(e) => return Err(format!("write transaction: {e}")),
                    }
                    txns += 1;
                } else if epb == 1 {
                    sh.db
                        .write(&[Op::Put(&keys[0], values.generate(f.value_size))])?;
                } else {
                    let vals: Vec<Vec<u8>> = (0..keys.len())
                        .map(|_| values.generate(f.value_size).to_vec())
                        .collect();
                    let ops: Vec<Op<'_>> =
                        keys.iter().zip(&vals).map(|(k, v)| Op::Put(k, v)).collect();
                    sh.db.write(&ops)?;
                }
                st.bytes += kv * epb;
                st.finished_ops(epb);
                sh.tick(tid, &st, epb);
            }
            if f.write_as_transaction {
                st.message = format!("( transactions:{txns} aborts:{txn_aborts})");
            }
        }
        Kind::ReadRandom | Kind::ReadWhileWriting => {
            let mut budget = Budget::new(f, per_thread);
            while !budget.done(1) {
                rand.next_u64(); // db_bench's SelectDBWithCfh(thread)
                let v = rand.next_u64() % num.max(1);
                sh.layout.make_key(v, num, &mut key);
                sh.point_read(tid, &mut st, &key)?;
            }
        }
        Kind::ReadSeq(reverse) => {
            let mut it = sh.db.iter()?;
            if reverse {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            let mut i = 0;
            while i < per_thread && it.valid() {
                st.bytes += (it.key().len() + it.value().len()) as u64;
                i += 1;
                st.finished_ops(1);
                sh.tick(tid, &st, 1);
                if reverse {
                    it.prev();
                } else {
                    it.next();
                }
            }
            it.status()?;
        }
        Kind::SeekRandom => {
            let mut budget = Budget::new(f, per_thread);
            while !budget.done(1) {
                let v = rand.next_u64() % num.max(1);
                sh.layout.make_key(v, num, &mut key);
                let mut it = sh.db.iter()?;
                it.seek(&key);
                st.reads += 1;
                if it.valid() && it.key() == key.as_slice() {
                    st.found += 1;
                }
                let mut j = 0;
                while j < f.seek_nexts && it.valid() {
                    st.bytes += (it.key().len() + it.value().len()) as u64;
                    it.next();
                    j += 1;
                }
                it.status()?;
                st.finished_ops(1);
                sh.tick(tid, &st, 1);
            }
        }
        Kind::ReadRandomWriteRandom => {
            let mut budget = Budget::new(f, per_thread);
            let (mut gw, mut pw) = (0u64, 0u64);
            let (mut reads, mut writes) = (0u64, 0u64);
            while !budget.done(1) {
                rand.next_u64(); // db_bench's SelectDB(thread)
                let v = rand.next_u64() % num.max(1);
                sh.layout.make_key(v, num, &mut key);
                if gw == 0 && pw == 0 {
                    gw = f.readwritepercent;
                    pw = 100 - gw;
                }
                if gw > 0 {
                    if sh.db.get(&key)?.is_some() {
                        st.found += 1;
                    }
                    gw -= 1;
                    reads += 1;
                } else {
                    sh.db.put(&key, values.generate(f.value_size))?;
                    pw -= 1;
                    writes += 1;
                }
                st.finished_ops(1);
                sh.tick(tid, &st, 1);
            }
            st.message = format!(
                "( reads:{reads} writes:{writes} total:{} found:{})",
                reads + writes,
                st.found
            );
        }
        Kind::UpdateRandom => {
            let mut budget = Budget::new(f, per_thread);
            while !budget.done(1) {
                rand.next_u64(); // db_bench's SelectDB(thread)
                let v = rand.next_u64() % num.max(1);
                sh.layout.make_key(v, num, &mut key);
                if let Some(old) = sh.db.get(&key)? {
                    st.found += 1;
                    st.bytes += (key.len() + old.len()) as u64;
                }
                sh.db.put(&key, values.generate(f.value_size))?;
                st.bytes += kv;
                st.finished_ops(1);
                sh.tick(tid, &st, 1);
            }
            st.message = format!("( updates:{} found:{})", st.done, st.found);
        }
        Kind::RandomTransaction => {
            let mut ins = txn::Inserter::new(
                seed,
                f.txn_mode(),
                num,
                f.transaction_sets as u16,
                f.transaction_set_snapshot,
            );
            let mut budget = Budget::new(f, per_thread);
            while !budget.done(1) {
                ins.insert(sh.db)
                    .map_err(|e| format!("Unexpected error: {e}"))?;
                st.finished_ops(1);
                sh.tick(tid, &st, 1);
            }
            st.bytes = ins.bytes;
            st.message = ins.message(st.done);
        }
        Kind::FillFile => {
            let d = sh.data.ok_or("fillfile: no --datafile loaded")?;
            let epb = f.entries_per_batch.max(1) as u64;
            let range = filework::share(per_thread, tid, f.threads);
            let mut i = range.start;
            let mut ops: Vec<Op<'_>> = Vec::with_capacity(epb as usize);
            while i < range.end {
                let end = (i + epb).min(range.end);
                ops.clear();
                for j in i..end {
                    let (k, v) = (d.keys.get(j as usize), d.values.get(j as usize));
                    st.bytes += (k.len() + v.len()) as u64;
                    ops.push(Op::Put(k, v));
                }
                if let [Op::Put(k, v)] = ops.as_slice() {
                    sh.db.put(k, v)?;
                } else {
                    sh.db.write(&ops)?;
                }
                st.finished_ops(end - i);
                sh.tick(tid, &st, end - i);
                i = end;
            }
        }
        Kind::ReadFile => {
            let keys = sh.read_keys.ok_or("readfile: no keys loaded")?;
            let n = keys.len().max(1) as u64;
            let mut budget = Budget::new(f, per_thread);
            while !budget.done(1) {
                let k = keys.get((rand.next_u64() % n) as usize);
                sh.point_read(tid, &mut st, k)?;
            }
        }
        Kind::ReadFileSeq => {
            let keys = sh.read_keys.ok_or("readfileseq: no keys loaded")?;
            for i in filework::share(per_thread, tid, f.threads) {
                let k = keys.get(i as usize);
                sh.point_read(tid, &mut st, k)?;
            }
        }
        Kind::DeleteRandom => {
            let mut gen = KeyGen::new(Order::Random, num, seed);
            rand.next_u64(); // db_bench's SelectDB(thread), once
            let mut budget = Budget::new(f, per_thread);
            let epb = f.entries_per_batch as u64;
            let mut keys: Vec<Vec<u8>> = vec![Vec::new(); f.entries_per_batch];
            while !budget.done(epb) {
                for k in keys.iter_mut() {
                    let v = gen.next(&mut rand);
                    sh.layout.make_key(v, num, k);
                }
                if epb == 1 {
                    sh.db.delete(&keys[0])?;
                } else {
                    let ops: Vec<Op<'_>> = keys.iter().map(|k| Op::Delete(k)).collect();
                    sh.db.write(&ops)?;
                }
                st.finished_ops(epb);
                sh.tick(tid, &st, epb);
            }
        }
    }
    st.stop();
    Ok(st)
}

/// readwhilewriting's extra thread: writes random keys until every reader
/// is done, paced by `--writes_per_second` (ops) or
/// `--benchmark_write_rate_limit` (bytes), or as fast as it can when both are 0.
fn bg_writer(sh: &Shared<'_>, seed: u64) -> Result<Stats, String> {
    let f = sh.f;
    let mut rand = Mt64::new(seed);
    let mut st = Stats::new(false);
    let mut key = Vec::with_capacity(f.key_size);
    let mut values = ValueGen::new(f.compression_ratio, f.value_size);
    let kv = (f.key_size + f.value_size) as u64;
    let readers = f.threads as u64;
    rand.next_u64(); // db_bench's SelectDB(thread), once
    sh.barrier.wait();
    st.start();
    while sh.readers_done.load(Ordering::SeqCst) < readers
        && !sh.stop_writer.load(Ordering::Relaxed)
    {
        let v = rand.next_u64() % f.num.max(1);
        sh.layout.make_key(v, f.num, &mut key);
        sh.db.put(&key, values.generate(f.value_size))?;
        st.bytes += kv;
        st.finished_ops(1);
        let elapsed = st.start.elapsed().as_secs_f64();
        let mut due = 0.0f64;
        if f.writes_per_second > 0 {
            due = due.max(st.done as f64 / f.writes_per_second as f64);
        }
        if f.benchmark_write_rate_limit > 0 {
            due = due.max(st.bytes as f64 / f.benchmark_write_rate_limit as f64);
        }
        if due > elapsed {
            // Sleep in short steps so the writer stops soon after the readers.
            std::thread::sleep(Duration::from_secs_f64((due - elapsed).min(0.05)));
        }
    }
    st.stop();
    Ok(st)
}
