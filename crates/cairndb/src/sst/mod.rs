//! Sorted string tables: immutable files of sorted internal keys
//! (`docs/format/sstable.md`).
//!
//! `builder` writes a block-based table front to back; `table` opens a table
//! of either format and serves point lookups and iterators; `zip` is the
//! searchable-compression format (`docs/format/ziptable.md`); `block`, `filter`, `properties` and `format` are the
//! pieces of the file format. Tables are immutable once finished, so a `Table`
//! is shared read-only (`Arc<Table>`) without locks.

pub mod block;
pub mod builder;
pub mod filter;
pub mod format;
pub mod properties;
pub mod table;
pub mod zip;

pub use builder::{TableBuilder, TableFileInfo, TableOptions};
pub use properties::TableProperties;
pub use table::{BlockTable, BlockTableIter, Table, TableIter};
pub use zip::{ZipBuildEnv, ZipMemBudget, ZipStats, ZipTable, ZipTableBuilder};
