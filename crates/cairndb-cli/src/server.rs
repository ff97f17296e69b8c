//! `cairndb server` and `cairndb sql-check`: the MySQL-compatible server
//! (the SQL layer of `cairndb-sql` behind the protocol of
//! `cairndb-server`) and the offline consistency check of its tables.
//!
//! This module only adapts: a `cairndb_sql::Session` answers each command,
//! its `Output` calls become the protocol's `Results` calls, values become
//! `RowWriter` calls (no allocation per row), and SQL errors keep their
//! MySQL codes. Shutdown on SIGINT/SIGTERM stops accepting, lets running
//! statements finish, drops the sessions (rolling back open transactions)
//! and closes the database, which syncs the WAL.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use cairndb_server::{Backend, Column, ColumnFlags, ColumnType, Prepared, Results, StatusFlags};
use cairndb_sql::{
    split_statements, ColumnInfo, FlushLogAtCommit, OutType, Output, Plugin, Session, SqlDb,
    SqlOptions, Transport, Value,
};

const USAGE: &str =
    "usage: cairndb server --datadir=DIR [--port=3306] [--bind=127.0.0.1] [--config=FILE]
  [--init-password-file=FILE] [--max-connections=N] [--max-allowed-packet=BYTES]
  [--flush-log-at-trx-commit=0|1|2] [--lock-wait-timeout=SECONDS] [--zip-from-level=N|off]
  [--block-cache-size=BYTES] [--write-buffer-size=BYTES] [--zip-working-memory=BYTES]
  [--max-open-files=N|-1] [--zip-group-size=N] [--zip-key-index-in-place=on|off]
  [--worker-threads=N] [--memory-limit=auto|off|BYTES] [--commit-wait=task|thread]
  [--ssl-cert=FILE --ssl-key=FILE] [--ssl-ca=FILE] [--ssl=0|1] [--skip-ssl]
  [--require-secure-transport[=on|off]] [--user=NAME[:PASSWORD]]... (deprecated)
  [--max-connect-errors=N] [--net-read-timeout=SECONDS] [--net-write-timeout=SECONDS]
  [--slow-query-log=on|off] [--slow-query-log-file=FILE] [--long-query-time=SECONDS]
  [--general-log=on|off] [--general-log-file=FILE] [--log-output=FILE|NONE]

The config file is my.cnf-style: `key = value` lines (the same names, with
- or _), `[section]` headers and `#` comments are ignored. Command-line
options override it.
Accounts live in the data directory (CREATE USER, GRANT). The first start
makes root@localhost with every privilege: its password is the first line
of --init-password-file, else empty; while root's password is empty the
server listens only on a loopback address. --user=NAME:PASSWORD (deprecated:
the password shows in `ps`) makes NAME@'%' with every privilege at start
unless an account of that name exists.
TLS is on unless --ssl=0 or --skip-ssl: without --ssl-cert and --ssl-key a
CA and server certificate are made in the data directory at first start
(ca.pem, server-cert.pem, server-key.pem) and reused after.
";

