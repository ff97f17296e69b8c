//! `BACKUP DATABASE TO 'dir'`: an online, consistent copy of the whole
//! SQL database ([`SqlDb::checkpoint`]). The data dictionary, the
//! accounts and every table's rows and index entries all live in the one
//! engine database a [`SqlDb`] holds, so one engine checkpoint of it is
//! a copy of everything, as of one sequence number: every transaction
//! committed before the statement began, and of those committing while
//! it runs a prefix in commit order, each whole or absent (a commit is
//! one WAL record). The directory opens as a data directory of its own
//! (`cairndb server --datadir=DIR`) or is the source of `cairndb backup
//! create`.
//!
//! Invariants: the target is an absolute path outside the data
//! directory (1210 otherwise) that does not exist yet (1086); it is
//! written on the server's machine, so the statement needs the RELOAD
//! privilege (1227), as MariaDB's `BACKUP STAGE` does. A failure leaves
//! no openable directory behind (the engine writes CURRENT last and
//! removes what it wrote).
//!
//! Locking: the statement first commits the session's open transaction
//! (as DDL does), so it holds no `schema_lock`; then [`SqlDb::checkpoint`]
//! holds `ddl_lock` while the engine captures and links the files, so no
//! DDL or account change is half done in the copy. Row writes of other
//! sessions go on meanwhile; the engine keeps obsolete files from being
//! deleted until its capture is written.

use std::path::{Path, PathBuf};

use crate::context::StmtCx;
use crate::db::SqlDb;
use crate::error::{SqlError, SqlResult};
use crate::output::{ColumnInfo, OutType, Output};
use crate::types::Value;

/// 1210 for a target that cannot be used.
fn bad_target(why: &str) -> SqlError {
    SqlError::new(
        1210,
        "HY000",
        format!("Incorrect arguments to BACKUP DATABASE: {why}"),
    )
}

impl SqlDb {
    /// Writes a checkpoint of the whole database into `dir` (absolute,
    /// outside the data directory, not existing) while other sessions
    /// keep writing; returns the last sequence number it holds. See the
    /// module comment for what it contains and the errors.
    pub fn checkpoint(&self, dir: &Path) -> SqlResult<u64> {
        if !dir.is_absolute() {
            return Err(bad_target(&format!(
                "the target '{}' is not an absolute path",
                dir.display()
            )));
        }
        if inside(dir, self.db.db().path()) {
            return Err(bad_target(&format!(
                "the target '{}' is inside the data directory",
                dir.display()
            )));
        }
        let _ddl = self.ddl_lock.lock();
        if dir.symlink_metadata().is_ok() {
            return Err(SqlError::new(
                1086,
                "HY000",
                format!("File '{}' already exists", dir.display()),
            ));
        }
        // Flushes the memtable first (RocksDB's default), so the copy's
        // WALs are short.
        cairndb::Checkpoint::create(self.db.db(), dir).map_err(|e| {
            SqlError::new(
                1004,
                "HY000",
                format!("Can't create file '{}' ({e})", dir.display()),
            )
        })
    }
}

/// Whether `target` (which need not exist) lies in `data` or below it,
/// comparing the real paths of `data` and of `target`'s nearest
/// existing ancestor (symbolic links resolved; `..` taken lexically).
fn inside(target: &Path, data: &Path) -> bool {
    let Ok(data) = std::fs::canonicalize(data) else {
        return false;
    };
    let mut target_buf = PathBuf::new();
    for c in target.components() {
        match c {
            std::path::Component::ParentDir => {
                target_buf.pop();
            }
            std::path::Component::CurDir => {}
            other => target_buf.push(other),
        }
    }
    let target = target_buf.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let mut at = target;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            let mut full = real;
            full.extend(rest.iter().rev());
            return full.starts_with(&data);
        }
        match (at.parent(), at.file_name()) {
            (Some(p), Some(name)) => {
                rest.push(name);
                at = p;
            }
            _ => return target.starts_with(&data),
        }
    }
}

/// Runs `BACKUP DATABASE TO 'dir'`: one row, the checkpoint's sequence
/// number (`Sequence`).
pub(crate) fn run(s: &mut StmtCx, target: &str, out: &mut dyn Output) -> SqlResult<()> {
    crate::acl::check_global(s, crate::acl::RELOAD, "RELOAD")?;
    s.commit()?;
    let seq = s.db.checkpoint(Path::new(target))?;
    let mut col = ColumnInfo::computed("Sequence", OutType::LongLong);
    col.unsigned = true;
    col.not_null = true;
    out.columns(&[col]);
    out.row(&[Value::UInt(seq)]);
    out.end(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_below_the_data_directory_is_inside() -> Result<(), String> {
        let d = std::env::temp_dir().join(format!("cairndb-inside-{}", std::process::id()));
        std::fs::create_dir_all(&d).map_err(|e| e.to_string())?;
        let results = [
            inside(&d.join("x/y"), &d),
            inside(&d.join("../other"), &d),
            inside(&d, &d),
            inside(&d.join("x/../../y"), &d),
        ];
        let _ = std::fs::remove_dir_all(&d);
        if results == [true, false, true, false] {
            Ok(())
        } else {
            Err(format!("{results:?}"))
        }
    }
}
