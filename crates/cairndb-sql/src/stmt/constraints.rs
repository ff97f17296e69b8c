//! FOREIGN KEY and CHECK constraints, with InnoDB's (MySQL 8.0's) rules.
//!
//! Definitions: a table's foreign keys and checks are stored in its
//! `TableDef` (`docs/format/sql-keys.md`); each parent's
//! `referenced_by` list is worked out from the catalog whenever one is
//! installed (`Catalog::link_foreign_keys`). Here: reading them from the
//! parsed statement, the checks made when one is created (referenced
//! index 1822, types 3780, names 1826/3822, existing rows 1452/3819), how
//! SHOW CREATE TABLE and the error messages print them, and their
//! enforcement by DML.
//!
//! Enforcement: [`Cons::for_table`] is asked once per statement and
//! answers None, at the cost of three emptiness tests, for a table with
//! no constraint and no child: such DML takes the path it always took.
//! Otherwise a child row is checked before it is written (CHECKs, then
//! each foreign key whose columns are set and, on UPDATE, changed); a
//! parent row's children are looked up after the parent row is deleted
//! or changed, and restricted (1451), deleted, changed or set NULL, each
//! change applying its own table's parent rules in turn, at most
//! [`MAX_CASCADE_DEPTH`] deep (3008). A cascaded UPDATE that reaches a
//! table an enclosing update is changing fails with 1451, as in InnoDB.
//!
//! Locking and atomicity: every read goes through the statement's
//! transaction at the latest data (its own writes included). A parent row
//! found by a child's check is locked shared, so a concurrent delete of
//! it waits for this transaction; child rows are locked exclusively
//! before they are checked or changed. Cascaded changes are writes of
//! the same transaction, under the statement's savepoint: a statement
//! that fails leaves none of them. `foreign_key_checks=0` (a session
//! variable) turns the foreign-key part off; CHECKs stay.

use std::sync::Arc;

use sqlparser::ast;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::context::StmtCx;
use crate::error::{SqlError, SqlResult};
use crate::exec::Reader;
use crate::expr::{eval, truth, Compiler, Expr, Scope, ScopeColumn};
use crate::row::{self, CheckDef, FkAction, ForeignKeyDef, IndexDef, TableDef};
use crate::types::{ColumnType, StrKind, Value};

/// InnoDB's limit on nested cascades (`FK_MAX_CASCADE_DEL`).
pub const MAX_CASCADE_DEPTH: usize = 15;

/// Whether `foreign_key_checks` is on for the session.
pub(crate) fn fk_checks(s: &StmtCx) -> bool {
    s.vars
        .get("foreign_key_checks")
        .is_none_or(|v| crate::expr::to_i64(v) != Some(0))
}

fn action(a: &Option<ast::ReferentialAction>) -> SqlResult<FkAction> {
    Ok(match a {
        None | Some(ast::ReferentialAction::NoAction) => FkAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => FkAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => FkAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => FkAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => {
            return Err(SqlError::new(
                1215,
                "HY000",
                "Cannot add foreign key constraint",
            ))
        }
    })
}

/// A foreign key as written (name None: generated later), with the
/// index name given (`FOREIGN KEY idx (cols)`).
pub(crate) struct NewFk {
    pub(crate) def: ForeignKeyDef,
    pub(crate) named: bool,
    pub(crate) index_name: Option<String>,
}

/// Reads `FOREIGN KEY` from a table constraint (None: not one). The
/// parent's database is `default_db` when not written.
pub(crate) fn fk_from_ast(
    con: &ast::TableConstraint,
    default_db: &str,
) -> SqlResult<Option<NewFk>> {
    let ast::TableConstraint::ForeignKey {
        name,
        index_name,
        columns,
        foreign_table,
        referred_columns,
        on_delete,
        on_update,
        ..
    } = con
    else {
        return Ok(None);
    };
    let parts = crate::plan::object_parts(foreign_table);
    let (ref_db, ref_table) = match parts.as_slice() {
        [t] => (default_db.to_string(), t.clone()),
        [d, t] => (d.clone(), t.clone()),
        _ => return Err(SqlError::syntax("bad table name")),
    };
    let fk_name = name.as_ref().map(|n| n.value.clone());
    if let Some(n) = &fk_name {
        crate::catalog::check_name(crate::catalog::NameKind::Index, n)?;
    }
    Ok(Some(NewFk {
        named: fk_name.is_some(),
        def: ForeignKeyDef {
            name: fk_name.unwrap_or_default(),
            columns: columns.iter().map(|c| c.value.clone()).collect(),
            ref_db,
            ref_table,
            ref_columns: referred_columns.iter().map(|c| c.value.clone()).collect(),
            on_delete: action(on_delete)?,
            on_update: action(on_update)?,
        },
        index_name: index_name.as_ref().map(|i| i.value.clone()),
    }))
}

