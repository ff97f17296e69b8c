//! Expressions: compiled from the parser's AST against a scope of
//! columns (so a cached plan evaluates without name lookups), and
//! evaluated with MySQL's semantics: three-valued logic, NULL
//! propagation, numeric comparison of mixed types, string comparison
//! under the column's collation (`utf8mb4_general_ci` by default),
//! integer overflow as an error.
//!
//! No locks, no I/O; evaluation allocates only for string results.

//!
//! Submodules: the functions by family (`funcs`, `datefuncs`,
//! `strfuncs`, `mathfuncs`, `regexfuncs`) and JSON documents (`json`).

pub(crate) mod datefuncs;
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

/// Compiles parser expressions against a scope.
pub struct Compiler<'a> {
    /// Columns an expression may name.
    pub scope: &'a Scope,
    /// Aggregates met (when `allow_agg`).
    pub aggs: Vec<AggCall>,
    /// Whether aggregates may appear.
    pub allow_agg: bool,
    /// Next `?` parameter number.
    pub next_param: usize,
    /// Plans subqueries (None: subqueries are refused here).
    pub sub: Option<&'a dyn SubPlanner>,
    /// Scopes of the enclosing queries, innermost last.
    pub outer: Vec<&'a Scope>,
    /// Subqueries compiled.
    pub subqueries: usize,
    /// Columns of enclosing queries read (by this query's expressions or
    /// its subqueries'): (queries out, slot), each once.
    pub outer_refs: Vec<(usize, usize)>,
    /// Whether an expression compiled reads an enclosing query's column
    /// itself ([`Expr::Outer`]).
    pub direct_outer: bool,
    /// Whether a correlated subquery was compiled.
    pub correlated_subqueries: bool,
    /// Window functions met (when `allow_win`); window k reads as
    /// `Expr::Agg(crate::window::WIN_BASE + k)` until the planner
    /// renumbers it past the query's aggregates.
    pub wins: Vec<WinCall>,
    /// Whether window functions may appear (a select list, ORDER BY).
    pub allow_win: bool,
    /// The query's WINDOW clause.
    pub named_windows: &'a [ast::NamedWindowDefinition],
}

impl<'a> Compiler<'a> {
    /// A compiler over `scope`.
    pub fn new(scope: &'a Scope) -> Self {
        Compiler {
            scope,
            aggs: Vec::new(),
            allow_agg: false,
            next_param: 0,
            sub: None,
            outer: Vec::new(),
            subqueries: 0,
            outer_refs: Vec::new(),
            direct_outer: false,
            correlated_subqueries: false,
            wins: Vec::new(),
            allow_win: false,
            named_windows: &[],
        }
    }

    /// Notes a read of slot `slot` of the query `up` levels out.
    fn note_outer(&mut self, up: usize, slot: usize) {
        if !self.outer_refs.contains(&(up, slot)) {
            self.outer_refs.push((up, slot));
        }
    }