/// Options that may stand alone, meaning on (`--skip-ssl`).
const FLAGS: [&str; 4] = [
    "ssl",
    "skip-ssl",
    "require-secure-transport",
    "block-loopback-hosts",
];

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
            | "net-read-timeout"
            | "net-write-timeout"
            | "slow-query-log"
            | "slow-query-log-file"
            | "long-query-time"
            | "general-log"
            | "general-log-file"
            | "log-output" => self.globals.push((key.replace('-', "_"), v.to_string())),
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
        let mut s = Settings::default();
        // The config file first, so the command line overrides it.
        for a in args {
            if let Some(f) = a.strip_prefix("--config=") {
                s.load_file(f)?;
            }
        }
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if a == "-h" || a == "--help" {
                return Err(USAGE.into());
            }
            let Some(body) = a.strip_prefix("--") else {
                return Err(format!("unexpected argument `{a}`\n{USAGE}"));
            };
            if body.starts_with("config=") {
                continue;
            }
            let (k, v) = match body.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None if FLAGS.contains(&body.replace('_', "-").as_str()) => {
                    (body.to_string(), String::new())
                }
                None => (
                    body.to_string(),
                    it.next()
                        .ok_or_else(|| format!("option --{body} needs a value"))?
                        .clone(),
                ),
            };
            s.set(&k, &v)?;
        }
        if s.ssl_cert.is_some() != s.ssl_key.is_some() {
            return Err("--ssl-cert and --ssl-key go together".into());
        }
        if s.require_secure_transport && !s.ssl {
            return Err("--require-secure-transport needs TLS, which --ssl=0 turns off".into());
        }
        Ok(s)
    }

    /// The TLS configuration: the files named, or the certificates made
    /// (at first start) in `datadir`; `None` with `--ssl=0`.
    fn tls(&self, datadir: &std::path::Path) -> Result<Option<cairndb_server::Tls>, String> {
        if !self.ssl {
            return Ok(None);
        }
        let (cert, key) = match (&self.ssl_cert, &self.ssl_key) {
            (Some(c), Some(k)) => (c.clone(), k.clone()),
            _ => {
                let f = cairndb_server::auto_generate_certs(datadir)
                    .map_err(|e| format!("TLS certificates in {}: {e}", datadir.display()))?;
                if f.generated {
                    eprintln!(
                        "cairndb server: made a self-signed CA and server certificate: {} \
                         (give it to clients to verify the server), {}, {}",
                        f.ca.display(),
                        f.cert.display(),
                        f.key.display()
                    );
                }
                (f.cert, f.key)
            }
        };
        cairndb_server::Tls::from_files(&cert, &key, self.ssl_ca.as_deref())
            .map(Some)
            .map_err(|e| format!("TLS: {e}"))
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
    tune_malloc();
    let s = Settings::from_args(&args)?;
    let datadir = s
        .datadir
        .clone()
        .ok_or_else(|| format!("--datadir is required\n{USAGE}"))?;
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limit = s.memory_limit(&cgroup, std::path::Path::new("/sys/fs/cgroup"));
    let opts = s.sql_options_within(limit);
    if let Some(l) = limit {
        eprintln!(
            "cairndb server: memory limit {} MiB: block cache {} MiB, write buffer {} MiB, \
             zip working memory {} MiB (options set them; --memory-limit=off for the defaults)",
            l >> 20,
            opts.engine.block_cache_size >> 20,
            opts.engine.write_buffer_size >> 20,
            opts.engine.zip.hard_working_mem_limit >> 20,
        );
    }
    let db =
        SqlDb::open(&datadir, opts).map_err(|e| format!("opening {}: {e}", datadir.display()))?;
    for d in db.damaged_entries() {
        eprintln!("cairndb server: {d}; that entry is left out (its data is kept)");
    }
    if let Err(e) = set_up_accounts(&db, &s) {
        let _ = db.close();
        return Err(e);
    }
    for (k, v) in &s.globals {
        if let Err(e) = db.set_global_variable(k, v) {
            let _ = db.close();
            return Err(format!("option --{}: {}", k.replace('_', "-"), e.message));
        }
    }
    let global_secs = |name: &str, default: u64| {
        db.global_variable(name)
            .and_then(|v| cairndb_sql::expr::to_i64(&v))
            .map_or(default, |n| n.max(1) as u64)
    };
    let security = s.tls(&datadir).and_then(|tls| {
        let rsa = cairndb_server::RsaKeys::load_or_generate(&datadir)
            .map_err(|e| format!("RSA key pair in {}: {e}", datadir.display()))?;
        Ok((tls, rsa))
    });
    let (tls, rsa) = match security {
        Ok(t) => t,
        Err(e) => {
            let _ = db.close();
            return Err(e);
        }
    };
    let transport = Transport {
        have_ssl: tls.is_some(),
        require_secure_transport: s.require_secure_transport,
        ..Transport::default()
    };
    let config = cairndb_server::Config {
        bind: s.bind.clone(),
        port: s.port,
        max_connections: s.max_connections,
        max_allowed_packet: s.max_allowed_packet,
        // The accounts are the database's (`SqlBackend::lookup_account`).
        users: HashMap::new(),
        tls,
        require_secure_transport: s.require_secure_transport,
        rsa_keys: Some(Arc::new(rsa)),
        max_connect_errors: global_secs("max_connect_errors", 100),
        net_read_timeout: std::time::Duration::from_secs(global_secs("net_read_timeout", 30)),
        net_write_timeout: std::time::Duration::from_secs(global_secs("net_write_timeout", 60)),
        ..Default::default()
    };
    let rt = tokio_runtime(s.worker_threads())?;
    let backend = Arc::new(SqlBackend {
        db: db.clone(),
        commit_wait_task: s.commit_wait_task,
        transport,
    });
    let served = rt.block_on(async {
        let server = cairndb_server::Server::bind(config, backend).await?;
        let counters = server.counters();
        db.set_status_source(Some(Box::new(move || counters.status())));
        let (flush, set) = (server.hosts(), server.hosts());
        flush.set_block_loopback(s.block_loopback_hosts);
        db.set_server_hooks(Some(cairndb_sql::ServerHooks {
            flush_hosts: Box::new(move || flush.flush()),
            set_max_connect_errors: Box::new(move |n| set.set_max_connect_errors(n)),
        }));
        db.set_server_port(server.local_addr()?.port());
        println!("cairndb server listening on {}", server.local_addr()?);
        server.run(cairndb_server::shutdown_signal()).await
    });
    db.set_status_source(None);
    db.set_server_hooks(None);
    // Sessions are gone (their transactions rolled back); flush and close.
    drop(rt);
    let closed = db.close();
    served.map_err(|e| format!("server: {e}"))?;
    closed.map_err(|e| format!("closing {}: {e}", datadir.display()))?;
    eprintln!("cairndb server: shut down cleanly");
    Ok(())
}

