//! Table schemas and the bytes of their rows and index entries on the
//! engine (`docs/format/sql-keys.md`):
//!
//! * primary key: `index_id ‖ key(pk columns)` → `0x01 ‖ null bitmap ‖
//!   non-key columns ‖ originals of text key columns`;
//! * secondary index: `index_id ‖ key(index columns) ‖ key(pk columns
//!   not in the index)` → originals of its text columns (often empty);
//! * a table without a primary key gets a hidden 8-byte one.
//!
//! Invariants: keys of one index order as the index's SQL order (see
//! `keys.rs`); decoding what was encoded gives back the row, with CHAR
//! columns' trailing spaces removed as MySQL does. Decoders return
//! `None` on malformed bytes, never panic. No locks, no I/O.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use crate::keys::{self, KEY_NOT_NULL, KEY_NULL};
use crate::types::{Collation, ColumnType, StrKind, Value};

/// Format byte that starts every primary-key row value.
pub const ROW_FORMAT_V1: u8 = 0x01;

/// One column of a table.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ColumnDef {
    /// Its name as created.
    pub name: String,
    /// Its type.
    pub ty: ColumnType,
    /// NULL allowed.
    pub nullable: bool,
    /// DEFAULT (None: no default, or NULL for a nullable column).
    pub default: Option<Value>,
    /// AUTO_INCREMENT.
    pub auto_increment: bool,
    /// A declared display width clients read: 1 for BOOL / TINYINT(1),
    /// which MySQL's drivers map to a boolean. None otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_width: Option<u32>,
    /// COMMENT (empty: none). Absent from dictionaries written before
    /// comments were kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comment: String,
    /// The members of an ENUM or SET column, in definition order (empty
    /// for other types, and absent from their dictionary records).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elements: Vec<String>,
}

impl ColumnDef {
    /// The column's SQL type as SHOW CREATE TABLE prints it.
    pub fn type_sql(&self) -> String {
        match (self.ty, self.display_width) {
            (ColumnType::Int { bytes: 1, unsigned }, Some(w)) => {
                format!("tinyint({w}){}", if unsigned { " unsigned" } else { "" })
            }
            (ColumnType::Enum { .. } | ColumnType::Set { .. }, _) => {
                let list: Vec<String> = self
                    .elements
                    .iter()
                    .map(|e| format!("'{}'", e.replace('\\', "\\\\").replace('\'', "''")))
                    .collect();
                format!("{}({})", self.ty.sql(), list.join(","))
            }
            _ => self.ty.sql(),
        }
    }

    /// The display length MySQL sends for an ENUM (its longest member)
    /// or SET (all members and their commas) column: characters times 4
    /// (utf8mb4). None for other types.
    pub fn member_length(&self) -> Option<u32> {
        let chars = |e: &String| e.chars().count() as u32;
        let n = match self.ty {
            ColumnType::Enum { .. } => self.elements.iter().map(chars).max().unwrap_or(0),
            ColumnType::Set { .. } => {
                let sum: u32 = self.elements.iter().map(|e| chars(e) + 1).sum();
                sum.saturating_sub(1)
            }
            _ => return None,
        };
        let mult = if self.ty.collation() == Collation::Binary {
            1
        } else {
            4
        };
        Some(n.saturating_mul(mult))
    }

    /// The string of ENUM index `i` (1-based; 0 and out of range: empty).
    pub fn enum_text(&self, i: u64) -> Vec<u8> {
        usize::try_from(i)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| self.elements.get(i))
            .map(|e| e.as_bytes().to_vec())
            .unwrap_or_default()
    }

    /// The string of SET bitmask `m`: its members in definition order,
    /// joined by commas.
    pub fn set_text(&self, m: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, e) in self.elements.iter().enumerate().take(64) {
            if m & (1u64 << i) != 0 {
                if !out.is_empty() {
                    out.push(b',');
                }
                out.extend_from_slice(e.as_bytes());
            }
        }
        out
    }

    /// The member value of an ENUM or SET column for index or bitmask
    /// `n` (other types: `n` as an unsigned integer).
    pub fn member(&self, n: u64) -> Value {
        match self.ty {
            ColumnType::Enum { .. } => Value::Member(n, self.enum_text(n)),
            ColumnType::Set { .. } => Value::Member(n, self.set_text(n)),
            _ => Value::UInt(n),
        }
    }
}

/// An index: its engine id and columns (positions in the table).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(into = "IndexWire", from = "IndexWire")]
pub struct IndexDef {
    /// Its name (`PRIMARY` for the primary key).
    pub name: String,
    /// The 4-byte id every key of the index starts with.
    pub id: u32,
    /// Column positions, in index order.
    pub columns: Vec<usize>,
    /// UNIQUE (always for the primary key).
    pub unique: bool,
    /// Per key part, the characters (bytes for binary strings) of the
    /// column's value the key keeps (`KEY (a(10))`); 0, or a part past
    /// the end of the list, keeps the whole value. Empty for an index
    /// without prefix parts. Only secondary indexes have prefix parts.
    pub prefix: Vec<u32>,
}

/// A key part as the dictionary writes it: a column position, or
/// `[position, prefix length]` for a prefix part (docs/format/sql-keys.md,
/// "Data dictionary"). A reader without prefix parts fails to decode the
/// pair and reports the table as damaged instead of misreading its keys.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum KeyPartWire {
    Whole(usize),
    Prefix(usize, u32),
}

/// [`IndexDef`]'s dictionary form: the fields in their order, key parts
/// as [`KeyPartWire`], so an index without prefix parts is written byte
/// for byte as before prefix parts existed.
#[derive(serde::Serialize, serde::Deserialize)]
struct IndexWire {
    name: String,
    id: u32,
    columns: Vec<KeyPartWire>,
    unique: bool,
}

