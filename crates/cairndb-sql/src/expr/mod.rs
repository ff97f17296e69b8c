//! Expressions: compiled from the parser's AST against a scope of
//! columns (so a cached plan evaluates without name lookups), and
//! evaluated with MySQL's semantics: three-valued logic, NULL
//! propagation, numeric comparison of mixed types, string comparison
//! under the column's collation (`utf8mb4_general_ci` by default),
//! integer overflow as an error.
//!
//! No locks, no I/O; evaluation allocates only for string results.

//!
//! This module holds the compiled forms (`Expr`, `Func`, `BinOp`,
//! aggregate and subquery nodes) and the traits evaluation reads through
//! (`Env`, `SubPlanner`). Submodules: `compile` (AST to `Expr`), `eval`
//! (evaluation, comparison, arithmetic, CAST), the functions by family
//! (`funcs`, `datefuncs`, `strfuncs`, `mathfuncs`, `regexfuncs`) and JSON
//! documents (`json`).

mod compile;
pub(crate) mod datefuncs;
mod eval;
pub(crate) mod funcs;
pub(crate) mod json;
pub(crate) mod mathfuncs;
pub(crate) mod regexfuncs;
pub(crate) mod strfuncs;

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use sqlparser::ast;

use crate::error::{SqlError, SqlResult};
use crate::types::{Collation, ColumnType, Value};

pub use compile::*;
pub use eval::*;

/// A column visible to an expression: the row slot it reads.
#[derive(Debug, Clone)]
pub struct ScopeColumn {
    /// Table alias (or name) it belongs to, lower-case.
    pub table: String,
    /// Column name as created.
    pub name: String,
    /// Its type, when it comes from a table.
    pub ty: Option<ColumnType>,
    /// The table column it reads, for result metadata (None when computed,
    /// as in a derived table).
    pub origin: Option<ColumnOrigin>,
}

/// A table column behind a scope column: what MySQL's result metadata
/// says of it.
#[derive(Debug, Clone, Default)]
pub struct ColumnOrigin {
    /// Database of the table.
    pub schema: String,
    /// The table's name as created.
    pub table: String,
    /// NOT NULL.
    pub not_null: bool,
    /// Part of the primary key.
    pub primary_key: bool,
    /// AUTO_INCREMENT.
    pub auto_increment: bool,
    /// First column of a one-column UNIQUE secondary index.
    pub unique_key: bool,
    /// First column of another secondary index.
    pub multiple_key: bool,
    /// Declared display width (BOOL / TINYINT(1)), or the length of an
    /// ENUM or SET column.
    pub display_width: Option<u32>,
}

/// The columns an expression may name, in row-slot order.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Slots.
    pub cols: Vec<ScopeColumn>,
    /// Slots of USING / NATURAL join columns named unqualified through
    /// their twin of the other side: reachable only qualified.
    pub merged: Vec<usize>,
}

impl Scope {
    /// The slot of `table.name` (table None: any table; ambiguous names
    /// are an error).
    pub fn resolve(&self, table: Option<&str>, name: &str) -> SqlResult<usize> {
        let mut found = None;
        for (i, c) in self.cols.iter().enumerate() {
            if c.name.eq_ignore_ascii_case(name)
                && table.is_none_or(|t| c.table.eq_ignore_ascii_case(t))
                && (table.is_some() || !self.merged.contains(&i))
            {
                if found.is_some() {
                    return Err(SqlError::new(
                        1052,
                        "23000",
                        format!("Column '{name}' in field list is ambiguous"),
                    ));
                }
                found = Some(i);
            }
        }
        found.ok_or_else(|| {
            let full = match table {
                Some(t) => format!("{t}.{name}"),
                None => name.to_string(),
            };
            SqlError::unknown_column(&full, "field list")
        })
    }
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (decimal or double result)
    Div,
    /// `DIV`
    IntDiv,
    /// `%`, MOD
    Mod,
    /// `=`
    Eq,
    /// `<=>` (NULL-safe)
    NullSafeEq,
    /// `<>`, `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// AND
    And,
    /// OR
    Or,
    /// XOR
    Xor,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
}

impl BinOp {
    /// `=`, `<=>`, `<>`, `<`, `<=`, `>`, `>=`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq
                | BinOp::NullSafeEq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
        )
    }
}