/// Functions a CHECK may not call (3814): MySQL's non-deterministic and
/// session-dependent functions.
const DISALLOWED: &[&str] = &[
    "benchmark",
    "connection_id",
    "curdate",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "curtime",
    "database",
    "found_rows",
    "get_lock",
    "is_free_lock",
    "is_used_lock",
    "last_insert_id",
    "load_file",
    "localtime",
    "localtimestamp",
    "master_pos_wait",
    "now",
    "rand",
    "release_all_locks",
    "release_lock",
    "row_count",
    "schema",
    "session_user",
    "sleep",
    "system_user",
    "sysdate",
    "unix_timestamp",
    "user",
    "utc_date",
    "utc_time",
    "utc_timestamp",
    "uuid",
    "uuid_short",
    "version",
];

/// A CHECK constraint's definition from its expression: refused with
/// 3814 (a non-deterministic function), 3815 (a subquery), 3816 (a
/// variable), 3818 (an AUTO_INCREMENT column), 3820 (an unknown column);
/// the stored text quotes the table's column names.
pub(crate) fn new_check(
    name: &str,
    expr: &ast::Expr,
    enforced: bool,
    t: &TableDef,
) -> SqlResult<CheckDef> {
    // `CHECK ((a > 0))` is stored as `a > 0`.
    let mut expr = expr;
    while let ast::Expr::Nested(inner) = expr {
        expr = inner;
    }
    let text = expr.to_string();
    let toks = Tokenizer::new(&crate::dialect::CairnDialect, &text)
        .tokenize()
        .map_err(|e| SqlError::syntax(e.to_string()))?;
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    while let Some(tok) = toks.get(i) {
        let next_is_paren = toks
            .get(i + 1..)
            .and_then(|r| r.iter().find(|t| !matches!(t, Token::Whitespace(_))))
            .is_some_and(|t| *t == Token::LParen);
        match tok {
            Token::AtSign => {
                return Err(SqlError::new(
                    3816,
                    "HY000",
                    format!("An expression of a check constraint '{name}' cannot refer to a user or system variable."),
                ))
            }
            Token::Word(w) if w.value.starts_with('@') => {
                return Err(SqlError::new(
                    3816,
                    "HY000",
                    format!("An expression of a check constraint '{name}' cannot refer to a user or system variable."),
                ))
            }
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("SELECT") => {
                return Err(SqlError::new(
                    3815,
                    "HY000",
                    format!(
                        "An expression of a check constraint '{name}' contains disallowed function."
                    ),
                ))
            }
            Token::Word(w) if w.quote_style.is_none() && next_is_paren => {
                let lower = w.value.to_lowercase();
                if DISALLOWED.contains(&lower.as_str()) {
                    return Err(SqlError::new(
                        3814,
                        "HY000",
                        format!("An expression of a check constraint '{name}' contains disallowed function: {lower}."),
                    ));
                }
                out.push_str(&w.value);
            }
            Token::Word(w) if w.quote_style.is_none() || w.quote_style == Some('`') => {
                match t.column(&w.value) {
                    Some(c) => {
                        let col = &t.columns[c];
                        if col.auto_increment {
                            return Err(SqlError::new(
                                3818,
                                "HY000",
                                format!("Check constraint '{name}' cannot refer to an auto-increment column."),
                            ));
                        }
                        out.push_str(&format!("`{}`", col.name.replace('`', "``")));
                    }
                    None if w.quote_style.is_some() || w.keyword == sqlparser::keywords::Keyword::NoKeyword => {
                        return Err(SqlError::new(
                            3820,
                            "HY000",
                            format!("Check constraint '{name}' refers to non-existing column '{}'.", w.value),
                        ))
                    }
                    None => {
                        let niladic = w.value.to_lowercase();
                        if DISALLOWED.contains(&niladic.as_str()) {
                            return Err(SqlError::new(
                                3814,
                                "HY000",
                                format!("An expression of a check constraint '{name}' contains disallowed function: {niladic}."),
                            ));
                        }
                        out.push_str(&w.value)
                    }
                }
            }
            other => out.push_str(&other.to_string()),
        }
        i += 1;
    }
    // It must compile over the table's columns.
    compile_check(t, &out)?;
    Ok(CheckDef {
        name: name.to_string(),
        expr: out,
        enforced,
    })
}

/// Compiles a stored CHECK over `t`'s row.
fn compile_check(t: &TableDef, text: &str) -> SqlResult<Expr> {
    let mut p =
        crate::parse::statement::parser(text).map_err(crate::parse::statement::parse_error)?;
    let e = p
        .parse_expr()
        .map_err(crate::parse::statement::parse_error)?;
    let scope = Scope {
        cols: t
            .columns
            .iter()
            .map(|c| ScopeColumn {
                table: t.name.to_lowercase(),
                name: c.name.clone(),
                ty: Some(c.ty),
                origin: None,
            })
            .collect(),
        merged: Vec::new(),
    };
    let mut c = Compiler::new(&scope);
    c.compile(&e)
}

