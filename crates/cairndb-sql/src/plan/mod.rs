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
//! Submodules: `access` (access paths), `joinorder` (the reading order
//! of inner joins), `write` (INSERT, REPLACE, UPDATE and DELETE plans),
//! `cte` (WITH clauses compiled and materialised) and `explain` (EXPLAIN
//! of a compiled plan).

mod access;
pub(crate) mod cte;
pub(crate) mod explain;
mod joinorder;
mod write;

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
            Plan::Insert(p) => p.select.as_ref().is_some_and(|s| s.subqueries),
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
        let ncols = match ia.index {
            None => t.def.primary.columns.len(),
            Some(i) => t.def.secondary.get(i).map_or(0, |ix| ix.columns.len()),
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
    let params = count_placeholders(&st.to_string())
        + update_order
            .iter()
            .map(|o| count_placeholders(&o.to_string()))
            .sum::<usize>();
    // A missing table or database is reported here, at prepare, as MySQL
    // does.
    let cols = match compile_with_order(s, st, update_order)? {
        Some(Plan::Select(p)) => p.columns,
        _ => Vec::new(),
    };
    Ok((params, cols))
}

/// Counts `?` placeholders outside quotes.
pub(crate) fn count_placeholders(sql: &str) -> usize {
    let mut n = 0;
    let mut q: Option<char> = None;
    let mut prev = '\0';
    for c in sql.chars() {
        match q {
            Some(x) if c == x && prev != '\\' => q = None,
            Some(_) => {}
            None if c == '\'' || c == '"' || c == '`' => q = Some(c),
            None if c == '?' => n += 1,
            None => {}
        }
        prev = c;
    }
    n
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

/// `outer` are the scopes of the enclosing queries when this is a
/// subquery (innermost last).
pub(crate) fn compile_query(
    s: &StmtCx,
    q: &ast::Query,
    params: &mut usize,
    outer: &[&Scope],
) -> SqlResult<SelectPlan> {
    // MySQL's limit on nested subqueries.
    if outer.len() > MAX_NESTING {
        return Err(SqlError::new(
            1473,
            "HY000",
            "Too high level of nesting for select",
        ));
    }
    if q.fetch.is_some() {
        return Err(SqlError::unsupported("FETCH"));
    }
    crate::cte::enter(s);
    let mut pushed = 0;
    let r = match &q.with {
        Some(w) => crate::cte::push_with(s, w, params, outer, &mut pushed)
            .and_then(|()| compile_query_body(s, q, params, outer)),
        None => compile_query_body(s, q, params, outer),
    };
    crate::cte::leave(s, pushed);
    r
}

/// [`compile_query`] once its `WITH` is in scope.
fn compile_query_body(
    s: &StmtCx,
    q: &ast::Query,
    params: &mut usize,
    outer: &[&Scope],
) -> SqlResult<SelectPlan> {
    match q.body.as_ref() {
        ast::SetExpr::Select(sel) => compile_select(
            s,
            sel,
            q.order_by.as_ref(),
            q.limit_clause.as_ref(),
            &q.locks,
            params,
            outer,
        ),
        ast::SetExpr::Query(inner) if q.order_by.is_none() && q.limit_clause.is_none() => {
            if !q.locks.is_empty() {
                return Err(SqlError::unsupported(
                    "locking clause on a parenthesised query",
                ));
            }
            compile_query(s, inner, params, outer)
        }
        ast::SetExpr::Query(_) | ast::SetExpr::SetOperation { .. } => {
            compile_set_query(s, q, params, outer)
        }
        other => Err(SqlError::unsupported(other)),
    }
}

/// A query whose body is a set operation (or a parenthesised query with
/// an ORDER BY / LIMIT of its own): the parts are materialised in turn
/// and combined, then ordered and limited as a whole. Columns are named
/// and typed after the first part.
fn compile_set_query(
    s: &StmtCx,
    q: &ast::Query,
    params: &mut usize,
    outer: &[&Scope],
) -> SqlResult<SelectPlan> {
    if !q.locks.is_empty() {
        return Err(SqlError::unsupported("locking clause on a set operation"));
    }
    let node = set_node(s, &q.body, params, outer)?;
    set_plan(node, q.order_by.as_ref(), q.limit_clause.as_ref(), params)
}

/// The plan of a set operation's tree, ordered and limited as a whole.
pub(crate) fn set_plan(
    node: SetNode,
    order_by: Option<&ast::OrderBy>,
    limit_clause: Option<&ast::LimitClause>,
    params: &mut usize,
) -> SqlResult<SelectPlan> {
    let first = first_plan(&node);
    let columns = first.columns.clone();
    let width = columns.len();
    fn check(n: &SetNode, width: usize) -> SqlResult<()> {
        match n {
            SetNode::Plan(p) if p.columns.len() != width => Err(SqlError::new(
                1222,
                "21000",
                "The used SELECT statements have a different number of columns",
            )),
            SetNode::Plan(_) => Ok(()),
            SetNode::Op(_, _, l, r) => {
                check(l, width)?;
                check(r, width)
            }
        }
    }
    check(&node, width)?;
    let mut columns = columns;
    union_types(&node, &mut columns);
    let mut scope = Scope::default();
    for ci in &columns {
        scope.cols.push(ScopeColumn {
            table: String::new(),
            name: ci.name.clone(),
            ty: None,
            origin: None,
        });
    }
    let proj: Vec<Expr> = (0..width).map(Expr::Column).collect();
    let mut c = Compiler::new(&scope);
    c.next_param = *params;
    let mut order = Vec::new();
    if let Some(ob) = order_by {
        match &ob.kind {
            ast::OrderByKind::Expressions(list) => {
                for o in list {
                    let x = order_or_group_expr(&mut c, &o.expr, &[], &proj)?;
                    order.push((x, o.options.asc.unwrap_or(true)));
                }
            }
            ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
        }
    }
    let (limit, offset) = limit_exprs(&mut c, limit_clause)?;
    *params = c.next_param;
    let subqueries = node.has_subqueries();
    let mut outer_refs = Vec::new();
    node.outer_refs(&mut outer_refs);
    Ok(SelectPlan {
        sources: vec![Source::Derived {
            plan: None,
            rows: Vec::new(),
            cte: None,
            set: Some(Box::new(node)),
            offset: 0,
            width,
            left: false,
            on: None,
        }],
        width,
        types: vec![None; width],
        filter: None,
        proj,
        columns,
        aggs: Vec::new(),
        group: Vec::new(),
        having: None,
        order,
        order_by_index: false,
        distinct: false,
        limit,
        offset,
        lock: None,
        subqueries,
        outer_refs,
        correlated: false,
        windows: Vec::new(),
        hash_joins: Vec::new(),
    })
}

/// The result columns of a set operation: the first part's, except
/// where the parts' types differ (their common type, as a computed
/// column) or a later part may give NULL.
fn union_types(n: &SetNode, columns: &mut [ColumnInfo]) {
    fn parts<'a>(n: &'a SetNode, out: &mut Vec<&'a SelectPlan>) {
        match n {
            SetNode::Plan(p) => out.push(p),
            SetNode::Op(_, _, l, r) => {
                parts(l, out);
                parts(r, out);
            }
        }
    }
    let mut ps = Vec::new();
    parts(n, &mut ps);
    for (k, ci) in columns.iter_mut().enumerate() {
        let tys: Vec<OutType> = ps
            .iter()
            .filter_map(|p| p.columns.get(k).map(|c| c.ty))
            .collect();
        if tys.iter().any(|t| *t != ci.ty) {
            let name = ci.name.clone();
            *ci = ColumnInfo::computed(&name, merged_type(tys.into_iter()));
        } else if ps
            .iter()
            .any(|p| p.columns.get(k).is_some_and(|c| !c.not_null))
        {
            ci.not_null = false;
        }
    }
}

