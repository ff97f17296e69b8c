//! DDL and the other statements run from the AST: CREATE/DROP DATABASE,
//! CREATE/DROP TABLE, CREATE/DROP INDEX (a new index on a filled table is
//! back-filled), TRUNCATE, OPTIMIZE TABLE (a manual compaction of
//! the table's key ranges; no lock, readers and writers carry on).
//!
//! ALTER TABLE and RENAME TABLE are in `alter.rs`.
//!
//! Each statement first checks the session's privileges (`acl.rs`:
//! CREATE, DROP, INDEX on the table or database; 1142 or 1044). Each DDL
//! statement takes `SqlDb::ddl_lock`, commits an open
//! transaction first (as MySQL does), writes its dictionary changes in
//! one synced transaction, then installs the new catalog.

use std::sync::Arc;

use sqlparser::ast;

use crate::catalog::{self, Database};
use crate::context::StmtCx;
use crate::db::{dict_header, put_dict};
use crate::error::{SqlError, SqlResult};
use crate::output::{ColumnInfo, Output};
use crate::plan::{object_parts, resolve_table, table_name};
use crate::row::{ColumnDef, IndexDef, TableDef};
use crate::types::{Collation, ColumnType, StrKind, Value};

/// Runs a statement that has no plan.
pub(crate) fn run(s: &mut StmtCx, st: &ast::Statement, out: &mut dyn Output) -> SqlResult<()> {
    match st {
        // `KILL [CONNECTION | QUERY] id`: the statement stops at its next
        // row (1317); a killed connection also closes.
        ast::Statement::Kill { modifier, id } => {
            let connection = !matches!(modifier, Some(ast::KillType::Query));
            // Another user's session needs SUPER or CONNECTION_ADMIN.
            if let Some(owner) = s.db.registry.owner(*id) {
                if !crate::acl::owns(s, &owner)
                    && !crate::acl::has_global(s, crate::acl::SUPER | crate::acl::CONNECTION_ADMIN)
                {
                    return Err(SqlError::new(
                        1095,
                        "HY000",
                        format!("You are not owner of thread {id}"),
                    ));
                }
            }
            if !s.db.registry.kill(*id, connection) {
                return Err(SqlError::new(
                    1094,
                    "HY000",
                    format!("Unknown thread id: {id}"),
                ));
            }
            out.ok(0, 0, 0, "");
        }
        ast::Statement::CreateDatabase {
            db_name,
            if_not_exists,
            ..
        } => {
            crate::acl::check_db(s, &last(db_name), crate::acl::CREATE)?;
            s.commit()?;
            create_database(s, &last(db_name), *if_not_exists)?;
            out.ok(1, 0, s.warning_count(), "");
        }
        ast::Statement::CreateSchema {
            schema_name,
            if_not_exists,
            ..
        } => {
            crate::acl::check_db(s, &schema_name.to_string(), crate::acl::CREATE)?;
            s.commit()?;
            create_database(s, &schema_name.to_string(), *if_not_exists)?;
            out.ok(1, 0, 0, "");
        }
        ast::Statement::CreateTable(ct) => {
            let (db, t) = table_name(s, &ct.name)?;
            crate::acl::check_table(s, &db, &t, crate::acl::CREATE)?;
            s.commit()?;
            create_table(s, ct)?;
            out.ok(0, 0, s.warning_count(), "");
        }
        ast::Statement::CreateIndex(ci) => {
            let (db, t) = table_name(s, &ci.table_name)?;
            crate::acl::check_table(s, &db, &t, crate::acl::INDEX)?;
            s.commit()?;
            let name = ci
                .name
                .as_ref()
                .map(last)
                .ok_or_else(|| SqlError::syntax("CREATE INDEX needs a name"))?;
            let (cols, prefix) = key_parts(&ci.columns)?;
            create_index(
                s,
                &ci.table_name,
                &name,
                &cols,
                &prefix,
                ci.unique,
                ci.if_not_exists,
            )?;
            out.ok(0, 0, 0, "");
        }
        ast::Statement::Drop {
            object_type,
            if_exists,
            names,
            table,
            ..
        } => {
            match object_type {
                ast::ObjectType::Table => {
                    for n in names {
                        let (db, t) = table_name(s, n)?;
                        crate::acl::check_table(s, &db, &t, crate::acl::DROP)?;
                    }
                }
                ast::ObjectType::Database | ast::ObjectType::Schema => {
                    for n in names {
                        crate::acl::check_db(s, &last(n), crate::acl::DROP)?;
                    }
                }
                ast::ObjectType::Index => {
                    if let Some(t) = table {
                        let (db, t) = table_name(s, t)?;
                        crate::acl::check_table(s, &db, &t, crate::acl::INDEX)?;
                    }
                }
                _ => {}
            }
            s.commit()?;
            match object_type {
                ast::ObjectType::Table => {
                    for n in names {
                        drop_table(s, n, *if_exists, names)?;
                    }
                }
                ast::ObjectType::Database | ast::ObjectType::Schema => {
                    for n in names {
                        drop_database(s, &last(n), *if_exists)?;
                    }
                }
                ast::ObjectType::View => crate::view::drop_views(s, names, *if_exists)?,
                ast::ObjectType::Index => {
                    let t = table
                        .as_ref()
                        .ok_or_else(|| SqlError::syntax("DROP INDEX name ON table"))?;
                    for n in names {
                        drop_index(s, t, &last(n))?;
                    }
                }
                other => return Err(SqlError::unsupported(format!("DROP {other}"))),
            }
            out.ok(0, 0, s.warning_count(), "");
        }
        ast::Statement::Truncate { table_names, .. } => {
            for t in table_names {
                let (db, t) = table_name(s, &t.name)?;
                crate::acl::check_table(s, &db, &t, crate::acl::DROP)?;
            }
            s.commit()?;
            for t in table_names {
                truncate(s, &t.name)?;
            }
            out.ok(0, 0, 0, "");
        }
        ast::Statement::Explain { statement, .. } => crate::plan::explain::run(s, statement, out)?,
        // ALTER TABLE is classified before `sqlparser` (`Pre::AlterTable`);
        // a statement parsed whole still runs the same way.
        ast::Statement::AlterTable { .. } => crate::alter::run(s, &st.to_string(), out)?,
        ast::Statement::RenameTable(list) => {
            crate::alter::rename_tables(s, list)?;
            out.ok(0, 0, 0, "");
        }
        other => {
            let kind = other.to_string();
            let word: String = kind
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ");
            return Err(SqlError::unsupported(word));
        }
    }
    Ok(())
}

