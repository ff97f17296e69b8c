//! Sorted string tables: immutable files of sorted internal keys
//! (`docs/format/sstable.md`).
//!
//! `builder` writes a table front to back; `table` opens one and serves point
//! lookups and iterators; `block`, `filter`, `properties` and `format` are the
//! pieces of the file format. Tables are immutable once finished, so a `Table`
//! is shared read-only (`Arc<Table>`) without locks.

pub mod block;
pub mod builder;
pub mod filter;
pub mod format;
pub mod properties;
pub mod table;

pub use builder::{TableBuilder, TableFileInfo, TableOptions};
pub use properties::TableProperties;
pub use table::{Table, TableIter};
