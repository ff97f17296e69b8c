//! Names of the files in a database directory (`docs/format/manifest.md`,
//! "Directory layout"): `NNNNNN.log` write-ahead logs, `NNNNNN.sst` tables,
//! `MANIFEST-NNNNNN` version logs, `CURRENT`, `LOCK`, `NNNNNN.blob` blob
//! files (`docs/format/blob.md`) and `NNNNNN.dbtmp` temporaries. All numbers come from one counter kept in the MANIFEST.

use std::path::{Path, PathBuf};

/// What a file in the database directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    /// A write-ahead log.
    Log,
    /// A sorted table.
    Table,
    /// A blob file (separated values).
    Blob,
    /// A MANIFEST (version edit log).
    Manifest,
    /// The CURRENT pointer.
    Current,
    /// The LOCK file.
    Lock,
    /// A temporary file.
    Temp,
}

/// `dir/NNNNNN.log`
pub fn log_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

/// `dir/NNNNNN.sst`
pub fn table_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}

/// `dir/NNNNNN.blob`
pub fn blob_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.blob"))
}

/// `dir/MANIFEST-NNNNNN`
pub fn manifest_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("MANIFEST-{number:06}"))
}

/// `dir/CURRENT`
pub fn current_file_name(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

/// `dir/LOCK`
pub fn lock_file_name(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// `dir/NNNNNN.dbtmp`
pub fn temp_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.dbtmp"))
}

/// Classifies a directory entry by name; `None` for foreign files.
pub fn parse_file_name(name: &str) -> Option<(FileType, u64)> {
    match name {
        "CURRENT" => return Some((FileType::Current, 0)),
        "LOCK" => return Some((FileType::Lock, 0)),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return digits(n).map(|v| (FileType::Manifest, v));
    }
    let (stem, ext) = name.rsplit_once('.')?;
    let number = digits(stem)?;
    let t = match ext {
        "log" => FileType::Log,
        "sst" => FileType::Table,
        "blob" => FileType::Blob,
        "dbtmp" => FileType::Temp,
        _ => return None,
    };
    Some((t, number))
}

fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let d = Path::new("/db");
        for (p, t, n) in [
            (log_file_name(d, 7), FileType::Log, 7),
            (table_file_name(d, 1234567), FileType::Table, 1234567),
            (blob_file_name(d, 12), FileType::Blob, 12),
            (manifest_file_name(d, 3), FileType::Manifest, 3),
            (temp_file_name(d, 9), FileType::Temp, 9),
            (current_file_name(d), FileType::Current, 0),
            (lock_file_name(d), FileType::Lock, 0),
        ] {
            let name = p.file_name().unwrap().to_str().unwrap();
            assert_eq!(parse_file_name(name), Some((t, n)), "{name}");
        }
        for bad in [
            "foo",
            "1.txt",
            ".log",
            "MANIFEST-",
            "MANIFEST-x1",
            "-1.sst",
            "CURRENT.bak",
        ] {
            assert_eq!(parse_file_name(bad), None, "{bad}");
        }
    }
}
