//! SHOW statements: variables, databases, tables, table status, CREATE
//! TABLE, columns, indexes, warnings, engines, collations, character
//! sets, the process list, grants and replica status (none: no
//! replication), in MySQL's column layouts (clients
//! and tools read them by position and by name).

use crate::context::StmtCx;
use crate::error::{SqlError, SqlResult};
use crate::expr::like;
use crate::output::{ColumnInfo, Output};
use crate::preparse::{Show, VarScope};
use crate::row::TableDef;
use crate::types::{Collation, ColumnType, Value};

fn t(s: &str) -> Value {
    Value::Str(s.as_bytes().to_vec())
}

fn matches(name: &str, pat: &Option<String>) -> bool {
    pat.as_ref()
        .is_none_or(|p| like(name.as_bytes(), p.as_bytes(), Collation::Utf8mb4GeneralCi))
}

fn header(out: &mut dyn Output, names: &[&str]) {
    let cols: Vec<ColumnInfo> = names.iter().map(|n| ColumnInfo::text(n)).collect();
    out.columns(&cols);
}

/// Runs a SHOW.
pub(crate) fn run(s: &mut StmtCx, sh: Show, out: &mut dyn Output) -> SqlResult<()> {
    match sh {
        Show::Variables(scope, pat) => {
            header(out, &["Variable_name", "Value"]);
            let mut all = crate::vars::defaults();
            all.sort_by(|a, b| a.0.cmp(b.0));
            for (name, default) in all {
                if !matches(name, &pat) {
                    continue;
                }
                let v = match scope {
                    VarScope::Session => crate::vars::get(s, name)?,
                    VarScope::Global => match name {
                        "port" => s.db.globals.port(),
                        _ => s.db.globals.get(name).unwrap_or(default),
                    },
                };
                let on_off = matches!(name, "autocommit" | "general_log" | "slow_query_log");
                let text = match v {
                    Value::Str(b) => String::from_utf8_lossy(&b).into_owned(),
                    Value::Int(1) if on_off => "ON".into(),
                    Value::Int(0) if on_off => "OFF".into(),
                    other => other.to_string(),
                };
                out.row(&[t(name), t(&text)]);
            }
            out.end(0);
        }
        Show::Status(scope, pat) => {
            header(out, &["Variable_name", "Value"]);
            for (n, v) in status_rows(s, scope == VarScope::Global) {
                if matches(&n, &pat) {
                    out.row(&[t(&n), t(&v)]);
                }
            }
            out.end(0);
        }
        Show::EngineStatus(name) => {
            if !matches!(name.as_str(), "CAIRNDB" | "ROCKSDB" | "INNODB") {
                return Err(SqlError::new(
                    1286,
                    "42000",
                    format!("Unknown storage engine '{name}'"),
                ));
            }
            header(out, &["Type", "Name", "Status"]);
            let text =
                s.db.engine()
                    .db()
                    .property("cairndb.stats")
                    .unwrap_or_default();
            out.row(&[t("CAIRNDB"), t(""), t(&text)]);
            out.end(0);
        }
        Show::Databases(pat) => {
            let label = match &pat {
                Some(p) => format!("Database ({p})"),
                None => "Database".to_string(),
            };
            header(out, &[&label]);
            let names: Vec<String> =
                s.db.catalog
                    .read()
                    .dbs
                    .values()
                    .filter(|d| crate::acl::sees_db(s, &d.name))
                    .map(|d| d.name.clone())
                    .collect();
            for n in names {
                if matches(&n, &pat) {
                    out.row(&[t(&n)]);
                }
            }
            out.end(0);
        }
        Show::Tables(full, db, pat) => {
            let db = db
                .or_else(|| s.current_db.clone())
                .ok_or_else(SqlError::no_database)?;
            crate::acl::check_use(s, &db)?;
            let names: Vec<(String, &str)> = {
                let cat = s.db.catalog.read();
                let d = cat
                    .database(&db)
                    .ok_or_else(|| SqlError::unknown_database(&db))?;
                let mut all: Vec<(String, &str)> = d
                    .tables
                    .values()
                    .map(|t| (t.name.clone(), "BASE TABLE"))
                    .chain(d.views.values().map(|v| (v.name.clone(), "VIEW")))
                    .filter(|(n, _)| crate::acl::sees_table(s, &db, n))
                    .collect();
                all.sort_by_key(|(n, _)| n.to_lowercase());
                all
            };
            let label = format!("Tables_in_{db}");
            if full {
                header(out, &[&label, "Table_type"]);
            } else {
                header(out, &[&label]);
            }
            for (n, kind) in names {
                if matches(&n, &pat) {
                    if full {
                        out.row(&[t(&n), t(kind)]);
                    } else {
                        out.row(&[t(&n)]);
                    }
                }
            }
            out.end(0);
        }
        Show::TableStatus(db, pat) => {
            let db = db
                .or_else(|| s.current_db.clone())
                .ok_or_else(SqlError::no_database)?;
            crate::acl::check_use(s, &db)?;
            let tables: Vec<std::sync::Arc<TableDef>> = {
                let cat = s.db.catalog.read();
                let d = cat
                    .database(&db)
                    .ok_or_else(|| SqlError::unknown_database(&db))?;
                d.tables
                    .values()
                    .filter(|t| crate::acl::sees_table(s, &db, &t.name))
                    .cloned()
                    .collect()
            };
            header(
                out,
                &[
                    "Name",
                    "Engine",
                    "Version",
                    "Row_format",
                    "Rows",
                    "Avg_row_length",
                    "Data_length",
                    "Max_data_length",
                    "Index_length",
                    "Data_free",
                    "Auto_increment",
                    "Create_time",
                    "Update_time",
                    "Check_time",
                    "Collation",
                    "Checksum",
                    "Create_options",
                    "Comment",
                ],
            );
            for def in tables {
                if !matches(&def.name, &pat) {
                    continue;
                }
                // As of the last ANALYZE TABLE (0 before one).
                let st = s.db.stats.get(def.primary.id).unwrap_or_default();
                let num = |v: u64| t(&v.to_string());
                out.row(&[
                    t(&def.name),
                    t("CairnDB"),
                    t("10"),
                    t("Dynamic"),
                    num(st.rows),
                    num(st.avg_row_length()),
                    num(st.data_bytes),
                    t("0"),
                    num(st.index_bytes),
                    t("0"),
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    t("utf8mb4_general_ci"),
                    Value::Null,
                    t(""),
                    t(&def.comment),
                ]);
            }
            out.end(0);
        }
        Show::CreateView(db, view) => {
            let db = db
                .or_else(|| s.current_db.clone())
                .ok_or_else(SqlError::no_database)?;
            if !crate::view::show_create(s, Some(db.clone()), &view, out)? {
                let cat = s.db.catalog.read();
                if cat.table(&db, &view).is_ok() {
                    return Err(SqlError::new(
                        1347,
                        "HY000",
                        format!("'{db}.{view}' is not VIEW"),
                    ));
                }
                return Err(SqlError::no_such_table(&db, &view));
            }
        }
        Show::CreateTable(db, table) => {
            let db = db
                .or_else(|| s.current_db.clone())
                .ok_or_else(SqlError::no_database)?;
            crate::acl::check_sees_table(s, &db, &table)?;
            let def = match s.db.table(&db, &table) {
                Ok(def) => def,
                // A view's definition, as MySQL shows it.
                Err(e) => {
                    if crate::view::show_create(s, Some(db), &table, out)? {
                        return Ok(());
                    }
                    return Err(e);
                }
            };
            header(out, &["Table", "Create Table"]);
            out.row(&[t(&def.name), t(&create_table_text(&def, &db))]);
            out.end(0);
        }
        Show::CreateDatabase(db) => {
            crate::acl::check_use(s, &db)?;
            let name =
                s.db.catalog
                    .read()
                    .database(&db)
                    .map(|d| d.name.clone())
                    .ok_or_else(|| SqlError::unknown_database(&db))?;
            header(out, &["Database", "Create Database"]);
            out.row(&[
                t(&name),
                t(&format!(
                    "CREATE DATABASE `{name}` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */"
                )),
            ]);
            out.end(0);
        }
        Show::Columns(full, db, table, pat) => {
            let db = db
                .or_else(|| s.current_db.clone())
                .ok_or_else(SqlError::no_database)?;
            crate::acl::check_sees_table(s, &db, &table)?;
            let view_name = sqlparser::ast::ObjectName::from(vec![
                sqlparser::ast::Ident::new(db.clone()),
                sqlparser::ast::Ident::new(table.clone()),
            ]);
            if s.db.table(&db, &table).is_err() {
                if let Some((vdb, v)) = crate::view::find(s, &view_name) {
                    return view_columns(s, &vdb, &v, full, &pat, out);
                }
            }
            let def = s.db.table(&db, &table)?;
            columns_header(out, full);
            for (i, c) in def.columns.iter().enumerate() {
                if !matches(&c.name, &pat) {
                    continue;
                }
                let key = if def.in_pk(i) {
                    "PRI"
                } else if def
                    .secondary
                    .iter()
                    .any(|ix| ix.unique && ix.columns.first() == Some(&i))
                {
                    "UNI"
                } else if def
                    .secondary
                    .iter()
                    .any(|ix| ix.columns.first() == Some(&i))
                {
                    "MUL"
                } else {
                    ""
                };
                let default = c
                    .default
                    .as_ref()
                    .map_or(Value::Null, |v| t(&default_text(c, v)));
                let extra = if c.auto_increment {
                    "auto_increment"
                } else {
                    ""
                };
                let null = if c.nullable { "YES" } else { "NO" };
                if full {
                    let coll = if c.ty.is_text()
                        || matches!(c.ty, ColumnType::Enum { .. } | ColumnType::Set { .. })
                    {
                        t(c.ty.collation().name())
                    } else {
                        Value::Null
                    };
                    out.row(&[
                        t(&c.name),
                        t(&c.type_sql()),
                        coll,
                        t(null),
                        t(key),
                        default,
                        t(extra),
                        t("select,insert,update,references"),
                        t(&c.comment),
                    ]);
                } else {
                    out.row(&[
                        t(&c.name),
                        t(&c.type_sql()),
                        t(null),
                        t(key),
                        default,
                        t(extra),
                    ]);
                }
            }
            out.end(0);
        }
        Show::Index(db, table) => {
            let db = db
                .or_else(|| s.current_db.clone())
                .ok_or_else(SqlError::no_database)?;
            crate::acl::check_sees_table(s, &db, &table)?;
            let def = s.db.table(&db, &table)?;
            header(
                out,
                &[
                    "Table",
                    "Non_unique",
                    "Key_name",
                    "Seq_in_index",
                    "Column_name",
                    "Collation",
                    "Cardinality",
                    "Sub_part",
                    "Packed",
                    "Null",
                    "Index_type",
                    "Comment",
                    "Index_comment",
                    "Visible",
                ],
            );
            let all = (!def.hidden_pk)
                .then_some(&def.primary)
                .into_iter()
                .chain(def.secondary.iter());
            let st = s.db.stats.get(def.primary.id);
            for ix in all {
                for (seq, c) in ix.columns.iter().enumerate() {
                    let col = &def.columns[*c];
                    // From the last ANALYZE TABLE; NULL before one.
                    let card = st
                        .as_ref()
                        .and_then(|st| st.cardinality(ix.id, seq))
                        .map_or(Value::Null, |n| t(&n.to_string()));
                    out.row(&[
                        t(&def.name),
                        t(if ix.unique { "0" } else { "1" }),
                        t(&ix.name),
                        t(&(seq + 1).to_string()),
                        t(&col.name),
                        t("A"),
                        card,
                        match ix.prefix_of(seq) {
                            0 => Value::Null,
                            p => t(&p.to_string()),
                        },
                        Value::Null,
                        t(if col.nullable { "YES" } else { "" }),
                        t("LSMTREE"),
                        t(""),
                        t(""),
                        t("YES"),
                    ]);
                }
            }
            out.end(0);
        }
        Show::Warnings => {
            header(out, &["Level", "Code", "Message"]);
            let w = s.warnings.lock().clone();
            for (level, code, msg) in w {
                out.row(&[t(level), t(&code.to_string()), t(&msg)]);
            }
            out.end(0);
        }
        Show::Engines => {
            header(
                out,
                &[
                    "Engine",
                    "Support",
                    "Comment",
                    "Transactions",
                    "XA",
                    "Savepoints",
                ],
            );
            out.row(&[
                t("CairnDB"),
                t("DEFAULT"),
                t("LSM tree with searchable compression"),
                t("YES"),
                t("NO"),
                t("YES"),
            ]);
            out.end(0);
        }
        Show::Collation(pat) => {
            header(
                out,
                &[
                    "Collation",
                    "Charset",
                    "Id",
                    "Default",
                    "Compiled",
                    "Sortlen",
                ],
            );
            for (name, cs, id, default) in [
                ("utf8mb4_general_ci", "utf8mb4", "45", "Yes"),
                ("utf8mb4_bin", "utf8mb4", "46", ""),
                ("binary", "binary", "63", "Yes"),
            ] {
                if matches(name, &pat) {
                    out.row(&[t(name), t(cs), t(id), t(default), t("Yes"), t("1")]);
                }
            }
            out.end(0);
        }
        Show::Charset(pat) => {
            header(
                out,
                &["Charset", "Description", "Default collation", "Maxlen"],
            );
            for (name, desc, coll, len) in [
                ("utf8mb4", "UTF-8 Unicode", "utf8mb4_general_ci", "4"),
                ("binary", "Binary pseudo charset", "binary", "1"),
            ] {
                if matches(name, &pat) {
                    out.row(&[t(name), t(desc), t(coll), t(len)]);
                }
            }
            out.end(0);
        }
        Show::ReplicaStatus(replica) => {
            crate::acl::check_global(
                s,
                crate::acl::REPLICATION_CLIENT | crate::acl::SUPER,
                "SUPER, REPLICATION CLIENT",
            )?;
            // MySQL 8.0's columns; no replication is set up, so no rows
            // (what MySQL answers on a server that is not a replica).
            let names: Vec<String> = REPLICA_STATUS_COLUMNS
                .iter()
                .map(|c| {
                    if replica {
                        c.to_string()
                    } else if *c == "Get_Source_public_key" {
                        "Get_master_public_key".to_string()
                    } else {
                        c.replace("Replica", "Slave").replace("Source", "Master")
                    }
                })
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            header(out, &names);
            out.end(0);
        }
        Show::ProcessList(full) => {
            header(
                out,
                &[
                    "Id", "User", "Host", "db", "Command", "Time", "State", "Info",
                ],
            );
            // Without PROCESS, a session sees only its own user's sessions.
            let all = crate::acl::has_global(s, crate::acl::PROCESS);
            for p in s.db.processes() {
                if all || crate::acl::owns(s, &p.user) {
                    out.row(&p.row(full));
                }
            }
            out.end(0);
        }
    }
    Ok(())
}