pub(crate) fn first_plan(n: &SetNode) -> &SelectPlan {
    match n {
        SetNode::Plan(p) => p,
        SetNode::Op(_, _, l, _) => first_plan(l),
    }
}

/// A set operation's tree of parts.
pub(crate) fn set_node(
    s: &StmtCx,
    e: &ast::SetExpr,
    params: &mut usize,
    outer: &[&Scope],
) -> SqlResult<SetNode> {
    Ok(match e {
        ast::SetExpr::Select(sel) => SetNode::Plan(Box::new(compile_select(
            s,
            sel,
            None,
            None,
            &[],
            params,
            outer,
        )?)),
        ast::SetExpr::Query(q) => SetNode::Plan(Box::new(compile_query(s, q, params, outer)?)),
        ast::SetExpr::SetOperation {
            op,
            set_quantifier,
            left,
            right,
        } => {
            let op = match op {
                ast::SetOperator::Union => SetOp::Union,
                ast::SetOperator::Intersect => SetOp::Intersect,
                ast::SetOperator::Except => SetOp::Except,
                other => return Err(SqlError::unsupported(other)),
            };
            let all = match set_quantifier {
                ast::SetQuantifier::All => true,
                ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
                other => return Err(SqlError::unsupported(other)),
            };
            let l = set_node(s, left, params, outer)?;
            let r = set_node(s, right, params, outer)?;
            SetNode::Op(op, all, Box::new(l), Box::new(r))
        }
        other => return Err(SqlError::unsupported(other)),
    })
}

/// LIMIT and OFFSET.
pub(crate) fn limit_exprs(
    c: &mut Compiler,
    l: Option<&ast::LimitClause>,
) -> SqlResult<(Option<Expr>, Option<Expr>)> {
    Ok(match l {
        None => (None, None),
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (
            match limit {
                Some(l) => Some(c.compile(l)?),
                None => None,
            },
            match offset {
                Some(o) => Some(c.compile(&o.value)?),
                None => None,
            },
        ),
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
            let o = c.compile(offset)?;
            let l = c.compile(limit)?;
            (Some(l), Some(o))
        }
    })
}

/// Plans the subqueries of expressions.
struct Planner<'s> {
    s: &'s StmtCx,
}

impl crate::expr::SubPlanner for Planner<'_> {
    fn plan(
        &self,
        q: &ast::Query,
        next_param: &mut usize,
        outer: &[&Scope],
    ) -> SqlResult<SelectPlan> {
        compile_query(self.s, q, next_param, outer)
    }
}