impl From<IndexDef> for IndexWire {
    fn from(ix: IndexDef) -> IndexWire {
        let columns = ix
            .columns
            .iter()
            .enumerate()
            .map(|(k, &c)| match ix.prefix_of(k) {
                0 => KeyPartWire::Whole(c),
                n => KeyPartWire::Prefix(c, n),
            })
            .collect();
        IndexWire {
            name: ix.name,
            id: ix.id,
            columns,
            unique: ix.unique,
        }
    }
}

impl From<IndexWire> for IndexDef {
    fn from(w: IndexWire) -> IndexDef {
        let mut columns = Vec::with_capacity(w.columns.len());
        let mut prefix = Vec::new();
        for (k, p) in w.columns.into_iter().enumerate() {
            match p {
                KeyPartWire::Whole(c) => columns.push(c),
                KeyPartWire::Prefix(c, n) => {
                    columns.push(c);
                    prefix.resize(k, 0);
                    prefix.push(n);
                }
            }
        }
        IndexDef {
            name: w.name,
            id: w.id,
            columns,
            unique: w.unique,
            prefix,
        }
    }
}

impl IndexDef {
    /// The prefix length of key part `k` (0: the whole value).
    pub fn prefix_of(&self, k: usize) -> u32 {
        self.prefix.get(k).copied().unwrap_or(0)
    }

    /// Whether some key part keeps only a prefix of its column.
    pub fn has_prefix(&self) -> bool {
        self.prefix.iter().any(|n| *n > 0)
    }

    /// Whether column `c` is a key part kept whole (so the index entry
    /// gives its value).
    pub fn whole(&self, c: usize) -> bool {
        self.columns
            .iter()
            .enumerate()
            .any(|(k, x)| *x == c && self.prefix_of(k) == 0)
    }
}

/// A unique key's values as error 1062 shows them: each part's value
/// (a prefix part's kept start), joined by `-`.
pub fn shown_key(t: &TableDef, ix: &IndexDef, vals: &[Value]) -> String {
    let mut out = Vec::with_capacity(vals.len());
    for (k, (v, c)) in vals.iter().zip(&ix.columns).enumerate() {
        let n = ix.prefix_of(k);
        match (v, t.columns.get(*c)) {
            (Value::Str(s), Some(col)) if n > 0 => {
                out.push(String::from_utf8_lossy(key_prefix(&col.ty, s, n)).into_owned())
            }
            _ => out.push(v.to_string()),
        }
    }
    out.join("-")
}

/// MySQL's error for a prefix key part it cannot take.
pub(crate) fn bad_prefix() -> crate::error::SqlError {
    crate::error::SqlError::new(
        1089,
        "HY000",
        "Incorrect prefix key; the used key part isn't a string, the used length is longer than the key part, or the storage engine doesn't support unique prefix keys",
    )
}

/// The first `n` characters of a text value (bytes of a binary one), as
/// a prefix key part keeps them.
pub fn key_prefix<'a>(ty: &ColumnType, s: &'a [u8], n: u32) -> &'a [u8] {
    let n = n as usize;
    if !ty.is_text() {
        return s.get(..n).unwrap_or(s);
    }
    // Characters start at bytes that are not UTF-8 continuation bytes.
    let mut chars = 0;
    for (i, b) in s.iter().enumerate() {
        if b & 0xC0 != 0x80 {
            if chars == n {
                return s.get(..i).unwrap_or(s);
            }
            chars += 1;
        }
    }
    s
}

/// Appends the key form of `v` for column `col` in a key part that keeps
/// `prefix` characters of it (0: all; see [`IndexDef::prefix`]).
pub fn put_key_part(out: &mut Vec<u8>, col: &ColumnDef, prefix: u32, v: &Value) {
    put_key_cut(out, &col.ty, col.nullable, v, prefix)
}

/// A table's schema.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TableDef {
    /// Its name as created.
    pub name: String,
    /// Its columns, in order.
    pub columns: Vec<ColumnDef>,
    /// The primary key; with `hidden_pk`, its `columns` is empty and the
    /// key is a hidden 8-byte row id.
    pub primary: IndexDef,
    /// True when the table declared no primary key.
    pub hidden_pk: bool,
    /// Secondary indexes.
    pub secondary: Vec<IndexDef>,
    /// The table's COMMENT (empty: none). Absent from dictionaries
    /// written before comments were kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comment: String,
    /// `AUTO_INCREMENT = n` of ALTER TABLE: the next generated value is at
    /// least this (0: no floor; absent from definitions without one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub auto_increment_floor: u64,
    /// FOREIGN KEY constraints of this (child) table, in creation order.
    /// Absent from definitions without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// CHECK constraints, in creation order. Absent from definitions
    /// without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckDef>,
    /// The foreign keys of other tables (or this one) that reference this
    /// table: not stored, worked out from the whole catalog whenever it
    /// is installed (`Catalog::link_foreign_keys`).
    #[serde(skip)]
    pub referenced_by: Vec<ChildRef>,
}

/// What a foreign key does to child rows when the parent row is deleted
/// or its referenced columns change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum FkAction {
    /// `NO ACTION` (also when no action is given): as RESTRICT in InnoDB.
    #[default]
    NoAction,
    /// `RESTRICT`.
    Restrict,
    /// `CASCADE`.
    Cascade,
    /// `SET NULL`.
    SetNull,
}

impl FkAction {
    /// Its SQL spelling.
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
        }
    }
}

/// A FOREIGN KEY constraint, stored with the child table. Columns are
/// kept by name (so column moves in either table need no rewrite).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForeignKeyDef {
    /// The constraint's name (`<table>_ibfk_N` when none was given).
    pub name: String,
    /// The child's columns, in order.
    pub columns: Vec<String>,
    /// The parent's database, as written.
    pub ref_db: String,
    /// The parent table, as written.
    pub ref_table: String,
    /// The parent's columns, in order.
    pub ref_columns: Vec<String>,
    /// ON DELETE.
    #[serde(default)]
    pub on_delete: FkAction,
    /// ON UPDATE.
    #[serde(default)]
    pub on_update: FkAction,
}