/// The accounts at start: `root@localhost` made at the first start
/// (password from `--init-password-file`, else from a `--user=root:PW`,
/// else empty), the deprecated `--user` accounts made if missing; then a
/// refusal to listen beyond loopback while root's password is empty.
fn set_up_accounts(db: &SqlDb, s: &Settings) -> Result<(), String> {
    let init = match &s.init_password_file {
        Some(f) => Some(read_password_file(f)?),
        None => None,
    };
    let root_pw = init
        .clone()
        .or_else(|| s.users.get("root").cloned())
        .unwrap_or_default();
    let made = db
        .bootstrap_accounts(&root_pw)
        .map_err(|e| format!("making the first account: {e}"))?;
    if made {
        eprintln!(
            "cairndb server: made the account root@localhost with every privilege{}",
            if root_pw.is_empty() {
                " and an empty password (set one: ALTER USER root@localhost IDENTIFIED BY '...')"
            } else {
                ""
            }
        );
    } else if init.is_some() {
        eprintln!(
            "cairndb server: --init-password-file is read only at the first start; the accounts \
             exist (ALTER USER changes a password)"
        );
    }
    let mut users: Vec<(&String, &String)> = s.users.iter().collect();
    users.sort();
    for (name, pw) in users {
        eprintln!(
            "cairndb server: --user is deprecated (the password shows in `ps`): use CREATE USER"
        );
        let created = db
            .ensure_account(name, pw)
            .map_err(|e| format!("--user={name}: {e}"))?;
        if created {
            eprintln!("cairndb server: made the account {name}@% with every privilege (--user)");
        } else if !(made && name == "root") {
            eprintln!(
                "cairndb server: --user={name}: an account named {name} exists; its password is \
                 not changed (ALTER USER changes it)"
            );
        }
    }
    if db.root_password_is_empty() && !is_loopback(&s.bind) {
        return Err(format!(
            "refusing to listen on {}: root has an empty password. Set one (ALTER USER \
             root@localhost IDENTIFIED BY '...' over 127.0.0.1, or --init-password-file at the \
             first start), or listen on 127.0.0.1",
            s.bind
        ));
    }
    Ok(())
}

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

/// Whether `bind` is a loopback address (or `localhost`).
fn is_loopback(bind: &str) -> bool {
    bind.eq_ignore_ascii_case("localhost")
        || bind
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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

/// The engine's waits that can last (a row lock, a write stall), run
/// through `block_in_place` on the runtime's threads: a statement run on
/// its connection's worker (a write by primary key, `is_quick`) gives the
/// worker up only when it actually waits.
fn engine_wait(w: &mut dyn FnMut()) {
    cairndb_server::blocking(w)
}

fn tokio_runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .thread_name("cairndb-server")
        .on_thread_start(|| cairndb::set_thread_blocking_hook(Some(engine_wait)))
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))
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