/// A SELECT with its ORDER BY, LIMIT and locking clause.
fn compile_select(
    s: &StmtCx,
    sel: &ast::Select,
    order_by: Option<&ast::OrderBy>,
    limit_clause: Option<&ast::LimitClause>,
    locks: &[ast::LockClause],
    params: &mut usize,
    outer: &[&Scope],
) -> SqlResult<SelectPlan> {
    if !sel.named_window.is_empty() {
        crate::window::check_window_clause(&sel.named_window)?;
    }
    if sel.qualify.is_some() {
        return Err(SqlError::unsupported("QUALIFY"));
    }
    // FROM: tables and their slots (no expressions yet).
    let flat_from: Vec<ast::TableWithJoins>;
    let mut scope = Scope::default();
    let mut types = Vec::new();
    struct Pending<'a> {
        kind: PendingKind,
        left: bool,
        on: Option<Cow<'a, ast::Expr>>,
    }
    enum PendingKind {
        Table(TableRef),
        Derived(Option<Box<SelectPlan>>, Vec<Vec<Value>>, usize, usize),
        Cte(crate::cte::CteSource, usize, usize),
    }
    /// A derived table's (or a view's) columns, in scope under `alias`.
    fn derived(
        scope: &mut Scope,
        types: &mut Vec<Option<ColumnType>>,
        alias: &str,
        plan: SelectPlan,
    ) -> PendingKind {
        let offset = scope.cols.len();
        for c in &plan.columns {
            scope.cols.push(ScopeColumn {
                table: alias.to_string(),
                name: c.name.clone(),
                ty: None,
                origin: None,
            });
            types.push(None);
        }
        let width = plan.columns.len();
        PendingKind::Derived(Some(Box::new(plan)), Vec::new(), offset, width)
    }
    let mut pending: Vec<Pending> = Vec::new();
    // Tables read under column grants only: (first slot, database, table).
    let column_checks: std::cell::RefCell<Vec<(usize, String, Arc<TableDef>)>> = Default::default();
    let add_factor = |f: &ast::TableFactor,
                      left: bool,
                      on: Option<&'_ ast::Expr>,
                      scope: &mut Scope,
                      types: &mut Vec<Option<ColumnType>>,
                      params: &mut usize|
     -> SqlResult<PendingKind> {
        let _ = (left, on);
        if let ast::TableFactor::Table {
            name, alias, args, ..
        } = f
        {
            if let ([ast::ObjectNamePart::Identifier(id)], None) = (name.0.as_slice(), args) {
                if let Some((src, names)) = crate::cte::lookup(s, &id.value)? {
                    let alias = alias_of(alias, &id.value);
                    let offset = scope.cols.len();
                    for sc in crate::cte::scope_columns(&alias, &names) {
                        scope.cols.push(sc);
                        types.push(None);
                    }
                    return Ok(PendingKind::Cte(src, offset, names.len()));
                }
            }
        }
        match f {
            ast::TableFactor::Table { name, alias, .. }
                if crate::infoschema::is_info_schema(s, name) =>
            {
                let (table, names, rows) = crate::infoschema::table(s, name)?;
                let alias = alias_of(alias, &table);
                let offset = scope.cols.len();
                for n in &names {
                    scope.cols.push(ScopeColumn {
                        table: alias.clone(),
                        name: n.clone(),
                        ty: None,
                        origin: None,
                    });
                    types.push(None);
                }
                Ok(PendingKind::Derived(None, rows, offset, names.len()))
            }
            ast::TableFactor::Table { name, alias, .. } if crate::view::find(s, name).is_some() => {
                let (vdb, v) =
                    crate::view::find(s, name).ok_or_else(|| SqlError::internal("view"))?;
                let plan = crate::view::expand(s, &vdb, &v)?;
                let alias = alias_of(alias, &v.name);
                Ok(derived(scope, types, &alias, plan))
            }
            ast::TableFactor::Table { name, alias, .. } => {
                let (db, def, by_column) = resolve_checked(s, name, crate::acl::SELECT, true)?;
                let alias = alias_of(alias, &def.name);
                let offset = scope.cols.len();
                if by_column {
                    column_checks
                        .borrow_mut()
                        .push((offset, db.clone(), def.clone()));
                }
                add_table_scope(scope, types, &db, &def, &alias);
                Ok(PendingKind::Table(TableRef {
                    db,
                    def,
                    alias,
                    offset,
                }))
            }
            ast::TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                if *lateral {
                    return Err(SqlError::unsupported("LATERAL"));
                }
                let mut plan = compile_query(s, subquery, params, outer)?;
                let a = alias.as_ref().ok_or_else(|| {
                    SqlError::new(1248, "42000", "Every derived table must have its own alias")
                })?;
                // `AS d (x, y)` names its columns.
                if !a.columns.is_empty() {
                    crate::cte::rename(&mut plan.columns, &a.columns)?;
                }
                let alias = a.name.value.to_lowercase();
                Ok(derived(scope, types, &alias, plan))
            }
            other => Err(SqlError::unsupported(other)),
        }
    };
    // `FROM DUAL` (alone) names no table.
    let from: &[ast::TableWithJoins] = match sel.from.as_slice() {
        [twj] if twj.joins.is_empty() && is_dual(&twj.relation) => &[],
        all if all.iter().any(|t| nested_first(t).is_some()) => {
            flat_from = all.iter().map(flatten_join).collect();
            &flat_from
        }
        all => all,
    };
    // Slots in the order `*` lists them: FROM order, except that a USING
    // or NATURAL join lists its common columns first, once.
    let mut star: Vec<usize> = Vec::new();
    // `a STRAIGHT_JOIN b`: read in FROM order.
    let mut straight = false;
    for twj in from {
        // This item's slots in `*` order (a join's USING list looks in it).
        let mut tw_star: Vec<usize> = Vec::new();
        let mut joins = twj.joins.as_slice();
        let lo = scope.cols.len();
        match joins.first().map(|j| &j.join_operator) {
            Some(ast::JoinOperator::Right(c) | ast::JoinOperator::RightOuter(c)) => {
                // `a RIGHT JOIN b ON ...` is read as `b LEFT JOIN a ON ...`
                // and listed as a, b.
                let j = &joins[0];
                let kb = add_factor(&j.relation, false, None, &mut scope, &mut types, params)?;
                let mid = scope.cols.len();
                let ka = add_factor(&twj.relation, true, None, &mut scope, &mut types, params)?;
                let a: Vec<usize> = (mid..scope.cols.len()).collect();
                let b: Vec<usize> = (lo..mid).collect();
                tw_star = a.clone();
                let on = join_condition(c, &mut scope, &mut tw_star, &a, &b, true)?;
                pending.push(Pending {
                    kind: kb,
                    left: false,
                    on: None,
                });
                pending.push(Pending {
                    kind: ka,
                    left: true,
                    on,
                });
                joins = &joins[1..];
            }
            _ => {
                let k = add_factor(&twj.relation, false, None, &mut scope, &mut types, params)?;
                tw_star.extend(lo..scope.cols.len());
                pending.push(Pending {
                    kind: k,
                    left: false,
                    on: None,
                });
            }
        }
        for j in joins {
            let (left, c) = match &j.join_operator {
                ast::JoinOperator::Join(c)
                | ast::JoinOperator::Inner(c)
                | ast::JoinOperator::CrossJoin(c) => (false, c),
                ast::JoinOperator::StraightJoin(c) => {
                    straight = true;
                    (false, c)
                }
                ast::JoinOperator::Left(c) | ast::JoinOperator::LeftOuter(c) => (true, c),
                ast::JoinOperator::Right(_) | ast::JoinOperator::RightOuter(_) => {
                    return Err(SqlError::unsupported(
                        "RIGHT JOIN after another join (make the joins before it a derived table)",
                    ))
                }
                other => {
                    return Err(SqlError::unsupported(
                        format!("{other:?}")
                            .split('(')
                            .next()
                            .unwrap_or("join")
                            .to_string(),
                    ))
                }
            };
            let before = scope.cols.len();
            let k = add_factor(&j.relation, left, None, &mut scope, &mut types, params)?;
            let right: Vec<usize> = (before..scope.cols.len()).collect();
            let prev = tw_star.clone();
            let on = join_condition(c, &mut scope, &mut tw_star, &prev, &right, false)?;
            pending.push(Pending { kind: k, left, on });
        }
        star.extend(tw_star);
    }

    // Projection (first in the text).
    let planner = Planner { s };
    let mut c = Compiler::new(&scope);
    c.allow_agg = true;
    c.allow_win = true;
    c.named_windows = &sel.named_window;
    c.next_param = *params;
    c.sub = Some(&planner);
    c.outer = outer.to_vec();
    let mut proj = Vec::new();
    let mut columns = Vec::new();
    for item in &sel.projection {
        match item {
            ast::SelectItem::Wildcard(_) => {
                if pending.is_empty() {
                    return Err(SqlError::new(1096, "HY000", "No tables used"));
                }
                for &i in &star {
                    if let Some(sc) = scope.cols.get(i) {
                        proj.push(Expr::Column(i));
                        columns.push(column_info_for_slot(sc, &sc.name));
                    }
                }
            }
            ast::SelectItem::QualifiedWildcard(kind, _) => {
                let tname = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => object_parts(n)
                        .last()
                        .cloned()
                        .unwrap_or_default()
                        .to_lowercase(),
                    other => return Err(SqlError::unsupported(other)),
                };
                let mut any = false;
                for (i, sc) in scope.cols.iter().enumerate() {
                    if sc.table == tname {
                        any = true;
                        proj.push(Expr::Column(i));
                        columns.push(column_info_for_slot(sc, &sc.name));
                    }
                }
                if !any {
                    return Err(SqlError::new(
                        1051,
                        "42S02",
                        format!("Unknown table '{tname}'"),
                    ));
                }
            }
            ast::SelectItem::UnnamedExpr(e) => {
                let x = c.compile(e)?;
                let label = label_of(e);
                columns.push(info_for_expr(&x, &label, &scope, &c.aggs));
                proj.push(x);
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                let x = c.compile(expr)?;
                let mut info = info_for_expr(&x, &alias.value, &scope, &c.aggs);
                info.name = alias.value.clone();
                columns.push(info);
                proj.push(x);
            }
        }
    }

    // ON conditions, in FROM order.
    c.allow_agg = false;
    c.allow_win = false;
    let mut sources = Vec::new();
    for p in pending {
        let on = match &p.on {
            Some(e) => Some(c.compile(e)?),
            None => None,
        };
        sources.push(match p.kind {
            PendingKind::Table(t) => Source::Table {
                t,
                access: Access::Full,
                left: p.left,
                on,
            },
            PendingKind::Cte(cte, offset, width) => Source::Derived {
                plan: None,
                rows: Vec::new(),
                set: None,
                cte: Some(cte),
                offset,
                width,
                left: p.left,
                on,
            },
            PendingKind::Derived(plan, rows, offset, width) => Source::Derived {
                plan,
                rows,
                cte: None,
                set: None,
                offset,
                width,
                left: p.left,
                on,
            },
        });
    }
    let filter = match &sel.selection {
        Some(w) => Some(c.compile(w)?),
        None => None,
    };
    let group = match &sel.group_by {
        ast::GroupByExpr::Expressions(exprs, _) => exprs
            .iter()
            .map(|e| order_or_group_expr(&mut c, e, &sel.projection, &proj))
            .collect::<SqlResult<Vec<_>>>()?,
        ast::GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
    };
    c.allow_agg = true;
    let having = match &sel.having {
        Some(h) => Some(having_expr(&mut c, h, &sel.projection, &proj)?),
        None => None,
    };
    let mut order = Vec::new();
    c.allow_win = true;
    if let Some(ob) = order_by {
        match &ob.kind {
            ast::OrderByKind::Expressions(list) => {
                for o in list {
                    let x = order_or_group_expr(&mut c, &o.expr, &sel.projection, &proj)?;
                    order.push((x, o.options.asc.unwrap_or(true)));
                }
            }
            ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
        }
    }
    c.allow_agg = false;
    c.allow_win = false;
    let (limit, offset) = limit_exprs(&mut c, limit_clause)?;
    let lock = locks.first().map(|l| l.lock_type == ast::LockType::Update);
    let distinct = match &sel.distinct {
        None => false,
        Some(ast::Distinct::Distinct) => true,
        Some(ast::Distinct::On(_)) => return Err(SqlError::unsupported("DISTINCT ON")),
    };
    *params = c.next_param;
    let aggs = std::mem::take(&mut c.aggs);
    let windows = std::mem::take(&mut c.wins);
    if !windows.is_empty() {
        for w in &windows {
            if let Some(note) = w.ignored_frame_note() {
                s.warn("Note", 3599, note);
            }
        }
        bind_windows(
            &windows,
            &aggs,
            &mut proj,
            &mut columns,
            &mut order,
            &group,
            &having,
            &scope,
        )?;
    }
    let subqueries = c.subqueries > 0
        || sources
            .iter()
            .any(|x| matches!(x, Source::Derived { plan: Some(p), .. } if p.subqueries));
    let width = scope.cols.len();
    // A derived table reads enclosing columns for this query (it runs
    // where this query runs, at the same depth).
    let mut outer_refs = std::mem::take(&mut c.outer_refs);
    for src in &sources {
        if let Source::Derived { plan: Some(p), .. } = src {
            for r in &p.outer_refs {
                if !outer_refs.contains(r) {
                    outer_refs.push(*r);
                }
            }
        }
    }
    let correlated = c.direct_outer || c.correlated_subqueries;
    let checks = column_checks.into_inner();
    if !checks.is_empty() {
        let mut win_exprs: Vec<Expr> = Vec::new();
        for w in &windows {
            win_exprs.extend(w.agg.arg.iter().cloned());
            win_exprs.extend(w.extra.iter().cloned());
            win_exprs.extend(w.partition.iter().cloned());
            win_exprs.extend(w.order.iter().map(|(e, _)| e.clone()));
        }
        check_columns_read(
            s,
            &checks,
            &[&proj, &group, &win_exprs],
            &[&filter, &having],
            &order,
            &aggs,
            &sources,
        )?;
    }
    let mut filter = filter;
    // The inner joins before the first LEFT one are read in the order
    // their conditions bind best.
    let inner = sources
        .iter()
        .position(Source::is_left)
        .unwrap_or(sources.len());
    if inner > 1 && !straight {
        if let Some(prefix) = sources.get_mut(..inner) {
            joinorder::reorder(prefix, &mut filter);
        }
    }
    let filter = if sources.len() > 1 {
        push_down_where(filter, &mut sources)
    } else {
        filter
    };
    let mut plan = SelectPlan {
        sources,
        width,
        types,
        filter,
        proj,
        columns,
        aggs,
        group,
        having,
        order,
        order_by_index: false,
        distinct,
        limit,
        offset,
        lock,
        subqueries,
        outer_refs,
        correlated,
        windows,
        hash_joins: Vec::new(),
    };
    choose_access_paths(&mut plan);
    plan.hash_joins = crate::hashjoin::plan(&plan);
    Ok(plan)
}