/// The exclusive schema lock, waiting at most the session's lock wait
/// timeout for transactions that write under the old schema (1205).
pub(crate) fn schema_write<'a>(
    s: &StmtCx,
    db: &'a crate::db::SqlDb,
) -> SqlResult<parking_lot::RwLockWriteGuard<'a, ()>> {
    let wait = std::time::Duration::from_secs(crate::vars::lock_wait_timeout(s));
    db.schema_lock
        .try_write_for(wait)
        .ok_or_else(SqlError::lock_wait_timeout)
}

/// `db.table` as MySQL names a table in messages: the current database
/// when the name has none.
fn qualified_name(s: &StmtCx, n: &ast::ObjectName) -> String {
    let parts = object_parts(n);
    match parts.as_slice() {
        [t] => format!("{}.{t}", s.current_db.as_deref().unwrap_or_default()),
        _ => parts.join("."),
    }
}

fn last(n: &ast::ObjectName) -> String {
    object_parts(n).last().cloned().unwrap_or_default()
}

fn create_database(s: &mut StmtCx, name: &str, if_not_exists: bool) -> SqlResult<()> {
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = schema_write(s, &db)?;
    let mut cat = db.catalog.read().clone();
    if cat.database(name).is_some() {
        if if_not_exists {
            let e = SqlError::database_exists(name);
            s.warnings.get_mut().push(("Note", e.code, e.message));
            return Ok(());
        }
        return Err(SqlError::database_exists(name));
    }
    catalog::check_name(catalog::NameKind::Database, name)?;
    let next = cat.next_index_id;
    db.with_txn(|t| {
        dict_header(t, next)?;
        put_dict(
            t,
            &catalog::database_key(name),
            &catalog::encode_database(name),
        )
    })?;
    cat.dbs.insert(
        name.to_lowercase(),
        Database {
            name: name.to_string(),
            ..Default::default()
        },
    );
    db.install_catalog(cat);
    Ok(())
}

fn drop_database(s: &mut StmtCx, name: &str, if_exists: bool) -> SqlResult<()> {
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = schema_write(s, &db)?;
    let mut cat = db.catalog.read().clone();
    let Some(d) = cat.database(name).cloned() else {
        if if_exists {
            s.warnings.get_mut().push((
                "Note",
                1008,
                format!("Can't drop database '{name}'; database doesn't exist"),
            ));
            return Ok(());
        }
        return Err(SqlError::new(
            1008,
            "HY000",
            format!("Can't drop database '{name}'; database doesn't exist"),
        ));
    };
    if crate::constraints::fk_checks(s) {
        // A parent goes only with its children: those in other databases
        // would be left referencing nothing (3730).
        for def in d.tables.values() {
            if let Some(r) = def
                .referenced_by
                .iter()
                .find(|r| !r.db.eq_ignore_ascii_case(name))
            {
                return Err(SqlError::new(
                    3730,
                    "HY000",
                    format!(
                        "Cannot drop table '{}' referenced by a foreign key constraint '{}' on table '{}'.",
                        def.name, r.fk, r.table
                    ),
                ));
            }
        }
    }
    let mut ids = Vec::new();
    db.with_txn(|t| {
        for (tn, def) in &d.tables {
            t.delete(&catalog::table_key(name, tn))?;
            ids.extend(index_ids(def));
        }
        for vn in d.views.keys() {
            t.delete(&catalog::view_key(name, vn))?;
        }
        t.delete(&catalog::database_key(name))?;
        Ok(())
    })?;
    db.ddl_step("drop_database:switched");
    cat.dbs.remove(&name.to_lowercase());
    db.install_catalog(cat);
    db.delete_index_data(&ids)?;
    db.ddl_step("drop_database:done");
    if s.current_db
        .as_deref()
        .is_some_and(|c| c.eq_ignore_ascii_case(name))
    {
        s.current_db = None;
    }
    Ok(())
}

pub(crate) fn index_ids(t: &TableDef) -> Vec<u32> {
    std::iter::once(t.primary.id)
        .chain(t.secondary.iter().map(|i| i.id))
        .collect()
}

