//! A whole server's life: open the database, make the first accounts,
//! set the start-time globals, load or make the TLS material, listen,
//! serve until told to stop, then close the database (which syncs the
//! WAL).
//!
//! [`serve`] runs it on the calling thread (what `cairndb server` does);
//! [`start`] runs it on a thread of its own and hands back the address
//! and a handle that stops it, so tests and tools drive the real stack in
//! process.
//!
//! Invariants: the database is closed on every path out of [`serve`]
//! after it opened, including a failure to listen; the status source and
//! server hooks the database holds are removed before it closes (they
//! point into the protocol server). Locking: none here; the runtime's
//! threads each carry the engine's blocking hook so that an engine wait
//! (a row lock, a write stall) gives its worker up.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairndb_sql::{SqlDb, SqlOptions, Transport};

use crate::backend::SqlBackend;

/// Where the server's TLS certificate and key come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TlsSource {
    /// No TLS (`--ssl=0`): clients asking for it are refused.
    Off,
    /// A self-signed CA and server certificate made in the data directory
    /// at the first start (`ca.pem`, `server-cert.pem`, `server-key.pem`)
    /// and reused after.
    #[default]
    Generated,
    /// The named PEM files (`--ssl-cert`, `--ssl-key`).
    Files { cert: PathBuf, key: PathBuf },
}

/// Everything a server is started with (`cairndb server`'s options, once
/// parsed).
#[derive(Clone)]
pub struct ServerOptions {
    pub datadir: PathBuf,
    /// The database's options (engine, durability, lock waits).
    pub sql: SqlOptions,
    /// The address to listen on; `port` 0 picks a free one.
    pub bind: String,
    pub port: u16,
    pub max_connections: u32,
    pub max_allowed_packet: usize,
    /// Network threads (tokio workers), at least 1.
    pub worker_threads: usize,
    /// A synced commit waits as the client's task rather than inside the
    /// write (`--commit-wait=task`).
    pub commit_wait_task: bool,
    pub tls: TlsSource,
    /// Client certificates, if sent, must chain to this CA (`--ssl-ca`).
    pub ssl_ca: Option<PathBuf>,
    /// Plain-TCP logins get ERR 3159.
    pub require_secure_transport: bool,
    /// root@localhost's password at the first start (`None`: empty, or a
    /// `users` entry named root).
    pub init_password: Option<String>,
    /// Accounts made at start if missing (name, password), each NAME@'%'
    /// with every privilege (the deprecated `--user`).
    pub users: Vec<(String, String)>,
    /// Global variables set at start (name with underscores, value),
    /// checked as `SET GLOBAL` checks them.
    pub globals: Vec<(String, String)>,
    /// Loopback addresses are blocked after `max_connect_errors` failures
    /// too (for tests).
    pub block_loopback_hosts: bool,
}

impl ServerOptions {
    /// A server of `datadir` on 127.0.0.1:3306 with the defaults of
    /// `cairndb server`.
    pub fn new(datadir: impl Into<PathBuf>) -> ServerOptions {
        ServerOptions {
            datadir: datadir.into(),
            sql: SqlOptions::default(),
            bind: "127.0.0.1".into(),
            port: 3306,
            max_connections: 1000,
            max_allowed_packet: 64 << 20,
            worker_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            commit_wait_task: true,
            tls: TlsSource::Generated,
            ssl_ca: None,
            require_secure_transport: false,
            init_password: None,
            users: Vec::new(),
            globals: Vec::new(),
            block_loopback_hosts: false,
        }
    }
}

/// Runs a server on the calling thread until `shutdown`'s future is
/// ready: stops accepting, lets running statements finish, drops the
/// sessions (rolling back open transactions) and closes the database.
/// `shutdown` is called on the server's runtime (signal futures need
/// one); `on_listening` is told the bound address once the socket
/// listens.
pub fn serve<F>(
    opts: ServerOptions,
    shutdown: impl FnOnce() -> F,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), String>