/// Binds a query's window functions: a window in GROUP BY or HAVING
/// (through a select-list alias) is refused (3594); the select list's
/// and ORDER BY's window references are renumbered past the aggregates
/// (window k is `Expr::Agg(aggs.len() + k)`), and the select list's
/// window columns typed.
#[allow(clippy::too_many_arguments)]
fn bind_windows(
    windows: &[crate::expr::WinCall],
    aggs: &[AggCall],
    proj: &mut [Expr],
    columns: &mut [ColumnInfo],
    order: &mut [(Expr, bool)],
    group: &[Expr],
    having: &Option<Expr>,
    scope: &Scope,
) -> SqlResult<()> {
    if group
        .iter()
        .chain(having.iter())
        .any(crate::window::has_window)
    {
        return Err(SqlError::new(
            3594,
            "HY000",
            "You cannot use the alias of an expression containing a window function in this context.'",
        ));
    }
    let typed: Vec<AggCall> = aggs
        .iter()
        .cloned()
        .chain(windows.iter().map(|w| w.agg.clone()))
        .collect();
    for (x, info) in proj.iter_mut().zip(columns.iter_mut()) {
        if crate::window::has_window(x) {
            crate::window::renumber(x, aggs.len())?;
            let name = info.name.clone();
            *info = info_for_expr(x, &name, scope, &typed);
            info.name = name;
        }
    }
    for (x, _) in order.iter_mut() {
        crate::window::renumber(x, aggs.len())?;
    }
    Ok(())
}

