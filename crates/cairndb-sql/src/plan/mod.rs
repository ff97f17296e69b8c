//! Planning: SELECT, INSERT, UPDATE and DELETE compiled into plans that
//! name their tables, access paths and compiled expressions, so a
//! prepared statement runs its cached plan with new parameters.
//!
//! Access paths: for each table in FROM order, the index (primary or
//! secondary) whose leading columns the WHERE (and ON) conjuncts bind
//! best: equalities on a prefix, then an IN list or a range on the next
//! column; a primary key bound in full is a point read. The bounds may
//! refer to tables earlier in the join (an index nested-loop join). The
//! WHERE is re-checked on the rows an access path returns, so a path
//! only narrows what is read and never decides an answer; the one
//! exception is a single-table query on integer key columns, whose
//! conjuncts that the key ranges express exactly are left out of the
//! re-check when every bound of the execution converts to the column's
//! type unchanged (`IndexAccess::residual`, decided per execution by
//! `exec::effective_filter`).
//!
//! Parameters (`?`) are numbered in the order they are compiled, which
//! follows the statement's text: projection, FROM/ON, WHERE, GROUP BY,
//! HAVING, ORDER BY, LIMIT.

//!
//! This module holds the plan types, the entry points (`compile`,
//! `describe`) and table-name resolution. Submodules: `select` (binding
//! a query: FROM, joins, clauses, set operations), `types` (result
//! columns' names and types), `access` (access paths), `joinorder` (the
//! reading order of inner joins), `write` (INSERT, REPLACE, UPDATE and
//! DELETE plans), `cte` (WITH clauses compiled and materialised) and
//! `explain` (EXPLAIN of a compiled plan).

mod access;
pub(crate) mod cte;
pub(crate) mod explain;
mod joinorder;
mod select;
mod types;
mod write;

pub(crate) use select::*;
pub(crate) use types::*;

use access::choose_access_paths;
use write::{compile_delete, compile_insert, compile_update};

use std::borrow::Cow;
use std::sync::Arc;

use sqlparser::ast;

use crate::context::StmtCx;
use crate::error::{SqlError, SqlResult};
use crate::expr::{
    AggCall, AggFunc, BinOp, CastTo, ColumnOrigin, Compiler, Expr, Func, Scope, ScopeColumn,
};
use crate::output::{ColumnInfo, OutType};
use crate::row::TableDef;
use crate::types::{ColumnType, Value};

/// A compiled statement.
#[derive(Clone)]
pub enum Plan {
    /// SELECT.
    Select(SelectPlan),
    /// INSERT / REPLACE.
    Insert(InsertPlan),
    /// UPDATE.
    Update(UpdatePlan),
    /// DELETE.
    Delete(DeletePlan),
}

impl Plan {
    /// Whether the plan writes (or locks) and so needs a transaction.
    pub fn writes(&self) -> bool {
        match self {
            Plan::Select(s) => s.lock.is_some(),
            _ => true,
        }
    }

    /// Whether the plan has subqueries in expressions, to materialise
    /// before each execution.
    pub fn has_subqueries(&self) -> bool {
        match self {
            Plan::Select(p) => p.subqueries,
            Plan::Insert(p) => p.subqueries || p.select.as_ref().is_some_and(|s| s.subqueries),
            Plan::Update(p) => p.scan.subqueries,
            Plan::Delete(p) => p.scan.subqueries,
        }
    }
}

/// A table in a plan.
#[derive(Debug, Clone)]
pub struct TableRef {
    /// Its database.
    pub db: String,
    /// Its schema.
    pub def: Arc<TableDef>,
    /// Alias or name (lower-case).
    pub alias: String,
    /// First row slot of its columns.
    pub offset: usize,
}

/// How a table's rows are found.
#[derive(Debug, Clone)]
pub enum Access {
    /// Every row, in primary-key order.
    Full,
    /// An index range (or point).
    Index(Box<IndexAccess>),
}

