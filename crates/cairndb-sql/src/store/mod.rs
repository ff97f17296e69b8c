//! Tables on the engine: the memcomparable key encodings, the bytes of
//! rows and index entries (`docs/format/sql-keys.md`), the data
//! dictionary those tables are described in, and the offline check that
//! rows and index entries agree.
//!
//! Nothing here plans or evaluates: these are the layouts every other
//! stage reads and writes through.

pub(crate) mod catalog;
pub mod check;
pub(crate) mod keys;
pub(crate) mod row;