/// Maps a parsed column type.
fn column_type(dt: &ast::DataType, collation: Collation) -> SqlResult<ColumnType> {
    use ast::DataType as D;
    let int = |bytes, unsigned| ColumnType::Int { bytes, unsigned };
    let len = |l: &Option<ast::CharacterLength>, default: u64| -> u32 {
        match l {
            Some(ast::CharacterLength::IntegerLength { length, .. }) => {
                (*length).min(u64::from(u32::MAX)) as u32
            }
            _ => default as u32,
        }
    };
    let text = |kind, max_len| ColumnType::Str {
        kind,
        max_len,
        collation,
    };
    let bin = |kind, max_len| ColumnType::Str {
        kind,
        max_len,
        collation: Collation::Binary,
    };
    Ok(match dt {
        D::TinyInt(_) | D::Bool | D::Boolean => int(1, false),
        D::TinyIntUnsigned(_) | D::UTinyInt => int(1, true),
        D::SmallInt(_) | D::Int2(_) => int(2, false),
        D::SmallIntUnsigned(_) | D::Int2Unsigned(_) | D::USmallInt => int(2, true),
        D::MediumInt(_) => int(3, false),
        D::MediumIntUnsigned(_) => int(3, true),
        D::Int(_) | D::Integer(_) | D::Int4(_) => int(4, false),
        D::IntUnsigned(_) | D::IntegerUnsigned(_) | D::Int4Unsigned(_) => int(4, true),
        D::BigInt(_) | D::Int8(_) => int(8, false),
        D::BigIntUnsigned(_) | D::Int8Unsigned(_) | D::UBigInt => int(8, true),
        D::Decimal(info)
        | D::Numeric(info)
        | D::Dec(info)
        | D::DecimalUnsigned(info)
        | D::DecUnsigned(info) => {
            let (p, sc) = match info {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
            };
            if p == 0 || p > 38 || sc > p || sc > 30 {
                return Err(SqlError::new(
                    1426,
                    "42000",
                    format!("Too-big precision {p} specified; the maximum is 38"),
                ));
            }
            ColumnType::Decimal {
                precision: p as u8,
                scale: sc as u8,
            }
        }
        D::Float(_) | D::FloatUnsigned(_) | D::Float4 => ColumnType::Float,
        D::Double(_)
        | D::DoubleUnsigned(_)
        | D::DoublePrecision
        | D::DoublePrecisionUnsigned
        | D::Real
        | D::Float8 => ColumnType::Double,
        D::Char(l) | D::Character(l) => text(StrKind::Char, len(l, 1)),
        D::Varchar(l) | D::CharVarying(l) | D::CharacterVarying(l) | D::Nvarchar(l) => {
            if l.is_none() {
                return Err(SqlError::syntax("VARCHAR needs a length"));
            }
            text(StrKind::VarChar, len(l, 255))
        }
        D::TinyText => text(StrKind::Text, 255),
        D::Text => text(StrKind::Text, 65_535),
        D::MediumText => text(StrKind::Text, 16_777_215),
        D::LongText => text(StrKind::Text, u32::MAX),
        D::Binary(l) => bin(StrKind::Binary, l.unwrap_or(1) as u32),
        D::Varbinary(l) => bin(
            StrKind::VarBinary,
            match l {
                Some(ast::BinaryLength::IntegerLength { length }) => *length as u32,
                _ => 255,
            },
        ),
        D::TinyBlob => bin(StrKind::Blob, 255),
        D::Blob(_) => bin(StrKind::Blob, 65_535),
        D::MediumBlob => bin(StrKind::Blob, 16_777_215),
        D::LongBlob => bin(StrKind::Blob, u32::MAX),
        D::Date => ColumnType::Date,
        D::Datetime(fsp) => ColumnType::DateTime {
            fsp: fsp.unwrap_or(0).min(6) as u8,
        },
        D::Timestamp(fsp, _) => ColumnType::Timestamp {
            fsp: fsp.unwrap_or(0).min(6) as u8,
        },
        D::Enum(members, _) => ColumnType::Enum {
            count: members.len().min(usize::from(u16::MAX)) as u16,
            collation,
        },
        D::Set(members) => ColumnType::Set {
            count: members.len().min(64) as u8,
            collation,
        },
        D::Time(fsp, ast::TimezoneInfo::None) => {
            let fsp = fsp.unwrap_or(0);
            if fsp > 6 {
                return Err(SqlError::new(
                    1426,
                    "42000",
                    format!("Too-big precision {fsp} specified. Maximum is 6."),
                ));
            }
            ColumnType::Time { fsp: fsp as u8 }
        }
        D::Bit(n) => {
            let n = n.unwrap_or(1);
            if !(1..=64).contains(&n) {
                return Err(SqlError::new(
                    1439,
                    "42000",
                    format!("Display width out of range (max = 64): {n}"),
                ));
            }
            ColumnType::Bit { bits: n as u8 }
        }
        // YEAR(4), deprecated, is YEAR.
        D::Custom(name, args)
            if (args.is_empty() || args.as_slice() == ["4"])
                && name.to_string().eq_ignore_ascii_case("year") =>
        {
            ColumnType::Year
        }
        D::JSON => ColumnType::Json,
        other => return Err(SqlError::unsupported(format!("column type {other}"))),
    })
}

/// The members of an ENUM or SET type (empty for other types): at most
/// 65535 (ENUM) or 64 (SET), else 1097; no two equal under the column's
/// collation, else 1291; a SET member holds no comma (1367).
fn column_elements(col: &str, dt: &ast::DataType, coll: Collation) -> SqlResult<Vec<String>> {
    let (members, kind, max): (Vec<String>, &str, usize) = match dt {
        ast::DataType::Enum(m, _) => (
            m.iter()
                .map(|e| match e {
                    ast::EnumMember::Name(n) | ast::EnumMember::NamedValue(n, _) => n.clone(),
                })
                .collect(),
            "ENUM",
            65_535,
        ),
        ast::DataType::Set(m) => (m.clone(), "SET", 64),
        _ => return Ok(Vec::new()),
    };
    if members.len() > max {
        return Err(SqlError::new(
            1097,
            "HY000",
            format!("Too many strings for column {col} and {kind}"),
        ));
    }
    // MySQL removes trailing spaces from members.
    let members: Vec<String> = members.iter().map(|m| m.trim_end().to_string()).collect();
    for (i, m) in members.iter().enumerate() {
        if kind == "SET" && m.contains(',') {
            return Err(SqlError::new(
                1367,
                "22007",
                format!("Illegal set '{m}' value found during parsing"),
            ));
        }
        if members
            .iter()
            .take(i)
            .any(|p| coll.cmp(p.as_bytes(), m.as_bytes()) == std::cmp::Ordering::Equal)
        {
            return Err(SqlError::new(
                1291,
                "HY000",
                format!("Column '{col}' has duplicated value '{m}' in {kind}"),
            ));
        }
    }
    Ok(members)
}

pub(crate) fn collation_from(name: &str) -> SqlResult<Collation> {
    match name.to_ascii_lowercase().trim_matches(['\'', '"', '`']) {
        "utf8mb4_general_ci" | "utf8_general_ci" | "utf8mb3_general_ci" | "utf8mb4_0900_ai_ci"
        | "utf8mb4_unicode_ci" | "latin1_swedish_ci" => Ok(Collation::Utf8mb4GeneralCi),
        "utf8mb4_bin" | "utf8_bin" | "utf8mb3_bin" | "latin1_bin" => Ok(Collation::Utf8mb4Bin),
        "binary" => Ok(Collation::Binary),
        other => Err(SqlError::new(
            1273,
            "HY000",
            format!("Unknown collation: '{other}'"),
        )),
    }
}

