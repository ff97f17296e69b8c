//! The slow query log and the general query log, in MySQL's file
//! formats (`log_output=FILE`; TABLE is refused).
//!
//! General log: a header when the file is opened, then one line per
//! command, `time<TAB>   id Command<TAB>argument`. Slow log: the same
//! header, then per statement that ran longer than `long_query_time`:
//! `# Time:`, `# User@Host:`, `# Query_time: .. Lock_time: ..
//! Rows_sent: .. Rows_examined: ..`, `use db;` when the database
//! differs from the last entry's, `SET timestamp=..;` and the statement
//! followed by `;`.
//!
//! Invariants: whether a log is written is one bit of [`Logs::flags`],
//! read with one relaxed load per statement; the bit is set only while
//! the variable is ON, `log_output` is FILE and the file is open. An
//! entry is formatted into the file's `BufWriter` and flushed whole (one
//! write per entry, no fsync). An I/O error turns that log OFF and is
//! reported once on stderr; the statement never fails for it.
//!
//! Locking: one mutex per log, taken only to write an entry (so only
//! while the log is on) or to change its settings; never held while
//! anything else is locked.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU8, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::error::{SqlError, SqlResult};

/// [`Logs::flags`] bit: the general log is written.
pub(crate) const GENERAL: u8 = 1;
/// [`Logs::flags`] bit: the slow log is written.
pub(crate) const SLOW: u8 = 2;

/// Which log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    General,
    Slow,
}

impl Kind {
    fn bit(self) -> u8 {
        match self {
            Kind::General => GENERAL,
            Kind::Slow => SLOW,
        }
    }

    fn var(self) -> &'static str {
        match self {
            Kind::General => "general_log",
            Kind::Slow => "slow_query_log",
        }
    }
}

/// One log file's state.
struct LogFile {
    /// The variable (`general_log`, `slow_query_log`) is ON.
    on: bool,
    path: PathBuf,
    w: Option<BufWriter<File>>,
    /// The database named by the last slow entry's `use db;`.
    last_db: Option<String>,
}

/// A statement for the slow log.
pub(crate) struct SlowEntry<'a> {
    pub(crate) id: u64,
    pub(crate) user: &'a str,
    pub(crate) account_user: &'a str,
    /// The client's host name (`localhost` for loopback) and address.
    pub(crate) host: &'a str,
    pub(crate) ip: &'a str,
    pub(crate) db: Option<&'a str>,
    pub(crate) started: SystemTime,
    pub(crate) took: Duration,
    pub(crate) rows_sent: u64,
    /// Time the statement waited for row locks.
    pub(crate) lock_time: Duration,
    /// Rows the executor read.
    pub(crate) rows_examined: u64,
    pub(crate) text: &'a str,
}

/// Both logs of a database.
pub(crate) struct Logs {
    flags: AtomicU8,
    /// `log_output` is FILE (else NONE: nothing is written).
    output_file: AtomicBool,
    general: Mutex<LogFile>,
    slow: Mutex<LogFile>,
    /// Where relative file names are resolved (the data directory).
    dir: PathBuf,
    /// The TCP port named in the files' header.
    port: AtomicU16,
}

/// The machine's host name, for the default file names.
fn hostname() -> String {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let h = h.trim();
    if h.is_empty() || h.contains(['/', '\\']) {
        "cairndb".to_string()
    } else {
        h.to_string()
    }
}

impl Logs {
    /// Both logs OFF, their files `<dir>/<hostname>.log` and
    /// `<dir>/<hostname>-slow.log`.
    pub(crate) fn new(dir: &Path) -> Logs {
        let host = hostname();
        let file = |path: PathBuf| {
            Mutex::new(LogFile {
                on: false,
                path,
                w: None,
                last_db: None,
            })
        };
        Logs {
            flags: AtomicU8::new(0),
            output_file: AtomicBool::new(true),
            general: file(dir.join(format!("{host}.log"))),
            slow: file(dir.join(format!("{host}-slow.log"))),
            dir: dir.to_path_buf(),
            port: AtomicU16::new(3306),
        }
    }

    /// Which logs are written now ([`GENERAL`], [`SLOW`]).
    #[inline]
    pub(crate) fn flags(&self) -> u8 {
        self.flags.load(Ordering::Relaxed)
    }

    /// The port the files' header names.
    pub(crate) fn set_port(&self, port: u16) {
        self.port.store(port, Ordering::Relaxed);
    }

    fn file(&self, kind: Kind) -> &Mutex<LogFile> {
        match kind {
            Kind::General => &self.general,
            Kind::Slow => &self.slow,
        }
    }

