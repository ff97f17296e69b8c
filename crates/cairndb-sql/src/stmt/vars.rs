//! System variables: the `@@` names MySQL clients and tools read at
//! connect and that SET may change. Most are accepted and remembered per
//! session without effect (the table says which act); unknown names are
//! error 1193, as in MySQL.

use crate::context::{Isolation, StmtCx};
use crate::error::{SqlError, SqlResult};
use crate::expr::to_i64;
use crate::preparse::VarScope;
use crate::types::Value;

fn s(v: &str) -> Value {
    Value::Str(v.as_bytes().to_vec())
}

/// Every known variable with its default. Those that act: autocommit,
/// transaction_isolation / tx_isolation, innodb_lock_wait_timeout /
/// lock_wait_timeout (row lock waits), sql_mode (kept; strict mode is
/// always on), and those `globals.rs` owns (the query logs,
/// `long_query_time`, `max_connect_errors`, the net timeouts; their
/// file names' defaults depend on the data directory).
pub fn defaults() -> Vec<(&'static str, Value)> {
    vec![
        ("auto_increment_increment", Value::Int(1)),
        ("auto_increment_offset", Value::Int(1)),
        ("autocommit", Value::Int(1)),
        ("big_tables", Value::Int(0)),
        ("character_set_client", s("utf8mb4")),
        ("character_set_connection", s("utf8mb4")),
        ("character_set_database", s("utf8mb4")),
        ("character_set_filesystem", s("binary")),
        ("character_set_results", s("utf8mb4")),
        ("character_set_server", s("utf8mb4")),
        ("character_set_system", s("utf8mb3")),
        ("collation_connection", s("utf8mb4_general_ci")),
        ("collation_database", s("utf8mb4_general_ci")),
        ("collation_server", s("utf8mb4_general_ci")),
        ("connect_timeout", Value::Int(10)),
        ("cte_max_recursion_depth", Value::Int(1000)),
        ("default_storage_engine", s("CairnDB")),
        ("div_precision_increment", Value::Int(4)),
        ("error_count", Value::Int(0)),
        ("foreign_key_checks", Value::Int(1)),
        ("general_log", Value::Int(0)),
        ("general_log_file", s("")),
        ("group_concat_max_len", Value::Int(1024)),
        ("have_ssl", s("DISABLED")),
        ("hostname", s("localhost")),
        ("init_connect", s("")),
        ("innodb_lock_wait_timeout", Value::Int(50)),
        ("interactive_timeout", Value::Int(28800)),
        ("license", s("Apache-2.0")),
        ("lock_wait_timeout", Value::Int(31_536_000)),
        ("log_output", s("FILE")),
        ("long_query_time", Value::Double(10.0)),
        ("lower_case_table_names", Value::Int(0)),
        ("max_allowed_packet", Value::Int(67_108_864)),
        ("max_connect_errors", Value::Int(100)),
        ("max_connections", Value::Int(1000)),
        ("max_user_connections", Value::Int(0)),
        ("max_heap_table_size", Value::Int(16_777_216)),
        (
            "max_session_mem_used",
            Value::Int(crate::spill::DEFAULT_MAX_MEM as i64),
        ),
        ("max_execution_time", Value::Int(0)),
        ("net_buffer_length", Value::Int(16384)),
        ("net_read_timeout", Value::Int(30)),
        ("net_write_timeout", Value::Int(60)),
        ("performance_schema", Value::Int(0)),
        ("port", Value::Int(3306)),
        ("protocol_version", Value::Int(10)),
        ("require_secure_transport", Value::Int(0)),
        ("query_cache_size", Value::Int(0)),
        ("query_cache_type", s("OFF")),
        ("rocksdb_flush_log_at_trx_commit", Value::Int(1)),
        ("session_track_schema", Value::Int(1)),
        ("slow_query_log", Value::Int(0)),
        ("slow_query_log_file", s("")),
        ("session_track_state_change", Value::Int(0)),
        ("session_track_system_variables", s("")),
        ("session_track_transaction_info", s("OFF")),
        ("sql_auto_is_null", Value::Int(0)),
        (
            "sql_mode",
            s("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"),
        ),
        ("sql_big_selects", Value::Int(1)),
        ("sql_buffer_result", Value::Int(0)),
        ("sql_log_off", Value::Int(0)),
        ("sql_notes", Value::Int(1)),
        ("sql_quote_show_create", Value::Int(1)),
        ("sql_safe_updates", Value::Int(0)),
        ("sql_select_limit", Value::UInt(u64::MAX)),
        ("sql_warnings", Value::Int(0)),
        // No Unix socket is served: NULL, so a client that reads it to
        // reconnect through the socket (mysql_async) stays on TCP.
        ("socket", Value::Null),
        (
            "sort_buffer_size",
            Value::Int(crate::spill::DEFAULT_SORT_BUFFER as i64),
        ),
        ("system_time_zone", s("UTC")),
        ("time_zone", s("SYSTEM")),
        ("tmp_table_size", Value::Int(16_777_216)),
        ("transaction_isolation", s("REPEATABLE-READ")),
        ("transaction_read_only", Value::Int(0)),
        ("tx_isolation", s("REPEATABLE-READ")),
        ("tx_read_only", Value::Int(0)),
        ("unique_checks", Value::Int(1)),
        ("version", s(crate::SERVER_VERSION)),
        ("version_comment", s("CairnDB")),
        ("version_compile_machine", s(std::env::consts::ARCH)),
        ("version_compile_os", s(std::env::consts::OS)),
        ("wait_timeout", Value::Int(28800)),
        ("warning_count", Value::Int(0)),
    ]
}

