//! `cairndb server` and `cairndb sql-check`: their options (command line
//! and my.cnf-style file) parsed into `cairndb_mysqld::ServerOptions`,
//! memory budgets sized to the process's limit, and the server started.
//! The server itself (the SQL layer behind the protocol, accounts, TLS,
//! shutdown) is `cairndb-mysqld`'s.

use std::collections::HashMap;
use std::path::PathBuf;

use cairndb_mysqld::{ServerOptions, TlsSource};
use cairndb_sql::{FlushLogAtCommit, SqlDb, SqlOptions};

const USAGE: &str =
    "usage: cairndb server --datadir=DIR [--port=3306] [--bind=127.0.0.1] [--config=FILE]
  [--init-password-file=FILE] [--max-connections=N] [--max-allowed-packet=BYTES]
  [--flush-log-at-trx-commit=0|1|2] [--lock-wait-timeout=SECONDS] [--zip-from-level=N|off]
  [--block-cache-size=BYTES] [--write-buffer-size=BYTES] [--zip-working-memory=BYTES]
  [--max-open-files=N|-1] [--zip-group-size=N] [--zip-key-index-in-place=on|off]
  [--worker-threads=N] [--memory-limit=auto|off|BYTES] [--commit-wait=task|thread]
  [--ssl-cert=FILE --ssl-key=FILE] [--ssl-ca=FILE] [--ssl=0|1] [--skip-ssl]
  [--require-secure-transport[=on|off]]
  [--max-connect-errors=N] [--connect-timeout=SECONDS]
  [--net-read-timeout=SECONDS] [--net-write-timeout=SECONDS]
  [--slow-query-log=on|off] [--slow-query-log-file=FILE] [--long-query-time=SECONDS]
  [--general-log=on|off] [--general-log-file=FILE] [--log-output=FILE|NONE]
  [--max-session-mem-used=BYTES] [--sort-buffer-size=BYTES]
  [--wait-timeout=SECONDS] [--interactive-timeout=SECONDS]

The config file is my.cnf-style: `key = value` lines (the same names, with
- or _), `[section]` headers and `#` comments are ignored. Command-line
options override it.
Accounts live in the data directory (CREATE USER, GRANT). The first start
makes root@localhost with every privilege: its password is the first line
of --init-password-file, else empty; while root's password is empty the
server listens only on a loopback address. `user = NAME:PASSWORD` in the
config file (deprecated) makes NAME@'%' with every privilege at start
unless an account of that name exists; the command line refuses --user
(a password there would show in `ps`).
TLS is on unless --ssl=0 or --skip-ssl: without --ssl-cert and --ssl-key a
CA and server certificate are made in the data directory at first start
(ca.pem, server-cert.pem, server-key.pem) and reused after.
";

/// Options that may stand alone, meaning on (`--skip-ssl`); a value
/// goes after `=` (`--ssl=0`).
const FLAGS: [&str; 4] = [
    "ssl",
    "skip-ssl",
    "require-secure-transport",
    "block-loopback-hosts",
];

/// Every option on the command line (the config file takes the same
/// names): its name, the other names it is known by (MySQL's, MyRocks'),
/// and what it takes. `Settings::set` reads and checks the values.
const OPTIONS: &[(&str, &[&str], &str)] = &[
    ("datadir", &[], "DIR"),
    ("port", &[], "PORT"),
    ("bind", &["bind-address"], "ADDRESS"),
    ("user", &[], "NAME"),
    ("init-password-file", &[], "FILE"),
    ("max-connections", &[], "N"),
    ("max-allowed-packet", &[], "BYTES"),
    (
        "flush-log-at-trx-commit",
        &["rocksdb-flush-log-at-trx-commit"],
        "0|1|2",
    ),
    (
        "lock-wait-timeout",
        &["innodb-lock-wait-timeout"],
        "SECONDS",
    ),
    ("zip-from-level", &[], "N|off"),
    ("block-cache-size", &[], "BYTES"),
    ("write-buffer-size", &["rocksdb-write-buffer-size"], "BYTES"),
    ("max-open-files", &["rocksdb-max-open-files"], "N|-1"),
    ("zip-working-memory", &[], "BYTES"),
    ("zip-group-size", &[], "N"),
    ("zip-key-index-in-place", &[], "on|off"),
    ("memory-limit", &[], "auto|off|BYTES"),
    ("commit-wait", &[], "task|thread"),
    ("ssl", &[], "0|1"),
    ("skip-ssl", &[], "on|off"),
    ("ssl-cert", &[], "FILE"),
    ("ssl-key", &[], "FILE"),
    ("ssl-ca", &[], "FILE"),
    ("require-secure-transport", &[], "on|off"),
    ("max-connect-errors", &[], "N"),
    ("connect-timeout", &[], "SECONDS"),
    ("net-read-timeout", &[], "SECONDS"),
    ("net-write-timeout", &[], "SECONDS"),
    ("slow-query-log", &[], "on|off"),
    ("slow-query-log-file", &[], "FILE"),
    ("long-query-time", &[], "SECONDS"),
    ("general-log", &[], "on|off"),
    ("general-log-file", &[], "FILE"),
    ("log-output", &[], "FILE|NONE"),
    ("max-session-mem-used", &[], "BYTES"),
    ("sort-buffer-size", &[], "BYTES"),
    ("wait-timeout", &[], "SECONDS"),
    ("interactive-timeout", &[], "SECONDS"),
    ("block-loopback-hosts", &[], "on|off"),
    ("worker-threads", &[], "N"),
];

