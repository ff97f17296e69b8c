//! `cairndb compare`: measures the device the databases live on, then runs
//! RocksDB's own release `db_bench` (9.10.0), LevelDB 1.23's own `db_bench`
//! (its flags translated, see [`peer`]) and `cairndb bench` with the same
//! db_bench flags, taking turns for `--repeat` runs each in fresh
//! directories, and prints a table of medians with CairnDB's ratios to each
//! peer and to the best peer; writes the table, an SVG and a PNG bar chart.

mod peer;

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::bench::flags;
use crate::bench::report::{parse_dir_size_line, parse_line, parse_output, Parsed};
use peer::{Peer, PeerKind};

const USAGE: &str = "usage: cairndb compare [--repeat=N] [--out=DIR] [--db_dir=DIR] \
[--db_bench=PATH] [--leveldb_db_bench=PATH] [--engines=rocksdb,leveldb,cairndb] \
[--skip_device] [db_bench flags...]
       cairndb compare --replot=DIR   (redraw DIR/compare.svg and .png from DIR/compare.json)

Runs the same db_bench command line through RocksDB's own db_bench, LevelDB's
own db_bench and CairnDB (and, listed in --engines, rocksdb-inproc and
leveldb-inproc: those libraries inside cairndb bench), --repeat times each
(taking turns, fresh directory each run), and prints medians.
--histogram=1 is added so P99 latencies can be compared, and --seed and
--benchmarks are made explicit so every engine runs the same list.

RocksDB's db_bench: --db_bench=PATH, else $CAIRNDB_ROCKSDB_DB_BENCH, else
shared/peers/rocksdb-9.10.0/db_bench in or above the current directory or
this binary's. LevelDB's: --leveldb_db_bench=PATH, else
$CAIRNDB_LEVELDB_DB_BENCH, else shared/peers/leveldb-1.23/leveldb_db_bench
found the same way, else ~/.cache/cairndb-anchors/leveldb_db_bench (what
shared/peers/leveldb-1.23/build_db_bench.sh builds). LevelDB's db_bench gets
the flags it has; every flag and benchmark it was not given is named, and
benchmarks it lacks are shown as absent (-).
The file workload (fillfile, readfile, readfileseq) and dirsize are ours:
when --benchmarks names one, RocksDB runs in-process (cairndb bench
--engine=rocksdb, needs the `rocksdb` feature) instead of through db_bench,
and the on-disk sizes that dirsize prints get a table of their own.
randomtransaction with --transaction_db or --optimistic_transaction_db: the
release db_bench aborts or crashes on it (docs/bench/transactions.md), so
RocksDB runs in-process there too, with the same inserter as CairnDB.
Writes compare.md, compare.json, compare.svg and compare.png into --out
(default: the current directory).
";

/// The engines --engines may name.
const ENGINES: &[&str] = &[
    "cairndb",
    "rocksdb",
    "rocksdb-inproc",
    "leveldb",
    "leveldb-inproc",
];

struct Opts {
    repeat: usize,
    out: PathBuf,
    db_dir: Option<PathBuf>,
    db_bench: Option<PathBuf>,
    leveldb_db_bench: Option<PathBuf>,
    engines: Vec<String>,
    skip_device: bool,
    replot: Option<PathBuf>,
    bench_args: Vec<String>,
    /// The benchmarks the pass-through flags name.
    benchmarks: Vec<String>,
    /// randomtransaction on a transaction database, which RocksDB 9.10's
    /// db_bench cannot run.
    transactional_randomtransaction: bool,
}

fn parse_opts(args: Vec<String>) -> Result<Opts, String> {
    let mut o = Opts {
        repeat: 3,
        out: PathBuf::from("."),
        db_dir: None,
        db_bench: None,
        leveldb_db_bench: None,
        engines: vec!["rocksdb".into(), "leveldb".into(), "cairndb".into()],
        skip_device: false,
        replot: None,
        bench_args: Vec::new(),
        benchmarks: Vec::new(),
        transactional_randomtransaction: false,
    };
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        let body = a.trim_start_matches('-');
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (body.to_string(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .ok_or_else(|| format!("flag --{name} needs a value")),
            }
        };
        match name.as_str() {
            "help" | "h" => return Err(USAGE.to_string()),
            "repeat" => {
                let v = value("repeat")?;
                o.repeat = v
                    .parse()
                    .ok()
                    .filter(|n: &usize| *n >= 1)
                    .ok_or_else(|| format!("flag --repeat: bad value `{v}`"))?;
            }
            "out" => o.out = PathBuf::from(value("out")?),
            "db_dir" => o.db_dir = Some(PathBuf::from(value("db_dir")?)),
            "db_bench" => o.db_bench = Some(PathBuf::from(value("db_bench")?)),
            "leveldb_db_bench" => {
                o.leveldb_db_bench = Some(PathBuf::from(value("leveldb_db_bench")?))
            }
            "engines" => {
                let v = value("engines")?;
                o.engines = v.split(',').map(|s| s.trim().to_string()).collect();
                for e in &o.engines {
                    if !ENGINES.contains(&e.as_str()) {
                        return Err(format!("flag --engines: unknown engine `{e}`"));
                    }
                }
            }
            "skip_device" => o.skip_device = true,
            "replot" => o.replot = Some(PathBuf::from(value("replot")?)),
            "db" | "json" | "engine" => {
                return Err(format!(
                    "flag --{name}: compare chooses it for each run; leave it out"
                ))
            }
            _ => o.bench_args.push(a),
        }
    }
    // Validate the pass-through flags once, with the bench parser.
    let f = flags::parse(&o.bench_args)?;
    o.transactional_randomtransaction = f.txn_mode() != flags::TxnMode::None
        && f.benchmarks.iter().any(|b| b == "randomtransaction");
    o.benchmarks = f.benchmarks;
    Ok(o)
}