/// The next free `<table><infix>N` name: one past the largest N used.
pub(crate) fn generated_name<'a>(
    table: &str,
    infix: &str,
    taken: impl Iterator<Item = &'a str>,
) -> String {
    let prefix = format!("{}{infix}", table.to_lowercase());
    let max = taken
        .filter_map(|n| n.to_lowercase().strip_prefix(&prefix)?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    format!("{table}{infix}{}", max + 1)
}

fn quoted_list(cols: &[String]) -> String {
    cols.iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `CONSTRAINT ... FOREIGN KEY ... REFERENCES ...` as SHOW CREATE TABLE
/// and the 1451/1452 messages print it; the parent's database only when
/// it is not the child's.
pub fn fk_sql(child_db: &str, fk: &ForeignKeyDef) -> String {
    let parent = if fk.ref_db.eq_ignore_ascii_case(child_db) {
        format!("`{}`", fk.ref_table)
    } else {
        format!("`{}`.`{}`", fk.ref_db, fk.ref_table)
    };
    let mut text = format!(
        "CONSTRAINT `{}` FOREIGN KEY ({}) REFERENCES {parent} ({})",
        fk.name,
        quoted_list(&fk.columns),
        quoted_list(&fk.ref_columns)
    );
    if fk.on_delete != FkAction::NoAction {
        text.push_str(&format!(" ON DELETE {}", fk.on_delete.sql()));
    }
    if fk.on_update != FkAction::NoAction {
        text.push_str(&format!(" ON UPDATE {}", fk.on_update.sql()));
    }
    text
}

fn child_error(child_db: &str, child: &str, fk: &ForeignKeyDef) -> SqlError {
    SqlError::new(
        1452,
        "23000",
        format!(
            "Cannot add or update a child row: a foreign key constraint fails (`{child_db}`.`{child}`, {})",
            fk_sql(child_db, fk)
        ),
    )
}

fn parent_error(child_db: &str, child: &str, fk: &ForeignKeyDef) -> SqlError {
    SqlError::new(
        1451,
        "23000",
        format!(
            "Cannot delete or update a parent row: a foreign key constraint fails (`{child_db}`.`{child}`, {})",
            fk_sql(child_db, fk)
        ),
    )
}

fn violated(name: &str) -> SqlError {
    SqlError::new(
        3819,
        "HY000",
        format!("Check constraint '{name}' is violated."),
    )
}

/// Whether a child column may reference a parent column: integers and
/// decimals of the same size and sign, strings of the same collation
/// (lengths may differ), other types equal.
fn compatible(a: &ColumnType, b: &ColumnType) -> bool {
    match (a, b) {
        (
            ColumnType::Str {
                kind: k1,
                collation: c1,
                ..
            },
            ColumnType::Str {
                kind: k2,
                collation: c2,
                ..
            },
        ) => {
            let class = |k: &StrKind| match k {
                StrKind::Char | StrKind::VarChar => 0,
                StrKind::Binary | StrKind::VarBinary => 1,
                StrKind::Text => 2,
                StrKind::Blob => 3,
            };
            class(k1) == class(k2) && c1 == c2 && class(k1) < 2
        }
        (ColumnType::DateTime { .. }, ColumnType::DateTime { .. })
        | (ColumnType::Timestamp { .. }, ColumnType::Timestamp { .. }) => true,
        _ => a == b,
    }
}

/// The index of `t` whose leading columns are `cols` in order: the
/// primary key first, then the secondary indexes.
fn leading_index<'a>(t: &'a TableDef, cols: &[usize]) -> Option<&'a IndexDef> {
    // A prefix part does not hold the value a lookup compares.
    let leads = |ix: &IndexDef| {
        ix.columns.len() >= cols.len()
            && ix.columns.starts_with(cols)
            && (0..cols.len()).all(|k| ix.prefix_of(k) == 0)
    };
    if !t.hidden_pk && leads(&t.primary) {
        return Some(&t.primary);
    }
    t.secondary.iter().find(|ix| leads(ix))
}

fn positions(t: &TableDef, names: &[String]) -> Option<Vec<usize>> {
    names.iter().map(|n| t.column(n)).collect()
}