/// The command line's parser: every option of [`OPTIONS`] (repeatable;
/// the last one given wins, `--user` adds), `--config`, and `--help`
/// printing [`USAGE`].
fn command() -> clap::Command {
    let mut c = clap::Command::new("cairndb server")
        .no_binary_name(true)
        .override_usage("cairndb server --datadir=DIR [OPTIONS]")
        .override_help(USAGE)
        .disable_version_flag(true)
        .arg(
            clap::Arg::new("config")
                .long("config")
                .value_name("FILE")
                .action(clap::ArgAction::Append),
        );
    for (name, aliases, value) in OPTIONS {
        let mut a = clap::Arg::new(*name)
            .long(*name)
            .aliases(aliases.iter().copied())
            .value_name(*value)
            .action(clap::ArgAction::Append)
            .hide(*name == "block-loopback-hosts");
        a = if FLAGS.contains(name) {
            a.num_args(0..=1)
                .require_equals(true)
                .default_missing_value("")
        } else {
            a.num_args(1).allow_hyphen_values(true)
        };
        c = c.arg(a);
    }
    c
}

/// `--name_with_underscores[=v]` as `--name-with-underscores[=v]` (MySQL
/// takes either spelling); anything else as it is.
fn dashed(arg: &str) -> String {
    match arg.strip_prefix("--") {
        Some(body) => match body.split_once('=') {
            Some((k, v)) => format!("--{}={v}", k.replace('_', "-")),
            None => format!("--{}", body.replace('_', "-")),
        },
        None => arg.to_string(),
    }
}

/// Rows per zip-table group in the server unless `--zip-group-size` says
/// otherwise: 16, not the engine's 8. On sysbench's rows (short, mostly
/// digits) groups of 8 gave 2% more point selects under the 256 MB cap and
/// fewer read-write transactions (docs/BENCHMARKS.md, "SQL").
pub const SERVER_ZIP_GROUP_SIZE: usize = 16;

/// Server settings.
struct Settings {
    datadir: Option<PathBuf>,
    port: u16,
    bind: String,
    /// `--user=NAME:PASSWORD` (deprecated): accounts made at start if
    /// missing.
    users: HashMap<String, String>,
    /// `--init-password-file`: root's password at the first start.
    init_password_file: Option<PathBuf>,
    max_connections: u32,
    max_allowed_packet: usize,
    flush: FlushLogAtCommit,
    lock_wait_timeout: u64,
    zip_from_level: Option<usize>,
    block_cache_size: Option<usize>,
    write_buffer_size: Option<usize>,
    zip_working_memory: Option<usize>,
    /// Rows per zip-table group (`ZipTableOptions::group_size`); `None`:
    /// [`SERVER_ZIP_GROUP_SIZE`].
    zip_group_size: Option<usize>,
    /// Table files held open; `None`: no bound (readers pinned to files).
    max_open_files: Option<usize>,
    /// `ZipTableOptions::key_index_in_place`; on by default in the server:
    /// most secondary indexes go unread at any one time, and an unread key
    /// index then costs no memory.
    zip_key_index_in_place: bool,
    /// The memory the server sizes its unset budgets to
    /// ([`MemoryLimit`]); `auto` reads the process's cgroup.
    memory_limit: MemoryLimit,
    /// Network threads (tokio workers); `None`: one per CPU. A worker the
    /// scheduler preempts (a loopback `send` wakes the client, which often
    /// takes the CPU) holds up the connections queued on it until another
    /// worker steals them; more workers than CPUs shorten that, at the
    /// price of more threads to switch between (no clear difference for
    /// sysbench with 8 threads on 2 CPUs, docs/BENCHMARKS.md).
    worker_threads: Option<usize>,
    /// How a synced commit waits for its fdatasync: `true` (`task`, the
    /// default) as the client's task, the WAL syncer thread syncing
    /// (`Session::set_deferred_durability`); `false` (`thread`) on the
    /// executing thread, inside the write.
    commit_wait_task: bool,
    /// TLS offered (`--ssl`, on by default; `--ssl=0` / `--skip-ssl`).
    ssl: bool,
    /// `--ssl-cert` and `--ssl-key`; `None`: the generated ones.
    ssl_cert: Option<PathBuf>,
    ssl_key: Option<PathBuf>,
    /// `--ssl-ca`: client certificates, if sent, must chain to it.
    ssl_ca: Option<PathBuf>,
    /// `--require-secure-transport`: plain-TCP logins get ERR 3159.
    require_secure_transport: bool,
    /// Global variables set at start (`--slow-query-log=on`, ...): name
    /// with underscores, value; checked when the database opens.
    globals: Vec<(String, String)>,
    /// `--block-loopback-hosts` (for tests, not in the usage): loopback
    /// addresses are blocked after `max_connect_errors` failures too.
    block_loopback_hosts: bool,
}

