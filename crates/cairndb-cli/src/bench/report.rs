//! Measurement and output in db_bench 7.8's shape: per-thread stats merged
//! the way db_bench merges them, the one-line report
//! (`%-12s : %11.3f micros/op %ld ops/sec %.3f seconds %ld operations;%s%s`),
//! the `--histogram` block, the machine-readable result, and a parser of
//! report lines (used by `cairndb compare` and the tests).

use std::time::Instant;

use hdrhistogram::Histogram;

use super::clock::OpClock;
use serde::{Deserialize, Serialize};

/// One thread's measurements of one benchmark.
pub struct Stats {
    /// When the thread started measuring.
    pub start: Instant,
    /// When it stopped.
    pub finish: Instant,
    /// Operations done.
    pub done: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Keys found (reads).
    pub found: u64,
    /// Reads attempted (for the "found" message).
    pub reads: u64,
    /// Latency per operation in ticks of `clock` (only with `--histogram`).
    pub hist: Option<Histogram<u64>>,
    /// The clock `hist` counts ticks of.
    pub clock: OpClock,
    /// Extra message appended to the line.
    pub message: String,
    /// When the last operation finished, in ticks of `clock`.
    last: u64,
}

impl Stats {
    /// Fresh stats; `histogram` turns per-operation timing on.
    pub fn new(histogram: bool) -> Stats {
        let now = Instant::now();
        let clock = OpClock::get();
        Stats {
            start: now,
            finish: now,
            done: 0,
            bytes: 0,
            found: 0,
            reads: 0,
            hist: if histogram {
                Histogram::new_with_bounds(1, 3_600_000_000_000, 3).ok()
            } else {
                None
            },
            message: String::new(),
            clock,
            last: clock.now(),
        }
    }

    /// Restarts the clock (after thread start-up).
    pub fn start(&mut self) {
        self.start = Instant::now();
        self.last = self.clock.now();
    }

    /// Records `n` finished operations (timing the last one when histograms are on).
    #[inline]
    pub fn finished_ops(&mut self, n: u64) {
        self.done += n;
        if let Some(h) = self.hist.as_mut() {
            let now = self.clock.now();
            let _ = h.record(now.saturating_sub(self.last).max(1));
            self.last = now;
        }
    }

    /// Stops the clock.
    pub fn stop(&mut self) {
        self.finish = Instant::now();
    }

    /// Seconds this thread ran.
    pub fn seconds(&self) -> f64 {
        self.finish.duration_since(self.start).as_secs_f64()
    }
}

/// One benchmark's merged result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchResult {
    /// Benchmark name.
    pub name: String,
    /// Engine that ran it.
    pub engine: String,
    /// Sum over threads of each thread's seconds, times 1e6, over ops.
    pub micros_per_op: f64,
    /// Operations per second of wall time.
    pub ops_per_sec: f64,
    /// Wall seconds from the first thread's start to the last one's finish.
    pub seconds: f64,
    /// Operations.
    pub ops: u64,
    /// MB/s (MiB) of keys and values moved, when any.
    pub mb_per_sec: Option<f64>,
    /// Keys found / reads, for read benchmarks.
    pub found: Option<(u64, u64)>,
    /// Latency percentiles in microseconds, with `--histogram`.
    pub latency: Option<Latency>,
    /// The database directory's size, for `dirsize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir_size: Option<DirSize>,
    /// The db_bench line.
    pub line: String,
}

/// What `dirsize` measured: every file under the database directory, and
/// the table files and write-ahead logs among them.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct DirSize {
    /// Sum of the files' sizes.
    pub bytes: u64,
    /// Number of files.
    pub files: u64,
    /// Bytes of table files (`*.sst`, `*.ldb`).
    #[serde(default)]
    pub sst_bytes: u64,
    /// Number of table files.
    #[serde(default)]
    pub sst_files: u64,
    /// Bytes of write-ahead logs (`NNNNNN.log`), recycled ones included.
    #[serde(default)]
    pub wal_bytes: u64,
    /// Number of write-ahead logs.
    #[serde(default)]
    pub wal_files: u64,
}