    /// A subquery of `test` (with the left operand `x` of a quantified
    /// comparison).
    fn subquery(&mut self, q: &ast::Query, test: SubTest, x: Option<Expr>) -> SqlResult<Expr> {
        let Some(sub) = self.sub else {
            return Err(SqlError::unsupported("subquery in this context"));
        };
        let mut chain = self.outer.clone();
        chain.push(self.scope);
        let mut plan = sub.plan(q, &mut self.next_param, &chain)?;
        let width = match &x {
            Some(Expr::Row(items)) => items.len(),
            _ => 1,
        };
        if test != SubTest::Exists && plan.columns.len() != width {
            return Err(operand_columns(width));
        }
        self.subqueries += 1;
        if !plan.outer_refs.is_empty() {
            self.correlated_subqueries = true;
            // What it reads further out than this query, this query
            // reads too.
            for &(up, slot) in &plan.outer_refs {
                if up > 1 {
                    self.note_outer(up - 1, slot);
                }
            }
        }
        // EXISTS needs one row, a scalar subquery two (to tell 1242).
        if plan.limit.is_none() && plan.offset.is_none() {
            match test {
                SubTest::Exists => plan.limit = Some(Expr::Const(Value::Int(1))),
                SubTest::Scalar | SubTest::RowCmp(_) => {
                    plan.limit = Some(Expr::Const(Value::Int(2)))
                }
                SubTest::Quant(..) | SubTest::Rows(..) => {}
            }
        }
        let id = NEXT_SUBQUERY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Expr::Subquery(
            x.map(Box::new),
            Arc::new(SubQuery { plan, test, id }),
        ))
    }

    /// `left op ANY/SOME/ALL (SELECT ...)`.
    fn quantified(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        all: bool,
    ) -> SqlResult<Expr> {
        let op = match op {
            ast::BinaryOperator::Eq => BinOp::Eq,
            ast::BinaryOperator::NotEq => BinOp::Ne,
            ast::BinaryOperator::Lt => BinOp::Lt,
            ast::BinaryOperator::LtEq => BinOp::Le,
            ast::BinaryOperator::Gt => BinOp::Gt,
            ast::BinaryOperator::GtEq => BinOp::Ge,
            other => return Err(SqlError::unsupported(format!("{other} ANY/ALL"))),
        };
        let mut r = right;
        while let ast::Expr::Nested(inner) = r {
            r = inner;
        }
        let ast::Expr::Subquery(q) = r else {
            return Err(SqlError::unsupported("ANY/ALL without a subquery"));
        };
        if let Some(items) = row_items(left) {
            if !matches!(op, BinOp::Eq | BinOp::Ne) {
                return Err(SqlError::unsupported(
                    "a row compared by other than = or <> with ANY/ALL",
                ));
            }
            let x = self.row(&items)?;
            return self.subquery(q, SubTest::Rows(op, all), Some(x));
        }
        let x = self.compile(left)?;
        self.subquery(q, SubTest::Quant(op, all), Some(x))
    }

    /// Compiles one expression.
    pub fn compile(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as A;
        Ok(match e {
            A::Identifier(id) => self.identifier(None, id)?,
            A::CompoundIdentifier(parts) => match parts.as_slice() {
                // `@@session.name`, `@@global.name` (read as `global.name`:
                // the global value, `vars::get`).
                [t, c] if t.quote_style.is_none() && t.value.starts_with("@@") => {
                    if t.value.eq_ignore_ascii_case("@@global") {
                        Expr::SysVar(format!("global.{}", c.value.to_lowercase()))
                    } else {
                        Expr::SysVar(c.value.to_lowercase())
                    }
                }
                [t, c] => self.identifier(Some(&t.value), c)?,
                [_db, t, c] => self.identifier(Some(&t.value), c)?,
                _ => return Err(SqlError::unsupported(e)),
            },
            A::Value(v) => self.value(&v.value)?,
            A::Subquery(q) => self.subquery(q, SubTest::Scalar, None)?,
            A::Exists { subquery, negated } => {
                let e = self.subquery(subquery, SubTest::Exists, None)?;
                if *negated {
                    Expr::Not(Box::new(e))
                } else {
                    e
                }
            }
            A::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                if let Some(items) = row_items(expr) {
                    let x = self.row(&items)?;
                    let test = if *negated {
                        SubTest::Rows(BinOp::Ne, true)
                    } else {
                        SubTest::Rows(BinOp::Eq, false)
                    };
                    return self.subquery(subquery, test, Some(x));
                }
                let x = self.compile(expr)?;
                let test = if *negated {
                    SubTest::Quant(BinOp::Ne, true)
                } else {
                    SubTest::Quant(BinOp::Eq, false)
                };
                self.subquery(subquery, test, Some(x))?
            }
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => self.quantified(left, compare_op, right, false)?,
            A::AllOp {
                left,
                compare_op,
                right,
            } => self.quantified(left, compare_op, right, true)?,
            A::Tuple(_) => return Err(operand_columns(1)),
            A::BinaryOp { left, op, right }
                if row_items(left).is_some() || row_items(right).is_some() =>
            {
                self.row_compare(op, left, right)?
            }
            A::InList {
                expr,
                list,
                negated,
            } if row_items(expr).is_some() || list.iter().any(|x| row_items(x).is_some()) => {
                // `(a, b) IN ((1, 2), (3, 4))`: an OR of row equalities.
                let mut any: Option<Expr> = None;
                for item in list {
                    let eq = self.row_compare(&ast::BinaryOperator::Eq, expr, item)?;
                    any = Some(match any {
                        None => eq,
                        Some(a) => Expr::Binary(BinOp::Or, Box::new(a), Box::new(eq)),
                    });
                }
                let any = any.ok_or_else(|| SqlError::syntax("empty IN list"))?;
                if *negated {
                    Expr::Not(Box::new(any))
                } else {
                    any
                }
            }
            A::Nested(inner) => self.compile(inner)?,
            A::IsNull(x) => Expr::IsNull(Box::new(self.compile(x)?), false),
            A::IsNotNull(x) => Expr::IsNull(Box::new(self.compile(x)?), true),
            A::IsTrue(x) => self.truth(x, true, false)?,
            A::IsNotTrue(x) => self.truth(x, true, true)?,
            A::IsFalse(x) => self.truth(x, false, false)?,
            A::IsNotFalse(x) => self.truth(x, false, true)?,
            A::InList {
                expr,
                list,
                negated,
            } => {
                let x = self.compile(expr)?;
                let list = list
                    .iter()
                    .map(|i| {
                        let k = self.compile(i)?;
                        Ok(self.year_side(&x, k))
                    })
                    .collect::<SqlResult<_>>()?;
                Expr::InList(Box::new(x), list, *negated)
            }
            A::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.compile(expr)?;
                let (lo, hi) = (self.compile(low)?, self.compile(high)?);
                let (lo, hi) = (self.year_side(&x, lo), self.year_side(&x, hi));
                Expr::Between(Box::new(x), Box::new(lo), Box::new(hi), *negated)
            }
            A::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => Expr::Like(
                Box::new(self.compile(expr)?),
                Box::new(self.compile(pattern)?),
                *negated,
                like_escape_char(escape_char.as_ref())?,
            ),
            // A chain of AND, OR or XOR (left-deep as parsed, as long as
            // the query) becomes a balanced tree: the operators are
            // associative, the operands keep their order (so evaluation
            // stops at the same operand), and the tree is as deep as the
            // logarithm of the chain.
            A::BinaryOp {
                op:
                    op @ (ast::BinaryOperator::And | ast::BinaryOperator::Or | ast::BinaryOperator::Xor),
                ..
            } => {
                let bop = match op {
                    ast::BinaryOperator::And => BinOp::And,
                    ast::BinaryOperator::Or => BinOp::Or,
                    _ => BinOp::Xor,
                };
                let mut operands = Vec::new();
                let mut cur = e;
                while let A::BinaryOp { left, op: o, right } = cur {
                    if o != op {
                        break;
                    }
                    operands.push(&**right);
                    cur = left;
                }
                operands.push(cur);
                operands.reverse();
                let parts = operands
                    .into_iter()
                    .map(|x| self.compile(x))
                    .collect::<SqlResult<Vec<_>>>()?;
                balanced(bop, parts)
            }
            A::BinaryOp {
                left,
                op: op @ (ast::BinaryOperator::Plus | ast::BinaryOperator::Minus),
                right,
            } if matches!(**right, A::Interval(_))
                || (matches!(op, ast::BinaryOperator::Plus)
                    && matches!(**left, A::Interval(_))) =>
            {
                // `x + INTERVAL n unit`, `INTERVAL n unit + x`, `x - INTERVAL n unit`.
                let (x, iv) = match &**right {
                    A::Interval(iv) => (left, iv),
                    _ => match &**left {
                        A::Interval(iv) => (right, iv),
                        _ => return Err(SqlError::unsupported(e)),
                    },
                };
                let unit = interval_unit(iv)?;
                let neg = matches!(op, ast::BinaryOperator::Minus);
                Expr::Func(
                    Func::Dt(crate::datefuncs::DtFn::AddInterval(unit, neg)),
                    vec![self.compile(x)?, self.compile(&iv.value)?],
                )
            }
            A::Interval(_) => return Err(SqlError::syntax(format!("unexpected {e}"))),
            A::RLike {
                negated,
                expr,
                pattern,
                ..
            } => {
                let (x, p) = (self.compile(expr)?, self.compile(pattern)?);
                let flags = self.regexp_flags(&x, &p);
                let m = Expr::Func(Func::RegexpLike, vec![x, p, flags]);
                if *negated {
                    Expr::Not(Box::new(m))
                } else {
                    m
                }
            }
            A::Extract { field, expr, .. } => {
                let unit = field_unit(field)?;
                Expr::Func(
                    Func::Dt(crate::datefuncs::DtFn::Extract(unit)),
                    vec![self.compile(expr)?],
                )
            }
            A::BinaryOp {
                left,
                op: op @ (ast::BinaryOperator::Arrow | ast::BinaryOperator::LongArrow),
                right,
            } => {
                // `col -> path` is JSON_EXTRACT(col, path); `->>` also
                // unquotes. MySQL takes a column on the left and a string
                // literal on the right only.
                if !matches!(**left, A::Identifier(_) | A::CompoundIdentifier(_))
                    || !matches!(&**right, A::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_) | ast::Value::DoubleQuotedString(_)))
                {
                    return Err(SqlError::syntax(format!(
                        "You have an error in your SQL syntax near '{e}': the JSON operators take a column and a path string"
                    )));
                }
                let x = Expr::Func(
                    Func::Json(crate::json::JsonFn::Extract),
                    vec![self.compile(left)?, self.compile(right)?],
                );
                if matches!(op, ast::BinaryOperator::LongArrow) {
                    Expr::Func(Func::Json(crate::json::JsonFn::Unquote), vec![x])
                } else {
                    x
                }
            }
            A::MemberOf(m) => {
                let v = self.compile(&m.value)?;
                let v = if is_truth_valued(&v) {
                    Expr::Func(Func::Json(crate::json::JsonFn::Bool), vec![v])
                } else {
                    v
                };
                Expr::Func(
                    Func::Json(crate::json::JsonFn::MemberOf),
                    vec![v, self.compile(&m.array)?],
                )
            }
            A::BinaryOp { left, op, right } => {
                let op = match op {
                    ast::BinaryOperator::Plus => BinOp::Add,
                    ast::BinaryOperator::Minus => BinOp::Sub,
                    ast::BinaryOperator::Multiply => BinOp::Mul,
                    ast::BinaryOperator::Divide => BinOp::Div,
                    ast::BinaryOperator::Modulo => BinOp::Mod,
                    ast::BinaryOperator::MyIntegerDivide => BinOp::IntDiv,
                    ast::BinaryOperator::Eq => BinOp::Eq,
                    ast::BinaryOperator::Spaceship => BinOp::NullSafeEq,
                    ast::BinaryOperator::NotEq => BinOp::Ne,
                    ast::BinaryOperator::Lt => BinOp::Lt,
                    ast::BinaryOperator::LtEq => BinOp::Le,
                    ast::BinaryOperator::Gt => BinOp::Gt,
                    ast::BinaryOperator::GtEq => BinOp::Ge,
                    ast::BinaryOperator::And => BinOp::And,
                    ast::BinaryOperator::Or => BinOp::Or,
                    ast::BinaryOperator::Xor => BinOp::Xor,
                    ast::BinaryOperator::BitwiseAnd => BinOp::BitAnd,
                    ast::BinaryOperator::BitwiseOr => BinOp::BitOr,
                    ast::BinaryOperator::BitwiseXor => BinOp::BitXor,
                    ast::BinaryOperator::PGBitwiseShiftLeft => BinOp::Shl,
                    ast::BinaryOperator::PGBitwiseShiftRight => BinOp::Shr,
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                };
                let (mut l, mut r) = (self.compile(left)?, self.compile(right)?);
                if op.is_comparison() {
                    r = self.year_side(&l, r);
                    l = self.year_side(&r, l);
                }
                Expr::Binary(op, Box::new(l), Box::new(r))
            }
            A::UnaryOp { op, expr } => match op {
                ast::UnaryOperator::Not | ast::UnaryOperator::BangNot => {
                    Expr::Not(Box::new(self.compile(expr)?))
                }
                ast::UnaryOperator::Minus => match self.compile(expr)? {
                    Expr::Const(Value::Int(i)) => Expr::Const(Value::Int(-i)),
                    Expr::Const(Value::Decimal(d, s)) => Expr::Const(Value::Decimal(-d, s)),
                    Expr::Const(Value::Double(f)) => Expr::Const(Value::Double(-f)),
                    Expr::Const(Value::UInt(u)) if u == 1u64 << 63 => {
                        Expr::Const(Value::Int(i64::MIN))
                    }
                    x => Expr::Neg(Box::new(x)),
                },
                ast::UnaryOperator::Plus => self.compile(expr)?,
                // `~x`: the 64-bit complement, `x ^ 0xFFFFFFFFFFFFFFFF`.
                ast::UnaryOperator::PGBitwiseNot => Expr::Binary(
                    BinOp::BitXor,
                    Box::new(self.compile(expr)?),
                    Box::new(Expr::Const(Value::UInt(u64::MAX))),
                ),
                other => return Err(SqlError::unsupported(format!("operator {other}"))),
            },
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let operand = match operand {
                    Some(o) => Some(Box::new(self.compile(o)?)),
                    None => None,
                };
                let mut arms = Vec::new();
                for w in conditions {
                    arms.push((self.compile(&w.condition)?, self.compile(&w.result)?));
                }
                let els = match else_result {
                    Some(x) => Some(Box::new(self.compile(x)?)),
                    None => None,
                };
                Expr::Case(operand, arms, els)
            }
            A::Cast {
                expr, data_type, ..
            } => Expr::Cast(Box::new(self.compile(expr)?), cast_target(data_type)?),
            A::Convert {
                expr,
                data_type: Some(dt),
                ..
            } => Expr::Cast(Box::new(self.compile(expr)?), cast_target(dt)?),
            A::Convert {
                expr,
                data_type: None,
                ..
            } => self.compile(expr)?,
            A::Function(f) => self.function(f)?,
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.compile(expr)?];
                if let Some(f) = substring_from {
                    args.push(self.compile(f)?);
                }
                if let Some(f) = substring_for {
                    args.push(self.compile(f)?);
                }
                Expr::Func(Func::Substring, args)
            }
            A::Trim {
                expr,
                trim_where: None,
                trim_what: None,
                trim_characters: None,
            } => Expr::Func(Func::Trim, vec![self.compile(expr)?]),
            A::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters: None,
            } => {
                let what = match trim_what {
                    Some(w) => self.compile(w)?,
                    None => Expr::Const(Value::Str(b" ".to_vec())),
                };
                let f = match trim_where {
                    Some(ast::TrimWhereField::Leading) => Func::TrimLeading,
                    Some(ast::TrimWhereField::Trailing) => Func::TrimTrailing,
                    _ => Func::TrimBoth,
                };
                Expr::Func(f, vec![self.compile(expr)?, what])
            }
            A::Position { expr, r#in } => {
                Expr::Func(Func::Locate, vec![self.compile(expr)?, self.compile(r#in)?])
            }
            A::Floor { expr, .. } => Expr::Func(Func::Floor, vec![self.compile(expr)?]),
            A::Ceil { expr, .. } => Expr::Func(Func::Ceil, vec![self.compile(expr)?]),
            A::TypedString(ts) => {
                // DATE '...' and TIMESTAMP '...' are dates, not strings.
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(t) | ast::Value::DoubleQuotedString(t) => {
                        Some(t.as_bytes())
                    }
                    _ => None,
                };
                match (&ts.data_type, text) {
                    (ast::DataType::Date, Some(t)) => match crate::convert::parse_date_str(t) {
                        Some(d) => Expr::Const(Value::Date(d)),
                        None => self.value(&ts.value.value)?,
                    },
                    (ast::DataType::Timestamp(..) | ast::DataType::Datetime(_), Some(t)) => {
                        match crate::convert::parse_datetime_str(t) {
                            Some(d) => Expr::Const(Value::DateTime(d)),
                            None => self.value(&ts.value.value)?,
                        }
                    }
                    _ => self.value(&ts.value.value)?,
                }
            }
            _ => return Err(SqlError::unsupported(e)),
        })
    }

    /// `k` compared with `x`: a constant read as a YEAR when `x` is a
    /// YEAR column (MySQL converts the constant to the column's type),
    /// else `k` unchanged.
    fn year_side(&self, x: &Expr, k: Expr) -> Expr {
        match (x, k) {
            (Expr::Column(i), Expr::Const(v))
                if self
                    .scope
                    .cols
                    .get(*i)
                    .is_some_and(|c| c.ty == Some(ColumnType::Year)) =>
            {
                Expr::Const(crate::convert::year_constant(v))
            }
            (_, k) => k,
        }
    }

    /// The left operand of a row subquery: its items compiled (an item
    /// that is itself a row is refused: 1241).
    fn row(&mut self, items: &[&ast::Expr]) -> SqlResult<Expr> {
        let mut v = Vec::with_capacity(items.len());
        for x in items {
            if row_items(x).is_some() {
                return Err(operand_columns(1));
            }
            v.push(self.compile(x)?);
        }
        Ok(Expr::Row(v))
    }

    /// A comparison with a row constructor on either side, expanded into
    /// scalar comparisons with MySQL's row semantics: `=` is the AND of
    /// the pairs, `<>` their OR, `<=>` the AND of `<=>`, and `<`, `<=`,
    /// `>`, `>=` decide at the first pair that is not equal (NULL when
    /// that pair has a NULL).
    fn row_compare(
        &mut self,
        op: &ast::BinaryOperator,
        left: &ast::Expr,
        right: &ast::Expr,
    ) -> SqlResult<Expr> {
        use ast::BinaryOperator as B;
        let op = match op {
            B::Eq => BinOp::Eq,
            B::NotEq => BinOp::Ne,
            B::Spaceship => BinOp::NullSafeEq,
            B::Lt => BinOp::Lt,
            B::LtEq => BinOp::Le,
            B::Gt => BinOp::Gt,
            B::GtEq => BinOp::Ge,
            _ => return Err(operand_columns(1)),
        };
        let (l, r) = match (row_items(left), row_items(right)) {
            (Some(l), Some(r)) if l.len() == r.len() => (l, r),
            (Some(items), None) => {
                if let ast::Expr::Subquery(q) = unnest(right) {
                    let x = self.row(&items)?;
                    return self.subquery(q, SubTest::RowCmp(op), Some(x));
                }
                return Err(operand_columns(items.len()));
            }
            (None, Some(items)) => {
                if let ast::Expr::Subquery(q) = unnest(left) {
                    // `(SELECT ...) op (a, b)` is `(a, b) op' (SELECT ...)`.
                    let flipped = match op {
                        BinOp::Lt => BinOp::Gt,
                        BinOp::Le => BinOp::Ge,
                        BinOp::Gt => BinOp::Lt,
                        BinOp::Ge => BinOp::Le,
                        other => other,
                    };
                    let x = self.row(&items)?;
                    return self.subquery(q, SubTest::RowCmp(flipped), Some(x));
                }
                return Err(operand_columns(1));
            }
            (Some(l), _) => return Err(operand_columns(l.len())),
            (None, _) => return Err(operand_columns(1)),
        };
        let mut pairs = Vec::with_capacity(l.len());
        for (a, b) in l.into_iter().zip(r) {
            let nested = row_items(a).is_some() || row_items(b).is_some();
            pairs.push((a, b, nested));
        }
        // Built from the last pair backwards.
        let mut acc: Option<Expr> = None;
        for (a, b, nested) in pairs.into_iter().rev() {
            let cmp = |c: &mut Self, op: BinOp| -> SqlResult<Expr> {
                if nested {
                    let o = match op {
                        BinOp::Eq => B::Eq,
                        BinOp::Ne => B::NotEq,
                        BinOp::NullSafeEq => B::Spaceship,
                        BinOp::Lt => B::Lt,
                        BinOp::Le => B::LtEq,
                        BinOp::Gt => B::Gt,
                        _ => B::GtEq,
                    };
                    c.row_compare(&o, a, b)
                } else {
                    Ok(Expr::Binary(
                        op,
                        Box::new(c.compile(a)?),
                        Box::new(c.compile(b)?),
                    ))
                }
            };
            acc = Some(match (op, acc) {
                (_, None) => cmp(self, op)?,
                (BinOp::Eq | BinOp::NullSafeEq, Some(rest)) => {
                    Expr::Binary(BinOp::And, Box::new(cmp(self, op)?), Box::new(rest))
                }
                (BinOp::Ne, Some(rest)) => {
                    Expr::Binary(BinOp::Or, Box::new(cmp(self, op)?), Box::new(rest))
                }
                (_, Some(rest)) => {
                    let strict = match op {
                        BinOp::Lt | BinOp::Le => BinOp::Lt,
                        _ => BinOp::Gt,
                    };
                    Expr::Case(
                        None,
                        vec![(cmp(self, BinOp::Eq)?, rest)],
                        Some(Box::new(cmp(self, strict)?)),
                    )
                }
            });
        }
        acc.ok_or_else(|| operand_columns(1))
    }

    fn truth(&mut self, x: &ast::Expr, want: bool, negated: bool) -> SqlResult<Expr> {
        // `x IS TRUE` = coalesce(x <> 0, false); built from the pieces.
        let v = self.compile(x)?;
        let test = Expr::Func(
            Func::IfNull,
            vec![
                if want {
                    Expr::Binary(BinOp::Ne, Box::new(v), Box::new(Expr::Const(Value::Int(0))))
                } else {
                    Expr::Binary(BinOp::Eq, Box::new(v), Box::new(Expr::Const(Value::Int(0))))
                },
                Expr::Const(Value::Int(0)),
            ],
        );
        Ok(if negated {
            Expr::Not(Box::new(test))
        } else {
            test
        })
    }

    fn identifier(&mut self, table: Option<&str>, id: &ast::Ident) -> SqlResult<Expr> {
        let name = id.value.as_str();
        if id.quote_style.is_none() {
            if let Some(var) = name.strip_prefix("@@") {
                let var = var.to_lowercase();
                let var = match var.strip_prefix("global.") {
                    // The global value (`vars::get`).
                    Some(_) => var,
                    None => var
                        .strip_prefix("session.")
                        .or_else(|| var.strip_prefix("local."))
                        .unwrap_or(&var)
                        .to_string(),
                };
                return Ok(Expr::SysVar(var));
            }
            if let Some(var) = name.strip_prefix('@') {
                return Ok(Expr::UserVar(var.to_lowercase()));
            }
            if table.is_none() {
                match name.to_ascii_lowercase().as_str() {
                    "current_timestamp" | "localtimestamp" | "localtime" => {
                        return Ok(Expr::Func(Func::Now, vec![]))
                    }
                    "current_date" => return Ok(Expr::Func(Func::CurDate, vec![])),
                    "current_time" | "utc_time" => {
                        return Ok(Expr::Func(
                            Func::Dt(crate::datefuncs::DtFn::CurTime),
                            vec![],
                        ))
                    }
                    "utc_date" => {
                        return Ok(Expr::Func(
                            Func::Dt(crate::datefuncs::DtFn::UtcDate),
                            vec![],
                        ))
                    }
                    "utc_timestamp" => {
                        return Ok(Expr::Func(
                            Func::Dt(crate::datefuncs::DtFn::UtcTimestamp),
                            vec![],
                        ))
                    }
                    "current_user" => return Ok(Expr::Func(Func::CurrentUser, vec![])),
                    _ => {}
                }
            }
        }
        match self.scope.resolve(table, name) {
            Ok(i) => Ok(Expr::Column(i)),
            // A name of an enclosing query, the innermost that has it: a
            // correlated subquery.
            Err(e) if e.code == 1054 => {
                let n = self.outer.len();
                for level in (0..n).rev() {
                    match self.outer[level].resolve(table, name) {
                        Ok(slot) => {
                            let up = n - level;
                            self.note_outer(up, slot);
                            self.direct_outer = true;
                            return Ok(Expr::Outer(up, slot));
                        }
                        Err(o) if o.code != 1054 => return Err(o),
                        Err(_) => {}
                    }
                }
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    fn value(&mut self, v: &ast::Value) -> SqlResult<Expr> {
        use ast::Value as V;
        Ok(Expr::Const(match v {
            V::Number(n, _) => parse_number(n)?,
            V::SingleQuotedString(s) | V::DoubleQuotedString(s) => {
                Value::Str(s.clone().into_bytes())
            }
            V::HexStringLiteral(h) => Value::Str(parse_hex(h)?),
            // A bit-value literal is a number (up to 64 bits), as MySQL
            // reads one in numeric context.
            V::SingleQuotedByteStringLiteral(b) => {
                let bytes = parse_bits(b)?;
                if bytes.len() <= 8 && !b.is_empty() {
                    Value::UInt(bytes.iter().fold(0u64, |a, x| (a << 8) | u64::from(*x)))
                } else {
                    Value::Str(bytes)
                }
            }
            V::Boolean(b) => Value::Int(i64::from(*b)),
            V::Null => Value::Null,
            V::Placeholder(p) if p == "?" => {
                let n = self.next_param;
                self.next_param += 1;
                return Ok(Expr::Param(n));
            }
            other => return Err(SqlError::unsupported(other)),
        }))
    }

    fn function(&mut self, f: &ast::Function) -> SqlResult<Expr> {
        let name = f.name.to_string().to_ascii_lowercase();
        // Window functions would otherwise run as plain aggregates.
        if let Some(over) = &f.over {
            return self.window(f, over, &name);
        }
        if f.filter.is_some() || f.null_treatment.is_some() || !f.within_group.is_empty() {
            return Err(SqlError::unsupported(f));
        }
        let mut clauses: &[ast::FunctionArgumentClause] = &[];
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::List(l) => {
                let distinct = matches!(
                    l.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                );
                let mut star = false;
                let mut args = Vec::new();
                clauses = &l.clauses;
                for a in &l.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        other => return Err(SqlError::unsupported(other)),
                    }
                }
                (args, distinct, star)
            }
            ast::FunctionArguments::Subquery(_) => return Err(SqlError::unsupported(f)),
        };
        let agg = match name.as_str() {
            "count" if star => Some(AggFunc::CountStar),
            "count" => Some(AggFunc::Count),
            "sum" => Some(AggFunc::Sum),
            "avg" => Some(AggFunc::Avg),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "bit_and" => Some(AggFunc::BitAnd),
            "bit_or" => Some(AggFunc::BitOr),
            "bit_xor" => Some(AggFunc::BitXor),
            "std" | "stddev" | "stddev_pop" => Some(AggFunc::StdPop),
            "stddev_samp" => Some(AggFunc::StdSamp),
            "variance" | "var_pop" => Some(AggFunc::VarPop),
            "var_samp" => Some(AggFunc::VarSamp),
            "group_concat" => Some(AggFunc::GroupConcat),
            "json_arrayagg" => Some(AggFunc::JsonArrayAgg),
            "json_objectagg" => Some(AggFunc::JsonObjectAgg),
            _ => None,
        };
        if !clauses.is_empty() && agg != Some(AggFunc::GroupConcat) {
            return Err(SqlError::unsupported(f));
        }
        if let Some(func) = agg {
            if !self.allow_agg {
                return Err(SqlError::new(
                    1111,
                    "HY000",
                    "Invalid use of group function",
                ));
            }
            if func == AggFunc::GroupConcat {
                if args.is_empty() {
                    return Err(wrong_args(&name));
                }
                let win_was = std::mem::replace(&mut self.allow_win, false);
                self.allow_agg = false;
                let r = self.group_concat(&args, clauses);
                self.allow_agg = true;
                self.allow_win = win_was;
                let (arg, spec) = r?;
                self.aggs.push(AggCall {
                    func,
                    arg: Some(arg),
                    distinct,
                    concat: Some(Box::new(spec)),
                });
                return Ok(Expr::Agg(self.aggs.len() - 1));
            }
            if distinct && matches!(func, AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg) {
                return Err(SqlError::syntax(format!(
                    "You have an error in your SQL syntax near '{f}': DISTINCT is not allowed here"
                )));
            }
            let arg = match (func, args.as_slice()) {
                (AggFunc::CountStar, []) => None,
                (AggFunc::JsonObjectAgg, [k, v]) => {
                    let win_was = std::mem::replace(&mut self.allow_win, false);
                    self.allow_agg = false;
                    let r = self.compile(k).and_then(|k| Ok((k, self.compile(v)?)));
                    self.allow_agg = true;
                    self.allow_win = win_was;
                    let (k, v) = r?;
                    // The key is its text (as JSON_OBJECT's keys are).
                    let k = Expr::Cast(Box::new(k), CastTo::Char);
                    Some(Expr::Func(
                        Func::Json(crate::json::JsonFn::Array),
                        vec![k, v],
                    ))
                }
                (AggFunc::JsonObjectAgg, _) => return Err(wrong_args(&name)),
                (_, [a]) => {
                    // An aggregate's argument cannot itself aggregate.
                    let win_was = std::mem::replace(&mut self.allow_win, false);
                    self.allow_agg = false;
                    let r = self.compile(a);
                    self.allow_agg = true;
                    self.allow_win = win_was;
                    let r = r?;
                    // Over enclosing queries' columns only, MySQL
                    // aggregates it in the outer query.
                    if reads_outer_only(&r) {
                        return Err(SqlError::unsupported(
                            "an aggregate of an enclosing query's columns in a subquery",
                        ));
                    }
                    Some(r)
                }
                _ => return Err(wrong_args(&name)),
            };
            self.aggs.push(AggCall {
                func,
                arg,
                distinct,
                concat: None,
            });
            return Ok(Expr::Agg(self.aggs.len() - 1));
        }
        if name == "mod" {
            // MOD(a, b) is a % b.
            let [a, b] = args.as_slice() else {
                return Err(wrong_args(&name));
            };
            let (a, b) = (self.compile(a)?, self.compile(b)?);
            return Ok(Expr::Binary(BinOp::Mod, Box::new(a), Box::new(b)));
        }
        if let Some(e) = self.date_function(&name, &args)? {
            return Ok(e);
        }
        let func = match name.as_str() {
            "concat" => Func::Concat,
            "length" | "octet_length" => Func::Length,
            "char_length" | "character_length" => Func::CharLength,
            "upper" | "ucase" => Func::Upper,
            "lower" | "lcase" => Func::Lower,
            "substring" | "substr" | "mid" => Func::Substring,
            "ifnull" => Func::IfNull,
            "coalesce" => Func::Coalesce,
            "if" => Func::If,
            "nullif" => Func::NullIf,
            "abs" => Func::Abs,
            "round" => Func::Round,
            "floor" => Func::Floor,
            "ceil" | "ceiling" => Func::Ceil,
            "database" | "schema" => Func::Database,
            "version" => Func::Version,
            "connection_id" => Func::ConnectionId,
            "last_insert_id" => Func::LastInsertId,
            "user" | "session_user" | "system_user" => Func::User,
            "current_user" => Func::CurrentUser,
            "now" | "current_timestamp" | "sysdate" | "localtimestamp" | "localtime" => Func::Now,
            "curdate" | "current_date" => Func::CurDate,
            "unix_timestamp" => Func::UnixTimestamp,
            "greatest" => Func::Greatest,
            "least" => Func::Least,
            "trim" => Func::Trim,
            "found_rows" => Func::FoundRows,
            "row_count" => Func::RowCount,
            "replace" => Func::Replace,
            "locate" => Func::Locate,
            "instr" => Func::Instr,
            "lpad" => Func::Lpad,
            "rpad" => Func::Rpad,
            "left" => Func::Left,
            "right" => Func::Right,
            "repeat" => Func::Repeat,
            "space" => Func::Space,
            "reverse" => Func::Reverse,
            "concat_ws" => Func::ConcatWs,
            "substring_index" => Func::SubstringIndex,
            "hex" => Func::Hex,
            "unhex" => Func::Unhex,
            "field" => Func::Field,
            "find_in_set" => Func::FindInSet,
            "elt" => Func::Elt,
            "ascii" => Func::Ascii,
            "ord" => Func::Ord,
            "ltrim" => Func::Ltrim,
            "rtrim" => Func::Rtrim,
            "strcmp" => Func::Strcmp,
            "insert" => Func::Insert,
            "md5" => Func::Md5,
            "sha1" | "sha" => Func::Sha1,
            "sha2" => Func::Sha2,
            "crc32" => Func::Crc32,
            "char" => Func::Char,
            "format" => Func::Format,
            "quote" => Func::Quote,
            "regexp_like" => Func::RegexpLike,
            "regexp_replace" => Func::RegexpReplace,
            "regexp_substr" => Func::RegexpSubstr,
            "regexp_instr" => Func::RegexpInstr,
            _ if crate::datefuncs::by_name(&name).is_some() => {
                Func::Dt(crate::datefuncs::by_name(&name).ok_or_else(|| wrong_args(&name))?)
            }
            _ if crate::mathfuncs::by_name(&name).is_some() => {
                Func::Math(crate::mathfuncs::by_name(&name).ok_or_else(|| wrong_args(&name))?)
            }
            _ if crate::json::by_name(&name).is_some() => {
                Func::Json(crate::json::by_name(&name).ok_or_else(|| wrong_args(&name))?)
            }
            _ if NOT_SUPPORTED.contains(&name.as_str()) => {
                return Err(SqlError::unsupported(format!(
                    "function {}",
                    name.to_uppercase()
                )))
            }
            _ => {
                return Err(SqlError::new(
                    1305,
                    "42000",
                    format!("FUNCTION {name} does not exist"),
                ))
            }
        };
        let args = args
            .into_iter()
            .enumerate()
            .map(|(i, a)| match (func, a) {
                // TRUE and FALSE given to a JSON function are JSON
                // booleans, as in MySQL (elsewhere they are 1 and 0).
                (Func::Json(_), ast::Expr::Value(v))
                    if matches!(v.value, ast::Value::Boolean(_)) =>
                {
                    Ok(Expr::Const(crate::json::boolean(matches!(
                        v.value,
                        ast::Value::Boolean(true)
                    ))))
                }
                // So is a comparison's truth value.
                (Func::Json(f), a) if crate::json::is_value_arg(f, i) => {
                    let x = self.compile(a)?;
                    Ok(if is_truth_valued(&x) {
                        Expr::Func(Func::Json(crate::json::JsonFn::Bool), vec![x])
                    } else {
                        x
                    })
                }
                _ => self.compile(a),
            })
            .collect::<SqlResult<Vec<_>>>()?;
        let arity_ok = match func {
            Func::Concat | Func::Coalesce | Func::Greatest | Func::Least => !args.is_empty(),
            Func::Length
            | Func::CharLength
            | Func::Upper
            | Func::Lower
            | Func::Abs
            | Func::Floor
            | Func::Ceil
            | Func::Trim
            | Func::Space
            | Func::Reverse
            | Func::Hex
            | Func::Unhex
            | Func::Ascii
            | Func::Ord
            | Func::Ltrim
            | Func::Rtrim
            | Func::Md5
            | Func::Sha1
            | Func::Crc32
            | Func::Quote => args.len() == 1,
            Func::Sha2 => args.len() == 2,
            Func::Format => (2..=3).contains(&args.len()),
            Func::Char => !args.is_empty(),
            Func::RegexpLike => (2..=3).contains(&args.len()),
            Func::RegexpReplace => (3..=6).contains(&args.len()),
            Func::RegexpSubstr => (2..=5).contains(&args.len()),
            Func::RegexpInstr => (2..=6).contains(&args.len()),
            Func::Locate => (2..=3).contains(&args.len()),
            Func::Instr
            | Func::Left
            | Func::Right
            | Func::Repeat
            | Func::FindInSet
            | Func::Strcmp
            | Func::TrimLeading
            | Func::TrimTrailing
            | Func::TrimBoth => args.len() == 2,
            Func::Replace | Func::Lpad | Func::Rpad | Func::SubstringIndex => args.len() == 3,
            Func::Insert => args.len() == 4,
            Func::ConcatWs | Func::Field | Func::Elt => args.len() >= 2,
            Func::Substring => (2..=3).contains(&args.len()),
            Func::IfNull | Func::NullIf => args.len() == 2,
            Func::If => args.len() == 3,
            Func::Round => (1..=2).contains(&args.len()),
            Func::LastInsertId => args.len() <= 1,
            Func::Now | Func::UnixTimestamp => args.len() <= 1,
            Func::Dt(d) => crate::datefuncs::arity_ok(d, args.len()),
            Func::Math(m) => crate::mathfuncs::arity_ok(m, args.len()),
            Func::Json(j) => crate::json::arity_ok(j, args.len()),
            _ => args.is_empty(),
        };
        if !arity_ok {
            return Err(wrong_args(&name));
        }
        let mut args = args;
        if matches!(
            func,
            Func::RegexpLike | Func::RegexpReplace | Func::RegexpSubstr | Func::RegexpInstr
        ) {
            let flags = self.regexp_flags(&args[0], &args[1]);
            args.push(flags);
        }
        Ok(Expr::Func(func, args))
    }
}