/// An on/off value; empty (a bare flag) is on.
fn parse_bool(key: &str, v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "" | "on" | "1" | "true" | "yes" => Ok(true),
        "off" | "0" | "false" | "no" => Ok(false),
        _ => Err(format!("option {key}: `{v}` is not on or off")),
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            datadir: None,
            port: 3306,
            bind: "127.0.0.1".into(),
            users: HashMap::new(),
            init_password_file: None,
            max_connections: 1000,
            max_allowed_packet: 64 << 20,
            flush: FlushLogAtCommit::EveryCommit,
            lock_wait_timeout: 50,
            zip_from_level: Some(1),
            block_cache_size: None,
            write_buffer_size: None,
            zip_working_memory: None,
            zip_group_size: None,
            max_open_files: None,
            zip_key_index_in_place: true,
            worker_threads: None,
            memory_limit: MemoryLimit::Auto,
            commit_wait_task: true,
            ssl: true,
            ssl_cert: None,
            ssl_key: None,
            ssl_ca: None,
            require_secure_transport: false,
            globals: Vec::new(),
            block_loopback_hosts: false,
        }
    }
}

fn parse_num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("option {key}: `{v}` is not a number"))
}

impl Settings {
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let key = key.trim().replace('_', "-");
        let v = value.trim().trim_matches(['"', '\'']);
        match key.as_str() {
            "datadir" => self.datadir = Some(PathBuf::from(v)),
            "port" => self.port = parse_num(&key, v)?,
            "bind" | "bind-address" => self.bind = v.to_string(),
            "user" => {
                let (name, pw) = v.split_once(':').unwrap_or((v, ""));
                if name.is_empty() {
                    return Err("option user: empty user name".into());
                }
                self.users.insert(name.to_string(), pw.to_string());
            }
            "init-password-file" => self.init_password_file = Some(PathBuf::from(v)),
            "max-connections" => self.max_connections = parse_num(&key, v)?,
            "max-allowed-packet" => self.max_allowed_packet = parse_num(&key, v)?,
            "flush-log-at-trx-commit" | "rocksdb-flush-log-at-trx-commit" => {
                self.flush = match v {
                    "0" => FlushLogAtCommit::Never,
                    "1" => FlushLogAtCommit::EveryCommit,
                    "2" => FlushLogAtCommit::EverySecond,
                    _ => return Err(format!("option {key}: `{v}` is not 0, 1 or 2")),
                }
            }
            "lock-wait-timeout" | "innodb-lock-wait-timeout" => {
                self.lock_wait_timeout = parse_num(&key, v)?
            }
            "zip-from-level" => {
                self.zip_from_level = if v.eq_ignore_ascii_case("off") {
                    None
                } else {
                    Some(parse_num(&key, v)?)
                }
            }
            "block-cache-size" => self.block_cache_size = Some(parse_num(&key, v)?),
            // The engine checks the range when the database opens.
            "write-buffer-size" | "rocksdb-write-buffer-size" => {
                self.write_buffer_size = Some(parse_num(&key, v)?)
            }
            // -1 (the default): every table file stays open, its reader
            // reached by a point read without a cache lookup
            // (`Options::max_open_files`); else a bound the engine checks.
            "max-open-files" | "rocksdb-max-open-files" => {
                self.max_open_files = if v.trim() == "-1" {
                    None
                } else {
                    Some(parse_num(&key, v)?)
                }
            }
            // The most memory zip-table builds (flush, compaction) hold at
            // once; the engine checks the range when the database opens.
            "zip-working-memory" => self.zip_working_memory = Some(parse_num(&key, v)?),
            // The engine checks the range when the database opens.
            "zip-group-size" => self.zip_group_size = Some(parse_num(&key, v)?),
            "zip-key-index-in-place" => {
                self.zip_key_index_in_place = match v.trim().to_ascii_lowercase().as_str() {
                    "on" | "1" | "true" => true,
                    "off" | "0" | "false" => false,
                    _ => return Err(format!("option {key}: `{v}` is not on or off")),
                }
            }
            "memory-limit" => {
                self.memory_limit = match v.trim().to_ascii_lowercase().as_str() {
                    "auto" => MemoryLimit::Auto,
                    "off" | "0" => MemoryLimit::Off,
                    _ => {
                        let n: u64 = parse_num(&key, v)?;
                        if n < 16 << 20 {
                            return Err(format!("option {key}: `{v}` is below 16 MiB (16777216)"));
                        }
                        MemoryLimit::Bytes(n)
                    }
                }
            }
            "commit-wait" => {
                self.commit_wait_task = match v.trim().to_ascii_lowercase().as_str() {
                    "task" => true,
                    "thread" => false,
                    _ => return Err(format!("option {key}: `{v}` is not task or thread")),
                }
            }
            "ssl" => self.ssl = parse_bool(&key, v)?,
            "skip-ssl" => self.ssl = !parse_bool(&key, v)?,
            "ssl-cert" => self.ssl_cert = Some(PathBuf::from(v)),
            "ssl-key" => self.ssl_key = Some(PathBuf::from(v)),
            "ssl-ca" => self.ssl_ca = Some(PathBuf::from(v)),
            "require-secure-transport" => self.require_secure_transport = parse_bool(&key, v)?,
            "max-connect-errors"
            | "connect-timeout"
            | "net-read-timeout"
            | "net-write-timeout"
            | "slow-query-log"
            | "slow-query-log-file"
            | "long-query-time"
            | "general-log"
            | "general-log-file"
            | "log-output"
            | "max-session-mem-used"
            | "sort-buffer-size"
            | "wait-timeout"
            | "interactive-timeout" => self.globals.push((key.replace('-', "_"), v.to_string())),
            "block-loopback-hosts" => self.block_loopback_hosts = parse_bool(&key, v)?,
            "worker-threads" => {
                let n: usize = parse_num(&key, v)?;
                if !(1..=1024).contains(&n) {
                    return Err(format!("option {key}: `{v}` is not between 1 and 1024"));
                }
                self.worker_threads = Some(n);
            }
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
        Ok(())
    }