/// A CHECK constraint.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CheckDef {
    /// The constraint's name (`<table>_chk_N` when none was given).
    pub name: String,
    /// The condition, as SQL text (identifiers in backquotes).
    pub expr: String,
    /// `ENFORCED` (the default) or `NOT ENFORCED`.
    pub enforced: bool,
}

/// A foreign key that references a table: the child's database, table
/// and constraint name (lower-case database and table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildRef {
    /// The child's database (lower-case).
    pub db: String,
    /// The child table (lower-case).
    pub table: String,
    /// The constraint's name.
    pub fk: String,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl TableDef {
    /// Position of a column by name (case-insensitive, as MySQL).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Error 3152 when an index (the primary key too) holds a JSON
    /// column: a document has no key form, as in MySQL; 1089 when a
    /// prefix key part is of a column that is not a string or is longer
    /// than the column's length (a primary key never has one: its parts
    /// are parsed by `ddl::key_part_names`, which refuses them).
    pub fn check_key_columns(&self) -> crate::error::SqlResult<()> {
        for ix in &self.secondary {
            for (k, &c) in ix.columns.iter().enumerate() {
                let n = ix.prefix_of(k);
                if n == 0 {
                    continue;
                }
                match self.columns.get(c).map(|c| &c.ty) {
                    Some(ColumnType::Str { max_len, .. }) if n <= *max_len => {}
                    _ => return Err(bad_prefix()),
                }
            }
        }
        for ix in std::iter::once(&self.primary).chain(&self.secondary) {
            for &c in &ix.columns {
                if let Some(col) = self.columns.get(c).filter(|c| c.ty == ColumnType::Json) {
                    return Err(crate::error::SqlError::new(
                        3152,
                        "42000",
                        format!(
                            "JSON column '{}' supports indexing only via generated columns on a specified JSON path.",
                            col.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether column `i` is part of the primary key.
    pub fn in_pk(&self, i: usize) -> bool {
        self.primary.columns.contains(&i)
    }

    /// The non-key columns, in table order (the row value's columns).
    fn value_columns(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.columns.len()).filter(|i| !self.in_pk(*i))
    }

    /// The primary-key columns a secondary index appends after its own.
    pub fn pk_suffix(&self, index: &IndexDef) -> Vec<usize> {
        self.pk_suffix_iter(index).collect()
    }

    /// [`TableDef::pk_suffix`] without a vector (read per index entry):
    /// the primary-key columns the index does not hold whole.
    pub fn pk_suffix_iter<'a>(&'a self, index: &'a IndexDef) -> impl Iterator<Item = usize> + 'a {
        self.primary
            .columns
            .iter()
            .copied()
            .filter(|c| !index.whole(*c))
    }

    /// The parts of a secondary index's key: its own (with their prefix
    /// lengths), then the primary key's others (whole).
    fn secondary_key_columns<'a>(
        &'a self,
        index: &'a IndexDef,
    ) -> impl Iterator<Item = (usize, u32)> + 'a {
        index
            .columns
            .iter()
            .enumerate()
            .map(|(k, &c)| (c, index.prefix_of(k)))
            .chain(self.pk_suffix_iter(index).map(|c| (c, 0)))
    }
}

/// Appends the key encoding of `v` for a column of type `ty` (with the
/// NULL-flag byte when `nullable`). `v` must already have the column's
/// type (the executor converts).
pub fn put_key_value(out: &mut Vec<u8>, ty: &ColumnType, nullable: bool, v: &Value) {
    put_key_cut(out, ty, nullable, v, 0)
}

/// [`put_key_value`] of a string's first `prefix` characters (bytes for
/// binary kinds; 0: all of it).
fn put_key_cut(out: &mut Vec<u8>, ty: &ColumnType, nullable: bool, v: &Value, prefix: u32) {
    if nullable {
        if v.is_null() {
            out.push(KEY_NULL);
            return;
        }
        out.push(KEY_NOT_NULL);
    }
    match (ty, v) {
        (
            ColumnType::Int {
                bytes,
                unsigned: false,
            },
            Value::Int(i),
        ) => keys::put_int(out, *i, usize::from(*bytes)),
        (
            ColumnType::Int {
                bytes,
                unsigned: true,
            },
            Value::UInt(u),
        ) => keys::put_uint(out, *u, usize::from(*bytes)),
        (
            ColumnType::Int {
                bytes,
                unsigned: true,
            },
            Value::Int(i),
        ) => keys::put_uint(out, (*i).max(0) as u64, usize::from(*bytes)),
        (ColumnType::Decimal { .. }, Value::Decimal(d, _)) => put_i128(out, *d),
        (ColumnType::Float | ColumnType::Double, Value::Double(f)) => keys::put_f64(out, *f),
        (
            ColumnType::Str {
                collation, kind, ..
            },
            Value::Str(s),
        ) => {
            let s = if prefix > 0 {
                key_prefix(ty, s, prefix)
            } else {
                s
            };
            let s = if *kind == StrKind::Char {
                trim_end_spaces(s)
            } else {
                s
            };
            match collation {
                Collation::Binary => keys::put_bytes(out, s),
                Collation::Utf8mb4Bin => keys::put_bytes(out, trim_end_spaces(s)),
                Collation::Utf8mb4GeneralCi => {
                    let mut w = Vec::with_capacity(s.len() * 2);
                    keys::general_ci_weights(s, &mut w);
                    keys::put_bytes(out, &w);
                }
            }
        }
        (
            ColumnType::Date | ColumnType::DateTime { .. } | ColumnType::Timestamp { .. },
            Value::Date(d) | Value::DateTime(d),
        ) => keys::put_int(out, *d, 8),
        (ColumnType::Enum { .. } | ColumnType::Set { .. }, Value::Member(n, _)) => {
            keys::put_uint(out, *n, member_width(ty))
        }
        (ColumnType::Year, Value::Int(y)) => keys::put_uint(out, year_byte(*y), 1),
        (ColumnType::Time { .. }, Value::Time(us)) => keys::put_int(out, *us, TIME_WIDTH),
        (ColumnType::Bit { .. }, Value::UInt(n)) => keys::put_uint(out, *n, member_width(ty)),
        // A value of another type than the column's: the executor converts
        // first; as a last resort, encode its text form.
        (_, other) => keys::put_bytes(out, other.to_string().as_bytes()),
    }
}

/// Bytes of a TIME (signed microseconds, sign bit flipped in keys).
const TIME_WIDTH: usize = 6;

/// Bytes of an ENUM index (1 up to 255 members, else 2), a SET bitmask
/// (1, 2, 3, 4 or 8 by member count) or a BIT(n) ((n + 7) / 8).
pub fn member_width(ty: &ColumnType) -> usize {
    match *ty {
        ColumnType::Enum { count, .. } => {
            if count <= 255 {
                1
            } else {
                2
            }
        }
        ColumnType::Set { count, .. } => match count {
            0..=8 => 1,
            9..=16 => 2,
            17..=24 => 3,
            25..=32 => 4,
            _ => 8,
        },
        ColumnType::Bit { bits } => usize::from(bits).div_ceil(8).clamp(1, 8),
        _ => 8,
    }
}

/// The stored byte of a YEAR: 0 for 0000, else year - 1900.
fn year_byte(y: i64) -> u64 {
    if y == 0 {
        0
    } else {
        (y - 1900).clamp(1, 255) as u64
    }
}

fn year_of_byte(b: u64) -> Value {
    Value::Int(if b == 0 { 0 } else { b as i64 + 1900 })
}

/// Gives an ENUM or SET value read from bytes (index or bitmask only)
/// its string.
pub fn fill_member(col: &ColumnDef, v: &mut Value) {
    if let Value::Member(n, s) = v {
        if s.is_empty() {
            *s = match col.ty {
                ColumnType::Enum { .. } => col.enum_text(*n),
                _ => col.set_text(*n),
            };
        }
    }
}

fn put_i128(out: &mut Vec<u8>, v: i128) {
    let bits = (v as u128) ^ (1u128 << 127);
    out.extend_from_slice(&bits.to_be_bytes());
}

fn get_i128(input: &mut &[u8]) -> Option<i128> {
    let (head, rest) = input.split_first_chunk::<16>()?;
    *input = rest;
    Some((u128::from_be_bytes(*head) ^ (1u128 << 127)) as i128)
}

fn trim_end_spaces(s: &[u8]) -> &[u8] {
    let mut end = s.len();
    while end > 0 && s.get(end - 1) == Some(&b' ') {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// Reads one key column written by [`put_key_value`]; for a text column
/// returns `Value::Null` as a placeholder (its original comes from the
/// value's unpack part) after skipping its bytes.
pub fn get_key_value(input: &mut &[u8], ty: &ColumnType, nullable: bool) -> Option<Value> {
    if nullable {
        let (flag, rest) = input.split_first()?;
        *input = rest;
        match *flag {
            KEY_NULL => return Some(Value::Null),
            KEY_NOT_NULL => {}
            _ => return None,
        }
    }
    Some(match ty {
        ColumnType::Int {
            bytes,
            unsigned: false,
        } => Value::Int(keys::get_int(input, usize::from(*bytes))?),
        ColumnType::Int {
            bytes,
            unsigned: true,
        } => Value::UInt(keys::get_uint(input, usize::from(*bytes))?),
        ColumnType::Decimal { scale, .. } => Value::Decimal(get_i128(input)?, *scale),
        ColumnType::Float | ColumnType::Double => Value::Double(keys::get_f64(input)?),
        ColumnType::Str { .. } if ty.is_text() => {
            keys::skip_bytes(input)?;
            Value::Null
        }
        ColumnType::Str { .. } => {
            let mut out = Vec::new();
            keys::get_bytes(input, &mut out)?;
            Value::Str(out)
        }
        ColumnType::Date => Value::Date(keys::get_int(input, 8)?),
        ColumnType::DateTime { .. } | ColumnType::Timestamp { .. } => {
            Value::DateTime(keys::get_int(input, 8)?)
        }
        ColumnType::Enum { .. } | ColumnType::Set { .. } => {
            Value::Member(keys::get_uint(input, member_width(ty))?, Vec::new())
        }
        ColumnType::Year => year_of_byte(keys::get_uint(input, 1)?),
        ColumnType::Time { .. } => Value::Time(keys::get_int(input, TIME_WIDTH)?),
        ColumnType::Bit { .. } => Value::UInt(keys::get_uint(input, member_width(ty))?),
        // JSON columns are never part of a key (DDL refuses them).
        ColumnType::Json => return None,
    })
}

/// The primary key of `row` (full table row, in column order), or of the
/// hidden row id `hidden`.
pub fn pk_key(t: &TableDef, row: &[Value], hidden: u64, out: &mut Vec<u8>) {
    out.clear();
    keys::put_index_id(out, t.primary.id);
    if t.hidden_pk {
        keys::put_uint(out, hidden, 8);
        return;
    }
    for &c in &t.primary.columns {
        if let (Some(col), Some(v)) = (t.columns.get(c), row.get(c)) {
            put_key_value(out, &col.ty, col.nullable, v);
        }
    }
}

/// The key prefix of index `ix` for the leading `vals` (values of its
/// first `vals.len()` columns): for point lookups and range bounds.
pub fn index_prefix(t: &TableDef, ix: &IndexDef, vals: &[Value], out: &mut Vec<u8>) {
    out.clear();
    keys::put_index_id(out, ix.id);
    for (k, (&c, v)) in ix.columns.iter().zip(vals).enumerate() {
        if let Some(col) = t.columns.get(c) {
            put_key_part(out, col, ix.prefix_of(k), v);
        }
    }
}

/// The secondary-index entry of `row` in `ix`: key and value.
pub fn secondary_entry(
    t: &TableDef,
    ix: &IndexDef,
    row: &[Value],
    hidden: u64,
    key: &mut Vec<u8>,
    value: &mut Vec<u8>,
) {
    key.clear();
    value.clear();
    keys::put_index_id(key, ix.id);
    for (c, prefix) in t.secondary_key_columns(ix) {
        if let (Some(col), Some(v)) = (t.columns.get(c), row.get(c)) {
            put_key_part(key, col, prefix, v);
            // A prefix part's value is not kept: the row gives it.
            if col.ty.is_text() && prefix == 0 {
                put_unpack(value, v);
            }
        }
    }
    if t.hidden_pk {
        keys::put_uint(key, hidden, 8);
    }
}

fn put_unpack(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Str(s) => {
            put_varint(out, s.len() as u64 + 1);
            out.extend_from_slice(s);
        }
        // NULL: length 0.
        _ => put_varint(out, 0),
    }
}

fn get_unpack(input: &mut &[u8]) -> Option<Value> {
    let n = get_varint(input)?;
    if n == 0 {
        return Some(Value::Null);
    }
    let n = usize::try_from(n - 1).ok()?;
    let (s, rest) = input.split_at_checked(n)?;
    *input = rest;
    Some(Value::Str(s.to_vec()))
}

/// The primary-key row value of `row`.
pub fn row_value(t: &TableDef, row: &[Value], out: &mut Vec<u8>) {
    out.clear();
    out.push(ROW_FORMAT_V1);
    let cols: Vec<usize> = t.value_columns().collect();
    let bitmap_at = out.len();
    out.resize(bitmap_at + cols.len().div_ceil(8), 0);
    for (bit, &c) in cols.iter().enumerate() {
        let v = row.get(c).unwrap_or(&Value::Null);
        if v.is_null() {
            if let Some(b) = out.get_mut(bitmap_at + bit / 8) {
                *b |= 1 << (bit % 8);
            }
            continue;
        }
        if let Some(col) = t.columns.get(c) {
            put_stored(out, &col.ty, v);
        }
    }
    for &c in &t.primary.columns {
        if let (Some(col), Some(v)) = (t.columns.get(c), row.get(c)) {
            if col.ty.is_text() {
                put_unpack(out, v);
            }
        }
    }
}

/// Decodes a primary-key entry into `row` (resized to the table's
/// columns). `key` is the whole key, index id included. Returns the hidden
/// row id (0 without one).
pub fn decode_row(t: &TableDef, key: &[u8], value: &[u8], row: &mut Vec<Value>) -> Option<u64> {
    row.resize(t.columns.len(), Value::Null);
    decode_row_into(t, key, value, row, &mut Vec::new())
}

/// Stores `v` in `slot`, reusing the string buffer already there.
fn put_slot(slot: &mut Value, v: Value) {
    match (&mut *slot, v) {
        (Value::Str(dst), Value::Str(src)) => {
            dst.clear();
            dst.extend_from_slice(&src);
        }
        (_, v) => *slot = v,
    }
}

/// Stores the bytes `b` as a string in `slot`, reusing its buffer or a
/// spare one.
fn put_slot_bytes(slot: &mut Value, b: &[u8], spare: &mut Vec<Vec<u8>>) {
    match slot {
        Value::Str(dst) => {
            dst.clear();
            dst.extend_from_slice(b);
        }
        other => {
            let mut dst = spare.pop().unwrap_or_default();
            dst.clear();
            dst.extend_from_slice(b);
            *other = Value::Str(dst);
        }
    }
}

/// [`decode_row`] into a slice of exactly the table's width, reusing the
/// string buffers of the values already in it, then those of `spare`
/// (no allocation per row once warm).
pub fn decode_row_into(
    t: &TableDef,
    key: &[u8],
    value: &[u8],
    row: &mut [Value],
    spare: &mut Vec<Vec<u8>>,
) -> Option<u64> {
    if row.len() != t.columns.len() {
        return None;
    }
    let mut k = key.get(keys::INDEX_ID_LEN..)?;
    let mut hidden = 0;
    if t.hidden_pk {
        hidden = keys::get_uint(&mut k, 8)?;
    } else {
        for &c in &t.primary.columns {
            let col = t.columns.get(c)?;
            let mut v = get_key_value(&mut k, &col.ty, col.nullable)?;
            fill_member(col, &mut v);
            put_slot(row.get_mut(c)?, v);
        }
    }
    let (fmt, mut v) = value.split_first()?;
    if *fmt != ROW_FORMAT_V1 {
        return None;
    }
    let ncols = t.columns.len()
        - if t.hidden_pk {
            0
        } else {
            t.primary.columns.len()
        };
    let (bitmap, rest) = v.split_at_checked(ncols.div_ceil(8))?;
    v = rest;
    let mut bit = 0usize;
    for (c, col) in t.columns.iter().enumerate() {
        if t.in_pk(c) {
            continue;
        }
        let null = bitmap
            .get(bit / 8)
            .is_some_and(|b| b & (1 << (bit % 8)) != 0);
        bit += 1;
        let slot = row.get_mut(c)?;
        if null {
            *slot = Value::Null;
            continue;
        }
        if let ColumnType::Str { .. } = col.ty {
            let n = usize::try_from(get_varint(&mut v)?).ok()?;
            let (b, rest) = v.split_at_checked(n)?;
            v = rest;
            put_slot_bytes(slot, b, spare);
        } else {
            *slot = get_stored(&mut v, &col.ty)?;
            fill_member(col, slot);
        }
    }
    for &c in &t.primary.columns {
        let col = t.columns.get(c)?;
        if col.ty.is_text() {
            let u = get_unpack(&mut v)?;
            put_slot(row.get_mut(c)?, u);
        }
    }
    v.is_empty().then_some(hidden)
}

/// Decodes a secondary-index entry: the values of the index's columns
/// and of the primary-key suffix, into `row` at their positions (other
/// columns NULL). Returns the hidden row id (0 without one).
#[cfg(test)]
pub fn decode_secondary(
    t: &TableDef,
    ix: &IndexDef,
    key: &[u8],
    value: &[u8],
    row: &mut Vec<Value>,
) -> Option<u64> {
    row.clear();
    row.resize(t.columns.len(), Value::Null);
    decode_secondary_into(t, ix, key, value, row)
}

/// [`decode_secondary`] into a slice of exactly the table's width; slots
/// of columns not in the entry are left as they were.
pub fn decode_secondary_into(
    t: &TableDef,
    ix: &IndexDef,
    key: &[u8],
    value: &[u8],
    row: &mut [Value],
) -> Option<u64> {
    if row.len() != t.columns.len() {
        return None;
    }
    let mut k = key.get(keys::INDEX_ID_LEN..)?;
    let mut v = value;
    for (c, prefix) in t.secondary_key_columns(ix) {
        let col = t.columns.get(c)?;
        let mut kv = get_key_value(&mut k, &col.ty, col.nullable)?;
        if prefix > 0 {
            // Only a prefix: the slot stays as it was (the primary-key
            // suffix, or the row read through the key, fills it).
            continue;
        }
        fill_member(col, &mut kv);
        let val = if col.ty.is_text() {
            get_unpack(&mut v)?
        } else {
            kv
        };
        put_slot(row.get_mut(c)?, val);
    }
    let hidden = if t.hidden_pk {
        keys::get_uint(&mut k, 8)?
    } else {
        0
    };
    (k.is_empty() && v.is_empty()).then_some(hidden)
}

/// Appends a non-key column's stored form.
fn put_stored(out: &mut Vec<u8>, ty: &ColumnType, v: &Value) {
    match (ty, v) {
        (ColumnType::Int { bytes, .. }, Value::Int(i)) => out.extend_from_slice(
            i.to_le_bytes()
                .get(..usize::from(*bytes))
                .unwrap_or_default(),
        ),
        (ColumnType::Int { bytes, .. }, Value::UInt(u)) => out.extend_from_slice(
            u.to_le_bytes()
                .get(..usize::from(*bytes))
                .unwrap_or_default(),
        ),
        (ColumnType::Decimal { .. }, Value::Decimal(d, _)) => {
            out.extend_from_slice(&d.to_le_bytes())
        }
        (ColumnType::Float | ColumnType::Double, Value::Double(f)) => {
            out.extend_from_slice(&f.to_le_bytes())
        }
        (
            ColumnType::Date | ColumnType::DateTime { .. } | ColumnType::Timestamp { .. },
            Value::Date(d) | Value::DateTime(d),
        ) => out.extend_from_slice(&d.to_le_bytes()),
        (ColumnType::Enum { .. } | ColumnType::Set { .. }, Value::Member(n, _)) => {
            put_le(out, *n, member_width(ty))
        }
        (ColumnType::Bit { .. }, Value::UInt(n)) => put_le(out, *n, member_width(ty)),
        (ColumnType::Year, Value::Int(y)) => out.push(year_byte(*y) as u8),
        (ColumnType::Time { .. }, Value::Time(us)) => put_le(out, *us as u64, TIME_WIDTH),
        (ColumnType::Json, Value::Json(b)) => {
            put_varint(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        (ColumnType::Str { kind, .. }, Value::Str(s)) => {
            let s = if *kind == StrKind::Char {
                trim_end_spaces(s)
            } else {
                s
            };
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s);
        }
        (_, other) => {
            let s = other.to_string();
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
    }
}

fn put_le(out: &mut Vec<u8>, v: u64, width: usize) {
    out.extend_from_slice(v.to_le_bytes().get(..width).unwrap_or_default());
}

/// Reads a non-key column's stored form.
fn get_stored(input: &mut &[u8], ty: &ColumnType) -> Option<Value> {
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, rest) = input.split_at_checked(n)?;
        *input = rest;
        Some(head)
    };
    Some(match ty {
        ColumnType::Int { bytes, unsigned } => {
            let b = take(usize::from(*bytes))?;
            let mut le = [0u8; 8];
            le.get_mut(..b.len())?.copy_from_slice(b);
            let raw = u64::from_le_bytes(le);
            if *unsigned {
                Value::UInt(raw)
            } else {
                let shift = 64 - u32::from(*bytes) * 8;
                Value::Int(((raw << shift) as i64) >> shift)
            }
        }
        ColumnType::Decimal { scale, .. } => {
            let b: [u8; 16] = take(16)?.try_into().ok()?;
            Value::Decimal(i128::from_le_bytes(b), *scale)
        }
        ColumnType::Float | ColumnType::Double => {
            let b: [u8; 8] = take(8)?.try_into().ok()?;
            Value::Double(f64::from_le_bytes(b))
        }
        ColumnType::Date => {
            let b: [u8; 8] = take(8)?.try_into().ok()?;
            Value::Date(i64::from_le_bytes(b))
        }
        ColumnType::DateTime { .. } | ColumnType::Timestamp { .. } => {
            let b: [u8; 8] = take(8)?.try_into().ok()?;
            Value::DateTime(i64::from_le_bytes(b))
        }
        ColumnType::Str { .. } => {
            let n = usize::try_from(get_varint(input)?).ok()?;
            let (s, rest) = input.split_at_checked(n)?;
            *input = rest;
            Value::Str(s.to_vec())
        }
        ColumnType::Enum { .. } | ColumnType::Set { .. } | ColumnType::Bit { .. } => {
            let w = member_width(ty);
            let b = take(w)?;
            let mut le = [0u8; 8];
            le.get_mut(..b.len())?.copy_from_slice(b);
            let n = u64::from_le_bytes(le);
            if matches!(ty, ColumnType::Bit { .. }) {
                Value::UInt(n)
            } else {
                Value::Member(n, Vec::new())
            }
        }
        ColumnType::Year => year_of_byte(u64::from(*take(1)?.first()?)),
        // A document that does not decode makes the row corrupted.
        ColumnType::Json => {
            let n = usize::try_from(get_varint(input)?).ok()?;
            let (b, rest) = input.split_at_checked(n)?;
            *input = rest;
            if !crate::json::is_valid_binary(b) {
                return None;
            }
            Value::Json(b.to_vec())
        }
        ColumnType::Time { .. } => {
            let b = take(TIME_WIDTH)?;
            let mut le = [0u8; 8];
            le.get_mut(..b.len())?.copy_from_slice(b);
            let shift = 64 - 8 * TIME_WIDTH as u32;
            Value::Time(((u64::from_le_bytes(le) << shift) as i64) >> shift)
        }
    })
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(input: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (b, rest) = input.split_first()?;
        *input = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::types::pack_date;
    use proptest::prelude::*;

    /// An index without prefix parts is written as before they existed;
    /// one with them writes `[column, length]`, which a reader that
    /// expects plain positions cannot decode (so it reports the table
    /// instead of misreading its keys).
    #[test]
    fn index_definitions_with_prefix_parts_round_trip_and_old_ones_read() {
        let plain = IndexDef {
            name: "k".into(),
            id: 7,
            columns: vec![1, 2],
            unique: false,
            prefix: Vec::new(),
        };
        let json = serde_json::to_string(&plain).unwrap();
        assert_eq!(
            json,
            r#"{"name":"k","id":7,"columns":[1,2],"unique":false}"#
        );
        assert_eq!(serde_json::from_str::<IndexDef>(&json).unwrap(), plain);
        let cut = IndexDef {
            prefix: vec![0, 191],
            ..plain.clone()
        };
        let json = serde_json::to_string(&cut).unwrap();
        assert_eq!(
            json,
            r#"{"name":"k","id":7,"columns":[1,[2,191]],"unique":false}"#
        );
        assert_eq!(serde_json::from_str::<IndexDef>(&json).unwrap(), cut);
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Old {
            name: String,
            id: u32,
            columns: Vec<usize>,
            unique: bool,
        }
        assert!(serde_json::from_str::<Old>(&json).is_err());
        assert!(cut.whole(1) && !cut.whole(2) && cut.has_prefix());
    }

    #[test]
    fn key_prefix_counts_characters_of_text_and_bytes_of_binary() {
        let text = ColumnType::Str {
            kind: StrKind::VarChar,
            max_len: 20,
            collation: Collation::Utf8mb4GeneralCi,
        };
        let bin = ColumnType::Str {
            kind: StrKind::VarBinary,
            max_len: 20,
            collation: Collation::Binary,
        };
        let s = "日本語abc".as_bytes();
        assert_eq!(key_prefix(&text, s, 2), "日本".as_bytes());
        assert_eq!(key_prefix(&text, s, 4), "日本語a".as_bytes());
        assert_eq!(key_prefix(&text, s, 40), s);
        assert_eq!(key_prefix(&bin, s, 4), &s[..4]);
        assert_eq!(key_prefix(&text, b"", 3), b"");
    }

    fn sbtest() -> TableDef {
        let text = |kind, n| ColumnType::Str {
            kind,
            max_len: n,
            collation: Collation::Utf8mb4GeneralCi,
        };
        TableDef {
            name: "sbtest1".into(),
            columns: vec![
                ColumnDef {
                    name: "id".into(),
                    ty: ColumnType::Int {
                        bytes: 4,
                        unsigned: false,
                    },
                    nullable: false,
                    default: None,
                    auto_increment: true,
                    display_width: None,
                    comment: String::new(),
                    elements: Vec::new(),
                },
                ColumnDef {
                    name: "k".into(),
                    ty: ColumnType::Int {
                        bytes: 4,
                        unsigned: false,
                    },
                    nullable: false,
                    default: Some(Value::Int(0)),
                    auto_increment: false,
                    display_width: None,
                    comment: String::new(),
                    elements: Vec::new(),
                },
                ColumnDef {
                    name: "c".into(),
                    ty: text(StrKind::Char, 120),
                    nullable: false,
                    default: None,
                    auto_increment: false,
                    display_width: None,
                    comment: String::new(),
                    elements: Vec::new(),
                },
                ColumnDef {
                    name: "pad".into(),
                    ty: text(StrKind::VarChar, 60),
                    nullable: true,
                    default: None,
                    auto_increment: false,
                    display_width: None,
                    comment: String::new(),
                    elements: Vec::new(),
                },
                ColumnDef {
                    name: "d".into(),
                    ty: ColumnType::Date,
                    nullable: true,
                    default: None,
                    auto_increment: false,
                    display_width: None,
                    comment: String::new(),
                    elements: Vec::new(),
                },
            ],
            primary: IndexDef {
                name: "PRIMARY".into(),
                id: 260,
                columns: vec![0],
                unique: true,
                prefix: Vec::new(),
            },
            hidden_pk: false,
            secondary: vec![
                IndexDef {
                    name: "k_1".into(),
                    id: 261,
                    columns: vec![1],
                    unique: false,
                    prefix: Vec::new(),
                },
                IndexDef {
                    name: "c_pad".into(),
                    id: 262,
                    columns: vec![2, 3],
                    unique: false,
                    prefix: Vec::new(),
                },
            ],
            comment: String::new(),
            auto_increment_floor: 0,
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            referenced_by: Vec::new(),
        }
    }

    #[test]
    fn definitions_without_comments_read_as_before() -> Result<(), serde_json::Error> {
        let def = sbtest();
        let json = serde_json::to_string(&def)?;
        assert!(!json.contains("comment"), "{json}");
        let back: TableDef = serde_json::from_str(&json)?;
        assert_eq!(back, def);
        let mut with = def.clone();
        with.comment = "t".into();
        with.columns[0].comment = "c".into();
        let json = serde_json::to_string(&with)?;
        let back: TableDef = serde_json::from_str(&json)?;
        assert_eq!(back, with);
        Ok(())
    }

    fn row(id: i64, k: i64, c: &str, pad: Option<&str>) -> Vec<Value> {
        vec![
            Value::Int(id),
            Value::Int(k),
            Value::Str(c.as_bytes().to_vec()),
            pad.map_or(Value::Null, |p| Value::Str(p.as_bytes().to_vec())),
            Value::Date(pack_date(2024, 1, 31)),
        ]
    }

    #[test]
    fn primary_and_secondary_entries_round_trip() {
        let t = sbtest();
        let r = row(-7, 42, "Hello World", None);
        let (mut k, mut v) = (Vec::new(), Vec::new());
        pk_key(&t, &r, 0, &mut k);
        row_value(&t, &r, &mut v);
        let mut back = Vec::new();
        decode_row(&t, &k, &v, &mut back).unwrap();
        assert_eq!(back, r);
        for ix in &t.secondary {
            secondary_entry(&t, ix, &r, 0, &mut k, &mut v);
            decode_secondary(&t, ix, &k, &v, &mut back).unwrap();
            for &c in ix.columns.iter().chain(&t.primary.columns) {
                assert_eq!(back[c], r[c], "column {c} of {}", ix.name);
            }
        }
    }

    #[test]
    fn char_columns_lose_trailing_spaces_varchar_keep_them() {
        let t = sbtest();
        let r = row(1, 2, "abc   ", Some("x  "));
        let (mut k, mut v) = (Vec::new(), Vec::new());
        pk_key(&t, &r, 0, &mut k);
        row_value(&t, &r, &mut v);
        let mut back = Vec::new();
        decode_row(&t, &k, &v, &mut back).unwrap();
        assert_eq!(back[2], Value::Str(b"abc".to_vec()));
        assert_eq!(back[3], Value::Str(b"x  ".to_vec()));
    }

    proptest! {
        #[test]
        fn secondary_keys_order_by_index_columns_then_pk(
            a in (any::<i32>(), any::<i32>(), "[a-zA-Z ]{0,12}"),
            b in (any::<i32>(), any::<i32>(), "[a-zA-Z ]{0,12}"),
        ) {
            let t = sbtest();
            let ra = row(a.0 as i64, a.1 as i64, &a.2, Some("p"));
            let rb = row(b.0 as i64, b.1 as i64, &b.2, Some("p"));
            let (mut ka, mut kb, mut v) = (Vec::new(), Vec::new(), Vec::new());
            secondary_entry(&t, &t.secondary[0], &ra, 0, &mut ka, &mut v);
            secondary_entry(&t, &t.secondary[0], &rb, 0, &mut kb, &mut v);
            prop_assert_eq!(ka.cmp(&kb), (a.1, a.0).cmp(&(b.1, b.0)));
            secondary_entry(&t, &t.secondary[1], &ra, 0, &mut ka, &mut v);
            secondary_entry(&t, &t.secondary[1], &rb, 0, &mut kb, &mut v);
            let ord = Collation::Utf8mb4GeneralCi
                .cmp(a.2.as_bytes(), b.2.as_bytes())
                .then(a.0.cmp(&b.0));
            prop_assert_eq!(ka.cmp(&kb), ord);
        }

        #[test]
        fn decoders_never_panic_on_garbage(k in proptest::collection::vec(any::<u8>(), 0..48),
                                           v in proptest::collection::vec(any::<u8>(), 0..48)) {
            let t = sbtest();
            let mut out = Vec::new();
            let _ = decode_row(&t, &k, &v, &mut out);
            for ix in &t.secondary {
                let _ = decode_secondary(&t, ix, &k, &v, &mut out);
            }
        }
    }

    fn key_of(ty: ColumnType, v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        put_key_value(&mut out, &ty, true, v);
        out
    }

    #[test]
    fn new_type_keys_order_as_sql_and_round_trip() {
        let c = Collation::Utf8mb4GeneralCi;
        let cases: Vec<(ColumnType, Vec<Value>)> = vec![
            (
                ColumnType::Time { fsp: 6 },
                [-838 * 3_600_000_000i64, -1, 0, 1, 3_600_000_000]
                    .map(Value::Time)
                    .to_vec(),
            ),
            (
                ColumnType::Year,
                [0i64, 1901, 1999, 2155].map(Value::Int).to_vec(),
            ),
            (
                ColumnType::Bit { bits: 64 },
                [0u64, 1, 1 << 63, u64::MAX].map(Value::UInt).to_vec(),
            ),
            (
                ColumnType::Enum {
                    count: 300,
                    collation: c,
                },
                [0u64, 1, 255, 256, 300]
                    .map(|n| Value::Member(n, Vec::new()))
                    .to_vec(),
            ),
            (
                ColumnType::Set {
                    count: 20,
                    collation: c,
                },
                [0u64, 1, 2, 3, 1 << 19]
                    .map(|n| Value::Member(n, Vec::new()))
                    .to_vec(),
            ),
        ];
        for (ty, vals) in cases {
            let keys: Vec<Vec<u8>> = vals.iter().map(|v| key_of(ty, v)).collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "{ty:?}");
            assert!(key_of(ty, &Value::Null) < keys[0]);
            for (k, v) in keys.iter().zip(&vals) {
                let mut cur = k.as_slice();
                assert_eq!(get_key_value(&mut cur, &ty, true).as_ref(), Some(v));
                assert!(cur.is_empty());
                let mut stored = Vec::new();
                put_stored(&mut stored, &ty, v);
                let mut cur = stored.as_slice();
                assert_eq!(get_stored(&mut cur, &ty).as_ref(), Some(v));
                assert!(cur.is_empty());
            }
        }
    }
}
