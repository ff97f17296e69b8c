//! The file workload of `cairndb bench` (after YCSB's FileWorkload): a data
//! file of records, one per line, whose key is some of the line's fields
//! joined by the field separator and whose value is the whole line; and a
//! key file of keys to read, one per line. Both are loaded into memory once,
//! before any benchmark is timed, and checked as they load: every problem is
//! an error naming the flag, the file and the line.
//!
//! The benchmarks themselves (`fillfile`, `readfile`, `readfileseq`) run in
//! the driver in `mod.rs`, on the [`Lines`] loaded here.

use std::path::{Path, PathBuf};

use super::flags::{Flags, FILE_BENCHMARKS};
use super::report::DirSize;

/// Byte strings stored back to back in one buffer, by index.
pub struct Lines {
    buf: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl Lines {
    /// How many strings.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The `i`th string.
    pub fn get(&self, i: usize) -> &[u8] {
        let (s, e) = self.spans[i];
        &self.buf[s..e]
    }

    /// Total bytes of all strings.
    pub fn total_bytes(&self) -> u64 {
        self.spans.iter().map(|(s, e)| (e - s) as u64).sum()
    }
}

/// The records of `--datafile`: keys (the `--keyfields` joined by the
/// separator) and values (the whole lines), in file order.
pub struct DataFile {
    /// The file, as given.
    pub path: PathBuf,
    /// One key per record.
    pub keys: Lines,
    /// One value (the line without its line break) per record.
    pub values: Lines,
}

impl DataFile {
    /// Makes every record's value empty (`--empty_values`).
    pub fn empty_values(&mut self) {
        for s in &mut self.values.spans {
            s.1 = s.0;
        }
    }
}

/// The file workload's inputs, loaded for the benchmarks listed.
pub struct FileWorkload {
    /// `--datafile`, when `fillfile` runs or the reads take its keys.
    pub data: Option<DataFile>,
    /// `--keyfile`, when given and a read benchmark runs.
    pub keyfile: Option<(PathBuf, Lines)>,
}

impl FileWorkload {
    /// Loads what the listed benchmarks need; None when none of them is a
    /// file benchmark. `--num` (when given) limits the records loaded.
    pub fn load(f: &Flags) -> Result<Option<FileWorkload>, String> {
        let wants = |b: &str| f.benchmarks.iter().any(|x| x == b);
        if !FILE_BENCHMARKS.iter().any(|b| wants(b)) {
            return Ok(None);
        }
        let reads = wants("readfile") || wants("readfileseq");
        if wants("fillfile") && f.datafile.is_none() {
            return Err("--benchmarks=fillfile needs --datafile=FILE \
                 (records, one per line; the key is --keyfields of each line)"
                .into());
        }
        if reads && f.keyfile.is_none() && f.datafile.is_none() {
            let b = if wants("readfile") {
                "readfile"
            } else {
                "readfileseq"
            };
            return Err(format!(
                "--benchmarks={b} needs --keyfile=FILE (keys to read, one per line), \
                 or --datafile=FILE to read the data file's own keys"
            ));
        }
        let keyfile = match (&f.keyfile, reads) {
            (Some(p), true) => Some((p.clone(), load_keys(p)?)),
            _ => None,
        };
        let data = match &f.datafile {
            Some(p) if wants("fillfile") || (reads && keyfile.is_none()) => {
                let limit = f.num_set.then_some(f.num);
                let mut d = load_data(p, &f.keyfields, &f.field_separator, limit)?;
                if f.empty_values {
                    d.empty_values();
                }
                Some(d)
            }
            _ => None,
        };
        Ok(Some(FileWorkload { data, keyfile }))
    }

    /// The keys `readfile` and `readfileseq` read: the key file's, or else
    /// the data file's.
    pub fn read_keys(&self) -> Option<&Lines> {
        match (&self.keyfile, &self.data) {
            (Some((_, k)), _) => Some(k),
            (None, Some(d)) => Some(&d.keys),
            (None, None) => None,
        }
    }

    /// Lines for the header that `cairndb bench` prints before running.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(d) = &self.data {
            out.push(format!(
                "Data file:  {} ({} records, {} bytes of keys, {} bytes of values)",
                d.path.display(),
                d.keys.len(),
                d.keys.total_bytes(),
                d.values.total_bytes()
            ));
        }
        match &self.keyfile {
            Some((p, k)) => out.push(format!("Key file:   {} ({} keys)", p.display(), k.len())),
            None if self.data.is_some() => {
                out.push("Key file:   none (reads use the data file's keys)".into())
            }
            None => {}
        }
        out
    }
}

fn read_file(flag: &str, path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("--{flag}={}: {e}", path.display()))
}

