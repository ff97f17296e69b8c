//! CairnDB: an embedded, persistent, ordered key-value store built as a
//! log-structured merge tree.
//!
//! This file is the one public surface of the crate.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod batch;
pub mod cache;
pub mod env;
pub mod error;
pub mod filename;
pub mod iter;
pub mod key;
pub mod memtable;
pub mod options;
pub mod sst;
pub mod util;
pub mod version;
pub mod wal;

pub mod compaction;
mod db;

pub use batch::WriteBatch;
pub use db::snapshot::Snapshot;
pub use db::{format_stats, Db, DbStats};
pub use error::{Error, Result};
pub use iter::db_iter::DbIterator;
pub use options::{
    CompressionType, FixedPrefix, Options, ReadOptions, SliceTransform, WalRecoveryMode,
    WriteOptions,
};
