//! The server-wide (GLOBAL) variables that act, and what the SQL layer
//! asks of the network server around it ([`ServerHooks`]).
//!
//! Owned here: `max_connect_errors` (the server's host cache),
//! `connect_timeout` (the server's connection phase),
//! `max_user_connections` (sessions per account for accounts without a
//! limit of their own), `max_session_mem_used` and `sort_buffer_size`
//! (what a statement's operators may hold, `exec/spill.rs`),
//! `slow_query_log`, `slow_query_log_file`, `long_query_time`,
//! `general_log`, `general_log_file`, `log_output` (the query logs,
//! `querylog.rs`), `net_read_timeout` and `net_write_timeout` (the
//! server's socket timeouts), `wait_timeout` and `interactive_timeout`
//! (idle connections; an interactive client's `wait_timeout` starts at
//! `interactive_timeout`). `SET GLOBAL` of any of them needs SUPER
//! (`max_connect_errors`: SUPER or CONNECTION_ADMIN); those without a
//! session value refuse `SET SESSION` (1229) and `@@session.` reads
//! show the global value. A session starts with the global values of
//! `long_query_time`, the net timeouts and the memory limits as they are
//! when it opens
//! ([`Globals::seed`]), as in MySQL.
//!
//! Locking: the numbers are atomics; the logs lock their own files; the
//! hooks sit behind a `RwLock` read to clone an `Arc`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::context::StmtCx;
use crate::error::{SqlError, SqlResult};
use crate::querylog::{Kind, Logs};
use crate::spill;
use crate::types::Value;

/// What the network server does for statements of the SQL layer.
pub struct ServerHooks {
    /// `FLUSH HOSTS`: forget the failed-connection counts (unblocking
    /// every host).
    pub flush_hosts: Box<dyn Fn() + Send + Sync>,
    /// `SET GLOBAL max_connect_errors`.
    pub set_max_connect_errors: Box<dyn Fn(u64) + Send + Sync>,
    /// `SET GLOBAL connect_timeout` (seconds).
    pub set_connect_timeout: Box<dyn Fn(u64) + Send + Sync>,
}

/// The variables this module owns, and whether each is GLOBAL only.
const OWNED: [(&str, bool); 15] = [
    ("connect_timeout", true),
    ("general_log", true),
    ("general_log_file", true),
    ("interactive_timeout", false),
    ("log_output", true),
    ("long_query_time", false),
    ("max_connect_errors", true),
    ("max_session_mem_used", false),
    ("max_user_connections", true),
    ("net_read_timeout", false),
    ("net_write_timeout", false),
    ("slow_query_log", true),
    ("slow_query_log_file", true),
    ("sort_buffer_size", false),
    ("wait_timeout", false),
];

/// Whether `name` is owned here.
pub(crate) fn owns(name: &str) -> bool {
    OWNED.iter().any(|(n, _)| *n == name)
}

/// Whether `name` is owned here and has no session value.
pub(crate) fn global_only(name: &str) -> bool {
    OWNED.iter().any(|(n, g)| *n == name && *g)
}

/// Largest timeout, seconds (MySQL's bound).
const MAX_TIMEOUT: i64 = 31_536_000;

/// `wait_timeout`'s and `interactive_timeout`'s default, seconds (8 h).
const IDLE_TIMEOUT: u64 = 28_800;

/// The global values.
pub(crate) struct Globals {
    max_connect_errors: AtomicU64,
    /// Seconds.
    connect_timeout: AtomicU64,
    max_user_connections: AtomicU64,
    /// `long_query_time` in microseconds.
    long_query_us: AtomicU64,
    net_read_timeout: AtomicU64,
    net_write_timeout: AtomicU64,
    max_session_mem_used: AtomicU64,
    sort_buffer_size: AtomicU64,
    wait_timeout: AtomicU64,
    interactive_timeout: AtomicU64,
    /// Where sorts write their temporary files: the data directory.
    pub(crate) tmpdir: PathBuf,
    pub(crate) logs: Logs,
    hooks: RwLock<Option<Arc<ServerHooks>>>,
    /// The server's TCP port (`@@port`).
    port: AtomicU64,
}

fn bad_value(name: &str, v: &Value) -> SqlError {
    let shown = match v {
        Value::Str(b) => String::from_utf8_lossy(b).into_owned(),
        other => other.to_string(),
    };
    SqlError::new(
        1231,
        "42000",
        format!("Variable '{name}' can't be set to the value of '{shown}'"),
    )
}