/// An index access path.
#[derive(Debug, Clone)]
pub struct IndexAccess {
    /// None: the primary key; Some(i): secondary index i.
    pub index: Option<usize>,
    /// Values of the leading columns (equalities).
    pub eq: Vec<Expr>,
    /// Alternatives for the next column (an IN list, an OR of ranges and
    /// values), read as one sorted list of key ranges with overlaps
    /// merged, so each row comes once.
    pub alts: Option<Vec<KeyAlt>>,
    /// Lower bound of the next column, inclusive?
    pub lo: Option<(Expr, bool)>,
    /// Upper bound of the next column, inclusive?
    pub hi: Option<(Expr, bool)>,
    /// The index holds every column the query reads from this table.
    pub covering: bool,
    /// Scan in descending order (ORDER BY ... DESC on the index).
    pub reverse: bool,
    /// Some(rest) when the key ranges can express conjuncts of the WHERE
    /// exactly (a single table, integer key columns): `rest` is the WHERE
    /// without them (None: nothing left). It replaces the WHERE only for
    /// an execution whose bound values all convert to their column's type
    /// unchanged; otherwise the ranges widen and the whole WHERE decides.
    pub residual: Option<Option<Expr>>,
}

/// One alternative of an IN list or an OR on an index column.
#[derive(Debug, Clone)]
pub enum KeyAlt {
    /// `col = e`: a point (or a prefix of later columns).
    Point(Expr),
    /// `lo <(=) col <(=) hi`, either end open; the flag: inclusive.
    Range(Option<(Expr, bool)>, Option<(Expr, bool)>),
}

/// A FROM item.
#[derive(Clone)]
pub enum Source {
    /// A stored table.
    Table {
        /// The table.
        t: TableRef,
        /// How its rows are found.
        access: Access,
        /// LEFT JOIN: emit a NULL-extended row when nothing matches.
        left: bool,
        /// ON condition (checked per candidate; for LEFT JOIN decides
        /// matching).
        on: Option<Expr>,
    },
    /// A derived table (subquery in FROM), materialised, or a table of
    /// constant rows (`information_schema`).
    Derived {
        /// The subquery's plan (None: `rows`).
        plan: Option<Box<SelectPlan>>,
        /// The constant rows when there is no plan.
        rows: Vec<Vec<Value>>,
        /// A set operation (UNION, INTERSECT, EXCEPT) of plans, in place
        /// of `plan`.
        set: Option<Box<SetNode>>,
        /// A common table expression, in place of `plan`.
        cte: Option<crate::cte::CteSource>,
        /// First row slot.
        offset: usize,
        /// Number of columns.
        width: usize,
        /// LEFT JOIN.
        left: bool,
        /// ON condition.
        on: Option<Expr>,
    },
}

impl Source {
    /// The row slots this source's columns fill: `lo..hi`.
    pub(crate) fn span(&self) -> (usize, usize) {
        match self {
            Source::Table { t, .. } => (t.offset, t.offset + t.def.columns.len()),
            Source::Derived { offset, width, .. } => (*offset, offset + width),
        }
    }

    /// Whether this source is LEFT JOINed (NULL-extended when nothing
    /// matches).
    pub(crate) fn is_left(&self) -> bool {
        match self {
            Source::Table { left, .. } | Source::Derived { left, .. } => *left,
        }
    }

    /// Whether this source reads a stored table at key points only: an
    /// index whose every column is bound by an equality, or whose last
    /// column is bound by an IN list (or OR) of points.
    pub fn is_key_points(&self) -> bool {
        let Source::Table {
            t,
            access: Access::Index(ia),
            ..
        } = self
        else {
            return false;
        };
        // A prefix part's point holds every value with that start.
        let ncols = match ia.index {
            None => t.def.primary.columns.len(),
            Some(i) => t
                .def
                .secondary
                .get(i)
                .filter(|ix| !ix.has_prefix())
                .map_or(usize::MAX, |ix| ix.columns.len()),
        };
        let bounded = ia.lo.is_none() && ia.hi.is_none();
        match &ia.alts {
            None => bounded && ia.eq.len() == ncols,
            Some(alts) => {
                bounded
                    && ia.eq.len() + 1 == ncols
                    && alts.iter().all(|a| matches!(a, KeyAlt::Point(_)))
            }
        }
    }
}