/// The columns of MySQL 8.0's `SHOW REPLICA STATUS` (`SHOW SLAVE STATUS`
/// names them with Slave and Master).
const REPLICA_STATUS_COLUMNS: [&str; 60] = [
    "Replica_IO_State",
    "Source_Host",
    "Source_User",
    "Source_Port",
    "Connect_Retry",
    "Source_Log_File",
    "Read_Source_Log_Pos",
    "Relay_Log_File",
    "Relay_Log_Pos",
    "Relay_Source_Log_File",
    "Replica_IO_Running",
    "Replica_SQL_Running",
    "Replicate_Do_DB",
    "Replicate_Ignore_DB",
    "Replicate_Do_Table",
    "Replicate_Ignore_Table",
    "Replicate_Wild_Do_Table",
    "Replicate_Wild_Ignore_Table",
    "Last_Errno",
    "Last_Error",
    "Skip_Counter",
    "Exec_Source_Log_Pos",
    "Relay_Log_Space",
    "Until_Condition",
    "Until_Log_File",
    "Until_Log_Pos",
    "Source_SSL_Allowed",
    "Source_SSL_CA_File",
    "Source_SSL_CA_Path",
    "Source_SSL_Cert",
    "Source_SSL_Cipher",
    "Source_SSL_Key",
    "Seconds_Behind_Source",
    "Source_SSL_Verify_Server_Cert",
    "Last_IO_Errno",
    "Last_IO_Error",
    "Last_SQL_Errno",
    "Last_SQL_Error",
    "Replicate_Ignore_Server_Ids",
    "Source_Server_Id",
    "Source_UUID",
    "Source_Info_File",
    "SQL_Delay",
    "SQL_Remaining_Delay",
    "Replica_SQL_Running_State",
    "Source_Retry_Count",
    "Source_Bind",
    "Last_IO_Error_Timestamp",
    "Last_SQL_Error_Timestamp",
    "Source_SSL_Crl",
    "Source_SSL_Crlpath",
    "Retrieved_Gtid_Set",
    "Executed_Gtid_Set",
    "Auto_Position",
    "Replicate_Rewrite_DB",
    "Channel_Name",
    "Source_TLS_Version",
    "Source_public_key_path",
    "Get_Source_public_key",
    "Network_Namespace",
];

