//! CairnDB's SQL layer: tables and indexes laid out on the engine the way
//! MyRocks lays them out on RocksDB (`docs/format/sql-keys.md`), the data
//! dictionary, expressions, and the planner and executor that
//! `cairndb server` drives. No networking here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

// Folders by stage; the arrows run session -> plan -> exec -> engine,
// with expr and types below plan and exec, store below all of them, and
// stmt beside plan (statements that are not queries). Inside the crate
// the modules keep their short paths (`crate::row`, `crate::dml`).
mod acl;
mod context;
mod db;
mod error;
mod exec;
mod expr;
mod globals;
mod output;
mod parse;
mod plan;
mod querylog;
mod session;
mod sha2crypt;
mod status;
mod stmt;
mod store;
mod types;

pub(crate) use exec::{dml, hashjoin, spill, window};
pub(crate) use expr::{datefuncs, funcs, json, mathfuncs, regexfuncs, strfuncs};
pub(crate) use parse::{depth, dialect, preparse};
pub(crate) use plan::cte;
pub(crate) use stmt::{alter, backup, constraints, ddl, infoschema, show, stats, vars, view};
pub use store::check;
pub(crate) use store::{catalog, keys, row};
pub(crate) use types::convert;

pub use acl::{AccountAuth, Plugin};
pub use context::Transport;
pub use db::{FlushLogAtCommit, SqlDb, SqlOptions};
pub use error::{SqlError, SqlResult};
pub use globals::ServerHooks;
pub use output::{Collect, ColumnInfo, OutType, Output};
pub use preparse::{binary_literals, split_statements};
pub use session::{PrepareInfo, Session};
pub use types::Value;

/// Values as a protocol adapter sends and receives them: dates and times
/// packed and unpacked, a decimal's text, a value's text form and its
/// integer reading.
pub mod value {
    pub use crate::expr::{text_of, to_i64};
    pub use crate::types::{
        format_decimal, pack_date, pack_datetime, unpack_date, unpack_datetime,
    };
}

/// The layer's internal modules, for its integration tests and the
/// fuzz targets only: no stability promise, not part of the API.
#[doc(hidden)]
pub mod internals {
    /// Data dictionary records (`docs/format/sql-keys.md`).
    pub mod catalog {
        pub use crate::catalog::{database_key, encode_database, encode_table, table_key};
    }
    pub use crate::keys::index_id;
    pub use crate::row::{decode_row, pk_key, row_value, TableDef};
}

/// The server version clients see (`SELECT VERSION()`, the handshake).
pub const SERVER_VERSION: &str = "8.0.36-CairnDB";