fn text(v: &Value) -> String {
    match v {
        Value::Str(b) => String::from_utf8_lossy(b).trim().to_string(),
        other => other.to_string(),
    }
}

/// ON/OFF, 1/0, TRUE/FALSE.
fn boolean(name: &str, v: &Value) -> SqlResult<bool> {
    match text(v).to_ascii_uppercase().as_str() {
        "ON" | "1" | "TRUE" => Ok(true),
        "OFF" | "0" | "FALSE" => Ok(false),
        _ => Err(bad_value(name, v)),
    }
}

fn number(name: &str, v: &Value) -> SqlResult<f64> {
    let f = match v {
        Value::Str(_) => text(v).parse::<f64>().ok(),
        other => crate::expr::num_f64(other),
    };
    f.filter(|f| f.is_finite())
        .ok_or_else(|| bad_value(name, v))
}

/// A timeout in seconds, clamped to 1 ..= one year.
fn timeout(name: &str, v: &Value) -> SqlResult<i64> {
    Ok((number(name, v)?.trunc() as i64).clamp(1, MAX_TIMEOUT))
}

/// A memory limit in bytes, clamped to [`spill::MIN_LIMIT`] ..= 2^63 - 1.
fn mem_limit(name: &str, v: &Value) -> SqlResult<u64> {
    let n = number(name, v)?.trunc();
    Ok(n.clamp(spill::MIN_LIMIT as f64, i64::MAX as f64) as u64)
}

/// `long_query_time` in microseconds, clamped to 0 ..= one year.
fn long_query_us(v: &Value) -> SqlResult<u64> {
    let f = number("long_query_time", v)?.clamp(0.0, MAX_TIMEOUT as f64);
    Ok((f * 1e6).round() as u64)
}

fn on_off(b: bool) -> Value {
    Value::Int(i64::from(b))
}

impl Globals {
    pub(crate) fn new(dir: &Path) -> Globals {
        Globals {
            max_connect_errors: AtomicU64::new(100),
            connect_timeout: AtomicU64::new(10),
            max_user_connections: AtomicU64::new(0),
            long_query_us: AtomicU64::new(10_000_000),
            net_read_timeout: AtomicU64::new(30),
            net_write_timeout: AtomicU64::new(60),
            max_session_mem_used: AtomicU64::new(spill::DEFAULT_MAX_MEM),
            sort_buffer_size: AtomicU64::new(spill::DEFAULT_SORT_BUFFER),
            wait_timeout: AtomicU64::new(IDLE_TIMEOUT),
            interactive_timeout: AtomicU64::new(IDLE_TIMEOUT),
            tmpdir: dir.to_path_buf(),
            logs: Logs::new(dir),
            hooks: RwLock::new(None),
            port: AtomicU64::new(3306),
        }
    }

    /// The server's TCP port.
    pub(crate) fn set_port(&self, port: u16) {
        self.port.store(u64::from(port), Ordering::Relaxed);
        self.logs.set_port(port);
    }

    /// `@@port`.
    pub(crate) fn port(&self) -> Value {
        Value::Int(self.port.load(Ordering::Relaxed) as i64)
    }

    pub(crate) fn set_hooks(&self, hooks: Option<ServerHooks>) {
        *self.hooks.write() = hooks.map(Arc::new);
    }

    fn hooks(&self) -> Option<Arc<ServerHooks>> {
        self.hooks.read().clone()
    }

    /// The global `max_user_connections` (0: no limit).
    pub(crate) fn max_user_connections(&self) -> u32 {
        u32::try_from(self.max_user_connections.load(Ordering::Relaxed)).unwrap_or(u32::MAX)
    }

    /// `FLUSH HOSTS`.
    pub(crate) fn flush_hosts(&self) {
        if let Some(h) = self.hooks() {
            (h.flush_hosts)();
        }
    }