where
    F: Future<Output = ()>,
{
    let datadir = opts.datadir.clone();
    let db = SqlDb::open(&datadir, opts.sql.clone())
        .map_err(|e| format!("opening {}: {e}", datadir.display()))?;
    for d in db.damaged_entries() {
        eprintln!("cairndb server: {d}; that entry is left out (its data is kept)");
    }
    let served = serve_db(&db, &opts, shutdown, on_listening);
    db.set_status_source(None);
    db.set_server_hooks(None);
    let closed = db.close();
    served?;
    closed.map_err(|e| format!("closing {}: {e}", datadir.display()))
}

/// [`serve`] on an open database, which the caller closes.
fn serve_db<F>(
    db: &Arc<SqlDb>,
    opts: &ServerOptions,
    shutdown: impl FnOnce() -> F,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), String>
where
    F: Future<Output = ()>,
{
    set_up_accounts(db, opts)?;
    for (k, v) in &opts.globals {
        db.set_global_variable(k, v)
            .map_err(|e| format!("option --{}: {}", k.replace('_', "-"), e.message))?;
    }
    let global_secs = |name: &str, default: u64| {
        db.global_variable(name)
            .and_then(|v| cairndb_sql::value::to_i64(&v))
            .map_or(default, |n| n.max(1) as u64)
    };
    let tls = tls(opts)?;
    let rsa = cairndb_server::RsaKeys::load_or_generate(&opts.datadir)
        .map_err(|e| format!("RSA key pair in {}: {e}", opts.datadir.display()))?;
    let transport = Transport {
        have_ssl: tls.is_some(),
        require_secure_transport: opts.require_secure_transport,
        ..Transport::default()
    };
    let config = cairndb_server::Config {
        bind: opts.bind.clone(),
        port: opts.port,
        max_connections: opts.max_connections,
        max_allowed_packet: opts.max_allowed_packet,
        // The accounts are the database's (`SqlBackend::lookup_account`).
        users: Default::default(),
        tls,
        require_secure_transport: opts.require_secure_transport,
        rsa_keys: Some(Arc::new(rsa)),
        max_connect_errors: global_secs("max_connect_errors", 100),
        connect_timeout: std::time::Duration::from_secs(global_secs("connect_timeout", 10)),
        net_read_timeout: std::time::Duration::from_secs(global_secs("net_read_timeout", 30)),
        net_write_timeout: std::time::Duration::from_secs(global_secs("net_write_timeout", 60)),
        ..Default::default()
    };
    let rt = runtime(opts.worker_threads)?;
    let backend = Arc::new(SqlBackend::new(
        db.clone(),
        opts.commit_wait_task,
        transport,
    ));
    let served = rt.block_on(async {
        let server = cairndb_server::Server::bind(config, backend).await?;
        let counters = server.counters();
        db.set_status_source(Some(Box::new(move || counters.status())));
        let (flush, set, timeout) = (server.hosts(), server.hosts(), server.hosts());
        flush.set_block_loopback(opts.block_loopback_hosts);
        db.set_server_hooks(Some(cairndb_sql::ServerHooks {
            flush_hosts: Box::new(move || flush.flush()),
            set_max_connect_errors: Box::new(move |n| set.set_max_connect_errors(n)),
            set_connect_timeout: Box::new(move |secs| {
                timeout.set_connect_timeout(std::time::Duration::from_secs(secs))
            }),
        }));
        let addr = server.local_addr()?;
        db.set_server_port(addr.port());
        on_listening(addr);
        server.run(shutdown()).await
    });
    // Sessions are gone (their transactions rolled back) once the runtime
    // is.
    drop(rt);
    served.map_err(|e| format!("server: {e}"))
}

/// A server running on a thread of its own ([`start`]).
pub struct Running {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl Running {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops it as a shutdown signal does and waits until the database
    /// is closed; the server's error, if it failed.
    pub fn stop(mut self) -> Result<(), String> {
        self.halt()
    }