    /// Whether the variable of `kind` is ON.
    pub(crate) fn enabled(&self, kind: Kind) -> bool {
        self.file(kind).lock().on
    }

    /// The file of `kind`.
    pub(crate) fn path(&self, kind: Kind) -> PathBuf {
        self.file(kind).lock().path.clone()
    }

    /// `log_output`: FILE or NONE.
    pub(crate) fn output(&self) -> &'static str {
        if self.output_file.load(Ordering::Relaxed) {
            "FILE"
        } else {
            "NONE"
        }
    }

    /// Recomputes the flag bit of `kind` from its state.
    fn sync_flag(&self, kind: Kind, f: &LogFile) {
        let on = f.on && f.w.is_some() && self.output_file.load(Ordering::Relaxed);
        if on {
            self.flags.fetch_or(kind.bit(), Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!kind.bit(), Ordering::Relaxed);
        }
    }

    /// Opens `path` for appending and writes the header.
    fn open(&self, path: &Path) -> SqlResult<BufWriter<File>> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                SqlError::new(
                    29,
                    "HY000",
                    format!("File '{}' not found ({e})", path.display()),
                )
            })?;
        let mut w = BufWriter::new(file);
        let exe = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "cairndb".into());
        let header = format!(
            "{exe}, Version: {} (CairnDB). started with:\nTcp port: {}  Unix socket: (none)\nTime                 Id Command    Argument\n",
            crate::SERVER_VERSION,
            self.port.load(Ordering::Relaxed)
        );
        w.write_all(header.as_bytes())
            .and_then(|()| w.flush())
            .map_err(|e| {
                SqlError::new(
                    29,
                    "HY000",
                    format!("File '{}' not writable ({e})", path.display()),
                )
            })?;
        Ok(w)
    }

    /// `SET GLOBAL general_log` / `slow_query_log`: turning it on opens
    /// the file (error 29 if it cannot be; the log stays off).
    pub(crate) fn set_enabled(&self, kind: Kind, on: bool) -> SqlResult<()> {
        let mut f = self.file(kind).lock();
        if on && f.w.is_none() {
            let path = f.path.clone();
            f.w = Some(self.open(&path)?);
            f.last_db = None;
        }
        if !on {
            if let Some(mut w) = f.w.take() {
                let _ = w.flush();
            }
        }
        f.on = on;
        self.sync_flag(kind, &f);
        Ok(())
    }

    /// `SET GLOBAL general_log_file` / `slow_query_log_file`: relative to
    /// the data directory; a directory or a path whose directory does not
    /// exist is refused (1231). An open log moves to the new file.
    pub(crate) fn set_path(&self, kind: Kind, name: &str) -> SqlResult<()> {
        let var = match kind {
            Kind::General => "general_log_file",
            Kind::Slow => "slow_query_log_file",
        };
        let bad = || {
            SqlError::new(
                1231,
                "42000",
                format!("Variable '{var}' can't be set to the value of '{name}'"),
            )
        };
        if name.trim().is_empty() {
            return Err(bad());
        }
        let p = Path::new(name);
        let path = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        };
        let dir_ok = path
            .parent()
            .map(|d| d.as_os_str().is_empty() || d.is_dir())
            .unwrap_or(false);
        if path.is_dir() || !dir_ok {
            return Err(bad());
        }
        let mut f = self.file(kind).lock();
        if f.w.is_some() {
            let w = self.open(&path)?;
            if let Some(mut old) = f.w.replace(w) {
                let _ = old.flush();
            }
            f.last_db = None;
        }
        f.path = path;
        self.sync_flag(kind, &f);
        Ok(())
    }

    /// `SET GLOBAL log_output`: FILE or NONE; TABLE is refused (1235).
    pub(crate) fn set_output(&self, value: &str) -> SqlResult<()> {
        let v = value.trim().to_ascii_uppercase();
        let parts: Vec<&str> = v.split(',').map(str::trim).collect();
        if parts.contains(&"TABLE") {
            return Err(SqlError::unsupported(
                "log_output=TABLE (the logs are written to files only: log_output=FILE)",
            ));
        }
        let file = match parts.as_slice() {
            ["FILE"] => true,
            ["NONE"] => false,
            _ => {
                return Err(SqlError::new(
                    1231,
                    "42000",
                    format!("Variable 'log_output' can't be set to the value of '{value}'"),
                ))
            }
        };
        self.output_file.store(file, Ordering::Relaxed);
        for kind in [Kind::General, Kind::Slow] {
            let f = self.file(kind).lock();
            self.sync_flag(kind, &f);
        }
        Ok(())
    }

    /// `FLUSH LOGS`: closes and reopens the open files (after a rotation
    /// moved them away).
    pub(crate) fn reopen(&self) -> SqlResult<()> {
        for kind in [Kind::General, Kind::Slow] {
            let mut f = self.file(kind).lock();
            if let Some(mut old) = f.w.take() {
                let _ = old.flush();
                drop(old);
                let path = f.path.clone();
                match self.open(&path) {
                    Ok(w) => f.w = Some(w),
                    Err(e) => {
                        f.on = false;
                        self.sync_flag(kind, &f);
                        return Err(e);
                    }
                }
                f.last_db = None;
            }
        }
        Ok(())
    }

    /// Writes one entry with `write`; an I/O error turns the log off,
    /// reported once on stderr.
    fn write(
        &self,
        kind: Kind,
        write: impl FnOnce(&mut BufWriter<File>, &mut Option<String>) -> std::io::Result<()>,
    ) {
        let mut f = self.file(kind).lock();
        let LogFile { w, last_db, .. } = &mut *f;
        let Some(w) = w.as_mut() else {
            return;
        };
        let r = write(w, last_db).and_then(|()| w.flush());
        if let Err(e) = r {
            eprintln!(
                "cairndb: writing {} to {}: {e}; {} is turned OFF",
                kind.var(),
                f.path.display(),
                kind.var()
            );
            f.w = None;
            f.on = false;
            self.sync_flag(kind, &f);
        }
    }

    /// A general log line: `command` (`Query`, `Connect`, ...) of
    /// connection `id` with its argument.
    pub(crate) fn general(&self, id: u64, command: &str, argument: &str) {
        let now = SystemTime::now();
        self.write(Kind::General, |w, _| {
            writeln!(w, "{}\t{id:>5} {command}\t{argument}", iso8601(now))
        });
    }

    /// A slow log entry.
    pub(crate) fn slow(&self, e: &SlowEntry<'_>) {
        let now = SystemTime::now();
        self.write(Kind::Slow, |w, last_db| {
            writeln!(w, "# Time: {}", iso8601(now))?;
            writeln!(
                w,
                "# User@Host: {}[{}] @ {} [{}]  Id: {:>5}",
                e.account_user, e.user, e.host, e.ip, e.id
            )?;
            writeln!(
                w,
                "# Query_time: {:.6}  Lock_time: {:.6} Rows_sent: {}  Rows_examined: {}",
                e.took.as_secs_f64(),
                e.lock_time.as_secs_f64(),
                e.rows_sent,
                e.rows_examined
            )?;
            if let Some(db) = e.db {
                if last_db.as_deref() != Some(db) {
                    writeln!(w, "use {db};")?;
                    *last_db = Some(db.to_string());
                }
            }
            let ts = e
                .started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            writeln!(w, "SET timestamp={ts};")?;
            let text = e.text.trim_end();
            if text.ends_with(';') {
                writeln!(w, "{text}")
            } else {
                writeln!(w, "{text};")
            }
        });
    }
}

