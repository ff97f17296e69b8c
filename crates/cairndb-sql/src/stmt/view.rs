//! Views: `CREATE [OR REPLACE] [ALGORITHM=...] [DEFINER=...] [SQL
//! SECURITY ...] VIEW`, `ALTER VIEW`, `DROP VIEW`, `SHOW CREATE VIEW`,
//! and their expansion when a query names one.
//!
//! A view is stored in the data dictionary as its SELECT's text and
//! options ([`ViewDef`], `docs/format/sql-keys.md`), written in one
//! synced dictionary transaction like every DDL statement. A query that
//! names a view compiles the view's SELECT in the view's database, as a
//! derived table (always materialised; no MERGE), without the query's
//! CTEs in scope. Views are read-only: INSERT is 1471, UPDATE and DELETE
//! 1288.
//!
//! Invariants: a view's SELECT compiled when it was created or altered;
//! a view that no longer compiles (a table or column gone) is 1356 at use.
//! Expansion is bounded: a view that reaches itself is 1462, a chain
//! deeper than [`MAX_VIEW_NESTING`] is 1473, and the depth bounds
//! ([`crate::depth::bound`]) of the views of one chain may add up to at
//! most [`MAX_VIEW_LEVELS`] (1436 past it), so a statement's stack stays
//! bounded.
//!
//! Locking: DDL here takes the DDL and schema locks as the other DDL
//! does; expansion reads the catalog under its read lock and releases it
//! before compiling.

use std::sync::Arc;

use sqlparser::ast;

use crate::catalog::{self, NameKind, ViewDef};
use crate::context::StmtCx;
use crate::db::{dict_header, put_dict};
use crate::error::{SqlError, SqlResult};
use crate::output::Output;
use crate::plan::SelectPlan;
use crate::types::Value;

/// The deepest chain of views naming views.
pub(crate) const MAX_VIEW_NESTING: usize = 32;

/// The most depth levels the SELECTs of one chain of views may add up to.
pub(crate) const MAX_VIEW_LEVELS: usize = 1024;

/// A parsed `CREATE VIEW` / `ALTER VIEW`.
#[derive(Debug, PartialEq)]
pub(crate) struct ViewDdl {
    create: bool,
    or_replace: bool,
    algorithm: Option<String>,
    definer: Option<String>,
    security: Option<String>,
    name: Vec<String>,
    columns: Vec<String>,
    select: String,
    check: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Str(String),
    Punct(char),
}

/// Tokens with their byte ranges; comments and spaces skipped.
fn lex(sql: &str) -> SqlResult<Vec<(Tok, usize, usize)>> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let start = i;
        match c {
            c if c.is_ascii_whitespace() => i += 1,
            b'#' => {
                while b.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while b.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b.get(i) == Some(&b'*') && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            q @ (b'`' | b'\'' | b'"') => {
                i += 1;
                let mut v = Vec::new();
                loop {
                    match b.get(i) {
                        None => return Err(SqlError::syntax("unterminated quote")),
                        Some(&d) if d == b'\\' && q != b'`' => {
                            if let Some(&e) = b.get(i + 1) {
                                v.push(e);
                            }
                            i += 2;
                        }
                        Some(&d) if d == q => {
                            if b.get(i + 1) == Some(&q) {
                                v.push(q);
                                i += 2;
                            } else {
                                i += 1;
                                break;
                            }
                        }
                        Some(&d) => {
                            v.push(d);
                            i += 1;
                        }
                    }
                }
                let text = String::from_utf8_lossy(&v).into_owned();
                out.push((
                    if q == b'`' {
                        Tok::Quoted(text)
                    } else {
                        Tok::Str(text)
                    },
                    start,
                    i,
                ));
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 => {
                while b.get(i).is_some_and(|&c| {
                    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
                }) {
                    i += 1;
                }
                out.push((
                    Tok::Word(
                        String::from_utf8_lossy(b.get(start..i).unwrap_or_default()).into_owned(),
                    ),
                    start,
                    i,
                ));
            }
            c => {
                out.push((Tok::Punct(char::from(c)), start, i + 1));
                i += 1;
            }
        }
    }
    Ok(out)
}