/// Spans of the lines of `buf` (without `\n`, nor a `\r` before it); a
/// last line without a line break counts, an empty tail after the last
/// line break does not.
fn line_spans(buf: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= buf.len() {
            return None;
        }
        let end = buf[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(buf.len(), |p| start + p);
        let next = end + 1;
        let mut e = end;
        if e > start && buf[e - 1] == b'\r' {
            e -= 1;
        }
        let s = start;
        start = next;
        Some((s, e))
    })
}

/// The separator as a person would type it (a tab as `\t`).
pub fn show_separator(sep: &[u8]) -> String {
    String::from_utf8_lossy(sep).replace('\t', "\\t")
}

/// Loads `--keyfile`: one key per line, every line a key.
pub fn load_keys(path: &Path) -> Result<Lines, String> {
    let buf = read_file("keyfile", path)?;
    let mut spans = Vec::new();
    for (i, (s, e)) in line_spans(&buf).enumerate() {
        if s == e {
            return Err(format!(
                "--keyfile={}:{}: empty line (the key file holds one key per line)",
                path.display(),
                i + 1
            ));
        }
        spans.push((s, e));
    }
    let keys = Lines { buf, spans };
    if keys.is_empty() {
        return Err(format!(
            "--keyfile={}: the file is empty (it should hold one key per line)",
            path.display()
        ));
    }
    Ok(keys)
}

/// Finds the byte ranges of fields `0..=max` of `line`, split by `sep`;
/// returns the fields found when there are fewer.
fn field_spans(line: &[u8], sep: &[u8], max: usize, out: &mut Vec<(usize, usize)>) {
    out.clear();
    let mut start = 0;
    while out.len() <= max {
        let found = if sep.len() == 1 {
            line[start..].iter().position(|&b| b == sep[0])
        } else {
            line[start..].windows(sep.len()).position(|w| w == sep)
        };
        match found {
            Some(p) => {
                out.push((start, start + p));
                start += p + sep.len();
            }
            None => {
                out.push((start, line.len()));
                return;
            }
        }
    }
}

/// Loads `--datafile`: one record per line, keyed by `keyfields` joined by
/// `sep`; at most `limit` records when given.
pub fn load_data(
    path: &Path,
    keyfields: &[usize],
    sep: &[u8],
    limit: Option<u64>,
) -> Result<DataFile, String> {
    let buf = read_file("datafile", path)?;
    let max = keyfields.iter().copied().max().unwrap_or(0);
    let mut value_spans = Vec::new();
    let mut key_buf = Vec::new();
    let mut key_spans = Vec::new();
    let mut fields = Vec::new();
    let limit = limit.unwrap_or(u64::MAX);
    for (i, (s, e)) in line_spans(&buf).enumerate() {
        if value_spans.len() as u64 >= limit {
            break;
        }
        let line = &buf[s..e];
        let where_ = || format!("--datafile={}:{}", path.display(), i + 1);
        if line.is_empty() {
            return Err(format!(
                "{}: empty line (the data file holds one record per line)",
                where_()
            ));
        }
        field_spans(line, sep, max, &mut fields);
        if fields.len() <= max {
            let kf: Vec<String> = keyfields.iter().map(|k| k.to_string()).collect();
            return Err(format!(
                "{}: the line has {} field{} but --keyfields={} needs field {max} \
                 (fields are 0-based, separated by `{}`)",
                where_(),
                fields.len(),
                if fields.len() == 1 { "" } else { "s" },
                kf.join(","),
                show_separator(sep)
            ));
        }
        let ks = key_buf.len();
        for (j, &k) in keyfields.iter().enumerate() {
            if j > 0 {
                key_buf.extend_from_slice(sep);
            }
            let (a, b) = fields[k];
            key_buf.extend_from_slice(&line[a..b]);
        }
        key_spans.push((ks, key_buf.len()));
        value_spans.push((s, e));
    }
    if value_spans.is_empty() {
        return Err(if limit == 0 {
            format!("--datafile={}: --num=0 loads no records", path.display())
        } else {
            format!(
                "--datafile={}: the file is empty (it should hold one record per line)",
                path.display()
            )
        });
    }
    Ok(DataFile {
        path: path.to_path_buf(),
        keys: Lines {
            buf: key_buf,
            spans: key_spans,
        },
        values: Lines {
            buf,
            spans: value_spans,
        },
    })
}

/// The part of `0..total` thread `tid` of `threads` takes (contiguous, in
/// order, sizes differing by at most one).
pub fn share(total: u64, tid: usize, threads: usize) -> std::ops::Range<u64> {
    let t = threads.max(1) as u64;
    let tid = tid as u64;
    (total * tid / t)..(total * (tid + 1) / t)
}

