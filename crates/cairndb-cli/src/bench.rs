//! `cairndb bench`: fills a database with random keys and reads them back,
//! printing one `db_bench`-shaped line per phase.

use std::path::PathBuf;
use std::time::Instant;

use cairndb::{CompressionType, Db, Options, ReadOptions, WriteOptions};
use clap::Parser;
use rand::{Rng, SeedableRng};

#[derive(Parser, Debug, Clone)]
#[command(
    name = "cairndb bench",
    about = "Fill a database with random keys, then read every key back"
)]
struct BenchArgs {
    /// Number of keys.
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Key size in bytes.
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Database directory (default: a fresh temporary directory, removed afterwards).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Compression: none, lz4, zstd, zstd:LEVEL.
    #[arg(long, default_value = "none")]
    compression_type: String,
    /// Memtable size in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    write_buffer_size: usize,
    /// Block cache size in bytes.
    #[arg(long, default_value_t = 8 << 20)]
    cache_size: usize,
    /// fdatasync every write.
    #[arg(long, default_value_t = false)]
    sync: bool,
    /// Random seed.
    #[arg(long, default_value_t = 301)]
    seed: u64,
}

/// Writes `n` as a zero-padded decimal into `key_size` bytes, as db_bench does.
fn make_key(n: u64, key_size: usize, buf: &mut Vec<u8>) {
    buf.clear();
    let s = format!("{n:0width$}", width = key_size);
    buf.extend_from_slice(&s.as_bytes()[s.len().saturating_sub(key_size)..]);
}

fn report(name: &str, ops: u64, bytes: u64, secs: f64, extra: &str) {
    let micros = secs * 1e6 / ops.max(1) as f64;
    println!(
        "{name:<12} : {micros:>10.3} micros/op {:.0} ops/sec {secs:.3} seconds {ops} operations; {:>6.1} MB/s{extra}",
        ops as f64 / secs,
        bytes as f64 / 1048576.0 / secs
    );
}

/// Runs `cairndb bench ARGS`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    let a = BenchArgs::try_parse_from(std::iter::once("cairndb bench".to_string()).chain(args))
        .map_err(|e| e.to_string())?;
    run(a).map_err(|e| e.to_string())
}

fn run(a: BenchArgs) -> cairndb::Result<()> {
    let tmp;
    let dir = match &a.db {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir().map_err(|e| cairndb::Error::io("mkdtemp", "/tmp", e))?;
            tmp.path().join("cairndb-bench")
        }
    };
    let opts = Options {
        compression: CompressionType::parse(&a.compression_type)?,
        write_buffer_size: a.write_buffer_size,
        block_cache_size: a.cache_size,
        ..Options::default()
    };
    println!("CairnDB:    version {}", env!("CARGO_PKG_VERSION"));
    println!("Keys:       {} bytes each", a.key_size);
    println!("Values:     {} bytes each", a.value_size);
    println!("Entries:    {}", a.num);
    println!(
        "RawSize:    {:.1} MB (estimated)",
        (a.key_size + a.value_size) as f64 * a.num as f64 / 1048576.0
    );
    println!("Compression: {}", a.compression_type);
    println!("DB path:    [{}]", dir.display());
    println!("------------------------------------------------");

    let mut rng = rand::rngs::SmallRng::seed_from_u64(a.seed);
    let value: Vec<u8> = (0..a.value_size)
        .map(|_| rng.gen_range(b'a'..=b'z'))
        .collect();
    let mut key = Vec::with_capacity(a.key_size);
    // Distinct keys in random order so the read-back can expect all of them.
    let mut order: Vec<u64> = (0..a.num).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }

    let db = Db::open(&dir, opts.clone())?;
    let wo = WriteOptions {
        sync: a.sync,
        ..Default::default()
    };
    let t = Instant::now();
    for &n in &order {
        make_key(n, a.key_size, &mut key);
        db.put(&wo, &key, &value)?;
    }
    let bytes = (a.key_size + a.value_size) as u64 * a.num;
    report("fillrandom", a.num, bytes, t.elapsed().as_secs_f64(), "");
    db.close()?;
    drop(db);

    let db = Db::open(&dir, opts)?;
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    let ro = ReadOptions::default();
    let t = Instant::now();
    let mut found = 0u64;
    for &n in &order {
        make_key(n, a.key_size, &mut key);
        match db.get(&ro, &key)? {
            Some(v) if v == value => found += 1,
            Some(_) => {
                return Err(cairndb::Error::corruption(
                    &dir,
                    0,
                    format!("key {n} read back a wrong value"),
                ))
            }
            None => {}
        }
    }
    report(
        "readrandom",
        a.num,
        bytes,
        t.elapsed().as_secs_f64(),
        &format!(" ({found} of {} found)", a.num),
    );
    if found != a.num {
        return Err(cairndb::Error::corruption(
            &dir,
            0,
            format!("read back {found} of {} keys", a.num),
        ));
    }
    println!("\n{}", db.property("cairndb.stats").unwrap_or_default());
    db.close()?;
    Ok(())
}