/// Status variables (name, value): the session's or the server's
/// counters under MySQL's names, then the engine's (`Cairndb_*`), sorted
/// by name.
pub(crate) fn status_rows(s: &StmtCx, global: bool) -> Vec<(String, String)> {
    let counters = if global {
        s.db.registry.status()
    } else {
        s.db.registry.session_status(&s.info)
    };
    let e = s.db.engine().db().stats();
    let engine: [(&str, u64); 14] = [
        ("Cairndb_block_cache_hit", e.block_cache_hits),
        ("Cairndb_block_cache_miss", e.block_cache_misses),
        ("Cairndb_block_cache_usage", e.block_cache_usage),
        ("Cairndb_bytes_written", e.user_bytes_written),
        ("Cairndb_compaction_bytes_read", e.compaction_bytes_read),
        (
            "Cairndb_compaction_bytes_written",
            e.compaction_bytes_written,
        ),
        ("Cairndb_compactions", e.compactions),
        ("Cairndb_flush_bytes_written", e.flush_bytes_written),
        ("Cairndb_flushes", e.flushes),
        ("Cairndb_memtable_bytes", e.memtable_bytes),
        ("Cairndb_stall_micros", e.stall_micros),
        ("Cairndb_stalls", e.stalls),
        ("Cairndb_wal_bytes_written", e.wal_bytes_written),
        ("Cairndb_wal_syncs", e.wal_syncs),
    ];
    let mut rows: Vec<(String, String)> = counters
        .into_iter()
        .chain(engine)
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    rows.push(("Ssl_cipher".into(), s.transport.ssl_cipher.clone()));
    rows.push(("Ssl_version".into(), s.transport.ssl_version.clone()));
    rows.sort();
    rows
}

