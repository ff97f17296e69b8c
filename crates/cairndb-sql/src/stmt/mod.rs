//! Statements that are not queries: DDL (CREATE/DROP of databases,
//! tables, indexes and views; ALTER TABLE and RENAME TABLE; TRUNCATE),
//! constraints (FOREIGN KEY, CHECK), SHOW, `information_schema`, system
//! variables, and BACKUP DATABASE.
//!
//! Each takes the session's state and the database and changes the data
//! dictionary under the database's DDL lock (`SqlDb`), or reads it; none
//! runs plans of its own except through `plan` and `exec` (a back-fill, a
//! copy for ALTER, a check of existing rows).

pub(crate) mod alter;
pub(crate) mod backup;
pub(crate) mod constraints;
pub(crate) mod ddl;
pub(crate) mod infoschema;
pub(crate) mod show;
pub(crate) mod stats;
pub(crate) mod vars;
pub(crate) mod view;
