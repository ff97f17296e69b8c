//! Common table expressions (`WITH [RECURSIVE] name [(cols)] AS (...)`):
//! compiling them into [`CtePlan`]s and materialising them.
//!
//! Compiling: a query's `WITH` list is compiled in order, each CTE once,
//! and pushed on the session's compile context ([`Cx::ctes`]) so the
//! later CTEs, the query's body and its subqueries and derived tables
//! see it; it is popped when the query is compiled (an inner `WITH`
//! shadows an outer name). A reference to a CTE becomes a derived
//! source sharing the CTE's plan ([`CteSource::Shared`]); a recursive
//! CTE's reference to itself in its recursive part reads the rows of
//! the previous iteration ([`CteSource::Work`]). A CTE that fails to
//! compile fails only the statements that reference it (an unreferenced
//! CTE is never run, as in MySQL).
//!
//! Executing: a CTE is materialised at its first use in an execution and
//! kept in the executor's [`Reader`] for the others (so each CTE runs
//! once per execution, however often it is named). A recursive CTE runs
//! its anchor, then its recursive parts over the previous iteration's
//! new rows until an iteration adds none, at most
//! `cte_max_recursion_depth` iterations (error 3636 past it); a UNION
//! DISTINCT keeps only rows not seen before. The rows held count against
//! `min(tmp_table_size, max_heap_table_size)` bytes (error 1114, "The
//! table is full", past it): nothing is spilled to disk.
//!
//! Invariants: CTE ids are unique within a compiled statement; a
//! `CteSource::Work` reference only occurs inside its CTE's recursive
//! parts, at their top level (not in a subquery or derived table).
//!
//! Locking: the compile context is behind the session's mutex, taken for
//! short moments and never held across a nested compile.

use std::collections::HashSet;
use std::sync::Arc;

use sqlparser::ast;

use crate::context::StmtCx;
use crate::error::{SqlError, SqlResult};
use crate::exec::{row_key, select_rows, Reader, Scratch};
use crate::expr::{Compiler, Expr, Scope, ScopeColumn};
use crate::output::ColumnInfo;
use crate::plan::{SelectPlan, SetNode, Source};
use crate::types::Value;

/// The session's compile context: what is in scope while a statement
/// compiles. Reset when a statement starts compiling.
#[derive(Default)]
pub(crate) struct Cx {
    /// CTEs in scope, innermost last.
    pub(crate) ctes: Vec<Entry>,
    /// Nesting of queries being compiled (subqueries, derived tables).
    depth: usize,
    /// Next CTE id.
    next_id: u32,
    /// The database unqualified names resolve in while a view's SELECT
    /// compiles (None: the session's current database).
    pub(crate) db: Option<String>,
    /// Views being expanded, outermost first: (database, name).
    pub(crate) views: Vec<(String, String)>,
    /// Depth levels of the views being expanded.
    pub(crate) view_levels: usize,
    /// The most `view_levels` reached in the statement.
    pub(crate) max_view_levels: usize,
}

impl Cx {
    /// A fresh context for a new statement.
    pub(crate) fn reset(&mut self) {
        *self = Cx::default();
    }
}

/// A CTE in scope.
pub(crate) struct Entry {
    name: String,
    state: State,
}

enum State {
    Ready(Arc<CtePlan>),
    Failed(SqlError),
    /// A recursive CTE whose recursive parts are compiling.
    Recursing {
        id: u32,
        /// The query nesting its recursive parts compile at.
        depth: usize,
        /// Column names, known once the anchor is compiled.
        columns: Option<Vec<String>>,
        /// References to itself so far.
        refs: usize,
        /// Its query is a UNION (else naming itself is error 3573).
        union: bool,
    },
}

/// A compiled CTE.
#[derive(Clone)]
pub struct CtePlan {
    /// Unique within the statement.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// The whole query of a CTE that is not recursive; the anchor
    /// (non-recursive parts) of one that is.
    pub anchor: SelectPlan,
    /// The recursive parts (empty: not recursive).
    pub recursive: Vec<SelectPlan>,
    /// A UNION DISTINCT joins a recursive part: rows seen are dropped.
    pub distinct: bool,
    /// LIMIT / OFFSET over a recursive CTE (they end the recursion).
    pub limit: Option<Expr>,
    /// OFFSET.
    pub offset: Option<Expr>,
    /// Result columns (named by the column list when there is one).
    pub columns: Vec<ColumnInfo>,
}