/// Built-in scalar functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// REPLACE
    Replace,
    /// LOCATE / POSITION
    Locate,
    /// INSTR
    Instr,
    /// LPAD
    Lpad,
    /// RPAD
    Rpad,
    /// LEFT
    Left,
    /// RIGHT
    Right,
    /// REPEAT
    Repeat,
    /// SPACE
    Space,
    /// REVERSE
    Reverse,
    /// CONCAT_WS
    ConcatWs,
    /// SUBSTRING_INDEX
    SubstringIndex,
    /// HEX
    Hex,
    /// UNHEX
    Unhex,
    /// FIELD
    Field,
    /// FIND_IN_SET
    FindInSet,
    /// ELT
    Elt,
    /// ASCII
    Ascii,
    /// ORD
    Ord,
    /// LTRIM
    Ltrim,
    /// RTRIM
    Rtrim,
    /// STRCMP
    Strcmp,
    /// INSERT(str, pos, len, new)
    Insert,
    /// MD5
    Md5,
    /// SHA1 / SHA
    Sha1,
    /// SHA2(str, bits)
    Sha2,
    /// CRC32
    Crc32,
    /// CHAR(n, ...)
    Char,
    /// FORMAT(x, d)
    Format,
    /// QUOTE
    Quote,
    /// `x REGEXP p`, REGEXP_LIKE(x, p[, match_type]); the compiler adds
    /// the operand's case sensitivity as a last argument.
    RegexpLike,
    /// REGEXP_REPLACE(x, p, r[, pos[, occurrence[, match_type]]])
    RegexpReplace,
    /// REGEXP_SUBSTR(x, p[, pos[, occurrence[, match_type]]])
    RegexpSubstr,
    /// REGEXP_INSTR(x, p[, pos[, occurrence[, return_option[, match_type]]]])
    RegexpInstr,
    /// TRIM(LEADING x FROM y)
    TrimLeading,
    /// TRIM(TRAILING x FROM y)
    TrimTrailing,
    /// TRIM(BOTH x FROM y)
    TrimBoth,
    /// CONCAT
    Concat,
    /// LENGTH / OCTET_LENGTH (bytes)
    Length,
    /// CHAR_LENGTH
    CharLength,
    /// UPPER / UCASE
    Upper,
    /// LOWER / LCASE
    Lower,
    /// SUBSTRING / SUBSTR / MID
    Substring,
    /// IFNULL
    IfNull,
    /// COALESCE
    Coalesce,
    /// IF
    If,
    /// NULLIF
    NullIf,
    /// ABS
    Abs,
    /// ROUND
    Round,
    /// FLOOR
    Floor,
    /// CEIL / CEILING
    Ceil,
    /// DATABASE / SCHEMA
    Database,
    /// VERSION
    Version,
    /// CONNECTION_ID
    ConnectionId,
    /// SLEEP(seconds)
    Sleep,
    /// LAST_INSERT_ID
    LastInsertId,
    /// USER / SESSION_USER / SYSTEM_USER: the user given and the client's
    /// host.
    User,
    /// CURRENT_USER: the account matched (`user@host pattern`).
    CurrentUser,
    /// NOW / CURRENT_TIMESTAMP / SYSDATE / LOCALTIMESTAMP
    Now,
    /// CURDATE / CURRENT_DATE
    CurDate,
    /// UNIX_TIMESTAMP()
    UnixTimestamp,
    /// GREATEST
    Greatest,
    /// LEAST
    Least,
    /// TRIM
    Trim,
    /// FOUND_ROWS (rows of the last SELECT)
    FoundRows,
    /// ROW_COUNT (rows changed by the last statement)
    RowCount,
    /// A date and time function.
    Dt(crate::datefuncs::DtFn),
    /// A math function.
    Math(crate::mathfuncs::MathFn),
    /// A JSON function.
    Json(crate::json::JsonFn),
}