/// The CREATE TABLE statement of a table of database `db`, as SHOW
/// CREATE TABLE prints it (a foreign key's parent in another database is
/// printed with its database).
pub fn create_table_text(def: &TableDef, db: &str) -> String {
    let mut lines = Vec::new();
    for c in &def.columns {
        let mut l = format!("  `{}` {}", c.name, c.type_sql());
        if (c.ty.is_text() || matches!(c.ty, ColumnType::Enum { .. } | ColumnType::Set { .. }))
            && c.ty.collation() != Collation::Utf8mb4GeneralCi
        {
            l.push_str(&format!(" COLLATE {}", c.ty.collation().name()));
        }
        if !c.nullable {
            l.push_str(" NOT NULL");
        }
        if c.auto_increment {
            l.push_str(" AUTO_INCREMENT");
        } else if let Some(d) = &c.default {
            l.push_str(&format!(" DEFAULT {}", default_sql(c, d)));
        } else if c.nullable {
            l.push_str(" DEFAULT NULL");
        }
        if !c.comment.is_empty() {
            l.push_str(&format!(" COMMENT '{}'", sql_quoted(&c.comment)));
        }
        lines.push(l);
    }
    let names = |cols: &[usize]| -> String {
        cols.iter()
            .map(|c| format!("`{}`", def.columns[*c].name))
            .collect::<Vec<_>>()
            .join(",")
    };
    if !def.hidden_pk {
        lines.push(format!("  PRIMARY KEY ({})", names(&def.primary.columns)));
    }
    for ix in &def.secondary {
        let kind = if ix.unique { "UNIQUE KEY" } else { "KEY" };
        let parts: Vec<String> = ix
            .columns
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let name = &def.columns[*c].name;
                match ix.prefix_of(k) {
                    0 => format!("`{name}`"),
                    p => format!("`{name}`({p})"),
                }
            })
            .collect();
        lines.push(format!("  {kind} `{}` ({})", ix.name, parts.join(",")));
    }
    for fk in &def.foreign_keys {
        lines.push(format!("  {}", crate::constraints::fk_sql(db, fk)));
    }
    // MySQL lists CHECKs by name.
    let mut checks: Vec<_> = def.checks.iter().collect();
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    for c in checks {
        let mut l = format!("  CONSTRAINT `{}` CHECK (({}))", c.name, c.expr);
        if !c.enforced {
            l.push_str(" /*!80016 NOT ENFORCED */");
        }
        lines.push(l);
    }
    let mut text = format!(
        "CREATE TABLE `{}` (\n{}\n) ENGINE=CairnDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
        def.name,
        lines.join(",\n")
    );
    if !def.comment.is_empty() {
        text.push_str(&format!(" COMMENT='{}'", sql_quoted(&def.comment)));
    }
    text
}