/// What a CTE reference reads.
#[derive(Clone)]
pub enum CteSource {
    /// The CTE's rows, materialised once per execution.
    Shared(Arc<CtePlan>),
    /// The previous iteration's rows of recursive CTE `id`.
    Work(u32),
}

fn err_name(code: u16, state: &'static str, msg: String) -> SqlError {
    SqlError::new(code, state, msg)
}

/// Enters a query: its nesting depth.
pub(crate) fn enter(s: &StmtCx) -> usize {
    let mut cx = s.cx.lock();
    cx.depth += 1;
    cx.depth
}

/// Leaves a query entered with [`enter`], popping the `pushed` CTEs of
/// its `WITH`.
pub(crate) fn leave(s: &StmtCx, pushed: usize) {
    let mut cx = s.cx.lock();
    cx.depth = cx.depth.saturating_sub(1);
    let keep = cx.ctes.len().saturating_sub(pushed);
    cx.ctes.truncate(keep);
}

/// Compiles a `WITH` list and brings its CTEs into scope; returns how
/// many were pushed (all of them, also on error: the caller pops them).
pub(crate) fn push_with(
    s: &StmtCx,
    w: &ast::With,
    params: &mut usize,
    outer: &[&Scope],
    pushed: &mut usize,
) -> SqlResult<()> {
    let mut names: Vec<String> = Vec::new();
    for c in &w.cte_tables {
        let name = c.alias.name.value.clone();
        if names.contains(&name.to_lowercase()) {
            return Err(SqlError::new(
                1066,
                "42000",
                format!("Not unique table/alias: '{name}'"),
            ));
        }
        names.push(name.to_lowercase());
        let start = *params;
        let state =
            match compile_cte(s, c, w.recursive, params, outer).and_then(uncorrelated) {
                Ok(p) => State::Ready(Arc::new(p)),
                Err(e) => {
                    // Keep the numbering of the later parameters.
                    *params = start + crate::plan::count_placeholders(&c.query);
                    // A recursing entry left by the failure is replaced.
                    let mut cx = s.cx.lock();
                    if cx.ctes.last().is_some_and(|e| {
                        e.name == name && matches!(e.state, State::Recursing { .. })
                    }) {
                        cx.ctes.pop();
                    }
                    drop(cx);
                    State::Failed(e)
                }
            };
        let mut cx = s.cx.lock();
        if cx
            .ctes
            .last()
            .is_some_and(|e| e.name == name && matches!(e.state, State::Recursing { .. }))
        {
            cx.ctes.pop();
        }
        cx.ctes.push(Entry { name, state });
        *pushed += 1;
    }
    Ok(())
}

/// The CTE `name` refers to, if one is in scope: the derived source's
/// reference and its column names.
pub(crate) fn lookup(s: &StmtCx, name: &str) -> SqlResult<Option<(CteSource, Vec<String>)>> {
    let mut cx = s.cx.lock();
    let depth = cx.depth;
    let lower = name.to_lowercase();
    let Some(e) = cx
        .ctes
        .iter_mut()
        .rev()
        .find(|e| e.name.to_lowercase() == lower)
    else {
        return Ok(None);
    };
    match &mut e.state {
        State::Ready(p) => Ok(Some((
            CteSource::Shared(p.clone()),
            p.columns.iter().map(|c| c.name.clone()).collect(),
        ))),
        State::Failed(err) => Err(err.clone()),
        State::Recursing {
            id,
            depth: d,
            columns,
            refs,
            union,
        } => {
            if !*union {
                return Err(requires_union(name));
            }
            let Some(cols) = columns else {
                return Err(err_name(
                    3574,
                    "HY000",
                    format!(
                        "Recursive Common Table Expression '{name}' should have one or more \
                         non-recursive query blocks followed by one or more recursive ones"
                    ),
                ));
            };
            *refs += 1;
            if *d != depth {
                return Err(single_reference(name));
            }
            Ok(Some((CteSource::Work(*id), cols.clone())))
        }
    }
}

