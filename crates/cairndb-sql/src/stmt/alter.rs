//! ALTER TABLE and RENAME TABLE.
//!
//! An ALTER TABLE statement is parsed here (`sqlparser` reads only some of
//! MySQL's clauses: the others are read from its tokens), its clauses are
//! applied in order to a working copy of the definition (every error is
//! found before anything is written), and the result is installed in one
//! of two ways:
//!
//! * **in place**: when the rows keep their bytes (renames, defaults,
//!   comments, `AUTO_INCREMENT`, wider VARCHARs, secondary indexes added or
//!   dropped), only the dictionary entry changes; an added index is
//!   back-filled under a new id first (`ddl::backfill`), a dropped one's
//!   keys are deleted after;
//! * **copy**: when the row format changes (columns added, dropped,
//!   reordered or retyped, the primary key changed, a character set
//!   conversion, `FORCE`, `ALGORITHM=COPY`), every row is read, converted
//!   and written in batches under new index ids (primary and secondaries),
//!   then the dictionary entry is switched to the new definition, then the
//!   old ids' keys are deleted.
//!
//! Invariants (crash safety): new index ids are recorded as used (the
//! synced next-id entry) before any key carries them; the switch is one
//! synced dictionary transaction, which also makes every copied key
//! durable (one WAL, synced in order); keys of ids no table owns are
//! deleted by the sweep at open (`SqlDb::sweep_orphans`). So a crash
//! leaves the old table (the copy's keys are orphans) or the new one (the
//! old keys are orphans), never a mix, and no orphan survives a restart.
//! A copy that fails (a duplicate for a new unique key, a value that does
//! not fit, KILL) deletes what it wrote and leaves the table as it was.
//!
//! Locking: as every DDL statement, `SqlDb::ddl_lock` then the exclusive
//! schema lock for the whole statement, so writers wait for a copy or a
//! back-fill (readers go on, on the old definition until the switch); the
//! schema lock is released before the old keys are deleted. Nothing here
//! runs for DML.

// Reads statements and stored rows: no indexing, unwrap or panic.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::HashSet;
use std::sync::Arc;

use sqlparser::ast;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use crate::catalog::{self, Catalog, NameKind};
use crate::context::StmtCx;
use crate::db::{dict_header, put_dict, SqlDb};
use crate::ddl::{backfill, collation_from, column_default, index_ids, parse_column, schema_write};
use crate::error::{SqlError, SqlResult};
use crate::keys;
use crate::output::Output;
use crate::parse::statement::{parse_error, parser};
use crate::plan::{object_parts, resolve_table};
use crate::row::{self, ColumnDef, IndexDef, TableDef};
use crate::types::{Collation, ColumnType, StrKind, Value};

/// Rows copied per engine write batch.
const COPY_BATCH_ROWS: usize = 10_000;

/// `FIRST` / `AFTER col`.
enum Pos {
    First,
    After(String),
}

/// One clause of an ALTER TABLE statement.
enum Op {
    AddColumn(Box<ast::ColumnDef>, Option<Pos>),
    /// CHANGE (and MODIFY, whose old name is the column's).
    Change {
        old: String,
        col: Box<ast::ColumnDef>,
        pos: Option<Pos>,
    },
    DropColumn(String),
    RenameColumn(String, String),
    SetDefault(String, Box<ast::Expr>),
    DropDefault(String),
    AddIndex {
        name: Option<String>,
        cols: Vec<String>,
        prefix: Vec<u32>,
        unique: bool,
    },
    AddPrimary(Vec<String>),
    DropIndex(String),
    /// `DROP CONSTRAINT name`: a unique index by that name.
    DropConstraint(String),
    /// `DROP FOREIGN KEY name`.
    DropForeignKey(String),
    /// `DROP CHECK name`.
    DropCheck(String),
    /// `ALTER {CHECK | CONSTRAINT} name [NOT] ENFORCED`.
    EnforceCheck(String, bool),
    /// `ADD [CONSTRAINT name] FOREIGN KEY ...` (read in `run`, which knows
    /// the database).
    AddForeignKey(Box<ast::TableConstraint>),
    /// `ADD [CONSTRAINT name] CHECK (expr) [[NOT] ENFORCED]`.
    AddCheck(Option<String>, Box<ast::Expr>, bool),
    DropPrimary,
    RenameIndex(String, String),
    IndexVisibility(String, bool),
    RenameTable(ast::ObjectName),
    AutoIncrement(u64),
    Comment(String),
    Convert {
        charset: String,
        collation: Option<String>,
    },
    Force,
    Algorithm(ast::AlterTableAlgorithm),
    Lock(ast::AlterTableLock),
    /// A table option with no effect here (ENGINE=, DEFAULT CHARSET=,
    /// ROW_FORMAT=, DISABLE KEYS...).
    Nothing,
}

impl Op {
    /// Table options may follow each other without commas.
    fn is_table_option(&self) -> bool {
        matches!(
            self,
            Op::AutoIncrement(_) | Op::Comment(_) | Op::Nothing | Op::Convert { .. }
        )
    }
}

/// What an ALTER needs at least, as MySQL's ALGORITHM names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    /// The dictionary entry only.
    Instant,
    /// An index back-filled or dropped, or the rows copied with their
    /// values unchanged.
    Inplace,
    /// The rows copied with values converted to new types.
    Copy,
}

// ---------------------------------------------------------------- parsing

