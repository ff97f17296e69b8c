//! `cairndb stress`: a db_stress-style load generator with an expected-state
//! oracle that survives the process being killed, and `--verify`, which
//! reopens the database and checks every key against that oracle.
//!
//! The key space is fixed (`--max_key`). The oracle is a file of one 8-byte
//! slot per key, written with `pwrite` (so it reaches the OS page cache, and
//! survives a SIGKILL, the moment each call returns). A slot holds two key
//! states, `committed` and `pending`; a state is `generation << 1 | deleted`
//! (0 = never written). Before a write the new state goes into `pending`;
//! after the database acknowledges it, into `committed` with `pending`
//! cleared. Values are derived from `(key, generation)`, so they are checked
//! without being stored. A batch is also recorded, before it is written, in
//! its thread's batch record (keys with old and new states), so `--verify`
//! can check that it is all-or-nothing.
//!
//! Promises checked by `--verify` after a SIGKILL: every acknowledged write
//! is there (each write group is handed to the OS before it is acknowledged,
//! whatever the sync mode), a key holds its committed state or, if a write was
//! in flight, the pending one, never anything else, and every in-flight batch
//! is wholly applied or wholly absent.
//!
//! Threads own disjoint keys (`key % threads`), so each thread can check its
//! own keys exactly while it runs (gets, scans, snapshots); values of other
//! threads' keys are checked for self-consistency.
//!
//! `--txn` runs another workload, bank transfers in transactions, with its
//! own oracle (`stress/txn.rs`).

mod txn;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairndb::{
    BlobCacheConfig, Db, FixedPrefix, Options, PrepopulateBlobCache, ReadOptions, WriteBatch,
    WriteOptions,
};
use clap::Parser;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[derive(Parser, Debug, Clone)]
#[command(
    name = "cairndb stress",
    rename_all = "snake_case",
    about = "Random concurrent load checked against an expected-state oracle that survives SIGKILL"
)]
struct StressArgs {
    /// Database directory.
    #[arg(long)]
    db: PathBuf,
    /// Oracle file (default: the database path with `.expected` appended).
    #[arg(long)]
    expected_state: Option<PathBuf>,
    /// Only reopen the database and check every key against the oracle.
    #[arg(long, default_value_t = false)]
    verify: bool,
    /// Number of keys (the oracle's size is fixed by the first run).
    #[arg(long, default_value_t = 100_000)]
    max_key: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Stop after this many seconds (0 = run until killed or --ops_per_thread).
    #[arg(long, default_value_t = 0)]
    duration: u64,
    /// Operations per thread (0 = unlimited).
    #[arg(long, default_value_t = 0)]
    ops_per_thread: u64,
    /// Maximum value filler size in bytes.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Percent of writes made with sync=true (the rest are acknowledged
    /// after reaching the OS, which is enough across a process kill).
    #[arg(long, default_value_t = 20)]
    sync_percent: u32,
    /// Maximum keys in one batch.
    #[arg(long, default_value_t = 8)]
    max_batch: usize,
    /// Memtable size (small, so that flushes and compactions happen often).
    #[arg(long, default_value_t = 256 << 10)]
    write_buffer_size: usize,
    /// Random seed (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Print an `ops N` progress line this often, in milliseconds.
    #[arg(long, default_value_t = 200)]
    progress_ms: u64,
    /// Skip the close-reopen-verify at the end of a load run.
    #[arg(long, default_value_t = false)]
    no_final_verify: bool,
    /// Run bank transfers in transactions instead (`stress/txn.rs`); with
    /// `--verify`, check such a database.
    #[arg(long, default_value_t = false)]
    txn: bool,
    /// With `--txn`: an `OptimisticTransactionDb` (default: `TransactionDb`).
    #[arg(long, default_value_t = false)]
    optimistic: bool,
    /// With `--txn`: number of accounts (fixed by the first run).
    #[arg(long, default_value_t = 64)]
    accounts: u64,
    /// Keep values of at least `--min_blob_size` bytes in blob files
    /// (`Options::enable_blob_files`), with blob garbage collection.
    #[arg(long, default_value_t = false)]
    enable_blob_files: bool,
    /// With `--enable_blob_files`: the smallest value kept in a blob file.
    #[arg(long, default_value_t = 64)]
    min_blob_size: u64,
    /// With `--enable_blob_files`: cache blob values in the block cache,
    /// filled by flushes too (`Options::blob_cache`,
    /// `prepopulate_blob_cache`). `--use_blob_cache=false` reads every
    /// value from its blob file.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    use_blob_cache: bool,
}