fn single_reference(name: &str) -> SqlError {
    err_name(
        3577,
        "HY000",
        format!(
            "In recursive query block of Recursive Common Table Expression '{name}', the \
             recursive table must be referenced only once, and not in any subquery"
        ),
    )
}

/// Result columns renamed by a column list (error 1353 when the counts
/// differ, 1060 for a duplicate name).
pub(crate) fn rename(
    columns: &mut [ColumnInfo],
    list: &[ast::TableAliasColumnDef],
) -> SqlResult<()> {
    if !list.is_empty() {
        if list.len() != columns.len() {
            return Err(SqlError::new(
                1353,
                "HY000",
                "In definition of view, derived table or common table expression, SELECT list \
                 and column names list have different column counts",
            ));
        }
        for (c, n) in columns.iter_mut().zip(list) {
            c.name = n.name.value.clone();
        }
    }
    for (i, c) in columns.iter().enumerate() {
        if columns[..i]
            .iter()
            .any(|d| d.name.eq_ignore_ascii_case(&c.name))
        {
            return Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{}'", c.name),
            ));
        }
    }
    Ok(())
}

fn next_id(s: &StmtCx) -> u32 {
    let mut cx = s.cx.lock();
    cx.next_id += 1;
    cx.next_id
}

/// The refs a recursing entry `id` has had.
fn refs_of(s: &StmtCx, id: u32) -> usize {
    let cx = s.cx.lock();
    cx.ctes
        .iter()
        .rev()
        .find_map(|e| match e.state {
            State::Recursing { id: i, refs, .. } if i == id => Some(refs),
            _ => None,
        })
        .unwrap_or(0)
}

/// Refuses a CTE that reads a column of an enclosing query (its rows
/// are made once per statement and shared).
fn uncorrelated(p: CtePlan) -> SqlResult<CtePlan> {
    if !p.anchor.outer_refs.is_empty() || p.recursive.iter().any(|r| !r.outer_refs.is_empty()) {
        return Err(SqlError::unsupported(
            "a common table expression that reads a column of an enclosing query",
        ));
    }
    Ok(p)
}

