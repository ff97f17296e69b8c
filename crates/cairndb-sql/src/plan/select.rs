//! Binding a query: FROM items resolved into sources with their row
//! slots (tables, views, derived tables, CTEs, `information_schema`),
//! joins and their ON/USING conditions, the select list, WHERE, GROUP
//! BY, HAVING, window clauses, ORDER BY and LIMIT compiled against the
//! scope, set operations (UNION, INTERSECT, EXCEPT) and their column
//! types; then the WHERE pushed down to the joins, the join order, the
//! access paths and the hash joins chosen.
//!
//! Pure planning: reads the catalog snapshot in the statement context,
//! no locks, no I/O.

use super::*;

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
        waits: false,
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
pub(super) struct Planner<'s> {
    pub(super) s: &'s StmtCx,
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
pub(super) fn compile_select(
    s: &StmtCx,
    sel: &ast::Select,
    order_by: Option<&ast::OrderBy>,
    limit_clause: Option<&ast::LimitClause>,
    locks: &[ast::LockClause],
    params: &mut usize,
    outer: &[&Scope],
) -> SqlResult<SelectPlan> {
    select_or_nest(s, sel, order_by, limit_clause, locks, params, outer, None)
}

/// What a parenthesised join read as its own query (see [`compile_nest`])
/// gives the query around it: its tables' slots as they are in its own
/// scope (aliases, names, types, origins) and its `*` order.
#[derive(Default)]
struct Nest {
    cols: Vec<ScopeColumn>,
    types: Vec<Option<ColumnType>>,
    star: Vec<usize>,
    /// Its USING / NATURAL columns reachable only qualified.
    merged: Vec<usize>,
    /// Its tables read under column grants only (first slot, database,
    /// table): the query around it checks the columns it reads of them.
    checks: Vec<(usize, String, Arc<TableDef>)>,
}

/// A parenthesised join that is not spliced into the joins around it
/// (`a LEFT JOIN (b JOIN c ON x) ON y`, or the joins before a `RIGHT
/// JOIN` that is not the first join): a query of its own over just its
/// tables, with its own join order and access paths, whose rows are
/// every slot of its tables. The query around it reads it as a derived
/// table whose slots keep their tables' names, so `b.col` and `*` see
/// through it. Its ON conditions see only its own tables (and the
/// enclosing queries'), as MySQL's do.
fn compile_nest(
    s: &StmtCx,
    twj: &ast::TableWithJoins,
    locks: &[ast::LockClause],
    params: &mut usize,
    outer: &[&Scope],
    out: &mut Nest,
) -> SqlResult<SelectPlan> {
    let sel = ast::Select {
        select_token: ast::helpers::attached_token::AttachedToken::empty(),
        distinct: None,
        top: None,
        top_before_distinct: false,
        projection: Vec::new(),
        exclude: None,
        into: None,
        from: vec![twj.clone()],
        lateral_views: Vec::new(),
        prewhere: None,
        selection: None,
        group_by: ast::GroupByExpr::Expressions(Vec::new(), Vec::new()),
        cluster_by: Vec::new(),
        distribute_by: Vec::new(),
        sort_by: Vec::new(),
        having: None,
        named_window: Vec::new(),
        qualify: None,
        window_before_qualify: false,
        value_table_mode: None,
        connect_by: None,
        flavor: ast::SelectFlavor::Standard,
    };
    select_or_nest(s, &sel, None, None, locks, params, outer, Some(out))
}

