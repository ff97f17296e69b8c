//! The async driver: the listener, the accept loop, one tokio task per
//! connection, and the execution of session calls off the scheduler.
//!
//! A connection task reads until it has a whole payload ([`Framer`]),
//! hands it to the connection's [`Core`] (or, during the connection
//! phase, to [`Auth`]), and writes the answer with one `write_all`. Session
//! calls run through the configured [`Executor`], except a prepared
//! statement the session calls quick ([`Session::is_quick`]), which runs on
//! the connection's task with its answer buffered; a result larger than
//! `SPILL_ABOVE` is written while it is produced, from the executing
//! thread, through `Handle::block_on`.
//!
//! Invariants: at most one command of a connection is in flight; the
//! count of open connections is decremented by a guard, even if a session
//! panics; on shutdown the listener closes first, then each connection
//! ends when it next waits for a command (a command in flight finishes and
//! is answered), its session dropped on an executor thread; `run` returns
//! when every connection has ended. A connection arms its idle timer and
//! its wait for shutdown once, not once per command: a read touches
//! neither tokio's timer wheel nor a shared waiter list. Locking: none
//! beyond atomics and the shutdown `Notify`.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::futures::Notified;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};

use crate::api::{AccountAuth, Backend, ConnInfo, Session, SqlError};
pub use crate::auth::AuthPlugin;
use crate::auth::{Auth, AuthOptions, AuthStep, Login};
use crate::conn::{Core, Flow, Stats};
use crate::framing::{Discard, Frame, FrameError, Framer};
use crate::hosts::Hosts;
use crate::results::{NoSpill, Spill};
use crate::tls::{RsaKeys, Tls, TlsInfo};
use crate::wire::Out;

/// Where session calls run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Executor {
    /// `tokio::task::block_in_place` on the connection's worker thread
    /// (the worker's other tasks move to another thread meanwhile). Needs
    /// the multi-threaded runtime; on a current-thread runtime it falls
    /// back to `Inline`.
    #[default]
    BlockInPlace,
    /// tokio's blocking thread pool (`spawn_blocking`): two thread
    /// hand-offs per command.
    BlockingPool,
    /// On the connection's task itself: cheapest, but a session call that
    /// blocks stalls every connection on that worker. For tests and for
    /// backends that never block.
    Inline,
}

/// Server settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on (`127.0.0.1`, `0.0.0.0`, `::`, a host name).
    pub bind: String,
    /// TCP port; 0 picks a free one ([`Server::local_addr`] tells which).
    pub port: u16,
    /// Connections beyond this get ERR 1040 "Too many connections" instead
    /// of a greeting, except one more, kept for an account with SUPER or
    /// CONNECTION_ADMIN ([`AccountAuth::connection_admin`]): it gets the
    /// greeting, and 1040 after logging in if the account has neither.
    pub max_connections: u32,
    /// Largest client payload accepted (COM_QUERY text, an execute, one
    /// parameter's long data); a larger one gets ERR 1153 and the
    /// connection closes.
    pub max_allowed_packet: usize,
    /// User name -> password; an empty password accepts an empty
    /// response. The accounts when the backend keeps none
    /// ([`Backend::has_accounts`]); each may log in from any host and
    /// counts as CONNECTION_ADMIN for none.
    pub users: HashMap<String, String>,
    /// The plugin named in the greeting and used in AuthSwitchRequest.
    pub auth_plugin: AuthPlugin,
    /// Where session calls run.
    pub executor: Executor,
    /// Time allowed for the connection phase (MySQL's `connect_timeout`)
    /// at start; [`Hosts::set_connect_timeout`] changes it while the
    /// server runs.
    pub connect_timeout: Duration,
    /// Idle time after which a connection is closed (`wait_timeout`).
    pub wait_timeout: Duration,
    /// Time allowed for the rest of a command once its first bytes came
    /// (`net_read_timeout`); past it the connection closes. A session may
    /// set its own ([`Session::net_timeouts`]).
    pub net_read_timeout: Duration,
    /// Time allowed for the client to take each part of an answer
    /// (`net_write_timeout`); past it the connection closes, and a
    /// statement still producing rows runs to its end without sending
    /// them.
    pub net_write_timeout: Duration,
    /// TLS: offered (CLIENT_SSL) when set.
    pub tls: Option<Tls>,
    /// Refuse a login over plain TCP with ERR 3159
    /// (`require_secure_transport`); needs `tls`.
    pub require_secure_transport: bool,
    /// The RSA key pair a client without TLS may ask for, to send its
    /// password encrypted in caching_sha2_password full authentication;
    /// `None`: such a client is refused.
    pub rsa_keys: Option<Arc<RsaKeys>>,
    /// Consecutive failed connections after which a client address is
    /// blocked (ERR 1129) until `FLUSH HOSTS` ([`Hosts`]); changed while
    /// running through [`Server::hosts`].
    pub max_connect_errors: u64,
}