/// A compiled expression.
#[derive(Debug, Clone)]
pub enum Expr {
    /// A constant.
    Const(Value),
    /// A row slot.
    Column(usize),
    /// A column of an enclosing query, in a correlated subquery: how many
    /// queries out (1: the query the subquery is in) and its slot there.
    /// Constant for one execution of the subquery.
    Outer(usize, usize),
    /// A `?` parameter of a prepared statement.
    Param(usize),
    /// A system variable (`@@name`, lower-case, without scope).
    SysVar(String),
    /// A user variable (`@name`).
    UserVar(String),
    /// `NOT e`
    Not(Box<Expr>),
    /// `-e`
    Neg(Box<Expr>),
    /// `a op b`
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `e IS [NOT] NULL`
    IsNull(Box<Expr>, bool),
    /// `e [NOT] IN (list)`
    InList(Box<Expr>, Vec<Expr>, bool),
    /// `e [NOT] BETWEEN lo AND hi`
    Between(Box<Expr>, Box<Expr>, Box<Expr>, bool),
    /// `e [NOT] LIKE pattern [ESCAPE c]`: the escape character (None
    /// after `ESCAPE ''`; a backslash by default).
    Like(Box<Expr>, Box<Expr>, bool, Option<char>),
    /// `CASE [operand] WHEN .. THEN .. ELSE .. END`
    Case(Option<Box<Expr>>, Vec<(Expr, Expr)>, Option<Box<Expr>>),
    /// A scalar function.
    Func(Func, Vec<Expr>),
    /// The result of aggregate number `n` (in a grouped query).
    Agg(usize),
    /// `CAST(e AS type)`: Signed, Unsigned, Char, Decimal, Double, Date, DateTime.
    Cast(Box<Expr>, CastTo),
    /// A subquery, planned on its own. An uncorrelated one is resolved
    /// once per execution (before the outer scan) into a constant or an
    /// [`Expr::InSet`]; a correlated one stays and runs when evaluated,
    /// per distinct tuple of the outer values it reads. The operand is
    /// the left side of a quantified comparison (`x IN`, `x op
    /// ANY/ALL`).
    Subquery(Option<Box<Expr>>, Arc<SubQuery>),
    /// `x op ANY (set)` (all: false) or `x op ALL (set)` (all: true) over
    /// a subquery's materialised values; `IN` is `= ANY`, `NOT IN` is
    /// `<> ALL`.
    InSet(Box<Expr>, BinOp, bool, Arc<ValueSet>),
    /// A row constructor `(a, b, ...)`: only as the left operand of a
    /// row subquery's comparison (`(a, b) IN (SELECT x, y ...)`);
    /// evaluated on its own it is error 1241.
    Row(Vec<Expr>),
    /// A row subquery's comparison over its materialised rows: the left
    /// row's items, the test ([`SubTest::Rows`] or [`SubTest::RowCmp`])
    /// and the rows.
    InRows(Vec<Expr>, SubTest, Arc<RowSet>),
}

/// A subquery in an expression: its plan and what is asked of it.
pub struct SubQuery {
    /// The subquery's plan; its `outer_refs` are the columns of enclosing
    /// queries it reads (none: uncorrelated).
    pub plan: crate::plan::SelectPlan,
    /// What its rows become.
    pub test: SubTest,
    /// Unique among the subqueries compiled by this process: the key of
    /// its results cached within a statement.
    pub id: u64,
}

/// Ids of [`SubQuery`].
static NEXT_SUBQUERY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl std::fmt::Debug for SubQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SubQuery({:?})", self.test)
    }
}

/// What a subquery's rows become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubTest {
    /// `(SELECT ...)`: its one value (NULL without a row; more than one
    /// row is error 1242).
    Scalar,
    /// `EXISTS (SELECT ...)`.
    Exists,
    /// `x op ANY/ALL (SELECT ...)`: the comparison and whether ALL.
    Quant(BinOp, bool),
    /// `(a, b) op ANY/ALL (SELECT x, y ...)`, op `=` or `<>`, compared
    /// as rows (`IN` is `= ANY`, `NOT IN` is `<> ALL`).
    Rows(BinOp, bool),
    /// `(a, b) op (SELECT x, y ...)`: the subquery's one row (none: NULL;
    /// more: 1242) compared as a row.
    RowCmp(BinOp),
}

/// The values of a one-column subquery, for `IN` / `ANY` / `ALL`: the
/// non-NULL values, whether a NULL was among them, and an index for
/// equality lookups when every value is an integer (hashed) or a string
/// (sorted under the operand's collation).
#[derive(Debug, Default)]
pub struct ValueSet {
    /// Non-NULL values.
    pub vals: Vec<Value>,
    /// A NULL was among the values.
    pub has_null: bool,
    ints: Option<HashSet<i128>>,
    strs: Option<(Collation, Vec<Vec<u8>>)>,
}

