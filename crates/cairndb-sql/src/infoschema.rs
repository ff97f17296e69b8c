//! `information_schema` tables clients read for metadata (SCHEMATA,
//! TABLES, VIEWS, COLUMNS, STATISTICS) and for monitoring (PROCESSLIST,
//! GLOBAL_STATUS, SESSION_STATUS; INNODB_CMP and INNODB_CMPMEM, empty),
//! built from the catalog and the session
//! registry as constant rows when a statement is planned (a cached plan
//! is rebuilt after DDL). Rows show only what the session's account may
//! see: databases and tables it holds some privilege on, other users'
//! sessions only with PROCESS (`acl.rs`).

use sqlparser::ast;

use crate::error::{SqlError, SqlResult};
use crate::plan::object_parts;
use crate::session::Session;
use crate::types::{ColumnType, Value};

/// Whether `name` is an `information_schema` table (qualified, or with
/// `information_schema` as the current database).
pub(crate) fn is_info_schema(s: &Session, name: &ast::ObjectName) -> bool {
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

/// The table's name, column names and rows.
pub(crate) fn table(
    s: &Session,
    name: &ast::ObjectName,
) -> SqlResult<(String, Vec<String>, Vec<Vec<Value>>)> {
    let parts = object_parts(name);
    let table = parts.last().cloned().unwrap_or_default();
    let cat = s.db.catalog.read();
    let cols = |names: &[&str]| names.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut rows = Vec::new();
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
                    rows.push(vec![
                        t("def"),
                        t(&d.name),
                        t(&tb.name),
                        t("BASE TABLE"),
                        t("CairnDB"),
                        n(10),
                        t("Dynamic"),
                        n(0),
                        n(0),
                        n(0),
                        n(0),
                        n(0),
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
                        let (cs, coll) = if c.ty.is_text() {
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
                                .map_or(Value::Null, |v| t(&v.to_string())),
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
                    for ix in all {
                        for (k, c) in ix.columns.iter().enumerate() {
                            let col = &tb.columns[*c];
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
                                n(0),
                                Value::Null,
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
        _ => {
            return Err(SqlError::new(
                1109,
                "42S02",
                format!("Unknown table '{table}' in information_schema"),
            ))
        }
    };
    Ok((table.to_ascii_uppercase(), names, rows))
}