impl Default for Config {
    /// Loopback port 3306, 151 connections, 64 MiB packets, user `root`
    /// with an empty password, MySQL's default timeouts, no TLS.
    fn default() -> Self {
        Config {
            bind: "127.0.0.1".into(),
            port: 3306,
            max_connections: 151,
            max_allowed_packet: 64 << 20,
            users: [("root".to_string(), String::new())].into(),
            auth_plugin: AuthPlugin::MysqlNativePassword,
            executor: Executor::default(),
            connect_timeout: Duration::from_secs(10),
            wait_timeout: Duration::from_secs(8 * 3600),
            net_read_timeout: Duration::from_secs(30),
            net_write_timeout: Duration::from_secs(60),
            tls: None,
            require_secure_transport: false,
            rsa_keys: None,
            max_connect_errors: 100,
        }
    }
}

/// Server-wide counters ([`Server::counters`]).
#[derive(Debug, Clone)]
pub struct Counters(Arc<Stats>);

impl Counters {
    /// Connections that ended before logging in: refused logins, failed
    /// TLS handshakes, malformed or timed-out connection phases (MySQL's
    /// `Aborted_connects`).
    pub fn aborted_connects(&self) -> u64 {
        self.0.aborted_connects.load(Ordering::Relaxed)
    }

    /// Connections open now.
    pub fn threads_connected(&self) -> u32 {
        self.0.threads.load(Ordering::Relaxed)
    }

    /// Connections past login that ended without COM_QUIT: closed by the
    /// client, timed out (`wait_timeout`, `net_read_timeout`,
    /// `net_write_timeout`), killed or broken (MySQL's `Aborted_clients`).
    pub fn aborted_clients(&self) -> u64 {
        self.0.aborted_clients.load(Ordering::Relaxed)
    }

    /// The server's counters under MySQL's status names: `Aborted_clients`,
    /// `Aborted_connects`, `Connection_errors_host_blocked`,
    /// `Connection_errors_max_connections`, and `Bytes_received` and
    /// `Bytes_sent` of the connections that never opened a session (a
    /// session is told its own through [`Session::traffic`]; the global
    /// values are the sum).
    pub fn status(&self) -> Vec<(&'static str, u64)> {
        let s = &self.0;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        vec![
            ("Aborted_clients", l(&s.aborted_clients)),
            ("Aborted_connects", l(&s.aborted_connects)),
            ("Bytes_received", l(&s.bytes_received)),
            ("Bytes_sent", l(&s.bytes_sent)),
            ("Connection_errors_host_blocked", l(&s.host_blocked)),
            ("Connection_errors_max_connections", l(&s.max_connections)),
        ]
    }
}

/// Initial capacity of a connection's output buffer.
const OUT_INITIAL: usize = 1024;
/// An output buffer keeps up to this capacity between commands: a result
/// written as it is produced never holds more than `SPILL_ABOVE` plus one
/// row, so a connection that sends large results (scans of wide rows)
/// grows its buffer once instead of reallocating it up from 1 KiB for
/// every answer. Larger buffers (one huge row) are given back.
const OUT_KEEP: usize = 2 * crate::results::SPILL_ABOVE;

struct Shared<B> {
    config: Config,
    backend: Arc<B>,
    stats: Arc<Stats>,
    next_id: AtomicU32,
    active: AtomicU32,
    executor: Executor,
    stop: Stop,
    hosts: Hosts,
}

/// The server's shutdown as connections see it: a flag, and a `Notify`
/// each connection registers with once (see [`Waits`]).
#[derive(Default)]
struct Stop {
    flag: AtomicBool,
    notify: Notify,
}