/// The backend: one SQL database, a session per connection.
pub struct SqlBackend {
    pub db: Arc<SqlDb>,
    /// Sessions leave their commits' syncs to the connection's task
    /// (`--commit-wait=task`).
    pub commit_wait_task: bool,
    /// The server's TLS settings, copied into each session with the
    /// connection's TLS session.
    pub transport: Transport,
}

/// A connection's session.
pub struct SqlConn {
    s: Session,
    /// The last result set's column definitions, reused while a statement
    /// answers with the same columns (a prepared point select sends them
    /// with every execution; building them cloned five strings a column).
    cols: Vec<Column>,
    /// An execution's parameters, reused across executions.
    vals: Vec<Value>,
    commit_wait_task: bool,
    /// Closes this connection (`KILL CONNECTION`).
    closer: Option<cairndb_server::Closer>,
}

impl SqlConn {
    /// Runs `f` on the session; a panic in it becomes error 1105 for this
    /// statement, and the session is replaced by a fresh one (same user
    /// and current database; its transaction rolled back), so the
    /// connection goes on and the server never goes down.
    fn guarded<T>(
        &mut self,
        f: impl FnOnce(&mut Session, &mut Vec<Column>) -> Result<T, cairndb_sql::SqlError>,
    ) -> Result<T, cairndb_sql::SqlError> {
        let (s, cols) = (&mut self.s, &mut self.cols);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(s, cols))) {
            Ok(r) => r,
            Err(payload) => {
                let what = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown".into());
                let current = self.s.database().map(str::to_string);
                // The same account and privileges, nothing else.
                let mut fresh = self.s.fresh();
                fresh.set_deferred_durability(self.commit_wait_task);
                fresh.set_transport(self.s.transport().clone());
                fresh.info().set_host(&self.s.info().host());
                if let Some(closer) = self.closer.clone() {
                    fresh.info().on_kill(move || closer.close());
                }
                if let Some(d) = current {
                    let _ = fresh.use_database(&d);
                }
                let old = std::mem::replace(&mut self.s, fresh);
                // Dropping what the panic left may panic too.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(old)));
                self.cols.clear();
                Err(cairndb_sql::SqlError::internal(format!(
                    "the statement failed inside the server ({what}); the session was reset \
                     and its transaction rolled back"
                )))
            }
        }
    }
}

fn to_wire(e: cairndb_sql::SqlError) -> cairndb_server::SqlError {
    let mut state = [b'H', b'Y', b'0', b'0', b'0'];
    for (d, b) in state.iter_mut().zip(e.state.bytes()) {
        *d = b;
    }
    cairndb_server::SqlError::new(e.code, &state, e.message)
}

impl Backend for SqlBackend {
    type Session = SqlConn;

    fn open_session_with(
        &self,
        conn: &cairndb_server::ConnInfo,
    ) -> Result<SqlConn, cairndb_server::SqlError> {
        let s = Session::login(self.db.clone(), &conn.user, &conn.host).map_err(to_wire)?;
        let mut c = self.conn(s, conn.db.as_deref())?;
        let mut t = self.transport.clone();
        if let Some(tls) = &conn.tls {
            t.ssl_version = tls.version.to_string();
            t.ssl_cipher = tls.cipher.to_string();
        }
        c.s.set_transport(t);
        c.s.info().set_host(&conn.host);
        let closer = conn.closer.clone();
        c.s.info().on_kill(move || closer.close());
        c.closer = Some(conn.closer.clone());
        if c.s.general_log_on() {
            let how = if conn.tls.is_some() {
                "SSL/TLS"
            } else {
                "TCP/IP"
            };
            let db = conn.db.as_deref().unwrap_or("");
            let arg = format!("{}@{} on {db} using {how}", conn.user, conn.host);
            c.s.log_general("Connect", &arg);
        }
        Ok(c)
    }

    /// A session of `user` logged in from loopback (the server calls
    /// [`Backend::open_session_with`], which knows the client's host).
    fn open_session(
        &self,
        _conn_id: u32,
        user: &str,
        db: Option<&str>,
    ) -> Result<SqlConn, cairndb_server::SqlError> {
        let s = Session::login(self.db.clone(), user, "127.0.0.1").map_err(to_wire)?;
        self.conn(s, db)
    }

    fn has_accounts(&self) -> bool {
        true
    }