/// A set operation's operand.
#[derive(Clone)]
pub enum SetNode {
    /// A SELECT (possibly with its own ORDER BY / LIMIT).
    Plan(Box<SelectPlan>),
    /// `left op [ALL] right`.
    Op(SetOp, bool, Box<SetNode>, Box<SetNode>),
}

/// Set operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOp {
    /// UNION
    Union,
    /// INTERSECT
    Intersect,
    /// EXCEPT
    Except,
}

impl SetNode {
    fn has_subqueries(&self) -> bool {
        match self {
            SetNode::Plan(p) => p.subqueries,
            SetNode::Op(_, _, l, r) => l.has_subqueries() || r.has_subqueries(),
        }
    }

    /// Adds the enclosing queries' columns its parts read to `out`.
    fn outer_refs(&self, out: &mut Vec<(usize, usize)>) {
        match self {
            SetNode::Plan(p) => {
                for r in &p.outer_refs {
                    if !out.contains(r) {
                        out.push(*r);
                    }
                }
            }
            SetNode::Op(_, _, l, r) => {
                l.outer_refs(out);
                r.outer_refs(out);
            }
        }
    }
}

/// A compiled SELECT.
#[derive(Clone)]
pub struct SelectPlan {
    /// FROM items in nested-loop order (empty: one empty row).
    pub sources: Vec<Source>,
    /// Width of the joined row.
    pub width: usize,
    /// Types of the joined row's slots (collations).
    pub types: Vec<Option<ColumnType>>,
    /// WHERE.
    pub filter: Option<Expr>,
    /// Output expressions.
    pub proj: Vec<Expr>,
    /// Output columns.
    pub columns: Vec<ColumnInfo>,
    /// Aggregates (grouped query when non-empty or `group` non-empty).
    pub aggs: Vec<AggCall>,
    /// GROUP BY.
    pub group: Vec<Expr>,
    /// HAVING.
    pub having: Option<Expr>,
    /// ORDER BY: expression and ascending.
    pub order: Vec<(Expr, bool)>,
    /// ORDER BY is satisfied by the access path's order.
    pub order_by_index: bool,
    /// SELECT DISTINCT.
    pub distinct: bool,
    /// LIMIT.
    pub limit: Option<Expr>,
    /// OFFSET.
    pub offset: Option<Expr>,
    /// FOR UPDATE (true) / FOR SHARE (false).
    pub lock: Option<bool>,
    /// Subqueries in its expressions (or in a derived table's), to
    /// materialise before each execution.
    pub subqueries: bool,
    /// Its own expressions call SLEEP(): it may wait, so it is never run
    /// where a wait would hold other sessions up (`Session::is_quick_read`).
    pub waits: bool,
    /// Columns of enclosing queries it reads, itself or through its
    /// subqueries and derived tables: (queries out, slot), each once.
    /// Empty for a query that is not a correlated subquery.
    pub outer_refs: Vec<(usize, usize)>,
    /// Whether its own expressions read enclosing queries' columns or
    /// hold correlated subqueries: it then runs with the enclosing rows
    /// at hand and the reader for its subqueries.
    pub correlated: bool,
    /// Window functions of the select list (`Expr::Agg(k)` reads window
    /// k's value; such a query has no plain aggregates nor GROUP BY).
    pub windows: Vec<crate::expr::WinCall>,
    /// The hash join each source is read by, by level (None: the nested
    /// loop; empty: none has one). [`crate::hashjoin`].
    pub hash_joins: Vec<Option<crate::hashjoin::HashJoin>>,
}

