//! CairnDB's SQL layer: tables and indexes laid out on the engine the way
//! MyRocks lays them out on RocksDB (`docs/format/sql-keys.md`), the data
//! dictionary, expressions, and the planner and executor that
//! `cairndb server` drives. No networking here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod acl;
mod alter;
mod backup;
pub mod catalog;
pub mod check;
mod constraints;
pub mod convert;
pub mod cte;
pub mod datefuncs;
pub mod db;
mod ddl;
mod depth;
pub mod dialect;
mod dml;
pub mod error;
pub mod exec;
pub mod expr;
pub mod funcs;
mod globals;
mod hashjoin;
mod infoschema;
mod json;
pub mod keys;
pub mod mathfuncs;
pub mod output;
pub mod plan;
pub mod preparse;
mod querylog;
mod regexfuncs;
pub mod row;
pub mod session;
mod show;
pub mod status;
mod strfuncs;
pub mod types;
mod vars;
mod view;
pub mod window;

pub use acl::{AccountAuth, Plugin};
pub use db::{FlushLogAtCommit, SqlDb, SqlOptions};
pub use error::{SqlError, SqlResult};
pub use globals::ServerHooks;
pub use output::{Collect, ColumnInfo, OutType, Output};
pub use preparse::split_statements;
pub use session::{PrepareInfo, Session, Transport};
pub use types::Value;

/// The server version clients see (`SELECT VERSION()`, the handshake).
pub const SERVER_VERSION: &str = "8.0.36-CairnDB";