/// The default of `name` (`global.name` too).
pub fn default_of(name: &str) -> Option<Value> {
    let name = name.strip_prefix("global.").unwrap_or(name);
    defaults()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// The session's value of `name` (lower-case, no scope), or with a
/// `global.` prefix the global value (the default, for a variable that
/// keeps no global value of its own).
pub fn get(s: &StmtCx, name: &str) -> SqlResult<Value> {
    if let Some(g) = name.strip_prefix("global.") {
        return Ok(match g {
            "port" => s.db.globals.port(),
            "have_ssl" | "require_secure_transport" => get(s, g)?,
            _ => match s.db.globals.get(g) {
                Some(v) => v,
                None => default_of(g).ok_or_else(|| unknown(g))?,
            },
        });
    }
    Ok(match name {
        "autocommit" => Value::Int(i64::from(s.autocommit)),
        "transaction_isolation" | "tx_isolation" => {
            Value::Str(s.isolation.name().as_bytes().to_vec())
        }
        "last_insert_id" | "identity" => Value::Int(s.last_insert_id as i64),
        "warning_count" => Value::Int(i64::from(s.warning_count())),
        "error_count" => Value::Int(0),
        "in_transaction" => Value::Int(i64::from(s.txn.is_some())),
        // The server's settings, not the session's to change.
        "have_ssl" => {
            let v: &[u8] = if s.transport.have_ssl {
                b"YES"
            } else {
                b"DISABLED"
            };
            Value::Str(v.to_vec())
        }
        "require_secure_transport" => Value::Int(i64::from(s.transport.require_secure_transport)),
        "port" => s.db.globals.port(),
        n if crate::globals::global_only(n) => s.db.globals.get(n).unwrap_or(Value::Null),
        _ => match s.vars.get(name) {
            Some(v) => v.clone(),
            None => default_of(name).ok_or_else(|| unknown(name))?,
        },
    })
}

fn unknown(name: &str) -> SqlError {
    SqlError::new(1193, "HY000", format!("Unknown system variable '{name}'"))
}

/// SET of a system variable.
pub fn set(s: &mut StmtCx, scope: VarScope, name: &str, v: Value) -> SqlResult<()> {
    if default_of(name).is_none() && name != "last_insert_id" && name != "identity" {
        return Err(unknown(name));
    }
    if crate::globals::owns(name) {
        return crate::globals::set_var(s, scope == VarScope::Global, name, v);
    }
    match name {
        "autocommit" => {
            let on = match &v {
                Value::Str(t) => {
                    let t = String::from_utf8_lossy(t).to_ascii_uppercase();
                    t == "ON" || t == "1" || t == "TRUE"
                }
                other => to_i64(other).unwrap_or(0) != 0,
            };
            if scope == VarScope::Session {
                // Turning autocommit on commits the open transaction.
                if on && !s.autocommit {
                    s.commit()?;
                }
                s.autocommit = on;
            }
        }
        "transaction_isolation" | "tx_isolation" => {
            if scope == VarScope::Session {
                let t = match &v {
                    Value::Str(t) => String::from_utf8_lossy(t).into_owned(),
                    other => other.to_string(),
                };
                s.isolation = Isolation::parse(&t, name)?;
            }
        }
        "last_insert_id" | "identity" => {
            s.last_insert_id = to_i64(&v).unwrap_or(0).max(0) as u64;
        }
        _ => {
            // An integer variable stays an integer (its result column is
            // BIGINT): ON/OFF and digits in a string are read as such.
            let v = match (default_of(name), v) {
                (Some(Value::Int(_) | Value::UInt(_)), Value::Str(t)) => {
                    let t = String::from_utf8_lossy(&t).trim().to_ascii_uppercase();
                    match t.as_str() {
                        "ON" | "TRUE" => Value::Int(1),
                        "OFF" | "FALSE" => Value::Int(0),
                        _ => match t.parse::<i64>() {
                            Ok(n) => Value::Int(n),
                            Err(_) => {
                                return Err(SqlError::new(
                                    1231,
                                    "42000",
                                    format!("Variable '{name}' can't be set to the value of '{t}'"),
                                ))
                            }
                        },
                    }
                }
                (
                    Some(Value::Int(_) | Value::UInt(_)),
                    v @ (Value::Double(_) | Value::Decimal(..)),
                ) => Value::Int(to_i64(&v).unwrap_or(0)),
                (_, v) => v,
            };
            if scope == VarScope::Session {
                s.vars.insert(name.to_string(), v);
            }
        }
    }
    Ok(())
}

/// Row-lock wait timeout of the session, seconds.
pub fn lock_wait_timeout(s: &StmtCx) -> u64 {
    match s.vars.get("innodb_lock_wait_timeout") {
        Some(v) => to_i64(v).unwrap_or(50).clamp(1, 1_073_741_824) as u64,
        None => s.db.opts.lock_wait_timeout_secs,
    }
}