impl SelectPlan {
    /// Whether the query aggregates.
    pub fn grouped(&self) -> bool {
        !self.aggs.is_empty() || !self.group.is_empty()
    }
}

/// A compiled INSERT or REPLACE.
#[derive(Clone)]
pub struct InsertPlan {
    /// The table.
    pub t: TableRef,
    /// Column positions given, in order.
    pub cols: Vec<usize>,
    /// Rows of value expressions.
    pub rows: Vec<Vec<Option<Expr>>>,
    /// INSERT ... SELECT.
    pub select: Option<Box<SelectPlan>>,
    /// REPLACE.
    pub replace: bool,
    /// INSERT IGNORE.
    pub ignore: bool,
    /// ON DUPLICATE KEY UPDATE assignments (column, expression over the
    /// existing row's slots and `VALUES(col)` as slots after them).
    pub on_dup: Vec<(usize, Expr)>,
    /// The value expressions or the ON DUPLICATE KEY UPDATE ones hold
    /// subqueries (uncorrelated: they read no column of the row), run
    /// once per execution.
    pub subqueries: bool,
}

/// A compiled UPDATE.
#[derive(Clone)]
pub struct UpdatePlan {
    /// The rows to change: of the one table, or (multi-table) the join,
    /// one output row per joined row.
    pub scan: SelectPlan,
    /// Assignments (column, expression over the row); single-table only.
    pub sets: Vec<(usize, Expr)>,
    /// The tables a multi-table UPDATE changes (empty: single-table).
    pub multi: Vec<Target>,
}

/// A compiled DELETE.
#[derive(Clone)]
pub struct DeletePlan {
    /// The rows to delete: of the one table, or (multi-table) the join.
    pub scan: SelectPlan,
    /// The tables a multi-table DELETE deletes from (empty:
    /// single-table).
    pub multi: Vec<Target>,
}

/// A table changed by a multi-table UPDATE or DELETE. The join's output
/// row holds, from `at` on, every column of the table's row (all NULL
/// when an outer join found none).
#[derive(Clone, Debug)]
pub struct Target {
    /// The table.
    pub t: TableRef,
    /// Whether it is the inner side of a LEFT JOIN.
    pub outer: bool,
    /// Where its columns start in the output row.
    pub at: usize,
    /// UPDATE: (column, output slot holding its new value), in the
    /// order the SET list names them.
    pub sets: Vec<(usize, usize)>,
}

/// Compiles a statement that has a plan (SELECT, INSERT, UPDATE, DELETE);
/// None for the rest (DDL, run from the AST).
pub fn compile(s: &StmtCx, st: &ast::Statement) -> SqlResult<Option<Plan>> {
    compile_with_order(s, st, &[])
}

/// [`compile`] of a statement with the ORDER BY of an UPDATE, which the
/// parser leaves out of the statement.
pub fn compile_with_order(
    s: &StmtCx,
    st: &ast::Statement,
    update_order: &[ast::OrderByExpr],
) -> SqlResult<Option<Plan>> {
    if !update_order.is_empty() && !matches!(st, ast::Statement::Update { .. }) {
        return Err(SqlError::syntax("ORDER BY outside UPDATE"));
    }
    let mut params = 0usize;
    s.cx.lock().reset();
    Ok(Some(match st {
        ast::Statement::Query(q) => Plan::Select(compile_query(s, q, &mut params, &[])?),
        ast::Statement::Insert(ins) => Plan::Insert(compile_insert(s, ins, &mut params)?),
        ast::Statement::Update {
            table,
            assignments,
            from: None,
            selection,
            limit,
            ..
        } => Plan::Update(compile_update(
            s,
            table,
            assignments,
            selection,
            update_order,
            limit,
            &mut params,
        )?),
        ast::Statement::Delete(d) => Plan::Delete(compile_delete(s, d, &mut params)?),
        ast::Statement::Explain { .. } => return Ok(None),
        _ => return Ok(None),
    }))
}

