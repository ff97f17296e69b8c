//! Write plans: INSERT (VALUES, SET, SELECT, ON DUPLICATE KEY UPDATE),
//! REPLACE, UPDATE and DELETE on one table or several, compiled against
//! the catalog into plans whose row source is a compiled SELECT.

use super::*;

pub(super) fn compile_insert(
    s: &StmtCx,
    ins: &ast::Insert,
    params: &mut usize,
) -> SqlResult<InsertPlan> {
    let name = match &ins.table {
        ast::TableObject::TableName(n) => n,
        other => return Err(SqlError::unsupported(other)),
    };
    crate::view::check_target(s, name, "INSERT")?;
    // REPLACE deletes the rows it replaces; ON DUPLICATE KEY UPDATE
    // updates them.
    let mut need = crate::acl::INSERT;
    if ins.replace_into {
        need |= crate::acl::DELETE;
    }
    if ins.on.is_some() {
        need |= crate::acl::UPDATE;
    }
    // INSERT, and ON DUPLICATE KEY UPDATE's UPDATE, may be granted on
    // columns: then checked on the columns the statement writes, below.
    let (db, def, by_column) = resolve_checked(s, name, need, true)?;
    if by_column && ins.replace_into {
        crate::acl::check_table(s, &db, &def.name, crate::acl::DELETE)?;
    }
    let alias = def.name.to_lowercase();
    let cols: Vec<usize> = if ins.columns.is_empty() {
        (0..def.columns.len()).collect()
    } else {
        ins.columns
            .iter()
            .map(|c| {
                def.column(&c.value)
                    .ok_or_else(|| SqlError::unknown_column(&c.value, "field list"))
            })
            .collect::<SqlResult<_>>()?
    };
    let t = TableRef {
        db,
        def: def.clone(),
        alias,
        offset: 0,
    };
    let empty = Scope::default();
    let mut rows = Vec::new();
    let mut select = None;
    let planner = Planner { s };
    let mut c = Compiler::new(&empty);
    c.next_param = *params;
    // Subqueries in the values run once per execution, before any row is
    // written.
    c.sub = Some(&planner);
    if !ins.assignments.is_empty() {
        // INSERT ... SET a = 1, b = 2
        let mut row = vec![None; def.columns.len()];
        let mut set = Vec::new();
        for a in &ins.assignments {
            let col = assignment_column(&def, &a.target)?;
            row[col] = Some(c.compile(&a.value)?);
            set.push(col);
        }
        *params = c.next_param;
        if by_column {
            check_column_list(s, &t.db, &def, crate::acl::INSERT, &set)?;
        }
        let rows = vec![row];
        let subqueries = values_subqueries(&c, &t, &rows)?;
        return Ok(InsertPlan {
            t,
            cols: (0..def.columns.len()).collect(),
            rows,
            select: None,
            replace: ins.replace_into,
            ignore: ins.ignore,
            on_dup: Vec::new(),
            subqueries,
        });
    }
    match ins.source.as_deref() {
        Some(q) => match q.body.as_ref() {
            ast::SetExpr::Values(v) => {
                // `VALUES ()` without a column list is a row of defaults;
                // every row then has to be empty.
                let empty_rows =
                    ins.columns.is_empty() && v.rows.first().is_some_and(|r| r.is_empty());
                for (n, r) in v.rows.iter().enumerate() {
                    if empty_rows && r.is_empty() {
                        rows.push(vec![None; cols.len()]);
                        continue;
                    }
                    if empty_rows || r.len() != cols.len() {
                        return Err(SqlError::new(
                            1136,
                            "21S01",
                            format!("Column count doesn't match value count at row {}", n + 1),
                        ));
                    }
                    let mut row = Vec::with_capacity(r.len());
                    for e in r {
                        row.push(match e {
                            ast::Expr::Identifier(id)
                                if id.quote_style.is_none()
                                    && id.value.eq_ignore_ascii_case("DEFAULT") =>
                            {
                                None
                            }
                            other => Some(c.compile(other)?),
                        });
                    }
                    rows.push(row);
                }
                *params = c.next_param;
            }
            _ => {
                let mut p = c.next_param;
                let sp = compile_query(s, q, &mut p, &[])?;
                if sp.columns.len() != cols.len() {
                    return Err(SqlError::new(
                        1136,
                        "21S01",
                        "Column count doesn't match value count at row 1",
                    ));
                }
                select = Some(Box::new(sp));
                c.next_param = p;
                *params = p;
            }
        },
        None => return Err(SqlError::syntax("INSERT without values")),
    }
    // ON DUPLICATE KEY UPDATE: expressions over the existing row (slots
    // 0..n) and VALUES(col) (slots n..2n, the row that was to be inserted).
    let mut on_dup = Vec::new();
    let mut dup_subqueries = false;
    if let Some(ast::OnInsert::DuplicateKeyUpdate(assigns)) = &ins.on {
        let mut scope = Scope::default();
        let mut types = Vec::new();
        add_table_scope(
            &mut scope,
            &mut types,
            &t.db,
            &def,
            &def.name.to_lowercase(),
        );
        for (i, col) in def.columns.iter().enumerate() {
            scope.cols.push(ScopeColumn {
                table: "__values".into(),
                name: format!("__values_{i}"),
                ty: Some(col.ty),
                origin: None,
            });
        }
        let mut c2 = Compiler::new(&scope);
        c2.next_param = *params;
        c2.sub = Some(&planner);
        for a in assigns {
            let col = assignment_column(&def, &a.target)?;
            let v = rewrite_values_fn(&a.value, &def)?;
            on_dup.push((col, c2.compile(&v)?));
        }
        *params = c2.next_param;
        if c2.correlated_subqueries {
            return Err(SqlError::unsupported(
                "a subquery that reads the row in ON DUPLICATE KEY UPDATE",
            ));
        }
        if c2.subqueries > 0 {
            let all: Vec<&Expr> = on_dup.iter().map(|(_, e)| e).collect();
            table_in_subquery(&t, &all)?;
            dup_subqueries = true;
        }
    } else if ins.on.is_some() {
        return Err(SqlError::unsupported("ON CONFLICT"));
    }
    if by_column {
        check_column_list(s, &t.db, &def, crate::acl::INSERT, &cols)?;
        if ins.on.is_some() {
            let updated: Vec<usize> = on_dup.iter().map(|(c, _)| *c).collect();
            check_column_list(s, &t.db, &def, crate::acl::UPDATE, &updated)?;
        }
    }
    let subqueries = values_subqueries(&c, &t, &rows)? || dup_subqueries;
    Ok(InsertPlan {
        t,
        cols,
        rows,
        select,
        replace: ins.replace_into,
        ignore: ins.ignore,
        on_dup,
        subqueries,
    })
}