/// The `dirsize` line: `dirsize : N bytes in M files (sst .., wal .., other ..)`.
pub fn dir_size_line(d: &DirSize) -> String {
    let other_bytes = d.bytes - d.sst_bytes - d.wal_bytes;
    let other_files = d.files - d.sst_files - d.wal_files;
    format!(
        "dirsize : {} bytes in {} files (sst {} in {}, wal {} in {}, other {} in {})",
        d.bytes,
        d.files,
        d.sst_bytes,
        d.sst_files,
        d.wal_bytes,
        d.wal_files,
        other_bytes,
        other_files
    )
}

/// The result of `dirsize` (no operations, no timing).
pub fn dir_size_result(engine: &str, d: DirSize) -> BenchResult {
    BenchResult {
        name: "dirsize".into(),
        engine: engine.to_string(),
        micros_per_op: 0.0,
        ops_per_sec: 0.0,
        seconds: 0.0,
        ops: 0,
        mb_per_sec: None,
        found: None,
        latency: None,
        dir_size: Some(d),
        line: dir_size_line(&d),
    }
}

/// Parses one `dirsize : N bytes in M files` line.
pub fn parse_dir_size_line(line: &str) -> Option<DirSize> {
    let rest = line.trim_start().strip_prefix("dirsize")?;
    let rest = rest.trim_start().strip_prefix(':')?;
    let t: Vec<&str> = rest.split_whitespace().collect();
    match t.as_slice() {
        [b, "bytes", "in", f, "files", ..] => Some(DirSize {
            bytes: b.parse().ok()?,
            files: f.parse().ok()?,
            ..DirSize::default()
        }),
        _ => None,
    }
}

/// Latency summary in microseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    /// Operations counted.
    pub count: u64,
    /// Mean.
    pub average: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// 50th percentile.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
}