const MAGIC: &[u8; 8] = b"CAIRNORC";
const HEADER: u64 = 64;
/// Batch records, one per thread (at most this many threads).
const MAX_THREADS: usize = 64;
/// Keys per batch record.
const MAX_BATCH: usize = 16;
/// count (8) + MAX_BATCH * (key 8, old 4, new 4).
const REC_SIZE: u64 = 8 + MAX_BATCH as u64 * 16;
const SLOTS_AT: u64 = HEADER + MAX_THREADS as u64 * REC_SIZE;
const PREFIX_LEN: usize = 7;

/// The expected-state file.
pub struct Oracle {
    file: File,
}

/// One key's oracle slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Slot {
    /// The last acknowledged state.
    pub committed: u32,
    /// A state being written (0 = none).
    pub pending: u32,
}

impl Slot {
    fn encode(self) -> u64 {
        (self.committed as u64) << 32 | self.pending as u64
    }
    fn decode(v: u64) -> Slot {
        Slot {
            committed: (v >> 32) as u32,
            pending: v as u32,
        }
    }
    /// The generation the next write of this key uses.
    fn next_gen(self) -> u32 {
        (self.committed >> 1).max(self.pending >> 1) + 1
    }
}

impl Oracle {
    /// Opens the oracle at `path`, creating it for `max_key` keys if missing.
    pub fn open(path: &Path, max_key: u64) -> Result<Oracle, String> {
        let exists = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("open {}: {e}", path.display()))?;
        let err = |e: std::io::Error| format!("{}: {e}", path.display());
        if exists {
            let mut h = [0u8; 16];
            file.read_exact_at(&mut h, 0).map_err(err)?;
            if &h[..8] != MAGIC {
                return Err(format!("{}: not a stress oracle file", path.display()));
            }
            let mk = u64::from_le_bytes(h[8..16].try_into().unwrap());
            if mk != max_key {
                return Err(format!(
                    "{}: oracle was made for --max_key={mk}, not {max_key}",
                    path.display()
                ));
            }
        } else {
            file.set_len(SLOTS_AT + max_key * 8).map_err(err)?;
            let mut h = Vec::new();
            h.extend_from_slice(MAGIC);
            h.extend_from_slice(&max_key.to_le_bytes());
            file.write_all_at(&h, 0).map_err(err)?;
        }
        Ok(Oracle { file })
    }

    /// Reads key `k`'s slot.
    pub fn get(&self, k: u64) -> Slot {
        let mut b = [0u8; 8];
        self.file
            .read_exact_at(&mut b, SLOTS_AT + k * 8)
            .expect("read oracle slot");
        Slot::decode(u64::from_le_bytes(b))
    }

    fn set(&self, k: u64, s: Slot) {
        self.file
            .write_all_at(&s.encode().to_le_bytes(), SLOTS_AT + k * 8)
            .expect("write oracle slot");
    }

    /// Writes thread `t`'s in-flight batch record (key, old, new).
    fn set_batch(&self, t: usize, ops: &[(u64, u32, u32)]) {
        let mut b = Vec::with_capacity(REC_SIZE as usize);
        b.extend_from_slice(&(ops.len() as u64).to_le_bytes());
        for &(k, old, new) in ops {
            b.extend_from_slice(&k.to_le_bytes());
            b.extend_from_slice(&old.to_le_bytes());
            b.extend_from_slice(&new.to_le_bytes());
        }
        self.file
            .write_all_at(&b, HEADER + t as u64 * REC_SIZE)
            .expect("write oracle batch record");
    }

    fn clear_batch(&self, t: usize) {
        self.file
            .write_all_at(&0u64.to_le_bytes(), HEADER + t as u64 * REC_SIZE)
            .expect("write oracle batch record");
    }

    /// Every recorded in-flight batch (records that fail to parse are skipped).
    fn batches(&self) -> Vec<Vec<(u64, u32, u32)>> {
        let mut out = Vec::new();
        for t in 0..MAX_THREADS {
            let mut b = vec![0u8; REC_SIZE as usize];
            if self
                .file
                .read_exact_at(&mut b, HEADER + t as u64 * REC_SIZE)
                .is_err()
            {
                continue;
            }
            let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
            if n == 0 || n > MAX_BATCH {
                continue;
            }
            let mut ops = Vec::new();
            for i in 0..n {
                let o = 8 + i * 16;
                ops.push((
                    u64::from_le_bytes(b[o..o + 8].try_into().unwrap()),
                    u32::from_le_bytes(b[o + 8..o + 12].try_into().unwrap()),
                    u32::from_le_bytes(b[o + 12..o + 16].try_into().unwrap()),
                ));
            }
            out.push(ops);
        }
        out
    }
}