/// Whether the value rows compiled by `c` hold subqueries; MySQL's 1093
/// when one reads the table inserted into (its rows would depend on the
/// order the statement's rows are written in).
fn values_subqueries(c: &Compiler, t: &TableRef, rows: &[Vec<Option<Expr>>]) -> SqlResult<bool> {
    if c.subqueries == 0 {
        return Ok(false);
    }
    let all: Vec<&Expr> = rows.iter().flatten().flatten().collect();
    table_in_subquery(t, &all)?;
    Ok(true)
}

/// Replaces `VALUES(col)` in an ON DUPLICATE KEY UPDATE expression by a
/// marker column `__values_<i>`, which names slot `n + i` (the row that
/// was to be inserted, after the existing row's `n` slots).
fn rewrite_values_fn(e: &ast::Expr, def: &TableDef) -> SqlResult<ast::Expr> {
    let mut marks = Vec::new();
    let text = e.to_string();
    // Cheap textual rewrite: VALUES(x) -> x with a recorded position.
    let mut out = String::new();
    let up = text.to_ascii_uppercase();
    let mut i = 0;
    while let Some(p) = up.get(i..).and_then(|r| r.find("VALUES(")) {
        let start = i + p;
        out.push_str(text.get(i..start).unwrap_or(""));
        let rest = text.get(start + 7..).unwrap_or("");
        let end = rest
            .find(')')
            .ok_or_else(|| SqlError::syntax("VALUES( without )"))?;
        let col = rest.get(..end).unwrap_or("").trim().trim_matches('`');
        let idx = def
            .column(col)
            .ok_or_else(|| SqlError::unknown_column(col, "field list"))?;
        marks.push(idx);
        out.push_str(&format!("`__values_{idx}`"));
        i = start + 7 + end + 1;
    }
    out.push_str(text.get(i..).unwrap_or(""));
    if marks.is_empty() {
        return Ok(e.clone());
    }
    crate::parse::statement::parser(&out)
        .and_then(|mut p| p.parse_expr())
        .map_err(crate::parse::statement::parse_error)
}