/// Merges thread stats as db_bench does and formats the line.
/// `show_found` adds `(F of T found)`.
pub fn merge(name: &str, engine: &str, threads: &[Stats], show_found: bool) -> BenchResult {
    let start = threads.iter().map(|s| s.start).min();
    let finish = threads.iter().map(|s| s.finish).max();
    let elapsed = match (start, finish) {
        (Some(s), Some(f)) => f.duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    let done: u64 = threads.iter().map(|s| s.done).sum();
    let bytes: u64 = threads.iter().map(|s| s.bytes).sum();
    let found: u64 = threads.iter().map(|s| s.found).sum();
    let reads: u64 = threads.iter().map(|s| s.reads).sum();
    let seconds_sum: f64 = threads.iter().map(|s| s.seconds()).sum();
    let done_for_div = done.max(1);
    let micros_per_op = seconds_sum * 1e6 / done_for_div as f64;
    let ops_per_sec = if elapsed > 0.0 {
        done as f64 / elapsed
    } else {
        0.0
    };
    let mut extra = String::new();
    let mut mb = None;
    if bytes > 0 && elapsed > 0.0 {
        let rate = bytes as f64 / 1048576.0 / elapsed;
        mb = Some(rate);
        extra = format!("{rate:6.1} MB/s");
    }
    let mut message = String::new();
    if show_found {
        message = format!("({found} of {reads} found)");
    }
    for s in threads {
        if !s.message.is_empty() {
            message = if message.is_empty() {
                s.message.clone()
            } else {
                format!("{message} {}", s.message)
            };
            break;
        }
    }
    if !message.is_empty() {
        if !extra.is_empty() {
            extra.push(' ');
        }
        extra.push_str(&message);
    }
    let line = format!(
        "{name:<12} : {micros_per_op:>11.3} micros/op {} ops/sec {elapsed:.3} seconds {done} operations;{}{extra}",
        ops_per_sec as i64,
        if extra.is_empty() { "" } else { " " },
    );
    let latency = merged_hist(threads).map(|h| {
        let per_tick = threads.first().map_or(1.0, |t| t.clock.nanos_per_tick());
        latency_of(&h, per_tick)
    });
    BenchResult {
        name: name.to_string(),
        engine: engine.to_string(),
        micros_per_op,
        ops_per_sec,
        seconds: elapsed,
        ops: done,
        mb_per_sec: mb,
        found: show_found.then_some((found, reads)),
        latency,
        dir_size: None,
        line,
    }
}

fn merged_hist(threads: &[Stats]) -> Option<Histogram<u64>> {
    let mut out: Option<Histogram<u64>> = None;
    for h in threads.iter().filter_map(|s| s.hist.as_ref()) {
        match out.as_mut() {
            None => out = Some(h.clone()),
            Some(o) => {
                let _ = o.add(h);
            }
        }
    }
    out
}

/// Percentiles of a histogram of ticks, `per_tick` nanoseconds each.
fn latency_of(h: &Histogram<u64>, per_tick: f64) -> Latency {
    let us = |ticks: u64| ticks as f64 * per_tick / 1000.0;
    Latency {
        count: h.len(),
        average: h.mean() * per_tick / 1000.0,
        stddev: h.stdev() * per_tick / 1000.0,
        min: us(h.min()),
        max: us(h.max()),
        p50: us(h.value_at_quantile(0.50)),
        p75: us(h.value_at_quantile(0.75)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        p9999: us(h.value_at_quantile(0.9999)),
    }
}

/// The `--histogram` block db_bench prints after a benchmark's line.
pub fn histogram_text(op: &str, l: &Latency) -> String {
    format!(
        "Microseconds per {op}:\nCount: {} Average: {:.4}  StdDev: {:.2}\nMin: {:.0}  Median: {:.4}  Max: {:.0}\nPercentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}\n------------------------------------------------------\n",
        l.count, l.average, l.stddev, l.min, l.p50, l.max, l.p50, l.p75, l.p99, l.p999, l.p9999
    )
}

/// A result read back from db_bench-shaped output.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    /// Benchmark name.
    pub name: String,
    /// micros/op.
    pub micros_per_op: f64,
    /// ops/sec.
    pub ops_per_sec: f64,
    /// seconds.
    pub seconds: f64,
    /// operations.
    pub ops: u64,
    /// MB/s.
    pub mb_per_sec: Option<f64>,
    /// (found, of).
    pub found: Option<(u64, u64)>,
    /// P99 from the following histogram block, in microseconds.
    pub p99: Option<f64>,
}

/// Parses every benchmark line (and the P99 of the histogram block that
/// follows it) out of db_bench-shaped output, ours or RocksDB's or LevelDB's.
/// RocksDB's histogram has a `Percentiles:` line; LevelDB's has none, so its
/// P99 is interpolated from the bucket lines the way LevelDB's own
/// `Histogram::Percentile` does. LevelDB's lines carry no ops/sec: those
/// are left at 0 for the caller, who knows the thread count.
pub fn parse_output(text: &str) -> Vec<Parsed> {
    let mut out: Vec<Parsed> = Vec::new();
    let mut buckets: Vec<Bucket> = Vec::new();
    let finish = |last: Option<&mut Parsed>, buckets: &mut Vec<Bucket>| {
        if let Some(last) = last {
            if last.p99.is_none() {
                last.p99 = bucket_percentile(buckets, 99.0);
            }
        }
        buckets.clear();
    };
    for line in text.lines() {
        if let Some(p) = parse_line(line) {
            finish(out.last_mut(), &mut buckets);
            out.push(p);
        } else if let Some(rest) = line.trim_start().strip_prefix("Percentiles:") {
            if let Some(last) = out.last_mut() {
                let toks: Vec<&str> = rest.split_whitespace().collect();
                for w in toks.windows(2) {
                    if w[0] == "P99:" {
                        last.p99 = w[1].parse().ok();
                    }
                }
            }
        } else if let Some(b) = parse_bucket_line(line) {
            buckets.push(b);
        }
    }
    finish(out.last_mut(), &mut buckets);
    out
}

/// One histogram bucket line: `[ left, right ) count pct% cumulative% ###`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bucket {
    left: f64,
    right: f64,
    count: f64,
}