fn word_at(p: &Parser, n: usize) -> Option<String> {
    match &p.peek_nth_token_ref(n).token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

fn word_is(p: &Parser, n: usize, w: &str) -> bool {
    word_at(p, n).as_deref() == Some(w)
}

/// Consumes `words` if the next tokens are exactly those words.
fn eat_words(p: &mut Parser, words: &[&str]) -> bool {
    if !words.iter().enumerate().all(|(i, w)| word_is(p, i, w)) {
        return false;
    }
    for _ in words {
        p.next_token();
    }
    true
}

fn at_end(p: &Parser) -> bool {
    matches!(p.peek_token_ref().token, Token::EOF | Token::SemiColon)
}

fn near(p: &Parser) -> SqlError {
    SqlError::syntax(format!(
        "You have an error in your SQL syntax near '{}'",
        p.peek_token_ref().token
    ))
}

/// An identifier (a word, quoted or not).
fn ident(p: &mut Parser) -> SqlResult<String> {
    p.parse_identifier().map(|i| i.value).map_err(parse_error)
}

/// A value after an optional `=`: a word, number or string.
fn option_value(p: &mut Parser) -> SqlResult<String> {
    let _ = p.consume_token(&Token::Eq);
    let t = p.next_token();
    match t.token {
        Token::Word(w) => Ok(w.value),
        Token::Number(n, _) => Ok(n),
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Ok(s),
        _ => Err(SqlError::syntax(format!(
            "You have an error in your SQL syntax near '{}'",
            t.token
        ))),
    }
}

/// Parses `ALTER TABLE name clause [, clause]...`.
fn parse(text: &str) -> SqlResult<(ast::ObjectName, Vec<Op>)> {
    let expanded = crate::parse::statement::expand_80016(text);
    let mut p = parser(&expanded).map_err(parse_error)?;
    if !eat_words(&mut p, &["ALTER", "TABLE"]) {
        return Err(near(&p));
    }
    let name = p.parse_object_name(false).map_err(parse_error)?;
    let mut ops = Vec::new();
    while !at_end(&p) {
        let before = ops.len();
        clause(&mut p, &mut ops)?;
        if p.consume_token(&Token::Comma) {
            continue;
        }
        let option = ops
            .get(before..)
            .is_some_and(|o| !o.is_empty() && o.iter().all(Op::is_table_option));
        if !at_end(&p) && !option {
            return Err(near(&p));
        }
    }
    Ok((name, ops))
}

/// One clause, appended to `ops`.
fn clause(p: &mut Parser, ops: &mut Vec<Op>) -> SqlResult<()> {
    let first = word_at(p, 0).unwrap_or_default();
    let op = match first.as_str() {
        // `ADD [COLUMN] (col def, ...)`.
        "ADD" => {
            let n = if word_is(p, 1, "COLUMN") { 2 } else { 1 };
            if p.peek_nth_token_ref(n).token == Token::LParen {
                for _ in 0..n {
                    p.next_token();
                }
                p.expect_token(&Token::LParen).map_err(parse_error)?;
                let cols = p
                    .parse_comma_separated(Parser::parse_column_def)
                    .map_err(parse_error)?;
                p.expect_token(&Token::RParen).map_err(parse_error)?;
                ops.extend(cols.into_iter().map(|c| Op::AddColumn(Box::new(c), None)));
                return Ok(());
            }
            return generic(p, ops);
        }
        "DROP" if matches!(word_at(p, 1).as_deref(), Some("INDEX" | "KEY")) => {
            eat_words(p, &["DROP"]);
            p.next_token();
            Op::DropIndex(ident(p)?)
        }
        "DROP" if matches!(word_at(p, 1).as_deref(), Some("CONSTRAINT")) => {
            eat_words(p, &["DROP", "CONSTRAINT"]);
            Op::DropConstraint(ident(p)?)
        }
        "DROP" if word_is(p, 1, "CHECK") => {
            eat_words(p, &["DROP", "CHECK"]);
            Op::DropCheck(ident(p)?)
        }
        "RENAME" if matches!(word_at(p, 1).as_deref(), Some("INDEX" | "KEY")) => {
            eat_words(p, &["RENAME"]);
            p.next_token();
            let from = ident(p)?;
            if !eat_words(p, &["TO"]) {
                return Err(near(p));
            }
            Op::RenameIndex(from, ident(p)?)
        }
        "RENAME" if !word_is(p, 1, "COLUMN") => {
            eat_words(p, &["RENAME"]);
            if !eat_words(p, &["TO"]) {
                eat_words(p, &["AS"]);
            }
            Op::RenameTable(p.parse_object_name(false).map_err(parse_error)?)
        }
        "ALTER" if matches!(word_at(p, 1).as_deref(), Some("CHECK" | "CONSTRAINT")) => {
            p.next_token();
            p.next_token();
            let name = ident(p)?;
            let on = !eat_words(p, &["NOT"]);
            if !eat_words(p, &["ENFORCED"]) {
                return Err(near(p));
            }
            Op::EnforceCheck(name, on)
        }
        "ALTER" if word_is(p, 1, "INDEX") => {
            eat_words(p, &["ALTER", "INDEX"]);
            let name = ident(p)?;
            if eat_words(p, &["VISIBLE"]) {
                Op::IndexVisibility(name, true)
            } else if eat_words(p, &["INVISIBLE"]) {
                Op::IndexVisibility(name, false)
            } else {
                return Err(near(p));
            }
        }
        "COMMENT" => {
            p.next_token();
            let _ = p.consume_token(&Token::Eq);
            Op::Comment(p.parse_literal_string().map_err(parse_error)?)
        }
        "ENGINE" | "ROW_FORMAT" | "STATS_PERSISTENT" | "STATS_AUTO_RECALC"
        | "STATS_SAMPLE_PAGES" | "KEY_BLOCK_SIZE" | "PACK_KEYS" | "CHECKSUM"
        | "DELAY_KEY_WRITE" | "AVG_ROW_LENGTH" | "MAX_ROWS" | "MIN_ROWS" | "COMPRESSION" => {
            p.next_token();
            option_value(p)?;
            Op::Nothing
        }
        // InnoDB ignores them (mysqldump writes them around its INSERTs).
        "DISABLE" | "ENABLE" if word_is(p, 1, "KEYS") => {
            p.next_token();
            p.next_token();
            Op::Nothing
        }
        "CONVERT" => {
            p.next_token();
            if !eat_words(p, &["TO"]) {
                return Err(near(p));
            }
            if !eat_words(p, &["CHARACTER", "SET"]) && !eat_words(p, &["CHARSET"]) {
                return Err(near(p));
            }
            let charset = option_value(p)?.to_ascii_lowercase();
            let collation = if eat_words(p, &["COLLATE"]) {
                Some(option_value(p)?.to_ascii_lowercase())
            } else {
                None
            };
            crate::preparse::check_charset(Some(&charset), collation.as_deref())?;
            Op::Convert { charset, collation }
        }
        "DEFAULT" | "CHARACTER" | "CHARSET" | "COLLATE" => {
            // `[DEFAULT] CHARACTER SET [=] cs [[DEFAULT] COLLATE [=] coll]`:
            // checked; the table keeps no default of its own (text is
            // utf8mb4; new columns get utf8mb4_general_ci unless they say).
            let (mut charset, mut collation) = (None, None);
            loop {
                eat_words(p, &["DEFAULT"]);
                if eat_words(p, &["CHARACTER", "SET"]) || eat_words(p, &["CHARSET"]) {
                    charset = Some(option_value(p)?.to_ascii_lowercase());
                } else if eat_words(p, &["COLLATE"]) {
                    collation = Some(option_value(p)?.to_ascii_lowercase());
                } else {
                    return Err(near(p));
                }
                let more = matches!(
                    word_at(p, 0).as_deref(),
                    Some("DEFAULT" | "CHARACTER" | "CHARSET" | "COLLATE")
                );
                if !more {
                    break;
                }
            }
            crate::preparse::check_charset(charset.as_deref(), collation.as_deref())?;
            if let Some(c) = &collation {
                collation_from(c)?;
            }
            Op::Nothing
        }
        "AUTO_INCREMENT" => {
            p.next_token();
            let _ = p.consume_token(&Token::Eq);
            Op::AutoIncrement(p.parse_literal_uint().map_err(parse_error)?)
        }
        "FORCE" => {
            p.next_token();
            Op::Force
        }
        "ORDER" => return Err(SqlError::unsupported("ALTER TABLE ... ORDER BY")),
        _ => return generic(p, ops),
    };
    ops.push(op);
    Ok(())
}

/// A clause `sqlparser` reads.
fn generic(p: &mut Parser, ops: &mut Vec<Op>) -> SqlResult<()> {
    use ast::AlterTableOperation as A;
    let op = p.parse_alter_table_operation().map_err(parse_error)?;
    let to_pos = |pos: Option<ast::MySQLColumnPosition>| {
        pos.map(|x| match x {
            ast::MySQLColumnPosition::First => Pos::First,
            ast::MySQLColumnPosition::After(c) => Pos::After(c.value),
        })
    };
    let mine = match op {
        A::AddConstraint { constraint, .. } => match constraint {
            ast::TableConstraint::PrimaryKey { columns, .. } => {
                Op::AddPrimary(crate::ddl::key_part_names(&columns)?)
            }
            ast::TableConstraint::Unique {
                name,
                index_name,
                columns,
                ..
            } => {
                let (cols, prefix) = crate::ddl::key_parts(&columns)?;
                Op::AddIndex {
                    name: index_name.or(name).map(|i| i.value),
                    cols,
                    prefix,
                    unique: true,
                }
            }
            ast::TableConstraint::Index { name, columns, .. } => {
                let (cols, prefix) = crate::ddl::key_parts(&columns)?;
                Op::AddIndex {
                    name: name.map(|i| i.value),
                    cols,
                    prefix,
                    unique: false,
                }
            }
            c @ ast::TableConstraint::ForeignKey { .. } => Op::AddForeignKey(Box::new(c)),
            ast::TableConstraint::Check {
                name,
                expr,
                enforced,
            } => Op::AddCheck(name.map(|n| n.value), expr, enforced.unwrap_or(true)),
            other => return Err(SqlError::unsupported(format!("ADD {other}"))),
        },
        A::AddColumn {
            column_def,
            column_position,
            ..
        } => Op::AddColumn(Box::new(column_def), to_pos(column_position)),
        A::DropColumn { column_names, .. } => {
            ops.extend(column_names.into_iter().map(|c| Op::DropColumn(c.value)));
            return Ok(());
        }
        A::DropPrimaryKey { .. } => Op::DropPrimary,
        A::DropIndex { name } => Op::DropIndex(name.value),
        A::DropForeignKey { name, .. } => Op::DropForeignKey(name.value),
        A::DropConstraint { name, .. } => Op::DropConstraint(name.value),
        A::RenameColumn {
            old_column_name,
            new_column_name,
        } => Op::RenameColumn(old_column_name.value, new_column_name.value),
        A::RenameTable { table_name } => match table_name {
            ast::RenameTableNameKind::To(n) | ast::RenameTableNameKind::As(n) => Op::RenameTable(n),
        },
        A::ChangeColumn {
            old_name,
            new_name,
            data_type,
            options,
            column_position,
        } => Op::Change {
            old: old_name.value,
            col: Box::new(column_def(new_name, data_type, options)),
            pos: to_pos(column_position),
        },
        A::ModifyColumn {
            col_name,
            data_type,
            options,
            column_position,
        } => Op::Change {
            old: col_name.value.clone(),
            col: Box::new(column_def(col_name, data_type, options)),
            pos: to_pos(column_position),
        },
        A::AlterColumn { column_name, op } => match op {
            ast::AlterColumnOperation::SetDefault { value } => {
                Op::SetDefault(column_name.value, Box::new(value))
            }
            ast::AlterColumnOperation::DropDefault => Op::DropDefault(column_name.value),
            other => {
                return Err(SqlError::syntax(format!(
                    "You have an error in your SQL syntax near 'ALTER COLUMN {column_name} {other}'"
                )))
            }
        },
        A::Algorithm { algorithm, .. } => Op::Algorithm(algorithm),
        A::Lock { lock, .. } => Op::Lock(lock),
        A::AutoIncrement { value, .. } => match value.value {
            ast::Value::Number(n, _) => Op::AutoIncrement(
                n.parse()
                    .map_err(|_| SqlError::syntax(format!("bad AUTO_INCREMENT value {n}")))?,
            ),
            other => {
                return Err(SqlError::syntax(format!(
                    "bad AUTO_INCREMENT value {other}"
                )))
            }
        },
        other => return Err(SqlError::unsupported(format!("ALTER TABLE ... {other}"))),
    };
    ops.push(mine);
    Ok(())
}

fn column_def(
    name: ast::Ident,
    data_type: ast::DataType,
    options: Vec<ast::ColumnOption>,
) -> ast::ColumnDef {
    ast::ColumnDef {
        name,
        data_type,
        options: options
            .into_iter()
            .map(|option| ast::ColumnOptionDef { name: None, option })
            .collect(),
    }
}

// ------------------------------------------------------------ the changes

/// A column of the working definition.
struct WCol {
    def: ColumnDef,
    /// Its position in the table as it was; None for an added column.
    src: Option<usize>,
    /// Declared `NULL` explicitly (1171 if it ends in the primary key).
    explicit_null: bool,
}

/// A secondary index of the working definition, its columns by name.
struct WIndex {
    name: String,
    cols: Vec<String>,
    /// Prefix lengths by key part, as [`IndexDef::prefix`].
    prefix: Vec<u32>,
    unique: bool,
    /// The index of the table as it was that this one still is (same
    /// columns): it keeps its id when the rows are not copied.
    old: Option<usize>,
}

/// The definition being altered.
struct Work<'a> {
    old: &'a TableDef,
    cols: Vec<WCol>,
    /// Primary-key columns by name; None for a hidden primary key.
    pk: Option<Vec<String>>,
    indexes: Vec<WIndex>,
    rename: Option<ast::ObjectName>,
    comment: String,
    auto_increment: Option<u64>,
    force: bool,
    algorithm: Option<ast::AlterTableAlgorithm>,
    lock: Option<ast::AlterTableLock>,
    /// The foreign keys kept (by name; columns by name).
    fks: Vec<crate::row::ForeignKeyDef>,
    /// The CHECKs kept.
    checks: Vec<crate::row::CheckDef>,
    /// Foreign keys and CHECKs added, checked in `run`.
    new_fks: Vec<ast::TableConstraint>,
    new_checks: Vec<(Option<String>, ast::Expr, bool)>,
    /// CHECKs turned from NOT ENFORCED to ENFORCED (the rows are checked).
    enforced_now: Vec<String>,
}