fn compile_cte(
    s: &StmtCx,
    c: &ast::Cte,
    recursive: bool,
    params: &mut usize,
    outer: &[&Scope],
) -> SqlResult<CtePlan> {
    crate::catalog::check_name(crate::catalog::NameKind::Table, &c.alias.name.value)?;
    let name = c.alias.name.value.clone();
    let id = next_id(s);
    if !recursive {
        let anchor = crate::plan::compile_query(s, &c.query, params, outer)?;
        let mut columns = anchor.columns.clone();
        rename(&mut columns, &c.alias.columns)?;
        return Ok(CtePlan {
            id,
            name,
            anchor,
            recursive: Vec::new(),
            distinct: false,
            limit: None,
            offset: None,
            columns,
        });
    }
    // In scope while it compiles, as the working table of its recursive
    // parts.
    let q = &c.query;
    let is_union = q.with.is_none()
        && matches!(
            q.body.as_ref(),
            ast::SetExpr::SetOperation {
                op: ast::SetOperator::Union,
                ..
            }
        );
    {
        let mut cx = s.cx.lock();
        let depth = cx.depth;
        cx.ctes.push(Entry {
            name: name.clone(),
            state: State::Recursing {
                id,
                depth,
                columns: None,
                refs: 0,
                union: is_union,
            },
        });
    }
    if !is_union {
        // Not a UNION: recursive only if it names itself, which needs one.
        let anchor = crate::plan::compile_query(s, q, params, outer)?;
        if refs_of(s, id) > 0 {
            return Err(requires_union(&name));
        }
        let mut columns = anchor.columns.clone();
        rename(&mut columns, &c.alias.columns)?;
        return Ok(CtePlan {
            id,
            name,
            anchor,
            recursive: Vec::new(),
            distinct: false,
            limit: None,
            offset: None,
            columns,
        });
    }
    // The UNION's operands, left to right, with their ALL flags.
    fn flatten<'a>(e: &'a ast::SetExpr, out: &mut Vec<(&'a ast::SetExpr, bool)>) {
        match e {
            ast::SetExpr::SetOperation {
                op: ast::SetOperator::Union,
                set_quantifier,
                left,
                right,
            } => {
                flatten(left, out);
                out.push((right, matches!(set_quantifier, ast::SetQuantifier::All)));
            }
            other => out.push((other, true)),
        }
    }
    let mut ops = Vec::new();
    flatten(&q.body, &mut ops);
    let mut anchor_nodes: Vec<(SetNode, bool)> = Vec::new();
    let mut parts: Vec<SelectPlan> = Vec::new();
    let mut distinct = false;
    for (mut e, all) in ops {
        // `(SELECT ...)` without clauses of its own is its SELECT.
        while let ast::SetExpr::Query(inner) = e {
            if inner.with.is_some()
                || inner.order_by.is_some()
                || inner.limit_clause.is_some()
                || !inner.locks.is_empty()
            {
                break;
            }
            e = &inner.body;
        }
        let before = refs_of(s, id);
        let clauses = matches!(e, ast::SetExpr::Query(_));
        let node = match crate::plan::set_node(s, e, params, outer) {
            // A recursive part with an ORDER BY / LIMIT of its own.
            Err(_) if clauses && refs_of(s, id) > before => {
                return Err(SqlError::unsupported(
                    "ORDER BY / LIMIT / SELECT DISTINCT in recursive query block of Common \
                     Table Expression",
                ))
            }
            r => r?,
        };
        if refs_of(s, id) == before {
            if !parts.is_empty() {
                return Err(nonrecursive_first(&name));
            }
            if anchor_nodes.is_empty() {
                // The recursive parts see the first part's column names.
                let names = if c.alias.columns.is_empty() {
                    crate::plan::first_plan(&node)
                        .columns
                        .iter()
                        .map(|c| c.name.clone())
                        .collect()
                } else {
                    c.alias
                        .columns
                        .iter()
                        .map(|c| c.name.value.clone())
                        .collect()
                };
                set_columns(s, id, names);
            }
            anchor_nodes.push((node, all));
        } else {
            if anchor_nodes.is_empty() {
                return Err(nonrecursive_first(&name));
            }
            if refs_of(s, id) > before + 1 {
                return Err(single_reference(&name));
            }
            parts.push(recursive_part(node, &name)?);
            distinct |= !all;
        }
    }
    let mut node_iter = anchor_nodes.into_iter();
    let Some((first, _)) = node_iter.next() else {
        return Err(nonrecursive_first(&name));
    };
    let mut anchor_node = first;
    for (n, all) in node_iter {
        anchor_node = SetNode::Op(
            crate::plan::SetOp::Union,
            all,
            Box::new(anchor_node),
            Box::new(n),
        );
    }
    if parts.is_empty() {
        // WITH RECURSIVE over a CTE that does not name itself.
        let anchor = crate::plan::set_plan(
            anchor_node,
            q.order_by.as_ref(),
            q.limit_clause.as_ref(),
            params,
        )?;
        let mut columns = anchor.columns.clone();
        rename(&mut columns, &c.alias.columns)?;
        return Ok(CtePlan {
            id,
            name,
            anchor,
            recursive: Vec::new(),
            distinct: false,
            limit: None,
            offset: None,
            columns,
        });
    }
    let mut none = 0;
    let anchor = crate::plan::set_plan(anchor_node, None, None, &mut none)?;
    let mut columns = anchor.columns.clone();
    rename(&mut columns, &c.alias.columns)?;
    for p in &parts {
        if p.columns.len() != columns.len() {
            return Err(SqlError::new(
                1222,
                "21000",
                "The used SELECT statements have a different number of columns",
            ));
        }
    }
    if q.order_by.is_some() {
        return Err(SqlError::unsupported(
            "ORDER BY over UNION in recursive Common Table Expression",
        ));
    }
    let scope = Scope::default();
    let mut comp = Compiler::new(&scope);
    comp.next_param = *params;
    let (limit, offset) = crate::plan::limit_exprs(&mut comp, q.limit_clause.as_ref())?;
    *params = comp.next_param;
    Ok(CtePlan {
        id,
        name,
        anchor,
        recursive: parts,
        distinct,
        limit,
        offset,
        columns,
    })
}