/// A column definition as written (CREATE TABLE, ALTER TABLE ADD /
/// MODIFY / CHANGE), its default not yet evaluated.
pub(crate) struct ParsedColumn {
    /// The column, without its default.
    pub(crate) def: ColumnDef,
    /// `DEFAULT expr`, to evaluate with [`column_default`].
    pub(crate) default: Option<ast::Expr>,
    /// An inline `PRIMARY KEY`.
    pub(crate) primary: bool,
    /// An inline `UNIQUE [KEY]`.
    pub(crate) unique: bool,
    /// An explicit `NULL`.
    pub(crate) explicit_null: bool,
    /// Inline `[CONSTRAINT name] CHECK (expr)`s.
    pub(crate) checks: Vec<(Option<String>, ast::Expr)>,
}

/// Reads a column definition; text columns without `COLLATE` get
/// `table_coll`.
pub(crate) fn parse_column(c: &ast::ColumnDef, table_coll: Collation) -> SqlResult<ParsedColumn> {
    catalog::check_name(catalog::NameKind::Column, &c.name.value)?;
    let mut coll = table_coll;
    for o in &c.options {
        if let ast::ColumnOption::Collation(n) = &o.option {
            coll = collation_from(&n.to_string())?;
        }
    }
    let ty = column_type(&c.data_type, coll)?;
    let elements = column_elements(&c.name.value, &c.data_type, coll)?;
    // BOOL is TINYINT(1); drivers read width 1 as a boolean.
    let width = match &c.data_type {
        ast::DataType::Bool | ast::DataType::Boolean => Some(1),
        ast::DataType::TinyInt(Some(1)) | ast::DataType::TinyIntUnsigned(Some(1)) => Some(1),
        _ => None,
    };
    let mut nullable = true;
    let mut explicit_null = false;
    let mut default = None;
    let mut auto = false;
    let mut primary = false;
    let mut unique = false;
    let mut checks = Vec::new();
    for o in &c.options {
        match &o.option {
            ast::ColumnOption::Check(e) => {
                checks.push((o.name.as_ref().map(|n| n.value.clone()), e.clone()))
            }
            // MySQL 8.0 parses an inline REFERENCES and ignores it.
            ast::ColumnOption::ForeignKey { .. } => {}
            ast::ColumnOption::Null => {
                nullable = true;
                explicit_null = true;
            }
            ast::ColumnOption::NotNull => nullable = false,
            ast::ColumnOption::Default(e) => default = Some(e.clone()),
            ast::ColumnOption::Unique {
                is_primary: true, ..
            } => {
                primary = true;
                nullable = false;
            }
            ast::ColumnOption::Unique {
                is_primary: false, ..
            } => unique = true,
            ast::ColumnOption::DialectSpecific(toks)
                if toks
                    .iter()
                    .any(|t| t.to_string().eq_ignore_ascii_case("AUTO_INCREMENT")) =>
            {
                auto = true
            }
            ast::ColumnOption::CharacterSet(_)
            | ast::ColumnOption::Collation(_)
            | ast::ColumnOption::Comment(_)
            | ast::ColumnOption::OnUpdate(_) => {}
            other => return Err(SqlError::unsupported(format!("column option {other}"))),
        }
    }
    if auto && !matches!(ty, ColumnType::Int { .. }) {
        return Err(SqlError::new(
            1063,
            "42000",
            format!("Incorrect column specifier for column '{}'", c.name.value),
        ));
    }
    Ok(ParsedColumn {
        def: ColumnDef {
            name: c.name.value.clone(),
            ty,
            nullable,
            default: None,
            auto_increment: auto,
            display_width: width,
            comment: column_comment(c)?,
            elements,
        },
        default,
        primary,
        unique,
        explicit_null,
        checks,
    })
}

/// Evaluates a column's `DEFAULT` for `col` (its type and nullability
/// final): None for no default or NULL; 1067 for a NULL default of a
/// NOT NULL column or a value the column cannot hold.
pub(crate) fn column_default(
    s: &mut StmtCx,
    col: &ColumnDef,
    e: Option<&ast::Expr>,
) -> SqlResult<Option<Value>> {
    let Some(e) = e else {
        return Ok(None);
    };
    // A JSON column takes only an expression default (`DEFAULT ('{}')`)
    // or NULL, as in MySQL.
    if col.ty == ColumnType::Json
        && !matches!(e, ast::Expr::Nested(_))
        && !matches!(e, ast::Expr::Value(v) if v.value == ast::Value::Null)
    {
        return Err(SqlError::new(
            1101,
            "42000",
            format!(
                "BLOB, TEXT, GEOMETRY or JSON column '{}' can't have a default value",
                col.name
            ),
        ));
    }
    let invalid = || {
        SqlError::new(
            1067,
            "42000",
            format!("Invalid default value for '{}'", col.name),
        )
    };
    let v = s.eval_const_ast(e, &e.to_string())?;
    if v.is_null() {
        if !col.nullable {
            return Err(invalid());
        }
        return Ok(None);
    }
    crate::convert::to_column(v, col, 0)
        .map(Some)
        .map_err(|_| invalid())
}