/// MySQL functions that need what CairnDB does not have (time zones,
/// periods): refused with 1235 rather than reported unknown.
const NOT_SUPPORTED: &[&str] = &[
    "convert_tz",
    "period_add",
    "period_diff",
    "get_format",
    "to_seconds",
];

impl Compiler<'_> {
    /// GROUP_CONCAT's value (the CONCAT of its arguments, NULL when one
    /// is) and its ORDER BY and SEPARATOR.
    fn group_concat(
        &mut self,
        args: &[&ast::Expr],
        clauses: &[ast::FunctionArgumentClause],
    ) -> SqlResult<(Expr, ConcatSpec)> {
        let mut parts = args
            .iter()
            .map(|a| self.compile(a))
            .collect::<SqlResult<Vec<_>>>()?;
        let arg = if parts.len() == 1 {
            parts.pop().unwrap_or(Expr::Const(Value::Null))
        } else {
            Expr::Func(Func::Concat, parts)
        };
        let mut spec = ConcatSpec {
            order: Vec::new(),
            sep: b",".to_vec(),
        };
        for c in clauses {
            match c {
                ast::FunctionArgumentClause::OrderBy(items) => {
                    for o in items {
                        if o.with_fill.is_some() || o.options.nulls_first.is_some() {
                            return Err(SqlError::unsupported(o));
                        }
                        // `ORDER BY 2`: a position among the arguments.
                        let key = match &o.expr {
                            ast::Expr::Value(v) => match &v.value {
                                ast::Value::Number(n, _) => {
                                    let k: usize = n.parse().unwrap_or(0);
                                    match args.get(k.wrapping_sub(1)) {
                                        Some(a) => self.compile(a)?,
                                        None => {
                                            return Err(SqlError::unknown_column(n, "order clause"))
                                        }
                                    }
                                }
                                _ => self.compile(&o.expr)?,
                            },
                            e => self.compile(e)?,
                        };
                        spec.order.push((key, o.options.asc == Some(false)));
                    }
                }
                ast::FunctionArgumentClause::Separator(v) => {
                    spec.sep = match v {
                        ast::Value::SingleQuotedString(t) | ast::Value::DoubleQuotedString(t) => {
                            t.clone().into_bytes()
                        }
                        other => return Err(SqlError::syntax(format!("SEPARATOR {other}"))),
                    }
                }
                other => return Err(SqlError::unsupported(other)),
            }
        }
        Ok((arg, spec))
    }

    /// The default match type of a regular expression over `x` and
    /// pattern `p`: case-sensitive ("c") when either is a column with a
    /// binary or `utf8mb4_bin` collation, else case-insensitive ("i").
    fn regexp_flags(&self, x: &Expr, p: &Expr) -> Expr {
        let sensitive = [x, p].iter().any(|e| match e {
            Expr::Column(i) => self.scope.cols.get(*i).is_some_and(|c| {
                c.ty.as_ref().is_some_and(|t| {
                    matches!(t, ColumnType::Str { .. })
                        && t.collation() != Collation::Utf8mb4GeneralCi
                })
            }),
            _ => false,
        });
        Expr::Const(Value::Str(if sensitive {
            b"c".to_vec()
        } else {
            b"i".to_vec()
        }))
    }

    /// The date functions whose arguments are not all expressions: an
    /// interval (DATE_ADD, DATE_SUB, ADDDATE, SUBDATE) or a unit
    /// (TIMESTAMPDIFF, TIMESTAMPADD). None for any other function.
    fn date_function(&mut self, name: &str, args: &[&ast::Expr]) -> SqlResult<Option<Expr>> {
        use crate::datefuncs::{DtFn, Unit};
        Ok(Some(match name {
            "date_add" | "date_sub" | "adddate" | "subdate" => {
                let [x, n] = args else {
                    return Err(wrong_args(name));
                };
                let neg = name == "date_sub" || name == "subdate";
                let (unit, n) = match n {
                    ast::Expr::Interval(iv) => (interval_unit(iv)?, &*iv.value),
                    // ADDDATE(x, n): n days.
                    _ if name == "adddate" || name == "subdate" => (Unit::Day, *n),
                    _ => return Err(SqlError::syntax(format!("{name} needs an INTERVAL"))),
                };
                Expr::Func(
                    Func::Dt(DtFn::AddInterval(unit, neg)),
                    vec![self.compile(x)?, self.compile(n)?],
                )
            }
            "timestampadd" | "timestampdiff" => {
                let [u, a, b] = args else {
                    return Err(wrong_args(name));
                };
                let unit = match u {
                    ast::Expr::Identifier(id) => Unit::parse(&id.value),
                    _ => None,
                }
                .filter(|u| u.is_simple())
                .ok_or_else(|| SqlError::syntax(format!("bad unit in {name}: {u}")))?;
                let (a, b) = (self.compile(a)?, self.compile(b)?);
                if name == "timestampadd" {
                    Expr::Func(Func::Dt(DtFn::AddInterval(unit, false)), vec![b, a])
                } else {
                    Expr::Func(Func::Dt(DtFn::TimestampDiff(unit)), vec![a, b])
                }
            }
            // A seeded RAND continues its sequence from row to row in
            // MySQL; expressions here keep no state between rows.
            "rand" if args.len() == 1 => return Err(SqlError::unsupported("RAND(seed)")),
            _ => return Ok(None),
        }))
    }
}