fn requires_union(name: &str) -> SqlError {
    err_name(
        3573,
        "HY000",
        format!("Recursive Common Table Expression '{name}' should contain a UNION"),
    )
}

fn nonrecursive_first(name: &str) -> SqlError {
    err_name(
        3574,
        "HY000",
        format!(
            "Recursive Common Table Expression '{name}' should have one or more non-recursive \
             query blocks followed by one or more recursive ones"
        ),
    )
}

/// Checks a recursive part as MySQL does.
fn recursive_part(node: SetNode, name: &str) -> SqlResult<SelectPlan> {
    let SetNode::Plan(p) = node else {
        return Err(SqlError::unsupported(
            "a set operation as a recursive query block of a Common Table Expression",
        ));
    };
    if p.grouped() || !p.windows.is_empty() {
        return Err(err_name(
            3575,
            "HY000",
            format!(
                "Recursive Common Table Expression '{name}' can contain neither aggregation nor \
                 window functions in recursive query block"
            ),
        ));
    }
    if !p.order.is_empty() || p.limit.is_some() || p.offset.is_some() || p.distinct {
        return Err(SqlError::unsupported(
            "ORDER BY / LIMIT / SELECT DISTINCT in recursive query block of Common Table \
             Expression",
        ));
    }
    if work_outer_joined(&p, false) {
        return Err(err_name(
            3576,
            "HY000",
            format!(
                "In recursive query block of Recursive Common Table Expression '{name}', \
                 the recursive table must neither be in the right argument of a LEFT JOIN, \
                 nor be forced to be non-first with join order hints"
            ),
        ));
    }
    Ok(*p)
}

/// Whether the recursive table is read on the inner side of a LEFT JOIN
/// of `p` (`under_left`: `p` itself is on one): directly, or inside a
/// parenthesised join that is (`a LEFT JOIN (r JOIN b ON x) ON y`) or
/// that holds such a join.
fn work_outer_joined(p: &SelectPlan, under_left: bool) -> bool {
    p.sources.iter().any(|src| match src {
        Source::Derived {
            cte: Some(CteSource::Work(_)),
            left,
            ..
        } => under_left || *left,
        Source::Derived {
            plan: Some(nest),
            left,
            ..
        } => work_outer_joined(nest, under_left || *left),
        _ => false,
    })
}

/// Makes the anchor's column names known to the recursive parts.
pub(crate) fn set_columns(s: &StmtCx, id: u32, names: Vec<String>) {
    let mut cx = s.cx.lock();
    if let Some(State::Recursing { columns, .. }) = cx
        .ctes
        .iter_mut()
        .rev()
        .map(|e| &mut e.state)
        .find(|st| matches!(st, State::Recursing { id: i, .. } if *i == id))
    {
        *columns = Some(names);
    }
}

/// Scope columns of a CTE reference named `alias`.
pub(crate) fn scope_columns(alias: &str, names: &[String]) -> Vec<ScopeColumn> {
    names
        .iter()
        .map(|n| ScopeColumn {
            table: alias.to_string(),
            name: n.clone(),
            ty: None,
            origin: None,
        })
        .collect()
}

/// The most bytes of materialised rows one CTE may hold.
fn memory_cap(s: &StmtCx) -> usize {
    let get = |n: &str| {
        crate::vars::get(s, n)
            .ok()
            .and_then(|v| crate::expr::to_i64(&v))
            .unwrap_or(16 << 20)
            .max(1024) as u64
    };
    get("tmp_table_size").min(get("max_heap_table_size")) as usize
}

fn table_full(name: &str) -> SqlError {
    SqlError::new(1114, "HY000", format!("The table '{name}' is full"))
}