impl ValueSet {
    /// The set of `values`, indexed for lookups of an operand compared
    /// under `coll`.
    pub fn new(values: Vec<Value>, coll: Collation) -> ValueSet {
        let has_null = values.iter().any(Value::is_null);
        let vals: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
        let ints = vals
            .iter()
            .map(|v| match v {
                Value::Int(i) => Some(i128::from(*i)),
                Value::UInt(u) => Some(i128::from(*u)),
                _ => None,
            })
            .collect::<Option<HashSet<i128>>>();
        let strs = vals
            .iter()
            .map(|v| match v {
                Value::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect::<Option<Vec<Vec<u8>>>>()
            .map(|mut l| {
                l.sort_by(|a, b| coll.cmp(a, b));
                l.dedup_by(|a, b| coll.cmp(a, b) == Ordering::Equal);
                (coll, l)
            });
        ValueSet {
            vals,
            has_null,
            ints,
            strs,
        }
    }

    /// Whether non-NULL `v` equals a value of the set, when the index
    /// can tell (None: compare one by one).
    fn lookup(&self, v: &Value, coll: Collation) -> Option<bool> {
        match v {
            Value::Int(i) => Some(self.ints.as_ref()?.contains(&i128::from(*i))),
            Value::UInt(u) => Some(self.ints.as_ref()?.contains(&i128::from(*u))),
            Value::Str(s) => {
                let (c, l) = self.strs.as_ref()?;
                if *c != coll {
                    return None;
                }
                Some(l.binary_search_by(|x| c.cmp(x, s)).is_ok())
            }
            _ => None,
        }
    }
}

/// The rows of an uncorrelated row subquery, with, when every column
/// holds only integers or only strings, an index of its rows without
/// NULLs for `IN` / `NOT IN`.
#[derive(Debug, Default)]
pub struct RowSet {
    /// Every row.
    pub rows: Vec<Vec<Value>>,
    /// (each column's kind, the collation its strings compare under,
    /// the keys of the rows without NULLs).
    index: Option<RowIndex>,
    /// The rows with a NULL (left out of the index).
    null_rows: Vec<usize>,
}

/// A [`RowSet`]'s index: each column's kind, the collation its strings
/// compare under, and the keys of the rows without NULLs.
type RowIndex = (Vec<RowKind>, Vec<Collation>, HashSet<Vec<u8>>);

/// What a row subquery's column holds, for its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowKind {
    Int,
    Str,
}

impl RowSet {
    /// The rows of a subquery compared with a left row under `colls`,
    /// indexed when they can be.
    pub fn new(rows: Vec<Vec<Value>>, colls: Vec<Collation>) -> RowSet {
        let width = colls.len();
        let mut kinds: Vec<Option<RowKind>> = vec![None; width];
        let mut indexable = true;
        let mut null_rows = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            if r.iter().any(Value::is_null) {
                null_rows.push(i);
            }
            for (k, v) in kinds.iter_mut().zip(r) {
                let this = match v {
                    Value::Null => continue,
                    Value::Int(_) => RowKind::Int,
                    Value::UInt(u) if i64::try_from(*u).is_ok() => RowKind::Int,
                    Value::Str(_) => RowKind::Str,
                    _ => {
                        indexable = false;
                        continue;
                    }
                };
                match k {
                    None => *k = Some(this),
                    Some(was) if *was != this => indexable = false,
                    Some(_) => {}
                }
            }
        }
        let mut set = RowSet {
            rows,
            index: None,
            null_rows,
        };
        if indexable {
            let kinds: Vec<RowKind> = kinds
                .into_iter()
                .map(|k| k.unwrap_or(RowKind::Int))
                .collect();
            let mut keys = HashSet::new();
            for r in &set.rows {
                let mut k = Vec::new();
                if row_key_into(&mut k, r.iter().map(|v| (v, None)), &kinds, &colls) {
                    keys.insert(k);
                }
            }
            set.index = Some((kinds, colls, keys));
        }
        set
    }

    /// `rows` without an index, for a set tested once (a correlated
    /// subquery's run).
    pub fn plain(rows: Vec<Vec<Value>>) -> RowSet {
        RowSet {
            rows,
            index: None,
            null_rows: Vec::new(),
        }
    }