    /// `--worker-threads`, or one per CPU.
    fn worker_threads(&self) -> usize {
        self.worker_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    fn load_file(&mut self, path: &str) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("config file {path}: {e}"))?;
        for (n, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') || l.starts_with(';') || l.starts_with('[') {
                continue;
            }
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            self.set(k, v)
                .map_err(|e| format!("config file {path} line {}: {e}", n + 1))?;
        }
        Ok(())
    }

    fn from_args(args: &[String]) -> Result<Settings, String> {
        let m = command()
            .try_get_matches_from(args.iter().map(|a| dashed(a)))
            .map_err(|e| e.to_string())?;
        let mut s = Settings::default();
        // The config file first, so the command line overrides it.
        for f in m.get_many::<String>("config").into_iter().flatten() {
            s.load_file(f)?;
        }
        for (name, _, _) in OPTIONS {
            for v in m.get_many::<String>(name).into_iter().flatten() {
                if *name == "user" {
                    // NAME:PASSWORD would show the password in `ps` and in
                    // shell history; NAME alone would make a superuser
                    // without one.
                    return Err(format!(
                        "--user={}: accounts are not made from the command line (a password \
                         there shows in `ps` and in shell history); give `user = \
                         NAME:PASSWORD` in the config file (--config=FILE, a file only you can \
                         read), root's password with --init-password-file=FILE, or make \
                         accounts with CREATE USER",
                        v.split(':').next().unwrap_or_default()
                    ));
                }
                s.set(name, v)?;
            }
        }
        if s.ssl_cert.is_some() != s.ssl_key.is_some() {
            return Err("--ssl-cert and --ssl-key go together".into());
        }
        if s.require_secure_transport && !s.ssl {
            return Err("--require-secure-transport needs TLS, which --ssl=0 turns off".into());
        }
        Ok(s)
    }

    /// Unless the options set `max_session_mem_used`, sets it to a
    /// quarter of the memory limit, or of the machine's memory (at least
    /// 64 MiB), and returns it: one statement's rows may then take a
    /// quarter of what there is, never all of it.
    fn default_statement_memory(&mut self, limit: Option<u64>, meminfo: &str) -> Option<u64> {
        if self
            .globals
            .iter()
            .any(|(k, _)| k == "max_session_mem_used")
        {
            return None;
        }
        let total = || cairndb::internals::util::memory::mem_total(meminfo);
        let m = (limit.or_else(total)? / 4).max(MIN_STATEMENT_MEMORY);
        self.globals
            .push(("max_session_mem_used".to_string(), m.to_string()));
        Some(m)
    }

    /// The server's options: these settings over the database options
    /// `sql`, in `datadir`.
    fn server_options(&self, datadir: PathBuf, sql: SqlOptions) -> Result<ServerOptions, String> {
        let init_password = match &self.init_password_file {
            Some(f) => Some(read_password_file(f)?),
            None => None,
        };
        // `serve` makes them in name order.
        let users: Vec<(String, String)> = self
            .users
            .iter()
            .map(|(n, p)| (n.clone(), p.clone()))
            .collect();
        let tls = match (&self.ssl_cert, &self.ssl_key) {
            _ if !self.ssl => TlsSource::Off,
            (Some(cert), Some(key)) => TlsSource::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            _ => TlsSource::Generated,
        };
        Ok(ServerOptions {
            datadir,
            sql,
            bind: self.bind.clone(),
            port: self.port,
            max_connections: self.max_connections,
            max_allowed_packet: self.max_allowed_packet,
            worker_threads: self.worker_threads(),
            commit_wait_task: self.commit_wait_task,
            tls,
            ssl_ca: self.ssl_ca.clone(),
            require_secure_transport: self.require_secure_transport,
            init_password,
            users,
            globals: self.globals.clone(),
            block_loopback_hosts: self.block_loopback_hosts,
        })
    }

    /// The memory limit the budgets are sized to: the option, or with
    /// `auto` the process's cgroup limit (`cgroup` is what
    /// `/proc/self/cgroup` says, `root` where the hierarchy is mounted).
    fn memory_limit(&self, cgroup: &str, root: &std::path::Path) -> Option<u64> {
        match self.memory_limit {
            MemoryLimit::Off => None,
            MemoryLimit::Bytes(n) => Some(n),
            MemoryLimit::Auto => {
                cairndb::internals::util::memory::cgroup_memory_limit(cgroup, root)
            }
        }
    }

    /// Engine options with every memory budget not set by an option sized
    /// to `limit` ([`Budgets::for_limit`]).
    fn sql_options_within(&self, limit: Option<u64>) -> SqlOptions {
        let mut s = self.sql_options();
        if let Some(b) = limit.map(Budgets::for_limit) {
            let e = &mut s.engine;
            if self.block_cache_size.is_none() {
                e.block_cache_size = e.block_cache_size.min(b.block_cache);
            }
            if self.write_buffer_size.is_none() {
                e.write_buffer_size = e.write_buffer_size.min(b.write_buffer);
            }
            if self.zip_working_memory.is_none() {
                let m = e.zip.hard_working_mem_limit.min(b.zip_working_memory);
                set_zip_working_memory(e, m);
            }
        }
        s
    }

    fn sql_options(&self) -> SqlOptions {
        let mut engine = cairndb::Options::default();
        if let Some(l) = self.zip_from_level {
            engine.set_zip_from_level(l);
        }
        if let Some(c) = self.block_cache_size {
            engine.block_cache_size = c;
        }
        if let Some(w) = self.write_buffer_size {
            engine.write_buffer_size = w;
        }
        engine.max_open_files = self.max_open_files.unwrap_or(usize::MAX);
        engine.zip.group_size = self.zip_group_size.unwrap_or(SERVER_ZIP_GROUP_SIZE);
        engine.zip.key_index_in_place = self.zip_key_index_in_place;
        // Not measured under sysbench's capped runs yet, where the data is
        // larger than memory: the server keeps reading tables as touched.
        engine.zip.read_ahead_on_open = Some(0);
        if let Some(m) = self.zip_working_memory {
            set_zip_working_memory(&mut engine, m);
        }
        SqlOptions {
            engine,
            flush_log_at_trx_commit: self.flush,
            lock_wait_timeout_secs: self.lock_wait_timeout,
        }
    }
}

