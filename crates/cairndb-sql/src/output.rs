//! What a statement produces, handed to the caller (the server encodes it
//! in the MySQL protocol; tests collect it): an OK with counts, or a
//! result set of typed columns and rows.
//!
//! Invariant: a result set is `columns`, zero or more `row`s, then
//! `end`; every value of a column converts to the column's [`OutType`]
//! (NULL aside), which the binary protocol relies on.

use crate::types::{Collation, ColumnType, StrKind, Value};

/// MySQL field types a result column is sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutType {
    /// TINYINT
    Tiny,
    /// SMALLINT
    Short,
    /// MEDIUMINT
    Int24,
    /// INT
    Long,
    /// BIGINT
    LongLong,
    /// DECIMAL
    NewDecimal,
    /// FLOAT
    Float,
    /// DOUBLE
    Double,
    /// CHAR / BINARY
    String,
    /// VARCHAR / VARBINARY, and computed strings
    VarString,
    /// TEXT / BLOB
    Blob,
    /// DATE
    Date,
    /// DATETIME
    DateTime,
    /// TIMESTAMP
    Timestamp,
    /// A column that is always NULL
    Null,
    /// YEAR
    Year,
    /// TIME
    Time,
    /// BIT
    Bit,
    /// JSON
    Json,
}

/// A result column's description.
#[derive(Debug, Clone)]
pub struct ColumnInfo {
    /// Database of the underlying column ("" if computed).
    pub schema: String,
    /// Table alias ("" if computed).
    pub table: String,
    /// Table name ("" if computed).
    pub org_table: String,
    /// Column label.
    pub name: String,
    /// Underlying column name ("" if computed).
    pub org_name: String,
    /// Type sent.
    pub ty: OutType,
    /// Collation id: 63 (binary) for numbers and bytes, else the text's.
    pub charset: u16,
    /// Display length.
    pub length: u32,
    /// Decimals.
    pub decimals: u8,
    /// UNSIGNED.
    pub unsigned: bool,
    /// NOT NULL.
    pub not_null: bool,
    /// Part of the primary key.
    pub primary_key: bool,
    /// AUTO_INCREMENT.
    pub auto_increment: bool,
    /// The first column of a one-column UNIQUE secondary index.
    pub unique_key: bool,
    /// The first column of a non-unique (or several-column) secondary
    /// index.
    pub multiple_key: bool,
    /// Binary data (BLOB, BINARY kinds).
    pub binary: bool,
    /// An ENUM column (sent as a string with ENUM_FLAG).
    pub is_enum: bool,
    /// A SET column (sent as a string with SET_FLAG).
    pub is_set: bool,
}

impl ColumnInfo {
    /// A computed column named `name` of type `ty`.
    pub fn computed(name: &str, ty: OutType) -> ColumnInfo {
        let (charset, length, decimals) = match ty {
            OutType::VarString | OutType::String | OutType::Blob => (45, 1024, 31),
            OutType::Double | OutType::Float => (63, 23, 31),
            OutType::NewDecimal => (63, 66, 4),
            OutType::LongLong => (63, 21, 0),
            OutType::DateTime | OutType::Timestamp => (63, 19, 0),
            OutType::Date | OutType::Time => (63, 10, 0),
            OutType::Year => (63, 4, 0),
            OutType::Json => (63, u32::MAX, 0),
            _ => (63, 11, 0),
        };
        ColumnInfo {
            schema: String::new(),
            table: String::new(),
            org_table: String::new(),
            name: name.to_string(),
            org_name: String::new(),
            ty,
            charset,
            length,
            decimals,
            unsigned: false,
            not_null: false,
            primary_key: false,
            auto_increment: false,
            unique_key: false,
            multiple_key: false,
            binary: ty == OutType::Json,
            is_enum: false,
            is_set: false,
        }
    }

    /// A text column (SHOW output and the like).
    pub fn text(name: &str) -> ColumnInfo {
        ColumnInfo::computed(name, OutType::VarString)
    }