/// The key bytes of key number `k`.
pub fn key_bytes(k: u64) -> Vec<u8> {
    format!("{k:010}").into_bytes()
}

fn parse_key(b: &[u8]) -> Option<u64> {
    if b.len() != 10 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^ (x >> 33)
}

/// The value written for key `k` at generation `gen`: a header naming both,
/// then a deterministic filler of 0..=`max_fill` bytes.
pub fn value_for(k: u64, gen: u32, max_fill: usize) -> Vec<u8> {
    let mut v = format!("{k:010}.{gen:010}.").into_bytes();
    let h = mix(k << 32 ^ gen as u64);
    let n = (h % (max_fill as u64 + 1)) as usize;
    let mut x = h;
    for _ in 0..n {
        x = mix(x.wrapping_add(1));
        v.push(b'a' + (x % 26) as u8);
    }
    v
}

/// The value a state expects (None for absent).
fn expected_value(k: u64, state: u32, max_fill: usize) -> Option<Vec<u8>> {
    if state == 0 || state & 1 == 1 {
        None
    } else {
        Some(value_for(k, state >> 1, max_fill))
    }
}

/// The generation a value claims, if it is a well-formed value of key `k`.
fn value_gen(k: u64, v: &[u8], max_fill: usize) -> Option<u32> {
    if v.len() < 22 || v[10] != b'.' || v[21] != b'.' {
        return None;
    }
    if parse_key(&v[..10]) != Some(k) {
        return None;
    }
    let gen: u32 = std::str::from_utf8(&v[11..21]).ok()?.parse().ok()?;
    (value_for(k, gen, max_fill) == v).then_some(gen)
}

fn describe(state: u32) -> String {
    match state {
        0 => "absent (never written)".into(),
        s if s & 1 == 1 => format!("deleted at gen {}", s >> 1),
        s => format!("value gen {}", s >> 1),
    }
}

fn describe_found(k: u64, v: &Option<Vec<u8>>, max_fill: usize) -> String {
    match v {
        None => "absent".into(),
        Some(v) => match value_gen(k, v, max_fill) {
            Some(g) => format!("value gen {g}"),
            None => format!("a foreign value {:?}", String::from_utf8_lossy(v)),
        },
    }
}