/// [`crate::acl::check_columns`] of `need` (INSERT, UPDATE or SELECT) on
/// the columns at positions `cols` of `def`.
fn check_column_list(
    s: &StmtCx,
    db: &str,
    def: &TableDef,
    need: u32,
    cols: &[usize],
) -> SqlResult<()> {
    let names = cols
        .iter()
        .filter_map(|&i| def.columns.get(i).map(|c| c.name.as_str()));
    crate::acl::check_columns(s, db, &def.name, need, names)
}

fn assignment_column(def: &TableDef, target: &ast::AssignmentTarget) -> SqlResult<usize> {
    match target {
        ast::AssignmentTarget::ColumnName(n) => {
            let parts = object_parts(n);
            let name = parts.last().cloned().unwrap_or_default();
            def.column(&name)
                .ok_or_else(|| SqlError::unknown_column(&name, "field list"))
        }
        ast::AssignmentTarget::Tuple(_) => Err(SqlError::unsupported("tuple assignment")),
    }
}

/// The scan of an UPDATE's or DELETE's table, after checking `need` on it
/// (`by_column`: a table-level denial may be left to column grants, which
/// the caller checks; the flag says it was).
fn single_table_scan(
    s: &StmtCx,
    name: &ast::ObjectName,
    alias: Option<&ast::TableAlias>,
    need: u32,
    verb: &str,
    by_column: bool,
) -> SqlResult<(SelectPlan, Scope, bool)> {
    crate::view::check_target(s, name, verb)?;
    let (db, def, deferred) = resolve_checked(s, name, need, by_column)?;
    let alias = alias.map_or(def.name.to_lowercase(), |a| a.name.value.to_lowercase());
    let mut scope = Scope::default();
    let mut types = Vec::new();
    add_table_scope(&mut scope, &mut types, &db, &def, &alias);
    let width = scope.cols.len();
    Ok((
        SelectPlan {
            sources: vec![Source::Table {
                t: TableRef {
                    db,
                    def,
                    alias,
                    offset: 0,
                },
                access: Access::Full,
                left: false,
                on: None,
            }],
            width,
            types,
            filter: None,
            proj: (0..width).map(Expr::Column).collect(),
            columns: Vec::new(),
            aggs: Vec::new(),
            group: Vec::new(),
            having: None,
            order: Vec::new(),
            order_by_index: false,
            distinct: false,
            limit: None,
            offset: None,
            lock: Some(true),
            subqueries: false,
            waits: false,
            outer_refs: Vec::new(),
            correlated: false,
            windows: Vec::new(),
            hash_joins: Vec::new(),
        },
        scope,
        deferred,
    ))
}