    fn lookup_account(&self, user: &str, host: &str) -> Option<cairndb_server::AccountAuth> {
        let a = self.db.lookup_account(user, host)?;
        let mut out = cairndb_server::AccountAuth {
            require_ssl: a.require_ssl,
            connection_admin: a.connection_admin,
            empty_password: a.hash.is_empty(),
            ..Default::default()
        };
        match a.plugin {
            Plugin::Native => {
                out.plugin = cairndb_server::AuthPlugin::MysqlNativePassword;
                out.native = a.hash.as_slice().try_into().ok();
            }
            Plugin::CachingSha2 => {
                out.plugin = cairndb_server::AuthPlugin::CachingSha2Password;
                out.sha2 = a.hash.as_slice().try_into().ok();
            }
        }
        Some(out)
    }
}

impl SqlBackend {
    /// The connection's state around session `s`, on database `db` if the
    /// client named one.
    fn conn(&self, mut s: Session, db: Option<&str>) -> Result<SqlConn, cairndb_server::SqlError> {
        // Set from the client's CLIENT_FOUND_ROWS before each command.
        s.client_found_rows = false;
        s.set_deferred_durability(self.commit_wait_task);
        if let Some(d) = db.filter(|d| !d.is_empty()) {
            s.use_database(d).map_err(to_wire)?;
        }
        Ok(SqlConn {
            s,
            cols: Vec::new(),
            vals: Vec::new(),
            commit_wait_task: self.commit_wait_task,
            closer: None,
        })
    }
}

fn status(s: &Session) -> StatusFlags {
    let mut f = StatusFlags::empty();
    if s.autocommit() {
        f |= StatusFlags::SERVER_STATUS_AUTOCOMMIT;
    }
    if s.in_transaction() {
        f |= StatusFlags::SERVER_STATUS_IN_TRANS;
    }
    f
}

fn column(c: &ColumnInfo) -> Column {
    let (ty, flags) = type_and_flags(c);
    Column {
        schema: c.schema.clone().into(),
        table: c.table.clone().into(),
        org_table: c.org_table.clone().into(),
        name: c.name.clone().into(),
        org_name: c.org_name.clone().into(),
        col_type: ty,
        flags,
        charset: c.charset,
        length: c.length,
        decimals: c.decimals,
    }
}

/// The protocol's type and flags of a result column.
fn type_and_flags(c: &ColumnInfo) -> (ColumnType, ColumnFlags) {
    let ty = match c.ty {
        OutType::Tiny => ColumnType::MYSQL_TYPE_TINY,
        OutType::Short => ColumnType::MYSQL_TYPE_SHORT,
        OutType::Int24 => ColumnType::MYSQL_TYPE_INT24,
        OutType::Long => ColumnType::MYSQL_TYPE_LONG,
        OutType::LongLong => ColumnType::MYSQL_TYPE_LONGLONG,
        OutType::NewDecimal => ColumnType::MYSQL_TYPE_NEWDECIMAL,
        OutType::Float => ColumnType::MYSQL_TYPE_FLOAT,
        OutType::Double => ColumnType::MYSQL_TYPE_DOUBLE,
        OutType::String => ColumnType::MYSQL_TYPE_STRING,
        OutType::VarString => ColumnType::MYSQL_TYPE_VAR_STRING,
        OutType::Blob => ColumnType::MYSQL_TYPE_BLOB,
        OutType::Date => ColumnType::MYSQL_TYPE_DATE,
        OutType::DateTime => ColumnType::MYSQL_TYPE_DATETIME,
        OutType::Timestamp => ColumnType::MYSQL_TYPE_TIMESTAMP,
        OutType::Null => ColumnType::MYSQL_TYPE_NULL,
        OutType::Year => ColumnType::MYSQL_TYPE_YEAR,
        OutType::Time => ColumnType::MYSQL_TYPE_TIME,
        OutType::Bit => ColumnType::MYSQL_TYPE_BIT,
        OutType::Json => ColumnType::MYSQL_TYPE_JSON,
    };
    let mut flags = ColumnFlags::empty();
    if c.not_null {
        flags |= ColumnFlags::NOT_NULL_FLAG;
    }
    if c.primary_key {
        flags |= ColumnFlags::PRI_KEY_FLAG;
    }
    if c.unsigned {
        flags |= ColumnFlags::UNSIGNED_FLAG;
    }
    if c.auto_increment {
        flags |= ColumnFlags::AUTO_INCREMENT_FLAG;
    }
    if c.unique_key {
        flags |= ColumnFlags::UNIQUE_KEY_FLAG;
    }
    if c.multiple_key {
        flags |= ColumnFlags::MULTIPLE_KEY_FLAG;
    }
    if c.binary {
        flags |= ColumnFlags::BINARY_FLAG;
    }
    if matches!(c.ty, OutType::Blob | OutType::Json) {
        flags |= ColumnFlags::BLOB_FLAG;
    }
    if c.is_enum {
        flags |= ColumnFlags::ENUM_FLAG;
    }
    if c.is_set {
        flags |= ColumnFlags::SET_FLAG;
    }
    if matches!(c.ty, OutType::Year) {
        flags |= ColumnFlags::ZEROFILL_FLAG;
    }
    if matches!(
        c.ty,
        OutType::Tiny
            | OutType::Short
            | OutType::Int24
            | OutType::Long
            | OutType::LongLong
            | OutType::NewDecimal
            | OutType::Float
            | OutType::Double
            | OutType::Year
    ) {
        flags |= ColumnFlags::NUM_FLAG;
    }
    (ty, flags)
}