fn is_kw(t: Option<&(Tok, usize, usize)>, kw: &str) -> bool {
    matches!(t, Some((Tok::Word(w), _, _)) if w.eq_ignore_ascii_case(kw))
}

fn ident(t: Option<&(Tok, usize, usize)>) -> Option<String> {
    match t {
        Some((Tok::Word(w) | Tok::Quoted(w), _, _)) => Some(w.clone()),
        _ => None,
    }
}

/// Reads `CREATE ... VIEW` / `ALTER ... VIEW`; None for any other
/// statement.
pub(crate) fn parse(sql: &str) -> SqlResult<Option<ViewDdl>> {
    let head = sql.trim_start();
    let first: String = head
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    let create = first.eq_ignore_ascii_case("CREATE");
    if !create && !first.eq_ignore_ascii_case("ALTER") {
        return Ok(None);
    }
    // A text this cannot read is left to the parser, which reports it.
    let Ok(t) = lex(sql) else {
        return Ok(None);
    };
    let mut i = 1;
    let mut or_replace = false;
    if create && is_kw(t.get(i), "OR") && is_kw(t.get(i + 1), "REPLACE") {
        or_replace = true;
        i += 2;
    }
    let mut algorithm = None;
    let mut definer = None;
    let mut security = None;
    loop {
        if is_kw(t.get(i), "ALGORITHM") {
            if !matches!(t.get(i + 1), Some((Tok::Punct('='), _, _))) {
                return Ok(None);
            }
            let a = ident(t.get(i + 2)).unwrap_or_default().to_ascii_uppercase();
            if !matches!(a.as_str(), "UNDEFINED" | "MERGE" | "TEMPTABLE") {
                return Err(SqlError::syntax(format!("unknown ALGORITHM {a}")));
            }
            algorithm = Some(a);
            i += 3;
        } else if is_kw(t.get(i), "DEFINER") {
            if !matches!(t.get(i + 1), Some((Tok::Punct('='), _, _))) {
                return Ok(None);
            }
            i += 2;
            let user = match t.get(i) {
                Some((Tok::Word(w) | Tok::Quoted(w) | Tok::Str(w), _, _)) => w.clone(),
                _ => return Err(SqlError::syntax("a user was expected after DEFINER =")),
            };
            i += 1;
            if user.eq_ignore_ascii_case("CURRENT_USER") {
                if matches!(t.get(i), Some((Tok::Punct('('), _, _)))
                    && matches!(t.get(i + 1), Some((Tok::Punct(')'), _, _)))
                {
                    i += 2;
                }
                definer = Some(String::new());
                continue;
            }
            let mut host = "%".to_string();
            if matches!(t.get(i), Some((Tok::Punct('@'), _, _))) {
                host = match t.get(i + 1) {
                    Some((Tok::Word(w) | Tok::Quoted(w) | Tok::Str(w), _, _)) => w.clone(),
                    _ => return Err(SqlError::syntax("a host was expected after @")),
                };
                i += 2;
            }
            definer = Some(format!("`{user}`@`{host}`"));
        } else if is_kw(t.get(i), "SQL") && is_kw(t.get(i + 1), "SECURITY") {
            let v = ident(t.get(i + 2)).unwrap_or_default().to_ascii_uppercase();
            if !matches!(v.as_str(), "DEFINER" | "INVOKER") {
                return Err(SqlError::syntax(format!("unknown SQL SECURITY {v}")));
            }
            security = Some(v);
            i += 3;
        } else {
            break;
        }
    }
    if !is_kw(t.get(i), "VIEW") {
        return Ok(None);
    }
    i += 1;
    let mut name =
        vec![ident(t.get(i)).ok_or_else(|| SqlError::syntax("a view name was expected"))?];
    i += 1;
    if matches!(t.get(i), Some((Tok::Punct('.'), _, _))) {
        name.push(ident(t.get(i + 1)).ok_or_else(|| SqlError::syntax("a view name was expected"))?);
        i += 2;
    }
    let mut columns = Vec::new();
    if matches!(t.get(i), Some((Tok::Punct('('), _, _))) {
        i += 1;
        loop {
            columns.push(
                ident(t.get(i)).ok_or_else(|| SqlError::syntax("a column name was expected"))?,
            );
            i += 1;
            match t.get(i) {
                Some((Tok::Punct(','), _, _)) => i += 1,
                Some((Tok::Punct(')'), _, _)) => {
                    i += 1;
                    break;
                }
                _ => return Err(SqlError::syntax("')' was expected after the column list")),
            }
        }
    }
    if !is_kw(t.get(i), "AS") {
        return Err(SqlError::syntax("AS was expected in the view definition"));
    }
    let start = t.get(i).map_or(sql.len(), |x| x.2);
    // WITH [CASCADED | LOCAL] CHECK OPTION at the end.
    let mut end = t.len();
    while matches!(t.get(end.wrapping_sub(1)), Some((Tok::Punct(';'), _, _))) {
        end -= 1;
    }
    let mut check = None;
    let mut stop = t.get(end.wrapping_sub(1)).map_or(sql.len(), |x| x.2);
    if end >= 3 && is_kw(t.get(end - 1), "OPTION") && is_kw(t.get(end - 2), "CHECK") {
        let (kind, w) = if is_kw(t.get(end - 3), "CASCADED") || is_kw(t.get(end - 3), "LOCAL") {
            (
                ident(t.get(end - 3))
                    .unwrap_or_default()
                    .to_ascii_uppercase(),
                end - 4,
            )
        } else {
            ("CASCADED".to_string(), end - 3)
        };
        if !is_kw(t.get(w), "WITH") {
            return Err(SqlError::syntax("WITH CHECK OPTION was expected"));
        }
        check = Some(kind);
        stop = t.get(w).map_or(stop, |x| x.1);
    }
    let select = sql
        .get(start..stop.max(start))
        .unwrap_or_default()
        .trim()
        .to_string();
    Ok(Some(ViewDdl {
        create,
        or_replace,
        algorithm,
        definer,
        security,
        name,
        columns,
        select,
        check,
    }))
}