fn create_table(s: &mut StmtCx, ct: &ast::CreateTable) -> SqlResult<()> {
    if ct.query.is_some() || ct.like.is_some() {
        return Err(SqlError::unsupported("CREATE TABLE ... AS / LIKE"));
    }
    let parts = object_parts(&ct.name);
    let (dbname, tname) = match parts.as_slice() {
        [t] => (
            s.current_db.clone().ok_or_else(SqlError::no_database)?,
            t.clone(),
        ),
        [d, t] => (d.clone(), t.clone()),
        _ => return Err(SqlError::syntax("bad table name")),
    };
    catalog::check_name(catalog::NameKind::Table, &tname)?;
    // The table's default collation (COLLATE= / DEFAULT CHARSET=).
    let opts_text = options_text(ct).to_ascii_lowercase();
    let mut table_coll = Collation::Utf8mb4GeneralCi;
    if let Some(p) = opts_text.find("collate") {
        let rest = opts_text
            .get(p + 7..)
            .unwrap_or("")
            .trim_start_matches([' ', '=']);
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        table_coll = collation_from(&name)?;
    }
    let mut columns = Vec::new();
    let mut pk_cols: Vec<String> = Vec::new();
    // (name, columns, prefix lengths) of each UNIQUE and plain key.
    type Key = (Option<String>, Vec<String>, Vec<u32>);
    let mut uniques: Vec<Key> = Vec::new();
    let mut keys_: Vec<Key> = Vec::new();
    let mut fks = Vec::new();
    let mut checks: Vec<(Option<String>, ast::Expr, bool)> = Vec::new();
    for c in &ct.columns {
        let p = parse_column(c, table_coll)?;
        checks.extend(p.checks.iter().map(|(n, e)| (n.clone(), e.clone(), true)));
        if p.primary {
            pk_cols.push(p.def.name.clone());
        }
        if p.unique {
            uniques.push((None, vec![p.def.name.clone()], Vec::new()));
        }
        columns.push(p);
    }
    for con in &ct.constraints {
        let names = key_part_names;
        match con {
            ast::TableConstraint::PrimaryKey { columns: cs, .. } => {
                if !pk_cols.is_empty() {
                    return Err(SqlError::new(1068, "42000", "Multiple primary key defined"));
                }
                pk_cols = names(cs)?;
            }
            ast::TableConstraint::Unique {
                index_name,
                name,
                columns: cs,
                ..
            } => {
                let (cols, prefix) = key_parts(cs)?;
                uniques.push((
                    index_name
                        .as_ref()
                        .or(name.as_ref())
                        .map(|i| i.value.clone()),
                    cols,
                    prefix,
                ))
            }
            ast::TableConstraint::Index {
                name, columns: cs, ..
            } => {
                let (cols, prefix) = key_parts(cs)?;
                keys_.push((name.as_ref().map(|i| i.value.clone()), cols, prefix))
            }
            ast::TableConstraint::ForeignKey { .. } => {
                if let Some(fk) = crate::constraints::fk_from_ast(con, &dbname)? {
                    fks.push(fk);
                }
            }
            ast::TableConstraint::Check {
                name,
                expr,
                enforced,
            } => checks.push((
                name.as_ref().map(|n| n.value.clone()),
                (**expr).clone(),
                enforced.unwrap_or(true),
            )),
            other => return Err(SqlError::unsupported(format!("constraint {other}"))),
        }
    }
    // Resolve columns and defaults.
    let mut defs: Vec<ColumnDef> = Vec::new();
    for p in columns {
        let name = p.def.name.clone();
        if defs.iter().any(|d| d.name.eq_ignore_ascii_case(&name)) {
            return Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{name}'"),
            ));
        }
        let mut col = p.def;
        if pk_cols.iter().any(|k| k.eq_ignore_ascii_case(&name)) {
            col.nullable = false;
        }
        col.default = column_default(s, &col, p.default.as_ref())?;
        defs.push(col);
    }
    let pos = |n: &str| -> SqlResult<usize> {
        defs.iter()
            .position(|d| d.name.eq_ignore_ascii_case(n))
            .ok_or_else(|| {
                SqlError::new(
                    1072,
                    "42000",
                    format!("Key column '{n}' doesn't exist in table"),
                )
            })
    };
    let pk: Vec<usize> = pk_cols.iter().map(|n| pos(n)).collect::<SqlResult<_>>()?;
    if let Some(a) = defs.iter().position(|d| d.auto_increment) {
        if pk.first() != Some(&a) {
            return Err(SqlError::new(
                1075,
                "42000",
                "Incorrect table definition; there can be only one auto column and it must be defined as the first column of the primary key",
            ));
        }
    }
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = schema_write(s, &db)?;
    let mut cat = db.catalog.read().clone();
    let d = cat
        .dbs
        .get(&dbname.to_lowercase())
        .ok_or_else(|| SqlError::unknown_database(&dbname))?;
    if d.tables.contains_key(&tname.to_lowercase()) || d.views.contains_key(&tname.to_lowercase()) {
        if ct.if_not_exists {
            let e = SqlError::table_exists(&tname);
            s.warnings.get_mut().push(("Note", e.code, e.message));
            return Ok(());
        }
        return Err(SqlError::table_exists(&tname));
    }
    let dbname = d.name.clone();
    let mut next = cat.next_index_id;
    let mut take_id = || {
        let id = next;
        next += 1;
        id
    };
    let primary = IndexDef {
        name: "PRIMARY".into(),
        id: take_id(),
        columns: pk.clone(),
        unique: true,
        prefix: Vec::new(),
    };
    let mut secondary = Vec::new();
    let mut names_used: Vec<String> = Vec::new();
    for (unique, (name, cols, prefix)) in uniques
        .into_iter()
        .map(|u| (true, u))
        .chain(keys_.into_iter().map(|k| (false, k)))
    {
        if let Some(n) = &name {
            catalog::check_name(catalog::NameKind::Index, n)?;
        }
        let columns: Vec<usize> = cols.iter().map(|n| pos(n)).collect::<SqlResult<_>>()?;
        let base = name.unwrap_or_else(|| cols.first().cloned().unwrap_or_else(|| "key".into()));
        let mut nm = base.clone();
        let mut k = 2;
        while names_used.iter().any(|u| u.eq_ignore_ascii_case(&nm)) {
            nm = format!("{base}_{k}");
            k += 1;
        }
        names_used.push(nm.clone());
        secondary.push(IndexDef {
            name: nm,
            id: take_id(),
            columns,
            unique,
            prefix,
        });
    }
    let mut def = TableDef {
        name: tname.clone(),
        columns: defs,
        hidden_pk: pk.is_empty(),
        primary,
        secondary,
        comment: table_comment(ct)?,
        auto_increment_floor: 0,
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        referenced_by: Vec::new(),
    };
    def.check_key_columns()?;
    let db_checks = crate::constraints::names_in_db(&cat, &dbname, None, true);
    for (name, e, enforced) in checks {
        crate::constraints::add_check(&mut def, name, &e, enforced, &db_checks)?;
    }
    if !fks.is_empty() {
        let db_fks = crate::constraints::names_in_db(&cat, &dbname, None, false);
        let parent_of = |d: &str, t: &str| cat.table(d, t).ok();
        crate::constraints::prepare_fks(s, &dbname, &mut def, fks, &db_fks, &parent_of)?;
        // A foreign key may have added an index: not on a JSON column.
        def.check_key_columns()?;
        for ix in def.secondary.iter_mut().filter(|ix| ix.id == 0) {
            ix.id = take_id();
        }
    }
    let enc = catalog::encode_table(&def)?;
    db.with_txn(|t| {
        dict_header(t, next)?;
        put_dict(t, &catalog::table_key(&dbname, &tname), &enc)
    })?;
    cat.next_index_id = next;
    if let Some(d) = cat.dbs.get_mut(&dbname.to_lowercase()) {
        d.tables.insert(tname.to_lowercase(), Arc::new(def));
    }
    db.install_catalog(cat);
    Ok(())
}