impl Stop {
    fn fire(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

/// A bound listener, not yet accepting.
pub struct Server<B: Backend> {
    listener: TcpListener,
    shared: Arc<Shared<B>>,
}

impl<B: Backend> Server<B> {
    /// Binds `config.bind:config.port` (with `SO_REUSEADDR`, as tokio
    /// does on Unix).
    pub async fn bind(config: Config, backend: Arc<B>) -> io::Result<Self> {
        if config.require_secure_transport && config.tls.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "require_secure_transport needs TLS configured",
            ));
        }
        let listener = TcpListener::bind((config.bind.as_str(), config.port)).await?;
        let executor = match (config.executor, Handle::current().runtime_flavor()) {
            (Executor::BlockInPlace, RuntimeFlavor::CurrentThread) => Executor::Inline,
            (e, _) => e,
        };
        let hosts = Hosts::new(config.max_connect_errors);
        hosts.set_connect_timeout(config.connect_timeout);
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                hosts,
                config,
                backend,
                stats: Arc::new(Stats::new()),
                next_id: AtomicU32::new(1),
                active: AtomicU32::new(0),
                executor,
                stop: Stop::default(),
            }),
        })
    }

    /// The server's counters, readable while it runs.
    pub fn counters(&self) -> Counters {
        Counters(Arc::clone(&self.shared.stats))
    }

    /// The host cache (`max_connect_errors`, `FLUSH HOSTS`), usable while
    /// the server runs.
    pub fn hosts(&self) -> Hosts {
        self.shared.hosts.clone()
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` resolves, then stops
    /// accepting, lets each connection finish its command in flight,
    /// closes every session and returns.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        let mut tasks = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                r = self.listener.accept() => match r {
                    Ok((sock, peer)) => {
                        let shared = Arc::clone(&self.shared);
                        tasks.spawn(connection(shared, sock, peer));
                    }
                    // Out of descriptors, or a connection reset before it
                    // was accepted: wait a little rather than spin.
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                },
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        drop(self.listener);
        self.shared.stop.fire();
        while tasks.join_next().await.is_some() {}
        Ok(())
    }
}

/// Binds, prints `cairndb server listening on ADDR`, and serves until
/// `shutdown` resolves (see [`Server::run`]). Needs a tokio runtime with
/// I/O and time enabled, preferably multi-threaded.
pub async fn serve<B: Backend>(
    config: Config,
    backend: Arc<B>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let server = Server::bind(config, backend).await?;
    println!("cairndb server listening on {}", server.local_addr()?);
    server.run(shutdown).await
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM: a ready-made `shutdown` for
/// [`serve`].
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs `f`, which may block (a row-lock wait, a synced commit), without
/// stalling the other connections of the calling worker thread: through
/// `tokio::task::block_in_place` when called on a multi-threaded tokio
/// worker, directly otherwise. For a session run with
/// [`Executor::Inline`], which must wrap its waits in this; under the
/// other executors it is not needed (and costs nothing but a check).
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Decrements the open-connection count however the task ends.
struct Active<'a> {
    active: &'a AtomicU32,
    threads: &'a AtomicU32,
    released: AtomicBool,
}

impl<'a> Active<'a> {
    fn new(active: &'a AtomicU32, threads: &'a AtomicU32) -> Self {
        Active {
            active,
            threads,
            released: AtomicBool::new(false),
        }
    }

    /// Gives the connection's slot back (once): before a refusal is sent,
    /// so a client told "too many connections" finds the slot free when
    /// it connects again.
    fn release(&self) {
        if !self.released.swap(true, Ordering::Relaxed) {
            self.active.fetch_sub(1, Ordering::Relaxed);
            self.threads.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

async fn connection<B: Backend>(shared: Arc<Shared<B>>, sock: TcpStream, peer: SocketAddr) {
    let _ = sock.set_nodelay(true);
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    // One connection beyond max_connections is kept for an account with
    // SUPER or CONNECTION_ADMIN: it logs in, and is refused after if the
    // account has neither.
    let before = shared.active.fetch_add(1, Ordering::Relaxed);
    let max = shared.config.max_connections;
    let refuse = before > max;
    let over_limit = before >= max;
    shared.stats.threads.fetch_add(1, Ordering::Relaxed);
    let active = Active::new(&shared.active, &shared.stats.threads);
    let (mut r, mut w) = sock.into_split();
    let ip = peer.ip();
    let host = ip.to_string();
    let shared = &*shared;
    let cfg = &shared.config;
    let mut out = Out::with_capacity(OUT_INITIAL);
    let mut framer = Framer::new();
    if refuse {
        shared.stats.max_connections.fetch_add(1, Ordering::Relaxed);
        active.release();
        out.err(&SqlError::too_many_connections());
        let _ = flush(&mut w, &mut out).await;
        return;
    }
    if shared.hosts.blocked(ip) {
        shared.stats.host_blocked.fetch_add(1, Ordering::Relaxed);
        out.err(&SqlError::host_blocked(&host));
        let _ = flush(&mut w, &mut out).await;
        return;
    }
    let connect_timeout = shared.hosts.connect_timeout();
    let mut waits = Waits::new(&shared.stop, connect_timeout);
    let mut auth = Auth::new(id, cfg.auth_plugin, auth_options(cfg));
    auth.greeting(&mut out);
    // The connection phase, TLS handshake included, within connect_timeout.
    let deadline = deadline_after(Instant::now(), connect_timeout);
    let phase = tokio::time::timeout_at(
        deadline,
        login_phase(
            shared,
            &mut r,
            &mut w,
            (&mut framer, &mut out, &mut waits),
            &mut auth,
            (&host, ip),
            1,
        ),
    )
    .await
    .unwrap_or(Phase::End);
    // A failed connection phase counts against the client's address
    // (a refused login has counted already, to delay its answer).
    let failed = |phase: &Phase| {
        if !matches!(phase, Phase::Refused) {
            shared.hosts.failed(ip);
        }
    };
    let login = match phase {
        Phase::Login(login) => login,
        Phase::End | Phase::Refused => {
            failed(&phase);
            return shared.stats.aborted(waits.rx, out.sent);
        }
        Phase::Upgrade => {
            let (Some(tls), Ok(sock)) = (&cfg.tls, r.reunite(w)) else {
                shared.hosts.failed(ip);
                return shared.stats.aborted(waits.rx, out.sent);
            };
            // What the client sent after its SSLRequest without waiting
            // (its ClientHello) is in the framer: put it back in front.
            let sock = Rewound::new(framer.take_pending(), sock);
            let accepted = tokio::time::timeout_at(deadline, tls.acceptor.accept(sock)).await;
            let Ok(Ok(stream)) = accepted else {
                shared.hosts.failed(ip);
                return shared.stats.aborted(waits.rx, out.sent);
            };
            let info = TlsInfo::of(stream.get_ref().1);
            auth.secured();
            let (mut r, mut w) = tokio::io::split(stream);
            let phase = tokio::time::timeout_at(
                deadline,
                login_phase(
                    shared,
                    &mut r,
                    &mut w,
                    (&mut framer, &mut out, &mut waits),
                    &mut auth,
                    (&host, ip),
                    2,
                ),
            )
            .await
            .unwrap_or(Phase::End);
            let Phase::Login(login) = phase else {
                failed(&phase);
                return shared.stats.aborted(waits.rx, out.sent);
            };
            shared.hosts.succeeded(ip);
            let conn = Conn {
                id,
                host,
                tls: Some(info),
                over_limit,
            };
            return command_phase(shared, r, w, framer, out, waits, login, conn, Some(&active))
                .await;
        }
    };
    shared.hosts.succeeded(ip);
    let conn = Conn {
        id,
        host,
        tls: None,
        over_limit,
    };
    command_phase(shared, r, w, framer, out, waits, login, conn, Some(&active)).await;
}

/// The connection phase's options from the server's.
fn auth_options(cfg: &Config) -> AuthOptions {
    AuthOptions {
        tls: cfg.tls.is_some(),
        require_secure: cfg.require_secure_transport,
        rsa: cfg.rsa_keys.clone(),
    }
}

/// Runs the protocol over any byte stream (no socket), with an executor
/// fit for the current runtime: for the fuzz target and tests. TLS is not
/// offered.
pub async fn drive_connection<B, R, W>(config: Config, backend: Arc<B>, mut r: R, mut w: W)
where
    B: Backend,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let executor = match (config.executor, Handle::current().runtime_flavor()) {
        (Executor::BlockInPlace, RuntimeFlavor::CurrentThread) => Executor::Inline,
        (e, _) => e,
    };
    let hosts = Hosts::new(config.max_connect_errors);
    hosts.set_connect_timeout(config.connect_timeout);
    let shared = Shared {
        hosts,
        config: Config {
            tls: None,
            ..config
        },
        backend,
        stats: Arc::new(Stats::new()),
        next_id: AtomicU32::new(2),
        active: AtomicU32::new(1),
        executor,
        stop: Stop::default(),
    };
    let cfg = &shared.config;
    let mut out = Out::with_capacity(OUT_INITIAL);
    let mut framer = Framer::new();
    let mut waits = Waits::new(&shared.stop, cfg.connect_timeout);
    let mut auth = Auth::new(1, cfg.auth_plugin, auth_options(cfg));
    auth.greeting(&mut out);
    let phase = tokio::time::timeout(
        cfg.connect_timeout,
        login_phase(
            &shared,
            &mut r,
            &mut w,
            (&mut framer, &mut out, &mut waits),
            &mut auth,
            (
                "localhost",
                std::net::IpAddr::from(std::net::Ipv4Addr::LOCALHOST),
            ),
            1,
        ),
    )
    .await;
    if let Ok(Phase::Login(login)) = phase {
        let conn = Conn {
            id: 1,
            host: "localhost".into(),
            tls: None,
            over_limit: false,
        };
        command_phase(&shared, r, w, framer, out, waits, login, conn, None).await;
    }
}

/// How the connection phase ended.
enum Phase {
    /// Authenticated.
    Login(Login),
    /// An SSLRequest: the TLS handshake comes next.
    Upgrade,
    /// Closed or failed (its ERR sent, if any).
    End,
    /// A refused login, counted against the client's address and its
    /// ERR sent after the delay that count calls for.
    Refused,
}

/// A connection's identity for its session.
struct Conn {
    id: u32,
    host: String,
    tls: Option<TlsInfo>,
    /// Opened past `max_connections`: only an account with
    /// CONNECTION_ADMIN (or SUPER) may keep it.
    over_limit: bool,
}

/// The connection phase from sequence id `expect` on: sends what `out`
/// holds (the greeting), then answers the client's packets until a login,
/// an SSLRequest or the end.
async fn login_phase<B, R, W>(
    shared: &Shared<B>,
    r: &mut R,
    w: &mut W,
    (framer, out, waits): (&mut Framer, &mut Out, &mut Waits<'_>),
    auth: &mut Auth,
    (host, ip): (&str, std::net::IpAddr),
    mut expect: u8,
) -> Phase
where
    B: Backend,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (cfg, backend) = (&shared.config, &*shared.backend);
    let max = cfg.max_allowed_packet;
    let lookup = |user: &str| {
        if backend.has_accounts() {
            backend.lookup_account(user, host)
        } else {
            cfg.users.get(user).map(|pw| AccountAuth::from_password(pw))
        }
    };
    if flush(w, out).await.is_err() {
        return Phase::End;
    }
    loop {
        let t = shared.hosts.connect_timeout();
        let frame = match read_frame(r, framer, expect, max, t, t, waits).await {
            Read::Frame(f) => f,
            Read::Closed => return Phase::End,
            Read::Fatal(e) => {
                out.seq = expect.wrapping_add(1);
                out.err(&e);
                let _ = flush(w, out).await;
                close_after_fatal(r, w).await;
                return Phase::End;
            }
            Read::TooLarge => {
                let last = discard_payload(r, framer).await;
                out.seq = last.unwrap_or(expect).wrapping_add(1);
                out.err(&SqlError::packet_too_large());
                let _ = flush(w, out).await;
                close_after_fatal(r, w).await;
                return Phase::End;
            }
        };
        out.seq = frame.last_seq.wrapping_add(1);
        let step = auth.on_packet(framer.payload(&frame), &lookup, host, out);
        framer.consume(frame);
        match step {
            AuthStep::More => {
                expect = out.seq;
                if flush(w, out).await.is_err() {
                    return Phase::End;
                }
            }
            AuthStep::Done(login) => return Phase::Login(login),
            AuthStep::Fail => {
                let delay = shared.hosts.failed(ip);
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                let _ = flush(w, out).await;
                return Phase::Refused;
            }
            AuthStep::Upgrade => return Phase::Upgrade,
        }
    }
}

/// A socket with bytes already read from it put back in front of it:
/// what a client sent right after its SSLRequest, the start of its TLS
/// handshake. Writes go straight through.
struct Rewound<S> {
    pre: Vec<u8>,
    pos: usize,
    inner: S,
}

impl<S> Rewound<S> {
    fn new(pre: Vec<u8>, inner: S) -> Self {
        Rewound { pre, pos: 0, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewound<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(rest) = this.pre.get(this.pos..).filter(|r| !r.is_empty()) {
            let n = rest.len().min(buf.remaining());
            buf.put_slice(rest.get(..n).unwrap_or_default());
            this.pos += n;
            if this.pos >= this.pre.len() {
                this.pre = Vec::new();
                this.pos = 0;
            }
            return std::task::Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewound<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// How a wait for the client's next payload ended.
enum Read {
    Frame(Frame),
    /// End of stream, I/O error, timeout or shutdown: close quietly.
    Closed,
    /// A framing error: send this ERR, then close.
    Fatal(SqlError),
    /// A payload over `max_allowed_packet`: drop the rest of it, answer
    /// with ERR 1153 after its last packet, then close.
    TooLarge,
}

/// What a connection waits on beside its socket, armed once for the
/// connection's life: the idle deadline and the server's shutdown.
struct Waits<'a> {
    timer: IdleTimer,
    stop: &'a AtomicBool,
    /// Registered with the server's `Notify` before the flag is first
    /// read, so a shutdown after that read still wakes it.
    stopped: Pin<Box<Notified<'a>>>,
    /// Resolves when the session's [`Closer`](crate::api::Closer) asks
    /// the connection to close (command phase only).
    closed: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Bytes read and not yet counted (`Bytes_received`).
    rx: u64,
}

impl<'a> Waits<'a> {
    fn new(stop: &'a Stop, idle: Duration) -> Self {
        let mut stopped = Box::pin(stop.notify.notified());
        stopped.as_mut().enable();
        Waits {
            timer: IdleTimer::new(idle),
            stop: &stop.flag,
            stopped,
            closed: None,
            rx: 0,
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// An idle deadline that moves with every command without touching
/// tokio's timer wheel: the `Sleep` keeps an older, earlier deadline, and
/// when it fires before the current one it is re-armed, once per idle
/// period at most.
struct IdleTimer {
    sleep: Pin<Box<Sleep>>,
    deadline: Instant,
}

/// Where a deadline too far to represent is put (as tokio's own
/// `timeout` does with an unrepresentable one).
const FAR: Duration = Duration::from_secs(30 * 365 * 86_400);

fn deadline_after(now: Instant, idle: Duration) -> Instant {
    now.checked_add(idle).unwrap_or_else(|| now + FAR)
}

impl IdleTimer {
    fn new(idle: Duration) -> Self {
        let deadline = deadline_after(Instant::now(), idle);
        IdleTimer {
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
            deadline,
        }
    }

    /// Starts a wait of `idle` from now.
    fn arm(&mut self, idle: Duration) {
        self.deadline = deadline_after(Instant::now(), idle);
        if self.deadline < self.sleep.deadline() {
            self.sleep.as_mut().reset(self.deadline);
        }
    }

    /// Resolves once the current deadline has passed.
    async fn expired(&mut self) {
        loop {
            self.sleep.as_mut().await;
            if Instant::now() >= self.deadline {
                return;
            }
            let d = self.deadline;
            self.sleep.as_mut().reset(d);
        }
    }
}

/// Reads the next payload: `idle` is the wait for its first bytes,
/// `partial` for each read after that (`net_read_timeout`).
#[allow(clippy::too_many_arguments)]
async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut R,
    framer: &mut Framer,
    expect: u8,
    max: usize,
    idle: Duration,
    partial: Duration,
    waits: &mut Waits<'_>,
) -> Read {
    waits.timer.arm(idle);
    loop {
        match framer.next(expect, max) {
            Ok(Some(f)) => return Read::Frame(f),
            Err(FrameError::TooLarge) => return Read::TooLarge,
            Err(FrameError::OutOfOrder) => return Read::Fatal(SqlError::packets_out_of_order()),
            Ok(None) => {}
        }
        if waits.stopping() {
            return Read::Closed;
        }
        // A payload has begun: the rest must come within `partial` of
        // each read (armed once per read, only while a payload is cut).
        if framer.has_pending() {
            waits.timer.arm(partial);
        }
        let buf = framer.read_buf();
        let closed = &mut waits.closed;
        // Biased: a close asked for while a command ran (`KILL
        // CONNECTION` of a statement waiting for a lock) wins over the
        // client's next command arriving at the same time, which an
        // unbiased select ran about half the time.
        tokio::select! {
            biased;
            _ = async {
                match closed.as_mut() {
                    Some(c) => c.as_mut().await,
                    None => std::future::pending().await,
                }
            } => return Read::Closed,
            _ = waits.stopped.as_mut() => return Read::Closed,
            _ = waits.timer.expired() => return Read::Closed,
            n = r.read_buf(buf) => match n {
                Ok(0) | Err(_) => return Read::Closed,
                Ok(n) => waits.rx += n as u64,
            },
        }
    }
}