fn parse_bucket_line(line: &str) -> Option<Bucket> {
    let rest = line.trim_start().strip_prefix('[')?;
    let (left, rest) = rest.split_once(',')?;
    let (right, rest) = rest.split_once(')')?;
    Some(Bucket {
        left: left.trim().parse().ok()?,
        right: right.trim().parse().ok()?,
        count: rest.split_whitespace().next()?.parse().ok()?,
    })
}

/// The `p`th percentile of a bucketed histogram, interpolated inside the
/// bucket that crosses it (LevelDB's `Histogram::Percentile`).
fn bucket_percentile(buckets: &[Bucket], p: f64) -> Option<f64> {
    let total: f64 = buckets.iter().map(|b| b.count).sum();
    if total <= 0.0 {
        return None;
    }
    let threshold = total * p / 100.0;
    let mut sum = 0.0;
    for b in buckets {
        sum += b.count;
        if sum >= threshold && b.count > 0.0 {
            let pos = (threshold - (sum - b.count)) / b.count;
            return Some(b.left + (b.right - b.left) * pos);
        }
    }
    buckets.last().map(|b| b.right)
}

/// Parses one `name : X micros/op Y ops/sec Z seconds N operations; ...` line.
pub fn parse_line(line: &str) -> Option<Parsed> {
    let (name, rest) = line.split_once(" : ")?;
    let name = name.trim();
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    let toks: Vec<&str> = rest.split_whitespace().collect();
    // RocksDB and we print `micros/op N ops/sec`; LevelDB `micros/op;` alone.
    if !matches!(toks.get(1), Some(&"micros/op") | Some(&"micros/op;")) {
        return None;
    }
    let mut p = Parsed {
        name: name.to_string(),
        micros_per_op: toks.first()?.parse().ok()?,
        ..Default::default()
    };
    for (i, t) in toks.iter().enumerate() {
        let prev = if i > 0 { toks[i - 1] } else { "" };
        match *t {
            "ops/sec" => p.ops_per_sec = prev.parse().ok()?,
            "seconds" => p.seconds = prev.parse().ok()?,
            "operations;" | "operations" => p.ops = prev.parse().ok()?,
            "MB/s" => p.mb_per_sec = prev.parse().ok(),
            "of" => {
                let f = prev.trim_start_matches('(').parse().ok();
                let t = toks.get(i + 1).and_then(|s| s.parse().ok());
                if let (Some(f), Some(t)) = (f, t) {
                    p.found = Some((f, t));
                }
            }
            _ => {}
        }
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_round_trip() {
        let mut s = Stats::new(true);
        s.start();
        for _ in 0..1000 {
            s.finished_ops(1);
        }
        s.bytes = 116_000;
        s.found = 990;
        s.reads = 1000;
        s.stop();
        let r = merge("readrandom", "cairndb", &[s], true);
        assert!(r.line.starts_with("readrandom   : "), "{}", r.line);
        assert!(r.line.ends_with("(990 of 1000 found)"), "{}", r.line);
        let text = format!(
            "{}\n{}",
            r.line,
            histogram_text("read", r.latency.as_ref().unwrap())
        );
        let p = parse_output(&text);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].name, "readrandom");
        assert_eq!(p[0].ops, 1000);
        assert_eq!(p[0].found, Some((990, 1000)));
        assert!(p[0].p99.is_some());
        assert_eq!(p[0].ops_per_sec, r.ops_per_sec.trunc());
    }

    #[test]
    fn dir_size_lines_round_trip() {
        let d = DirSize {
            bytes: 12345,
            files: 7,
            sst_bytes: 10000,
            sst_files: 2,
            wal_bytes: 2000,
            wal_files: 1,
        };
        let r = dir_size_result("rocksdb", d);
        assert_eq!(
            r.line,
            "dirsize : 12345 bytes in 7 files (sst 10000 in 2, wal 2000 in 1, other 345 in 4)"
        );
        let text = format!(
            "fillfile     : 1.0 micros/op 1 ops/sec 1.000 seconds 1 operations;\n{}\n",
            r.line
        );
        assert_eq!(
            text.lines()
                .filter_map(parse_dir_size_line)
                .collect::<Vec<_>>(),
            vec![DirSize {
                bytes: 12345,
                files: 7,
                ..DirSize::default()
            }]
        );
        assert_eq!(
            parse_output(&text).len(),
            1,
            "a dirsize line is no timing line"
        );
    }

    #[test]
    fn parses_rocksdb_lines() {
        let text = "fillseq      :       2.345 micros/op 426439 ops/sec 2.345 seconds 1000000 operations;   47.2 MB/s\n\
readrandom   :       5.123 micros/op 195198 ops/sec 5.123 seconds 1000000 operations;   13.3 MB/s (632000 of 1000000 found)\n\
\n\
Microseconds per read:\nCount: 1000000 Average: 5.1230  StdDev: 3.21\nPercentiles: P50: 4.50 P75: 5.60 P99: 12.30 P99.9: 30.00 P99.99: 80.00\n";
        let p = parse_output(text);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].ops_per_sec, 426439.0);
        assert_eq!(p[0].mb_per_sec, Some(47.2));
        assert_eq!(p[1].found, Some((632000, 1000000)));
        assert_eq!(p[1].p99, Some(12.3));
    }

    /// LevelDB 1.23's db_bench output, captured (trimmed to two benchmarks).
    const LEVELDB_OUTPUT: &str = "Keys:       16 bytes each