    /// The global value of `name`, if owned here.
    pub(crate) fn get(&self, name: &str) -> Option<Value> {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let path = |k| Value::Str(self.logs.path(k).display().to_string().into_bytes());
        Some(match name {
            "general_log" => on_off(self.logs.enabled(Kind::General)),
            "general_log_file" => path(Kind::General),
            "log_output" => Value::Str(self.logs.output().as_bytes().to_vec()),
            "long_query_time" => Value::Double(l(&self.long_query_us) as f64 / 1e6),
            "max_connect_errors" => Value::Int(l(&self.max_connect_errors) as i64),
            "connect_timeout" => Value::Int(l(&self.connect_timeout) as i64),
            "max_user_connections" => Value::Int(l(&self.max_user_connections) as i64),
            "net_read_timeout" => Value::Int(l(&self.net_read_timeout) as i64),
            "net_write_timeout" => Value::Int(l(&self.net_write_timeout) as i64),
            "max_session_mem_used" => Value::Int(l(&self.max_session_mem_used) as i64),
            "sort_buffer_size" => Value::Int(l(&self.sort_buffer_size) as i64),
            "wait_timeout" => Value::Int(l(&self.wait_timeout) as i64),
            "interactive_timeout" => Value::Int(l(&self.interactive_timeout) as i64),
            "slow_query_log" => on_off(self.logs.enabled(Kind::Slow)),
            "slow_query_log_file" => path(Kind::Slow),
            _ => return None,
        })
    }

    /// Sets the global value of `name` (owned here); the caller checked
    /// the privilege.
    pub(crate) fn set(&self, name: &str, v: &Value) -> SqlResult<()> {
        match name {
            "general_log" => self.logs.set_enabled(Kind::General, boolean(name, v)?),
            "slow_query_log" => self.logs.set_enabled(Kind::Slow, boolean(name, v)?),
            "general_log_file" => self.logs.set_path(Kind::General, &text(v)),
            "slow_query_log_file" => self.logs.set_path(Kind::Slow, &text(v)),
            "log_output" => self.logs.set_output(&text(v)),
            "long_query_time" => {
                self.long_query_us
                    .store(long_query_us(v)?, Ordering::Relaxed);
                Ok(())
            }
            "net_read_timeout" => {
                self.net_read_timeout
                    .store(timeout(name, v)? as u64, Ordering::Relaxed);
                Ok(())
            }
            "net_write_timeout" => {
                self.net_write_timeout
                    .store(timeout(name, v)? as u64, Ordering::Relaxed);
                Ok(())
            }
            "connect_timeout" => {
                // MySQL's range: 2 ..= one year.
                let n = timeout(name, v)?.max(2) as u64;
                self.connect_timeout.store(n, Ordering::Relaxed);
                if let Some(h) = self.hooks() {
                    (h.set_connect_timeout)(n);
                }
                Ok(())
            }
            "max_session_mem_used" => {
                self.max_session_mem_used
                    .store(mem_limit(name, v)?, Ordering::Relaxed);
                Ok(())
            }
            "sort_buffer_size" => {
                self.sort_buffer_size
                    .store(mem_limit(name, v)?, Ordering::Relaxed);
                Ok(())
            }
            "wait_timeout" => {
                self.wait_timeout
                    .store(timeout(name, v)? as u64, Ordering::Relaxed);
                Ok(())
            }
            "interactive_timeout" => {
                self.interactive_timeout
                    .store(timeout(name, v)? as u64, Ordering::Relaxed);
                Ok(())
            }
            "max_user_connections" => {
                // MySQL's range: 0 (no limit) ..= 2^32 - 1, clamped.
                let n = number(name, v)?.trunc().clamp(0.0, f64::from(u32::MAX)) as u64;
                self.max_user_connections.store(n, Ordering::Relaxed);
                Ok(())
            }
            "max_connect_errors" => {
                let n = number(name, v)?;
                let n = if n < 1.0 {
                    1
                } else {
                    n.min(u64::MAX as f64) as u64
                };
                self.max_connect_errors.store(n, Ordering::Relaxed);
                if let Some(h) = self.hooks() {
                    (h.set_max_connect_errors)(n);
                }
                Ok(())
            }
            _ => Err(SqlError::new(
                1193,
                "HY000",
                format!("Unknown system variable '{name}'"),
            )),
        }
    }

