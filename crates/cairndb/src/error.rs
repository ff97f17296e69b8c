//! The one error type of the engine.
//!
//! Every failure that reaches a caller is an [`Error`]: it says *what* went
//! wrong and *where* (a path, a file offset, an option name). Errors are
//! `Clone` so that one failure of a group commit or a background job can be
//! handed to every writer that depends on it; I/O errors are kept behind an
//! `Arc` for that reason.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in CairnDB.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed.
    Io {
        /// What the engine was doing ("open", "read", "fdatasync", ...).
        op: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        source: Arc<std::io::Error>,
    },
    /// Stored data failed a check: a checksum, a length, a magic number.
    Corruption {
        /// The file that holds the bad bytes.
        file: PathBuf,
        /// Byte offset inside `file` where the bad data starts.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// A caller passed a value the engine cannot accept (an option, a key).
    InvalidArgument(String),
    /// Another opener holds the database's LOCK file.
    LockFileHeld {
        /// The LOCK file that is held.
        path: PathBuf,
    },
    /// A transaction conflicts with a write it cannot see: the key changed
    /// after the transaction's snapshot (or, optimistically, after it was
    /// read), or the database's lock limit was reached. Roll back and
    /// retry.
    Busy {
        /// The key concerned.
        key: Vec<u8>,
        /// Why.
        reason: &'static str,
    },
    /// A transaction waited `lock_timeout` for a lock held by another.
    TimedOut {
        /// The key whose lock was not granted.
        key: Vec<u8>,
        /// How long the transaction waited.
        waited: std::time::Duration,
    },
    /// Waiting for the lock would close a cycle of transactions waiting on
    /// each other. The transaction that got this error was rolled back and
    /// its locks released.
    Deadlock {
        /// The key whose lock would have closed the cycle.
        key: Vec<u8>,
    },
    /// A lock wait was stopped by the transaction's
    /// [`LockWaitHook`](crate::LockWaitHook) (a killed statement, a time
    /// limit). Nothing the transaction holds changed.
    Interrupted {
        /// The key whose lock was being waited for.
        key: Vec<u8>,
    },
    /// The database hit an unrecoverable background or write error earlier and
    /// refuses further writes until it is reopened. Reads keep working.
    ReadOnly {
        /// The error that put the database into this state.
        cause: Box<Error>,
    },
    /// The database has been closed.
    Closed,
}

impl Error {
    /// Builds an [`Error::Io`].
    pub fn io(op: &'static str, path: impl AsRef<Path>, source: std::io::Error) -> Error {
        Error::Io {
            op,
            path: path.as_ref().to_path_buf(),
            source: Arc::new(source),
        }
    }

    /// Builds an [`Error::Corruption`].
    pub fn corruption(file: impl AsRef<Path>, offset: u64, what: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.as_ref().to_path_buf(),
            offset,
            what: what.into(),
        }
    }

    /// Builds an [`Error::InvalidArgument`].
    pub fn invalid(what: impl Into<String>) -> Error {
        Error::InvalidArgument(what.into())
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// True when an `Io` error (possibly wrapped in `ReadOnly`) has the given kind.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            Error::Io { source, .. } => Some(source.kind()),
            Error::ReadOnly { cause } => cause.io_kind(),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, path, source } => {
                write!(f, "I/O error during {op} on {}: {source}", path.display())
            }
            Error::Corruption { file, offset, what } => {
                write!(
                    f,
                    "corruption in {} at offset {offset}: {what}",
                    file.display()
                )
            }
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::LockFileHeld { path } => write!(
                f,
                "database is in use: lock file {} is held by another opener",
                path.display()
            ),
            Error::Busy { key, reason } => write!(
                f,
                "transaction conflict on key \"{}\": {reason}",
                key.escape_ascii()
            ),
            Error::TimedOut { key, waited } => write!(
                f,
                "lock wait timed out after {} ms on key \"{}\"",
                waited.as_millis(),
                key.escape_ascii()
            ),
            Error::Deadlock { key } => write!(
                f,
                "deadlock found waiting for the lock on key \"{}\"; the transaction was rolled back",
                key.escape_ascii()
            ),
            Error::Interrupted { key } => write!(
                f,
                "lock wait on key \"{}\" interrupted",
                key.escape_ascii()
            ),
            Error::ReadOnly { cause } => write!(
                f,
                "database is read-only after an earlier error (reopen to recover): {cause}"
            ),
            Error::Closed => write!(f, "database is closed"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.as_ref()),
            Error::ReadOnly { cause } => Some(cause.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_and_offset() {
        let e = Error::corruption("/db/000007.sst", 4096, "block checksum mismatch");
        let s = e.to_string();
        assert!(s.contains("/db/000007.sst"), "{s}");
        assert!(s.contains("4096"), "{s}");
        assert!(e.is_corruption());
    }

    #[test]
    fn readonly_keeps_io_kind() {
        let e = Error::io(
            "write",
            "/db/x",
            std::io::Error::new(std::io::ErrorKind::StorageFull, "full"),
        );
        let r = Error::ReadOnly { cause: Box::new(e) };
        assert_eq!(r.io_kind(), Some(std::io::ErrorKind::StorageFull));
    }
}