fn drop_table(
    s: &mut StmtCx,
    name: &ast::ObjectName,
    if_exists: bool,
    all: &[ast::ObjectName],
) -> SqlResult<()> {
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = schema_write(s, &db)?;
    // Read under the DDL lock (see `create_index`).
    let (dbname, def) = match resolve_table(s, name) {
        Ok(r) => r,
        Err(e) if if_exists && (e.code == 1146 || e.code == 1049) => {
            let full = qualified_name(s, name);
            s.warnings
                .get_mut()
                .push(("Note", 1051, format!("Unknown table '{full}'")));
            return Ok(());
        }
        Err(e) if e.code == 1146 => {
            return Err(SqlError::new(
                1051,
                "42S02",
                format!("Unknown table '{}'", qualified_name(s, name)),
            ));
        }
        Err(e) => return Err(e),
    };
    if crate::constraints::fk_checks(s) {
        // A parent goes only with its children (3730).
        let dropping = |cdb: &str, ct: &str| {
            all.iter().any(|n| {
                table_name(s, n)
                    .is_ok_and(|(d, t)| d.eq_ignore_ascii_case(cdb) && t.eq_ignore_ascii_case(ct))
            })
        };
        if let Some(r) = def.referenced_by.iter().find(|r| {
            let itself =
                r.db.eq_ignore_ascii_case(&dbname) && r.table.eq_ignore_ascii_case(&def.name);
            !itself && !dropping(&r.db, &r.table)
        }) {
            let child = db
                .table(&r.db, &r.table)
                .map_or(r.table.clone(), |c| c.name.clone());
            return Err(SqlError::new(
                3730,
                "HY000",
                format!(
                    "Cannot drop table '{}' referenced by a foreign key constraint '{}' on table '{child}'.",
                    def.name, r.fk
                ),
            ));
        }
    }
    let mut cat = db.catalog.read().clone();
    db.with_txn(|t| {
        t.delete(&catalog::table_key(&dbname, &def.name))?;
        Ok(())
    })?;
    db.ddl_step("drop_table:switched");
    if let Some(d) = cat.dbs.get_mut(&dbname.to_lowercase()) {
        d.tables.remove(&def.name.to_lowercase());
    }
    db.install_catalog(cat);
    db.counters.lock().remove(&def.primary.id);
    db.delete_index_data(&index_ids(&def))?;
    db.ddl_step("drop_table:done");
    Ok(())
}

/// TRUNCATE: the table gets new index ids in one synced dictionary
/// change, so it is empty at once and atomically; the old ids' keys are
/// deleted after (a crash meanwhile leaves them as orphans, which the
/// sweep at open removes).
fn truncate(s: &mut StmtCx, name: &ast::ObjectName) -> SqlResult<()> {
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = schema_write(s, &db)?;
    // Read under the DDL lock (see `create_index`).
    let (dbname, def) = resolve_table(s, name)?;
    if crate::constraints::fk_checks(s) {
        if let Some((cdb, ct, fk)) = crate::constraints::first_child(&def, &dbname) {
            return Err(SqlError::new(
                1701,
                "42000",
                format!("Cannot truncate a table referenced in a foreign key constraint (`{cdb}`.`{ct}`, CONSTRAINT `{fk}`)"),
            ));
        }
    }
    let mut cat = db.catalog.read().clone();
    let mut new_def = (*def).clone();
    // AUTO_INCREMENT starts again, as in MySQL.
    new_def.auto_increment_floor = 0;
    new_def.primary.id = cat.next_index_id;
    cat.next_index_id += 1;
    for ix in &mut new_def.secondary {
        ix.id = cat.next_index_id;
        cat.next_index_id += 1;
    }
    let enc = catalog::encode_table(&new_def)?;
    let next = cat.next_index_id;
    db.with_txn(|t| {
        dict_header(t, next)?;
        put_dict(t, &catalog::table_key(&dbname, &def.name), &enc)
    })?;
    db.ddl_step("truncate:switched");
    if let Some(d) = cat.dbs.get_mut(&dbname.to_lowercase()) {
        d.tables.insert(def.name.to_lowercase(), Arc::new(new_def));
    }
    db.install_catalog(cat);
    db.counters.lock().remove(&def.primary.id);
    db.delete_index_data(&index_ids(&def))?;
    db.ddl_step("truncate:done");
    Ok(())
}