    /// The value of `test` for the left row `l`.
    pub fn test(&self, test: SubTest, l: &[(Value, Collation)]) -> SqlResult<Value> {
        match test {
            SubTest::RowCmp(op) => match self.rows.as_slice() {
                [] => Ok(Value::Null),
                [r] => Ok(truth_value(row_compare(op, l, r))),
                _ => Err(SqlError::new(
                    1242,
                    "21000",
                    "Subquery returns more than 1 row",
                )),
            },
            SubTest::Rows(op, all) => {
                if matches!((op, all), (BinOp::Eq, false) | (BinOp::Ne, true)) {
                    if let Some((kinds, colls, keys)) = &self.index {
                        let mut k = Vec::new();
                        if row_key_into(&mut k, l.iter().map(|(v, c)| (v, Some(*c))), kinds, colls)
                        {
                            if keys.contains(&k) {
                                return Ok(Value::Int(i64::from(!all)));
                            }
                            // Every row without a NULL compares unequal:
                            // only those with one can make it NULL.
                            let rest = self.null_rows.iter().filter_map(|i| self.rows.get(*i));
                            return Ok(rows_quantified(op, all, l, rest));
                        }
                    }
                }
                Ok(rows_quantified(op, all, l, self.rows.iter()))
            }
            _ => Err(SqlError::internal("row set test")),
        }
    }
}

/// Appends the index key of a row (each value with the collation of its
/// comparison, None: the index's own) to `out`; false when a value is
/// NULL, not of its column's kind, or compared under another collation
/// than the index's.
fn row_key_into<'v>(
    out: &mut Vec<u8>,
    vals: impl Iterator<Item = (&'v Value, Option<Collation>)>,
    kinds: &[RowKind],
    colls: &[Collation],
) -> bool {
    for ((v, c), (kind, coll)) in vals.zip(kinds.iter().zip(colls)) {
        if c.is_some_and(|c| c != *coll) {
            return false;
        }
        match (v, kind) {
            (Value::Int(i), RowKind::Int) => out.extend_from_slice(&i.to_be_bytes()),
            (Value::UInt(u), RowKind::Int) => match i64::try_from(*u) {
                Ok(i) => out.extend_from_slice(&i.to_be_bytes()),
                Err(_) => return false,
            },
            (Value::Str(s), RowKind::Str) => coll.put_key(s, out),
            _ => return false,
        }
    }
    true
}

/// A truth value as SQL: 1, 0 or NULL.
fn truth_value(t: Option<bool>) -> Value {
    t.map_or(Value::Null, |b| Value::Int(i64::from(b)))
}

/// MySQL's comparison of the row `l` (values with the collations they
/// compare under) with the row `r` by `op`: `=` is false at the first
/// unequal pair, else NULL when a pair has a NULL; `<>` is its negation;
/// `<=>` is never NULL; `<`, `<=`, `>`, `>=` are decided at the first
/// pair that is not equal (NULL when a pair before it has a NULL).
pub(crate) fn row_compare(op: BinOp, l: &[(Value, Collation)], r: &[Value]) -> Option<bool> {
    match op {
        BinOp::Eq | BinOp::Ne => {
            let mut unknown = false;
            for ((a, c), b) in l.iter().zip(r) {
                match compare(a, b, *c) {
                    None => unknown = true,
                    Some(Ordering::Equal) => {}
                    Some(_) => return Some(op == BinOp::Ne),
                }
            }
            (!unknown).then_some(op == BinOp::Eq)
        }
        BinOp::NullSafeEq => {
            Some(
                l.iter()
                    .zip(r)
                    .all(|((a, c), b)| match (a.is_null(), b.is_null()) {
                        (true, true) => true,
                        (false, false) => compare(a, b, *c) == Some(Ordering::Equal),
                        _ => false,
                    }),
            )
        }
        _ => {
            for ((a, c), b) in l.iter().zip(r) {
                match compare(a, b, *c)? {
                    Ordering::Equal => {}
                    o => return Some(holds(op, o)),
                }
            }
            Some(holds(op, Ordering::Equal))
        }
    }
}

