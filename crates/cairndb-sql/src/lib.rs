//! CairnDB's SQL layer: tables and indexes laid out on the engine the way
//! MyRocks lays them out on RocksDB (`docs/format/sql-keys.md`), the data
//! dictionary, and (as it grows) the planner and executor that
//! `cairndb server` drives. No networking here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod keys;
pub mod row;
pub mod types;