/// For COM_STMT_PREPARE: the number of parameters and the result columns.
pub fn describe(
    s: &StmtCx,
    st: &ast::Statement,
    update_order: &[ast::OrderByExpr],
) -> SqlResult<(usize, Vec<ColumnInfo>)> {
    let params =
        count_placeholders(st) + update_order.iter().map(count_placeholders).sum::<usize>();
    // A missing table or database is reported here, at prepare, as MySQL
    // does.
    let cols = match compile_with_order(s, st, update_order)? {
        Some(Plan::Select(p)) => p.columns,
        _ => Vec::new(),
    };
    Ok((params, cols))
}

/// Counts the `?` placeholders in a parsed statement or any part of one
/// (a walk of the tree: printed SQL is not a safe place to look, since
/// sqlparser prints some literals without escaping them again, so a
/// `'C:\\'` read from the text prints as `'C:\'`).
pub(crate) fn count_placeholders<V: ast::Visit>(node: &V) -> usize {
    struct Count(usize);
    impl ast::Visitor for Count {
        type Break = ();
        // Every value, not only `Expr::Value`: `BINARY ?`, `DATE ?` and
        // other typed strings hold theirs bare, and the compiler numbers
        // those too.
        fn pre_visit_value(&mut self, v: &ast::Value) -> std::ops::ControlFlow<()> {
            if matches!(v, ast::Value::Placeholder(p) if p == "?") {
                self.0 += 1;
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut c = Count(0);
    let _ = node.visit(&mut c);
    c.0
}

pub(crate) fn object_parts(name: &ast::ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The database and table a `[db.]table` names (the current database
/// when it names none).
pub(crate) fn table_name(s: &StmtCx, name: &ast::ObjectName) -> SqlResult<(String, String)> {
    let parts = object_parts(name);
    match parts.as_slice() {
        // Inside a view, its own database; else the session's.
        [t] => Ok((
            s.cx.lock()
                .db
                .clone()
                .or_else(|| s.current_db.clone())
                .ok_or_else(SqlError::no_database)?,
            t.clone(),
        )),
        [d, t] => Ok((d.clone(), t.clone())),
        _ => Err(SqlError::syntax(format!("bad table name {name}"))),
    }
}

/// Resolves `[db.]table` against the session's current database.
pub(crate) fn resolve_table(
    s: &StmtCx,
    name: &ast::ObjectName,
) -> SqlResult<(String, Arc<TableDef>)> {
    let (db, table) = table_name(s, name)?;
    let def = s.db.table(&db, &table)?;
    Ok((db, def))
}

/// [`resolve_table`] after checking that the session holds `need` on the
/// table (checked first, so that a denial does not tell whether the
/// table exists: 1142). With `by_column`, a table on which the account
/// holds only column grants of `need` passes, and `true` comes back: the
/// caller checks the columns the statement reads once it knows them.
pub(crate) fn resolve_checked(
    s: &StmtCx,
    name: &ast::ObjectName,
    need: u32,
    by_column: bool,
) -> SqlResult<(String, Arc<TableDef>, bool)> {
    let (db, table) = table_name(s, name)?;
    let mut deferred = false;
    if !crate::acl::has_table(s, &db, &table, need) {
        if by_column && crate::acl::has_column_grant(s, &db, &table, need) {
            deferred = true;
        } else {
            crate::acl::check_table(s, &db, &table, need)?;
        }
    }
    let def = s.db.table(&db, &table)?;
    Ok((db, def, deferred))
}

fn add_table_scope(
    scope: &mut Scope,
    types: &mut Vec<Option<ColumnType>>,
    db: &str,
    t: &TableDef,
    alias: &str,
) {
    for (i, c) in t.columns.iter().enumerate() {
        // As MySQL flags a column from its keys: every primary-key part;
        // the first part of a secondary index, UNIQUE_KEY for a one-column
        // unique index, MULTIPLE_KEY for the others.
        let first_of = |unique: bool| {
            t.secondary.iter().any(|ix| {
                ix.columns.first() == Some(&i) && (ix.unique && ix.columns.len() == 1) == unique
            })
        };
        scope.cols.push(ScopeColumn {
            table: alias.to_string(),
            name: c.name.clone(),
            ty: Some(c.ty),
            origin: Some(ColumnOrigin {
                schema: db.to_string(),
                table: t.name.clone(),
                not_null: !c.nullable,
                primary_key: !t.hidden_pk && t.in_pk(i),
                auto_increment: c.auto_increment,
                unique_key: first_of(true),
                multiple_key: first_of(false),
                display_width: c.display_width.or_else(|| c.member_length()),
            }),
        });
        types.push(Some(c.ty));
    }
}

fn alias_of(alias: &Option<ast::TableAlias>, default: &str) -> String {
    alias
        .as_ref()
        .map_or(default.to_lowercase(), |a| a.name.value.to_lowercase())
}

/// Compiles a query (SELECT, possibly with ORDER BY / LIMIT / locks).
/// Subqueries nested deeper than this are error 1473.
const MAX_NESTING: usize = 63;

/// The most tables one query block joins (its FROM's tables, views and
/// derived tables, those in parenthesised joins included); more is error
/// 1116. MySQL's limit is 61; this one only bounds the planning work of
/// a hostile FROM (the join order is quadratic in the tables).
const MAX_JOIN_TABLES: usize = 1024;

/// The conjuncts of a condition (split at AND).
pub(crate) fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::Binary(BinOp::And, l, r) => {
            conjuncts(l, out);
            conjuncts(r, out);
        }
        other => out.push(other),
    }
}

/// Moves each conjunct of a join's WHERE into the ON of the first
/// inner-joined source at or after the last source whose slots it reads,
/// so the nested loop drops a row as soon as the conjunct can be decided
/// instead of after every table is joined (a cross join of filtered
/// tables would otherwise build the whole product first). An inner
/// join's ON says what its WHERE says; a LEFT JOIN's does not, so a
/// conjunct that needs a left-joined source waits for the next inner one
/// (checked after the NULL-extended row is made), or stays in the WHERE.
/// Returns what stays in the WHERE.
fn push_down_where(filter: Option<Expr>, sources: &mut [Source]) -> Option<Expr> {
    let f = filter?;
    let mut conj = Vec::new();
    conjuncts(&f, &mut conj);
    let spans: Vec<(usize, usize, bool)> = sources
        .iter()
        .map(|s| {
            let (lo, hi) = s.span();
            (lo, hi, s.is_left())
        })
        .collect();
    let mut keep: Vec<&Expr> = Vec::new();
    let mut pushed: Vec<Vec<&Expr>> = vec![Vec::new(); sources.len()];
    for e in conj {
        let mut read = Vec::new();
        slots(e, &mut read);
        let mut level = Some(0);
        for slot in read {
            match spans
                .iter()
                .position(|(lo, hi, _)| slot >= *lo && slot < *hi)
            {
                Some(l) => level = level.map(|m: usize| m.max(l)),
                None => level = None,
            }
        }
        let target = level.and_then(|l| (l..spans.len()).find(|i| !spans[*i].2));
        match target {
            Some(i) => pushed[i].push(e),
            None => keep.push(e),
        }
    }
    for (src, extra) in sources.iter_mut().zip(pushed) {
        if extra.is_empty() {
            continue;
        }
        let on = match src {
            Source::Table { on, .. } | Source::Derived { on, .. } => on,
        };
        let first = on.take();
        let mut parts: Vec<&Expr> = first.iter().collect();
        parts.extend(extra);
        *on = and_all(&parts);
    }
    and_all(&keep)
}

/// The conjunction of `parts` in their order (None for none).
fn and_all(parts: &[&Expr]) -> Option<Expr> {
    if parts.is_empty() {
        return None;
    }
    Some(crate::expr::balanced(
        BinOp::And,
        parts.iter().map(|e| (*e).clone()).collect(),
    ))
}

/// Every row slot an expression reads.
pub(crate) fn slots(e: &Expr, out: &mut Vec<usize>) {
    match e {
        Expr::Column(i) => out.push(*i),
        Expr::Const(_)
        | Expr::Outer(..)
        | Expr::Param(_)
        | Expr::SysVar(_)
        | Expr::UserVar(_)
        | Expr::Agg(_) => {}
        Expr::Not(x) | Expr::Neg(x) | Expr::IsNull(x, _) | Expr::Cast(x, _) => slots(x, out),
        Expr::Binary(_, l, r) | Expr::Like(l, r, ..) => {
            slots(l, out);
            slots(r, out);
        }
        Expr::InList(x, l, _) => {
            slots(x, out);
            for y in l {
                slots(y, out);
            }
        }
        Expr::Between(a, b, c, _) => {
            slots(a, out);
            slots(b, out);
            slots(c, out);
        }
        Expr::Case(o, arms, els) => {
            if let Some(o) = o {
                slots(o, out);
            }
            for (w, t) in arms {
                slots(w, out);
                slots(t, out);
            }
            if let Some(e) = els {
                slots(e, out);
            }
        }
        Expr::Func(_, args) => {
            for a in args {
                slots(a, out);
            }
        }
        Expr::Subquery(x, sq) => {
            if let Some(x) = x {
                slots(x, out);
            }
            // A correlated subquery reads this query's row.
            out.extend(
                sq.plan
                    .outer_refs
                    .iter()
                    .filter(|(up, _)| *up == 1)
                    .map(|(_, slot)| *slot),
            );
        }
        Expr::InSet(x, ..) => slots(x, out),
        Expr::Row(items) | Expr::InRows(items, ..) => items.iter().for_each(|x| slots(x, out)),
    }
}

/// Whether `e` holds a correlated subquery (a key bound must not: it
/// is evaluated where no subquery can run). Walks without allocating.
fn has_correlated_subquery(e: &Expr) -> bool {
    let any = |l: &[Expr]| l.iter().any(has_correlated_subquery);
    match e {
        Expr::Subquery(x, sq) => {
            !sq.plan.outer_refs.is_empty() || x.as_deref().is_some_and(has_correlated_subquery)
        }
        Expr::Const(_)
        | Expr::Column(_)
        | Expr::Outer(..)
        | Expr::Param(_)
        | Expr::SysVar(_)
        | Expr::UserVar(_)
        | Expr::Agg(_) => false,
        Expr::Not(x) | Expr::Neg(x) | Expr::IsNull(x, _) | Expr::Cast(x, _) => {
            has_correlated_subquery(x)
        }
        Expr::InSet(x, ..) => has_correlated_subquery(x),
        Expr::Row(items) | Expr::InRows(items, ..) => items.iter().any(has_correlated_subquery),
        Expr::Binary(_, l, r) | Expr::Like(l, r, ..) => {
            has_correlated_subquery(l) || has_correlated_subquery(r)
        }
        Expr::InList(x, l, _) => has_correlated_subquery(x) || any(l),
        Expr::Between(a, b, c, _) => {
            has_correlated_subquery(a) || has_correlated_subquery(b) || has_correlated_subquery(c)
        }
        Expr::Case(o, arms, els) => {
            o.as_deref().is_some_and(has_correlated_subquery)
                || arms
                    .iter()
                    .any(|(w, t)| has_correlated_subquery(w) || has_correlated_subquery(t))
                || els.as_deref().is_some_and(has_correlated_subquery)
        }
        Expr::Func(_, args) => any(args),
    }
}