/// `2024-05-01T10:00:00.123456Z`.
pub(crate) fn iso8601(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_micros()
    )
}

/// The date `days` after 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso8601_utc_with_microseconds() {
        let t = UNIX_EPOCH + Duration::from_micros(1_714_557_600_123_456);
        assert_eq!(iso8601(t), "2024-05-01T10:00:00.123456Z");
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000000Z");
    }

    #[test]
    fn log_output_table_is_refused_and_none_stops_writing() -> Result<(), String> {
        let dir = std::env::temp_dir().join(format!("cairndb-querylog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let logs = Logs::new(&dir);
        let e = logs.set_output("TABLE").err().map(|e| e.code);
        assert_eq!(e, Some(1235));
        logs.set_path(Kind::General, "g.log")
            .map_err(|e| e.message)?;
        logs.set_enabled(Kind::General, true)
            .map_err(|e| e.message)?;
        assert_eq!(logs.flags(), GENERAL);
        logs.set_output("NONE").map_err(|e| e.message)?;
        assert_eq!(logs.flags(), 0);
        logs.set_output("FILE").map_err(|e| e.message)?;
        logs.general(7, "Query", "SELECT 1");
        let text = std::fs::read_to_string(dir.join("g.log")).map_err(|e| e.to_string())?;
        assert!(text.contains("    7 Query\tSELECT 1\n"), "{text}");
        assert!(text.starts_with("/") || text.contains("Version:"), "{text}");
        let e = logs
            .set_path(Kind::Slow, "/nonexistent-dir/x.log")
            .err()
            .map(|e| e.code);
        assert_eq!(e, Some(1231));
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