/// Bounds zip-table builds to `m` bytes: the hard limit, and the soft
/// (spill) limit no higher.
fn set_zip_working_memory(engine: &mut cairndb::Options, m: usize) {
    engine.zip.hard_working_mem_limit = m;
    engine.zip.soft_working_mem_limit = engine.zip.soft_working_mem_limit.min(m);
}

/// `--memory-limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemoryLimit {
    /// The process's cgroup memory limit, if it has one.
    Auto,
    /// No limit: the engine's defaults.
    Off,
    Bytes(u64),
}

/// Memory budgets for a server that must fit in a limit (cgroup v1 counts
/// the page cache of the table files in it, v2 too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Budgets {
    block_cache: usize,
    write_buffer: usize,
    zip_working_memory: usize,
}

impl Budgets {
    /// A 64th of the limit for the block cache, a 16th for each memtable,
    /// an 8th for zip-table builds, each at most the engine's default and
    /// at least a floor. In 256 MB that is 4 MiB, 16 MiB and 32 MiB, the
    /// settings that did best under that cap in docs/BENCHMARKS.md: the
    /// zip tables' compressed pages in the page cache serve more rows than
    /// a larger cache of decoded groups, and the engine's defaults (64 MiB
    /// memtables, 256 MiB of builds) do not fit.
    fn for_limit(limit: u64) -> Budgets {
        let part = |div: u64, floor: usize| -> usize {
            usize::try_from(limit / div)
                .unwrap_or(usize::MAX)
                .max(floor)
        };
        Budgets {
            block_cache: part(64, 1 << 20),
            write_buffer: part(16, 4 << 20),
            zip_working_memory: part(8, 8 << 20),
        }
    }
}

