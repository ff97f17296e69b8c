//! `information_schema` tables clients read for metadata (SCHEMATA,
//! TABLES, VIEWS, COLUMNS, STATISTICS, and the constraints:
//! TABLE_CONSTRAINTS, KEY_COLUMN_USAGE, REFERENTIAL_CONSTRAINTS,
//! CHECK_CONSTRAINTS) and for monitoring (PROCESSLIST,
//! GLOBAL_STATUS, SESSION_STATUS; INNODB_CMP and INNODB_CMPMEM, empty),
//! built from the catalog and the session
//! registry as constant rows when a statement is planned (a cached plan
//! is rebuilt after DDL). Rows show only what the session's account may
//! see: databases and tables it holds some privilege on, other users'
//! sessions only with PROCESS (`acl.rs`).

use sqlparser::ast;

use crate::context::StmtCx;
use crate::error::{SqlError, SqlResult};
use crate::plan::object_parts;
use crate::types::{ColumnType, Value};

/// Whether `name` is an `information_schema` table (qualified, or with
/// `information_schema` as the current database).
pub(crate) fn is_info_schema(s: &StmtCx, name: &ast::ObjectName) -> bool {
    let parts = object_parts(name);
    match parts.as_slice() {
        [d, _] => d.eq_ignore_ascii_case("information_schema"),
        [_] => s
            .current_db
            .as_deref()
            .is_some_and(|d| d.eq_ignore_ascii_case("information_schema")),
        _ => false,
    }
}

fn t(s: &str) -> Value {
    Value::Str(s.as_bytes().to_vec())
}

fn n(v: i64) -> Value {
    Value::Int(v)
}

/// The tables the session may see, with their database's name.
fn visible_tables(
    s: &StmtCx,
    cat: &crate::catalog::Catalog,
) -> Vec<(String, std::sync::Arc<crate::row::TableDef>)> {
    let mut out = Vec::new();
    for d in cat.dbs.values() {
        for tb in d.tables.values() {
            if crate::acl::sees_table(s, &d.name, &tb.name) {
                out.push((d.name.clone(), tb.clone()));
            }
        }
    }
    out
}