pub(super) fn compile_update(
    s: &StmtCx,
    table: &ast::TableWithJoins,
    assignments: &[ast::Assignment],
    selection: &Option<ast::Expr>,
    order: &[ast::OrderByExpr],
    limit: &Option<ast::Expr>,
    params: &mut usize,
) -> SqlResult<UpdatePlan> {
    let ast::TableFactor::Table { name, alias, .. } = &table.relation else {
        return compile_multi_update(s, table, assignments, selection, order, limit, params);
    };
    if !table.joins.is_empty() {
        return compile_multi_update(s, table, assignments, selection, order, limit, params);
    }
    // A WHERE or ORDER BY reads the table: SELECT too (MySQL asks it of
    // the columns read).
    let mut need = crate::acl::UPDATE;
    if selection.is_some() || !order.is_empty() {
        need |= crate::acl::SELECT;
    }
    let (mut scan, scope, by_column) =
        single_table_scan(s, name, alias.as_ref(), need, "UPDATE", true)?;
    let (db, def) = match &scan.sources[0] {
        Source::Table { t, .. } => (t.db.clone(), t.def.clone()),
        Source::Derived { .. } => return Err(SqlError::internal("update source")),
    };
    let planner = Planner { s };
    let mut c = Compiler::new(&scope);
    c.next_param = *params;
    c.sub = Some(&planner);
    let mut sets = Vec::new();
    for a in assignments {
        let col = assignment_column(&def, &a.target)?;
        sets.push((col, c.compile(&a.value)?));
    }
    if let Some(w) = selection {
        scan.filter = Some(c.compile(w)?);
    }
    for o in order {
        scan.order
            .push((c.compile(&o.expr)?, o.options.asc.unwrap_or(true)));
    }
    if let Some(l) = limit {
        scan.limit = Some(c.compile(l)?);
    }
    *params = c.next_param;
    scan.subqueries = c.subqueries > 0;
    scan.correlated = c.correlated_subqueries;
    if scan.subqueries {
        let mut all: Vec<&Expr> = sets.iter().map(|(_, e)| e).collect();
        all.extend(&scan.filter);
        all.extend(scan.order.iter().map(|(e, _)| e));
        target_in_subquery(&scan, &all)?;
    }
    if by_column {
        // UPDATE on the columns set; SELECT on those read where the
        // statement has a WHERE or ORDER BY (as the table-level check).
        let set: Vec<usize> = sets.iter().map(|(c, _)| *c).collect();
        check_column_list(s, &db, &def, crate::acl::UPDATE, &set)?;
        if need & crate::acl::SELECT != 0 {
            let mut read = Vec::new();
            for e in sets
                .iter()
                .map(|(_, e)| e)
                .chain(&scan.filter)
                .chain(scan.order.iter().map(|(e, _)| e))
            {
                slots(e, &mut read);
            }
            read.sort_unstable();
            read.dedup();
            check_column_list(s, &db, &def, crate::acl::SELECT, &read)?;
        }
    }
    choose_access_paths(&mut scan);
    Ok(UpdatePlan {
        scan,
        sets,
        multi: Vec::new(),
    })
}

pub(super) fn compile_delete(
    s: &StmtCx,
    d: &ast::Delete,
    params: &mut usize,
) -> SqlResult<DeletePlan> {
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
    };
    if from.len() != 1 || !from[0].joins.is_empty() || d.using.is_some() || !d.tables.is_empty() {
        return compile_multi_delete(s, d, params);
    }
    let ast::TableFactor::Table { name, alias, .. } = &from[0].relation else {
        return Err(SqlError::unsupported(&from[0].relation));
    };
    let mut need = crate::acl::DELETE;
    if d.selection.is_some() || !d.order_by.is_empty() {
        need |= crate::acl::SELECT;
    }
    let (mut scan, scope, _) = single_table_scan(s, name, alias.as_ref(), need, "DELETE", false)?;
    let planner = Planner { s };
    let mut c = Compiler::new(&scope);
    c.next_param = *params;
    c.sub = Some(&planner);
    if let Some(w) = &d.selection {
        scan.filter = Some(c.compile(w)?);
    }
    for o in &d.order_by {
        scan.order
            .push((c.compile(&o.expr)?, o.options.asc.unwrap_or(true)));
    }
    if let Some(l) = &d.limit {
        scan.limit = Some(c.compile(l)?);
    }
    *params = c.next_param;
    scan.subqueries = c.subqueries > 0;
    scan.correlated = c.correlated_subqueries;
    if scan.subqueries {
        let mut all: Vec<&Expr> = scan.filter.iter().collect();
        all.extend(scan.order.iter().map(|(e, _)| e));
        target_in_subquery(&scan, &all)?;
    }
    choose_access_paths(&mut scan);
    Ok(DeletePlan {
        scan,
        multi: Vec::new(),
    })
}

/// MySQL's 1093: a subquery of an UPDATE or DELETE may not read the
/// table being changed (except through a derived table, which is
/// materialised first).
fn target_in_subquery(scan: &SelectPlan, exprs: &[&Expr]) -> SqlResult<()> {
    let Some(Source::Table { t, .. }) = scan.sources.first() else {
        return Ok(());
    };
    table_in_subquery(t, exprs)
}