/// The unit of `INTERVAL n unit`.
pub(crate) fn interval_unit(iv: &ast::Interval) -> SqlResult<crate::datefuncs::Unit> {
    if iv.last_field.is_some() {
        return Err(SqlError::syntax(format!("unexpected INTERVAL {iv}")));
    }
    match &iv.leading_field {
        Some(f) => field_unit(f),
        None => Err(SqlError::syntax("INTERVAL without a unit")),
    }
}

/// A parser date-time field as a MySQL unit.
fn field_unit(f: &ast::DateTimeField) -> SqlResult<crate::datefuncs::Unit> {
    use ast::DateTimeField as F;
    let name = match f {
        F::Custom(id) => id.value.clone(),
        F::Week(None) => "WEEK".into(),
        other => other.to_string(),
    };
    crate::datefuncs::Unit::parse(&name)
        .ok_or_else(|| SqlError::syntax(format!("unknown interval unit {name}")))
}

/// `parts` joined by the associative `op` into a tree of logarithmic
/// depth, in their order (None of `parts` is dropped; an empty list is
/// NULL).
pub(crate) fn balanced(op: BinOp, mut parts: Vec<Expr>) -> Expr {
    match parts.len() {
        0 => Expr::Const(Value::Null),
        1 => parts.pop().unwrap_or(Expr::Const(Value::Null)),
        n => {
            let right = parts.split_off(n / 2);
            Expr::Binary(
                op,
                Box::new(balanced(op, parts)),
                Box::new(balanced(op, right)),
            )
        }
    }
}

