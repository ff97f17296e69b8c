//! Engine internals, outside the supported API: the file formats, the
//! memtable, tables, versions and iterators that `cairndb verify`, `dump`,
//! the fuzz targets and the examples need. Hidden from the documentation;
//! nothing here is covered by semver.
//!
//! The modules are declared here (with their files beside `lib.rs`) so that
//! `lib.rs` exposes only the API; the crate itself reaches them through the
//! `pub(crate)` re-exports in `lib.rs` (`crate::sst`, `crate::wal`, ...).

#![allow(missing_docs)]

#[path = "batch.rs"]
pub mod batch;
#[path = "blob/mod.rs"]
pub mod blob;
#[path = "cache/mod.rs"]
pub mod cache;
#[path = "compaction/mod.rs"]
pub mod compaction;
#[path = "error.rs"]
pub mod error;
#[path = "filename.rs"]
pub mod filename;
#[path = "iter/mod.rs"]
pub mod iter;
#[path = "key.rs"]
pub mod key;
#[path = "memtable/mod.rs"]
pub mod memtable;
#[path = "options.rs"]
pub mod options;
#[path = "sst/mod.rs"]
pub mod sst;
#[path = "util/mod.rs"]
pub mod util;
#[path = "version/mod.rs"]
pub mod version;
#[path = "wal/mod.rs"]
pub mod wal;