/// [`target_in_subquery`] for table `t`.
fn table_in_subquery(t: &TableRef, exprs: &[&Expr]) -> SqlResult<()> {
    fn reads(p: &SelectPlan, db: &str, name: &str) -> bool {
        fn node(n: &SetNode, db: &str, name: &str) -> bool {
            match n {
                SetNode::Plan(p) => reads(p, db, name),
                SetNode::Op(_, _, l, r) => node(l, db, name) || node(r, db, name),
            }
        }
        let direct = p.sources.iter().any(|src| match src {
            Source::Table { t, .. } => t.db == db && t.def.name.eq_ignore_ascii_case(name),
            Source::Derived { set: Some(n), .. } => node(n, db, name),
            Source::Derived { .. } => false,
        });
        let mut nested = false;
        let mut exprs: Vec<&Expr> = p.proj.iter().collect();
        exprs.extend(&p.filter);
        exprs.extend(&p.having);
        for src in &p.sources {
            if let Source::Table { on: Some(o), .. } | Source::Derived { on: Some(o), .. } = src {
                exprs.push(o);
            }
        }
        for e in exprs {
            crate::expr::each_subquery(e, &mut |sp| nested |= reads(sp, db, name));
        }
        direct || nested
    }
    let mut hit = false;
    for e in exprs {
        crate::expr::each_subquery(e, &mut |sp| hit |= reads(sp, &t.db, &t.def.name));
    }
    if hit {
        return Err(SqlError::new(
            1093,
            "HY000",
            format!(
                "You can't specify target table '{}' for update in FROM clause",
                t.alias
            ),
        ));
    }
    Ok(())
}

/// The error of a multi-table UPDATE or DELETE with ORDER BY or LIMIT
/// (MySQL allows neither there).
fn multi_usage(verb: &str, what: &str) -> SqlError {
    SqlError::new(
        1221,
        "HY000",
        format!("Incorrect usage of {verb} and {what}"),
    )
}

/// Compiles `SELECT <items> FROM <from> [WHERE <selection>]` as the
/// locking read of a multi-table UPDATE or DELETE. Going through the
/// text keeps one FROM compiler for every statement; the statement's
/// parameters keep their numbering because the items come first here
/// as in the SELECT, and the caller refuses the one order that differs.
fn multi_scan(
    s: &StmtCx,
    items: &[String],
    from: &[ast::TableWithJoins],
    selection: &Option<ast::Expr>,
    params: &mut usize,
) -> SqlResult<SelectPlan> {
    // Its rows are read latest and locked: a parenthesised join, read
    // whole ahead of the join, would lock every row it reads, and its
    // tables could not be targets.
    if super::select::from_needs_nest(from) {
        return Err(SqlError::unsupported(
            "a parenthesised join or a RIGHT JOIN after another join in a multi-table UPDATE or DELETE",
        ));
    }
    let mut text = String::from("SELECT ");
    text.push_str(&items.join(", "));
    text.push_str(" FROM ");
    let from: Vec<String> = from.iter().map(|t| t.to_string()).collect();
    text.push_str(&from.join(", "));
    if let Some(w) = selection {
        text.push_str(" WHERE ");
        text.push_str(&w.to_string());
    }
    let st = crate::parse::statement::parse_one(&text)?;
    let ast::Statement::Query(q) = st else {
        return Err(SqlError::internal("multi-table scan"));
    };
    let ast::SetExpr::Select(sel) = q.body.as_ref() else {
        return Err(SqlError::internal("multi-table scan"));
    };
    let mut plan = compile_select(s, sel, None, None, &[], params, &[])?;
    if plan.grouped() || !plan.windows.is_empty() {
        return Err(SqlError::new(
            1111,
            "HY000",
            "Invalid use of group function",
        ));
    }
    // Rows are read as an UPDATE reads them: the latest, locked.
    plan.lock = Some(true);
    Ok(plan)
}

/// The index in `targets` of the target reading FROM item `src`, added
/// when it is new: every column of its table appended to `plan`'s
/// output (the target's row).
fn target_of(plan: &mut SelectPlan, targets: &mut Vec<Target>, src: usize) -> SqlResult<usize> {
    let (t, outer) = match plan.sources.get(src) {
        Some(Source::Table { t, left, .. }) => (t.clone(), *left),
        _ => return Err(SqlError::internal("multi-table target")),
    };
    if let Some(i) = targets.iter().position(|tg| tg.t.offset == t.offset) {
        return Ok(i);
    }
    let at = plan.proj.len();
    for (i, c) in t.def.columns.iter().enumerate() {
        plan.proj.push(Expr::Column(t.offset + i));
        plan.columns.push(ColumnInfo::text(&c.name));
    }
    targets.push(Target {
        t,
        outer,
        at,
        sets: Vec::new(),
    });
    Ok(targets.len() - 1)
}