/// MySQL's 1241: a row where a value (or a row of another width) was
/// expected.
fn operand_columns(n: usize) -> SqlError {
    SqlError::new(
        1241,
        "21000",
        format!("Operand should contain {n} column(s)"),
    )
}

/// `e` without the parentheses around it.
fn unnest(mut e: &ast::Expr) -> &ast::Expr {
    while let ast::Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

/// The items of a row constructor: `(a, b)` or `ROW(a, b)` (possibly in
/// parentheses); None for anything else.
fn row_items(e: &ast::Expr) -> Option<Vec<&ast::Expr>> {
    match e {
        ast::Expr::Nested(inner) => row_items(inner),
        ast::Expr::Tuple(items) => Some(items.iter().collect()),
        ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("row") => match &f.args {
            ast::FunctionArguments::List(l) => l
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Some(x),
                    _ => None,
                })
                .collect(),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `e` gives a SQL truth value (a comparison, a logical
/// operator, IS NULL, IN, BETWEEN, LIKE, EXISTS): MySQL's JSON functions
/// take those as JSON booleans.
fn is_truth_valued(e: &Expr) -> bool {
    match e {
        Expr::Binary(op, ..) => {
            op.is_comparison() || matches!(op, BinOp::And | BinOp::Or | BinOp::Xor)
        }
        Expr::Not(_)
        | Expr::IsNull(..)
        | Expr::InList(..)
        | Expr::Between(..)
        | Expr::Like(..)
        | Expr::InSet(..)
        | Expr::InRows(..) => true,
        Expr::Subquery(_, sq) => sq.test != SubTest::Scalar,
        _ => false,
    }
}

pub(crate) fn wrong_args(name: &str) -> SqlError {
    SqlError::new(
        1582,
        "42000",
        format!("Incorrect parameter count in the call to native function '{name}'"),
    )
}

fn cast_target(dt: &ast::DataType) -> SqlResult<CastTo> {
    use ast::DataType as D;
    Ok(match dt {
        D::Signed | D::SignedInteger | D::Int(_) | D::Integer(_) | D::BigInt(_) => CastTo::Signed,
        D::Unsigned | D::UnsignedInteger => CastTo::Unsigned,
        D::Char(_) | D::Binary(_) | D::Varchar(_) | D::Text | D::String(_) => CastTo::Char,
        D::Decimal(info) | D::Numeric(info) => CastTo::Decimal(match info {
            ast::ExactNumberInfo::PrecisionAndScale(_, s) => (*s).clamp(0, 30) as u8,
            _ => 0,
        }),
        D::Double(_) | D::Float(_) | D::Real | D::DoublePrecision => CastTo::Double,
        D::Time(fsp, ast::TimezoneInfo::None) => CastTo::Time(fsp.unwrap_or(0).min(6) as u8),
        D::JSON => CastTo::Json,
        D::Date => CastTo::Date,
        D::Datetime(fsp) => CastTo::DateTime(fsp.unwrap_or(0).min(6) as u8),
        other => return Err(SqlError::unsupported(format!("CAST AS {other}"))),
    })
}

/// Parses a numeric literal: integers as Int (UInt above i64::MAX),
/// numbers with a point as Decimal, with an exponent as Double.
pub fn parse_number(n: &str) -> SqlResult<Value> {
    if n.contains(['e', 'E']) {
        return n
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| SqlError::syntax(format!("bad number {n}")));
    }
    if let Some((int, frac)) = n.split_once('.') {
        let scale = frac.len();
        if scale > 30 {
            return n
                .parse::<f64>()
                .map(Value::Double)
                .map_err(|_| SqlError::syntax(format!("bad number {n}")));
        }
        let digits: String = format!("{int}{frac}");
        return match digits.parse::<i128>() {
            Ok(d) => Ok(Value::Decimal(d, scale as u8)),
            Err(_) => n
                .parse::<f64>()
                .map(Value::Double)
                .map_err(|_| SqlError::syntax(format!("bad number {n}"))),
        };
    }
    if let Ok(i) = n.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(u) = n.parse::<u64>() {
        return Ok(Value::UInt(u));
    }
    match n.parse::<i128>() {
        Ok(d) => Ok(Value::Decimal(d, 0)),
        Err(_) => n
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| SqlError::syntax(format!("bad number {n}"))),
    }
}

fn parse_hex(h: &str) -> SqlResult<Vec<u8>> {
    let h = if h.len() % 2 == 1 {
        format!("0{h}")
    } else {
        h.to_string()
    };
    (0..h.len())
        .step_by(2)
        .map(|i| {
            h.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
                .ok_or_else(|| SqlError::syntax(format!("bad hex literal {h}")))
        })
        .collect()
}

// ------------------------------------------------------------ evaluation

/// A numeric view of a value for arithmetic and comparison.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    UInt(u64),
    Dec(i128, u8),
    Dbl(f64),
}

/// The leading number of a string, as MySQL converts strings in numeric
/// context ("12abc" is 12, "abc" is 0).
pub fn str_to_f64(s: &[u8]) -> f64 {
    let s = String::from_utf8_lossy(s);
    let t = s.trim_start();
    let mut end = 0;
    let b = t.as_bytes();
    let mut seen_digit = false;
    let mut seen_dot = false;
    let mut seen_e = false;
    while end < b.len() {
        let c = b.get(end).copied().unwrap_or(0);
        let ok = match c {
            b'0'..=b'9' => {
                seen_digit = true;
                true
            }
            b'+' | b'-' => end == 0 || matches!(b.get(end - 1), Some(b'e' | b'E')),
            b'.' if !seen_dot && !seen_e => {
                seen_dot = true;
                true
            }
            b'e' | b'E' if seen_digit && !seen_e => {
                seen_e = true;
                true
            }
            _ => false,
        };
        if !ok {
            break;
        }
        end += 1;
    }
    let mut cand = t.get(..end).unwrap_or("");
    while !cand.is_empty() {
        if let Ok(v) = cand.parse::<f64>() {
            return v;
        }
        cand = cand.get(..cand.len() - 1).unwrap_or("");
    }
    0.0
}