/// The view's SELECT parsed.
/// Whether a query reads a user variable (`@x`) or a system variable
/// (`@@x`, `@@global.x`), which MySQL refuses in a view (1351); an `@`
/// in a string or a quoted name is neither.
fn refers_to_variables(q: &ast::Query) -> bool {
    struct Find(bool);
    impl ast::Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> std::ops::ControlFlow<()> {
            let var = |i: &ast::Ident| i.quote_style.is_none() && i.value.starts_with('@');
            let found = match e {
                ast::Expr::Identifier(i) => var(i),
                ast::Expr::CompoundIdentifier(parts) => parts.first().is_some_and(var),
                _ => false,
            };
            if found {
                self.0 = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut f = Find(false);
    let _ = ast::Visit::visit(q, &mut f);
    f.0
}

fn parse_select(text: &str) -> SqlResult<Box<ast::Query>> {
    match crate::parse::statement::parse_statement(text)? {
        (ast::Statement::Query(q), order) if order.is_empty() => Ok(q),
        _ => Err(SqlError::syntax("a view is defined by a SELECT")),
    }
}

fn current_db(s: &StmtCx) -> Option<String> {
    s.cx.lock().db.clone().or_else(|| s.current_db.clone())
}

/// `db.v` for messages.
fn shown(db: &str, v: &str) -> String {
    format!("{db}.{v}")
}

/// The view a table name names, if any: its database and definition.
pub(crate) fn find(s: &StmtCx, name: &ast::ObjectName) -> Option<(String, Arc<ViewDef>)> {
    let parts = crate::plan::object_parts(name);
    let (db, v) = match parts.as_slice() {
        [v] => (current_db(s)?, v.clone()),
        [d, v] => (d.clone(), v.clone()),
        _ => return None,
    };
    let cat = s.db.catalog.read();
    let d = cat.database(&db)?;
    let def = d.views.get(&v.to_lowercase())?.clone();
    Some((d.name.clone(), def))
}

/// Error 1288 / 1471 for a view named as the target of `verb`.
pub(crate) fn check_target(s: &StmtCx, name: &ast::ObjectName, verb: &str) -> SqlResult<()> {
    let Some((_, v)) = find(s, name) else {
        return Ok(());
    };
    Err(if verb == "INSERT" {
        SqlError::new(
            1471,
            "HY000",
            format!(
                "The target table {} of the INSERT is not insertable-into",
                v.name
            ),
        )
    } else {
        SqlError::new(
            1288,
            "HY000",
            format!("The target table {} of the {verb} is not updatable", v.name),
        )
    })
}

/// Compiles view `v` of database `db` as a derived table's plan.
pub(crate) fn expand(s: &StmtCx, db: &str, v: &ViewDef) -> SqlResult<SelectPlan> {
    compile(s, db, v, true)
}

/// [`expand`]; `using` false at CREATE / ALTER VIEW, where the view is
/// not yet in the chain and what is missing is named (1146, 1054), as
/// MySQL does, instead of 1356.
fn compile(s: &StmtCx, db: &str, v: &ViewDef, using: bool) -> SqlResult<SelectPlan> {
    let levels = crate::depth::bound(&v.select);
    {
        let cx = s.cx.lock();
        if cx
            .views
            .iter()
            .any(|(d, n)| d.eq_ignore_ascii_case(db) && n.eq_ignore_ascii_case(&v.name))
        {
            return Err(SqlError::new(
                1462,
                "HY000",
                format!("`{db}`.`{}` contains view recursion", v.name),
            ));
        }
        if cx.views.len() >= MAX_VIEW_NESTING {
            return Err(SqlError::new(
                1473,
                "HY000",
                "Too high level of nesting for select",
            ));
        }
        if cx.view_levels.saturating_add(levels) > MAX_VIEW_LEVELS {
            return Err(crate::depth::too_deep(
                cx.view_levels.saturating_add(levels),
            ));
        }
    }
    let q = parse_select(&v.select)?;
    let (saved_db, saved_ctes) = {
        let mut cx = s.cx.lock();
        if using {
            cx.views.push((db.to_string(), v.name.clone()));
        }
        cx.view_levels += levels;
        cx.max_view_levels = cx.max_view_levels.max(cx.view_levels);
        (cx.db.replace(db.to_string()), std::mem::take(&mut cx.ctes))
    };
    let mut params = 0;
    let r = crate::depth::on_stack(levels, || {
        crate::plan::compile_query(s, &q, &mut params, &[])
    });
    {
        let mut cx = s.cx.lock();
        if using {
            cx.views.pop();
        }
        cx.view_levels = cx.view_levels.saturating_sub(levels);
        cx.db = saved_db;
        cx.ctes = saved_ctes;
    }
    let mut plan = r.map_err(|e| match e.code {
        1146 | 1054 | 1049 | 1305 | 1051 if using => SqlError::new(
            1356,
            "HY000",
            format!(
                "View '{}' references invalid table(s) or column(s) or function(s) or \
                 definer/invoker of view lack rights to use them",
                shown(db, &v.name)
            ),
        ),
        _ => e,
    })?;
    rename(&mut plan, &v.columns)?;
    Ok(plan)
}

/// Names the columns after a view's column list (1353 when the counts
/// differ); duplicate names are 1060.
fn rename(plan: &mut SelectPlan, columns: &[String]) -> SqlResult<()> {
    if !columns.is_empty() {
        if columns.len() != plan.columns.len() {
            return Err(SqlError::new(
                1353,
                "HY000",
                "In definition of view, derived table or common table expression, SELECT list \
                 and column names list have different column counts",
            ));
        }
        for (c, n) in plan.columns.iter_mut().zip(columns) {
            c.name = n.clone();
        }
    }
    for (i, c) in plan.columns.iter().enumerate() {
        if plan
            .columns
            .get(..i)
            .unwrap_or_default()
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

/// Runs `CREATE VIEW` / `ALTER VIEW`.
pub(crate) fn run_ddl(s: &mut StmtCx, d: ViewDdl, out: &mut dyn Output) -> SqlResult<()> {
    s.commit()?;
    let (dbname, vname) = match d.name.as_slice() {
        [v] => (
            s.current_db.clone().ok_or_else(SqlError::no_database)?,
            v.clone(),
        ),
        [db, v] => (db.clone(), v.clone()),
        _ => return Err(SqlError::syntax("bad view name")),
    };
    // CREATE VIEW; replacing or altering one also drops the old.
    let need = if d.create && !d.or_replace {
        crate::acl::CREATE_VIEW
    } else {
        crate::acl::CREATE_VIEW | crate::acl::DROP
    };
    crate::acl::check_table(s, &dbname, &vname, need)?;
    catalog::check_name(NameKind::Table, &vname)?;
    for c in &d.columns {
        catalog::check_name(NameKind::Column, c)?;
    }
    let levels = crate::depth::bound(&d.select);
    if levels > MAX_VIEW_LEVELS {
        return Err(crate::depth::too_deep(levels));
    }
    let query = parse_select(&d.select)?;
    if crate::plan::count_placeholders(&query) > 0 || refers_to_variables(&query) {
        return Err(SqlError::new(
            1351,
            "HY000",
            "View's SELECT contains a variable or parameter",
        ));
    }
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = crate::ddl::schema_write(s, &db)?;
    let mut cat = db.catalog.read().clone();
    let dbrec = cat
        .dbs
        .get(&dbname.to_lowercase())
        .ok_or_else(|| SqlError::unknown_database(&dbname))?;
    let dbname = dbrec.name.clone();
    let key = vname.to_lowercase();
    if dbrec.tables.contains_key(&key) {
        return Err(SqlError::table_exists(&vname));
    }
    let old = dbrec.views.get(&key).cloned();
    match (&old, d.create) {
        (Some(_), true) if !d.or_replace => return Err(SqlError::table_exists(&vname)),
        (None, false) => return Err(SqlError::no_such_table(&dbname, &vname)),
        _ => {}
    }
    // The definer by default is CURRENT_USER(): the account matched.
    let user = match &s.who {
        Some(w) => format!("`{}`@`{}`", w.account_user, w.account_host),
        None => format!("`{}`@`localhost`", s.user),
    };
    let def = ViewDef {
        name: old
            .as_ref()
            .filter(|_| !d.create)
            .map_or(vname.clone(), |o| o.name.clone()),
        columns: d.columns,
        select: d.select,
        algorithm: d
            .algorithm
            .or_else(|| {
                old.as_ref()
                    .filter(|_| !d.create)
                    .map(|o| o.algorithm.clone())
            })
            .unwrap_or_else(|| "UNDEFINED".into()),
        definer: match d.definer {
            Some(x) if !x.is_empty() => x,
            Some(_) => user,
            None => old
                .as_ref()
                .filter(|_| !d.create)
                .map_or(user, |o| o.definer.clone()),
        },
        security: d
            .security
            .or_else(|| {
                old.as_ref()
                    .filter(|_| !d.create)
                    .map(|o| o.security.clone())
            })
            .unwrap_or_else(|| "DEFINER".into()),
        check_option: d.check.unwrap_or_else(|| "NONE".into()),
    };
    // The SELECT must compile now (its tables and columns exist).
    {
        let mut cx = s.cx.lock();
        cx.reset();
    }
    let checked = compile(s, &dbname, &def, false);
    s.cx.lock().reset();
    checked?;
    let next = cat.next_index_id;
    let value = catalog::encode_view(&def)?;
    db.with_txn(|t| {
        dict_header(t, next)?;
        put_dict(t, &catalog::view_key(&dbname, &def.name), &value)
    })?;
    if let Some(dr) = cat.dbs.get_mut(&dbname.to_lowercase()) {
        dr.views.insert(key, Arc::new(def));
    }
    db.install_catalog(cat);
    out.ok(0, 0, s.warning_count(), "");
    Ok(())
}

/// `DROP VIEW [IF EXISTS] a, b`: every name is checked first; missing
/// ones are one 1051 naming them all (nothing dropped), or notes with IF
/// EXISTS; a table is 1347.
pub(crate) fn drop_views(
    s: &mut StmtCx,
    names: &[ast::ObjectName],
    if_exists: bool,
) -> SqlResult<()> {
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = crate::ddl::schema_write(s, &db)?;
    let mut cat = db.catalog.read().clone();
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for n in names {
        let parts = crate::plan::object_parts(n);
        let (dbname, v) = match parts.as_slice() {
            [v] => (
                s.current_db.clone().ok_or_else(SqlError::no_database)?,
                v.clone(),
            ),
            [d, v] => (d.clone(), v.clone()),
            _ => return Err(SqlError::syntax(format!("bad view name {n}"))),
        };
        crate::acl::check_table(s, &dbname, &v, crate::acl::DROP)?;
        let d = cat.database(&dbname);
        match d {
            Some(d) if d.views.contains_key(&v.to_lowercase()) => {
                found.push((d.name.clone(), v.to_lowercase()))
            }
            Some(d) if d.tables.contains_key(&v.to_lowercase()) => {
                return Err(SqlError::new(
                    1347,
                    "HY000",
                    format!("'{}' is not VIEW", shown(&d.name, &v)),
                ))
            }
            _ => missing.push(shown(&dbname, &v)),
        }
    }
    if !missing.is_empty() {
        let msg = format!("Unknown table '{}'", missing.join(","));
        if !if_exists {
            return Err(SqlError::new(1051, "42S02", msg));
        }
        for m in &missing {
            s.warnings
                .get_mut()
                .push(("Note", 1051, format!("Unknown table '{m}'")));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let next = cat.next_index_id;
    db.with_txn(|t| {
        dict_header(t, next)?;
        for (d, v) in &found {
            t.delete(&catalog::view_key(d, v))?;
        }
        Ok(())
    })?;
    for (d, v) in &found {
        if let Some(dr) = cat.dbs.get_mut(&d.to_lowercase()) {
            dr.views.remove(v);
        }
    }
    db.install_catalog(cat);
    Ok(())
}

/// The `CREATE VIEW` text `SHOW CREATE VIEW` gives.
pub(crate) fn create_text(v: &ViewDef) -> String {
    let mut s = format!(
        "CREATE ALGORITHM={} DEFINER={} SQL SECURITY {} VIEW `{}`",
        v.algorithm,
        v.definer,
        v.security,
        v.name.replace('`', "``")
    );
    if !v.columns.is_empty() {
        let cols: Vec<String> = v
            .columns
            .iter()
            .map(|c| format!("`{}`", c.replace('`', "``")))
            .collect();
        s.push_str(&format!(" ({})", cols.join(",")));
    }
    s.push_str(" AS ");
    s.push_str(&v.select);
    if v.check_option != "NONE" {
        s.push_str(&format!(" WITH {} CHECK OPTION", v.check_option));
    }
    s
}

/// `SHOW CREATE VIEW`: None when no such view.
pub(crate) fn show_create(
    s: &StmtCx,
    db: Option<String>,
    name: &str,
    out: &mut dyn Output,
) -> SqlResult<bool> {
    let db = db
        .or_else(|| s.current_db.clone())
        .ok_or_else(SqlError::no_database)?;
    let v = {
        let cat = s.db.catalog.read();
        let d = cat
            .database(&db)
            .ok_or_else(|| SqlError::unknown_database(&db))?;
        d.views.get(&name.to_lowercase()).cloned()
    };
    let Some(v) = v else {
        return Ok(false);
    };
    crate::acl::check_table(s, &db, name, crate::acl::SHOW_VIEW)?;
    let t = |x: &str| Value::Str(x.as_bytes().to_vec());
    out.columns(
        &[
            "View",
            "Create View",
            "character_set_client",
            "collation_connection",
        ]
        .map(crate::output::ColumnInfo::text),
    );
    out.row(&[
        t(&v.name),
        t(&create_text(&v)),
        t("utf8mb4"),
        t("utf8mb4_general_ci"),
    ]);
    out.end(0);
    Ok(true)
}