    fn halt(&mut self) -> Result<(), String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(|t| t.join()) {
            None => Ok(()),
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the server's thread panicked".into()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

/// Starts a server on a thread of its own and returns once it listens
/// (or with the error that kept it from listening).
pub fn start(opts: ServerOptions) -> Result<Running, String> {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("cairndb-mysqld".into())
        .spawn(move || {
            serve(
                opts,
                move || async move {
                    // A dropped sender stops the server too.
                    let _ = stop_rx.await;
                },
                move |a| {
                    let _ = addr_tx.send(a);
                },
            )
        })
        .map_err(|e| format!("starting the server's thread: {e}"))?;
    match addr_rx.recv() {
        Ok(addr) => Ok(Running {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }),
        // It stopped before listening: its error says why.
        Err(_) => match thread.join() {
            Ok(Err(e)) => Err(e),
            Ok(Ok(())) => Err("the server stopped before it listened".into()),
            Err(_) => Err("the server's thread panicked".into()),
        },
    }
}

/// The accounts at start: `root@localhost` made at the first start
/// (password from `init_password`, else from a `users` entry named root,
/// else empty), the `users` accounts made if missing; then a refusal to
/// listen beyond loopback while root's password is empty.
fn set_up_accounts(db: &SqlDb, opts: &ServerOptions) -> Result<(), String> {
    let root_pw = opts
        .init_password
        .clone()
        .or_else(|| {
            opts.users
                .iter()
                .find(|(n, _)| n == "root")
                .map(|(_, p)| p.clone())
        })
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
    } else if opts.init_password.is_some() {
        eprintln!(
            "cairndb server: --init-password-file is read only at the first start; the accounts \
             exist (ALTER USER changes a password)"
        );
    }
    let mut users: Vec<&(String, String)> = opts.users.iter().collect();
    users.sort();
    for (name, pw) in users {
        eprintln!(
            "cairndb server: the user option is deprecated (accounts belong in the data \
             directory): use CREATE USER"
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
    if db.root_password_is_empty() && !is_loopback(&opts.bind) {
        return Err(format!(
            "refusing to listen on {}: root has an empty password. Set one (ALTER USER \
             root@localhost IDENTIFIED BY '...' over 127.0.0.1, or --init-password-file at the \
             first start), or listen on 127.0.0.1",
            opts.bind
        ));
    }
    Ok(())
}

/// Whether `bind` is a loopback address (or `localhost`).
fn is_loopback(bind: &str) -> bool {
    bind.eq_ignore_ascii_case("localhost")
        || bind
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The TLS configuration: the files named, or the certificates made (at
/// first start) in the data directory; `None` when off.
fn tls(opts: &ServerOptions) -> Result<Option<cairndb_server::Tls>, String> {
    let (cert, key) = match &opts.tls {
        TlsSource::Off => return Ok(None),
        TlsSource::Files { cert, key } => (cert.clone(), key.clone()),
        TlsSource::Generated => {
            let datadir: &Path = &opts.datadir;
            let f = cairndb_server::auto_generate_certs(datadir)
                .map_err(|e| format!("TLS certificates in {}: {e}", datadir.display()))?;
            if f.generated {
                eprintln!(
                    "cairndb server: made a self-signed CA and server certificate: {} (give it \
                     to clients to verify the server), {}, {}",
                    f.ca.display(),
                    f.cert.display(),
                    f.key.display()
                );
            }
            (f.cert, f.key)
        }
    };
    cairndb_server::Tls::from_files(&cert, &key, opts.ssl_ca.as_deref())
        .map(Some)
        .map_err(|e| format!("TLS: {e}"))
}

/// The engine's waits that can last (a row lock, a write stall), run
/// through `block_in_place` on the runtime's threads: a statement run on
/// its connection's worker (a write by primary key, `is_quick`) gives the
/// worker up only when it actually waits.
fn engine_wait(w: &mut dyn FnMut()) {
    cairndb_server::blocking(w)
}

/// The server's runtime: `workers` threads, each with the engine's
/// blocking hook.
fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .enable_all()
        .thread_name("cairndb-server")
        .on_thread_start(|| cairndb::set_thread_blocking_hook(Some(engine_wait)))
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))
}