fn num(v: &Value) -> Option<Num> {
    Some(match v {
        Value::Null => return None,
        Value::Int(i) => Num::Int(*i),
        Value::UInt(u) => Num::UInt(*u),
        Value::Decimal(d, s) => Num::Dec(*d, *s),
        Value::Double(f) => Num::Dbl(*f),
        Value::Str(s) => {
            let t = String::from_utf8_lossy(s);
            let t = t.trim();
            match t.parse::<i64>() {
                Ok(i) => Num::Int(i),
                Err(_) => Num::Dbl(str_to_f64(s)),
            }
        }
        Value::Date(d) => {
            let (y, m, dd) = crate::types::unpack_date(*d);
            Num::Int(i64::from(y) * 10_000 + i64::from(m) * 100 + i64::from(dd))
        }
        Value::DateTime(t) => {
            let (d, h, mi, s, _) = crate::types::unpack_datetime(*t);
            let (y, m, dd) = crate::types::unpack_date(d);
            Num::Int(
                ((i64::from(y) * 100 + i64::from(m)) * 100 + i64::from(dd)) * 1_000_000
                    + i64::from(h) * 10_000
                    + i64::from(mi) * 100
                    + i64::from(s),
            )
        }
        // A TIME in numeric context is [-]HHMMSS[.ffffff].
        Value::Time(us) => {
            let a = us.unsigned_abs();
            let secs = (a / 1_000_000) as i64;
            let hms = (secs / 3600) * 10_000 + ((secs / 60) % 60) * 100 + secs % 60;
            let sign = if *us < 0 { -1 } else { 1 };
            let frac = (a % 1_000_000) as i128;
            if frac == 0 {
                Num::Int(sign * hms)
            } else {
                Num::Dec(i128::from(sign) * (i128::from(hms) * 1_000_000 + frac), 6)
            }
        }
        // An ENUM or SET in numeric context is its index or bitmask.
        Value::Member(n, _) => Num::UInt(*n),
        Value::Json(b) => return num(&crate::json::to_number(b)),
    })
}

fn to_f64(n: Num) -> f64 {
    match n {
        Num::Int(i) => i as f64,
        Num::UInt(u) => u as f64,
        Num::Dec(d, s) => d as f64 / 10f64.powi(i32::from(s)),
        Num::Dbl(f) => f,
    }
}

fn to_dec(n: Num, scale: u8) -> Option<i128> {
    let p = 10i128.checked_pow(u32::from(scale))?;
    match n {
        Num::Int(i) => i128::from(i).checked_mul(p),
        Num::UInt(u) => i128::from(u).checked_mul(p),
        Num::Dec(d, s) if s <= scale => d.checked_mul(10i128.checked_pow(u32::from(scale - s))?),
        Num::Dec(d, s) => Some(d / 10i128.checked_pow(u32::from(s - scale))?),
        Num::Dbl(f) => Some((f * p as f64).round() as i128),
    }
}

/// The value as a signed integer (MySQL rounding for decimals and
/// doubles); None for NULL.
/// `v` as a double, if it is a number (or a string that reads as one).
pub(crate) fn num_f64(v: &Value) -> Option<f64> {
    num(v).map(to_f64)
}

/// `v` as a signed integer, if it is a number (or a string that reads as one).
pub fn to_i64(v: &Value) -> Option<i64> {
    Some(match num(v)? {
        Num::Int(i) => i,
        Num::UInt(u) => u as i64,
        Num::Dec(d, s) => {
            let p = 10i128.pow(u32::from(s));
            let q = d / p;
            let r = d % p;
            let q = if r.abs() * 2 >= p { q + d.signum() } else { q };
            q.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
        }
        Num::Dbl(f) => f.round().clamp(i64::MIN as f64, i64::MAX as f64) as i64,
    })
}

/// Truthiness: NULL is unknown (None); numbers are true when non-zero;
/// strings by their leading number.
pub fn truth(v: &Value) -> Option<bool> {
    Some(match num(v)? {
        Num::Int(i) => i != 0,
        Num::UInt(u) => u != 0,
        Num::Dec(d, _) => d != 0,
        Num::Dbl(f) => f != 0.0,
    })
}

fn overflow(what: &str) -> SqlError {
    SqlError::new(
        1690,
        "22003",
        format!("BIGINT value is out of range in '{what}'"),
    )
}

fn arith(op: BinOp, a: &Value, b: &Value) -> SqlResult<Value> {
    let (Some(x), Some(y)) = (num(a), num(b)) else {
        return Ok(Value::Null);
    };
    let any_dbl = matches!(x, Num::Dbl(_)) || matches!(y, Num::Dbl(_));
    let any_dec = matches!(x, Num::Dec(..)) || matches!(y, Num::Dec(..));
    if op == BinOp::Div {
        let d = to_f64(y);
        if d == 0.0 {
            return Ok(Value::Null);
        }
        if any_dbl {
            return Ok(Value::Double(to_f64(x) / d));
        }
        // Decimal division: the dividend's scale plus 4.
        let sx = match x {
            Num::Dec(_, s) => s,
            _ => 0,
        };
        let scale = (sx + 4).min(30);
        let sy = match y {
            Num::Dec(_, s) => s,
            _ => 0,
        };
        let (Some(nx), Some(ny)) = (to_dec(x, scale + sy), to_dec(y, sy)) else {
            return Ok(Value::Double(to_f64(x) / d));
        };
        if ny == 0 {
            return Ok(Value::Null);
        }
        // Round half away from zero.
        let q = nx / ny;
        let r = nx % ny;
        let q = if r.abs() * 2 >= ny.abs() {
            q + nx.signum() * ny.signum()
        } else {
            q
        };
        return Ok(Value::Decimal(q, scale));
    }
    if op == BinOp::IntDiv {
        return int_div(x, y);
    }
    if any_dbl {
        let (p, q) = (to_f64(x), to_f64(y));
        return Ok(match op {
            BinOp::Add => Value::Double(p + q),
            BinOp::Sub => Value::Double(p - q),
            BinOp::Mul => Value::Double(p * q),
            BinOp::Mod if q == 0.0 => Value::Null,
            BinOp::Mod => Value::Double(p % q),
            _ => Value::Null,
        });
    }
    if any_dec {
        let sx = match x {
            Num::Dec(_, s) => s,
            _ => 0,
        };
        let sy = match y {
            Num::Dec(_, s) => s,
            _ => 0,
        };
        let ovf = || overflow("decimal arithmetic");
        return Ok(match op {
            BinOp::Add | BinOp::Sub | BinOp::Mod => {
                let s = sx.max(sy);
                let (p, q) = (to_dec(x, s).ok_or_else(ovf)?, to_dec(y, s).ok_or_else(ovf)?);
                match op {
                    BinOp::Add => Value::Decimal(p.checked_add(q).ok_or_else(ovf)?, s),
                    BinOp::Sub => Value::Decimal(p.checked_sub(q).ok_or_else(ovf)?, s),
                    _ if q == 0 => Value::Null,
                    _ => Value::Decimal(p % q, s),
                }
            }
            BinOp::Mul => {
                let s = (sx + sy).min(30);
                let p = to_dec(x, sx).ok_or_else(ovf)?;
                let q = to_dec(y, sy).ok_or_else(ovf)?;
                Value::Decimal(p.checked_mul(q).ok_or_else(ovf)?, s)
            }
            _ => Value::Null,
        });
    }
    // Integers: signed unless an unsigned operand forces unsigned.
    let unsigned = matches!(x, Num::UInt(_)) || matches!(y, Num::UInt(_));
    let xi = match x {
        Num::Int(i) => i128::from(i),
        Num::UInt(u) => i128::from(u),
        _ => 0,
    };
    let yi = match y {
        Num::Int(i) => i128::from(i),
        Num::UInt(u) => i128::from(u),
        _ => 0,
    };
    let r = match op {
        BinOp::Add => xi + yi,
        BinOp::Sub => xi - yi,
        BinOp::Mul => xi
            .checked_mul(yi)
            .ok_or_else(|| overflow("multiplication"))?,
        BinOp::Mod if yi == 0 => return Ok(Value::Null),
        BinOp::Mod => xi % yi,
        _ => return Ok(Value::Null),
    };
    if unsigned {
        if (0..=i128::from(u64::MAX)).contains(&r) {
            return Ok(if r <= i128::from(i64::MAX) {
                Value::Int(r as i64)
            } else {
                Value::UInt(r as u64)
            });
        }
        return Err(overflow("unsigned arithmetic"));
    }
    i64::try_from(r)
        .map(Value::Int)
        .map_err(|_| overflow("integer arithmetic"))
}

/// `x DIV y`: the quotient truncated toward zero, computed exactly for
/// integers and decimals (in doubles only when an operand is one); NULL
/// for a zero divisor; a quotient outside BIGINT (BIGINT UNSIGNED when an
/// operand is unsigned) is error 1690.
fn int_div(x: Num, y: Num) -> SqlResult<Value> {
    let scale_of = |n: Num| match n {
        Num::Dec(_, s) => s,
        _ => 0,
    };
    let q: i128 = match (x, y) {
        (Num::Dbl(_), _) | (_, Num::Dbl(_)) => {
            let d = to_f64(y);
            if d == 0.0 {
                return Ok(Value::Null);
            }
            let q = (to_f64(x) / d).trunc();
            if !(-1.9e19..1.9e19).contains(&q) {
                return Err(overflow("DIV"));
            }
            q as i128
        }
        _ => {
            let s = scale_of(x).max(scale_of(y));
            let (Some(a), Some(b)) = (to_dec(x, s), to_dec(y, s)) else {
                return Err(overflow("DIV"));
            };
            if b == 0 {
                return Ok(Value::Null);
            }
            a.checked_div(b).ok_or_else(|| overflow("DIV"))?
        }
    };
    let unsigned = matches!(x, Num::UInt(_)) || matches!(y, Num::UInt(_));
    if let Ok(i) = i64::try_from(q) {
        if !(unsigned && i < 0) {
            return Ok(Value::Int(i));
        }
    } else if unsigned {
        if let Ok(u) = u64::try_from(q) {
            return Ok(Value::UInt(u));
        }
    }
    Err(overflow("DIV"))
}