/// Whether `d` is the definition [`column`] makes of `c` (no allocation).
fn defines(d: &Column, c: &ColumnInfo) -> bool {
    let (ty, flags) = type_and_flags(c);
    d.col_type == ty
        && d.flags == flags
        && d.charset == c.charset
        && d.length == c.length
        && d.decimals == c.decimals
        && d.name == c.name
        && d.org_name == c.org_name
        && d.table == c.table
        && d.org_table == c.org_table
        && d.schema == c.schema
}

/// `Output` over the protocol's `Results`.
struct Adapter<'a> {
    out: &'a mut dyn Results,
    /// The connection's column definitions of its last result set.
    cols: &'a mut Vec<Column>,
    /// Whether a column of the result set is a YEAR or a BIT, whose
    /// integers go out in their own forms (set by `columns`).
    special: bool,
}

impl Output for Adapter<'_> {
    fn ok(&mut self, affected: u64, last_insert_id: u64, warnings: u16, info: &str) {
        self.out.ok(affected, last_insert_id, warnings, info);
    }

    fn columns(&mut self, cols: &[ColumnInfo]) {
        let same =
            self.cols.len() == cols.len() && self.cols.iter().zip(cols).all(|(d, c)| defines(d, c));
        if !same {
            self.cols.clear();
            self.cols.extend(cols.iter().map(column));
        }
        self.special = cols
            .iter()
            .any(|c| matches!(c.ty, OutType::Year | OutType::Bit));
        self.out.begin_result_set(self.cols);
    }

    fn row(&mut self, values: &[Value]) {
        let w = self.out.row();
        for (i, v) in values.iter().enumerate() {
            match v {
                Value::Null => w.null(),
                Value::Int(y)
                    if self.special
                        && (0..1000).contains(y)
                        && self
                            .cols
                            .get(i)
                            .is_some_and(|c| c.col_type == ColumnType::MYSQL_TYPE_YEAR) =>
                {
                    // YEAR is ZEROFILL: 0 is `0000`.
                    w.bytes(format!("{y:04}").as_bytes())
                }
                Value::Int(i) => w.int(*i),
                Value::UInt(u)
                    if self.special
                        && self
                            .cols
                            .get(i)
                            .is_some_and(|c| c.col_type == ColumnType::MYSQL_TYPE_BIT) =>
                {
                    // BIT(n) goes out as its (n + 7) / 8 big-endian bytes.
                    let n = self.cols.get(i).map_or(64, |c| c.length).clamp(1, 64);
                    let be = u.to_be_bytes();
                    w.bytes(be.get(8 - n.div_ceil(8) as usize..).unwrap_or(&be))
                }
                Value::UInt(u) => w.uint(*u),
                Value::Double(f) => w.double(*f),
                Value::Decimal(d, s) => {
                    w.bytes(cairndb_sql::types::format_decimal(*d, *s).as_bytes())
                }
                Value::Str(b) => w.bytes(b),
                Value::Date(d) => {
                    let (y, m, dd) = cairndb_sql::types::unpack_date(*d);
                    w.date(y as u16, m as u8, dd as u8);
                }
                Value::DateTime(t) => {
                    let (d, h, mi, s, us) = cairndb_sql::types::unpack_datetime(*t);
                    let (y, m, dd) = cairndb_sql::types::unpack_date(d);
                    w.datetime(cairndb_server::DateTime {
                        year: y as u16,
                        month: m as u8,
                        day: dd as u8,
                        hour: h as u8,
                        minute: mi as u8,
                        second: s as u8,
                        micros: us,
                    });
                }
                Value::Time(us) => {
                    let a = us.unsigned_abs();
                    let secs = a / 1_000_000;
                    let hours = secs / 3600;
                    w.time(cairndb_server::Time {
                        negative: *us < 0,
                        days: (hours / 24) as u32,
                        hours: (hours % 24) as u8,
                        minutes: ((secs / 60) % 60) as u8,
                        seconds: (secs % 60) as u8,
                        micros: (a % 1_000_000) as u32,
                    });
                }
                Value::Member(_, s) => w.bytes(s),
                // A document goes out as its text.
                Value::Json(_) => w.bytes(&cairndb_sql::expr::text_of(v)),
            }
        }
        w.finish();
    }

    fn end(&mut self, warnings: u16) {
        self.out.end_result_set(warnings);
    }
}

