//! CairnDB's SQL layer: tables and indexes laid out on the engine the way
//! MyRocks lays them out on RocksDB (`docs/format/sql-keys.md`), the data
//! dictionary, expressions, and the planner and executor that
//! `cairndb server` drives. No networking here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod acl;
mod alter;
mod backup;
mod catalog;
pub mod check;
mod constraints;
mod convert;
mod cte;
mod datefuncs;
mod db;
mod ddl;
mod depth;
mod dialect;
mod dml;
mod error;
mod exec;
mod expr;
mod funcs;
mod globals;
mod hashjoin;
mod infoschema;
mod json;
mod keys;
mod mathfuncs;
mod output;
mod plan;
mod preparse;
mod querylog;
mod regexfuncs;
mod row;
mod session;
mod show;
mod status;
mod strfuncs;
mod types;
mod vars;
mod view;
mod window;

pub use acl::{AccountAuth, Plugin};
pub use db::{FlushLogAtCommit, SqlDb, SqlOptions};
pub use error::{SqlError, SqlResult};
pub use globals::ServerHooks;
pub use output::{Collect, ColumnInfo, OutType, Output};
pub use preparse::{binary_literals, split_statements};
pub use session::{PrepareInfo, Session, Transport};
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