    /// A table column.
    pub fn of_column(ty: &ColumnType, name: &str) -> ColumnInfo {
        let (out, charset, length, decimals, unsigned, binary) = match *ty {
            ColumnType::Int { bytes, unsigned } => {
                let (t, len) = match bytes {
                    1 => (OutType::Tiny, 4),
                    2 => (OutType::Short, 6),
                    3 => (OutType::Int24, 9),
                    4 => (OutType::Long, 11),
                    _ => (OutType::LongLong, 20),
                };
                (t, 63, len, 0, unsigned, false)
            }
            ColumnType::Decimal { precision, scale } => (
                OutType::NewDecimal,
                63,
                u32::from(precision) + 2,
                scale,
                false,
                false,
            ),
            ColumnType::Float => (OutType::Float, 63, 12, 31, false, false),
            ColumnType::Double => (OutType::Double, 63, 22, 31, false, false),
            ColumnType::Str {
                kind,
                max_len,
                collation,
            } => {
                let t = match kind {
                    StrKind::Char | StrKind::Binary => OutType::String,
                    StrKind::VarChar | StrKind::VarBinary => OutType::VarString,
                    StrKind::Text | StrKind::Blob => OutType::Blob,
                };
                let binary = collation == Collation::Binary;
                let mult = if binary { 1 } else { 4 };
                (
                    t,
                    collation.id(),
                    max_len.saturating_mul(mult),
                    0,
                    false,
                    binary,
                )
            }
            ColumnType::Date => (OutType::Date, 63, 10, 0, false, false),
            ColumnType::DateTime { fsp } => (
                OutType::DateTime,
                63,
                19 + u32::from(fsp) + u32::from(fsp > 0),
                fsp,
                false,
                false,
            ),
            ColumnType::Timestamp { fsp } => (
                OutType::Timestamp,
                63,
                19 + u32::from(fsp) + u32::from(fsp > 0),
                fsp,
                false,
                false,
            ),
            ColumnType::Enum { collation, .. } | ColumnType::Set { collation, .. } => {
                (OutType::String, collation.id(), 1020, 0, false, false)
            }
            ColumnType::Year => (OutType::Year, 63, 4, 0, true, false),
            ColumnType::Time { fsp } => (
                OutType::Time,
                63,
                10 + u32::from(fsp) + u32::from(fsp > 0),
                fsp,
                false,
                false,
            ),
            ColumnType::Bit { bits } => (OutType::Bit, 63, u32::from(bits), 0, true, false),
            // As MySQL sends it: binary charset, the largest length.
            ColumnType::Json => (OutType::Json, 63, u32::MAX, 0, false, true),
        };
        ColumnInfo {
            schema: String::new(),
            table: String::new(),
            org_table: String::new(),
            name: name.to_string(),
            org_name: name.to_string(),
            ty: out,
            charset,
            length,
            decimals,
            unsigned,
            not_null: false,
            primary_key: false,
            auto_increment: false,
            unique_key: false,
            multiple_key: false,
            binary,
            is_enum: matches!(ty, ColumnType::Enum { .. }),
            is_set: matches!(ty, ColumnType::Set { .. }),
        }
    }
}

/// Receives a statement's results.
pub trait Output {
    /// The statement changed `affected` rows (or succeeded without a
    /// result set).
    fn ok(&mut self, affected: u64, last_insert_id: u64, warnings: u16, info: &str);
    /// A result set starts.
    fn columns(&mut self, cols: &[ColumnInfo]);
    /// One row (as many values as columns).
    fn row(&mut self, values: &[Value]);
    /// The result set ends.
    fn end(&mut self, warnings: u16);
}

/// An [`Output`] that keeps everything (tests, tools).
#[derive(Debug, Default)]
pub struct Collect {
    /// Columns of the last result set.
    pub columns: Vec<ColumnInfo>,
    /// Rows of the last result set.
    pub rows: Vec<Vec<Value>>,
    /// (affected, last_insert_id) of the last OK.
    pub ok: Option<(u64, u64)>,
    /// The warning count of the last OK or result set.
    pub warnings: u16,
}

impl Output for Collect {
    fn ok(&mut self, affected: u64, last_insert_id: u64, warnings: u16, _info: &str) {
        self.ok = Some((affected, last_insert_id));
        self.warnings = warnings;
    }
    fn columns(&mut self, cols: &[ColumnInfo]) {
        self.columns = cols.to_vec();
        self.rows.clear();
    }
    fn row(&mut self, values: &[Value]) {
        self.rows.push(values.to_vec());
    }
    fn end(&mut self, warnings: u16) {
        self.warnings = warnings;
    }
}