fn param(v: &cairndb_server::Value<'_>) -> Value {
    use cairndb_server::Value as W;
    match v {
        W::Null => Value::Null,
        W::Int(i) => Value::Int(*i),
        W::UInt(u) => Value::UInt(*u),
        W::Float(f) => Value::Double(f64::from(*f)),
        W::Double(f) => Value::Double(*f),
        W::Bytes(b) => Value::Str(b.to_vec()),
        W::DateTime(d) => {
            let date = cairndb_sql::types::pack_date(
                u32::from(d.year),
                u32::from(d.month),
                u32::from(d.day),
            );
            Value::DateTime(cairndb_sql::types::pack_datetime(
                date,
                u32::from(d.hour),
                u32::from(d.minute),
                u32::from(d.second),
                d.micros,
            ))
        }
        W::Time(t) => {
            let secs = (i64::from(t.days) * 24 + i64::from(t.hours)) * 3600
                + i64::from(t.minutes) * 60
                + i64::from(t.seconds);
            let us = secs * 1_000_000 + i64::from(t.micros);
            Value::Time(if t.negative { -us } else { us })
        }
    }
}

impl cairndb_server::Session for SqlConn {
    fn is_quick(&self, stmt: u32) -> bool {
        self.s.is_quick_read(stmt) || self.s.is_quick_write(stmt)
    }

    fn idle_timeout(&self) -> Option<std::time::Duration> {
        self.s.wait_timeout()
    }

    fn traffic(&mut self, received: u64, sent: u64) {
        self.s.info().add_traffic(received, sent);
    }

    fn net_timeouts(&self) -> Option<(std::time::Duration, std::time::Duration)> {
        Some(self.s.net_timeouts())
    }

    fn poll_durable(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), cairndb_server::SqlError>> {
        self.s.poll_durable(cx).map_err(to_wire)
    }

    fn query_bytes(&mut self, sql: &[u8], out: &mut dyn Results) {
        match cairndb_sql::preparse::binary_literals(sql) {
            Some(text) => self.query(&text, out),
            None => out.error(cairndb_server::SqlError::invalid_utf8()),
        }
    }

    fn query(&mut self, sql: &str, out: &mut dyn Results) {
        let stmts = split_statements(sql);
        if stmts.is_empty() {
            out.error(cairndb_server::SqlError::new(
                1065,
                b"42000",
                "Query was empty",
            ));
            return;
        }
        if stmts.len() > 1 && !out.multi_statements() {
            out.error(to_wire(cairndb_sql::SqlError::syntax(
                "several statements in one query (the client has not enabled multi-statements)",
            )));
            return;
        }
        self.s.client_found_rows = out.client_found_rows();
        for st in stmts {
            let r = self.guarded(|s, cols| {
                let mut a = Adapter {
                    out: &mut *out,
                    cols,
                    special: false,
                };
                s.query(st, &mut a)
            });
            out.set_status(status(&self.s));
            if let Err(e) = r {
                out.error(to_wire(e));
                return;
            }
        }
    }

    fn prepare(&mut self, stmt: u32, sql: &str) -> Result<Prepared, cairndb_server::SqlError> {
        let p = self
            .guarded(|s, _| s.prepare_as(stmt, sql))
            .map_err(to_wire)?;
        Ok(Prepared {
            params: p.params,
            columns: p.columns.iter().map(column).collect(),
        })
    }