/// A column's DEFAULT as SHOW CREATE TABLE prints it: quoted (quotes
/// doubled, backslashes escaped, so the text reads back as it is), a BIT
/// as `b'101'`, a TIME with the column's fractional digits, a JSON
/// column's as an expression (`('{}')`: a literal is refused there).
fn default_sql(c: &crate::row::ColumnDef, d: &Value) -> String {
    match (c.ty, d) {
        (ColumnType::Bit { .. }, Value::UInt(_)) => default_text(c, d),
        (ColumnType::Json, _) => format!("('{}')", sql_quoted(&default_text(c, d))),
        _ => format!("'{}'", sql_quoted(&default_text(c, d))),
    }
}

/// A column's DEFAULT as SHOW COLUMNS and information_schema show it: a
/// BIT as `b'101'`, a TIME with the column's fractional digits, a YEAR
/// with four digits, the rest as their text.
pub(crate) fn default_text(c: &crate::row::ColumnDef, d: &Value) -> String {
    match (c.ty, d) {
        (ColumnType::Bit { .. }, Value::UInt(n)) => format!("b'{n:b}'"),
        (ColumnType::Time { fsp }, Value::Time(us)) => crate::types::format_time(*us, Some(fsp)),
        (ColumnType::Year, Value::Int(y)) => format!("{y:04}"),
        _ => d.to_string(),
    }
}