/// Runs `cairndb compare ARGS`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    let o = parse_opts(args)?;
    if let Some(dir) = &o.replot {
        let t = Table::from_json(&dir.join("compare.json"))?;
        return chart::draw(&t, dir);
    }
    let base = match &o.db_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir(),
    };
    std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    let work = tempfile::Builder::new()
        .prefix("cairndb-compare-")
        .tempdir_in(&base)
        .map_err(|e| format!("creating a directory under {}: {e}", base.display()))?;
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;

    let mut device = None;
    if !o.skip_device {
        println!("== device under {} ==", work.path().display());
        let d = measure_device(work.path())?;
        print!("{}", d.text());
        println!();
        device = Some(d);
    }

    let args = full_args(&o);
    let exe = std::env::current_exe().map_err(|e| format!("finding our own binary: {e}"))?;
    let runners = runners(&o, &args, &exe, work.path())?;
    let peers: Vec<&Peer> = runners
        .iter()
        .filter_map(|(_, r)| match r {
            Runner::Peer(p) => Some(p),
            Runner::Ours(..) => None,
        })
        .collect();
    if !peers.is_empty() {
        println!("== peers ==");
        for p in &peers {
            println!("{}", peer_line(p));
            for n in &p.translation.notes {
                println!("  note: {n}");
            }
        }
        println!();
    }
    println!("== flags: {} ==", args.join(" "));
    // results[engine][benchmark] = runs
    let mut results: BTreeMap<String, BTreeMap<String, Vec<Parsed>>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    // sizes[engine][label] = bytes of each run, labels in `size_order`.
    let mut sizes: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    let mut size_order: Vec<String> = Vec::new();
    // The device's sync latency drifts by 1.5x within minutes here: for
    // synced writes it is probed again before every round, and each
    // round's writes are set against the bound of that moment.
    let probe_rounds = device.is_some() && synced_writers(&o.bench_args).is_some();
    let mut round_syncs: Vec<f64> = Vec::new();
    for round in 0..o.repeat {
        if probe_rounds {
            let l = sync_probe(work.path(), 1000)?;
            println!(
                "  device   4 KiB write + fdatasync: avg {:.1} us, p99 {:.1} us ({} ops)",
                l.avg_us, l.p99_us, l.n
            );
            round_syncs.push(l.avg_us);
        }
        for (name, runner) in &runners {
            let dir = work.path().join(format!("{name}-{round}"));
            let t = Instant::now();
            let out = runner.run(&args, &dir)?;
            let _ = std::fs::remove_dir_all(&dir);
            let parsed = runner.parse(&out);
            if parsed.is_empty() {
                return Err(format!(
                    "{name} printed no benchmark line; its output was:\n{out}"
                ));
            }
            let log = o.out.join(format!("compare-{name}-{round}.log"));
            let _ = std::fs::write(&log, &out);
            eprintln!(
                "compare: round {}/{} {name}: {:.1}s",
                round + 1,
                o.repeat,
                t.elapsed().as_secs_f64()
            );
            for (label, bytes) in dir_sizes(&out) {
                println!("  {name:8} {label:<18} {bytes:>12} bytes on disk");
                if !size_order.contains(&label) {
                    size_order.push(label.clone());
                }
                sizes
                    .entry(name.clone())
                    .or_default()
                    .entry(label)
                    .or_default()
                    .push(bytes as f64);
            }
            for p in parsed {
                if !order.contains(&p.name) {
                    order.push(p.name.clone());
                }
                println!("  {name:8} {}", summary(&p));
                results
                    .entry(name.clone())
                    .or_default()
                    .entry(p.name.clone())
                    .or_default()
                    .push(p);
            }
        }
    }

    let table = Table::build(
        &order,
        &runners.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
        &results,
    );
    let engine_names: Vec<String> = runners.iter().map(|r| r.0.clone()).collect();
    let mut md = table.markdown(o.repeat);
    if !peers.is_empty() {
        md.push_str(&peers_markdown(&peers));
    }
    let size_medians = size_medians(&size_order, &engine_names, &sizes);
    if !size_medians.is_empty() {
        md.push('\n');
        md.push_str(&sizes_markdown(&engine_names, &size_medians));
    }
    let bound = sync_bound(&o.bench_args, round_syncs);
    if let Some(b) = &bound {
        md.push('\n');
        md.push_str(&b.markdown(&table, &results));
    }
    println!("\n{md}");
    std::fs::write(o.out.join("compare.md"), &md).map_err(|e| e.to_string())?;
    let json = serde_json::json!({
        "flags": args,
        "repeat": o.repeat,
        "peers": peers.iter().map(|p| serde_json::json!({
            "engine": p.kind.name(),
            "binary": p.path.display().to_string(),
            "version": p.version,
            "args": p.translation.args,
            "benchmarks": p.translation.benchmarks,
            "notes": p.translation.notes,
        })).collect::<Vec<_>>(),
        "medians": table.rows.iter().map(|r| serde_json::json!({
            "benchmark": r.bench,
            "ops_per_sec": r.ops,
            "p99_micros": r.p99,
        })).collect::<Vec<_>>(),
        "dirsize_bytes": size_medians.iter().map(|(label, m)| serde_json::json!({
            "point": label,
            "bytes": m,
        })).collect::<Vec<_>>(),
        "device_bound": bound.as_ref().map(|b| serde_json::json!({
            "threads": b.threads,
            "sync_micros": b.sync_micros(),
            "sync_micros_per_round": b.per_round,
            "ops_per_sec": b.ops_per_sec(),
        })),
    });
    std::fs::write(
        o.out.join("compare.json"),
        serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    match chart::draw(&table, &o.out) {
        Ok(()) => println!(
            "chart: {} and {}",
            o.out.join("compare.svg").display(),
            o.out.join("compare.png").display()
        ),
        Err(e) => eprintln!("compare: no chart: {e}"),
    }
    Ok(())
}