/// Bounds on reading what a client still sends of a payload refused as
/// too large: a pause this long ends it, and so do these totals.
const DISCARD_IDLE: Duration = Duration::from_secs(2);
const DISCARD_TIME: Duration = Duration::from_secs(30);
const DISCARD_BYTES: u64 = 1 << 30;

/// Reads and drops a payload refused as too large until the header of its
/// last packet is seen; that packet's sequence id, or `None` if the client
/// paused, closed, or the bounds ran out. (The reply carries the next
/// sequence id, as any reply does; the refused packet's remaining bytes
/// are dropped by [`close_after_fatal`].)
async fn discard_payload<R: AsyncRead + Unpin>(r: &mut R, framer: &mut Framer) -> Option<u8> {
    let run = async {
        let mut d = Discard::default();
        let mut read = 0u64;
        loop {
            if let Some(s) = framer.discard(&mut d).or(d.last_seq()) {
                return Some(s);
            }
            if read > DISCARD_BYTES {
                return None;
            }
            match tokio::time::timeout(DISCARD_IDLE, r.read_buf(framer.read_buf())).await {
                Ok(Ok(n)) if n > 0 => read += n as u64,
                _ => return None,
            }
        }
    };
    tokio::time::timeout(DISCARD_TIME, run).await.ok().flatten()
}