/// A string's body as SHOW CREATE TABLE quotes it: `'` doubled, `\\`
/// escaped.
fn sql_quoted(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\'', "''")
}

/// SHOW [FULL] COLUMNS of a view: its columns' types as its query gives
/// them (a table column's own type; a computed one's from its result
/// type), with no key, default or extra.
fn view_columns(
    s: &StmtCx,
    db: &str,
    v: &crate::catalog::ViewDef,
    full: bool,
    pat: &Option<String>,
    out: &mut dyn Output,
) -> SqlResult<()> {
    columns_header(out, full);
    for c in view_column_types(s, db, v)? {
        if !matches(&c.name, pat) {
            continue;
        }
        let null = if c.nullable { "YES" } else { "NO" };
        if full {
            out.row(&[
                t(&c.name),
                t(&c.type_sql),
                c.collation.as_deref().map_or(Value::Null, t),
                t(null),
                t(""),
                Value::Null,
                t(""),
                t("select,insert,update,references"),
                t(""),
            ]);
        } else {
            out.row(&[
                t(&c.name),
                t(&c.type_sql),
                t(null),
                t(""),
                Value::Null,
                t(""),
            ]);
        }
    }
    out.end(0);
    Ok(())
}

/// The columns of SHOW [FULL] COLUMNS.
fn columns_header(out: &mut dyn Output, full: bool) {
    if full {
        header(
            out,
            &[
                "Field",
                "Type",
                "Collation",
                "Null",
                "Key",
                "Default",
                "Extra",
                "Privileges",
                "Comment",
            ],
        );
    } else {
        header(out, &["Field", "Type", "Null", "Key", "Default", "Extra"]);
    }
}