/// `l op ANY (rows)` (all: false) or `l op ALL (rows)` compared as rows:
/// ANY is true at the first true comparison and ALL false at the first
/// false one; otherwise NULL when a comparison was, else false for ANY
/// and true for ALL (also over no rows).
pub(crate) fn rows_quantified<'r>(
    op: BinOp,
    all: bool,
    l: &[(Value, Collation)],
    rows: impl Iterator<Item = &'r Vec<Value>>,
) -> Value {
    let mut unknown = false;
    for r in rows {
        match row_compare(op, l, r) {
            None => unknown = true,
            Some(h) if h != all => return Value::Int(i64::from(h)),
            Some(_) => {}
        }
    }
    if unknown {
        Value::Null
    } else {
        Value::Int(i64::from(all))
    }
}

/// Plans a subquery met while compiling an expression.
pub trait SubPlanner {
    /// Compiles `q` with parameters numbered from `next_param` (advanced
    /// past its own); `outer` are the scopes of the enclosing queries,
    /// innermost last (a name found only there makes the subquery
    /// correlated).
    fn plan(
        &self,
        q: &ast::Query,
        next_param: &mut usize,
        outer: &[&Scope],
    ) -> SqlResult<crate::plan::SelectPlan>;
}

/// Targets of CAST / CONVERT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastTo {
    /// SIGNED [INTEGER]
    Signed,
    /// UNSIGNED [INTEGER]
    Unsigned,
    /// CHAR / BINARY
    Char,
    /// DECIMAL(p, s)
    Decimal(u8),
    /// DOUBLE / FLOAT / REAL
    Double,
    /// TIME(fsp)
    Time(u8),
    /// JSON
    Json,
    /// DATE
    Date,
    /// DATETIME(fsp)
    DateTime(u8),
}

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    /// COUNT(*)
    CountStar,
    /// COUNT(e)
    Count,
    /// SUM
    Sum,
    /// AVG
    Avg,
    /// MIN
    Min,
    /// MAX
    Max,
    /// BIT_AND (BIGINT UNSIGNED; all ones over no rows)
    BitAnd,
    /// BIT_OR
    BitOr,
    /// BIT_XOR
    BitXor,
    /// STD / STDDEV / STDDEV_POP
    StdPop,
    /// STDDEV_SAMP
    StdSamp,
    /// VARIANCE / VAR_POP
    VarPop,
    /// VAR_SAMP
    VarSamp,
    /// GROUP_CONCAT([DISTINCT] e, ... [ORDER BY ..] [SEPARATOR s])
    GroupConcat,
    /// JSON_ARRAYAGG(e): the group's values as a JSON array (NULLs as
    /// `null`).
    JsonArrayAgg,
    /// JSON_OBJECTAGG(k, v): the group's pairs as a JSON object; its
    /// argument is compiled as `JSON_ARRAY(k, v)`.
    JsonObjectAgg,
}

/// GROUP_CONCAT's ORDER BY and SEPARATOR.
#[derive(Debug, Clone)]
pub struct ConcatSpec {
    /// ORDER BY keys, with DESC.
    pub order: Vec<(Expr, bool)>,
    /// SEPARATOR (`,` by default).
    pub sep: Vec<u8>,
}

/// An aggregate call found while compiling a grouped query.
#[derive(Debug, Clone)]
pub struct AggCall {
    /// Which.
    pub func: AggFunc,
    /// Its argument (None for COUNT(*)).
    pub arg: Option<Expr>,
    /// DISTINCT.
    pub distinct: bool,
    /// GROUP_CONCAT's ORDER BY and SEPARATOR.
    pub concat: Option<Box<ConcatSpec>>,
}

pub use crate::window::WinCall;