/// Runs `p` (its subqueries first, when it has any) and collects its rows.
fn run_rows(
    s: &StmtCx,
    rd: &mut Reader,
    p: &SelectPlan,
    out: &mut Vec<Vec<Value>>,
) -> SqlResult<()> {
    let mut sub = Scratch::default();
    if p.subqueries {
        let mut q = p.clone();
        crate::exec::resolve_select(s, rd, &mut q)?;
        select_rows(s, rd, &q, None, &mut sub, &mut |r| {
            out.push(r.to_vec());
            true
        })
    } else {
        select_rows(s, rd, p, None, &mut sub, &mut |r| {
            out.push(r.to_vec());
            true
        })
    }
}

/// The rows of CTE `c` in this execution: materialised at the first
/// use, shared after.
pub(crate) fn rows(s: &StmtCx, rd: &mut Reader, c: &CtePlan) -> SqlResult<Arc<Vec<Vec<Value>>>> {
    if let Some(r) = crate::exec::find(&rd.ctes, c.id) {
        return Ok(r);
    }
    let cap = memory_cap(s);
    let mut bytes = 0usize;
    let mut anchor = Vec::new();
    run_rows(s, rd, &c.anchor, &mut anchor)?;
    let mut all: Vec<Vec<Value>> = Vec::with_capacity(anchor.len());
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut add = |all: &mut Vec<Vec<Value>>, row: Vec<Value>| -> SqlResult<()> {
        if c.distinct && !seen.insert(row_key(&row)) {
            return Ok(());
        }
        bytes += crate::spill::row_bytes(&row);
        if bytes > cap {
            return Err(table_full(&c.name));
        }
        all.push(row);
        Ok(())
    };
    for row in anchor {
        add(&mut all, row)?;
    }
    if !c.recursive.is_empty() {
        let limit = crate::exec::count_of(&c.limit, s)?;
        let offset = crate::exec::count_of(&c.offset, s)?.unwrap_or(0);
        let want = limit.map(|l| l.saturating_add(offset));
        // Subqueries of the recursive parts are run once.
        let mut parts = Vec::with_capacity(c.recursive.len());
        for p in &c.recursive {
            let mut q = p.clone();
            if q.subqueries {
                crate::exec::resolve_select(s, rd, &mut q)?;
            }
            parts.push(q);
        }
        let max = crate::vars::get(s, "cte_max_recursion_depth")
            .ok()
            .and_then(|v| crate::expr::to_i64(&v))
            .unwrap_or(1000)
            .max(0) as u64;
        let mut start = 0usize;
        let mut iterations = 0u64;
        while start < all.len() && want.is_none_or(|w| (all.len() as u64) < w) {
            iterations += 1;
            if iterations > max {
                crate::exec::remove(&mut rd.work, c.id);
                return Err(SqlError::new(
                    3636,
                    "HY000",
                    format!(
                        "Recursive query aborted after {iterations} iterations. Try increasing \
                         @@cte_max_recursion_depth to a larger value."
                    ),
                ));
            }
            s.check_interrupt()?;
            let work: Vec<Vec<Value>> = all.get(start..).unwrap_or_default().to_vec();
            crate::exec::remove(&mut rd.work, c.id);
            rd.work.push((c.id, Arc::new(work)));
            let end = all.len();
            let mut new = Vec::new();
            for p in &parts {
                if let Err(e) = run_rows(s, rd, p, &mut new) {
                    crate::exec::remove(&mut rd.work, c.id);
                    return Err(e);
                }
            }
            for row in new {
                if let Err(e) = add(&mut all, row) {
                    crate::exec::remove(&mut rd.work, c.id);
                    return Err(e);
                }
            }
            start = end;
        }
        crate::exec::remove(&mut rd.work, c.id);
        if limit.is_some() || offset > 0 {
            let take = limit.unwrap_or(u64::MAX);
            all = all
                .into_iter()
                .skip(usize::try_from(offset).unwrap_or(usize::MAX))
                .take(usize::try_from(take).unwrap_or(usize::MAX))
                .collect();
        }
    }
    // Kept to the statement's end, and counted against the session's
    // memory until then.
    // (`bytes`: what the rows took as they were added, before LIMIT.)
    s.mem.hold(bytes as u64)?;
    rd.held = rd.held.saturating_add(bytes as u64);
    s.info.count_tmp_table();
    let r = Arc::new(all);
    rd.ctes.push((c.id, r.clone()));
    Ok(r)
}