    fn execute(&mut self, stmt: u32, params: &[cairndb_server::Value<'_>], out: &mut dyn Results) {
        self.vals.clear();
        self.vals.extend(params.iter().map(param));
        self.s.client_found_rows = out.client_found_rows();
        let vals = std::mem::take(&mut self.vals);
        let r = self.guarded(|s, cols| {
            let mut a = Adapter {
                out: &mut *out,
                cols,
                special: false,
            };
            s.execute(stmt, &vals, &mut a)
        });
        self.vals = vals;
        // Parameters may hold long strings; keep only the slots.
        self.vals.clear();
        out.set_status(status(&self.s));
        if let Err(e) = r {
            out.error(to_wire(e));
        }
    }

    fn close_statement(&mut self, stmt: u32) {
        self.s.close_statement(stmt);
    }

    fn reset_statement(&mut self, _stmt: u32) {}

    fn init_db(&mut self, db: &str) -> Result<(), cairndb_server::SqlError> {
        self.s.log_general("Init DB", db);
        self.s.use_database(db).map_err(to_wire)
    }

    fn reset_connection(&mut self) {
        self.s.reset();
    }

    fn status(&self) -> StatusFlags {
        status(&self.s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &[&str]) -> Result<Settings, String> {
        Settings::from_args(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    /// A panic inside a statement is error 1105 for it; the connection
    /// goes on with a fresh session, its transaction rolled back.
    #[test]
    fn panic_in_a_statement_is_an_error_and_the_session_is_reset() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqlDb::open(dir.path(), SqlOptions::default()).unwrap();
        db.bootstrap_accounts("").unwrap();
        let backend = SqlBackend {
            db: db.clone(),
            commit_wait_task: false,
            transport: Default::default(),
        };
        let mut c = backend.open_session(1, "root", None).unwrap();
        let mut out = cairndb_sql::Collect::default();
        c.s.query("CREATE DATABASE d", &mut out).unwrap();
        c.s.query("USE d", &mut out).unwrap();
        c.s.query("CREATE TABLE t (id INT PRIMARY KEY)", &mut out)
            .unwrap();
        c.s.query("BEGIN", &mut out).unwrap();
        c.s.query("INSERT INTO t VALUES (1)", &mut out).unwrap();
        let e = c
            .guarded(|_, _| -> Result<(), cairndb_sql::SqlError> { panic!("boom") })
            .unwrap_err();
        assert_eq!(e.code, 1105);
        assert!(e.message.contains("boom"), "{}", e.message);
        // A fresh session in the same database; the insert rolled back.
        assert!(!c.s.in_transaction());
        let mut out = cairndb_sql::Collect::default();
        c.s.query("SELECT COUNT(*) FROM t", &mut out).unwrap();
        assert_eq!(out.rows[0][0].to_string(), "0");
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

    /// A connection reuses its last result set's column definitions only
    /// while the columns are the same: any field that differs (a label, a
    /// table, the type, a flag, the length) makes new ones.
    #[test]
    fn column_definitions_are_reused_only_for_the_same_columns() {
        let mut c = ColumnInfo::computed("c", OutType::VarString);
        c.schema = "sbtest".into();
        c.table = "t".into();
        c.org_table = "sbtest1".into();
        c.org_name = "c".into();
        let d = column(&c);
        assert!(defines(&d, &c));
        let changes: [&dyn Fn(&mut ColumnInfo); 9] = [
            &|c| c.name = "pad".into(),
            &|c| c.org_name = "pad".into(),
            &|c| c.table = "u".into(),
            &|c| c.org_table = "sbtest2".into(),
            &|c| c.schema = "other".into(),
            &|c| c.ty = OutType::Long,
            &|c| c.not_null = true,
            &|c| c.length += 1,
            &|c| c.charset = 63,
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut other = c.clone();
            change(&mut other);
            assert!(!defines(&d, &other), "change {i} kept the old definition");
            assert!(defines(&column(&other), &other));
        }
    }

    /// Under a limit the unset budgets shrink to it (4, 16 and 32 MiB in
    /// 256 MB), never above the engine's defaults; options given win;
    /// `--memory-limit=off` and a bad value.
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