Values:     100 bytes each (50 bytes after compression)
Entries:    20000
------------------------------------------------
fillseq      :       7.628 micros/op;   14.5 MB/s
Microseconds per op:
Count: 20000  Average: 7.6196  StdDev: 250.62
Min: 1.0000  Median: 2.0216  Max: 16088.0000
------------------------------------------------------
[       1,       2 )    9811  49.055%  49.055% ##########
[       2,       3 )    8762  43.810%  92.865% #########
[       3,       4 )      39   0.195%  93.060% 
[       4,       5 )     238   1.190%  94.250% 
[       5,       6 )     345   1.725%  95.975% 
[       6,       7 )     295   1.475%  97.450% 
[       7,       8 )     287   1.435%  98.885% 
[       8,       9 )      50   0.250%  99.135% 
[    8000,    9000 )     173   0.865% 100.000% 

readrandom   :       4.518 micros/op; (20000 of 20000 found)
Microseconds per op:
Count: 20000  Average: 4.5165  StdDev: 195.79
Min: 0.0000  Median: 1.4921  Max: 17476.0000
------------------------------------------------------
[       0,       1 )   20000 100.000% 100.000% ####################

";

    #[test]
    fn parses_leveldb_lines_and_bucket_percentiles() {
        let p = parse_output(LEVELDB_OUTPUT);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p[0].name, "fillseq");
        assert_eq!(p[0].micros_per_op, 7.628);
        assert_eq!(p[0].ops_per_sec, 0.0, "LevelDB prints no ops/sec");
        assert_eq!(p[0].mb_per_sec, Some(14.5));
        // 99% of 20000 = 19800; 19777 are below 8, so 23 of the 50 in [8, 9).
        let p99 = p[0].p99.unwrap();
        assert!((p99 - 8.46).abs() < 1e-9, "{p99}");
        assert_eq!(p[1].found, Some((20000, 20000)));
        assert!((p[1].p99.unwrap() - 0.99).abs() < 1e-9, "{:?}", p[1].p99);
        assert_eq!(parse_line("fillseq      :       7.628 micros/ops"), None);
    }

    #[test]
    fn rocksdb_percentiles_win_over_its_buckets() {
        let text = "readrandom   :       5.000 micros/op 200000 ops/sec 1.000 seconds 200000 operations;\n\
Percentiles: P50: 4.50 P75: 5.60 P99: 12.30 P99.9: 30.00 P99.99: 80.00\n\
------------------------------------------------------\n\
[       0,       1 ]   200000 100.000% 100.000% ####################\n";
        assert_eq!(parse_output(text)[0].p99, Some(12.3));
    }
}