fn create_index(
    s: &mut StmtCx,
    table: &ast::ObjectName,
    name: &str,
    cols: &[String],
    prefix: &[u32],
    unique: bool,
    if_not_exists: bool,
) -> SqlResult<()> {
    catalog::check_name(catalog::NameKind::Index, name)?;
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = schema_write(s, &db)?;
    // Read under the DDL lock: a definition read before it may be
    // replaced (another CREATE INDEX) or dropped meanwhile.
    let (dbname, def) = resolve_table(s, table)?;
    let mut cat = db.catalog.read().clone();
    if def
        .secondary
        .iter()
        .any(|i| i.name.eq_ignore_ascii_case(name))
        || name.eq_ignore_ascii_case("PRIMARY")
    {
        if if_not_exists {
            return Ok(());
        }
        return Err(SqlError::new(
            1061,
            "42000",
            format!("Duplicate key name '{name}'"),
        ));
    }
    let columns: Vec<usize> = cols
        .iter()
        .map(|n| {
            def.column(n).ok_or_else(|| {
                SqlError::new(
                    1072,
                    "42000",
                    format!("Key column '{n}' doesn't exist in table"),
                )
            })
        })
        .collect::<SqlResult<_>>()?;
    let id = cat.next_index_id;
    cat.next_index_id += 1;
    let ix = IndexDef {
        name: name.to_string(),
        id,
        columns,
        unique,
        prefix: prefix.to_vec(),
    };
    let mut new_def = (*def).clone();
    new_def.secondary.push(ix.clone());
    new_def.check_key_columns()?;
    // Record the id as used before any entry carries it: after a crash
    // during the back-fill, its entries are orphans that the sweep at open
    // removes, never entries of a later index given the same id.
    let next = cat.next_index_id;
    db.with_txn(|t| dict_header(t, next))?;
    db.ddl_step("create_index:ids");
    // Back-fill from the rows, in batches, before the index is visible
    // (DDL excludes concurrent DDL; concurrent writes to the table during
    // the back-fill are not covered: CREATE INDEX is meant for a quiet
    // table, as documented).
    if let Err(e) = backfill(&db, &new_def, &ix) {
        // The id stays used (the dictionary says so).
        db.note_next_index_id(next);
        return Err(e);
    }
    db.ddl_step("create_index:filled");
    let enc = catalog::encode_table(&new_def)?;
    db.with_txn(|t| {
        dict_header(t, next)?;
        put_dict(t, &catalog::table_key(&dbname, &def.name), &enc)
    })?;
    db.ddl_step("create_index:switched");
    if let Some(d) = cat.dbs.get_mut(&dbname.to_lowercase()) {
        d.tables.insert(def.name.to_lowercase(), Arc::new(new_def));
    }
    db.install_catalog(cat);
    Ok(())
}

pub(crate) fn backfill(db: &crate::db::SqlDb, def: &TableDef, ix: &IndexDef) -> SqlResult<()> {
    let mut it = db.scan_index(def.primary.id)?;
    let mut batch = cairndb::WriteBatch::new();
    let mut row = vec![Value::Null; def.columns.len()];
    let (mut k, mut v) = (Vec::new(), Vec::new());
    let mut seen_unique = std::collections::HashSet::new();
    let mut n = 0;
    while it.valid() {
        let hidden =
            crate::row::decode_row_into(def, it.key(), it.value(), &mut row, &mut Vec::new())
                .ok_or_else(|| SqlError::internal(format!("row of {} is damaged", def.name)))?;
        crate::row::secondary_entry(def, ix, &row, hidden, &mut k, &mut v);
        if ix.unique && ix.columns.iter().all(|c| !row[*c].is_null()) {
            let vals: Vec<Value> = ix.columns.iter().map(|c| row[*c].clone()).collect();
            let mut p = Vec::new();
            crate::row::index_prefix(def, ix, &vals, &mut p);
            if !seen_unique.insert(p) {
                let shown = crate::row::shown_key(def, ix, &vals);
                db.delete_index_data(&[ix.id])?;
                return Err(SqlError::duplicate_key(
                    &shown,
                    &format!("{}.{}", def.name, ix.name),
                ));
            }
        }
        batch.put(&k, &v);
        n += 1;
        if n % 10_000 == 0 {
            db.db
                .db()
                .write(&Default::default(), std::mem::take(&mut batch))?;
            db.ddl_step("backfill:batch");
        }
        it.next();
    }
    it.status()?;
    db.db.db().write(&Default::default(), batch)?;
    Ok(())
}

fn drop_index(s: &mut StmtCx, table: &ast::ObjectName, name: &str) -> SqlResult<()> {
    let db = s.db.clone();
    let _g = db.ddl_lock.lock();
    let _schema = schema_write(s, &db)?;
    // Read under the DDL lock (see `create_index`).
    let (dbname, def) = resolve_table(s, table)?;
    let mut cat = db.catalog.read().clone();
    let Some(i) = def
        .secondary
        .iter()
        .position(|ix| ix.name.eq_ignore_ascii_case(name))
    else {
        return Err(SqlError::new(
            1091,
            "42000",
            format!("Can't DROP '{name}'; check that column/key exists"),
        ));
    };
    let mut new_def = (*def).clone();
    let ix = new_def.secondary.remove(i);
    let enc = catalog::encode_table(&new_def)?;
    db.with_txn(|t| put_dict(t, &catalog::table_key(&dbname, &def.name), &enc))?;
    db.ddl_step("drop_index:switched");
    if let Some(d) = cat.dbs.get_mut(&dbname.to_lowercase()) {
        d.tables.insert(def.name.to_lowercase(), Arc::new(new_def));
    }
    db.install_catalog(cat);
    db.delete_index_data(&[ix.id])?;
    db.ddl_step("drop_index:done");
    Ok(())
}

/// OPTIMIZE TABLE: compacts each index's key range down to the last level
/// (where zip tables are written), dropping deleted and overwritten rows,
/// and answers MySQL's result set (see [`per_table`]).
pub(crate) fn optimize(
    s: &StmtCx,
    tables: &[(Option<String>, String)],
    out: &mut dyn Output,
) -> SqlResult<()> {
    per_table(s, tables, "optimize", out, |def| {
        let ids: Vec<u32> = std::iter::once(def.primary.id)
            .chain(def.secondary.iter().map(|i| i.id))
            .collect();
        s.db.compact_index_data(&ids)
    })
}