/// `cairndb server`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        let _ = std::io::Write::write_all(&mut std::io::stdout(), USAGE.as_bytes());
        return Ok(());
    }
    tune_malloc();
    let mut s = Settings::from_args(&args)?;
    let datadir = s
        .datadir
        .clone()
        .ok_or_else(|| format!("--datadir is required\n{USAGE}"))?;
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limit = s.memory_limit(&cgroup, std::path::Path::new("/sys/fs/cgroup"));
    let sql = s.sql_options_within(limit);
    let statement_memory = s.default_statement_memory(limit, &read_meminfo());
    if let Some(l) = limit {
        eprintln!(
            "cairndb server: memory limit {} MiB: block cache {} MiB, write buffer {} MiB, \
             zip working memory {} MiB (options set them; --memory-limit=off for the defaults)",
            l >> 20,
            sql.engine.block_cache_size >> 20,
            sql.engine.write_buffer_size >> 20,
            sql.engine.zip.hard_working_mem_limit >> 20,
        );
    }
    if let Some(m) = statement_memory {
        eprintln!(
            "cairndb server: max_session_mem_used {} MiB (a quarter of the memory; \
             --max-session-mem-used sets it)",
            m >> 20
        );
    }
    let opts = s.server_options(datadir, sql)?;
    cairndb_mysqld::serve(opts, cairndb_server::shutdown_signal, |addr| {
        println!("cairndb server listening on {addr}")
    })?;
    eprintln!("cairndb server: shut down cleanly");
    Ok(())
}

/// `/proc/meminfo`, or nothing where it cannot be read.
fn read_meminfo() -> String {
    std::fs::read_to_string("/proc/meminfo").unwrap_or_default()
}

/// The least default `max_session_mem_used` the server sets.
const MIN_STATEMENT_MEMORY: u64 = 64 << 20;

/// The first line of a password file, its line end stripped.
fn read_password_file(f: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(f)
        .map_err(|e| format!("--init-password-file {}: {e}", f.display()))?;
    Ok(text
        .lines()
        .next()
        .unwrap_or("")
        .trim_end_matches('\r')
        .to_string())
}

/// Sets glibc malloc up for a long-running server whose memory must stay
/// near what it uses. Measured under sysbench with a 128 MB block cache:
/// glibc held 355 MB from the system for 186 MB in use, spread over a
/// dozen per-thread arenas (one at 64 MB with 0.3 MB in use after a
/// compaction), because freed large buffers (memtable chunks, compaction
/// and zip-build buffers) stayed in the arena that made them once the
/// dynamic mmap threshold had grown past their size. So: two arenas, and
/// a fixed mmap threshold (which also fixes the trim threshold), so that
/// blocks of 256 KiB or more are mappings of their own, unmapped on free.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes malloc's tunables; it is called first
    // thing in `server`, before the server makes any thread, and each call
    // takes a valid option with a value in its range.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 20);
    }
}