/// The table's name, column names and rows.
pub(crate) fn table(
    s: &StmtCx,
    name: &ast::ObjectName,
) -> SqlResult<(String, Vec<String>, Vec<Vec<Value>>)> {
    let parts = object_parts(name);
    let table = parts.last().cloned().unwrap_or_default();
    let cat = s.db.catalog.read();
    let cols = |names: &[&str]| names.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut rows = Vec::new();
    // Views whose columns COLUMNS lists, once the catalog is released
    // (a view's query is compiled to know them).
    let mut views: Vec<(String, std::sync::Arc<crate::catalog::ViewDef>)> = Vec::new();
    let names = match table.to_ascii_uppercase().as_str() {
        "SCHEMATA" => {
            for d in cat.dbs.values().filter(|d| crate::acl::sees_db(s, &d.name)) {
                rows.push(vec![
                    t("def"),
                    t(&d.name),
                    t("utf8mb4"),
                    t("utf8mb4_general_ci"),
                    Value::Null,
                ]);
            }
            cols(&[
                "CATALOG_NAME",
                "SCHEMA_NAME",
                "DEFAULT_CHARACTER_SET_NAME",
                "DEFAULT_COLLATION_NAME",
                "SQL_PATH",
            ])
        }
        "VIEWS" => {
            for d in cat.dbs.values() {
                for v in d.views.values() {
                    rows.push(vec![
                        t("def"),
                        t(&d.name),
                        t(&v.name),
                        t(&v.select),
                        t(&v.check_option),
                        t("NO"),
                        t(&v.definer.replace('`', "")),
                        t(&v.security),
                        t("utf8mb4"),
                        t("utf8mb4_general_ci"),
                    ]);
                }
            }
            cols(&[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "VIEW_DEFINITION",
                "CHECK_OPTION",
                "IS_UPDATABLE",
                "DEFINER",
                "SECURITY_TYPE",
                "CHARACTER_SET_CLIENT",
                "COLLATION_CONNECTION",
            ])
        }
        "TABLES" => {
            for d in cat.dbs.values() {
                for tb in d
                    .tables
                    .values()
                    .filter(|tb| crate::acl::sees_table(s, &d.name, &tb.name))
                {
                    // As of the last ANALYZE TABLE (0 before one).
                    let st = s.db.stats.get(tb.primary.id).unwrap_or_default();
                    let u = |v: u64| n(i64::try_from(v).unwrap_or(i64::MAX));
                    rows.push(vec![
                        t("def"),
                        t(&d.name),
                        t(&tb.name),
                        t("BASE TABLE"),
                        t("CairnDB"),
                        n(10),
                        t("Dynamic"),
                        u(st.rows),
                        u(st.avg_row_length()),
                        u(st.data_bytes),
                        n(0),
                        u(st.index_bytes),
                        n(0),
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        t("utf8mb4_general_ci"),
                        Value::Null,
                        t(""),
                        t(&tb.comment),
                    ]);
                }
                for v in d.views.values() {
                    let mut row = vec![t("def"), t(&d.name), t(&v.name), t("VIEW")];
                    row.resize(20, Value::Null);
                    row.push(t("VIEW"));
                    rows.push(row);
                }
            }
            cols(&[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "TABLE_TYPE",
                "ENGINE",
                "VERSION",
                "ROW_FORMAT",
                "TABLE_ROWS",
                "AVG_ROW_LENGTH",
                "DATA_LENGTH",
                "MAX_DATA_LENGTH",
                "INDEX_LENGTH",
                "DATA_FREE",
                "AUTO_INCREMENT",
                "CREATE_TIME",
                "UPDATE_TIME",
                "CHECK_TIME",
                "TABLE_COLLATION",
                "CHECKSUM",
                "CREATE_OPTIONS",
                "TABLE_COMMENT",
            ])
        }
        "COLUMNS" => {
            for d in cat.dbs.values() {
                for v in d.views.values() {
                    if crate::acl::sees_table(s, &d.name, &v.name) {
                        views.push((d.name.clone(), v.clone()));
                    }
                }
                for tb in d
                    .tables
                    .values()
                    .filter(|tb| crate::acl::sees_table(s, &d.name, &tb.name))
                {
                    for (i, c) in tb.columns.iter().enumerate() {
                        let sql = c.type_sql();
                        let data_type = sql.split(['(', ' ']).next().unwrap_or("").to_string();
                        let (charlen, prec, scale) = match c.ty {
                            ColumnType::Str { max_len, .. } => {
                                (Value::Int(i64::from(max_len)), Value::Null, Value::Null)
                            }
                            ColumnType::Int { bytes, .. } => (
                                Value::Null,
                                n([3, 5, 7, 10, 19]
                                    .get(usize::from(bytes.min(5)) - 1)
                                    .copied()
                                    .unwrap_or(19)),
                                n(0),
                            ),
                            ColumnType::Decimal { precision, scale } => {
                                (Value::Null, n(i64::from(precision)), n(i64::from(scale)))
                            }
                            ColumnType::Double => (Value::Null, n(22), Value::Null),
                            ColumnType::Float => (Value::Null, n(12), Value::Null),
                            ColumnType::Enum { .. } => {
                                let m = c.elements.iter().map(|e| e.chars().count()).max();
                                (n(m.unwrap_or(0) as i64), Value::Null, Value::Null)
                            }
                            ColumnType::Set { .. } => {
                                let m: usize =
                                    c.elements.iter().map(|e| e.chars().count() + 1).sum();
                                (n(m.saturating_sub(1) as i64), Value::Null, Value::Null)
                            }
                            ColumnType::Bit { bits } => {
                                (Value::Null, n(i64::from(bits)), Value::Null)
                            }
                            _ => (Value::Null, Value::Null, Value::Null),
                        };
                        let key = if tb.in_pk(i) {
                            "PRI"
                        } else if tb.secondary.iter().any(|ix| ix.columns.first() == Some(&i)) {
                            if tb
                                .secondary
                                .iter()
                                .any(|ix| ix.unique && ix.columns.first() == Some(&i))
                            {
                                "UNI"
                            } else {
                                "MUL"
                            }
                        } else {
                            ""
                        };
                        let (cs, coll) = if c.ty.is_text()
                            || matches!(c.ty, ColumnType::Enum { .. } | ColumnType::Set { .. })
                        {
                            (t("utf8mb4"), t(c.ty.collation().name()))
                        } else {
                            (Value::Null, Value::Null)
                        };
                        rows.push(vec![
                            t("def"),
                            t(&d.name),
                            t(&tb.name),
                            t(&c.name),
                            n(i as i64 + 1),
                            c.default
                                .as_ref()
                                .map_or(Value::Null, |v| t(&crate::show::default_text(c, v))),
                            t(if c.nullable { "YES" } else { "NO" }),
                            t(&data_type),
                            charlen.clone(),
                            charlen,
                            prec,
                            scale,
                            Value::Null,
                            cs,
                            coll,
                            t(&sql),
                            t(key),
                            t(if c.auto_increment {
                                "auto_increment"
                            } else {
                                ""
                            }),
                            t("select,insert,update,references"),
                            t(&c.comment),
                            t(""),
                        ]);
                    }
                }
            }
            cols(&[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "COLUMN_NAME",
                "ORDINAL_POSITION",
                "COLUMN_DEFAULT",
                "IS_NULLABLE",
                "DATA_TYPE",
                "CHARACTER_MAXIMUM_LENGTH",
                "CHARACTER_OCTET_LENGTH",
                "NUMERIC_PRECISION",
                "NUMERIC_SCALE",
                "DATETIME_PRECISION",
                "CHARACTER_SET_NAME",
                "COLLATION_NAME",
                "COLUMN_TYPE",
                "COLUMN_KEY",
                "EXTRA",
                "PRIVILEGES",
                "COLUMN_COMMENT",
                "GENERATION_EXPRESSION",
            ])
        }
        // InnoDB's compression statistics, read by monitoring tools
        // (Prometheus' mysqld_exporter): no InnoDB, so no rows.
        "INNODB_CMP" | "INNODB_CMP_RESET" => cols(&[
            "PAGE_SIZE",
            "COMPRESS_OPS",
            "COMPRESS_OPS_OK",
            "COMPRESS_TIME",
            "UNCOMPRESS_OPS",
            "UNCOMPRESS_TIME",
        ]),
        "INNODB_CMPMEM" | "INNODB_CMPMEM_RESET" => cols(&[
            "PAGE_SIZE",
            "BUFFER_POOL_INSTANCE",
            "PAGES_USED",
            "PAGES_FREE",
            "RELOCATION_OPS",
            "RELOCATION_TIME",
        ]),
        "PROCESSLIST" => {
            // Without PROCESS, a session sees only its own user's sessions.
            let all = crate::acl::has_global(s, crate::acl::PROCESS);
            for p in
                s.db.processes()
                    .into_iter()
                    .filter(|p| all || crate::acl::owns(s, &p.user))
            {
                rows.push(p.row(true));
            }
            cols(&[
                "ID", "USER", "HOST", "DB", "COMMAND", "TIME", "STATE", "INFO",
            ])
        }
        "GLOBAL_STATUS" | "SESSION_STATUS" => {
            let global = table.eq_ignore_ascii_case("GLOBAL_STATUS");
            for (name, value) in crate::show::status_rows(s, global) {
                rows.push(vec![t(&name.to_ascii_uppercase()), t(&value)]);
            }
            cols(&["VARIABLE_NAME", "VARIABLE_VALUE"])
        }
        "STATISTICS" => {
            for d in cat.dbs.values() {
                for tb in d
                    .tables
                    .values()
                    .filter(|tb| crate::acl::sees_table(s, &d.name, &tb.name))
                {
                    let all = (!tb.hidden_pk)
                        .then_some(&tb.primary)
                        .into_iter()
                        .chain(tb.secondary.iter());
                    let st = s.db.stats.get(tb.primary.id);
                    for ix in all {
                        for (k, c) in ix.columns.iter().enumerate() {
                            let col = &tb.columns[*c];
                            // From the last ANALYZE TABLE; NULL before one.
                            let card = st
                                .as_ref()
                                .and_then(|st| st.cardinality(ix.id, k))
                                .map_or(Value::Null, |v| n(i64::try_from(v).unwrap_or(i64::MAX)));
                            rows.push(vec![
                                t("def"),
                                t(&d.name),
                                t(&tb.name),
                                n(i64::from(!ix.unique)),
                                t(&d.name),
                                t(&ix.name),
                                n(k as i64 + 1),
                                t(&col.name),
                                t("A"),
                                card,
                                match ix.prefix_of(k) {
                                    0 => Value::Null,
                                    p => n(i64::from(p)),
                                },
                                Value::Null,
                                t(if col.nullable { "YES" } else { "" }),
                                t("LSMTREE"),
                                t(""),
                                t(""),
                            ]);
                        }
                    }
                }
            }
            cols(&[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "NON_UNIQUE",
                "INDEX_SCHEMA",
                "INDEX_NAME",
                "SEQ_IN_INDEX",
                "COLUMN_NAME",
                "COLLATION",
                "CARDINALITY",
                "SUB_PART",
                "PACKED",
                "NULLABLE",
                "INDEX_TYPE",
                "COMMENT",
                "INDEX_COMMENT",
            ])
        }
        // Triggers, stored routines and events do not exist here: their
        // tables are empty (tools such as mysqldump read them).
        "TRIGGERS" => cols(&[
            "TRIGGER_CATALOG",
            "TRIGGER_SCHEMA",
            "TRIGGER_NAME",
            "EVENT_MANIPULATION",
            "EVENT_OBJECT_CATALOG",
            "EVENT_OBJECT_SCHEMA",
            "EVENT_OBJECT_TABLE",
            "ACTION_ORDER",
            "ACTION_CONDITION",
            "ACTION_STATEMENT",
            "ACTION_ORIENTATION",
            "ACTION_TIMING",
            "ACTION_REFERENCE_OLD_TABLE",
            "ACTION_REFERENCE_NEW_TABLE",
            "ACTION_REFERENCE_OLD_ROW",
            "ACTION_REFERENCE_NEW_ROW",
            "CREATED",
            "SQL_MODE",
            "DEFINER",
            "CHARACTER_SET_CLIENT",
            "COLLATION_CONNECTION",
            "DATABASE_COLLATION",
        ]),
        "ROUTINES" => cols(&[
            "SPECIFIC_NAME",
            "ROUTINE_CATALOG",
            "ROUTINE_SCHEMA",
            "ROUTINE_NAME",
            "ROUTINE_TYPE",
            "DATA_TYPE",
            "ROUTINE_BODY",
            "ROUTINE_DEFINITION",
            "EXTERNAL_NAME",
            "EXTERNAL_LANGUAGE",
            "PARAMETER_STYLE",
            "IS_DETERMINISTIC",
            "SQL_DATA_ACCESS",
            "SQL_PATH",
            "SECURITY_TYPE",
            "CREATED",
            "LAST_ALTERED",
            "SQL_MODE",
            "ROUTINE_COMMENT",
            "DEFINER",
            "CHARACTER_SET_CLIENT",
            "COLLATION_CONNECTION",
            "DATABASE_COLLATION",
        ]),
        "EVENTS" => cols(&[
            "EVENT_CATALOG",
            "EVENT_SCHEMA",
            "EVENT_NAME",
            "DEFINER",
            "TIME_ZONE",
            "EVENT_BODY",
            "EVENT_DEFINITION",
            "EVENT_TYPE",
            "EXECUTE_AT",
            "INTERVAL_VALUE",
            "INTERVAL_FIELD",
            "SQL_MODE",
            "STARTS",
            "ENDS",
            "STATUS",
            "ON_COMPLETION",
            "CREATED",
            "LAST_ALTERED",
            "LAST_EXECUTED",
            "EVENT_COMMENT",
            "ORIGINATOR",
            "CHARACTER_SET_CLIENT",
            "COLLATION_CONNECTION",
            "DATABASE_COLLATION",
        ]),
        "TABLE_CONSTRAINTS" => {
            for (d, tb) in visible_tables(s, &cat) {
                let mut add = |name: &str, kind: &str, enforced: bool| {
                    rows.push(vec![
                        t("def"),
                        t(&d),
                        t(name),
                        t(&d),
                        t(&tb.name),
                        t(kind),
                        t(if enforced { "YES" } else { "NO" }),
                    ]);
                };
                if !tb.hidden_pk {
                    add("PRIMARY", "PRIMARY KEY", true);
                }
                for ix in tb.secondary.iter().filter(|ix| ix.unique) {
                    add(&ix.name, "UNIQUE", true);
                }
                for fk in &tb.foreign_keys {
                    add(&fk.name, "FOREIGN KEY", true);
                }
                for c in &tb.checks {
                    add(&c.name, "CHECK", c.enforced);
                }
            }
            cols(&[
                "CONSTRAINT_CATALOG",
                "CONSTRAINT_SCHEMA",
                "CONSTRAINT_NAME",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "CONSTRAINT_TYPE",
                "ENFORCED",
            ])
        }
        "KEY_COLUMN_USAGE" => {
            for (d, tb) in visible_tables(s, &cat) {
                let keys = (!tb.hidden_pk)
                    .then_some(&tb.primary)
                    .into_iter()
                    .chain(tb.secondary.iter().filter(|ix| ix.unique));
                for ix in keys {
                    for (k, c) in ix.columns.iter().enumerate() {
                        rows.push(vec![
                            t("def"),
                            t(&d),
                            t(&ix.name),
                            t("def"),
                            t(&d),
                            t(&tb.name),
                            t(&tb.columns[*c].name),
                            n(k as i64 + 1),
                            Value::Null,
                            Value::Null,
                            Value::Null,
                            Value::Null,
                        ]);
                    }
                }
                for fk in &tb.foreign_keys {
                    for (k, (c, rc)) in fk.columns.iter().zip(&fk.ref_columns).enumerate() {
                        rows.push(vec![
                            t("def"),
                            t(&d),
                            t(&fk.name),
                            t("def"),
                            t(&d),
                            t(&tb.name),
                            t(c),
                            n(k as i64 + 1),
                            n(k as i64 + 1),
                            t(&fk.ref_db),
                            t(&fk.ref_table),
                            t(rc),
                        ]);
                    }
                }
            }
            cols(&[
                "CONSTRAINT_CATALOG",
                "CONSTRAINT_SCHEMA",
                "CONSTRAINT_NAME",
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "COLUMN_NAME",
                "ORDINAL_POSITION",
                "POSITION_IN_UNIQUE_CONSTRAINT",
                "REFERENCED_TABLE_SCHEMA",
                "REFERENCED_TABLE_NAME",
                "REFERENCED_COLUMN_NAME",
            ])
        }
        "REFERENTIAL_CONSTRAINTS" => {
            for (d, tb) in visible_tables(s, &cat) {
                for fk in &tb.foreign_keys {
                    // The parent's key the constraint matches.
                    let unique = cat.table(&fk.ref_db, &fk.ref_table).ok().and_then(|p| {
                        let cols: Option<Vec<usize>> =
                            fk.ref_columns.iter().map(|c| p.column(c)).collect();
                        let cols = cols?;
                        let all = (!p.hidden_pk)
                            .then_some(&p.primary)
                            .into_iter()
                            .chain(p.secondary.iter());
                        all.filter(|ix| ix.unique && ix.columns == cols)
                            .map(|ix| ix.name.clone())
                            .next()
                    });
                    rows.push(vec![
                        t("def"),
                        t(&d),
                        t(&fk.name),
                        t("def"),
                        t(&fk.ref_db),
                        unique.as_deref().map_or(Value::Null, t),
                        t("NONE"),
                        t(fk.on_update.sql()),
                        t(fk.on_delete.sql()),
                        t(&tb.name),
                        t(&fk.ref_table),
                    ]);
                }
            }
            cols(&[
                "CONSTRAINT_CATALOG",
                "CONSTRAINT_SCHEMA",
                "CONSTRAINT_NAME",
                "UNIQUE_CONSTRAINT_CATALOG",
                "UNIQUE_CONSTRAINT_SCHEMA",
                "UNIQUE_CONSTRAINT_NAME",
                "MATCH_OPTION",
                "UPDATE_RULE",
                "DELETE_RULE",
                "TABLE_NAME",
                "REFERENCED_TABLE_NAME",
            ])
        }
        "CHECK_CONSTRAINTS" => {
            for (d, tb) in visible_tables(s, &cat) {
                for c in &tb.checks {
                    rows.push(vec![
                        t("def"),
                        t(&d),
                        t(&c.name),
                        t(&format!("({})", c.expr)),
                    ]);
                }
            }
            cols(&[
                "CONSTRAINT_CATALOG",
                "CONSTRAINT_SCHEMA",
                "CONSTRAINT_NAME",
                "CHECK_CLAUSE",
            ])
        }
        _ => {
            return Err(SqlError::new(
                1109,
                "42S02",
                format!("Unknown table '{table}' in information_schema"),
            ))
        }
    };
    drop(cat);
    for (db, v) in views {
        // A view that no longer compiles (a table it reads was dropped)
        // lists no columns, as MySQL shows it with a warning.
        let Ok(list) = crate::show::view_column_types(s, &db, &v) else {
            continue;
        };
        for (i, c) in list.into_iter().enumerate() {
            let data_type = c
                .type_sql
                .split(['(', ' '])
                .next()
                .unwrap_or("")
                .to_string();
            let (cs, coll) = match &c.collation {
                Some(coll) => (t("utf8mb4"), t(coll)),
                None => (Value::Null, Value::Null),
            };
            rows.push(vec![
                t("def"),
                t(&db),
                t(&v.name),
                t(&c.name),
                n(i as i64 + 1),
                Value::Null,
                t(if c.nullable { "YES" } else { "NO" }),
                t(&data_type),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                cs,
                coll,
                t(&c.type_sql),
                t(""),
                t(""),
                t("select,insert,update,references"),
                t(""),
                t(""),
            ]);
        }
    }
    Ok((table.to_ascii_uppercase(), names, rows))
}