fn cant_drop(name: &str) -> SqlError {
    SqlError::new(
        1091,
        "42000",
        format!("Can't DROP '{name}'; check that column/key exists"),
    )
}

fn duplicate_column(name: &str) -> SqlError {
    SqlError::new(1060, "42S21", format!("Duplicate column name '{name}'"))
}

fn duplicate_key_name(name: &str) -> SqlError {
    SqlError::new(1061, "42000", format!("Duplicate key name '{name}'"))
}

fn key_column_missing(name: &str) -> SqlError {
    SqlError::new(
        1072,
        "42000",
        format!("Key column '{name}' doesn't exist in table"),
    )
}

fn same_name(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

impl<'a> Work<'a> {
    fn new(old: &'a TableDef) -> Work<'a> {
        let name_of = |c: &usize| {
            old.columns
                .get(*c)
                .map(|d| d.name.clone())
                .unwrap_or_default()
        };
        Work {
            old,
            cols: old
                .columns
                .iter()
                .enumerate()
                .map(|(i, c)| WCol {
                    def: c.clone(),
                    src: Some(i),
                    explicit_null: false,
                })
                .collect(),
            pk: (!old.hidden_pk).then(|| old.primary.columns.iter().map(name_of).collect()),
            indexes: old
                .secondary
                .iter()
                .enumerate()
                .map(|(i, ix)| WIndex {
                    name: ix.name.clone(),
                    cols: ix.columns.iter().map(name_of).collect(),
                    prefix: ix.prefix.clone(),
                    unique: ix.unique,
                    old: Some(i),
                })
                .collect(),
            rename: None,
            comment: old.comment.clone(),
            auto_increment: None,
            force: false,
            algorithm: None,
            lock: None,
            fks: old.foreign_keys.clone(),
            checks: old.checks.clone(),
            new_fks: Vec::new(),
            new_checks: Vec::new(),
            enforced_now: Vec::new(),
        }
    }

    /// The foreign key that needs index `except` (an index of `indexes`;
    /// None: the primary key) because no other index leads with its
    /// columns.
    fn fk_needing(&self, except: Option<usize>) -> Option<String> {
        let leads = |cols: &[String], fk: &[String]| {
            cols.len() >= fk.len() && cols.iter().zip(fk).all(|(a, b)| same_name(a, b))
        };
        self.fks
            .iter()
            .find(|fk| {
                let by_pk =
                    except.is_some() && self.pk.as_ref().is_some_and(|pk| leads(pk, &fk.columns));
                let by_ix = self.indexes.iter().enumerate().any(|(i, ix)| {
                    Some(i) != except
                        && leads(&ix.cols, &fk.columns)
                        && ix.prefix.iter().take(fk.columns.len()).all(|n| *n == 0)
                });
                !by_pk && !by_ix
            })
            .map(|fk| fk.name.clone())
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.cols.iter().position(|c| same_name(&c.def.name, name))
    }

    fn unknown_column(&self, name: &str) -> SqlError {
        SqlError::unknown_column(name, &self.old.name)
    }

    fn column(&self, name: &str) -> SqlResult<usize> {
        self.find(name).ok_or_else(|| self.unknown_column(name))
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.indexes.iter().position(|ix| same_name(&ix.name, name))
    }

    /// Where `pos` puts a column; `default` without one.
    fn position(&self, pos: &Option<Pos>, default: usize) -> SqlResult<usize> {
        match pos {
            None => Ok(default),
            Some(Pos::First) => Ok(0),
            Some(Pos::After(c)) => Ok(self.column(c)? + 1),
        }
    }

    fn rename_refs(&mut self, from: &str, to: &str) {
        let fix = |cols: &mut Vec<String>| {
            for c in cols.iter_mut() {
                if same_name(c, from) {
                    *c = to.to_string();
                }
            }
        };
        if let Some(pk) = &mut self.pk {
            fix(pk);
        }
        for ix in &mut self.indexes {
            fix(&mut ix.cols);
        }
        let self_ref = |fk: &crate::row::ForeignKeyDef| same_name(&fk.ref_table, &self.old.name);
        let selfs: Vec<bool> = self.fks.iter().map(self_ref).collect();
        for (fk, selfr) in self.fks.iter_mut().zip(selfs) {
            fix(&mut fk.columns);
            if selfr {
                fix(&mut fk.ref_columns);
            }
        }
    }

    /// A dropped column leaves every key it was part of (MySQL); a key
    /// left without columns goes.
    fn drop_refs(&mut self, name: &str) {
        if let Some(pk) = &mut self.pk {
            pk.retain(|c| !same_name(c, name));
            if pk.is_empty() {
                self.pk = None;
            }
        }
        for ix in &mut self.indexes {
            if let Some(k) = ix.cols.iter().position(|c| same_name(c, name)) {
                ix.cols.remove(k);
                if k < ix.prefix.len() {
                    ix.prefix.remove(k);
                }
                ix.old = None;
            }
        }
        self.indexes.retain(|ix| !ix.cols.is_empty());
    }

    /// Adds a parsed column definition at `at` (or in place of column
    /// `replacing`), with its inline keys.
    fn put_column(
        &mut self,
        s: &mut StmtCx,
        c: &ast::ColumnDef,
        pos: &Option<Pos>,
        replacing: Option<usize>,
    ) -> SqlResult<()> {
        let p = parse_column(c, Collation::Utf8mb4GeneralCi)?;
        if let Some(j) = self.find(&p.def.name) {
            if Some(j) != replacing {
                return Err(duplicate_column(&p.def.name));
            }
        }
        let mut def = p.def;
        def.default = column_default(s, &def, p.default.as_ref())?;
        if def.auto_increment && def.default.is_some() {
            return Err(SqlError::new(
                1067,
                "42000",
                format!("Invalid default value for '{}'", def.name),
            ));
        }
        let name = def.name.clone();
        let src = match replacing {
            Some(i) => {
                let w = self.cols.remove(i);
                if w.def.name != name {
                    self.rename_refs(&w.def.name, &name);
                }
                w.src
            }
            None => None,
        };
        let at = self.position(pos, replacing.unwrap_or(self.cols.len()))?;
        self.cols.insert(
            at.min(self.cols.len()),
            WCol {
                def,
                src,
                explicit_null: p.explicit_null,
            },
        );
        if p.primary {
            self.add_primary(vec![name.clone()])?;
        }
        if p.unique {
            self.add_index(None, vec![name], Vec::new(), true)?;
        }
        self.new_checks
            .extend(p.checks.into_iter().map(|(n, e)| (n, e, true)));
        Ok(())
    }

    fn add_index(
        &mut self,
        name: Option<String>,
        cols: Vec<String>,
        prefix: Vec<u32>,
        unique: bool,
    ) -> SqlResult<()> {
        for c in &cols {
            if self.find(c).is_none() {
                return Err(key_column_missing(c));
            }
        }
        let name = match name {
            Some(n) => {
                catalog::check_name(NameKind::Index, &n)?;
                if same_name(&n, "PRIMARY") {
                    return Err(SqlError::new(
                        1280,
                        "42000",
                        format!("Incorrect index name '{n}'"),
                    ));
                }
                if self.index(&n).is_some() {
                    return Err(duplicate_key_name(&n));
                }
                n
            }
            // MySQL names it after its first column, `_2`, `_3`... when taken.
            None => {
                let base = cols.first().cloned().unwrap_or_else(|| "key".into());
                let mut n = base.clone();
                let mut k = 2;
                while self.index(&n).is_some() || same_name(&n, "PRIMARY") {
                    n = format!("{base}_{k}");
                    k += 1;
                }
                n
            }
        };
        self.indexes.push(WIndex {
            name,
            cols,
            prefix,
            unique,
            old: None,
        });
        Ok(())
    }

    fn add_primary(&mut self, cols: Vec<String>) -> SqlResult<()> {
        if self.pk.is_some() {
            return Err(SqlError::new(1068, "42000", "Multiple primary key defined"));
        }
        for c in &cols {
            if self.find(c).is_none() {
                return Err(key_column_missing(c));
            }
        }
        self.pk = Some(cols);
        Ok(())
    }

    fn apply(&mut self, s: &mut StmtCx, op: Op) -> SqlResult<()> {
        match op {
            Op::AddColumn(c, pos) => self.put_column(s, &c, &pos, None)?,
            Op::Change { old, col, pos } => {
                let i = self.column(&old)?;
                self.put_column(s, &col, &pos, Some(i))?;
            }
            Op::DropColumn(name) => {
                let i = self.find(&name).ok_or_else(|| cant_drop(&name))?;
                if let Some(fk) = self
                    .fks
                    .iter()
                    .find(|fk| fk.columns.iter().any(|c| same_name(c, &name)))
                {
                    return Err(SqlError::new(
                        1828,
                        "HY000",
                        format!(
                            "Cannot drop column '{name}': needed in a foreign key constraint '{}'",
                            fk.name
                        ),
                    ));
                }

                self.cols.remove(i);
                self.drop_refs(&name);
            }
            Op::RenameColumn(from, to) => {
                let i = self.column(&from)?;
                catalog::check_name(NameKind::Column, &to)?;
                if self.find(&to).is_some_and(|j| j != i) {
                    return Err(duplicate_column(&to));
                }
                if let Some(c) = self.cols.get_mut(i) {
                    c.def.name = to.clone();
                }
                self.rename_refs(&from, &to);
            }
            Op::SetDefault(name, e) => {
                let i = self.column(&name)?;
                let Some(col) = self.cols.get(i).map(|c| c.def.clone()) else {
                    return Err(self.unknown_column(&name));
                };
                let v = column_default(s, &col, Some(&e))?;
                if col.auto_increment {
                    return Err(SqlError::new(
                        1067,
                        "42000",
                        format!("Invalid default value for '{name}'"),
                    ));
                }
                if let Some(c) = self.cols.get_mut(i) {
                    c.def.default = v;
                }
            }
            Op::DropDefault(name) => {
                let i = self.column(&name)?;
                if let Some(c) = self.cols.get_mut(i) {
                    c.def.default = None;
                }
            }
            Op::AddIndex {
                name,
                cols,
                prefix,
                unique,
            } => self.add_index(name, cols, prefix, unique)?,
            Op::AddPrimary(cols) => self.add_primary(cols)?,
            Op::DropIndex(name) if same_name(&name, "PRIMARY") => self.drop_primary()?,
            Op::DropIndex(name) => {
                let i = self.index(&name).ok_or_else(|| cant_drop(&name))?;
                if self.fk_needing(Some(i)).is_some() {
                    return Err(SqlError::new(
                        1553,
                        "HY000",
                        format!("Cannot drop index '{name}': needed in a foreign key constraint"),
                    ));
                }
                self.indexes.remove(i);
            }
            Op::DropConstraint(name) => {
                if let Some(i) = self
                    .indexes
                    .iter()
                    .position(|ix| ix.unique && same_name(&ix.name, &name))
                {
                    let n = self
                        .indexes
                        .get(i)
                        .map(|ix| ix.name.clone())
                        .unwrap_or_default();
                    return self.apply(s, Op::DropIndex(n));
                }
                if self.fks.iter().any(|f| same_name(&f.name, &name)) {
                    return self.apply(s, Op::DropForeignKey(name));
                }
                if self.checks.iter().any(|c| same_name(&c.name, &name)) {
                    return self.apply(s, Op::DropCheck(name));
                }
                return Err(SqlError::new(
                    3940,
                    "HY000",
                    format!("Constraint '{name}' does not exist."),
                ));
            }
            Op::DropForeignKey(name) => {
                let i = self
                    .fks
                    .iter()
                    .position(|f| same_name(&f.name, &name))
                    .ok_or_else(|| cant_drop(&name))?;
                self.fks.remove(i);
            }
            Op::DropCheck(name) => {
                let i = self
                    .checks
                    .iter()
                    .position(|c| same_name(&c.name, &name))
                    .ok_or_else(|| {
                        SqlError::new(
                            3821,
                            "HY000",
                            format!("Check constraint '{name}' is not found in the table."),
                        )
                    })?;
                self.checks.remove(i);
            }
            Op::EnforceCheck(name, on) => {
                let c = self
                    .checks
                    .iter_mut()
                    .find(|c| same_name(&c.name, &name))
                    .ok_or_else(|| {
                        SqlError::new(
                            3821,
                            "HY000",
                            format!("Check constraint '{name}' is not found in the table."),
                        )
                    })?;
                if on && !c.enforced {
                    self.enforced_now.push(c.name.clone());
                }
                c.enforced = on;
            }
            Op::AddForeignKey(c) => self.new_fks.push(*c),
            Op::AddCheck(name, e, enforced) => self.new_checks.push((name, *e, enforced)),
            Op::DropPrimary => self.drop_primary()?,
            Op::RenameIndex(from, to) => {
                let missing = || {
                    SqlError::new(
                        1176,
                        "42000",
                        format!("Key '{from}' doesn't exist in table '{}'", self.old.name),
                    )
                };
                if same_name(&from, "PRIMARY") || same_name(&to, "PRIMARY") {
                    let n = if same_name(&to, "PRIMARY") {
                        &to
                    } else {
                        &from
                    };
                    return Err(SqlError::new(
                        1280,
                        "42000",
                        format!("Incorrect index name '{n}'"),
                    ));
                }
                let i = self.index(&from).ok_or_else(missing)?;
                catalog::check_name(NameKind::Index, &to)?;
                if self.index(&to).is_some_and(|j| j != i) {
                    return Err(duplicate_key_name(&to));
                }
                if let Some(ix) = self.indexes.get_mut(i) {
                    ix.name = to;
                }
            }
            Op::IndexVisibility(name, visible) => {
                if self.index(&name).is_none() {
                    return Err(SqlError::new(
                        1176,
                        "42000",
                        format!("Key '{name}' doesn't exist in table '{}'", self.old.name),
                    ));
                }
                if !visible {
                    return Err(SqlError::unsupported("invisible indexes"));
                }
            }
            Op::RenameTable(n) => self.rename = Some(n),
            Op::AutoIncrement(n) => self.auto_increment = Some(n),
            Op::Comment(c) => {
                if c.chars().count() > 2048 {
                    return Err(SqlError::new(
                        1628,
                        "HY000",
                        format!(
                            "Comment for table '{}' is too long (max = 2048)",
                            self.old.name
                        ),
                    ));
                }
                self.comment = c;
            }
            Op::Convert { charset, collation } => {
                let coll = match &collation {
                    Some(c) => collation_from(c)?,
                    None if charset == "binary" => Collation::Binary,
                    None => Collation::Utf8mb4GeneralCi,
                };
                for c in &mut self.cols {
                    if let Some(ty) = converted(c.def.ty, coll) {
                        c.def.ty = ty;
                    }
                }
            }
            Op::Force => self.force = true,
            Op::Algorithm(a) => self.algorithm = Some(a),
            Op::Lock(l) => self.lock = Some(l),
            Op::Nothing => {}
        }
        Ok(())
    }

    fn drop_primary(&mut self) -> SqlResult<()> {
        if self.pk.take().is_none() {
            return Err(cant_drop("PRIMARY"));
        }
        Ok(())
    }

    /// The altered definition (ids of kept indexes as they were, 0 for new
    /// ones) and how to get there.
    fn finish(mut self) -> SqlResult<Outcome> {
        if self.cols.is_empty() {
            return Err(SqlError::new(
                1090,
                "42000",
                "You can't delete all columns with ALTER TABLE; use DROP TABLE instead",
            ));
        }
        let positions = |w: &Work, names: &[String]| -> SqlResult<Vec<usize>> {
            names
                .iter()
                .map(|n| w.find(n).ok_or_else(|| key_column_missing(n)))
                .collect()
        };
        let pk = match &self.pk {
            Some(names) => positions(&self, names)?,
            None => Vec::new(),
        };
        // Primary-key columns are NOT NULL.
        for &c in &pk {
            if let Some(col) = self.cols.get_mut(c) {
                if col.def.nullable {
                    if col.explicit_null {
                        return Err(SqlError::new(
                            1171,
                            "42000",
                            "All parts of a PRIMARY KEY must be NOT NULL; if you need NULL in a key, use UNIQUE instead",
                        ));
                    }
                    col.def.nullable = false;
                }
            }
        }
        let autos = self.cols.iter().filter(|c| c.def.auto_increment).count();
        if let Some(a) = self.cols.iter().position(|c| c.def.auto_increment) {
            if pk.first() != Some(&a) || autos > 1 {
                return Err(SqlError::new(
                    1075,
                    "42000",
                    "Incorrect table definition; there can be only one auto column and it must be defined as the first column of the primary key",
                ));
            }
        }
        let old = self.old;
        let mut secondary = Vec::new();
        let mut kept = Vec::new();
        for ix in &self.indexes {
            let columns = positions(&self, &ix.cols)?;
            let id = ix
                .old
                .and_then(|o| old.secondary.get(o))
                .map_or(0, |o| o.id);
            if id != 0 {
                kept.push(id);
            }
            secondary.push(IndexDef {
                name: ix.name.clone(),
                id,
                columns,
                unique: ix.unique,
                prefix: ix.prefix.clone(),
            });
        }
        let srcs: Vec<Option<usize>> = self.cols.iter().map(|c| c.src).collect();
        let (new_fks, new_checks, enforced_now) = (
            std::mem::take(&mut self.new_fks),
            std::mem::take(&mut self.new_checks),
            std::mem::take(&mut self.enforced_now),
        );
        let new = TableDef {
            name: old.name.clone(),
            columns: self.cols.into_iter().map(|c| c.def).collect(),
            primary: IndexDef {
                name: "PRIMARY".into(),
                id: old.primary.id,
                columns: pk,
                unique: true,
                prefix: Vec::new(),
            },
            hidden_pk: self.pk.is_none(),
            secondary,
            comment: self.comment,
            auto_increment_floor: self.auto_increment.unwrap_or(old.auto_increment_floor),
            foreign_keys: self.fks,
            checks: self.checks,
            referenced_by: old.referenced_by.clone(),
        };
        new.check_key_columns()?;
        // The rows keep their bytes when every column is where it was with
        // the same storage, under the same primary key.
        let same_rows = new.columns.len() == old.columns.len()
            && srcs.iter().enumerate().all(|(i, s)| *s == Some(i))
            && new.columns.iter().zip(&old.columns).all(|(n, o)| {
                n.nullable == o.nullable
                    && ((n.ty == o.ty && n.elements == o.elements) || widened(o.ty, n.ty))
            })
            && new.hidden_pk == old.hidden_pk
            && new.primary.columns == old.primary.columns;
        let copy_forced = self.force || self.algorithm == Some(ast::AlterTableAlgorithm::Copy);
        let rebuild = copy_forced || !same_rows;
        let retyped = srcs.iter().zip(&new.columns).any(|(s, n)| {
            s.and_then(|i| old.columns.get(i))
                .is_some_and(|o| (o.ty != n.ty || o.elements != n.elements) && !widened(o.ty, n.ty))
        });
        let added = new.secondary.iter().any(|ix| ix.id == 0);
        let dropped: Vec<u32> = old
            .secondary
            .iter()
            .map(|ix| ix.id)
            .filter(|id| !kept.contains(id))
            .collect();
        let any_widened = new
            .columns
            .iter()
            .zip(&old.columns)
            .any(|(n, o)| n.ty != o.ty || n.elements != o.elements);
        let level = if rebuild {
            if retyped {
                Level::Copy
            } else {
                Level::Inplace
            }
        } else if added || !dropped.is_empty() || self.auto_increment.is_some() || any_widened {
            Level::Inplace
        } else {
            Level::Instant
        };
        Ok(Outcome {
            new_fks,
            new_checks,
            enforced_now,
            new,
            srcs,
            rebuild,
            level,
            dropped,
            rename: self.rename,
            algorithm: self.algorithm,
            lock: self.lock,
        })
    }
}

/// What an ALTER comes to.
struct Outcome {
    /// Foreign keys and CHECKs to add (checked against the catalog and
    /// the rows in `run`).
    new_fks: Vec<ast::TableConstraint>,
    new_checks: Vec<(Option<String>, ast::Expr, bool)>,
    enforced_now: Vec<String>,
    new: TableDef,
    /// Per new column, its position in the old table (None: added).
    srcs: Vec<Option<usize>>,
    /// The rows are copied under new ids.
    rebuild: bool,
    level: Level,
    /// Secondary index ids no longer used (when not copying).
    dropped: Vec<u32>,
    rename: Option<ast::ObjectName>,
    algorithm: Option<ast::AlterTableAlgorithm>,
    lock: Option<ast::AlterTableLock>,
}

/// A column type after `CONVERT TO CHARACTER SET`: text columns take the
/// collation; to `binary` they become binary strings (a character takes
/// up to 4 bytes). None for columns it leaves alone.
fn converted(ty: ColumnType, coll: Collation) -> Option<ColumnType> {
    let ColumnType::Str {
        kind,
        max_len,
        collation,
    } = ty
    else {
        return None;
    };
    if !ty.is_text() || collation == coll {
        return None;
    }
    if coll != Collation::Binary {
        return Some(ColumnType::Str {
            kind,
            max_len,
            collation: coll,
        });
    }
    let (kind, max_len) = match kind {
        StrKind::Char => (StrKind::Binary, max_len.saturating_mul(4).min(255)),
        StrKind::VarChar => (StrKind::VarBinary, max_len.saturating_mul(4).min(65_535)),
        _ => (StrKind::Blob, max_len),
    };
    Some(ColumnType::Str {
        kind,
        max_len,
        collation: Collation::Binary,
    })
}

/// Whether `to` holds every value of `from` with the same bytes, in rows
/// and keys: a longer string of the same kind and collation.
fn widened(from: ColumnType, to: ColumnType) -> bool {
    match (from, to) {
        (
            ColumnType::Str {
                kind: k1,
                max_len: l1,
                collation: c1,
            },
            ColumnType::Str {
                kind: k2,
                max_len: l2,
                collation: c2,
            },
        ) => k1 == k2 && c1 == c2 && l2 >= l1 && k1 != StrKind::Binary,
        _ => false,
    }
}

/// 1845/1846 when the requested ALGORITHM or LOCK cannot be honoured.
fn check_algorithm(o: &Outcome) -> SqlResult<()> {
    use ast::AlterTableAlgorithm as Al;
    match o.algorithm {
        Some(Al::Instant) if o.level > Level::Instant => {
            let try_ = if o.level == Level::Copy {
                "ALGORITHM=COPY"
            } else {
                "ALGORITHM=COPY/INPLACE"
            };
            return Err(SqlError::new(
                1845,
                "0A000",
                format!("ALGORITHM=INSTANT is not supported for this operation. Try {try_}."),
            ));
        }
        Some(Al::Inplace) if o.level == Level::Copy => {
            return Err(SqlError::new(
                1846,
                "0A000",
                "ALGORITHM=INPLACE is not supported. Reason: Cannot change column type INPLACE. Try ALGORITHM=COPY.",
            ));
        }
        _ => {}
    }
    let scans = o.rebuild || o.new.secondary.iter().any(|ix| ix.id == 0);
    if o.lock == Some(ast::AlterTableLock::None) && scans {
        return Err(SqlError::new(
            1846,
            "0A000",
            "LOCK=NONE is not supported. Reason: writes wait while rows are copied or an index is built. Try LOCK=SHARED.",
        ));
    }
    Ok(())
}

// -------------------------------------------------------------- running

/// `[db.]name` with the given default database.
fn qualify(parts: &[String], default_db: Option<&str>) -> SqlResult<(String, String)> {
    match parts {
        [t] => Ok((
            default_db.ok_or_else(SqlError::no_database)?.to_string(),
            t.clone(),
        )),
        [d, t] => Ok((d.clone(), t.clone())),
        _ => Err(SqlError::syntax("bad table name")),
    }
}

/// Checks that `db.name` may become a table's name: a valid name in an
/// existing database (1049), not taken by another table (1050). Returns
/// the database's name as created.
fn check_target(
    cat: &Catalog,
    db: &str,
    name: &str,
    same_as: Option<(&str, &str)>,
) -> SqlResult<String> {
    catalog::check_name(NameKind::Table, name)?;
    let d = cat
        .database(db)
        .ok_or_else(|| SqlError::unknown_database(db))?;
    let itself = same_as.is_some_and(|(sd, st)| same_name(sd, db) && same_name(st, name));
    if !itself
        && (d.tables.contains_key(&name.to_lowercase())
            || d.views.contains_key(&name.to_lowercase()))
    {
        return Err(SqlError::table_exists(name));
    }
    Ok(d.name.clone())
}

/// Runs an ALTER TABLE statement.
pub(crate) fn run(s: &mut StmtCx, text: &str, out: &mut dyn Output) -> SqlResult<()> {
    let (name, ops) = parse(text)?;
    // Privileges first, by name: a denial does not tell whether the
    // table exists.
    let (pdb, ptable) = crate::plan::table_name(s, &name)?;
    crate::acl::check_table(s, &pdb, &ptable, crate::acl::ALTER)?;
    s.commit()?;
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let schema = schema_write(s, &db)?;
    // Read under the DDL lock (see `ddl::create_index`).
    let (dbname, def) = resolve_table(s, &name)?;
    let mut cat = db.catalog.read().clone();
    let dbname = cat
        .database(&dbname)
        .map(|d| d.name.clone())
        .ok_or_else(|| SqlError::unknown_database(&dbname))?;
    let mut w = Work::new(&def);
    for op in ops {
        w.apply(s, op)?;
    }
    let mut o = w.finish()?;
    check_algorithm(&o)?;
    // Other tables' foreign keys that reference this one.
    let fk_children = if crate::constraints::fk_checks(s) && !def.referenced_by.is_empty() {
        crate::constraints::children_after_alter(&cat, &dbname, &def, &o.new, &o.srcs)?
    } else {
        Vec::new()
    };
    let added_constraints =
        !o.new_fks.is_empty() || !o.new_checks.is_empty() || !o.enforced_now.is_empty();
    let mut added_names: Vec<String> = std::mem::take(&mut o.enforced_now);
    for (name, e, enforced) in std::mem::take(&mut o.new_checks) {
        let db_checks = crate::constraints::names_in_db(&cat, &dbname, Some(&def.name), true);
        crate::constraints::add_check(&mut o.new, name, &e, enforced, &db_checks)?;
        if let Some(c) = o.new.checks.last() {
            added_names.push(c.name.clone());
        }
    }
    if !o.new_fks.is_empty() {
        let mut fks = Vec::new();
        for c in std::mem::take(&mut o.new_fks) {
            if let Some(fk) = crate::constraints::fk_from_ast(&c, &dbname)? {
                fks.push(fk);
            }
        }
        let db_fks = crate::constraints::names_in_db(&cat, &dbname, Some(&def.name), false);
        let parent_of = |d: &str, t: &str| cat.table(d, t).ok();
        let before = o.new.foreign_keys.len();
        crate::constraints::prepare_fks(s, &dbname, &mut o.new, fks, &db_fks, &parent_of)?;
        // A foreign key may have added an index: not on a JSON column.
        o.new.check_key_columns()?;
        added_names.extend(
            o.new
                .foreign_keys
                .iter()
                .skip(before)
                .map(|f| f.name.clone()),
        );
    }
    let (new_db, new_name) = match &o.rename {
        Some(n) => {
            let (d, t) = qualify(&object_parts(n), Some(&dbname))?;
            // A rename also drops the old name and creates the new one.
            crate::acl::check_table(s, &dbname, &def.name, crate::acl::DROP)?;
            crate::acl::check_table(s, &d, &t, crate::acl::CREATE | crate::acl::INSERT)?;
            let d = check_target(&cat, &d, &t, Some((&dbname, &def.name)))?;
            (d, t)
        }
        None => (dbname.clone(), def.name.clone()),
    };
    o.new.name = new_name;
    if !o.rebuild && o.new == *def && same_name(&new_db, &dbname) {
        out.ok(
            0,
            0,
            s.warning_count(),
            "Records: 0  Duplicates: 0  Warnings: 0",
        );
        return Ok(());
    }
    let old_ids = index_ids(&def);
    let mut new_ids = Vec::new();
    let mut take_id = |cat: &mut Catalog| {
        let id = cat.next_index_id;
        cat.next_index_id += 1;
        new_ids.push(id);
        id
    };
    if o.rebuild {
        o.new.primary.id = take_id(&mut cat);
    }
    for ix in &mut o.new.secondary {
        if o.rebuild || ix.id == 0 {
            ix.id = take_id(&mut cat);
        }
    }
    let next = cat.next_index_id;
    let mut records = 0;
    if !new_ids.is_empty() {
        // Recorded as used before any key carries them: after a crash
        // their keys are orphans the sweep at open deletes, never keys of
        // a later index given the same id.
        db.with_txn(|t| dict_header(t, next))?;
        db.ddl_step("alter:ids");
        let filled = if o.rebuild {
            carry_counter(&db, &def, &mut o)?;
            copy_rows(s, &db, &def, &o.new, &o.srcs).map(|n| records = n)
        } else {
            o.new
                .secondary
                .iter()
                .filter(|ix| new_ids.contains(&ix.id))
                .try_for_each(|ix| backfill(&db, &o.new, ix))
        };
        let filled = filled.and_then(|()| {
            if added_constraints {
                check_new_constraints(s, &dbname, &o.new, &added_names)
            } else {
                Ok(())
            }
        });
        if let Err(e) = filled {
            // The ids stay used (the dictionary says so): the catalog
            // hands out the ones after them.
            db.note_next_index_id(next);
            db.delete_index_data(&new_ids)?;
            return Err(e);
        }
        db.ddl_step("alter:copied");
    }
    if new_ids.is_empty() && added_constraints {
        check_new_constraints(s, &dbname, &o.new, &added_names)?;
    }
    // The switch: one synced dictionary transaction.
    let enc = catalog::encode_table(&o.new)?;
    let old_key = catalog::table_key(&dbname, &def.name);
    let new_key = catalog::table_key(&new_db, &o.new.name);
    if let Some(d) = cat.dbs.get_mut(&dbname.to_lowercase()) {
        d.tables.remove(&def.name.to_lowercase());
    }
    if let Some(d) = cat.dbs.get_mut(&new_db.to_lowercase()) {
        d.tables
            .insert(o.new.name.to_lowercase(), Arc::new(o.new.clone()));
    }
    let mut dirty = Vec::new();
    for (d, t, c) in fk_children {
        if let Some(x) = cat.dbs.get_mut(&d) {
            x.tables.insert(t.clone(), Arc::new(c));
            dirty.push((d, t));
        }
    }
    // Foreign keys that reference a renamed table follow it.
    if old_key != new_key {
        dirty.extend(crate::constraints::retarget(
            &mut cat,
            &dbname,
            &def.name,
            &new_db,
            &o.new.name,
        ));
    }
    let mut children = Vec::new();
    for (d, t) in dirty {
        if let Some(c) = cat.dbs.get(&d).and_then(|x| x.tables.get(&t)) {
            children.push((catalog::table_key(&d, &t), catalog::encode_table(c)?));
        }
    }
    let enc = match cat
        .dbs
        .get(&new_db.to_lowercase())
        .and_then(|d| d.tables.get(&o.new.name.to_lowercase()))
    {
        Some(t) => catalog::encode_table(t)?,
        None => enc,
    };
    db.with_txn(|t| {
        dict_header(t, next)?;
        if old_key != new_key {
            t.delete(&old_key)?;
        }
        for (k, v) in &children {
            if *k != new_key {
                put_dict(t, k, v)?;
            }
        }
        put_dict(t, &new_key, &enc)
    })?;
    db.install_catalog(cat);
    if o.rebuild || o.new.auto_increment_floor != def.auto_increment_floor {
        // Loaded again from the table (and its floor) at the next use.
        db.counters.lock().remove(&def.primary.id);
    }
    db.ddl_step("alter:switched");
    // Writers under the new definition need not wait for the deletion.
    drop(schema);
    let dead: Vec<u32> = if o.rebuild { old_ids } else { o.dropped };
    db.delete_index_data(&dead)?;
    db.ddl_step("alter:done");
    let affected = if o.rebuild { records } else { 0 };
    out.ok(
        affected,
        0,
        s.warning_count(),
        &format!("Records: {affected}  Duplicates: 0  Warnings: 0"),
    );
    Ok(())
}

/// Checks the rows of the altered table (already under `new`'s ids)
/// against the constraints `names` added: CHECKs always, foreign keys
/// when `foreign_key_checks` is on.
fn check_new_constraints(s: &StmtCx, db: &str, new: &TableDef, names: &[String]) -> SqlResult<()> {
    let mut t = new.clone();
    t.referenced_by.clear();
    t.checks.retain(|c| names.contains(&c.name));
    t.foreign_keys.retain(|f| names.contains(&f.name));
    crate::constraints::check_existing(s, db, &Arc::new(t))
}

/// A copied table's AUTO_INCREMENT goes on from where the old one was
/// (its counter in memory may be past the largest key), kept as the new
/// definition's floor.
fn carry_counter(db: &SqlDb, old: &TableDef, o: &mut Outcome) -> SqlResult<()> {
    let auto_of = |t: &TableDef| {
        t.primary
            .columns
            .first()
            .filter(|c| t.columns.get(**c).is_some_and(|c| c.auto_increment))
            .copied()
    };
    let (Some(old_auto), Some(new_auto)) = (auto_of(old), auto_of(&o.new)) else {
        return Ok(());
    };
    if old.hidden_pk || o.srcs.get(new_auto).copied().flatten() != Some(old_auto) {
        return Ok(());
    }
    let next = db.current_counter(old)?;
    if next > 1 {
        o.new.auto_increment_floor = o.new.auto_increment_floor.max(next);
    }
    Ok(())
}

/// A value read from the old table for a column of the new one; ALTER's
/// errors where INSERT's would differ: NULL into NOT NULL 1138, a string
/// too long 1265.
fn convert(v: Value, col: &ColumnDef, row: u64) -> SqlResult<Value> {
    crate::convert::to_column(v, col, row).map_err(|e| match e.code {
        1048 => SqlError::new(1138, "22004", "Invalid use of NULL value"),
        1406 => SqlError::new(
            1265,
            "01000",
            format!("Data truncated for column '{}' at row {row}", col.name),
        ),
        _ => e,
    })
}

/// A unique key whose entries the copy checks for duplicates.
struct UniqueCheck {
    /// Its position in `secondary`; None for the primary key.
    index: Option<usize>,
    /// Key prefixes written in the batch not yet in the engine.
    batch: HashSet<Vec<u8>>,
}

/// Whether a unique key of `new` (columns `cols`) is one the old table
/// already had over the same columns, values unchanged: its values are
/// unique already.
fn unique_already(old: &TableDef, new: &TableDef, srcs: &[Option<usize>], cols: &[usize]) -> bool {
    let sig: Option<Vec<(usize, ColumnType)>> = cols
        .iter()
        .map(|c| {
            let src = srcs.get(*c).copied().flatten()?;
            let ty = new.columns.get(*c)?.ty;
            (old.columns.get(src)?.ty == ty).then_some((src, ty))
        })
        .collect();
    let Some(sig) = sig else {
        return false;
    };
    let old_sig = |ix: &IndexDef| -> Vec<(usize, ColumnType)> {
        ix.columns
            .iter()
            .filter_map(|c| old.columns.get(*c).map(|d| (*c, d.ty)))
            .collect()
    };
    (!old.hidden_pk && old_sig(&old.primary) == sig)
        || old
            .secondary
            .iter()
            .any(|ix| ix.unique && old_sig(ix) == sig)
}

/// Copies every row of `old` into `new`'s (new) index ids, converting
/// values, in batches; checks new unique keys. Returns the rows copied.
fn copy_rows(
    s: &StmtCx,
    db: &SqlDb,
    old: &TableDef,
    new: &TableDef,
    srcs: &[Option<usize>],
) -> SqlResult<u64> {
    let mut it = db.scan_index(old.primary.id)?;
    let mut checks: Vec<UniqueCheck> = Vec::new();
    if !new.hidden_pk && !unique_already(old, new, srcs, &new.primary.columns) {
        checks.push(UniqueCheck {
            index: None,
            batch: HashSet::new(),
        });
    }
    for (i, ix) in new.secondary.iter().enumerate() {
        if ix.unique && !unique_already(old, new, srcs, &ix.columns) {
            checks.push(UniqueCheck {
                index: Some(i),
                batch: HashSet::new(),
            });
        }
    }
    // The new ids are consecutive: one range covers them all.
    let all_new = index_ids(new);
    let probe_range = (
        all_new.iter().min().copied().unwrap_or(new.primary.id),
        all_new.iter().max().copied().unwrap_or(new.primary.id),
    );
    let probe_opts = || {
        let (lo, _) = keys::index_bounds(probe_range.0);
        let (_, hi) = keys::index_bounds(probe_range.1);
        cairndb::ReadOptions {
            iterate_lower_bound: Some(lo),
            iterate_upper_bound: Some(hi),
            fill_cache_off: true,
            ..Default::default()
        }
    };
    // Values of added columns: their default, NULL, or the type's
    // implicit default (an AUTO_INCREMENT column is numbered).
    let added: Vec<Value> = new
        .columns
        .iter()
        .map(|c| match &c.default {
            Some(v) => v.clone(),
            None if c.nullable => Value::Null,
            None => crate::convert::implicit_default_of(c),
        })
        .collect();
    let mut auto_next = new.auto_increment_floor.max(1);
    let mut probe: Option<cairndb::DbIterator> = None;
    let mut batch = cairndb::WriteBatch::new();
    let mut in_batch = 0;
    let mut orow = vec![Value::Null; old.columns.len()];
    let mut nrow: Vec<Value> = Vec::with_capacity(new.columns.len());
    let mut unpack = Vec::new();
    let (mut k, mut v, mut p) = (Vec::new(), Vec::new(), Vec::new());
    let mut n: u64 = 0;
    while it.valid() {
        n += 1;
        if n.is_multiple_of(1024) {
            s.check_interrupt()?;
        }
        let hidden = row::decode_row_into(old, it.key(), it.value(), &mut orow, &mut unpack)
            .ok_or_else(|| SqlError::internal(format!("row of {} is damaged", old.name)))?;
        nrow.clear();
        for (j, col) in new.columns.iter().enumerate() {
            let val = match srcs.get(j).copied().flatten() {
                Some(i) => {
                    let val = orow.get(i).cloned().unwrap_or(Value::Null);
                    let same = old
                        .columns
                        .get(i)
                        .is_some_and(|o| o.ty == col.ty && o.elements == col.elements);
                    if same && (col.nullable || !val.is_null()) {
                        val
                    } else {
                        convert(val, col, n)?
                    }
                }
                None if col.auto_increment => {
                    let x = auto_next;
                    auto_next += 1;
                    convert(Value::UInt(x), col, n)?
                }
                None => added.get(j).cloned().unwrap_or(Value::Null),
            };
            nrow.push(val);
        }
        let new_hidden = match (new.hidden_pk, old.hidden_pk) {
            (true, true) => hidden,
            (true, false) => n,
            _ => 0,
        };
        row::pk_key(new, &nrow, new_hidden, &mut k);
        for c in &mut checks {
            let (cols, ixname) = match c.index.and_then(|i| new.secondary.get(i)) {
                Some(ix) => (&ix.columns, ix.name.as_str()),
                None => (&new.primary.columns, "PRIMARY"),
            };
            let vals: Vec<Value> = cols
                .iter()
                .map(|c| nrow.get(*c).cloned().unwrap_or(Value::Null))
                .collect();
            if vals.iter().any(Value::is_null) {
                continue;
            }
            match c.index.and_then(|i| new.secondary.get(i)) {
                Some(ix) => row::index_prefix(new, ix, &vals, &mut p),
                None => p.clone_from(&k),
            }
            let mut dup = !c.batch.insert(p.clone());
            if !dup {
                if let Some(pr) = probe.as_mut() {
                    pr.seek(&p);
                    dup = pr.valid() && pr.key().starts_with(&p);
                    pr.status()?;
                }
            }
            if dup {
                let ix = c
                    .index
                    .and_then(|i| new.secondary.get(i))
                    .unwrap_or(&new.primary);
                return Err(SqlError::duplicate_key(
                    &row::shown_key(new, ix, &vals),
                    &format!("{}.{ixname}", old.name),
                ));
            }
        }
        row::row_value(new, &nrow, &mut v);
        batch.put(&k, &v);
        for ix in &new.secondary {
            row::secondary_entry(new, ix, &nrow, new_hidden, &mut k, &mut v);
            batch.put(&k, &v);
        }
        in_batch += 1;
        if in_batch == COPY_BATCH_ROWS {
            db.db
                .db()
                .write(&Default::default(), std::mem::take(&mut batch))?;
            in_batch = 0;
            for c in &mut checks {
                c.batch.clear();
            }
            if !checks.is_empty() {
                probe = Some(db.db.db().iter(&probe_opts())?);
            }
        }
        it.next();
    }
    it.status()?;
    db.db.db().write(&Default::default(), batch)?;
    Ok(n)
}

/// `RENAME TABLE a TO b [, c TO d]...`: applied in order (so `a TO tmp,
/// b TO a, tmp TO b` swaps), checked whole before anything is written,
/// then written in one synced dictionary transaction. Index ids stay:
/// no key moves, across databases too.
pub(crate) fn rename_tables(s: &mut StmtCx, list: &[ast::RenameTable]) -> SqlResult<()> {
    s.commit()?;
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = schema_write(s, &db)?;
    let mut cat = db.catalog.read().clone();
    let current = s.database().map(str::to_string);
    let mut touched: Vec<(String, String)> = Vec::new();
    for r in list {
        let (sdb, sname) = qualify(&object_parts(&r.old_name), current.as_deref())?;
        let (ddb, dname) = qualify(&object_parts(&r.new_name), current.as_deref())?;
        // As MySQL: ALTER and DROP on the old name, CREATE and INSERT on
        // the new one.
        crate::acl::check_table(s, &sdb, &sname, crate::acl::ALTER | crate::acl::DROP)?;
        crate::acl::check_table(s, &ddb, &dname, crate::acl::CREATE | crate::acl::INSERT)?;
        let def = cat
            .database(&sdb)
            .and_then(|d| d.tables.get(&sname.to_lowercase()).cloned())
            .ok_or_else(|| SqlError::no_such_table(&sdb, &sname))?;
        check_target(&cat, &ddb, &dname, Some((&sdb, &def.name)))?;
        if let Some(d) = cat.dbs.get_mut(&sdb.to_lowercase()) {
            d.tables.remove(&sname.to_lowercase());
        }
        let mut moved = (*def).clone();
        moved.name = dname.clone();
        if let Some(d) = cat.dbs.get_mut(&ddb.to_lowercase()) {
            d.tables.insert(dname.to_lowercase(), Arc::new(moved));
        }
        touched.push((sdb.to_lowercase(), sname.to_lowercase()));
        touched.push((ddb.to_lowercase(), dname.to_lowercase()));
        let ddb_name = cat.database(&ddb).map_or(ddb.clone(), |d| d.name.clone());
        touched.extend(crate::constraints::retarget(
            &mut cat, &sdb, &def.name, &ddb_name, &dname,
        ));
    }
    touched.sort();
    touched.dedup();
    let mut writes = Vec::new();
    for (d, t) in &touched {
        let def = cat.dbs.get(d).and_then(|x| x.tables.get(t));
        let enc = match def {
            Some(def) => Some(catalog::encode_table(def)?),
            None => None,
        };
        writes.push((catalog::table_key(d, t), enc));
    }
    let next = cat.next_index_id;
    db.with_txn(|t| {
        dict_header(t, next)?;
        for (k, enc) in &writes {
            match enc {
                Some(v) => put_dict(t, k, v)?,
                None => t.delete(k)?,
            }
        }
        Ok(())
    })?;
    db.install_catalog(cat);
    Ok(())
}
