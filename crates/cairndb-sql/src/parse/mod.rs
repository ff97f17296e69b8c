//! Parsing: a query text split into statements, the statements read
//! before (or instead of) `sqlparser` (transaction control, SET, USE,
//! SQL-level PREPARE, ...), the dialect `sqlparser` parses the rest with,
//! and the depth bound read from the text before any tree is built.
//!
//! Nothing here touches the database: parsing turns text into a
//! statement or a syntax error (1064), or refuses a text too deep to walk
//! (1436), and nothing else.

pub(crate) mod depth;
pub(crate) mod dialect;
pub(crate) mod preparse;
pub(crate) mod statement;