/// A view column as SHOW COLUMNS and information_schema.COLUMNS show
/// it.
pub(crate) struct ViewColumn {
    pub name: String,
    pub type_sql: String,
    pub nullable: bool,
    /// The collation of a text column.
    pub collation: Option<String>,
}

/// The columns of view `v` of `db`: a table column's own type, a
/// computed one's from its result type.
pub(crate) fn view_column_types(
    s: &StmtCx,
    db: &str,
    v: &crate::catalog::ViewDef,
) -> SqlResult<Vec<ViewColumn>> {
    let plan = crate::view::expand(s, db, v)?;
    let mut out = Vec::with_capacity(plan.columns.len());
    for (k, ci) in plan.columns.iter().enumerate() {
        let ty = match plan.proj.get(k) {
            Some(crate::expr::Expr::Column(i)) => plan.types.get(*i).copied().flatten(),
            _ => None,
        };
        let (type_sql, collation) = match ty {
            Some(ty) => (
                ty.sql(),
                ty.is_text().then(|| ty.collation().name().to_string()),
            ),
            None => (
                out_type_sql(ci),
                (ci.charset != 63).then(|| "utf8mb4_general_ci".to_string()),
            ),
        };
        out.push(ViewColumn {
            name: ci.name.clone(),
            type_sql,
            nullable: !ci.not_null,
            collation,
        });
    }
    Ok(out)
}

/// The SQL type a computed result column of `ci` would be declared as.
fn out_type_sql(ci: &ColumnInfo) -> String {
    use crate::output::OutType as O;
    let uns = if ci.unsigned { " unsigned" } else { "" };
    match ci.ty {
        O::Tiny => format!("tinyint{uns}"),
        O::Short => format!("smallint{uns}"),
        O::Int24 => format!("mediumint{uns}"),
        O::Long => format!("int{uns}"),
        O::LongLong => format!("bigint{uns}"),
        O::NewDecimal => {
            let scale = u32::from(ci.decimals);
            let digits = ci
                .length
                .saturating_sub(u32::from(scale > 0) + u32::from(!ci.unsigned))
                .clamp(1, 65);
            format!("decimal({digits},{scale}){uns}")
        }
        O::Float => "float".into(),
        O::Double => "double".into(),
        O::Date => "date".into(),
        O::DateTime => "datetime".into(),
        O::Timestamp => "timestamp".into(),
        O::Null => "binary(0)".into(),
        O::Blob => if ci.charset == 63 {
            "longblob"
        } else {
            "longtext"
        }
        .into(),
        _ => {
            let chars = if ci.charset == 63 {
                ci.length
            } else {
                ci.length / 4
            };
            if ci.charset == 63 {
                format!("varbinary({chars})")
            } else {
                format!("varchar({chars})")
            }
        }
    }
}