/// What evaluation may read besides the row.
pub trait Env {
    /// Parameters of the executing statement.
    fn params(&self) -> &[Value];
    /// A system variable's value.
    fn sys_var(&self, name: &str) -> SqlResult<Value>;
    /// A user variable's value (NULL when unset).
    fn user_var(&self, name: &str) -> Value;
    /// The current database.
    fn database(&self) -> Option<String>;
    /// The connection id.
    fn connection_id(&self) -> u64;
    /// LAST_INSERT_ID().
    fn last_insert_id(&self) -> u64;
    /// `USER()`: `user@client host`.
    fn user(&self) -> String;
    /// `CURRENT_USER()`: the account, `user@host pattern`. Default:
    /// [`Env::user`].
    fn current_user(&self) -> String {
        self.user()
    }
    /// Rows the last SELECT returned / the last statement changed.
    fn found_rows(&self) -> u64;
    /// ROW_COUNT().
    fn row_count(&self) -> i64;
    /// A warning of the running statement (a value truncated in a
    /// conversion); ignored where nobody reads warnings.
    fn warn(&self, _code: u16, _message: String) {}
    /// Error 1317 / 3024 once the running statement was killed or ran
    /// past its time limit (long computations ask between rows). Default:
    /// never.
    fn check_interrupt(&self) -> SqlResult<()> {
        Ok(())
    }
    /// The value of [`Expr::Outer`]`(up, slot)`: a column of an enclosing
    /// query's current row (only the executor running a correlated
    /// subquery has one).
    fn outer(&self, _up: usize, _slot: usize) -> SqlResult<Value> {
        Err(SqlError::internal("outer reference outside a subquery"))
    }
    /// The value of a correlated subquery for the current row `row` of
    /// the query it is in (`x`: the left operand of a quantified
    /// comparison, with its collation).
    fn subquery(
        &self,
        _sq: &SubQuery,
        _x: Option<(Value, Collation)>,
        _row: &[Value],
    ) -> SqlResult<Value> {
        Err(SqlError::internal("subquery not materialised"))
    }
    /// The value of a correlated row subquery ([`SubTest::Rows`],
    /// [`SubTest::RowCmp`]) for the current row `row`, `x` its left
    /// row's values with their collations.
    fn row_subquery(
        &self,
        _sq: &SubQuery,
        _x: &[(Value, Collation)],
        _row: &[Value],
    ) -> SqlResult<Value> {
        Err(SqlError::internal("subquery not materialised"))
    }
}

/// Calls `f` on each direct operand of `e`.
pub fn children_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr) -> SqlResult<()>) -> SqlResult<()> {
    match e {
        Expr::Const(_)
        | Expr::Column(_)
        | Expr::Outer(..)
        | Expr::Param(_)
        | Expr::SysVar(_)
        | Expr::UserVar(_)
        | Expr::Agg(_) => Ok(()),
        Expr::Not(x) | Expr::Neg(x) | Expr::IsNull(x, _) | Expr::Cast(x, _) => f(x),
        Expr::Binary(_, l, r) | Expr::Like(l, r, ..) => {
            f(l)?;
            f(r)
        }
        Expr::InList(x, l, _) => {
            f(x)?;
            l.iter_mut().try_for_each(f)
        }
        Expr::Between(a, b, c, _) => {
            f(a)?;
            f(b)?;
            f(c)
        }
        Expr::Case(o, arms, els) => {
            if let Some(o) = o {
                f(o)?;
            }
            for (w, t) in arms {
                f(w)?;
                f(t)?;
            }
            if let Some(x) = els {
                f(x)?;
            }
            Ok(())
        }
        Expr::Func(_, args) => args.iter_mut().try_for_each(f),
        Expr::Subquery(x, _) => match x {
            Some(x) => f(x),
            None => Ok(()),
        },
        Expr::InSet(x, ..) => f(x),
        Expr::Row(items) | Expr::InRows(items, ..) => items.iter_mut().try_for_each(f),
    }
}

/// Calls `f` on the plan of each subquery in `e` (not inside them).
pub fn each_subquery(e: &Expr, f: &mut dyn FnMut(&crate::plan::SelectPlan)) {
    let mut e = e.clone();
    let _ = each_subquery_mut(&mut e, f);
}

fn each_subquery_mut(e: &mut Expr, f: &mut dyn FnMut(&crate::plan::SelectPlan)) -> SqlResult<()> {
    if let Expr::Subquery(_, sq) = e {
        f(&sq.plan);
    }
    children_mut(e, &mut |c| each_subquery_mut(c, f))
}

/// Whether `e` reads columns of enclosing queries and none of its own
/// query's (not looking inside subqueries).
fn reads_outer_only(e: &Expr) -> bool {
    fn walk(e: &mut Expr, outer: &mut bool, own: &mut bool) {
        match e {
            Expr::Outer(..) => *outer = true,
            Expr::Column(_) => *own = true,
            _ => {
                let _ = children_mut(e, &mut |x| {
                    walk(x, outer, own);
                    Ok(())
                });
            }
        }
    }
    let (mut outer, mut own) = (false, false);
    walk(&mut e.clone(), &mut outer, &mut own);
    outer && !own
}