/// Closes a connection after the ERR for a framing error. Closing with
/// the client's bytes unread would answer with a reset, and a client still
/// writing would see a broken pipe instead of the error; so the write side
/// is shut (the client reads the ERR, then end of stream) and what arrives
/// is dropped until the client closes or pauses, within the same bounds.
async fn close_after_fatal<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(r: &mut R, w: &mut W) {
    let _ = w.shutdown().await;
    let drain = async {
        let mut sink = [0u8; 16 * 1024];
        let mut left = DISCARD_BYTES;
        while left > 0 {
            match tokio::time::timeout(DISCARD_IDLE, r.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n as u64),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(DISCARD_TIME, drain).await;
}

/// [`flush`] within `limit` (`net_write_timeout`): an answer the socket
/// takes at once arms no timer.
async fn flush_within<W: AsyncWrite + Unpin>(
    w: &mut W,
    out: &mut Out,
    limit: Duration,
) -> io::Result<()> {
    let mut f = std::pin::pin!(flush(w, out));
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(f.as_mut().poll(cx))).await;
    if let std::task::Poll::Ready(r) = first {
        return r;
    }
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

async fn flush<W: AsyncWrite + Unpin>(w: &mut W, out: &mut Out) -> io::Result<()> {
    if !out.buf.is_empty() {
        w.write_all(&out.buf).await?;
        w.flush().await?;
        out.sent += out.buf.len() as u64;
        out.buf.clear();
    }
    if out.buf.capacity() > OUT_KEEP {
        out.buf = Vec::with_capacity(OUT_INITIAL);
    }
    Ok(())
}

/// A connection past authentication: what a command needs, moved as one
/// piece to the executing thread and back.
struct Live<S, W> {
    core: Core<S>,
    framer: Framer,
    out: Out,
    w: W,
    /// Bytes read and not yet told to the session.
    rx: u64,
}

/// Writes a large answer from the executing thread.
struct HandleSpill<'a, W> {
    handle: Handle,
    w: &'a mut W,
    failed: bool,
    sent: u64,
    /// `net_write_timeout`.
    limit: Duration,
}

impl<W: AsyncWrite + Unpin> Spill for HandleSpill<'_, W> {
    fn spill(&mut self, buf: &mut Vec<u8>) {
        if !self.failed {
            let write = tokio::time::timeout(self.limit, self.w.write_all(buf));
            if !matches!(self.handle.block_on(write), Ok(Ok(()))) {
                self.failed = true;
            } else {
                self.sent += buf.len() as u64;
            }
        }
        buf.clear();
    }
}