/// Compares two non-NULL values the way MySQL does: numbers numerically,
/// strings under `coll`, a number and a string as doubles, dates by their
/// packed value.
pub fn compare(a: &Value, b: &Value, coll: Collation) -> Option<Ordering> {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Str(x), Value::Str(y)) => Some(coll.cmp(x, y)),
        // With JSON on either side, the other side is read as a JSON
        // scalar (a string as a JSON string) and MySQL's JSON order holds.
        (Value::Json(_), _) | (_, Value::Json(_)) => crate::json::compare_values(a, b),
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::UInt(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::UInt(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Date(x) | Value::DateTime(x), Value::Date(y) | Value::DateTime(y))
            if std::mem::discriminant(a) == std::mem::discriminant(b) =>
        {
            Some(x.cmp(y))
        }
        (Value::Date(_) | Value::DateTime(_), Value::Str(s)) => {
            let parsed = crate::convert::parse_datetime_str(s)?;
            let lhs = match a {
                Value::Date(d) => crate::types::pack_datetime(*d, 0, 0, 0, 0),
                Value::DateTime(t) => *t,
                _ => return None,
            };
            Some(lhs.cmp(&parsed))
        }
        (Value::Str(_), Value::Date(_) | Value::DateTime(_)) => {
            compare(b, a, coll).map(Ordering::reverse)
        }
        (Value::Date(d), Value::DateTime(t)) => {
            Some(crate::types::pack_datetime(*d, 0, 0, 0, 0).cmp(t))
        }
        (Value::DateTime(t), Value::Date(d)) => {
            Some(t.cmp(&crate::types::pack_datetime(*d, 0, 0, 0, 0)))
        }
        (Value::Time(x), Value::Time(y)) => Some(x.cmp(y)),
        (Value::Time(x), Value::Str(s)) => Some(x.cmp(&crate::convert::parse_time_str(s)?)),
        (Value::Str(_), Value::Time(_)) => compare(b, a, coll).map(Ordering::reverse),
        // ENUM and SET values sort by index / bitmask, and compare with a
        // string as strings.
        (Value::Member(x, _), Value::Member(y, _)) => Some(x.cmp(y)),
        (Value::Member(_, x), Value::Str(y)) | (Value::Str(x), Value::Member(_, y)) => {
            Some(coll.cmp(x, y))
        }
        _ => {
            let (x, y) = (num(a)?, num(b)?);
            match (x, y) {
                (
                    Num::Dec(..) | Num::Int(_) | Num::UInt(_),
                    Num::Dec(..) | Num::Int(_) | Num::UInt(_),
                ) => {
                    let s = match (x, y) {
                        (Num::Dec(_, s1), Num::Dec(_, s2)) => s1.max(s2),
                        (Num::Dec(_, s), _) | (_, Num::Dec(_, s)) => s,
                        _ => 0,
                    };
                    match (to_dec(x, s), to_dec(y, s)) {
                        (Some(p), Some(q)) => Some(p.cmp(&q)),
                        _ => to_f64(x).partial_cmp(&to_f64(y)),
                    }
                }
                _ => to_f64(x).partial_cmp(&to_f64(y)),
            }
        }
    }
}

/// The collation an expression's strings compare under: a column's own,
/// else `utf8mb4_general_ci`.
pub fn collation_of(e: &Expr, scope_types: &[Option<ColumnType>]) -> Collation {
    use crate::json::JsonFn;
    match e {
        // JSON's text functions give utf8mb4_bin strings, as MySQL's.
        Expr::Func(
            Func::Json(JsonFn::Unquote | JsonFn::Quote | JsonFn::Type | JsonFn::Pretty),
            _,
        ) => Collation::Utf8mb4Bin,
        Expr::Column(i) => {
            scope_types
                .get(*i)
                .and_then(|t| t.as_ref())
                .map_or(Collation::Utf8mb4GeneralCi, |t| {
                    if matches!(
                        t,
                        ColumnType::Str { .. } | ColumnType::Enum { .. } | ColumnType::Set { .. }
                    ) {
                        t.collation()
                    } else {
                        Collation::Utf8mb4GeneralCi
                    }
                })
        }
        _ => Collation::Utf8mb4GeneralCi,
    }
}

/// The character of `LIKE .. ESCAPE 'c'`: a backslash without the
/// clause, None after `ESCAPE ''`; more than one character is MySQL's
/// error 1210.
fn like_escape_char(v: Option<&ast::Value>) -> SqlResult<Option<char>> {
    let bad = || SqlError::new(1210, "HY000", "Incorrect arguments to ESCAPE");
    match v {
        None => Ok(Some('\\')),
        Some(ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s)) => {
            let mut it = s.chars();
            match (it.next(), it.next()) {
                (None, _) => Ok(None),
                (Some(c), None) => Ok(Some(c)),
                _ => Err(bad()),
            }
        }
        Some(_) => Err(bad()),
    }
}

/// `s LIKE pattern` with `%`, `_` and `\` escapes, under `coll`.
pub fn like(s: &[u8], pat: &[u8], coll: Collation) -> bool {
    like_escape(s, pat, coll, Some('\\'))
}