/// Checks new foreign keys of `child` (already in `child.foreign_keys`
/// at the positions `new`), names the unnamed ones and adds an index
/// for each whose columns no index leads with (id 0: the caller gives
/// ids). `parent_of` finds a parent definition (None: no such table);
/// the child itself is looked up by name first, so a self-reference sees
/// the new definition. Names must be unique in the database (1826):
/// `db_fk_names` are the names other tables of it use.
pub(crate) fn prepare_fks(
    s: &StmtCx,
    child_db: &str,
    child: &mut TableDef,
    new: Vec<NewFk>,
    db_fk_names: &[String],
    parent_of: &dyn Fn(&str, &str) -> Option<Arc<TableDef>>,
) -> SqlResult<()> {
    let checks = fk_checks(s);
    for nf in new {
        let mut fk = nf.def;
        if !nf.named {
            let taken: Vec<String> = child
                .foreign_keys
                .iter()
                .map(|f| f.name.clone())
                .chain(db_fk_names.iter().cloned())
                .collect();
            fk.name = generated_name(&child.name, "_ibfk_", taken.iter().map(String::as_str));
        }
        if child
            .foreign_keys
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(&fk.name))
            || db_fk_names.iter().any(|n| n.eq_ignore_ascii_case(&fk.name))
        {
            return Err(SqlError::new(
                1826,
                "HY000",
                format!("Duplicate foreign key constraint name '{}'", fk.name),
            ));
        }
        let cols: Vec<usize> = fk
            .columns
            .iter()
            .map(|n| {
                child.column(n).ok_or_else(|| {
                    SqlError::new(
                        1072,
                        "42000",
                        format!("Key column '{n}' doesn't exist in table"),
                    )
                })
            })
            .collect::<SqlResult<_>>()?;
        if fk.columns.len() != fk.ref_columns.len() {
            return Err(SqlError::new(
                1239,
                "42000",
                format!(
                    "Incorrect foreign key definition for '{}': Key reference and table reference don't match",
                    fk.name
                ),
            ));
        }
        for a in [fk.on_delete, fk.on_update] {
            if a == FkAction::SetNull {
                if let Some(c) = cols
                    .iter()
                    .map(|c| &child.columns[*c])
                    .find(|c| !c.nullable)
                {
                    return Err(SqlError::new(
                        1830,
                        "HY000",
                        format!(
                            "Column '{}' cannot be NOT NULL: needed in a foreign key constraint '{}' SET NULL",
                            c.name, fk.name
                        ),
                    ));
                }
            }
        }
        // REFERENCES on the parent table, or on each column the key
        // references (1142, 1143), as MySQL 8.0 asks it.
        crate::acl::check_columns(
            s,
            &fk.ref_db,
            &fk.ref_table,
            crate::acl::REFERENCES,
            fk.ref_columns.iter().map(String::as_str),
        )?;
        let self_ref = fk.ref_db.eq_ignore_ascii_case(child_db)
            && fk.ref_table.eq_ignore_ascii_case(&child.name);
        let parent = if self_ref {
            Some(Arc::new(child.clone()))
        } else {
            parent_of(&fk.ref_db, &fk.ref_table)
        };
        match parent {
            None if checks => {
                return Err(SqlError::new(
                    1824,
                    "HY000",
                    format!("Failed to open the referenced table '{}'", fk.ref_table),
                ))
            }
            None => {}
            Some(p) => {
                let mut pcols = Vec::new();
                for n in &fk.ref_columns {
                    match p.column(n) {
                        Some(c) => pcols.push(c),
                        None => {
                            return Err(SqlError::new(
                                3734,
                                "HY000",
                                format!(
                                    "Failed to add the foreign key constraint. Missing column '{n}' for constraint '{}' in the referenced table '{}'",
                                    fk.name, fk.ref_table
                                ),
                            ))
                        }
                    }
                }
                if leading_index(&p, &pcols).is_none() {
                    return Err(SqlError::new(
                        1822,
                        "HY000",
                        format!(
                            "Failed to add the foreign key constraint. Missing index for constraint '{}' in the referenced table '{}'",
                            fk.name, fk.ref_table
                        ),
                    ));
                }
                for (c, pc) in cols.iter().zip(&pcols) {
                    let (a, b) = (&child.columns[*c], &p.columns[*pc]);
                    if !compatible(&a.ty, &b.ty) {
                        return Err(SqlError::new(
                            3780,
                            "HY000",
                            format!(
                                "Referencing column '{}' and referenced column '{}' in foreign key constraint '{}' are incompatible.",
                                a.name, b.name, fk.name
                            ),
                        ));
                    }
                }
            }
        }
        if leading_index(child, &cols).is_none() {
            let base = nf
                .index_name
                .clone()
                .or_else(|| nf.named.then(|| fk.name.clone()))
                .or_else(|| fk.columns.first().cloned())
                .unwrap_or_else(|| "key".into());
            let mut nm = base.clone();
            let mut k = 2;
            while child
                .secondary
                .iter()
                .any(|ix| ix.name.eq_ignore_ascii_case(&nm))
                || nm.eq_ignore_ascii_case("PRIMARY")
            {
                nm = format!("{base}_{k}");
                k += 1;
            }
            child.secondary.push(IndexDef {
                name: nm,
                id: 0,
                columns: cols,
                unique: false,
                prefix: Vec::new(),
            });
        }
        child.foreign_keys.push(fk);
    }
    action_columns_unchecked(child)
}