/// The `dirsize` lines of one run's output, each labelled by the
/// benchmark line before it (`dirsize after compact`).
fn dir_sizes(out: &str) -> Vec<(String, u64)> {
    let mut last = String::from("open");
    let mut v = Vec::new();
    for line in out.lines() {
        if let Some(p) = parse_line(line) {
            last = p.name;
        } else if let Some(d) = parse_dir_size_line(line) {
            v.push((format!("dirsize after {last}"), d.bytes));
        }
    }
    v
}

/// Median bytes per label and engine, labels in `order`.
fn size_medians(
    order: &[String],
    engines: &[String],
    sizes: &BTreeMap<String, BTreeMap<String, Vec<f64>>>,
) -> Vec<(String, BTreeMap<String, f64>)> {
    order
        .iter()
        .map(|label| {
            let m = engines
                .iter()
                .filter_map(|e| {
                    let runs = sizes.get(e)?.get(label)?;
                    Some((e.clone(), median(runs.clone())?))
                })
                .collect();
            (label.clone(), m)
        })
        .collect()
}

/// The on-disk size table: median bytes (MiB) per engine, and CairnDB's
/// size over each peer's (lower is smaller).
fn sizes_markdown(engines: &[String], rows: &[(String, BTreeMap<String, f64>)]) -> String {
    let peers: Vec<&String> = engines.iter().filter(|e| *e != "cairndb").collect();
    let mut s = String::from(
        "On-disk size (dirsize: every file under the database directory), median MiB \
         (lower is smaller).\n\n| point |",
    );
    for e in engines {
        s.push_str(&format!(" {e} MiB |"));
    }
    for p in &peers {
        s.push_str(&format!(" cairndb/{p} |"));
    }
    s.push_str("\n|---|");
    for _ in 0..engines.len() + peers.len() {
        s.push_str("---:|");
    }
    s.push('\n');
    for (label, m) in rows {
        s.push_str(&format!("| {label} |"));
        for e in engines {
            match m.get(e) {
                Some(b) => s.push_str(&format!(" {:.2} |", b / 1048576.0)),
                None => s.push_str(" - |"),
            }
        }
        for p in &peers {
            s.push_str(&ratio(m.get("cairndb").copied(), m.get(*p).copied()));
        }
        s.push('\n');
    }
    s
}

fn summary(p: &Parsed) -> String {
    let mut s = format!("{:<18} {:>12.0} ops/sec", p.name, p.ops_per_sec);
    if let Some(p99) = p.p99 {
        s.push_str(&format!("  P99 {p99:.2} us"));
    }
    if let Some((f, t)) = p.found {
        s.push_str(&format!("  ({f} of {t} found)"));
    }
    s
}

/// Compare's command line for every engine: the pass-through flags plus
/// --histogram=1, one --seed for every engine and round (so they all draw
/// the same keys), and --benchmarks made explicit (the peers' own defaults
/// differ from ours).
fn full_args(o: &Opts) -> Vec<String> {
    let mut args = o.bench_args.clone();
    let given = |args: &[String], flag: &str| {
        args.iter()
            .any(|a| a.trim_start_matches('-').starts_with(flag))
    };
    if !given(&args, "histogram") {
        args.push("--histogram=1".into());
    }
    if !given(&args, "seed") {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1);
        args.push(format!("--seed={seed}"));
    }
    if !given(&args, "benchmarks") {
        args.push(format!("--benchmarks={}", o.benchmarks.join(",")));
    }
    args
}

/// The runners for --engines, in order. A peer that cannot be found is an
/// error (naming where it looked); an in-process engine this binary was
/// built without is left out with a note.
fn runners(
    o: &Opts,
    args: &[String],
    exe: &Path,
    scratch: &Path,
) -> Result<Vec<(String, Runner)>, String> {
    let ours: Vec<&str> = o
        .benchmarks
        .iter()
        .map(|b| b.as_str())
        .filter(|b| flags::EXTENSION_BENCHMARKS.contains(b))
        .collect();
    let inproc = |name: &str, engine: &'static str, built: bool| -> Option<(String, Runner)> {
        if built {
            Some((name.to_string(), Runner::Ours(exe.to_path_buf(), engine)))
        } else {
            eprintln!(
                "compare: this cairndb was built without the `{engine}` feature; {name} is \
                 left out (cargo build --release -p cairndb-cli --features {engine})"
            );
            None
        }
    };
    let peer =
        |kind: PeerKind, explicit: Option<&Path>| -> Result<Option<(String, Runner)>, String> {
            let p = Peer::new(kind, explicit, args, scratch)?;
            if p.translation.benchmarks.is_empty() {
                eprintln!(
                "compare: {} has none of these benchmarks to run faithfully; it is left out ({})",
                kind.name(),
                p.translation.notes.join("; ")
            );
                return Ok(None);
            }
            Ok(Some((kind.name().to_string(), Runner::Peer(p))))
        };
    let mut runners = Vec::new();
    for e in &o.engines {
        let r = match e.as_str() {
            "rocksdb" if !ours.is_empty() => {
                eprintln!(
                    "compare: RocksDB's db_bench has no {}; RocksDB runs in-process instead \
                     (cairndb bench --engine=rocksdb)",
                    ours.join(", ")
                );
                inproc("rocksdb", "rocksdb", cfg!(feature = "rocksdb"))
            }
            "rocksdb" if o.transactional_randomtransaction => {
                eprintln!(
                    "compare: RocksDB 9.10's release db_bench aborts (--transaction_db) or \
                     crashes (--optimistic_transaction_db) on randomtransaction; RocksDB runs \
                     in-process instead (cairndb bench --engine=rocksdb), with the same inserter \
                     as CairnDB (docs/bench/transactions.md)"
                );
                inproc("rocksdb", "rocksdb", cfg!(feature = "rocksdb"))
            }
            "rocksdb" => peer(PeerKind::RocksDb, o.db_bench.as_deref())?,
            "leveldb" => peer(PeerKind::LevelDb, o.leveldb_db_bench.as_deref())?,
            "rocksdb-inproc" => inproc(e, "rocksdb", cfg!(feature = "rocksdb")),
            "leveldb-inproc" => inproc(e, "leveldb", cfg!(feature = "leveldb")),
            _ => Some(("cairndb".into(), Runner::Ours(exe.to_path_buf(), "cairndb"))),
        };
        runners.extend(r);
    }
    if runners.is_empty() {
        return Err("no engine to run".into());
    }
    Ok(runners)
}