fn db_options(a: &StressArgs) -> Options {
    Options {
        write_buffer_size: a.write_buffer_size,
        max_write_buffer_number: 3,
        level0_file_num_compaction_trigger: 4,
        level0_slowdown_writes_trigger: 12,
        level0_stop_writes_trigger: 20,
        max_bytes_for_level_base: (a.write_buffer_size as u64) * 4,
        target_file_size_base: (a.write_buffer_size as u64) / 2,
        block_size: 1024,
        block_cache_size: 1 << 20,
        prefix_extractor: Some(Arc::new(FixedPrefix::new(PREFIX_LEN))),
        enable_blob_files: a.enable_blob_files,
        min_blob_size: a.min_blob_size,
        blob_file_size: (a.write_buffer_size as u64).max(1 << 10),
        enable_blob_garbage_collection: a.enable_blob_files,
        blob_garbage_collection_age_cutoff: 0.5,
        blob_garbage_collection_force_threshold: 0.5,
        blob_cache: if a.use_blob_cache {
            BlobCacheConfig::SharedWithBlockCache
        } else {
            BlobCacheConfig::Disabled
        },
        prepopulate_blob_cache: if a.use_blob_cache {
            PrepopulateBlobCache::FlushOnly
        } else {
            PrepopulateBlobCache::Disable
        },
        ..Options::default()
    }
}

struct Shared {
    db: Db,
    oracle: Oracle,
    args: StressArgs,
    stop: AtomicBool,
    ops: AtomicU64,
    failures: Mutex<Vec<String>>,
}

