//! The searchable-compression table format (`docs/format/ziptable.md`),
//! after TerarkDB's TerarkZipTable: an fst over the table's user keys maps a
//! key to its record number; values are compressed in small groups against a
//! zstd dictionary trained from the table's own values and found through a
//! sampled, bit-packed offset array, so a point read decompresses one group,
//! not a block. Files are read through mmap; groups decoded by reads are
//! kept in the block cache when there is one.
//!
//! `builder` writes a table (inside flush or compaction, under a working-
//! memory limit); `table` reads one; `format` holds the footer, meta section
//! and constants; `hexrun` the version-4 filter of hex digits; `bitpack` the packed arrays; `cursor` an iterator's
//! position in the key index. Tables are immutable once
//! written: readers share them without locks.

pub mod bitpack;
pub mod builder;
mod cursor;
pub mod format;
pub mod hexrun;
pub mod table;

pub use builder::{ZipBuildEnv, ZipMemBudget, ZipTableBuilder};
pub use table::{ZipStats, ZipTable, ZipTableIter};

#[cfg(test)]
mod tests;
