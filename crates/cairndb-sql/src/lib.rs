//! CairnDB's SQL layer: tables and indexes laid out on the engine the way
//! MyRocks lays them out on RocksDB (`docs/format/sql-keys.md`), the data
//! dictionary, expressions, and the planner and executor that
//! `cairndb server` drives. No networking here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod catalog;
pub mod convert;
pub mod error;
pub mod expr;
pub mod funcs;
pub mod keys;
pub mod row;
pub mod types;

pub use error::{SqlError, SqlResult};

/// The server version clients see (`SELECT VERSION()`, the handshake).
pub const SERVER_VERSION: &str = "8.0.36-CairnDB";