    /// A new session's memory limits (`max_session_mem_used`,
    /// `sort_buffer_size`), entered in `vars` where they differ from the
    /// defaults.
    fn seed_mem(&self, vars: &mut BTreeMap<String, Value>, mem: &mut spill::Mem) {
        mem.cap = self.max_session_mem_used.load(Ordering::Relaxed);
        mem.sort_buffer = self.sort_buffer_size.load(Ordering::Relaxed);
        if mem.cap != spill::DEFAULT_MAX_MEM {
            vars.insert("max_session_mem_used".into(), Value::Int(mem.cap as i64));
        }
        if mem.sort_buffer != spill::DEFAULT_SORT_BUFFER {
            vars.insert(
                "sort_buffer_size".into(),
                Value::Int(mem.sort_buffer as i64),
            );
        }
    }

    /// An interactive client's `wait_timeout`: the global
    /// `interactive_timeout` (an entry only where it differs from what the
    /// session would have otherwise).
    pub(crate) fn seed_interactive(&self, vars: &mut BTreeMap<String, Value>) {
        let it = self.interactive_timeout.load(Ordering::Relaxed);
        if it != IDLE_TIMEOUT || vars.contains_key("wait_timeout") {
            vars.insert("wait_timeout".into(), Value::Int(it as i64));
        }
    }

    /// A new session's values: the global `long_query_time`, net and idle
    /// timeouts and memory limits where they differ from the defaults (no
    /// entry otherwise: nothing is allocated for a server left at its
    /// defaults); the memory limits also into `mem`.
    pub(crate) fn seed(
        &self,
        vars: &mut BTreeMap<String, Value>,
        mem: &mut spill::Mem,
    ) -> (u32, u32) {
        self.seed_mem(vars, mem);
        let us = self.long_query_us.load(Ordering::Relaxed);
        if us != 10_000_000 {
            vars.insert("long_query_time".into(), Value::Double(us as f64 / 1e6));
        }
        let wait = self.wait_timeout.load(Ordering::Relaxed);
        if wait != IDLE_TIMEOUT {
            vars.insert("wait_timeout".into(), Value::Int(wait as i64));
        }
        let it = self.interactive_timeout.load(Ordering::Relaxed);
        if it != IDLE_TIMEOUT {
            vars.insert("interactive_timeout".into(), Value::Int(it as i64));
        }
        let r = self.net_read_timeout.load(Ordering::Relaxed);
        let w = self.net_write_timeout.load(Ordering::Relaxed);
        if r != 30 {
            vars.insert("net_read_timeout".into(), Value::Int(r as i64));
        }
        if w != 60 {
            vars.insert("net_write_timeout".into(), Value::Int(w as i64));
        }
        (r as u32, w as u32)
    }
}

/// `SET [GLOBAL | SESSION] name = v` of a variable owned here.
pub(crate) fn set_var(s: &mut StmtCx, global: bool, name: &str, v: Value) -> SqlResult<()> {
    if global {
        let (need, what) = if name == "max_connect_errors" {
            (
                crate::acl::SUPER | crate::acl::CONNECTION_ADMIN,
                "SUPER or CONNECTION_ADMIN",
            )
        } else {
            (crate::acl::SUPER, "SUPER")
        };
        crate::acl::check_global(s, need, what)?;
        return s.db.globals.set(name, &v);
    }
    if global_only(name) {
        return Err(SqlError::new(
            1229,
            "HY000",
            format!("Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"),
        ));
    }
    match name {
        "long_query_time" => {
            let us = long_query_us(&v)?;
            s.vars
                .insert(name.to_string(), Value::Double(us as f64 / 1e6));
        }
        "net_read_timeout" => {
            let t = timeout(name, &v)?;
            s.net_timeouts.0 = t as u32;
            s.vars.insert(name.to_string(), Value::Int(t));
        }
        "net_write_timeout" => {
            let t = timeout(name, &v)?;
            s.net_timeouts.1 = t as u32;
            s.vars.insert(name.to_string(), Value::Int(t));
        }
        "wait_timeout" | "interactive_timeout" => {
            let t = timeout(name, &v)?;
            s.vars.insert(name.to_string(), Value::Int(t));
        }
        "max_session_mem_used" => {
            let n = mem_limit(name, &v)?;
            s.mem.cap = n;
            s.vars.insert(name.to_string(), Value::Int(n as i64));
        }
        "sort_buffer_size" => {
            let n = mem_limit(name, &v)?;
            s.mem.sort_buffer = n;
            s.vars.insert(name.to_string(), Value::Int(n as i64));
        }
        _ => return Err(bad_value(name, &v)),
    }
    Ok(())
}