/// `cairndb sql-check --datadir=DIR`: every row decodes and every index
/// agrees with its table.
pub fn check_main(args: Vec<String>) -> Result<(), String> {
    let s = Settings::from_args(&args)?;
    let datadir = s
        .datadir
        .clone()
        .ok_or("usage: cairndb sql-check --datadir=DIR")?;
    let db = SqlDb::open(&datadir, s.sql_options())
        .map_err(|e| format!("opening {}: {e}", datadir.display()))?;
    let rep = cairndb_sql::check::check(&db).map_err(|e| e.to_string())?;
    println!(
        "sql-check: {} tables, {} rows, {} index entries, {} problems",
        rep.tables,
        rep.rows,
        rep.index_entries,
        rep.problems.len()
    );
    for p in &rep.problems {
        println!("  {p}");
    }
    db.close().map_err(|e| e.to_string())?;
    if rep.problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{} problems", rep.problems.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &[&str]) -> Result<Settings, String> {
        Settings::from_args(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn max_open_files_is_unbounded_by_default_and_parsed() {
        let s = settings(&["--datadir=/tmp/x"]).unwrap();
        assert_eq!(s.sql_options().engine.max_open_files, usize::MAX);
        let s = settings(&["--datadir=/tmp/x", "--max-open-files=-1"]).unwrap();
        assert_eq!(s.sql_options().engine.max_open_files, usize::MAX);
        let s = settings(&["--datadir=/tmp/x", "--max_open_files=500"]).unwrap();
        assert_eq!(s.sql_options().engine.max_open_files, 500);
        let e = settings(&["--max-open-files=lots"]).err().unwrap();
        assert!(
            e.contains("max-open-files") || e.contains("max_open_files"),
            "{e}"
        );
    }

    /// `--zip-group-size`: the server's own default unless given.
    #[test]
    fn zip_group_size_defaults_to_the_servers_and_is_parsed() {
        let s = settings(&["--datadir=/tmp/x"]).unwrap();
        assert_eq!(s.sql_options().engine.zip.group_size, SERVER_ZIP_GROUP_SIZE);
        let s = settings(&["--datadir=/tmp/x", "--zip_group_size=64"]).unwrap();
        assert_eq!(s.sql_options().engine.zip.group_size, 64);
        let e = settings(&["--zip-group-size=big"]).err().unwrap();
        assert!(e.contains("zip"), "{e}");
    }

    /// The server reads its zip tables as touched, not ahead at open: the
    /// read-ahead was measured on the file workload, not under sysbench.
    #[test]
    fn zip_read_ahead_is_off_in_the_server() {
        let s = settings(&["--datadir=/tmp/x"]).unwrap();
        assert_eq!(s.sql_options().engine.zip.read_ahead_on_open, Some(0));
        assert_eq!(cairndb::ZipTableOptions::default().read_ahead_on_open, None);
    }

    /// `--zip-key-index-in-place`: on unless turned off; anything but
    /// on/off is an error naming the option.
    #[test]
    fn zip_key_index_in_place_is_on_by_default_and_parsed() {
        let s = settings(&["--datadir=/tmp/x"]).unwrap();
        assert!(s.sql_options().engine.zip.key_index_in_place);
        let s = settings(&["--datadir=/tmp/x", "--zip_key_index_in_place=off"]).unwrap();
        assert!(!s.sql_options().engine.zip.key_index_in_place);
        let e = settings(&["--zip-key-index-in-place=maybe"]).err().unwrap();
        assert!(
            e.contains("key-index-in-place") || e.contains("key_index_in_place"),
            "{e}"
        );
    }

    /// Under a limit the unset budgets shrink to it (4, 16 and 32 MiB in
    /// 256 MB), never above the engine's defaults; options given win;
    /// `--memory-limit=off` and a bad value.
    #[test]
    fn statement_memory_defaults_to_a_quarter_of_the_memory() {
        let meminfo = "MemTotal:       24000000 kB\nMemFree: 1 kB\n";
        let mut s = settings(&["--datadir=/tmp/x"]).unwrap();
        assert_eq!(
            s.default_statement_memory(None, meminfo),
            Some(6_144_000_000)
        );
        let mut s = settings(&["--datadir=/tmp/x"]).unwrap();
        assert_eq!(
            s.default_statement_memory(Some(128 << 20), meminfo),
            Some(64 << 20)
        );
        let mut s = settings(&["--datadir=/tmp/x"]).unwrap();
        assert_eq!(s.default_statement_memory(None, ""), None);
        let mut s = settings(&["--datadir=/tmp/x", "--max-session-mem-used=100000"]).unwrap();
        assert_eq!(s.default_statement_memory(None, meminfo), None);
        assert_eq!(
            s.globals,
            vec![("max_session_mem_used".to_string(), "100000".to_string())]
        );
    }

    #[test]
    fn memory_limit_sizes_the_unset_budgets() {
        let d = cairndb::Options::default();
        let s = settings(&["--datadir=/tmp/x"]).unwrap();
        let o = s.sql_options_within(Some(256 << 20)).engine;
        assert_eq!(o.block_cache_size, 4 << 20);
        assert_eq!(o.write_buffer_size, 16 << 20);
        assert_eq!(o.zip.hard_working_mem_limit, 32 << 20);
        assert!(o.zip.soft_working_mem_limit <= 32 << 20);
        // A large limit keeps the defaults.
        let o = s.sql_options_within(Some(64 << 30)).engine;
        assert_eq!(o.block_cache_size, d.block_cache_size);
        assert_eq!(o.write_buffer_size, d.write_buffer_size);
        assert_eq!(o.zip.hard_working_mem_limit, d.zip.hard_working_mem_limit);
        // Options given are kept.
        let s = settings(&["--datadir=/tmp/x", "--block-cache-size=134217728"]).unwrap();
        let o = s.sql_options_within(Some(256 << 20)).engine;
        assert_eq!(o.block_cache_size, 128 << 20);
        assert_eq!(o.write_buffer_size, 16 << 20);
        // The option itself.
        let root = std::path::Path::new("/nonexistent");
        let s = settings(&["--datadir=/tmp/x", "--memory-limit=off"]).unwrap();
        assert_eq!(s.memory_limit("4:memory:/\n", root), None);
        let s = settings(&["--datadir=/tmp/x", "--memory_limit=268435456"]).unwrap();
        assert_eq!(s.memory_limit("", root), Some(256 << 20));
        for bad in ["lots", "1000"] {
            let e = settings(&[&format!("--memory-limit={bad}")]).err().unwrap();
            assert!(e.contains("memory-limit"), "{e}");
        }
    }

    /// TLS options: on by default; `--skip-ssl` and `--ssl=0` as flags or
    /// values; cert and key together; require-secure-transport as a bare
    /// flag, refused with TLS off.
    #[test]
    fn tls_options() {
        let s = settings(&["--datadir=/tmp/x"]).unwrap();
        assert!(s.ssl && !s.require_secure_transport && s.ssl_cert.is_none());
        let s = settings(&["--skip-ssl", "--datadir=/tmp/x"]).unwrap();
        assert!(!s.ssl);
        let s = settings(&["--datadir=/tmp/x", "--ssl=0"]).unwrap();
        assert!(!s.ssl);
        let s = settings(&[
            "--require-secure-transport",
            "--ssl-cert=c.pem",
            "--ssl_key=k.pem",
            "--ssl-ca=ca.pem",
            "--datadir=/tmp/x",
        ])
        .unwrap();
        assert!(s.ssl && s.require_secure_transport);
        assert_eq!(s.ssl_ca, Some(PathBuf::from("ca.pem")));
        assert!(settings(&["--datadir=/tmp/x", "--ssl-cert=c.pem"]).is_err());
        let e = settings(&["--skip-ssl", "--require_secure_transport=on"])
            .err()
            .unwrap();
        assert!(e.contains("require-secure-transport"), "{e}");
        assert!(settings(&["--ssl=maybe"]).is_err());
    }

    /// `--worker-threads`: one per CPU unless set; 0, a non-number or
    /// more than 1024 is an error naming the option.
    #[test]
    fn worker_threads_default_to_one_per_cpu_and_are_checked() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let s = settings(&["--datadir=/tmp/x"]).unwrap();
        assert_eq!(s.worker_threads(), cpus);
        let s = settings(&["--datadir=/tmp/x", "--worker_threads=3"]).unwrap();
        assert_eq!(s.worker_threads(), 3);
        for bad in ["0", "many", "5000"] {
            let e = settings(&[&format!("--worker-threads={bad}")])
                .err()
                .unwrap();
            assert!(e.contains("worker-threads"), "{e}");
        }
    }
}