/// Bytes and file count of everything under `dir`, recursively (symbolic
/// links are counted as themselves, not followed), with the table files and
/// write-ahead logs counted apart too.
pub fn dir_size(dir: &Path) -> Result<DirSize, String> {
    let mut d = DirSize::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(sub) = stack.pop() {
        let rd = std::fs::read_dir(&sub).map_err(|e| format!("dirsize: {}: {e}", sub.display()))?;
        for entry in rd {
            let entry = entry.map_err(|e| format!("dirsize: {}: {e}", sub.display()))?;
            let p = entry.path();
            let md = std::fs::symlink_metadata(&p).map_err(|e| {
                // A file can vanish under a live database (an obsolete file deleted).
                format!("dirsize: {}: {e}", p.display())
            });
            let md = match md {
                Ok(m) => m,
                Err(_) if !p.exists() => continue,
                Err(e) => return Err(e),
            };
            if md.is_dir() {
                stack.push(p);
                continue;
            }
            let len = md.len();
            d.bytes += len;
            d.files += 1;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".sst") || name.ends_with(".ldb") {
                d.sst_bytes += len;
                d.sst_files += 1;
            } else if name
                .strip_suffix(".log")
                .is_some_and(|stem| !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()))
            {
                d.wal_bytes += len;
                d.wal_files += 1;
            }
        }
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn keys_join_fields_and_values_are_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "d.tsv", "a\tb\tc\td\r\ne\tf\tg\n");
        let df = load_data(&p, &[2, 0], b"\t", None).unwrap();
        assert_eq!(df.keys.len(), 2);
        assert_eq!(df.keys.get(0), b"c\ta");
        assert_eq!(df.values.get(0), b"a\tb\tc\td");
        assert_eq!(df.keys.get(1), b"g\te");
        assert_eq!(df.values.get(1), b"e\tf\tg");
        let df = load_data(&p, &[1], b"\t", Some(1)).unwrap();
        assert_eq!(df.keys.len(), 1);
        assert_eq!(df.keys.get(0), b"b");
    }

    #[test]
    fn empty_values_keep_the_keys_and_drop_the_values() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.tsv");
        std::fs::write(&p, "a\tx\nb\ty\n").unwrap();
        let mut df = load_data(&p, &[0], b"\t", None).unwrap();
        df.empty_values();
        assert_eq!(df.keys.len(), 2);
        assert_eq!(df.keys.get(1), b"b");
        assert_eq!(df.values.len(), 2);
        assert_eq!(df.values.get(0), b"");
        assert_eq!(df.values.total_bytes(), 0);
    }
    #[test]
    fn multi_byte_separator() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "d.txt", "x::y::z\n");
        let df = load_data(&p, &[0, 2], b"::", None).unwrap();
        assert_eq!(df.keys.get(0), b"x::z");
        let e = load_data(&p, &[3], b"::", None).err().unwrap();
        assert!(e.contains("d.txt:1:") && e.contains("3 fields"), "{e}");
    }

    #[test]
    fn errors_name_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "d.tsv", "a\tb\tc\na\tb\n");
        let e = load_data(&p, &[0, 2], b"\t", None).err().unwrap();
        assert!(e.contains("d.tsv:2:"), "{e}");
        assert!(e.contains("needs field 2"), "{e}");
        let p = write(d.path(), "e.tsv", "");
        let e = load_data(&p, &[0], b"\t", None).err().unwrap();
        assert!(e.contains("e.tsv") && e.contains("empty"), "{e}");
        let p = write(d.path(), "k", "a\n\nb\n");
        let e = load_keys(&p).err().unwrap();
        assert!(e.contains("k:2:"), "{e}");
        let e = load_keys(&d.path().join("missing")).err().unwrap();
        assert!(e.contains("--keyfile=") && e.contains("missing"), "{e}");
    }

    #[test]
    fn shares_cover_everything_once() {
        let mut next = 0;
        for t in 0..3 {
            let r = share(10, t, 3);
            assert_eq!(r.start, next);
            next = r.end;
        }
        assert_eq!(next, 10);
    }

    #[test]
    fn dir_size_counts_nested_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        write(d.path(), "a", "12345");
        write(&d.path().join("sub"), "b", "123");
        write(d.path(), "000007.sst", "1234567");
        write(d.path(), "000008.log", "12");
        write(d.path(), "LOG", "1");
        let s = dir_size(d.path()).unwrap();
        assert_eq!((s.bytes, s.files), (18, 5));
        assert_eq!((s.sst_bytes, s.sst_files), (7, 1));
        assert_eq!((s.wal_bytes, s.wal_files), (2, 1));
    }
}