/// Checks SELECT on each column a query reads from the tables it reads
/// under column grants only (`checks`: first slot, database, table):
/// the slots its expressions read, aggregate arguments and ON
/// conditions included (1143 for a column without the grant).
fn check_columns_read(
    s: &StmtCx,
    checks: &[(usize, String, Arc<TableDef>)],
    lists: &[&[Expr]],
    opts: &[&Option<Expr>],
    order: &[(Expr, bool)],
    aggs: &[crate::expr::AggCall],
    sources: &[Source],
) -> SqlResult<()> {
    let mut read = Vec::new();
    for l in lists {
        for e in l.iter() {
            slots(e, &mut read);
        }
    }
    for e in opts.iter().copied().flatten() {
        slots(e, &mut read);
    }
    for (e, _) in order {
        slots(e, &mut read);
    }
    for a in aggs {
        if let Some(e) = &a.arg {
            slots(e, &mut read);
        }
    }
    for src in sources {
        if let Source::Table { on: Some(e), .. } | Source::Derived { on: Some(e), .. } = src {
            slots(e, &mut read);
        }
    }
    for (offset, db, def) in checks {
        let cols = read
            .iter()
            .filter_map(|&slot| slot.checked_sub(*offset))
            .filter_map(|i| def.columns.get(i))
            .map(|c| c.name.as_str());
        crate::acl::check_columns(s, db, &def.name, crate::acl::SELECT, cols)?;
    }
    Ok(())
}

/// MySQL's `DUAL`: an unquoted, unqualified, unaliased table name.
fn is_dual(f: &ast::TableFactor) -> bool {
    match f {
        ast::TableFactor::Table {
            name, alias: None, ..
        } => matches!(
            name.0.as_slice(),
            [ast::ObjectNamePart::Identifier(id)]
                if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("dual")
        ),
        _ => false,
    }
}

/// The joins inside a FROM item that starts with a parenthesised join
/// without an alias (`(a JOIN b ON x) JOIN c ON y`, as MariaDB writes
/// views); None otherwise.
fn nested_first(t: &ast::TableWithJoins) -> Option<&ast::TableWithJoins> {
    match &t.relation {
        ast::TableFactor::NestedJoin {
            table_with_joins,
            alias: None,
        } => Some(table_with_joins),
        _ => None,
    }
}

/// A FROM item with a leading parenthesised join spliced in: `(a JOIN b
/// ON x) JOIN c ON y` is `a JOIN b ON x JOIN c ON y`, joins being left
/// to right. Parentheses elsewhere stay (and are refused as nested
/// joins).
fn flatten_join(t: &ast::TableWithJoins) -> ast::TableWithJoins {
    match nested_first(t) {
        Some(inner) => {
            let mut flat = flatten_join(inner);
            flat.joins.extend(t.joins.iter().cloned());
            flat
        }
        None => t.clone(),
    }
}

