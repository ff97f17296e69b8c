//! SQL errors as MySQL reports them: an error number, a SQLSTATE and a
//! message. Engine errors map to the codes MySQL clients know how to
//! handle (a lock wait timeout is 1205, a deadlock or a write conflict
//! 1213, which sysbench and ORMs retry).

use std::fmt;

/// An error with MySQL's number and SQLSTATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    /// MySQL error number (ER_*).
    pub code: u16,
    /// Five-character SQLSTATE.
    pub state: &'static str,
    /// Human-readable message.
    pub message: String,
}

impl SqlError {
    /// An error with the given number, state and message.
    pub fn new(code: u16, state: &'static str, message: impl Into<String>) -> SqlError {
        SqlError {
            code,
            state,
            message: message.into(),
        }
    }

    /// 1064: a syntax error.
    pub fn syntax(message: impl Into<String>) -> SqlError {
        SqlError::new(1064, "42000", message)
    }

    /// 1235: valid SQL that CairnDB does not support.
    pub fn unsupported(what: impl fmt::Display) -> SqlError {
        SqlError::new(
            1235,
            "42000",
            format!("This version of CairnDB doesn't yet support '{what}'"),
        )
    }

    /// 1046: no database selected.
    pub fn no_database() -> SqlError {
        SqlError::new(1046, "3D000", "No database selected")
    }

    /// 1049: unknown database.
    pub fn unknown_database(name: &str) -> SqlError {
        SqlError::new(1049, "42000", format!("Unknown database '{name}'"))
    }

    /// 1007: database exists.
    pub fn database_exists(name: &str) -> SqlError {
        SqlError::new(
            1007,
            "HY000",
            format!("Can't create database '{name}'; database exists"),
        )
    }

    /// 1146: no such table.
    pub fn no_such_table(db: &str, table: &str) -> SqlError {
        SqlError::new(1146, "42S02", format!("Table '{db}.{table}' doesn't exist"))
    }

    /// 1050: table exists.
    pub fn table_exists(table: &str) -> SqlError {
        SqlError::new(1050, "42S01", format!("Table '{table}' already exists"))
    }

    /// 1054: unknown column.
    pub fn unknown_column(name: &str, place: &str) -> SqlError {
        SqlError::new(
            1054,
            "42S22",
            format!("Unknown column '{name}' in '{place}'"),
        )
    }

    /// 1062: duplicate key.
    pub fn duplicate_key(value: &str, index: &str) -> SqlError {
        SqlError::new(
            1062,
            "23000",
            format!("Duplicate entry '{value}' for key '{index}'"),
        )
    }

    /// 1048: NULL into a NOT NULL column.
    pub fn null_not_allowed(column: &str) -> SqlError {
        SqlError::new(1048, "23000", format!("Column '{column}' cannot be null"))
    }

    /// 1264: value out of range for the column (strict mode).
    pub fn out_of_range(column: &str, row: u64) -> SqlError {
        SqlError::new(
            1264,
            "22003",
            format!("Out of range value for column '{column}' at row {row}"),
        )
    }

    /// 1406: string too long for the column (strict mode).
    pub fn data_too_long(column: &str, row: u64) -> SqlError {
        SqlError::new(
            1406,
            "22001",
            format!("Data too long for column '{column}' at row {row}"),
        )
    }

    /// 1366 / 1292: a value that does not convert to the column's type.
    pub fn incorrect_value(kind: &str, value: &str, column: &str, row: u64) -> SqlError {
        SqlError::new(
            1366,
            "HY000",
            format!("Incorrect {kind} value: '{value}' for column '{column}' at row {row}"),
        )
    }

    /// 1317: the statement was killed (`KILL QUERY`).
    pub fn interrupted() -> SqlError {
        SqlError::new(1317, "70100", "Query execution was interrupted")
    }

    /// 3024: the statement ran past `max_execution_time`.
    pub fn execution_time_exceeded() -> SqlError {
        SqlError::new(
            3024,
            "HY000",
            "Query execution was interrupted, maximum statement execution time exceeded",
        )
    }

    /// 1205: a row lock was not granted within `innodb_lock_wait_timeout`.
    pub fn lock_wait_timeout() -> SqlError {
        SqlError::new(
            1205,
            "HY000",
            "Lock wait timeout exceeded; try restarting transaction",
        )
    }

    /// 1213: deadlock (the transaction was rolled back).
    pub fn deadlock() -> SqlError {
        SqlError::new(
            1213,
            "40001",
            "Deadlock found when trying to get lock; try restarting transaction",
        )
    }

    /// 1105: an internal or storage error, with what happened.
    pub fn internal(message: impl Into<String>) -> SqlError {
        SqlError::new(1105, "HY000", message)
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERROR {} ({}): {}", self.code, self.state, self.message)
    }
}

impl std::error::Error for SqlError {}

impl From<cairndb::Error> for SqlError {
    fn from(e: cairndb::Error) -> SqlError {
        match e {
            cairndb::Error::TimedOut { .. } => SqlError::lock_wait_timeout(),
            cairndb::Error::Deadlock { .. } | cairndb::Error::Busy { .. } => SqlError::deadlock(),
            // A lock wait the session's hook stopped (KILL QUERY); the
            // session turns it into 3024 when the time limit stopped it.
            cairndb::Error::Interrupted { .. } => SqlError::interrupted(),
            other => SqlError::internal(format!("storage error: {other}")),
        }
    }
}

/// Result alias of the SQL layer.
pub type SqlResult<T> = std::result::Result<T, SqlError>;