/// `s LIKE pattern ESCAPE esc` under `coll` (`esc` None: no escape
/// character).
pub fn like_escape(s: &[u8], pat: &[u8], coll: Collation, esc: Option<char>) -> bool {
    let fold = |c: char| -> char {
        if coll == Collation::Utf8mb4GeneralCi {
            c.to_uppercase().next().unwrap_or(c)
        } else {
            c
        }
    };
    let s: Vec<char> = String::from_utf8_lossy(s).chars().map(fold).collect();
    let p: Vec<char> = String::from_utf8_lossy(pat).chars().collect();
    // Iterative matcher with backtracking to the last `%`.
    let (mut si, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        let pc = p.get(pi).copied();
        match pc {
            Some('%') => {
                star = Some((pi, si));
                pi += 1;
                continue;
            }
            Some('_') => {
                si += 1;
                pi += 1;
                continue;
            }
            Some(e)
                if Some(e) == esc
                    && p.get(pi + 1).is_some()
                    && p.get(pi + 1).map(|c| fold(*c)) == s.get(si).copied() =>
            {
                si += 1;
                pi += 2;
                continue;
            }
            Some(e) if Some(e) == esc && p.get(pi + 1).is_some() => {}
            Some(c) if Some(fold(c)) == s.get(si).copied() => {
                si += 1;
                pi += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((sp, ss)) => {
                pi = sp + 1;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    while p.get(pi) == Some(&'%') {
        pi += 1;
    }
    pi == p.len()
}

/// Evaluates `e` over `row`; `aggs` holds aggregate results in a grouped
/// query; `types` are the scope's column types (for collations).
pub fn eval(
    e: &Expr,
    row: &[Value],
    aggs: &[Value],
    types: &[Option<ColumnType>],
    env: &dyn Env,
) -> SqlResult<Value> {
    let ev = |x: &Expr| eval(x, row, aggs, types, env);
    Ok(match e {
        Expr::Const(v) => v.clone(),
        Expr::Column(i) => row.get(*i).cloned().unwrap_or(Value::Null),
        Expr::Outer(up, slot) => env.outer(*up, *slot)?,
        Expr::Param(i) => env.params().get(*i).cloned().ok_or_else(|| {
            SqlError::new(1210, "HY000", "Incorrect arguments to mysqld_stmt_execute")
        })?,
        Expr::SysVar(n) => env.sys_var(n)?,
        Expr::UserVar(n) => env.user_var(n),
        Expr::Agg(i) => aggs.get(*i).cloned().unwrap_or(Value::Null),
        Expr::Not(x) => match truth(&ev(x)?) {
            None => Value::Null,
            Some(b) => Value::Int(i64::from(!b)),
        },
        Expr::Neg(x) => match ev(x)? {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Int(i.checked_neg().ok_or_else(|| overflow("negation"))?),
            Value::UInt(u) if u <= 1 << 63 => Value::Int((u as i64).wrapping_neg()),
            Value::Decimal(d, s) => Value::Decimal(-d, s),
            v => Value::Double(-to_f64(num(&v).unwrap_or(Num::Int(0)))),
        },
        Expr::Binary(op, l, r) => match op {
            BinOp::And => {
                let a = truth(&ev(l)?);
                if a == Some(false) {
                    return Ok(Value::Int(0));
                }
                let b = truth(&ev(r)?);
                match (a, b) {
                    (_, Some(false)) => Value::Int(0),
                    (Some(true), Some(true)) => Value::Int(1),
                    _ => Value::Null,
                }
            }
            BinOp::Or => {
                let a = truth(&ev(l)?);
                if a == Some(true) {
                    return Ok(Value::Int(1));
                }
                let b = truth(&ev(r)?);
                match (a, b) {
                    (_, Some(true)) => Value::Int(1),
                    (Some(false), Some(false)) => Value::Int(0),
                    _ => Value::Null,
                }
            }
            BinOp::Xor => match (truth(&ev(l)?), truth(&ev(r)?)) {
                (Some(a), Some(b)) => Value::Int(i64::from(a ^ b)),
                _ => Value::Null,
            },
            BinOp::Eq
            | BinOp::Ne
            | BinOp::Lt
            | BinOp::Le
            | BinOp::Gt
            | BinOp::Ge
            | BinOp::NullSafeEq => {
                let (a, b) = (ev(l)?, ev(r)?);
                let coll = match collation_of(l, types) {
                    Collation::Utf8mb4GeneralCi => collation_of(r, types),
                    c => c,
                };
                if *op == BinOp::NullSafeEq {
                    return Ok(Value::Int(i64::from(match (&a, &b) {
                        (Value::Null, Value::Null) => true,
                        (Value::Null, _) | (_, Value::Null) => false,
                        _ => compare(&a, &b, coll) == Some(Ordering::Equal),
                    })));
                }
                match compare(&a, &b, coll) {
                    None => Value::Null,
                    Some(o) => Value::Int(i64::from(match op {
                        BinOp::Eq => o == Ordering::Equal,
                        BinOp::Ne => o != Ordering::Equal,
                        BinOp::Lt => o == Ordering::Less,
                        BinOp::Le => o != Ordering::Greater,
                        BinOp::Gt => o == Ordering::Greater,
                        _ => o != Ordering::Less,
                    })),
                }
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
                let (a, b) = (ev(l)?, ev(r)?);
                match (to_i64(&a), to_i64(&b)) {
                    (Some(x), Some(y)) => {
                        // BIGINT UNSIGNED operands; a shift by 64 or more
                        // (a negative count among them) gives 0.
                        let (x, y) = (x as u64, y as u64);
                        let v = match op {
                            BinOp::BitAnd => x & y,
                            BinOp::BitOr => x | y,
                            BinOp::Shl => u32::try_from(y)
                                .ok()
                                .and_then(|n| x.checked_shl(n))
                                .unwrap_or(0),
                            BinOp::Shr => u32::try_from(y)
                                .ok()
                                .and_then(|n| x.checked_shr(n))
                                .unwrap_or(0),
                            _ => x ^ y,
                        };
                        if v <= i64::MAX as u64 {
                            Value::Int(v as i64)
                        } else {
                            Value::UInt(v)
                        }
                    }
                    _ => Value::Null,
                }
            }
            _ => arith(*op, &ev(l)?, &ev(r)?)?,
        },
        Expr::IsNull(x, negated) => Value::Int(i64::from(ev(x)?.is_null() != *negated)),
        Expr::InList(x, list, negated) => {
            let v = ev(x)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            let coll = collation_of(x, types);
            let mut saw_null = false;
            for item in list {
                let w = ev(item)?;
                match compare(&v, &w, coll) {
                    Some(Ordering::Equal) => return Ok(Value::Int(i64::from(!*negated))),
                    None => saw_null = true,
                    _ => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Int(i64::from(*negated))
            }
        }
        Expr::Between(x, lo, hi, negated) => {
            let (v, a, b) = (ev(x)?, ev(lo)?, ev(hi)?);
            let coll = collation_of(x, types);
            match (compare(&v, &a, coll), compare(&v, &b, coll)) {
                (Some(p), Some(q)) => {
                    let inside = p != Ordering::Less && q != Ordering::Greater;
                    Value::Int(i64::from(inside != *negated))
                }
                _ => Value::Null,
            }
        }
        Expr::Like(x, p, negated, esc) => {
            let (v, pat) = (ev(x)?, ev(p)?);
            match (&v, &pat) {
                (Value::Null, _) | (_, Value::Null) => Value::Null,
                _ => {
                    let s = text_of(&v);
                    let ps = text_of(&pat);
                    let hit = like_escape(&s, &ps, collation_of(x, types), *esc);
                    Value::Int(i64::from(hit != *negated))
                }
            }
        }
        Expr::Case(operand, arms, els) => {
            let op = match operand {
                Some(o) => Some(ev(o)?),
                None => None,
            };
            for (w, t) in arms {
                let hit = match &op {
                    Some(o) => {
                        compare(o, &ev(w)?, Collation::Utf8mb4GeneralCi) == Some(Ordering::Equal)
                    }
                    None => truth(&ev(w)?) == Some(true),
                };
                if hit {
                    return ev(t);
                }
            }
            match els {
                Some(x) => ev(x)?,
                None => Value::Null,
            }
        }
        Expr::Cast(x, to) => cast(&ev(x)?, *to, env)?,
        Expr::Func(f, args) => crate::funcs::call(*f, args, &ev, env)?,
        Expr::Subquery(Some(x), sq) if matches!(**x, Expr::Row(_)) => {
            let Expr::Row(items) = &**x else {
                return Err(SqlError::internal("row subquery"));
            };
            let l = items
                .iter()
                .map(|i| Ok((ev(i)?, collation_of(i, types))))
                .collect::<SqlResult<Vec<_>>>()?;
            env.row_subquery(sq, &l, row)?
        }
        Expr::Subquery(x, sq) => {
            let x = match x {
                Some(x) => Some((ev(x)?, collation_of(x, types))),
                None => None,
            };
            env.subquery(sq, x, row)?
        }
        Expr::Row(_) => return Err(operand_columns(1)),
        Expr::InRows(items, test, set) => {
            let l = items
                .iter()
                .map(|i| Ok((ev(i)?, collation_of(i, types))))
                .collect::<SqlResult<Vec<_>>>()?;
            set.test(*test, &l)?
        }
        Expr::InSet(x, op, all, set) => {
            // Over no values ANY is false and ALL true, whatever `x`.
            if set.vals.is_empty() && !set.has_null {
                return Ok(Value::Int(i64::from(*all)));
            }
            let v = ev(x)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            let coll = collation_of(x, types);
            if matches!((op, all), (BinOp::Eq, false) | (BinOp::Ne, true)) {
                if let Some(found) = set.lookup(&v, coll) {
                    return Ok(if found {
                        Value::Int(i64::from(!*all))
                    } else if set.has_null {
                        Value::Null
                    } else {
                        Value::Int(i64::from(*all))
                    });
                }
            }
            let mut unknown = set.has_null;
            for w in &set.vals {
                match compare(&v, w, coll) {
                    None => unknown = true,
                    Some(o) => {
                        let holds = holds(*op, o);
                        // ANY decides at the first true, ALL at the
                        // first false.
                        if holds != *all {
                            return Ok(Value::Int(i64::from(holds)));
                        }
                    }
                }
            }
            if unknown {
                Value::Null
            } else {
                Value::Int(i64::from(*all))
            }
        }
    })
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

/// Whether comparison `op` holds for the ordering `o` of its operands.
pub(crate) fn holds(op: BinOp, o: Ordering) -> bool {
    match op {
        BinOp::Eq | BinOp::NullSafeEq => o == Ordering::Equal,
        BinOp::Ne => o != Ordering::Equal,
        BinOp::Lt => o == Ordering::Less,
        BinOp::Le => o != Ordering::Greater,
        BinOp::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }
}

/// The bytes of a bit-value literal `b'0101'`: big-endian, as many as
/// the digits need (`b''` is the empty string).
pub(crate) fn parse_bits(b: &str) -> SqlResult<Vec<u8>> {
    if !b.bytes().all(|c| c == b'0' || c == b'1') {
        return Err(SqlError::syntax(format!("b'{b}'")));
    }
    let mut out = vec![0u8; b.len().div_ceil(8)];
    for (i, c) in b.bytes().rev().enumerate() {
        if c == b'1' {
            let n = out.len();
            if let Some(byte) = out.get_mut(n - 1 - i / 8) {
                *byte |= 1 << (i % 8);
            }
        }
    }
    Ok(out)
}

/// The text form of a value (strings as they are).
pub fn text_of(v: &Value) -> Vec<u8> {
    match v {
        Value::Str(s) | Value::Member(_, s) => s.clone(),
        Value::Json(b) => crate::json::binary_text(b).into_bytes(),
        Value::Null => Vec::new(),
        other => other.to_string().into_bytes(),
    }
}

fn cast(v: &Value, to: CastTo, env: &dyn Env) -> SqlResult<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    // A string that is not wholly a number of the target kind is read up
    // to where it stops being one, with MySQL's warning 1292.
    if let Value::Str(s) = v {
        let t = String::from_utf8_lossy(s);
        let t = t.trim();
        let (whole, kind) = match to {
            CastTo::Signed | CastTo::Unsigned => (t.parse::<i128>().is_ok(), "INTEGER"),
            CastTo::Double => (t.parse::<f64>().is_ok(), "DOUBLE"),
            CastTo::Decimal(_) => (parse_number(t).is_ok(), "DECIMAL"),
            CastTo::Char | CastTo::Time(_) | CastTo::Json | CastTo::Date | CastTo::DateTime(_) => {
                (true, "")
            }
        };
        if !whole {
            env.warn(
                1292,
                format!(
                    "Truncated incorrect {kind} value: '{}'",
                    String::from_utf8_lossy(s)
                ),
            );
        }
    }
    Ok(match to {
        CastTo::Signed => to_i64(v).map_or(Value::Null, Value::Int),
        CastTo::Unsigned => to_i64(v).map_or(Value::Null, |i| {
            if i >= 0 {
                Value::Int(i)
            } else {
                Value::UInt(i as u64)
            }
        }),
        CastTo::Char => Value::Str(text_of(v)),
        // These read strings themselves, and can fail.
        CastTo::Json => crate::json::cast(v)?,
        CastTo::Date => crate::datefuncs::call(crate::datefuncs::DtFn::Date, vec![v.clone()], env)?,
        CastTo::DateTime(fsp) => crate::datefuncs::call(
            crate::datefuncs::DtFn::CastDateTime(fsp),
            vec![v.clone()],
            env,
        )?,
        CastTo::Double => num(v).map_or(Value::Null, |n| Value::Double(to_f64(n))),
        CastTo::Decimal(s) => num(v)
            .and_then(|n| to_dec(n, s))
            .map_or(Value::Null, |d| Value::Decimal(d, s)),
        CastTo::Time(fsp) => match crate::convert::time_of_value(v) {
            Some(us) => {
                let max = crate::types::TIME_MAX_MICROS;
                let us = crate::convert::round_micros(us, fsp);
                if us.abs() > max {
                    env.warn(1292, format!("Truncated incorrect time value: '{v}'"));
                }
                Value::Time(us.clamp(-max, max))
            }
            None => {
                env.warn(1292, format!("Truncated incorrect time value: '{v}'"));
                Value::Null
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches_mysql_patterns() {
        let ci = Collation::Utf8mb4GeneralCi;
        assert!(like(b"Hello", b"h%", ci));
        assert!(like(b"Hello", b"%LL%", ci));
        assert!(like(b"Hello", b"H_llo", ci));
        assert!(!like(b"Hello", b"H_lo", ci));
        assert!(like(b"50%", b"50\\%", ci));
        assert!(!like(b"500", b"50\\%", ci));
        assert!(like(b"", b"%", ci));
        assert!(!like(b"abc", b"ab", ci));
        assert!(!like(b"Hello", b"h%", Collation::Utf8mb4Bin));
    }

    #[test]
    fn numbers_parse_as_mysql_literals() {
        assert_eq!(parse_number("42").unwrap(), Value::Int(42));
        assert_eq!(parse_number("1.50").unwrap(), Value::Decimal(150, 2));
        assert_eq!(parse_number("1e3").unwrap(), Value::Double(1000.0));
        assert_eq!(
            parse_number("18446744073709551615").unwrap(),
            Value::UInt(u64::MAX)
        );
    }

    #[test]
    fn arithmetic_overflows_are_errors_and_division_is_decimal() {
        assert!(arith(BinOp::Add, &Value::Int(i64::MAX), &Value::Int(1)).is_err());
        assert_eq!(
            arith(BinOp::Div, &Value::Int(1), &Value::Int(3)).unwrap(),
            Value::Decimal(3333, 4)
        );
        assert_eq!(
            arith(BinOp::Div, &Value::Int(1), &Value::Int(0)).unwrap(),
            Value::Null
        );
        assert_eq!(
            arith(BinOp::Add, &Value::Decimal(150, 2), &Value::Int(1)).unwrap(),
            Value::Decimal(250, 2)
        );
    }

    #[test]
    fn mixed_comparisons_follow_mysql() {
        let ci = Collation::Utf8mb4GeneralCi;
        assert_eq!(
            compare(&Value::Int(10), &Value::Str(b"9".to_vec()), ci),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare(&Value::Str(b"a".to_vec()), &Value::Str(b"A ".to_vec()), ci),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare(&Value::Decimal(150, 2), &Value::Int(1), ci),
            Some(Ordering::Greater)
        );
        assert_eq!(compare(&Value::Null, &Value::Int(1), ci), None);
    }
}