/// A join's condition: its ON, or the equalities its USING list or
/// NATURAL says, between `left` (the slots of the join's left side, in
/// `*` order) and `right` (the joined item's). A USING column is listed
/// once by `*` and named unqualified as one column: the left one's
/// (`right_wins`: the right one's, for RIGHT JOIN); the other is then
/// reachable only qualified. `star` becomes the joined result's `*`
/// order: the common columns, then the rest of the left, then the rest
/// of the right (for RIGHT JOIN the right's rest first, as MySQL).
fn join_condition<'a>(
    c: &'a ast::JoinConstraint,
    scope: &mut Scope,
    star: &mut Vec<usize>,
    left: &[usize],
    right: &[usize],
    right_wins: bool,
) -> SqlResult<Option<Cow<'a, ast::Expr>>> {
    let names: Vec<String> = match c {
        ast::JoinConstraint::On(e) => {
            star.extend_from_slice(right);
            return Ok(Some(Cow::Borrowed(e)));
        }
        ast::JoinConstraint::None => {
            star.extend_from_slice(right);
            return Ok(None);
        }
        ast::JoinConstraint::Using(list) => list
            .iter()
            .map(|n| object_parts(n).last().cloned().unwrap_or_default())
            .collect(),
        ast::JoinConstraint::Natural => {
            // In the order of the side listed first (the right one for
            // RIGHT JOIN).
            let (first, second) = if right_wins {
                (right, left)
            } else {
                (left, right)
            };
            let mut common = Vec::new();
            for &l in first {
                let Some(lc) = scope.cols.get(l) else {
                    continue;
                };
                let in_right = second.iter().any(|&r| {
                    scope
                        .cols
                        .get(r)
                        .is_some_and(|rc| rc.name.eq_ignore_ascii_case(&lc.name))
                });
                if in_right
                    && !common
                        .iter()
                        .any(|n: &String| n.eq_ignore_ascii_case(&lc.name))
                {
                    common.push(lc.name.clone());
                }
            }
            common
        }
    };
    let find = |slots: &[usize], name: &str| -> SqlResult<usize> {
        let mut hit = slots.iter().copied().filter(|&i| {
            scope
                .cols
                .get(i)
                .is_some_and(|c| c.name.eq_ignore_ascii_case(name))
        });
        match (hit.next(), hit.next()) {
            (Some(i), None) => Ok(i),
            (Some(_), Some(_)) => Err(SqlError::new(
                1052,
                "23000",
                format!("Column '{name}' in from clause is ambiguous"),
            )),
            (None, _) => Err(SqlError::unknown_column(name, "from clause")),
        }
    };
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for n in &names {
        let l = find(left, n)?;
        let r = find(right, n)?;
        if !pairs.iter().any(|p| p.0 == l) {
            pairs.push((l, r));
        }
    }
    let ident = |i: usize| {
        let sc = scope.cols.get(i);
        ast::Expr::CompoundIdentifier(vec![
            ast::Ident::new(sc.map(|c| c.table.clone()).unwrap_or_default()),
            ast::Ident::new(sc.map(|c| c.name.clone()).unwrap_or_default()),
        ])
    };
    let mut cond: Option<ast::Expr> = None;
    for &(l, r) in &pairs {
        let eq = ast::Expr::BinaryOp {
            left: Box::new(ident(l)),
            op: ast::BinaryOperator::Eq,
            right: Box::new(ident(r)),
        };
        cond = Some(match cond {
            None => eq,
            Some(prev) => ast::Expr::BinaryOp {
                left: Box::new(prev),
                op: ast::BinaryOperator::And,
                right: Box::new(eq),
            },
        });
    }
    let mut order: Vec<usize> = pairs
        .iter()
        .map(|&(l, r)| if right_wins { r } else { l })
        .collect();
    let left_rest = left.iter().filter(|i| !pairs.iter().any(|p| p.0 == **i));
    let right_rest = right.iter().filter(|i| !pairs.iter().any(|p| p.1 == **i));
    if right_wins {
        order.extend(right_rest);
        order.extend(left_rest);
    } else {
        order.extend(left_rest);
        order.extend(right_rest);
    }
    for &(l, r) in &pairs {
        scope.merged.push(if right_wins { l } else { r });
    }
    *star = order;
    Ok(cond.map(Cow::Owned))
}

fn column_info_for_slot(sc: &ScopeColumn, label: &str) -> ColumnInfo {
    match &sc.ty {
        Some(ty) => {
            let mut ci = ColumnInfo::of_column(ty, label);
            ci.table = sc.table.clone();
            ci.org_table = sc.table.clone();
            ci.org_name = sc.name.clone();
            if let Some(o) = &sc.origin {
                ci.schema = o.schema.clone();
                ci.org_table = o.table.clone();
                ci.not_null = o.not_null;
                ci.primary_key = o.primary_key;
                ci.auto_increment = o.auto_increment;
                ci.unique_key = o.unique_key;
                ci.multiple_key = o.multiple_key;
                if let Some(w) = o.display_width {
                    ci.length = w;
                }
            }
            ci
        }
        None => ColumnInfo::computed(label, OutType::VarString),
    }
}

/// The label MySQL gives an unaliased select item.
fn label_of(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => i.value.clone(),
        // `@@session.x` is labelled as written; `t.c` is `c`.
        ast::Expr::CompoundIdentifier(p)
            if p.first()
                .is_some_and(|i| i.quote_style.is_none() && i.value.starts_with("@@")) =>
        {
            p.iter()
                .map(|i| i.value.as_str())
                .collect::<Vec<_>>()
                .join(".")
        }
        ast::Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()).unwrap_or_default(),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// Result metadata of an output expression.
fn info_for_expr(x: &Expr, label: &str, scope: &Scope, aggs: &[AggCall]) -> ColumnInfo {
    if let Expr::Column(i) = x {
        if let Some(sc) = scope.cols.get(*i) {
            let mut ci = column_info_for_slot(sc, label);
            ci.name = label.to_string();
            return ci;
        }
    }
    let mut ci = ColumnInfo::computed(label, out_type(x, scope, aggs));
    match x {
        // BIGINT UNSIGNED, as MySQL sends these.
        Expr::Cast(_, CastTo::Unsigned) => ci.unsigned = true,
        Expr::Binary(
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr,
            ..,
        ) => ci.unsigned = true,
        Expr::SysVar(n) if matches!(crate::vars::default_of(n), Some(Value::UInt(_))) => {
            ci.unsigned = true
        }
        Expr::Cast(_, CastTo::Decimal(scale)) => ci.decimals = *scale,
        Expr::Cast(_, CastTo::Time(fsp) | CastTo::DateTime(fsp)) => ci.decimals = *fsp,
        Expr::Agg(i)
            if aggs.get(*i).is_some_and(|a| {
                matches!(a.func, AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor)
            }) =>
        {
            ci.unsigned = true
        }
        _ => {}
    }
    ci
}

