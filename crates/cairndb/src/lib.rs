//! CairnDB: an embedded, persistent, ordered key-value store built as a
//! log-structured merge tree.
//!
//! This file is the one public surface of the crate. `docs/design.md` in the
//! repository explains the components, threads, locks and invariants.
//!
//! ```
//! use cairndb::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path(), Options::default())?;
//! db.put(&WriteOptions::default(), b"apple", b"red")?;
//!
//! let mut batch = WriteBatch::new(); // applied atomically
//! batch.put(b"banana", b"yellow");
//! batch.delete(b"apple");
//! db.write(&WriteOptions { sync: true, ..Default::default() }, batch)?;
//!
//! let snap = db.snapshot(); // a consistent view
//! db.put(&WriteOptions::default(), b"cherry", b"dark red")?;
//! assert_eq!(db.get(&ReadOptions::default(), b"banana")?, Some(b"yellow".to_vec()));
//!
//! let mut it = db.iter(&ReadOptions { snapshot: Some(snap), ..Default::default() })?;
//! it.seek_to_first();
//! let mut keys = Vec::new();
//! while it.valid() {
//!     keys.push(it.key().to_vec());
//!     it.next();
//! }
//! it.status()?;
//! assert_eq!(keys, vec![b"banana".to_vec()]); // cherry came after the snapshot
//! db.close()?;
//! # Ok::<(), cairndb::Error>(())
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod backup;
mod db;
pub mod env;
#[doc(hidden)]
pub mod internals;
mod txn;

// Engine modules live behind `internals` (for the CLI, fuzz targets and
// examples); inside the crate they keep their short paths.
pub(crate) use internals::{
    batch, blob, cache, compaction, error, filename, iter, key, memtable, options, sst, util,
    version, wal,
};

pub use backup::{BackupCopyStats, BackupEngine, BackupEngineOptions, BackupId, BackupInfo};
pub use batch::WriteBatch;
pub use db::checkpoint::{Checkpoint, LiveFiles};
pub use db::events::{
    BlobFileCreationInfo, BlobFileCreationReason, BlobFileDeletionInfo, CompactionJobInfo,
    EventListener, FlushJobInfo, WriteStallCause, WriteStallInfo,
};
pub use db::snapshot::Snapshot;
pub use db::{format_stats, Db, DbStats, WalPosition};
pub use error::{Error, Result};
pub use iter::db_iter::DbIterator;
pub use options::{
    BlobCacheConfig, CompressionType, FixedPrefix, Options, PrepopulateBlobCache, ReadOptions,
    SliceTransform, TableFormat, WalRecoveryMode, WriteOptions, ZipTableOptions, NUM_LEVELS,
};
pub use txn::{
    LockWaitHook, OptimisticTransactionDb, Transaction, TransactionDb, TransactionDbOptions,
    TransactionIterator, TransactionOptions,
};
pub use util::blocking::{blocking, set_thread_blocking_hook, BlockingHook};