/// The FROM item a multi-table statement's target `parts` (`[db.]name`
/// as written) names: a table by its alias, or, with a database, by its
/// name. A view or derived table (`fixed`: their aliases) is not
/// updatable (1288).
fn find_target(
    plan: &SelectPlan,
    fixed: &[String],
    parts: &[String],
    verb: &str,
) -> SqlResult<Option<usize>> {
    let (db, name) = match parts {
        [t] => (None, t.to_lowercase()),
        [d, t] => (Some(d.as_str()), t.to_lowercase()),
        _ => return Ok(None),
    };
    for (i, src) in plan.sources.iter().enumerate() {
        if let Source::Table { t, .. } = src {
            let hit = match db {
                None => t.alias == name,
                Some(d) => t.db == d && t.def.name.to_lowercase() == name,
            };
            if hit {
                return Ok(Some(i));
            }
        }
    }
    if fixed.contains(&name) {
        return Err(SqlError::new(
            1288,
            "HY000",
            format!("The target table {name} of the {verb} is not updatable"),
        ));
    }
    Ok(None)
}

/// The aliases (lower-case) of the FROM items of `from` that are views or
/// derived tables: not targets of an UPDATE or DELETE.
fn fixed_items(s: &StmtCx, from: &[ast::TableWithJoins]) -> Vec<String> {
    let mut out = Vec::new();
    let mut visit = |f: &ast::TableFactor| match f {
        ast::TableFactor::Derived { alias: Some(a), .. } => out.push(a.name.value.to_lowercase()),
        ast::TableFactor::Table { name, alias, .. } if crate::view::find(s, name).is_some() => {
            let shown = object_parts(name).last().cloned().unwrap_or_default();
            out.push(alias_of(alias, &shown));
        }
        _ => {}
    };
    for t in from {
        visit(&t.relation);
        for j in &t.joins {
            visit(&j.relation);
        }
    }
    out
}

/// A multi-table UPDATE (`UPDATE t1 JOIN t2 ON ... SET t1.a = t2.b`, or
/// `UPDATE t1, t2 SET ...`): the join's rows read and locked, each
/// changed table's row updated once, with the values of the first
/// joined row that matched it.
fn compile_multi_update(
    s: &StmtCx,
    table: &ast::TableWithJoins,
    assignments: &[ast::Assignment],
    selection: &Option<ast::Expr>,
    order: &[ast::OrderByExpr],
    limit: &Option<ast::Expr>,
    params: &mut usize,
) -> SqlResult<UpdatePlan> {
    if !order.is_empty() {
        return Err(multi_usage("UPDATE", "ORDER BY"));
    }
    if limit.is_some() {
        return Err(multi_usage("UPDATE", "LIMIT"));
    }
    let set_params: usize = assignments
        .iter()
        .map(|a| count_placeholders(&a.value))
        .sum();
    if set_params > 0 && count_placeholders(table) > 0 {
        // The SET list is compiled before the join's ON conditions: their
        // parameters would be numbered out of the text's order.
        return Err(SqlError::unsupported(
            "parameters in both the joined tables and the SET list of a multi-table UPDATE",
        ));
    }
    let items: Vec<String> = assignments.iter().map(|a| a.value.to_string()).collect();
    let from = std::slice::from_ref(table);
    let fixed = fixed_items(s, from);
    let mut plan = multi_scan(s, &items, from, selection, params)?;
    let mut targets: Vec<Target> = Vec::new();
    for (slot, a) in assignments.iter().enumerate() {
        let ast::AssignmentTarget::ColumnName(n) = &a.target else {
            return Err(SqlError::unsupported("tuple assignment"));
        };
        let parts = object_parts(n);
        let Some((col, qual)) = parts.split_last() else {
            return Err(SqlError::syntax("empty column name"));
        };
        let shown = parts.join(".");
        let src = if qual.is_empty() {
            // Unqualified: the one table that has the column.
            let mut found = None;
            for (i, src) in plan.sources.iter().enumerate() {
                let has = match src {
                    Source::Table { t, .. } => t.def.column(col).is_some(),
                    Source::Derived { .. } => false,
                };
                if has {
                    if found.is_some() {
                        return Err(SqlError::new(
                            1052,
                            "23000",
                            format!("Column '{col}' in field list is ambiguous"),
                        ));
                    }
                    found = Some(i);
                }
            }
            found
        } else {
            find_target(&plan, &fixed, qual, "UPDATE")?
        };
        let Some(src) = src else {
            return Err(SqlError::unknown_column(&shown, "field list"));
        };
        let ti = target_of(&mut plan, &mut targets, src)?;
        let tg = &mut targets[ti];
        let c =
            tg.t.def
                .column(col)
                .ok_or_else(|| SqlError::unknown_column(&shown, "field list"))?;
        tg.sets.push((c, slot));
    }
    for tg in &targets {
        // UPDATE on the columns set (a column grant is enough, as in
        // MySQL); what is read was checked for SELECT when compiled.
        let cols: Vec<usize> = tg.sets.iter().map(|&(c, _)| c).collect();
        check_column_list(s, &tg.t.db, &tg.t.def, crate::acl::UPDATE, &cols)?;
        if plan.subqueries {
            check_multi_subqueries(&plan, &tg.t)?;
        }
    }
    Ok(UpdatePlan {
        scan: plan,
        sets: Vec::new(),
        multi: targets,
    })
}