impl Shared {
    fn fail(&self, msg: String) {
        eprintln!("VIOLATION: {msg}");
        let mut f = self.failures.lock().unwrap();
        f.push(msg);
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A key owned by thread `t`.
fn own_key(rng: &mut SmallRng, t: usize, threads: usize, max_key: u64) -> u64 {
    let per = max_key.div_ceil(threads as u64);
    loop {
        let k = rng.gen_range(0..per) * threads as u64 + t as u64;
        if k < max_key {
            return k;
        }
    }
}

fn worker(sh: &Shared, t: usize, seed: u64) {
    let a = &sh.args;
    let mut rng = SmallRng::seed_from_u64(seed ^ mix(t as u64 + 1));
    let mut done = 0u64;
    while !sh.stop.load(Ordering::Relaxed) {
        if a.ops_per_thread > 0 && done >= a.ops_per_thread {
            break;
        }
        let r = rng.gen_range(0..1000);
        let res = match r {
            0..=399 => write_op(sh, t, &mut rng, 1, false),
            400..=499 => write_op(sh, t, &mut rng, 1, true),
            500..=649 => {
                let n = rng.gen_range(2..=a.max_batch.clamp(2, MAX_BATCH));
                write_op(sh, t, &mut rng, n, false)
            }
            650..=849 => get_op(sh, t, &mut rng),
            850..=909 => scan_op(sh, t, &mut rng, false),
            910..=959 => scan_op(sh, t, &mut rng, true),
            960..=997 => snapshot_op(sh, t, &mut rng),
            998 => sh.db.flush().map_err(|e| format!("flush: {e}")),
            _ => {
                let k = rng.gen_range(0..a.max_key);
                let (b, e) = (key_bytes(k), key_bytes((k + 2000).min(a.max_key)));
                sh.db
                    .compact_range(Some(&b), Some(&e))
                    .map_err(|e| format!("compact_range: {e}"))
            }
        };
        if let Err(e) = res {
            sh.fail(format!("thread {t}: {e}"));
            return;
        }
        done += 1;
        sh.ops.fetch_add(1, Ordering::Relaxed);
    }
}

/// Writes `n` distinct own keys (puts, or deletes when `delete`; a batch
/// mixes both) as one batch, recording it in the oracle around the write.
fn write_op(
    sh: &Shared,
    t: usize,
    rng: &mut SmallRng,
    n: usize,
    delete: bool,
) -> Result<(), String> {
    let a = &sh.args;
    let mut keys: Vec<u64> = Vec::with_capacity(n);
    while keys.len() < n {
        let k = own_key(rng, t, a.threads, a.max_key);
        if !keys.contains(&k) {
            keys.push(k);
        }
        if keys.len() as u64 >= a.max_key.div_ceil(a.threads as u64) {
            break;
        }
    }
    let mut ops = Vec::with_capacity(keys.len());
    let mut batch = WriteBatch::new();
    for &k in &keys {
        let s = sh.oracle.get(k);
        let del = if n == 1 { delete } else { rng.gen_ratio(1, 5) };
        let new = s.next_gen() << 1 | del as u32;
        ops.push((k, s.committed, new));
        if del {
            batch.delete(key_bytes(k));
        } else {
            batch.put(key_bytes(k), value_for(k, new >> 1, a.value_size));
        }
    }
    // Record the intent before the write.
    sh.oracle.set_batch(t, &ops);
    for &(k, old, new) in &ops {
        sh.oracle.set(
            k,
            Slot {
                committed: old,
                pending: new,
            },
        );
    }
    let wo = WriteOptions {
        sync: rng.gen_range(0..100) < a.sync_percent,
        ..Default::default()
    };
    sh.db
        .write(&wo, batch)
        .map_err(|e| format!("write of {} keys: {e}", ops.len()))?;
    for &(k, _, new) in &ops {
        sh.oracle.set(
            k,
            Slot {
                committed: new,
                pending: 0,
            },
        );
    }
    sh.oracle.clear_batch(t);
    Ok(())
}

fn check_own(sh: &Shared, k: u64, found: &Option<Vec<u8>>, what: &str) -> Result<(), String> {
    let s = sh.oracle.get(k);
    let want = expected_value(k, s.committed, sh.args.value_size);
    if *found != want {
        sh.fail(format!(
            "{what}: key {k} expected {} found {}",
            describe(s.committed),
            describe_found(k, found, sh.args.value_size)
        ));
    }
    Ok(())
}

fn get_op(sh: &Shared, t: usize, rng: &mut SmallRng) -> Result<(), String> {
    let a = &sh.args;
    if rng.gen_bool(0.8) {
        let k = own_key(rng, t, a.threads, a.max_key);
        let v = sh
            .db
            .get(&ReadOptions::default(), &key_bytes(k))
            .map_err(|e| format!("get: {e}"))?;
        check_own(sh, k, &v, "get")
    } else {
        // Another thread's key: only self-consistency can be checked.
        let k = rng.gen_range(0..a.max_key);
        let v = sh
            .db
            .get(&ReadOptions::default(), &key_bytes(k))
            .map_err(|e| format!("get: {e}"))?;
        if let Some(v) = v {
            if value_gen(k, &v, a.value_size).is_none() {
                sh.fail(format!(
                    "get: key {k} holds a foreign value {:?}",
                    String::from_utf8_lossy(&v)
                ));
            }
        }
        Ok(())
    }
}

/// A range scan (or a prefix scan with `prefix_same_as_start`) of up to 100
/// entries: keys strictly ascending, every value self-consistent, and the
/// thread's own keys in the covered range exactly as the oracle says.
fn scan_op(sh: &Shared, t: usize, rng: &mut SmallRng, prefix: bool) -> Result<(), String> {
    let a = &sh.args;
    let start = rng.gen_range(0..a.max_key);
    let sk = key_bytes(start);
    let ro = ReadOptions {
        prefix_same_as_start: prefix,
        ..Default::default()
    };
    let mut it = sh.db.iter(&ro).map_err(|e| format!("iter: {e}"))?;
    it.seek(&sk);
    let mut seen = Vec::new();
    let mut last: Option<Vec<u8>> = None;
    while it.valid() && seen.len() < 100 {
        let key = it.key().to_vec();
        if let Some(l) = &last {
            if *l >= key {
                sh.fail(format!(
                    "scan: keys out of order: {:?} then {:?}",
                    String::from_utf8_lossy(l),
                    String::from_utf8_lossy(&key)
                ));
                return Ok(());
            }
        }
        if prefix && key[..PREFIX_LEN] != sk[..PREFIX_LEN] {
            sh.fail(format!(
                "prefix scan from {start} returned {:?} of another prefix",
                String::from_utf8_lossy(&key)
            ));
            return Ok(());
        }
        let Some(k) = parse_key(&key) else {
            sh.fail(format!(
                "scan: foreign key {:?}",
                String::from_utf8_lossy(&key)
            ));
            return Ok(());
        };
        if value_gen(k, it.value(), a.value_size).is_none() {
            sh.fail(format!("scan: key {k} holds a foreign value"));
            return Ok(());
        }
        seen.push((k, it.value().to_vec()));
        last = Some(key);
        it.next();
    }
    it.status().map_err(|e| format!("scan: {e}"))?;
    // The covered range: [start, last seen] if stopped early, else to the end
    // (of the prefix for a prefix scan).
    let end = if seen.len() >= 100 {
        seen.last().map(|x| x.0).unwrap_or(start)
    } else if prefix {
        let p: u64 = std::str::from_utf8(&sk[..PREFIX_LEN])
            .unwrap()
            .parse()
            .unwrap();
        let span = 10u64.pow((10 - PREFIX_LEN) as u32);
        ((p + 1) * span - 1).min(a.max_key - 1)
    } else {
        a.max_key - 1
    };
    let mut i = 0;
    let first_own =
        start + ((t as u64 + a.threads as u64 - start % a.threads as u64) % a.threads as u64);
    let mut k = first_own;
    while k <= end {
        while i < seen.len() && seen[i].0 < k {
            i += 1;
        }
        let found = if i < seen.len() && seen[i].0 == k {
            Some(seen[i].1.clone())
        } else {
            None
        };
        check_own(sh, k, &found, if prefix { "prefix scan" } else { "scan" })?;
        k += a.threads as u64;
    }
    Ok(())
}

/// Takes a snapshot, remembers a few own keys' states, overwrites one of
/// them, and checks that reads through the snapshot still see the old states.
fn snapshot_op(sh: &Shared, t: usize, rng: &mut SmallRng) -> Result<(), String> {
    let a = &sh.args;
    let snap = sh.db.snapshot();
    let keys: Vec<u64> = (0..4)
        .map(|_| own_key(rng, t, a.threads, a.max_key))
        .collect();
    let states: Vec<u32> = keys.iter().map(|&k| sh.oracle.get(k).committed).collect();
    write_op(sh, t, rng, 1, false)?;
    let ro = ReadOptions {
        snapshot: Some(snap),
        ..Default::default()
    };
    for (&k, &s) in keys.iter().zip(&states) {
        let v = sh
            .db
            .get(&ro, &key_bytes(k))
            .map_err(|e| format!("snapshot get: {e}"))?;
        if v != expected_value(k, s, a.value_size) {
            sh.fail(format!(
                "snapshot read: key {k} expected {} found {}",
                describe(s),
                describe_found(k, &v, a.value_size)
            ));
        }
    }
    Ok(())
}

/// What `verify` found.
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Keys checked.
    pub keys: u64,
    /// Keys that held a pending (in-flight) state's value.
    pub pending_applied: u64,
    /// Keys whose in-flight write had not been applied.
    pub pending_dropped: u64,
    /// In-flight batches checked for atomicity.
    pub batches: u64,
    /// Time to open (recover) the database.
    pub recovery: Duration,
    /// Everything wrong.
    pub violations: Vec<String>,
}

/// Reopens the database, checks every key against the oracle, checks
/// in-flight batches for atomicity, and then settles the oracle to what was
/// found (so a following run starts from a clean state).
fn verify(a: &StressArgs, oracle: &Oracle) -> Result<VerifyReport, String> {
    let mut rep = VerifyReport::default();
    let t0 = Instant::now();
    let db = Db::open(&a.db, db_options(a)).map_err(|e| format!("reopen: {e}"))?;
    rep.recovery = t0.elapsed();
    let ro = ReadOptions::default();
    let mut found_state = vec![0u32; a.max_key as usize];
    let vio = |rep: &mut VerifyReport, s: String| {
        if rep.violations.len() < 50 {
            eprintln!("VIOLATION: {s}");
        }
        rep.violations.push(s);
    };
    for k in 0..a.max_key {
        let s = oracle.get(k);
        let v = db
            .get(&ro, &key_bytes(k))
            .map_err(|e| format!("get key {k}: {e}"))?;
        rep.keys += 1;
        let ok_committed = v == expected_value(k, s.committed, a.value_size);
        let ok_pending = s.pending != 0 && v == expected_value(k, s.pending, a.value_size);
        if ok_committed {
            found_state[k as usize] = s.committed;
            if s.pending != 0 {
                rep.pending_dropped += 1;
            }
        } else if ok_pending {
            found_state[k as usize] = s.pending;
            rep.pending_applied += 1;
        } else {
            vio(
                &mut rep,
                format!(
                    "key {k}: expected {}{} found {}",
                    describe(s.committed),
                    if s.pending != 0 {
                        format!(" or (in flight) {}", describe(s.pending))
                    } else {
                        String::new()
                    },
                    describe_found(k, &v, a.value_size)
                ),
            );
            found_state[k as usize] = s.committed;
        }
    }
    // Batches are all-or-nothing.
    for ops in oracle.batches() {
        rep.batches += 1;
        let mut applied = Vec::new();
        for &(k, old, new) in &ops {
            if k >= a.max_key {
                continue;
            }
            let v = db
                .get(&ro, &key_bytes(k))
                .map_err(|e| format!("get key {k}: {e}"))?;
            let is_new = v == expected_value(k, new, a.value_size);
            let is_old = v == expected_value(k, old, a.value_size);
            if is_new && !is_old {
                applied.push(true);
            } else if is_old && !is_new {
                applied.push(false);
            }
        }
        if applied.iter().any(|&x| x) && applied.iter().any(|&x| !x) {
            vio(
                &mut rep,
                format!(
                    "batch of keys {:?} is partly applied ({applied:?})",
                    ops.iter().map(|o| o.0).collect::<Vec<_>>()
                ),
            );
        }
    }
    // A full scan: ascending keys, nothing outside the key space, and exactly
    // the keys the point reads found.
    let mut it = db.iter(&ro).map_err(|e| format!("iter: {e}"))?;
    it.seek_to_first();
    let mut next_expected = 0u64;
    let mut last: Option<u64> = None;
    while it.valid() {
        match parse_key(it.key()) {
            Some(k) if k < a.max_key && !matches!(last, Some(l) if l >= k) => {
                for m in next_expected..k {
                    if expected_value(m, found_state[m as usize], a.value_size).is_some() {
                        vio(&mut rep, format!("scan skipped key {m}, which get found"));
                    }
                }
                let want = expected_value(k, found_state[k as usize], a.value_size);
                if want.as_deref() != Some(it.value()) {
                    vio(&mut rep, format!("scan: key {k} differs from get"));
                }
                next_expected = k + 1;
                last = Some(k);
            }
            _ => vio(
                &mut rep,
                format!(
                    "scan: unexpected key {:?}",
                    String::from_utf8_lossy(it.key())
                ),
            ),
        }
        it.next();
    }
    it.status().map_err(|e| format!("scan: {e}"))?;
    drop(it);
    for m in next_expected..a.max_key {
        if expected_value(m, found_state[m as usize], a.value_size).is_some() {
            vio(&mut rep, format!("scan skipped key {m}, which get found"));
        }
    }
    if rep.violations.is_empty() {
        // Settle: what is there now is what is committed.
        for (k, &st) in found_state.iter().enumerate() {
            let s = oracle.get(k as u64);
            if s.pending != 0 || s.committed != st {
                oracle.set(
                    k as u64,
                    Slot {
                        committed: st,
                        pending: 0,
                    },
                );
            }
        }
        for t in 0..MAX_THREADS {
            oracle.clear_batch(t);
        }
        oracle
            .file
            .sync_data()
            .map_err(|e| format!("sync oracle: {e}"))?;
    }
    db.close().map_err(|e| format!("close: {e}"))?;
    Ok(rep)
}

fn print_verify(rep: &VerifyReport) {
    println!(
        "verify: keys {} pending_applied {} pending_dropped {} batches {} recovery_ms {:.1} violations {}",
        rep.keys,
        rep.pending_applied,
        rep.pending_dropped,
        rep.batches,
        rep.recovery.as_secs_f64() * 1e3,
        rep.violations.len()
    );
}

/// Entry point: `args` are the flags after `stress`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    let Some(a) = crate::parse_args::<StressArgs>("stress", args)? else {
        return Ok(());
    };
    if a.threads == 0 || a.threads > MAX_THREADS {
        return Err(format!("--threads must be 1..={MAX_THREADS}"));
    }
    let oracle_path = a.expected_state.clone().unwrap_or_else(|| {
        let mut s = a.db.as_os_str().to_owned();
        s.push(".expected");
        PathBuf::from(s)
    });
    if a.txn {
        return txn::main(a, &oracle_path);
    }
    if a.max_key == 0 || a.max_key >= 10u64.pow(10) {
        return Err("--max_key must be 1..10^10".into());
    }
    let oracle = Oracle::open(&oracle_path, a.max_key)?;
    if a.verify {
        let rep = verify(&a, &oracle)?;
        print_verify(&rep);
        if !rep.violations.is_empty() {
            return Err(format!("{} violations", rep.violations.len()));
        }
        return Ok(());
    }
    // A previous run may have been killed: settle the oracle first.
    if a.db.exists() {
        let rep = verify(&a, &oracle)?;
        if !rep.violations.is_empty() {
            print_verify(&rep);
            return Err(format!(
                "{} violations before starting; run --verify for details",
                rep.violations.len()
            ));
        }
    }
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    println!("seed {seed}");
    let db = Db::open(&a.db, db_options(&a)).map_err(|e| format!("open: {e}"))?;
    let sh = Arc::new(Shared {
        db,
        oracle,
        args: a.clone(),
        stop: AtomicBool::new(false),
        ops: AtomicU64::new(0),
        failures: Mutex::new(Vec::new()),
    });
    let t0 = Instant::now();
    let handles: Vec<_> = (0..a.threads)
        .map(|t| {
            let sh = sh.clone();
            std::thread::spawn(move || worker(&sh, t, seed))
        })
        .collect();
    let mut out = std::io::stdout();
    loop {
        std::thread::sleep(Duration::from_millis(a.progress_ms.max(1)));
        let _ = writeln!(out, "ops {}", sh.ops.load(Ordering::Relaxed));
        let _ = out.flush();
        if a.duration > 0 && t0.elapsed() >= Duration::from_secs(a.duration) {
            sh.stop.store(true, Ordering::SeqCst);
        }
        if handles.iter().all(|h| h.is_finished()) {
            break;
        }
    }
    for h in handles {
        h.join()
            .map_err(|_| "a worker thread panicked".to_string())?;
    }
    let ops = sh.ops.load(Ordering::Relaxed);
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "stress: ops {ops} seconds {secs:.1} ops/sec {:.0}",
        ops as f64 / secs
    );
    let failures = std::mem::take(&mut *sh.failures.lock().unwrap());
    let sh = Arc::try_unwrap(sh).map_err(|_| "workers still hold the database".to_string())?;
    sh.db.close().map_err(|e| format!("close: {e}"))?;
    if !failures.is_empty() {
        return Err(format!("{} violations during the run", failures.len()));
    }
    if !a.no_final_verify {
        let rep = verify(&a, &sh.oracle)?;
        print_verify(&rep);
        if !rep.violations.is_empty() {
            return Err(format!("{} violations", rep.violations.len()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_reject_others() {
        for (k, g) in [(0, 1), (7, 2), (99_999, 123_456)] {
            let v = value_for(k, g, 100);
            assert_eq!(value_gen(k, &v, 100), Some(g));
            assert_eq!(value_gen(k + 1, &v, 100), None);
            let mut bad = v.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert_eq!(value_gen(k, &bad, 100), None);
        }
        assert_eq!(value_gen(1, b"short", 100), None);
    }

    #[test]
    fn slot_encoding() {
        let s = Slot {
            committed: 5 << 1,
            pending: 6 << 1 | 1,
        };
        assert_eq!(Slot::decode(s.encode()), s);
        assert_eq!(s.next_gen(), 7);
    }
}