/// [`compile_select`], or with `nest` the query of a parenthesised join:
/// its select list is then every slot, and its scope is handed out.
#[allow(clippy::too_many_arguments)]
fn select_or_nest(
    s: &StmtCx,
    sel: &ast::Select,
    order_by: Option<&ast::OrderBy>,
    limit_clause: Option<&ast::LimitClause>,
    locks: &[ast::LockClause],
    params: &mut usize,
    outer: &[&Scope],
    mut nest: Option<&mut Nest>,
) -> SqlResult<SelectPlan> {
    // A parenthesised join is read whole, ahead of the join around it:
    // under FOR UPDATE / FOR SHARE that would lock every row it reads.
    if nest.is_none() && !locks.is_empty() && from_needs_nest(&sel.from) {
        return Err(SqlError::unsupported(
            "a parenthesised join or a RIGHT JOIN after another join in a locking read",
        ));
    }
    if nest.is_none() && sel.from.iter().map(join_tables).sum::<usize>() > MAX_JOIN_TABLES {
        return Err(SqlError::new(
            1116,
            "HY000",
            format!("Too many tables; CairnDB can only use {MAX_JOIN_TABLES} tables in a join"),
        ));
    }
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
        /// The number of the first parameter of `on`.
        param: usize,
    }
    /// Reserves the numbers of an ON condition's parameters.
    fn reserve(params: &mut usize, on: &Option<Cow<'_, ast::Expr>>) -> usize {
        let first = *params;
        if let Some(e) = on {
            *params += count_placeholders(e.as_ref());
        }
        first
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
    // The `*` order of the parenthesised join `add_factor` last read.
    let nest_star: std::cell::RefCell<Option<Vec<usize>>> = Default::default();
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
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => {
                let mut n = Nest::default();
                let plan = compile_nest(s, table_with_joins, locks, params, outer, &mut n)?;
                let offset = scope.cols.len();
                let width = n.cols.len();
                column_checks.borrow_mut().extend(
                    n.checks
                        .into_iter()
                        .map(|(at, db, def)| (at + offset, db, def)),
                );
                scope.cols.extend(n.cols);
                scope.merged.extend(n.merged.iter().map(|i| i + offset));
                types.extend(n.types);
                *nest_star.borrow_mut() = Some(n.star);
                Ok(PendingKind::Derived(
                    Some(Box::new(plan)),
                    Vec::new(),
                    offset,
                    width,
                ))
            }
            other => Err(SqlError::unsupported(other)),
        }
    };
    // `FROM DUAL` (alone) names no table.
    let from: &[ast::TableWithJoins] = match sel.from.as_slice() {
        [twj] if twj.joins.is_empty() && is_dual(&twj.relation) => &[],
        all => match normalize_from(all) {
            Some(f) => {
                flat_from = f;
                &flat_from
            }
            None => all,
        },
    };
    // Parameters are numbered in the text's order, but the select list
    // (first in the text) is compiled after FROM, and the ON conditions
    // after the select list: each gets its numbers reserved here.
    let first_param = *params;
    *params += sel.projection.iter().map(count_placeholders).sum::<usize>();
    // Aliases this FROM has named, with the database of the table behind
    // each (MySQL: one per query block; the same table name from two
    // databases is allowed).
    let mut aliases: Vec<(String, Option<String>)> = Vec::new();
    let mut unique_aliases = |scope: &Scope, from: usize| -> SqlResult<()> {
        let known = aliases.len();
        for sc in scope.cols.iter().skip(from) {
            let key = (
                sc.table.clone(),
                sc.origin.as_ref().map(|o| o.schema.clone()),
            );
            if aliases.get(known..).is_some_and(|new| new.contains(&key)) {
                continue;
            }
            if aliases.contains(&key) {
                return Err(SqlError::new(
                    1066,
                    "42000",
                    format!("Not unique table/alias: '{}'", sc.table),
                ));
            }
            aliases.push(key);
        }
        Ok(())
    };
    // Slots in the order `*` lists them: FROM order, except that a USING
    // or NATURAL join lists its common columns first, once.
    let mut star: Vec<usize> = Vec::new();
    // `a STRAIGHT_JOIN b`: read in FROM order.
    let mut straight = false;
    // The `*` order of the slots from `lo` on that the last FROM item
    // added: a parenthesised join's own, else slot order.
    let item_star = |scope: &Scope, lo: usize| -> Vec<usize> {
        match nest_star.borrow_mut().take() {
            Some(st) => st.into_iter().map(|i| i + lo).collect(),
            None => (lo..scope.cols.len()).collect(),
        }
    };
    for twj in from {
        // This item's slots in `*` order (a join's USING list looks in it).
        let mut tw_star: Vec<usize>;
        let mut joins = twj.joins.as_slice();
        let lo = scope.cols.len();
        match joins.first().map(|j| &j.join_operator) {
            Some(ast::JoinOperator::Right(c) | ast::JoinOperator::RightOuter(c)) => {
                // `a RIGHT JOIN b ON ...` is read as `b LEFT JOIN a ON ...`
                // and listed as a, b. `a`'s parameters come first.
                let j = &joins[0];
                let a_first = *params;
                *params += count_placeholders(&twj.relation);
                let kb = add_factor(&j.relation, false, None, &mut scope, &mut types, params)?;
                let b = item_star(&scope, lo);
                unique_aliases(&scope, lo)?;
                let mid = scope.cols.len();
                let after_b = std::mem::replace(params, a_first);
                let ka = add_factor(&twj.relation, true, None, &mut scope, &mut types, params)?;
                *params = after_b;
                let a = item_star(&scope, mid);
                unique_aliases(&scope, mid)?;
                tw_star = a.clone();
                let on = join_condition(c, &mut scope, &mut tw_star, &a, &b, true)?;
                pending.push(Pending {
                    kind: kb,
                    left: false,
                    on: None,
                    param: 0,
                });
                pending.push(Pending {
                    kind: ka,
                    left: true,
                    param: reserve(params, &on),
                    on,
                });
                joins = &joins[1..];
            }
            _ => {
                let k = add_factor(&twj.relation, false, None, &mut scope, &mut types, params)?;
                tw_star = item_star(&scope, lo);
                unique_aliases(&scope, lo)?;
                pending.push(Pending {
                    kind: k,
                    left: false,
                    on: None,
                    param: 0,
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
                // `normalize_from` made every RIGHT JOIN the first join
                // of its item.
                ast::JoinOperator::Right(_) | ast::JoinOperator::RightOuter(_) => {
                    return Err(SqlError::internal("RIGHT JOIN after another join"))
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
            let right = item_star(&scope, before);
            unique_aliases(&scope, before)?;
            let prev = tw_star.clone();
            let on = join_condition(c, &mut scope, &mut tw_star, &prev, &right, false)?;
            pending.push(Pending {
                kind: k,
                left,
                param: reserve(params, &on),
                on,
            });
        }
        star.extend(tw_star);
    }
    let params_after_from = *params;
    // The tables an outer join may give NULLs for: their columns are not
    // NOT NULL in the result (as MySQL flags them).
    for p in pending.iter().filter(|p| p.left) {
        let (offset, width) = match &p.kind {
            PendingKind::Table(t) => (t.offset, t.def.columns.len()),
            PendingKind::Derived(_, _, offset, width) | PendingKind::Cte(_, offset, width) => {
                (*offset, *width)
            }
        };
        for sc in scope.cols.iter_mut().skip(offset).take(width) {
            if let Some(o) = sc.origin.as_mut() {
                o.not_null = false;
            }
        }
    }

    // Projection (first in the text).
    let planner = Planner { s };
    let mut c = Compiler::new(&scope);
    c.allow_agg = true;
    c.allow_win = true;
    c.named_windows = &sel.named_window;
    c.next_param = first_param;
    c.sub = Some(&planner);
    c.outer = outer.to_vec();
    let mut proj = Vec::new();
    let mut columns = Vec::new();
    if let Some(n) = nest.as_mut() {
        // A parenthesised join's query: every slot, as the scope has it.
        for (i, sc) in scope.cols.iter().enumerate() {
            proj.push(Expr::Column(i));
            columns.push(column_info_for_slot(sc, &sc.name));
        }
        n.cols = scope.cols.clone();
        n.types = types.clone();
        n.star = star.clone();
        n.merged = scope.merged.clone();
    }
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
            Some(e) => {
                c.next_param = p.param;
                Some(c.compile(e)?)
            }
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
    c.next_param = params_after_from;
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
    // A parenthesised join's own select list is every slot: the columns
    // the query around it reads are checked there instead.
    let checked_proj: &[Expr] = match nest.as_mut() {
        Some(n) => {
            n.checks = checks.clone();
            &[]
        }
        None => &proj,
    };
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
            &[checked_proj, &group, &win_exprs],
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
            let rows: Vec<Option<u64>> = prefix
                .iter()
                .map(|src| match src {
                    Source::Table { t, .. } => s.db.stats.get(t.def.primary.id).map(|st| st.rows),
                    Source::Derived { .. } => None,
                })
                .collect();
            joinorder::reorder(prefix, &mut filter, &rows);
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
        waits: c.waits,
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
/// to right.
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

/// How many tables (views, derived tables) a FROM item joins.
fn join_tables(t: &ast::TableWithJoins) -> usize {
    let of = |f: &ast::TableFactor| match f {
        ast::TableFactor::NestedJoin {
            table_with_joins, ..
        } => join_tables(table_with_joins),
        _ => 1,
    };
    of(&t.relation) + t.joins.iter().map(|j| of(&j.relation)).sum::<usize>()
}

/// An inner join's ON condition (None for none), or None when `op` is
/// not an inner join with ON or no condition.
fn inner_on(op: &ast::JoinOperator) -> Option<Option<&ast::Expr>> {
    match op {
        ast::JoinOperator::Join(c)
        | ast::JoinOperator::Inner(c)
        | ast::JoinOperator::CrossJoin(c) => match c {
            ast::JoinConstraint::On(e) => Some(Some(e)),
            ast::JoinConstraint::None => Some(None),
            _ => None,
        },
        _ => None,
    }
}

/// `j` as the joins it is when it inner-joins a parenthesised join of
/// inner joins: `JOIN (b JOIN c ON x) ON y` is `JOIN b JOIN c ON x AND
/// y` (inner joins associate; the conditions keep their text order).
/// None when `j` is not that.
fn splice_inner(j: &ast::Join) -> Option<Vec<ast::Join>> {
    let on = inner_on(&j.join_operator)?;
    let ast::TableFactor::NestedJoin {
        table_with_joins,
        alias: None,
    } = &j.relation
    else {
        return None;
    };
    // Inner joins only, of tables, derived tables and leading nests of
    // the same: decided before anything is copied.
    let mut t: &ast::TableWithJoins = table_with_joins;
    loop {
        if t.joins.iter().any(|x| {
            inner_on(&x.join_operator).is_none()
                || matches!(x.relation, ast::TableFactor::NestedJoin { .. })
        }) {
            return None;
        }
        match &t.relation {
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => t = table_with_joins,
            ast::TableFactor::NestedJoin { .. } => return None,
            _ => break,
        }
    }
    let inner = flatten_join(table_with_joins);
    let mut out = vec![ast::Join {
        relation: inner.relation,
        global: false,
        join_operator: ast::JoinOperator::Inner(ast::JoinConstraint::None),
    }];
    out.extend(inner.joins);
    if let (Some(e), Some(last)) = (on, out.last_mut()) {
        let cond = match inner_on(&last.join_operator).flatten() {
            Some(x) => ast::Expr::BinaryOp {
                left: Box::new(x.clone()),
                op: ast::BinaryOperator::And,
                right: Box::new(e.clone()),
            },
            None => e.clone(),
        };
        last.join_operator = ast::JoinOperator::Inner(ast::JoinConstraint::On(cond));
    }
    Some(out)
}

fn is_right(j: &ast::Join) -> bool {
    matches!(
        j.join_operator,
        ast::JoinOperator::Right(_) | ast::JoinOperator::RightOuter(_)
    )
}

/// One FROM item as the binder reads it: a leading parenthesised join
/// spliced in ([`flatten_join`]), parenthesised inner joins under an
/// inner join spliced in ([`splice_inner`]), and the joins before a
/// `RIGHT JOIN` that is not the item's first join made a parenthesised
/// join (`a JOIN b ON x RIGHT JOIN c ON y` is `(a JOIN b ON x) RIGHT
/// JOIN c ON y`, joins being left to right), so that a RIGHT JOIN is
/// always an item's first join. Other parenthesised joins stay, read by
/// [`compile_nest`].
fn normalize_item(t: &ast::TableWithJoins) -> ast::TableWithJoins {
    let mut flat = flatten_join(t);
    let mut joins = Vec::with_capacity(flat.joins.len());
    for j in std::mem::take(&mut flat.joins) {
        match splice_inner(&j) {
            Some(v) => joins.extend(v),
            None => joins.push(j),
        }
    }
    flat.joins = joins;
    if let Some(k) = flat.joins.iter().rposition(is_right).filter(|&k| k > 0) {
        let rest = flat.joins.split_off(k);
        let before = ast::TableWithJoins {
            relation: flat.relation,
            joins: flat.joins,
        };
        flat = ast::TableWithJoins {
            relation: ast::TableFactor::NestedJoin {
                table_with_joins: Box::new(before),
                alias: None,
            },
            joins: rest,
        };
    }
    flat
}

/// Whether a FROM item holds a parenthesised join at its top level.
fn holds_nest(t: &ast::TableWithJoins) -> bool {
    let nested = |f: &ast::TableFactor| matches!(f, ast::TableFactor::NestedJoin { .. });
    nested(&t.relation) || t.joins.iter().any(|j| nested(&j.relation))
}

/// Whether the FROM items hold a parenthesised join that
/// [`normalize_item`] leaves to [`compile_nest`] (read whole, as a
/// derived table).
pub(super) fn from_needs_nest(all: &[ast::TableWithJoins]) -> bool {
    normalize_from(all).is_some_and(|f| f.iter().any(holds_nest))
}

/// The FROM items as [`normalize_item`] makes them, or None when they
/// are that already.
fn normalize_from(all: &[ast::TableWithJoins]) -> Option<Vec<ast::TableWithJoins>> {
    let needs = |t: &ast::TableWithJoins| holds_nest(t) || t.joins.iter().skip(1).any(is_right);
    if all.iter().any(needs) {
        Some(all.iter().map(normalize_item).collect())
    } else {
        None
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