/// A table-maintenance statement (OPTIMIZE, ANALYZE): `f` runs on each
/// table, after SELECT and INSERT are checked on it (as MySQL asks), and
/// MySQL's result set answers (`Table`, `Op`, `Msg_type`, `Msg_text`),
/// one status row per table; a missing table gets an Error row, as in
/// MySQL, and the others still run. An error of `f` ends the statement.
pub(crate) fn per_table(
    s: &StmtCx,
    tables: &[(Option<String>, String)],
    op: &str,
    out: &mut dyn Output,
    mut f: impl FnMut(&TableDef) -> SqlResult<()>,
) -> SqlResult<()> {
    let mut results = Vec::new();
    for (db, name) in tables {
        let db = db
            .clone()
            .or_else(|| s.database().map(str::to_string))
            .ok_or_else(SqlError::no_database)?;
        let label = format!("{db}.{name}");
        crate::acl::check_table(s, &db, name, crate::acl::SELECT | crate::acl::INSERT)?;
        match s.db.table(&db, name) {
            Ok(def) => {
                f(&def)?;
                results.push((label, "status", "OK".to_string()));
            }
            Err(e) => {
                results.push((label.clone(), "Error", e.message.clone()));
                results.push((label, "status", "Operation failed".to_string()));
            }
        }
    }
    let cols: Vec<ColumnInfo> = ["Table", "Op", "Msg_type", "Msg_text"]
        .iter()
        .map(|n| ColumnInfo::text(n))
        .collect();
    out.columns(&cols);
    let t = |x: &str| Value::Str(x.as_bytes().to_vec());
    for (label, kind, msg) in &results {
        out.row(&[t(label), t(op), t(kind), t(msg)]);
    }
    out.end(0);
    Ok(())
}

/// A column's COMMENT (MySQL's limit: 1024 characters, else 1629).
pub(crate) fn column_comment(c: &ast::ColumnDef) -> SqlResult<String> {
    let mut comment = String::new();
    for o in &c.options {
        if let ast::ColumnOption::Comment(text) = &o.option {
            comment = text.clone();
        }
    }
    if comment.chars().count() > 1024 {
        return Err(SqlError::new(
            1629,
            "HY000",
            format!(
                "Comment for field '{}' is too long (max = 1024)",
                c.name.value
            ),
        ));
    }
    Ok(comment)
}

/// A table's options as text, without its comment (whose words are not
/// options).
fn options_text(ct: &ast::CreateTable) -> String {
    match &ct.table_options {
        ast::CreateTableOptions::With(o)
        | ast::CreateTableOptions::Options(o)
        | ast::CreateTableOptions::Plain(o)
        | ast::CreateTableOptions::TableProperties(o) => o
            .iter()
            .filter(|o| !matches!(o, ast::SqlOption::Comment(_)))
            .map(|o| o.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        ast::CreateTableOptions::None => String::new(),
    }
}

/// A table's `COMMENT [=] '...'` option (MySQL's limit: 2048
/// characters, else 1628).
fn table_comment(ct: &ast::CreateTable) -> SqlResult<String> {
    let mut comment = match &ct.comment {
        Some(ast::CommentDef::WithEq(c) | ast::CommentDef::WithoutEq(c)) => c.clone(),
        None => String::new(),
    };
    let opts = match &ct.table_options {
        ast::CreateTableOptions::With(o)
        | ast::CreateTableOptions::Options(o)
        | ast::CreateTableOptions::Plain(o)
        | ast::CreateTableOptions::TableProperties(o) => o.as_slice(),
        ast::CreateTableOptions::None => &[],
    };
    for o in opts {
        if let ast::SqlOption::Comment(ast::CommentDef::WithEq(c) | ast::CommentDef::WithoutEq(c)) =
            o
        {
            comment = c.clone();
        }
    }
    if comment.chars().count() > 2048 {
        return Err(SqlError::new(
            1628,
            "HY000",
            format!("Comment for table '{}' is too long (max = 2048)", ct.name),
        ));
    }
    Ok(comment)
}

/// The column names of a primary key's parts. A key part that is not a
/// plain column is refused with 1235: a column prefix (`a(10)`, which
/// secondary indexes take: [`key_parts`]) and a functional key part
/// (`(a + 1)`).
pub(crate) fn key_part_names(cols: &[ast::IndexColumn]) -> SqlResult<Vec<String>> {
    let (names, prefix) = key_parts(cols)?;
    if prefix.iter().any(|n| *n > 0) {
        return Err(SqlError::unsupported("a column prefix in a PRIMARY KEY"));
    }
    Ok(names)
}

/// The column names of a secondary index's key parts and their prefix
/// lengths (`a(10)`: the first 10 characters; empty when no part has
/// one). A functional key part (`(a + 1)`) is refused with 1235, a
/// prefix length that is not a positive integer with 1089.
pub(crate) fn key_parts(cols: &[ast::IndexColumn]) -> SqlResult<(Vec<String>, Vec<u32>)> {
    let mut names = Vec::with_capacity(cols.len());
    let mut prefix = Vec::new();
    for (k, c) in cols.iter().enumerate() {
        match &c.column.expr {
            ast::Expr::Identifier(i) => names.push(i.value.clone()),
            ast::Expr::CompoundIdentifier(parts) if !parts.is_empty() => {
                names.push(parts[parts.len() - 1].value.clone())
            }
            ast::Expr::Function(f) => {
                let (name, n) = prefix_part(f)?;
                names.push(name);
                prefix.resize(k, 0);
                prefix.push(n);
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "functional key part {other}"
                )))
            }
        }
    }
    Ok((names, prefix))
}

/// `col(n)` in a key part list: the column and `n` (1089 unless `n` is a
/// positive integer).
fn prefix_part(f: &ast::Function) -> SqlResult<(String, u32)> {
    let name = match f.name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => i.value.clone(),
        _ => return Err(SqlError::unsupported(format!("functional key part {f}"))),
    };
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(SqlError::unsupported(format!("functional key part {f}")));
    };
    let n = match list.args.as_slice() {
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v)))] => {
            match &v.value {
                ast::Value::Number(n, _) => n.parse::<u32>().ok(),
                _ => None,
            }
        }
        _ => return Err(SqlError::unsupported(format!("functional key part {f}"))),
    };
    match n {
        Some(n) if n > 0 => Ok((name, n)),
        _ => Err(crate::row::bad_prefix()),
    }
}