/// 3823: a column a foreign key's CASCADE or SET NULL changes may not be
/// read by a CHECK (MySQL 8.0).
fn action_columns_unchecked(t: &TableDef) -> SqlResult<()> {
    let acts = |a: FkAction| matches!(a, FkAction::Cascade | FkAction::SetNull);
    for fk in t
        .foreign_keys
        .iter()
        .filter(|f| acts(f.on_delete) || acts(f.on_update))
    {
        for col in &fk.columns {
            let quoted = format!("`{}`", col.replace('`', "``"));
            if let Some(c) = t.checks.iter().find(|c| c.expr.contains(&quoted)) {
                return Err(SqlError::new(
                    3823,
                    "HY000",
                    format!(
                        "Column '{col}' cannot be used in a check constraint '{}': needed in a foreign key constraint '{}' referential action.",
                        c.name, fk.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------ enforcing

/// A foreign key of the statement's table, resolved.
struct ChildFk {
    fk: ForeignKeyDef,
    cols: Vec<usize>,
    /// The parent and the index its lookup uses (None: the parent is
    /// missing, as after `foreign_key_checks=0`: every non-NULL value
    /// fails).
    parent: Option<(Arc<TableDef>, IndexDef, Vec<usize>)>,
    /// The parent is the table itself.
    self_ref: bool,
}

/// A table's constraints as one statement enforces them.
pub(crate) struct Cons {
    db: String,
    def: Arc<TableDef>,
    checks: Vec<(String, Expr)>,
    fks: Vec<ChildFk>,
    /// Children to look after when a row is deleted or changed.
    parent: bool,
    types: Vec<Option<ColumnType>>,
}

fn txn<'a>(rd: &'a mut Reader) -> SqlResult<&'a mut cairndb::Transaction> {
    rd.txn
        .as_deref_mut()
        .ok_or_else(|| SqlError::internal("a write outside a transaction"))
}

/// The primary keys of index `ix` entries under `prefix` (at most `max`),
/// read at the latest data through the transaction.
fn keys_under(
    rd: &mut Reader,
    t: &TableDef,
    ix: &IndexDef,
    prefix: &[u8],
    max: usize,
) -> SqlResult<Vec<Vec<u8>>> {
    let tx = txn(rd)?;
    let hi = crate::exec::successor(prefix);
    let mut it = tx.iter(&cairndb::ReadOptions {
        iterate_lower_bound: Some(prefix.to_vec()),
        iterate_upper_bound: Some(hi),
        ..Default::default()
    })?;
    it.seek(prefix);
    let mut out = Vec::new();
    let mut r = vec![Value::Null; t.columns.len()];
    while it.valid() && out.len() < max {
        if ix.id == t.primary.id {
            out.push(it.key().to_vec());
        } else {
            let hidden = row::decode_secondary_into(t, ix, it.key(), it.value(), &mut r)
                .ok_or_else(|| SqlError::internal(format!("index of {} is damaged", t.name)))?;
            let mut k = Vec::new();
            row::pk_key(t, &r, hidden, &mut k);
            out.push(k);
        }
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// `vals` converted to the columns `cols` of `t` exactly (None: some
/// value cannot be held, so no row matches).
fn converted(t: &TableDef, cols: &[usize], vals: &[Value]) -> Option<Vec<Value>> {
    cols.iter()
        .zip(vals)
        .map(|(c, v)| crate::exec::key_value(t.columns.get(*c)?, v))
        .collect()
}

impl Cons {
    /// The constraints `def` (in database `db`) needs enforced by a
    /// statement; None when there are none, at no further cost.
    pub(crate) fn for_table(
        s: &StmtCx,
        db: &str,
        def: &Arc<TableDef>,
    ) -> SqlResult<Option<Box<Cons>>> {
        if def.checks.is_empty() && def.foreign_keys.is_empty() && def.referenced_by.is_empty() {
            return Ok(None);
        }
        let fkc = fk_checks(s);
        let mut checks = Vec::new();
        for c in def.checks.iter().filter(|c| c.enforced) {
            checks.push((c.name.clone(), compile_check(def, &c.expr)?));
        }
        let mut fks = Vec::new();
        if fkc {
            for fk in &def.foreign_keys {
                let cols = positions(def, &fk.columns).ok_or_else(|| {
                    SqlError::internal(format!("foreign key {} is damaged", fk.name))
                })?;
                let self_ref = fk.ref_db.eq_ignore_ascii_case(db)
                    && fk.ref_table.eq_ignore_ascii_case(&def.name);
                let parent = if self_ref {
                    Some(def.clone())
                } else {
                    s.db.table(&fk.ref_db, &fk.ref_table).ok()
                };
                let parent = parent.and_then(|p| {
                    let pcols = positions(&p, &fk.ref_columns)?;
                    let ix = leading_index(&p, &pcols)?.clone();
                    Some((p, ix, pcols))
                });
                fks.push(ChildFk {
                    fk: fk.clone(),
                    cols,
                    parent,
                    self_ref,
                });
            }
        }
        let parent = fkc && !def.referenced_by.is_empty();
        if checks.is_empty() && fks.is_empty() && !parent {
            return Ok(None);
        }
        Ok(Some(Box::new(Cons {
            db: db.to_string(),
            def: def.clone(),
            checks,
            fks,
            parent,
            types: def.columns.iter().map(|c| Some(c.ty)).collect(),
        })))
    }

    /// Whether rows may have children to look after.
    pub(crate) fn is_parent(&self) -> bool {
        self.parent
    }

    /// Checks a row about to be written (`old`: the row it replaces, on
    /// UPDATE): CHECKs (3819), then foreign keys (1452).
    pub(crate) fn check_row(
        &self,
        s: &StmtCx,
        rd: &mut Reader,
        row: &[Value],
        old: Option<&[Value]>,
    ) -> SqlResult<()> {
        for (name, e) in &self.checks {
            if truth(&eval(e, row, &[], &self.types, s)?) == Some(false) {
                return Err(violated(name));
            }
        }
        for f in &self.fks {
            let vals: Vec<Value> = f
                .cols
                .iter()
                .map(|c| row.get(*c).cloned().unwrap_or(Value::Null))
                .collect();
            if vals.iter().any(Value::is_null) {
                continue;
            }
            if let Some(old) = old {
                if f.cols.iter().all(|c| old.get(*c) == row.get(*c)) {
                    continue;
                }
            }
            let Some((p, ix, pcols)) = &f.parent else {
                return Err(child_error(&self.db, &self.def.name, &f.fk));
            };
            // A row that references itself.
            if f.self_ref
                && pcols
                    .iter()
                    .zip(&vals)
                    .all(|(pc, v)| row.get(*pc) == Some(v))
            {
                continue;
            }
            let Some(pv) = converted(p, pcols, &vals) else {
                return Err(child_error(&self.db, &self.def.name, &f.fk));
            };
            // The index's leading columns are the referenced ones.
            let mut prefix = Vec::new();
            row::index_prefix(p, ix, &pv, &mut prefix);
            let mut found = false;
            for k in keys_under(rd, p, ix, &prefix, 16)? {
                let mut buf = Vec::new();
                // Shared lock: the parent row stays until we commit.
                if txn(rd)?.get_for_update_into(&Default::default(), &k, false, &mut buf)? {
                    found = true;
                    break;
                }
            }
            if !found {
                return Err(child_error(&self.db, &self.def.name, &f.fk));
            }
        }
        Ok(())
    }

    /// Looks after the children of a deleted row.
    pub(crate) fn row_deleted(&self, s: &StmtCx, rd: &mut Reader, old: &[Value]) -> SqlResult<()> {
        parent_changed(s, rd, &self.def, old, None, 0, &mut Vec::new())
    }

    /// Looks after the children of a changed row.
    pub(crate) fn row_updated(
        &self,
        s: &StmtCx,
        rd: &mut Reader,
        old: &[Value],
        new: &[Value],
    ) -> SqlResult<()> {
        let mut chain = vec![self.def.primary.id];
        parent_changed(s, rd, &self.def, old, Some(new), 0, &mut chain)
    }
}

/// Applies the parent rules of `def` for row `old` deleted (`new` None)
/// or changed to `new`. `depth`: cascades above; `updating`: primary
/// index ids of the tables enclosing updates change.
#[allow(clippy::too_many_arguments)]
fn parent_changed(
    s: &StmtCx,
    rd: &mut Reader,
    def: &TableDef,
    old: &[Value],
    new: Option<&[Value]>,
    depth: usize,
    updating: &mut Vec<u32>,
) -> SqlResult<()> {
    if def.referenced_by.is_empty() || !fk_checks(s) {
        return Ok(());
    }
    for r in &def.referenced_by {
        let Ok(child) = s.db.table(&r.db, &r.table) else {
            continue;
        };
        let Some(fk) = child.foreign_keys.iter().find(|f| f.name == r.fk).cloned() else {
            continue;
        };
        let (Some(pcols), Some(ccols)) = (
            positions(def, &fk.ref_columns),
            positions(&child, &fk.columns),
        ) else {
            continue;
        };
        let vals: Vec<Value> = pcols
            .iter()
            .map(|c| old.get(*c).cloned().unwrap_or(Value::Null))
            .collect();
        if vals.iter().any(Value::is_null) {
            continue;
        }
        if let Some(new) = new {
            if pcols.iter().all(|c| old.get(*c) == new.get(*c)) {
                continue;
            }
        }
        let Some(cv) = converted(&child, &ccols, &vals) else {
            continue;
        };
        let Some(ix) = leading_index(&child, &ccols).cloned() else {
            continue;
        };
        let mut prefix = Vec::new();
        row::index_prefix(&child, &ix, &cv, &mut prefix);
        let child_db = r.db.as_str();
        let rule = if new.is_some() {
            fk.on_update
        } else {
            fk.on_delete
        };
        let keys = keys_under(rd, &child, &ix, &prefix, usize::MAX)?;
        for k in keys {
            let mut buf = Vec::new();
            if !txn(rd)?.get_for_update_into(&Default::default(), &k, true, &mut buf)? {
                continue;
            }
            let mut crow = vec![Value::Null; child.columns.len()];
            let hidden = row::decode_row_into(&child, &k, &buf, &mut crow, &mut Vec::new())
                .ok_or_else(|| SqlError::internal(format!("row of {} is damaged", child.name)))?;
            // Still a child of this row?
            let mut again = Vec::new();
            let now: Vec<Value> = ccols.iter().map(|c| crow[*c].clone()).collect();
            row::index_prefix(&child, &ix, &now, &mut again);
            if again != prefix {
                continue;
            }
            let child_name = child_display_name(s, &child, child_db);
            match rule {
                FkAction::NoAction | FkAction::Restrict => {
                    return Err(parent_error(&child_name.0, &child_name.1, &fk));
                }
                FkAction::Cascade if new.is_none() => {
                    if depth + 1 > MAX_CASCADE_DEPTH {
                        return Err(depth_error());
                    }
                    txn(rd)?.delete(&k)?;
                    delete_secondary(rd, &child, &crow, hidden)?;
                    parent_changed(s, rd, &child, &crow, None, depth + 1, updating)?;
                }
                FkAction::Cascade | FkAction::SetNull => {
                    if depth + 1 > MAX_CASCADE_DEPTH {
                        return Err(depth_error());
                    }
                    if updating.contains(&child.primary.id) {
                        return Err(parent_error(&child_name.0, &child_name.1, &fk));
                    }
                    let mut nrow = crow.clone();
                    for (i, c) in ccols.iter().enumerate() {
                        nrow[*c] = match (rule, new) {
                            (FkAction::Cascade, Some(new)) => {
                                let v = pcols
                                    .get(i)
                                    .and_then(|pc| new.get(*pc))
                                    .cloned()
                                    .unwrap_or(Value::Null);
                                crate::exec::key_value(&child.columns[*c], &v).unwrap_or(v)
                            }
                            _ => Value::Null,
                        };
                    }
                    crate::dml::update_row(rd, &child, &k, &crow, &nrow, 0)?;
                    updating.push(child.primary.id);
                    let r = parent_changed(s, rd, &child, &crow, Some(&nrow), depth + 1, updating);
                    updating.pop();
                    r?;
                }
            }
        }
    }
    Ok(())
}

/// The child's database and table names as created.
fn child_display_name(s: &StmtCx, child: &TableDef, db_lower: &str) -> (String, String) {
    let db =
        s.db.catalog
            .read()
            .database(db_lower)
            .map_or_else(|| db_lower.to_string(), |d| d.name.clone());
    (db, child.name.clone())
}

fn depth_error() -> SqlError {
    SqlError::new(
        3008,
        "HY000",
        format!("Foreign key cascade delete/update exceeds max depth of {MAX_CASCADE_DEPTH}."),
    )
}

fn delete_secondary(rd: &mut Reader, t: &TableDef, row: &[Value], hidden: u64) -> SqlResult<()> {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    for ix in &t.secondary {
        row::secondary_entry(t, ix, row, hidden, &mut k, &mut v);
        txn(rd)?.delete_untracked(&k)?;
    }
    Ok(())
}

/// Checks the rows already in `t` against a new foreign key or CHECK
/// (ALTER TABLE ... ADD): 1452 or 3819 for the first row that fails.
/// Reads at the latest data in a transaction of its own (DDL excludes
/// writers), which is then dropped.
pub(crate) fn check_existing(s: &StmtCx, db: &str, t: &Arc<TableDef>) -> SqlResult<()> {
    let Some(cons) = Cons::for_table(s, db, t)? else {
        return Ok(());
    };
    if cons.checks.is_empty() && cons.fks.is_empty() {
        return Ok(());
    }
    let mut tx = s.db.db.begin(&Default::default(), &Default::default());
    let mut rd = Reader {
        db: s.db.db.db(),
        txn: Some(&mut tx),
        snapshot: None,
        lock: None,
        ctes: Vec::new(),
        work: Vec::new(),
        subs: Default::default(),
        held: 0,
    };
    let r = check_rows(s, t, &cons, &mut rd);
    let held = rd.held;
    drop(rd);
    s.mem.release(held);
    r
}

/// Checks every row of `t` against `cons`, through `rd`.
fn check_rows(s: &StmtCx, t: &Arc<TableDef>, cons: &Cons, rd: &mut Reader) -> SqlResult<()> {
    let (lo, hi) = crate::keys::index_bounds(t.primary.id);
    let mut rows = Vec::new();
    {
        let mut it = s.db.db.db().iter(&cairndb::ReadOptions {
            iterate_lower_bound: Some(lo.clone()),
            iterate_upper_bound: Some(hi),
            ..Default::default()
        })?;
        it.seek(&lo);
        let mut r = vec![Value::Null; t.columns.len()];
        while it.valid() {
            row::decode_row_into(t, it.key(), it.value(), &mut r, &mut Vec::new())
                .ok_or_else(|| SqlError::internal(format!("row of {} is damaged", t.name)))?;
            rows.push(r.clone());
            if rows.len() >= 1024 {
                for row in rows.drain(..) {
                    cons.check_row(s, rd, &row, None)?;
                }
            }
            it.next();
        }
        it.status()?;
    }
    for row in rows {
        cons.check_row(s, rd, &row, None)?;
    }
    Ok(())
}

/// The first table (other than `db.table` itself) whose foreign key
/// references `db.table`: (child database, child name, constraint).
pub(crate) fn first_child(t: &TableDef, db: &str) -> Option<(String, String, String)> {
    t.referenced_by
        .iter()
        .find(|r| !(r.db.eq_ignore_ascii_case(db) && r.table.eq_ignore_ascii_case(&t.name)))
        .map(|r| (r.db.clone(), r.table.clone(), r.fk.clone()))
}

/// The foreign key (`checks` false) or CHECK names the tables of `db`
/// use, but for table `except`.
pub(crate) fn names_in_db(
    cat: &crate::catalog::Catalog,
    db: &str,
    except: Option<&str>,
    checks: bool,
) -> Vec<String> {
    let Some(d) = cat.database(db) else {
        return Vec::new();
    };
    d.tables
        .values()
        .filter(|t| except.is_none_or(|e| !t.name.eq_ignore_ascii_case(e)))
        .flat_map(|t| {
            if checks {
                t.checks.iter().map(|c| c.name.clone()).collect::<Vec<_>>()
            } else {
                t.foreign_keys.iter().map(|f| f.name.clone()).collect()
            }
        })
        .collect()
}

/// Adds a CHECK to `t`: named `<table>_chk_N` when unnamed; 3822 when
/// the name is taken in the database.
pub(crate) fn add_check(
    t: &mut TableDef,
    name: Option<String>,
    e: &ast::Expr,
    enforced: bool,
    db_checks: &[String],
) -> SqlResult<()> {
    let name = match name {
        Some(n) => {
            crate::catalog::check_name(crate::catalog::NameKind::Index, &n)?;
            n
        }
        None => {
            let taken: Vec<String> = t
                .checks
                .iter()
                .map(|c| c.name.clone())
                .chain(db_checks.iter().cloned())
                .collect();
            generated_name(&t.name, "_chk_", taken.iter().map(String::as_str))
        }
    };
    if t.checks.iter().any(|c| c.name.eq_ignore_ascii_case(&name))
        || db_checks.iter().any(|c| c.eq_ignore_ascii_case(&name))
    {
        return Err(SqlError::new(
            3822,
            "HY000",
            format!("Duplicate check constraint name '{name}'."),
        ));
    }
    let c = new_check(&name, e, enforced, t)?;
    t.checks.push(c);
    action_columns_unchecked(t)
}

/// After table `old_db.old` became `new_db.new` in `cat`: every foreign
/// key that referenced it (the table's own included) references the new
/// name. Returns the tables changed (lower-case database and name), whose
/// dictionary entries the caller writes with the rename.
pub(crate) fn retarget(
    cat: &mut crate::catalog::Catalog,
    old_db: &str,
    old: &str,
    new_db: &str,
    new: &str,
) -> Vec<(String, String)> {
    let mut changed = Vec::new();
    for (dname, d) in cat.dbs.iter_mut() {
        for (tname, t) in d.tables.iter_mut() {
            let hits = |f: &ForeignKeyDef| {
                f.ref_db.eq_ignore_ascii_case(old_db) && f.ref_table.eq_ignore_ascii_case(old)
            };
            if !t.foreign_keys.iter().any(hits) {
                continue;
            }
            let mut nt = (**t).clone();
            for f in nt.foreign_keys.iter_mut().filter(|f| hits(f)) {
                f.ref_db = new_db.to_string();
                f.ref_table = new.to_string();
            }
            *t = Arc::new(nt);
            changed.push((dname.clone(), tname.clone()));
        }
    }
    changed
}

/// ALTER TABLE of a parent: the foreign keys of other tables that
/// reference `old` (in database `db`) must still find their columns and
/// an index leading with them in `new` (1829 for a dropped column, 1553
/// for a dropped index). `srcs[i]` is new column i's position in `old`:
/// a renamed referenced column is renamed in the children's keys too.
/// Returns the children changed, with their new definitions.
pub(crate) fn children_after_alter(
    cat: &crate::catalog::Catalog,
    db: &str,
    old: &TableDef,
    new: &TableDef,
    srcs: &[Option<usize>],
) -> SqlResult<Vec<(String, String, TableDef)>> {
    let mut out: Vec<(String, String, TableDef)> = Vec::new();
    for r in &old.referenced_by {
        if r.db.eq_ignore_ascii_case(db) && r.table.eq_ignore_ascii_case(&old.name) {
            continue;
        }
        let Ok(child) = cat.table(&r.db, &r.table) else {
            continue;
        };
        let mut nc = match out.iter().position(|(d, t, _)| *d == r.db && *t == r.table) {
            Some(i) => out.remove(i).2,
            None => (*child).clone(),
        };
        let Some(fk) = nc.foreign_keys.iter_mut().find(|f| f.name == r.fk) else {
            continue;
        };
        let mut pcols = Vec::new();
        for c in fk.ref_columns.iter_mut() {
            let Some(o) = old.column(c) else {
                continue;
            };
            let Some(i) = srcs.iter().position(|s| *s == Some(o)) else {
                return Err(SqlError::new(
                    1829,
                    "HY000",
                    format!(
                        "Cannot drop column '{c}': needed in a foreign key constraint '{}' of table '{}'",
                        r.fk, child.name
                    ),
                ));
            };
            if let Some(nc_) = new.columns.get(i) {
                *c = nc_.name.clone();
            }
            pcols.push(i);
        }
        if leading_index(new, &pcols).is_none() {
            let old_cols = positions(old, &fk.ref_columns).unwrap_or_default();
            let name =
                leading_index(old, &old_cols).map_or("PRIMARY".to_string(), |ix| ix.name.clone());
            return Err(SqlError::new(
                1553,
                "HY000",
                format!("Cannot drop index '{name}': needed in a foreign key constraint"),
            ));
        }
        out.push((r.db.clone(), r.table.clone(), nc));
    }
    out.retain(|(d, t, nc)| {
        cat.table(d, t)
            .is_ok_and(|c| c.foreign_keys != nc.foreign_keys)
    });
    Ok(out)
}