/// Runs one command; `handle` is given when the calling thread may block
/// on the runtime (to write a large answer as it is produced).
fn step<S: Session, W: AsyncWrite + Unpin>(
    live: &mut Live<S, W>,
    frame: Frame,
    handle: Option<Handle>,
    limit: Duration,
) -> Flow {
    let Live {
        core,
        framer,
        out,
        w,
        rx,
    } = live;
    core.traffic(std::mem::take(rx), std::mem::take(&mut out.sent));
    out.seq = frame.last_seq.wrapping_add(1);
    let payload = framer.payload(&frame);
    let flow = match handle {
        Some(handle) => {
            let mut spill = HandleSpill {
                handle,
                w,
                failed: false,
                sent: 0,
                limit,
            };
            let f = core.command(payload, out, &mut spill);
            out.sent += spill.sent;
            if spill.failed {
                Flow::Close
            } else {
                f
            }
        }
        None => core.command(payload, out, &mut NoSpill),
    };
    framer.consume(frame);
    flow
}

/// Runs `f` where the executor says; `None` if it panicked on the pool.
async fn exec<T: Send + 'static>(
    executor: Executor,
    f: impl FnOnce(Option<Handle>) -> T + Send + 'static,
) -> Option<T> {
    match executor {
        Executor::Inline => Some(f(None)),
        Executor::BlockInPlace => {
            let h = Handle::current();
            Some(tokio::task::block_in_place(move || f(Some(h))))
        }
        Executor::BlockingPool => {
            let h = Handle::current();
            tokio::task::spawn_blocking(move || f(Some(h))).await.ok()
        }
    }
}