/// `rocksdb: PATH (db_bench version 9.10.0)`.
fn peer_line(p: &Peer) -> String {
    format!(
        "{}: {} ({}), run as: {}",
        p.kind.name(),
        p.path.display(),
        p.version,
        p.translation.args.join(" ")
    )
}

/// Which peer binaries ran, and what each was not given.
fn peers_markdown(peers: &[&Peer]) -> String {
    let mut s = String::from("\nPeers (- in the table: the engine has no such benchmark or was not run on it, see the notes):\n\n");
    for p in peers {
        s.push_str(&format!("- {}\n", peer_line(p)));
        for n in &p.translation.notes {
            s.push_str(&format!("  - {n}\n"));
        }
    }
    s
}

enum Runner {
    /// An external db_bench.
    Peer(Peer),
    /// `cairndb bench --engine=ENGINE`.
    Ours(PathBuf, &'static str),
}

impl Runner {
    fn run(&self, args: &[String], dir: &Path) -> Result<String, String> {
        let mut cmd = match self {
            Runner::Peer(p) => p.command(dir),
            Runner::Ours(exe, engine) => {
                let mut cmd = Command::new(exe);
                cmd.arg("bench")
                    .args(args)
                    .arg(format!("--db={}", dir.display()))
                    .arg(format!("--engine={engine}"))
                    .arg("--progress=0");
                cmd
            }
        };
        let out = cmd
            .output()
            .map_err(|e| format!("running {:?}: {e}", cmd.get_program()))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(format!(
                "{:?} failed ({}):\n{}\n{}",
                cmd.get_program(),
                out.status,
                text,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(text)
    }

    fn parse(&self, out: &str) -> Vec<Parsed> {
        match self {
            Runner::Peer(p) => p.parse(out),
            Runner::Ours(..) => parse_output(out),
        }
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Medians per benchmark and engine.
pub struct Table {
    engines: Vec<String>,
    rows: Vec<Row>,
}

struct Row {
    bench: String,
    ops: BTreeMap<String, f64>,
    p99: BTreeMap<String, f64>,
}

impl Table {
    fn build(
        order: &[String],
        engines: &[String],
        results: &BTreeMap<String, BTreeMap<String, Vec<Parsed>>>,
    ) -> Table {
        let mut rows = Vec::new();
        for b in order {
            let mut row = Row {
                bench: b.clone(),
                ops: BTreeMap::new(),
                p99: BTreeMap::new(),
            };
            for e in engines {
                if let Some(runs) = results.get(e).and_then(|m| m.get(b)) {
                    if let Some(m) = median(runs.iter().map(|p| p.ops_per_sec).collect()) {
                        row.ops.insert(e.clone(), m);
                    }
                    if let Some(m) = median(runs.iter().filter_map(|p| p.p99).collect()) {
                        row.p99.insert(e.clone(), m);
                    }
                }
            }
            rows.push(row);
        }
        Table {
            engines: engines.to_vec(),
            rows,
        }
    }

    /// Rebuilds the medians from a `compare.json` written earlier.
    fn from_json(path: &Path) -> Result<Table, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut rows = Vec::new();
        let mut engines: Vec<String> = Vec::new();
        for m in v["medians"].as_array().into_iter().flatten() {
            let map = |key: &str| -> BTreeMap<String, f64> {
                m[key]
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let ops = map("ops_per_sec");
            for e in ops.keys() {
                if !engines.contains(e) {
                    engines.push(e.clone());
                }
            }
            rows.push(Row {
                bench: m["benchmark"].as_str().unwrap_or("?").to_string(),
                ops,
                p99: map("p99_micros"),
            });
        }
        let rank = |e: &str| {
            [
                "rocksdb",
                "rocksdb-inproc",
                "leveldb",
                "leveldb-inproc",
                "cairndb",
            ]
            .iter()
            .position(|x| *x == e)
            .unwrap_or(9)
        };
        engines.sort_by_key(|e| rank(e));
        Ok(Table { engines, rows })
    }

    fn markdown(&self, repeat: usize) -> String {
        let peers: Vec<&String> = self.engines.iter().filter(|e| *e != "cairndb").collect();
        let mut s = format!(
            "Medians of {repeat} run(s) each. ops/sec (higher is better); P99 in microseconds (lower is better).\n\n"
        );
        s.push_str("| benchmark |");
        for e in &self.engines {
            s.push_str(&format!(" {e} ops/s |"));
        }
        for p in &peers {
            s.push_str(&format!(" cairndb/{p} |"));
        }
        if !peers.is_empty() {
            s.push_str(" cairndb/best peer |");
        }
        for e in &self.engines {
            s.push_str(&format!(" {e} P99 |"));
        }
        s.push('\n');
        let cols = self.engines.len() * 2 + peers.len() + usize::from(!peers.is_empty());
        s.push_str("|---|");
        for _ in 0..cols {
            s.push_str("---:|");
        }
        s.push('\n');
        for r in &self.rows {
            s.push_str(&format!("| {} |", r.bench));
            for e in &self.engines {
                match r.ops.get(e) {
                    Some(v) => s.push_str(&format!(" {v:.0} |")),
                    None => s.push_str(" - |"),
                }
            }
            let ours = r.ops.get("cairndb").copied();
            let mut best: Option<f64> = None;
            for p in &peers {
                let v = r.ops.get(*p).copied();
                if let Some(v) = v {
                    best = Some(best.map_or(v, |b: f64| b.max(v)));
                }
                s.push_str(&ratio(ours, v));
            }
            if !peers.is_empty() {
                s.push_str(&ratio(ours, best));
            }
            for e in &self.engines {
                match r.p99.get(e) {
                    Some(v) => s.push_str(&format!(" {v:.2} |")),
                    None => s.push_str(" - |"),
                }
            }
            s.push('\n');
        }
        s
    }
}

fn ratio(ours: Option<f64>, peer: Option<f64>) -> String {
    match (ours, peer) {
        (Some(a), Some(b)) if b > 0.0 => format!(" {:.2}x |", a / b),
        _ => " - |".to_string(),
    }
}

/// The most synced writes per second `threads` writers can make when each
/// waits for its own write + fdatasync: `threads` over the latency of one
/// 4 KiB write + fdatasync into preallocated, written space (the way the
/// WAL writes into its zero-filled region). Group commit can only reach it
/// by syncing every writer's write in one fdatasync. The latency is
/// probed before every round (`per_round`, in us).
struct SyncBound {
    threads: u32,
    per_round: Vec<f64>,
}

/// The writer threads of a command line that syncs its writes (`--sync=1`
/// or `--sync=true`; the last `--threads`, as in db_bench, 1 by default),
/// else `None`.
fn synced_writers(bench_args: &[String]) -> Option<u32> {
    let value = |flag: &str| {
        bench_args.iter().rev().find_map(|a| {
            a.trim_start_matches('-')
                .strip_prefix(flag)
                .and_then(|v| v.strip_prefix('='))
        })
    };
    if !matches!(value("sync"), Some("1" | "true")) {
        return None;
    }
    Some(value("threads").and_then(|t| t.parse().ok()).unwrap_or(1))
}

/// The bound for a command line that syncs its writes given the sync
/// latency probed before each round, else `None` (no synced writes, or
/// no probe).
fn sync_bound(bench_args: &[String], per_round: Vec<f64>) -> Option<SyncBound> {
    if per_round.is_empty() || per_round.iter().any(|us| us.is_nan() || *us <= 0.0) {
        return None;
    }
    let threads = synced_writers(bench_args)?;
    Some(SyncBound { threads, per_round })
}

impl SyncBound {
    /// The median of the probes.
    fn sync_micros(&self) -> f64 {
        median(self.per_round.clone()).unwrap_or(0.0)
    }

    /// The bound at the median probe.
    fn ops_per_sec(&self) -> f64 {
        f64::from(self.threads) * 1e6 / self.sync_micros()
    }

    /// Each write benchmark's share of the bound: per round, its ops/sec
    /// over the bound probed just before that round; the median of those.
    fn markdown(
        &self,
        table: &Table,
        results: &BTreeMap<String, BTreeMap<String, Vec<Parsed>>>,
    ) -> String {
        let mut s = format!(
            "Device bound for {} synced writer(s): {} / the latency of a 4 KiB write + fdatasync into a \
             preallocated, written file, probed before each round ({} probes, median {:.1} us, \
             range {:.1}-{:.1} us) = {:.0} ops/sec at the median. Each share is the median over \
             rounds of the round's ops/sec over the bound probed just before it.\n\n\
             | benchmark |",
            self.threads,
            self.threads,
            self.per_round.len(),
            self.sync_micros(),
            self.per_round.iter().copied().fold(f64::INFINITY, f64::min),
            self.per_round.iter().copied().fold(0.0, f64::max),
            self.ops_per_sec()
        );
        for e in &table.engines {
            s.push_str(&format!(" {e} share of the bound |"));
        }
        s.push_str("\n|---|");
        for _ in &table.engines {
            s.push_str("---:|");
        }
        s.push('\n');
        let writes = table.rows.iter().filter(|r| is_write_benchmark(&r.bench));
        for r in writes {
            s.push_str(&format!("| {} |", r.bench));
            for e in &table.engines {
                // Runs are kept in round order; a benchmark named k times in
                // a command line has k runs a round.
                let runs: &[Parsed] = results
                    .get(e)
                    .and_then(|b| b.get(&r.bench))
                    .map_or(&[], |v| v.as_slice());
                let per = (runs.len() / self.per_round.len()).max(1);
                let shares: Vec<f64> = runs
                    .iter()
                    .enumerate()
                    .filter_map(|(j, p)| {
                        let us = self.per_round.get(j / per)?;
                        Some(p.ops_per_sec * us / (f64::from(self.threads) * 1e6))
                    })
                    .collect();
                match median(shares) {
                    Some(m) => s.push_str(&format!(" {:.0}% |", 100.0 * m)),
                    None => s.push_str(" - |"),
                }
            }
            s.push('\n');
        }
        s
    }
}

/// Benchmarks whose operations are writes (the ones a sync bound applies to).
fn is_write_benchmark(name: &str) -> bool {
    name.starts_with("fill")
        || name.starts_with("overwrite")
        || matches!(
            name,
            "updaterandom" | "deleterandom" | "deleteseq" | "mergerandom"
        )
}

/// Device measurements (the model is the fio runs in the project's notes).
pub struct Device {
    seq_write_mb_s: f64,
    prealloc: Lat,
    append: Lat,
    rand_read_iops: f64,
    rand_read_direct: bool,
}

struct Lat {
    avg_us: f64,
    p99_us: f64,
    n: usize,
}

impl Device {
    fn text(&self) -> String {
        format!(
            "sequential write (1 MiB writes, 256 MiB, fdatasync at end): {:.1} MB/s\n\
             4 KiB write + fdatasync, preallocated file: avg {:.1} us, p99 {:.1} us ({} ops, {:.0} IOPS)\n\
             4 KiB write + fdatasync, appending:         avg {:.1} us, p99 {:.1} us ({} ops, {:.0} IOPS)\n\
             4 KiB random read ({}): {:.0} IOPS\n",
            self.seq_write_mb_s,
            self.prealloc.avg_us,
            self.prealloc.p99_us,
            self.prealloc.n,
            1e6 / self.prealloc.avg_us.max(1e-9),
            self.append.avg_us,
            self.append.p99_us,
            self.append.n,
            1e6 / self.append.avg_us.max(1e-9),
            if self.rand_read_direct {
                "O_DIRECT, 1 thread"
            } else {
                "buffered: O_DIRECT refused here, page cache dropped by fadvise"
            },
            self.rand_read_iops
        )
    }
}

fn io(e: std::io::Error, what: &str) -> String {
    format!("device check: {what}: {e}")
}

fn lat_of(mut v: Vec<f64>) -> Lat {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Lat {
        avg_us: v.iter().sum::<f64>() / n.max(1) as f64,
        p99_us: v
            .get((n * 99 / 100).min(n.saturating_sub(1)))
            .copied()
            .unwrap_or(0.0),
        n,
    }
}

/// Latency of a 4 KiB write + fdatasync into a preallocated, written and
/// synced file under `dir`, at consecutive offsets as the WAL writes into
/// its zero-filled region: `ops` of them, or as many as 5 s allow. Run
/// before the sequential write of [`measure_device`], on a file of its
/// own: right after that 256 MiB write, the device was still busy with
/// it and the same probe took 1.4-2.2x as long (109-169 us against 77 us
/// from fio).
fn sync_probe(dir: &Path, ops: usize) -> Result<Lat, String> {
    use std::os::unix::fs::FileExt;
    let block = vec![0xa5u8; 4096];
    let path = dir.join("device-prealloc");
    let blocks: u64 = 4096; // 16 MiB
    let f = File::create(&path).map_err(|e| io(e, "create"))?;
    for b in 0..blocks {
        f.write_all_at(&block, b * 4096)
            .map_err(|e| io(e, "pwrite"))?;
    }
    f.sync_all().map_err(|e| io(e, "fsync"))?;
    let mut lat = Vec::new();
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    while lat.len() < ops && Instant::now() < deadline {
        let off = (lat.len() as u64 % blocks) * 4096;
        let t = Instant::now();
        f.write_all_at(&block, off).map_err(|e| io(e, "pwrite"))?;
        f.sync_data().map_err(|e| io(e, "fdatasync"))?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    drop(f);
    let _ = std::fs::remove_file(&path);
    Ok(lat_of(lat))
}

/// Measures the device under `dir` with plain file I/O.
pub fn measure_device(dir: &Path) -> Result<Device, String> {
    let prealloc = sync_probe(dir, 2000)?;
    let block = vec![0xa5u8; 4096];

    let chunk = vec![0x5au8; 1 << 20];
    // Sequential write.
    let p = dir.join("device-seq");
    let mut f = File::create(&p).map_err(|e| io(e, "create"))?;
    let t = Instant::now();
    for _ in 0..256 {
        f.write_all(&chunk).map_err(|e| io(e, "write"))?;
    }
    f.sync_data().map_err(|e| io(e, "fdatasync"))?;
    let seq = 256.0 * 1048576.0 / 1e6 / t.elapsed().as_secs_f64();
    drop(f);
    let blocks = 256 * 256; // 4 KiB blocks in 256 MiB

    // Appending 4 KiB + fdatasync.
    let pa = dir.join("device-append");
    let mut f = File::create(&pa).map_err(|e| io(e, "create"))?;
    let mut lat = Vec::new();
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    while lat.len() < 2000 && Instant::now() < deadline {
        let t = Instant::now();
        f.write_all(&block).map_err(|e| io(e, "write"))?;
        f.sync_data().map_err(|e| io(e, "fdatasync"))?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let append = lat_of(lat);
    drop(f);
    let _ = std::fs::remove_file(&pa);

    // 4 KiB random reads, O_DIRECT when the file system allows it.
    let (iops, direct) = rand_read(&p, blocks)?;
    let _ = std::fs::remove_file(&p);
    Ok(Device {
        seq_write_mb_s: seq,
        prealloc,
        append,
        rand_read_iops: iops,
        rand_read_direct: direct,
    })
}

fn rand_read(p: &Path, blocks: u64) -> Result<(f64, bool), String> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    const O_DIRECT: i32 = 0o40000; // x86_64 Linux
    let (f, direct) = match OpenOptions::new().read(true).custom_flags(O_DIRECT).open(p) {
        Ok(f) => (f, true),
        Err(_) => (File::open(p).map_err(|e| io(e, "open"))?, false),
    };
    // An aligned buffer for O_DIRECT.
    let layout = std::alloc::Layout::from_size_align(4096, 4096).map_err(|e| e.to_string())?;
    struct Buf(*mut u8, std::alloc::Layout);
    impl Drop for Buf {
        fn drop(&mut self) {
            // SAFETY: allocated below with this layout.
            unsafe { std::alloc::dealloc(self.0, self.1) }
        }
    }
    // SAFETY: non-zero size layout.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err("device check: out of memory".into());
    }
    let buf = Buf(ptr, layout);
    // SAFETY: 4096 bytes we own, exclusively borrowed here.
    let slice = unsafe { std::slice::from_raw_parts_mut(buf.0, 4096) };
    let mut rng = crate::bench::keygen::Mt64::new(11);
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed().as_secs_f64() < 3.0 {
        let off = (rng.next_u64() % blocks) * 4096;
        match f.read_at(slice, off) {
            Ok(_) => n += 1,
            Err(e) if direct && n == 0 => {
                drop(buf);
                let _ = e;
                return rand_read_buffered(p, blocks);
            }
            Err(e) => return Err(io(e, "pread")),
        }
    }
    Ok((n as f64 / t.elapsed().as_secs_f64(), direct))
}

fn rand_read_buffered(p: &Path, blocks: u64) -> Result<(f64, bool), String> {
    use std::os::unix::fs::FileExt;
    let f = File::open(p).map_err(|e| io(e, "open"))?;
    let mut b = vec![0u8; 4096];
    let mut rng = crate::bench::keygen::Mt64::new(11);
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed().as_secs_f64() < 3.0 {
        let off = (rng.next_u64() % blocks) * 4096;
        f.read_at(&mut b, off).map_err(|e| io(e, "pread"))?;
        n += 1;
    }
    Ok((n as f64 / t.elapsed().as_secs_f64(), false))
}

mod chart {
    //! The bar chart: ops/sec of each engine relative to the fastest engine
    //! on each benchmark, drawn with plotters to SVG and PNG. Text uses
    //! DejaVu Sans from Debian's fonts-dejavu-core, loaded at run time.

    use std::path::Path;

    use plotters::prelude::*;

    use super::Table;

    const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

    fn load_font() -> Result<(), String> {
        let bytes = std::fs::read(FONT).map_err(|e| {
            format!("{FONT}: {e} (apt-get install -y fonts-dejavu-core for chart text)")
        })?;
        let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, leaked)
            .map_err(|_| format!("{FONT}: not a usable font"))
    }

    pub fn draw(t: &Table, out: &Path) -> Result<(), String> {
        load_font()?;
        let svg = out.join("compare.svg");
        let png = out.join("compare.png");
        {
            let root = SVGBackend::new(&svg, (1100, 560)).into_drawing_area();
            plot(t, root)?;
        }
        {
            let root = BitMapBackend::new(&png, (1100, 560)).into_drawing_area();
            plot(t, root)?;
        }
        Ok(())
    }

    fn color_of(engine: &str) -> RGBColor {
        match engine {
            "cairndb" => RGBColor(214, 39, 40),
            "rocksdb" => RGBColor(31, 119, 180),
            "rocksdb-inproc" => RGBColor(158, 202, 225),
            "leveldb" => RGBColor(44, 160, 44),
            "leveldb-inproc" => RGBColor(161, 217, 155),
            _ => RGBColor(127, 127, 127),
        }
    }

    fn plot<DB: DrawingBackend>(
        t: &Table,
        root: DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        root.fill(&WHITE).map_err(e)?;
        let n = t.rows.len().max(1);
        let k = t.engines.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "ops/sec relative to the fastest engine per benchmark (1.0 = fastest)",
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..n as f64, 0f64..1.3f64)
            .map_err(e)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("relative ops/sec")
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(e)?;
        for (ei, eng) in t.engines.iter().enumerate() {
            let color = color_of(eng);
            let bars: Vec<Rectangle<(f64, f64)>> = t
                .rows
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    let best = r.ops.values().cloned().fold(0.0, f64::max);
                    let v = r.ops.get(eng)?;
                    if best <= 0.0 {
                        return None;
                    }
                    let w = 0.8 / k as f64;
                    let x0 = i as f64 + 0.1 + w * ei as f64;
                    Some(Rectangle::new(
                        [(x0, 0.0), (x0 + w * 0.9, v / best)],
                        color.filled(),
                    ))
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(e)?
                .label(eng.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(e)?;
        for (i, r) in t.rows.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            let style = TextStyle::from(("sans-serif", 14).into_font()).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Top,
                ),
            );
            root.draw(&Text::new(r.bench.clone(), (px, py + 8), style))
                .map_err(e)?;
        }
        root.present().map_err(e)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_ratios() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        let mut results: BTreeMap<String, BTreeMap<String, Vec<Parsed>>> = BTreeMap::new();
        for (e, v) in [("cairndb", 200.0), ("rocksdb", 100.0), ("leveldb", 400.0)] {
            results.entry(e.into()).or_default().insert(
                "fillrandom".into(),
                vec![Parsed {
                    name: "fillrandom".into(),
                    ops_per_sec: v,
                    p99: Some(5.0),
                    ..Default::default()
                }],
            );
        }
        let engines: Vec<String> = ["rocksdb", "leveldb", "cairndb"].map(String::from).to_vec();
        let t = Table::build(&["fillrandom".into()], &engines, &results);
        let md = t.markdown(1);
        assert!(
            md.contains("| fillrandom | 100 | 400 | 200 | 2.00x | 0.50x | 0.50x |"),
            "{md}"
        );
    }

    #[test]
    fn sync_bound_is_threads_over_one_sync_and_tabled_for_writes() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Not synced: no bound.
        assert!(sync_bound(&args(&["--threads=16"]), vec![100.0]).is_none());
        assert!(sync_bound(&args(&["--sync=0", "--threads=16"]), vec![100.0]).is_none());
        // No probe, or a probe that measured nothing: no bound.
        assert!(sync_bound(&args(&["--sync=1"]), vec![]).is_none());
        assert!(sync_bound(&args(&["--sync=1"]), vec![100.0, 0.0]).is_none());
        let b = sync_bound(&args(&["--threads=16", "--sync=1"]), vec![200.0]).unwrap();
        assert_eq!(b.threads, 16);
        assert!((b.ops_per_sec() - 80_000.0).abs() < 1e-6);
        // The last --threads wins, as in db_bench; one thread by default.
        let b = sync_bound(
            &args(&["--sync=true", "--threads=2", "--threads=4"]),
            vec![100.0],
        )
        .unwrap();
        assert_eq!(b.threads, 4);
        assert_eq!(
            sync_bound(&args(&["--sync=1"]), vec![100.0])
                .unwrap()
                .threads,
            1
        );

        let mut results: BTreeMap<String, BTreeMap<String, Vec<Parsed>>> = BTreeMap::new();
        for (e, bench, v) in [
            ("cairndb", "fillrandom", 40_000.0),
            ("rocksdb", "fillrandom", 20_000.0),
            ("cairndb", "readrandom", 900_000.0),
        ] {
            results.entry(e.into()).or_default().insert(
                bench.into(),
                vec![Parsed {
                    name: bench.into(),
                    ops_per_sec: v,
                    ..Default::default()
                }],
            );
        }
        let engines: Vec<String> = ["rocksdb", "cairndb"].map(String::from).to_vec();
        let t = Table::build(
            &["fillrandom".into(), "readrandom".into()],
            &engines,
            &results,
        );
        let b = sync_bound(&args(&["--sync=1", "--threads=16"]), vec![200.0]).unwrap();
        let md = b.markdown(&t, &results);
        assert!(md.contains("= 80000 ops/sec"), "{md}");
        assert!(md.contains("| fillrandom | 25% | 50% |"), "{md}");
        assert!(!md.contains("readrandom"), "reads have no sync bound: {md}");
    }