/// The type an expression's values are sent as.
pub(crate) fn out_type(x: &Expr, scope: &Scope, aggs: &[AggCall]) -> OutType {
    match x {
        Expr::Const(v) => match v {
            Value::Null => OutType::Null,
            Value::Int(_) | Value::UInt(_) => OutType::LongLong,
            Value::Double(_) => OutType::Double,
            Value::Decimal(..) => OutType::NewDecimal,
            Value::Str(_) => OutType::VarString,
            Value::Date(_) => OutType::Date,
            Value::DateTime(_) => OutType::DateTime,
            Value::Time(_) => OutType::Time,
            Value::Member(..) => OutType::String,
            Value::Json(_) => OutType::Json,
        },
        Expr::Column(i) => scope
            .cols
            .get(*i)
            .and_then(|c| c.ty.as_ref())
            .map_or(OutType::VarString, |t| ColumnInfo::of_column(t, "").ty),
        Expr::Agg(i) => match aggs.get(*i) {
            Some(a) => match a.func {
                AggFunc::Count | AggFunc::CountStar => OutType::LongLong,
                AggFunc::Avg => OutType::NewDecimal,
                AggFunc::Sum => match a.arg.as_ref().map(|e| out_type(e, scope, aggs)) {
                    Some(OutType::Double | OutType::Float) => OutType::Double,
                    _ => OutType::NewDecimal,
                },
                AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor => OutType::LongLong,
                AggFunc::StdPop | AggFunc::StdSamp | AggFunc::VarPop | AggFunc::VarSamp => {
                    OutType::Double
                }
                AggFunc::GroupConcat => OutType::Blob,
                AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg => OutType::Json,
                AggFunc::Min | AggFunc::Max => a
                    .arg
                    .as_ref()
                    .map_or(OutType::Null, |e| out_type(e, scope, aggs)),
            },
            None => OutType::Null,
        },
        Expr::Not(_) | Expr::IsNull(..) | Expr::InList(..) | Expr::Between(..) | Expr::Like(..) => {
            OutType::LongLong
        }
        Expr::Binary(op, l, r) => match op {
            BinOp::Eq
            | BinOp::NullSafeEq
            | BinOp::Ne
            | BinOp::Lt
            | BinOp::Le
            | BinOp::Gt
            | BinOp::Ge
            | BinOp::And
            | BinOp::Or
            | BinOp::Xor
            | BinOp::BitAnd
            | BinOp::BitOr
            | BinOp::BitXor
            | BinOp::Shl
            | BinOp::Shr
            | BinOp::IntDiv => OutType::LongLong,
            BinOp::Div => match (out_type(l, scope, aggs), out_type(r, scope, aggs)) {
                (OutType::Double | OutType::Float, _) | (_, OutType::Double | OutType::Float) => {
                    OutType::Double
                }
                _ => OutType::NewDecimal,
            },
            _ => match (out_type(l, scope, aggs), out_type(r, scope, aggs)) {
                (OutType::Double | OutType::Float | OutType::VarString, _)
                | (_, OutType::Double | OutType::Float | OutType::VarString) => OutType::Double,
                (OutType::NewDecimal, _) | (_, OutType::NewDecimal) => OutType::NewDecimal,
                _ => OutType::LongLong,
            },
        },
        Expr::Neg(e) => out_type(e, scope, aggs),
        Expr::Func(f, args) => func_type(*f, args, scope, aggs),
        Expr::Case(_, whens, els) => merged_type(
            whens
                .iter()
                .map(|(_, then)| then)
                .chain(els.as_deref())
                .map(|e| out_type(e, scope, aggs)),
        ),
        Expr::Cast(_, to) => match to {
            CastTo::Signed | CastTo::Unsigned => OutType::LongLong,
            CastTo::Char => OutType::VarString,
            CastTo::Decimal(_) => OutType::NewDecimal,
            CastTo::Double => OutType::Double,
            CastTo::Time(_) => OutType::Time,
            CastTo::Json => OutType::Json,
            CastTo::Date => OutType::Date,
            CastTo::DateTime(_) => OutType::DateTime,
        },
        Expr::SysVar(name) => match crate::vars::default_of(name) {
            Some(Value::Int(_) | Value::UInt(_)) => OutType::LongLong,
            Some(_) => OutType::VarString,
            None => match name.as_str() {
                "last_insert_id" | "identity" | "in_transaction" => OutType::LongLong,
                _ => OutType::VarString,
            },
        },
        Expr::Param(_) | Expr::UserVar(_) | Expr::Outer(..) => OutType::VarString,
        Expr::Subquery(None, sq) if sq.test == crate::expr::SubTest::Scalar => {
            sq.plan.columns.first().map_or(OutType::Null, |c| c.ty)
        }
        Expr::Subquery(..) | Expr::InSet(..) | Expr::InRows(..) | Expr::Row(_) => OutType::LongLong,
    }
}