/// After a login: opens the session, answers OK, then runs commands
/// until the connection ends.
#[allow(clippy::too_many_arguments)]
async fn command_phase<B, R, W>(
    shared: &Shared<B>,
    mut r: R,
    mut w: W,
    framer: Framer,
    mut out: Out,
    mut waits: Waits<'_>,
    login: Login,
    conn: Conn,
    active: Option<&Active<'_>>,
) where
    B: Backend,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    if conn.over_limit && !login.connection_admin {
        shared.stats.max_connections.fetch_add(1, Ordering::Relaxed);
        if let Some(a) = active {
            a.release();
        }
        out.err(&SqlError::too_many_connections());
        let _ = flush(&mut w, &mut out).await;
        shared.stats.unlogged(waits.rx, out.sent);
        return;
    }
    let cfg = &shared.config;
    let max = cfg.max_allowed_packet;
    let backend = Arc::clone(&shared.backend);
    let closer = crate::api::Closer::default();
    let info = ConnInfo {
        id: conn.id,
        user: login.user,
        db: login.db,
        host: conn.host,
        tls: conn.tls,
        closer: closer.clone(),
        interactive: login
            .caps
            .contains(mysql_common::constants::CapabilityFlags::CLIENT_INTERACTIVE),
    };
    // Registered before the first read, so a close asked for at any time
    // from here on ends the wait (a `notify_one` before it is kept).
    waits.closed = Some(Box::pin(async move { closer.0.notified().await }));
    let opened = exec(shared.executor, move |_| backend.open_session_with(&info)).await;
    let session = match opened {
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            out.err(&e);
            let _ = flush(&mut w, &mut out).await;
            shared.stats.unlogged(waits.rx, out.sent);
            return;
        }
        None => return shared.stats.unlogged(waits.rx, out.sent),
    };
    out.ok(0, 0, 0, session.status(), 0, b"");
    let net = session.net_timeouts();
    let (_, net_write) = net.unwrap_or((cfg.net_read_timeout, cfg.net_write_timeout));
    if flush_within(&mut w, &mut out, net_write).await.is_err() {
        shared.stats.aborted_clients.fetch_add(1, Ordering::Relaxed);
        if let Some(a) = active {
            a.release();
        }
        let _ = exec(shared.executor, move |_| drop(session)).await;
        return;
    }

    // Command phase.
    let mut live = Box::new(Live {
        core: Core::new(session, login.caps, max, Arc::clone(&shared.stats)),
        framer,
        out,
        w,
        rx: 0,
    });
    // Whether the client said goodbye (COM_QUIT); any other end counts in
    // `Aborted_clients`.
    let mut quit = false;
    loop {
        let idle = live.core.session.idle_timeout().unwrap_or(cfg.wait_timeout);
        let (net_read, net_write) = live
            .core
            .session
            .net_timeouts()
            .unwrap_or((cfg.net_read_timeout, cfg.net_write_timeout));
        let framer = &mut live.framer;
        let frame = match read_frame(&mut r, framer, 0, max, idle, net_read, &mut waits).await {
            Read::Frame(f) => f,
            Read::Closed => break,
            Read::Fatal(e) => {
                live.out.seq = 1;
                live.out.err(&e);
                let Live { out, w, .. } = &mut *live;
                let _ = flush(w, out).await;
                close_after_fatal(&mut r, w).await;
                break;
            }
            Read::TooLarge => {
                let Live { out, w, framer, .. } = &mut *live;
                let last = discard_payload(&mut r, framer).await;
                out.seq = last.unwrap_or(0).wrapping_add(1);
                out.err(&SqlError::packet_too_large());
                let _ = flush(w, out).await;
                close_after_fatal(&mut r, w).await;
                break;
            }
        };
        live.rx += std::mem::take(&mut waits.rx);
        quit = live.framer.payload(&frame).first() == Some(&0x01);
        // A quick statement (a keyed read that cannot wait) runs here:
        // moving it off the worker would cost more than running it.
        let quick =
            shared.executor != Executor::Inline && live.core.is_quick(live.framer.payload(&frame));
        let first_seq = frame.last_seq.wrapping_add(1);
        let flow = if quick {
            step(&mut live, frame, None, net_write)
        } else {
            let ran = exec(shared.executor, move |h| {
                let flow = step(&mut live, frame, h, net_write);
                (live, flow)
            })
            .await;
            let Some((back, flow)) = ran else {
                shared.stats.aborted_clients.fetch_add(1, Ordering::Relaxed);
                return;
            };
            live = back;
            flow
        };
        // The answer acknowledges commits: it waits for their sync.
        let durable = std::future::poll_fn(|cx| live.core.session.poll_durable(cx)).await;
        let Live { out, w, framer, .. } = &mut *live;
        framer.shrink();
        if let Err(e) = durable {
            // Not durable: the answer (whatever of it is still buffered)
            // must not reach the client. The database has turned
            // read-only; the connection closes after the error.
            out.buf.clear();
            out.seq = first_seq;
            out.err(&e);
            let _ = flush(w, out).await;
            break;
        }
        if flush_within(w, out, net_write).await.is_err() || flow == Flow::Close {
            break;
        }
        quit = false;
    }
    if !quit {
        shared.stats.aborted_clients.fetch_add(1, Ordering::Relaxed);
    }
    live.rx += waits.rx;
    // The slot is given back before the session closes: `Threads_connected`
    // counts open sessions, so a client that sees it drop finds the slot
    // free too (the other order let a connection made right then be
    // refused while the count already showed room).
    if let Some(a) = active {
        a.release();
    }
    let _ = exec(shared.executor, move |_| {
        let Live {
            mut core, rx, out, ..
        } = *live;
        core.traffic(rx, out.sent);
        drop(core)
    })
    .await;
}