    /// Each round's writes are set against the probe taken just before
    /// that round, and the share is the median over rounds: a device twice
    /// as slow in one round halves that round's bound, not every round's.
    #[test]
    fn sync_bound_share_uses_each_rounds_own_probe() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut results: BTreeMap<String, BTreeMap<String, Vec<Parsed>>> = BTreeMap::new();
        // Rounds probed at 100, 200 and 100 us: bounds 160K, 80K, 160K.
        let ops = [80_000.0, 60_000.0, 40_000.0];
        results.entry("cairndb".into()).or_default().insert(
            "fillrandom".into(),
            ops.iter()
                .map(|&v| Parsed {
                    name: "fillrandom".into(),
                    ops_per_sec: v,
                    ..Default::default()
                })
                .collect(),
        );
        let engines = vec!["cairndb".to_string()];
        let t = Table::build(&["fillrandom".into()], &engines, &results);
        let b = sync_bound(
            &args(&["--sync=1", "--threads=16"]),
            vec![100.0, 200.0, 100.0],
        )
        .unwrap();
        // Shares 50%, 75%, 25%: median 50%. Against the median probe alone
        // (100 us) the median ops (60K) would read 38%.
        let md = b.markdown(&t, &results);
        assert!(md.contains("| fillrandom | 50% |"), "{md}");
        assert!(md.contains("median 100.0 us, range 100.0-200.0 us"), "{md}");
        // A benchmark run twice a round maps its runs to rounds in order.
        let twice: Vec<Parsed> = [80_000.0, 80_000.0, 60_000.0, 60_000.0, 40_000.0, 40_000.0]
            .iter()
            .map(|&v| Parsed {
                name: "fillrandom".into(),
                ops_per_sec: v,
                ..Default::default()
            })
            .collect();
        results
            .get_mut("cairndb")
            .unwrap()
            .insert("fillrandom".into(), twice);
        let t = Table::build(&["fillrandom".into()], &engines, &results);
        let md = b.markdown(&t, &results);
        assert!(md.contains("| fillrandom | 50% |"), "{md}");
    }