/// The type of a scalar function's result, as MySQL reports it.
fn func_type(f: Func, args: &[Expr], scope: &Scope, aggs: &[AggCall]) -> OutType {
    let arg = |i: usize| {
        args.get(i)
            .map_or(OutType::Null, |e| out_type(e, scope, aggs))
    };
    // A number function's type from its argument's: integers stay
    // integers (BIGINT), strings are read as doubles.
    let numeric = |t: OutType| match t {
        OutType::Tiny | OutType::Short | OutType::Int24 | OutType::Long | OutType::LongLong => {
            OutType::LongLong
        }
        OutType::NewDecimal => OutType::NewDecimal,
        OutType::Null => OutType::Null,
        _ => OutType::Double,
    };
    match f {
        Func::Length
        | Func::CharLength
        | Func::ConnectionId
        | Func::LastInsertId
        | Func::FoundRows
        | Func::RowCount
        | Func::UnixTimestamp
        | Func::Locate
        | Func::Instr
        | Func::Field
        | Func::FindInSet
        | Func::Ascii
        | Func::Ord
        | Func::Strcmp
        | Func::Crc32
        | Func::RegexpLike
        | Func::RegexpInstr => OutType::LongLong,
        Func::Md5
        | Func::Sha1
        | Func::Sha2
        | Func::Char
        | Func::Format
        | Func::Quote
        | Func::RegexpReplace
        | Func::RegexpSubstr => OutType::VarString,
        Func::Replace
        | Func::Lpad
        | Func::Rpad
        | Func::Left
        | Func::Right
        | Func::Repeat
        | Func::Space
        | Func::Reverse
        | Func::ConcatWs
        | Func::SubstringIndex
        | Func::Hex
        | Func::Unhex
        | Func::Elt
        | Func::Ltrim
        | Func::Rtrim
        | Func::Insert
        | Func::TrimLeading
        | Func::TrimTrailing
        | Func::TrimBoth => OutType::VarString,
        Func::Concat
        | Func::Upper
        | Func::Lower
        | Func::Substring
        | Func::Trim
        | Func::Database
        | Func::Version
        | Func::User
        | Func::CurrentUser => OutType::VarString,
        Func::Now => OutType::DateTime,
        Func::Dt(d) => {
            let types: Vec<OutType> = args.iter().map(|e| out_type(e, scope, aggs)).collect();
            let fmt = match args.get(1) {
                Some(Expr::Const(Value::Str(f))) => Some(f.as_slice()),
                _ => None,
            };
            crate::datefuncs::out_type(d, &types, fmt)
        }
        Func::Math(m) => crate::mathfuncs::out_type(m, &|i| arg(i)),
        Func::Json(j) => crate::json::out_type(j),
        Func::CurDate => OutType::Date,
        Func::Abs | Func::Round => numeric(arg(0)),
        Func::Floor | Func::Ceil => match numeric(arg(0)) {
            OutType::NewDecimal => OutType::LongLong,
            t => t,
        },
        Func::NullIf => arg(0),
        Func::If => merged_type([arg(1), arg(2)].into_iter()),
        Func::IfNull | Func::Coalesce | Func::Greatest | Func::Least => {
            merged_type(args.iter().map(|e| out_type(e, scope, aggs)))
        }
    }
}

/// The type of a result that is one of several expressions' (IF, IFNULL,
/// COALESCE, CASE, GREATEST): MySQL's aggregation of types, simplified.
/// NULLs do not count; a string or a date mixed with anything else is a
/// string; integers widen to DECIMAL, DECIMAL to DOUBLE.
fn merged_type(types: impl Iterator<Item = OutType>) -> OutType {
    let mut acc = OutType::Null;
    for t in types {
        let t = match t {
            OutType::Tiny | OutType::Short | OutType::Int24 | OutType::Long => OutType::LongLong,
            OutType::Float => OutType::Double,
            OutType::String | OutType::Blob => OutType::VarString,
            OutType::Timestamp => OutType::DateTime,
            other => other,
        };
        acc = match (acc, t) {
            (OutType::Null, t) | (t, OutType::Null) => t,
            (a, b) if a == b => a,
            (OutType::Date, OutType::DateTime) | (OutType::DateTime, OutType::Date) => {
                OutType::DateTime
            }
            // JSON with anything else is its text.
            (OutType::VarString | OutType::Json, _)
            | (_, OutType::VarString | OutType::Json)
            | (OutType::Date | OutType::DateTime, _)
            | (_, OutType::Date | OutType::DateTime) => OutType::VarString,
            (OutType::Double, _) | (_, OutType::Double) => OutType::Double,
            (OutType::NewDecimal, _) | (_, OutType::NewDecimal) => OutType::NewDecimal,
            _ => OutType::LongLong,
        };
    }
    acc
}

/// An ORDER BY / GROUP BY item: a position (`ORDER BY 2`), a projection
/// alias, or an expression.
fn order_or_group_expr(
    c: &mut Compiler,
    e: &ast::Expr,
    items: &[ast::SelectItem],
    proj: &[Expr],
) -> SqlResult<Expr> {
    if let ast::Expr::Value(v) = e {
        if let ast::Value::Number(n, _) = &v.value {
            let k: usize = n
                .parse()
                .map_err(|_| SqlError::syntax(format!("bad position {n}")))?;
            return proj
                .get(k.wrapping_sub(1))
                .cloned()
                .ok_or_else(|| SqlError::unknown_column(n, "order clause"));
        }
    }
    if let ast::Expr::Identifier(id) = e {
        for (i, it) in items.iter().enumerate() {
            if let ast::SelectItem::ExprWithAlias { alias, .. } = it {
                if alias.value.eq_ignore_ascii_case(&id.value) {
                    // Aliases shadow columns only when no column of that
                    // name exists (MySQL prefers the alias in ORDER BY).
                    if let Some(x) = proj.get(i) {
                        return Ok(x.clone());
                    }
                }
            }
        }
    }
    c.compile(e)
}

fn having_expr(
    c: &mut Compiler,
    e: &ast::Expr,
    items: &[ast::SelectItem],
    proj: &[Expr],
) -> SqlResult<Expr> {
    // HAVING may name select aliases anywhere inside it.
    match e {
        ast::Expr::Identifier(id) => {
            for (i, it) in items.iter().enumerate() {
                if let ast::SelectItem::ExprWithAlias { alias, .. } = it {
                    if alias.value.eq_ignore_ascii_case(&id.value) {
                        if let Some(x) = proj.get(i) {
                            return Ok(x.clone());
                        }
                    }
                }
            }
            c.compile(e)
        }
        ast::Expr::BinaryOp { left, op, right } => {
            let l = having_expr(c, left, items, proj)?;
            let r = having_expr(c, right, items, proj)?;
            let fake = ast::Expr::BinaryOp {
                left: Box::new(ast::Expr::Value(ast::Value::Null.into())),
                op: op.clone(),
                right: Box::new(ast::Expr::Value(ast::Value::Null.into())),
            };
            match c.compile(&fake)? {
                Expr::Binary(o, _, _) => Ok(Expr::Binary(o, Box::new(l), Box::new(r))),
                other => Ok(other),
            }
        }
        ast::Expr::Nested(x) => having_expr(c, x, items, proj),
        _ => c.compile(e),
    }
}

// ----------------------------------------------------------- access paths

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