/// MySQL's 1093 for each changed table of a multi-table statement: no
/// subquery of the statement may read it.
fn check_multi_subqueries(plan: &SelectPlan, t: &TableRef) -> SqlResult<()> {
    let mut all: Vec<&Expr> = plan.proj.iter().collect();
    all.extend(&plan.filter);
    for src in &plan.sources {
        if let Source::Table { on: Some(o), .. } | Source::Derived { on: Some(o), .. } = src {
            all.push(o);
        }
    }
    table_in_subquery(t, &all)
}

/// A multi-table DELETE: `DELETE t1, t2 FROM <join> WHERE ...` or
/// `DELETE FROM t1, t2 USING <join> WHERE ...`; each matched row of each
/// named table deleted once.
fn compile_multi_delete(s: &StmtCx, d: &ast::Delete, params: &mut usize) -> SqlResult<DeletePlan> {
    if !d.order_by.is_empty() {
        return Err(multi_usage("DELETE", "ORDER BY"));
    }
    if d.limit.is_some() {
        return Err(multi_usage("DELETE", "LIMIT"));
    }
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(f) | ast::FromTable::WithoutKeyword(f) => f,
    };
    // The tables deleted from, and the join read.
    let (names, join): (Vec<Vec<String>>, &[ast::TableWithJoins]) = match &d.using {
        Some(using) => {
            let mut names = Vec::new();
            for t in from {
                let ast::TableFactor::Table { name, .. } = &t.relation else {
                    return Err(SqlError::syntax("DELETE FROM ... USING names tables"));
                };
                if !t.joins.is_empty() {
                    return Err(SqlError::syntax("DELETE FROM ... USING names tables"));
                }
                names.push(object_parts(name));
            }
            (names, using)
        }
        None => (d.tables.iter().map(object_parts).collect(), from),
    };
    let fixed = fixed_items(s, join);
    let mut plan = multi_scan(s, &[String::from("1")], join, &d.selection, params)?;
    let mut targets: Vec<Target> = Vec::new();
    for parts in &names {
        let Some(src) = find_target(&plan, &fixed, parts, "DELETE")? else {
            return Err(SqlError::new(
                1109,
                "42S02",
                format!(
                    "Unknown table '{}' in MULTI DELETE",
                    parts.last().cloned().unwrap_or_default()
                ),
            ));
        };
        target_of(&mut plan, &mut targets, src)?;
    }
    for tg in &targets {
        crate::acl::check_table(s, &tg.t.db, &tg.t.def.name, crate::acl::DELETE)?;
        if plan.subqueries {
            check_multi_subqueries(&plan, &tg.t)?;
        }
    }
    Ok(DeletePlan {
        scan: plan,
        multi: targets,
    })
}