    #[test]
    fn dirsize_lines_are_labelled_and_tabled() {
        let out = "fillfile     :       1.0 micros/op 10 ops/sec 1.000 seconds 10 operations;\n\
                   dirsize : 2097152 bytes in 3 files\n\
                   compact      :       1.0 micros/op 1 ops/sec 1.000 seconds 1 operations;\n\
                   dirsize : 1048576 bytes in 2 files\n";
        let v = dir_sizes(out);
        assert_eq!(
            v,
            vec![
                ("dirsize after fillfile".to_string(), 2097152),
                ("dirsize after compact".to_string(), 1048576)
            ]
        );
        let mut sizes: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
        for (e, b) in [("rocksdb", 4194304.0), ("cairndb", 1048576.0)] {
            sizes
                .entry(e.into())
                .or_default()
                .insert("dirsize after compact".into(), vec![b]);
        }
        let engines: Vec<String> = ["rocksdb", "cairndb"].map(String::from).to_vec();
        let m = size_medians(&["dirsize after compact".into()], &engines, &sizes);
        let md = sizes_markdown(&engines, &m);
        assert!(
            md.contains("| dirsize after compact | 4.00 | 1.00 | 0.25x |"),
            "{md}"
        );
    }

    #[test]
    fn file_workload_flags_pass_through() {
        let o = parse_opts(
            [
                "--engines=cairndb",
                "--benchmarks=fillfile,compact,dirsize,readfile",
                "--datafile=/x.tsv",
                "--keyfields=0,1",
                "--table_format=zip",
                "--zip_from_level=2",
            ]
            .map(String::from)
            .to_vec(),
        )
        .unwrap();
        assert_eq!(o.benchmarks, ["fillfile", "compact", "dirsize", "readfile"]);
        assert_eq!(o.bench_args.len(), 5);
    }

    #[test]
    fn compare_flags() {
        let o = parse_opts(
            [
                "--repeat=2",
                "--num=10",
                "--skip_device",
                "--engines=cairndb",
            ]
            .map(String::from)
            .to_vec(),
        )
        .unwrap();
        assert_eq!(o.repeat, 2);
        assert_eq!(o.bench_args, vec!["--num=10".to_string()]);
        assert!(parse_opts(vec!["--repeat=0".into()]).is_err());
        assert!(parse_opts(vec!["--db=/x".into()]).is_err());
        assert!(parse_opts(vec!["--bogus=1".into()]).is_err());
    }
}
