//! The MySQL client/server protocol (protocol 41), server side, for
//! `cairndb server`.
//!
//! This crate owns the network: it accepts TCP connections, performs the
//! handshake, the TLS upgrade ([`Tls`]) and authentication, frames packets, decodes commands and
//! prepared-statement parameters, and encodes results. It knows no SQL: a
//! [`Backend`] opens one [`Session`] per authenticated connection, and the
//! session answers each command by writing into a [`Results`] sink, which
//! encodes straight into the connection's output buffer (text rows for
//! COM_QUERY, binary rows for COM_STMT_EXECUTE) without allocating per row.
//!
//! Entry points: [`serve`] (bind, print the address, run until a shutdown
//! future resolves) and [`Server`] (bind first, read the bound address,
//! then run). `docs/server-protocol.md` lists what is implemented.
//!
//! Threads: connections are tokio tasks. A session call may block (row
//! locks), so it runs off the async scheduler, by
//! `tokio::task::block_in_place` or on tokio's blocking pool
//! ([`Executor`]). A session is only ever called from one thread at a time.

#![forbid(unsafe_code)]

mod api;
mod auth;
mod conn;
mod framing;
mod hosts;
mod params;
mod results;
mod server;
mod tls;
mod wire;

pub use api::{
    AccountAuth, Backend, Closer, Column, ConnInfo, DateTime, PasswordCheck, Prepared, Results,
    RowWriter, Session, SqlError, Time, Value,
};
pub use hosts::{Hosts, MAX_HOSTS};
pub use mysql_common::constants::{ColumnFlags, ColumnType, StatusFlags};
pub use server::{
    blocking, serve, shutdown_signal, AuthPlugin, Config, Counters, Executor, Server,
};
pub use tls::{auto_generate_certs, CertFiles, RsaKeys, Tls, TlsInfo};

/// Test and fuzzing hooks; not a stable interface.
#[doc(hidden)]
pub mod internals {
    pub use crate::server::drive_connection;
}
