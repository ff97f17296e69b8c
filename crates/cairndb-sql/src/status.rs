//! The live sessions of a database and the status counters operators
//! read: `SHOW PROCESSLIST`, `information_schema.PROCESSLIST`, `KILL`,
//! `SHOW STATUS` (MySQL's names where the meaning matches).
//!
//! Each session registers one [`SessionInfo`] for its life. Counters are
//! kept per session, on the session's own cache lines (a statement adds
//! to them with relaxed atomics, no shared line bounces between
//! sessions), and summed when read; a closing session adds its counts to
//! the registry's retired totals. What a session is running (its
//! statement text and start) sits behind a small mutex of its own, taken
//! once at the start and once at the end of a statement and by readers of
//! the process list.
//!
//! A session's [`SessionInfo`] is also the lock-wait hook of its
//! transactions (`cairndb::LockWaitHook`): a row lock wait stops for a
//! `KILL` or the statement's time limit, and adds its time to the
//! session's lock time.
//!
//! Locking: `Registry::sessions` is taken briefly to add, remove, list or
//! find a session, never while a session's own `activity` lock is held
//! by the same thread except in `Registry::list` (registry, then each
//! activity, in that order only).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A statement kind counted by `Com_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub(crate) enum Com {
    Select,
    Insert,
    InsertSelect,
    Update,
    Delete,
    Replace,
    Begin,
    Commit,
    Rollback,
    Savepoint,
    SetOption,
    ChangeDb,
    CreateDb,
    DropDb,
    CreateTable,
    DropTable,
    CreateIndex,
    DropIndex,
    Truncate,
    Show,
    Kill,
    StmtPrepare,
    StmtExecute,
    StmtClose,
    Other,
}

/// Whether statement `sql` changes data or definitions, from its first
/// word (what `MAX_UPDATES_PER_HOUR` counts, as MySQL's statements that
/// change data: writes, DDL and account statements).
pub(crate) fn changes_data(sql: &str) -> bool {
    let body = crate::preparse::strip_comments(sql);
    let first = body
        .split(|c: char| !c.is_ascii_alphabetic())
        .find(|w| !w.is_empty())
        .unwrap_or("");
    [
        "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "ALTER", "DROP", "TRUNCATE", "RENAME",
        "GRANT", "REVOKE", "LOAD", "OPTIMIZE",
    ]
    .iter()
    .any(|w| first.eq_ignore_ascii_case(w))
}

impl Com {
    /// The kind of statement `sql`, from its first words (comments
    /// skipped).
    pub(crate) fn of(sql: &str) -> Com {
        let body = crate::preparse::strip_comments(sql);
        let mut words = body
            .split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| !w.is_empty());
        let first = words.next().unwrap_or("");
        let is = |w: &str, k: &str| w.eq_ignore_ascii_case(k);
        let second = || {
            words
                .clone()
                .find(|w| !is(w, "UNIQUE") && !is(w, "TEMPORARY"))
        };
        match first.len() {
            0 => Com::Other,
            _ if is(first, "SELECT") || is(first, "WITH") => Com::Select,
            _ if is(first, "INSERT") => {
                // No copy of a bulk insert's text: a look for the word.
                if body
                    .as_bytes()
                    .windows(6)
                    .any(|w| w.eq_ignore_ascii_case(b"SELECT"))
                {
                    Com::InsertSelect
                } else {
                    Com::Insert
                }
            }
            _ if is(first, "UPDATE") => Com::Update,
            _ if is(first, "DELETE") => Com::Delete,
            _ if is(first, "REPLACE") => Com::Replace,
            _ if is(first, "BEGIN") || is(first, "START") => Com::Begin,
            _ if is(first, "COMMIT") => Com::Commit,
            _ if is(first, "ROLLBACK") => Com::Rollback,
            _ if is(first, "SAVEPOINT") => Com::Savepoint,
            _ if is(first, "SET") => Com::SetOption,
            _ if is(first, "USE") => Com::ChangeDb,
            _ if is(first, "TRUNCATE") => Com::Truncate,
            _ if is(first, "SHOW") || is(first, "DESCRIBE") || is(first, "DESC") => Com::Show,
            _ if is(first, "KILL") => Com::Kill,
            _ if is(first, "CREATE") || is(first, "DROP") => {
                let create = is(first, "CREATE");
                match second() {
                    Some(w) if is(w, "DATABASE") || is(w, "SCHEMA") => {
                        if create {
                            Com::CreateDb
                        } else {
                            Com::DropDb
                        }
                    }
                    Some(w) if is(w, "TABLE") => {
                        if create {
                            Com::CreateTable
                        } else {
                            Com::DropTable
                        }
                    }
                    Some(w) if is(w, "INDEX") => {
                        if create {
                            Com::CreateIndex
                        } else {
                            Com::DropIndex
                        }
                    }
                    _ => Com::Other,
                }
            }
            _ => Com::Other,
        }
    }
}

/// `Com_*` names, in the order of [`Com`].
const COM_NAMES: [&str; COM_KINDS] = [
    "Com_select",
    "Com_insert",
    "Com_insert_select",
    "Com_update",
    "Com_delete",
    "Com_replace",
    "Com_begin",
    "Com_commit",
    "Com_rollback",
    "Com_savepoint",
    "Com_set_option",
    "Com_change_db",
    "Com_create_db",
    "Com_drop_db",
    "Com_create_table",
    "Com_drop_table",
    "Com_create_index",
    "Com_drop_index",
    "Com_truncate",
    "Com_show_fields",
    "Com_kill",
    "Com_stmt_prepare",
    "Com_stmt_execute",
    "Com_stmt_close",
    "Com_other",
];

const COM_KINDS: usize = Com::Other as usize + 1;

/// A storage-level operation counted by `Handler_*`, as MySQL counts its
/// handler calls: a key looked up or a range started at a key
/// (`ReadKey`), an index read from its first or last entry with no key
/// (`ReadFirst`, `ReadLast`), the step to an index's next or previous
/// entry (`ReadNext`, `ReadPrev`, the step that finds the range's end
/// included), a table read in primary-key order without a key
/// (`ReadRndNext`, each row and the end), rows written, changed and
/// removed, and transactions committed and rolled back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub(crate) enum Handler {
    Commit,
    Delete,
    ReadFirst,
    ReadKey,
    ReadLast,
    ReadNext,
    ReadPrev,
    ReadRndNext,
    Rollback,
    Update,
    Write,
}

const HANDLER_KINDS: usize = Handler::Write as usize + 1;

/// `Handler_*` names, in the order of [`Handler`].
const HANDLER_NAMES: [&str; HANDLER_KINDS] = [
    "Handler_commit",
    "Handler_delete",
    "Handler_read_first",
    "Handler_read_key",
    "Handler_read_last",
    "Handler_read_next",
    "Handler_read_prev",
    "Handler_read_rnd_next",
    "Handler_rollback",
    "Handler_update",
    "Handler_write",
];

/// `Handler_*` counts of one scan, added to the session's counters once
/// at its end (no shared write per row).
#[derive(Default)]
pub(crate) struct HandlerCounts(pub(crate) [u64; HANDLER_KINDS]);

impl HandlerCounts {
    #[inline]
    pub(crate) fn one(&mut self, h: Handler) {
        if let Some(c) = self.0.get_mut(h as usize) {
            *c += 1;
        }
    }
}

/// One session's counters.
#[derive(Default)]
pub(crate) struct Counters {
    questions: AtomicU64,
    slow_queries: AtomicU64,
    /// Bytes from and to the client, as the server reports them
    /// ([`SessionInfo::add_traffic`]).
    bytes_received: AtomicU64,
    bytes_sent: AtomicU64,
    /// Sorts' temporary files, and their merge passes (`exec/spill.rs`).
    tmp_files: AtomicU64,
    sort_merge_passes: AtomicU64,
    /// Rows a statement held for an operator: groups, DISTINCT sets,
    /// window partitions, derived tables, set-operation results, CTEs
    /// (MySQL's internal temporary tables).
    tmp_tables: AtomicU64,
    com: [AtomicU64; COM_KINDS],
    /// Written only by the session's own thread (load and store).
    handler: [AtomicU64; HANDLER_KINDS],
}

impl Counters {
    fn add_to(&self, sums: &mut Sums) {
        sums.questions += self.questions.load(Ordering::Relaxed);
        sums.slow_queries += self.slow_queries.load(Ordering::Relaxed);
        sums.bytes_received += self.bytes_received.load(Ordering::Relaxed);
        sums.bytes_sent += self.bytes_sent.load(Ordering::Relaxed);
        sums.tmp_files += self.tmp_files.load(Ordering::Relaxed);
        sums.sort_merge_passes += self.sort_merge_passes.load(Ordering::Relaxed);
        sums.tmp_tables += self.tmp_tables.load(Ordering::Relaxed);
        for (s, c) in sums.com.iter_mut().zip(&self.com) {
            *s += c.load(Ordering::Relaxed);
        }
        for (s, c) in sums.handler.iter_mut().zip(&self.handler) {
            *s += c.load(Ordering::Relaxed);
        }
    }

    fn absorb(&self, other: &Counters) {
        self.questions
            .fetch_add(other.questions.load(Ordering::Relaxed), Ordering::Relaxed);
        self.slow_queries.fetch_add(
            other.slow_queries.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        self.bytes_received.fetch_add(
            other.bytes_received.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        self.bytes_sent
            .fetch_add(other.bytes_sent.load(Ordering::Relaxed), Ordering::Relaxed);
        self.tmp_files
            .fetch_add(other.tmp_files.load(Ordering::Relaxed), Ordering::Relaxed);
        self.sort_merge_passes.fetch_add(
            other.sort_merge_passes.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        self.tmp_tables
            .fetch_add(other.tmp_tables.load(Ordering::Relaxed), Ordering::Relaxed);
        for (s, c) in self.com.iter().zip(&other.com) {
            s.fetch_add(c.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        for (s, c) in self.handler.iter().zip(&other.handler) {
            s.fetch_add(c.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

#[derive(Default)]
struct Sums {
    questions: u64,
    slow_queries: u64,
    bytes_received: u64,
    bytes_sent: u64,
    tmp_files: u64,
    sort_merge_passes: u64,
    tmp_tables: u64,
    com: [u64; COM_KINDS],
    handler: [u64; HANDLER_KINDS],
}

/// What a session is doing.
#[derive(Default)]
struct Activity {
    db: Option<String>,
    /// The running statement's text, None when idle.
    info: Option<Arc<str>>,
    /// When the running statement (or the idle time) started.
    since: Option<Instant>,
}

/// No kill requested.
const KILL_NONE: u8 = 0;
/// `KILL QUERY`: the running statement stops at its next row.
const KILL_QUERY: u8 = 1;
/// `KILL [CONNECTION]`: the statement stops and the connection closes.
const KILL_CONNECTION: u8 = 2;

/// A live session as others see it.
pub struct SessionInfo {
    id: u64,
    user: String,
    host: Mutex<String>,
    activity: Mutex<Activity>,
    kill: AtomicU8,
    /// When the running statement must stop (`max_execution_time`), in
    /// microseconds after `born`; 0: no limit. Read by lock waits
    /// ([`cairndb::LockWaitHook`]).
    deadline_us: AtomicU64,
    /// When this session was registered (the base of `deadline_us`).
    born: Instant,
    /// Microseconds this session's statements waited for row locks.
    lock_wait_us: AtomicU64,
    /// Rows this session's statements read (the executor's count, for
    /// the slow log's `Rows_examined`): written only by the session's
    /// own thread, with a plain load and store.
    pub(crate) examined: AtomicU64,
    /// Called by `KILL CONNECTION` (the server closes the connection).
    on_kill: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    pub(crate) counters: Counters,
    /// The account (user, host pattern) a login admitted the session
    /// under, for `MAX_USER_CONNECTIONS`; set under the registry's lock.
    account: Mutex<Option<(String, String)>>,
}

impl SessionInfo {
    /// The session's id (`CONNECTION_ID()`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Sets what `KILL CONNECTION` calls to close the connection (the
    /// statement running, if any, stops at its next row either way).
    pub fn on_kill(&self, f: impl Fn() + Send + Sync + 'static) {
        *self.on_kill.lock() = Some(Box::new(f));
    }

    /// The client's host, as noted.
    pub fn host(&self) -> String {
        self.host.lock().clone()
    }

    /// Notes the client's host (`127.0.0.1:53422`), shown in the process
    /// list.
    pub fn set_host(&self, host: &str) {
        *self.host.lock() = host.to_string();
    }

    /// A statement starts: counted, shown in the process list. A pending
    /// `KILL QUERY` aimed at an earlier statement is dropped, as in
    /// MySQL.
    pub(crate) fn begin(&self, com: Com, text: Arc<str>, db: Option<&str>) -> Instant {
        let now = Instant::now();
        self.counters.questions.fetch_add(1, Ordering::Relaxed);
        self.count(com);
        let _ =
            self.kill
                .compare_exchange(KILL_QUERY, KILL_NONE, Ordering::Relaxed, Ordering::Relaxed);
        let mut a = self.activity.lock();
        a.info = Some(text);
        a.since = Some(now);
        if a.db.as_deref() != db {
            a.db = db.map(str::to_string);
        }
        now
    }

    /// Counts one statement of kind `com` (beside `begin`'s, for a
    /// prepared statement's own kind).
    pub(crate) fn count(&self, com: Com) {
        if let Some(c) = self.counters.com.get(com as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Adds one scan's `Handler_*` counts (the session's own thread).
    #[inline]
    pub(crate) fn add_handler(&self, counts: &HandlerCounts) {
        for (c, n) in self.counters.handler.iter().zip(counts.0) {
            if n != 0 {
                c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
            }
        }
    }

    /// Counts one `Handler_*` operation (the session's own thread).
    #[inline]
    pub(crate) fn handler_one(&self, h: Handler) {
        if let Some(c) = self.counters.handler.get(h as usize) {
            c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
    }

    /// A sort wrote a temporary file and merged it in `passes` passes.
    pub(crate) fn count_spill(&self, passes: u64) {
        self.counters.tmp_files.fetch_add(1, Ordering::Relaxed);
        self.counters
            .sort_merge_passes
            .fetch_add(passes, Ordering::Relaxed);
    }

    /// An operator of the running statement held rows as MySQL holds them
    /// in an internal temporary table (`Created_tmp_tables`).
    pub(crate) fn count_tmp_table(&self) {
        let c = &self.counters.tmp_tables;
        c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// The statement that began at `started` ended; `slow` says whether
    /// it took longer than `long_query_time`.
    pub(crate) fn end(&self, slow: bool) {
        if slow {
            self.counters.slow_queries.fetch_add(1, Ordering::Relaxed);
        }
        let mut a = self.activity.lock();
        a.info = None;
        a.since = Some(Instant::now());
    }

    /// Counts bytes the server read from (`received`) and wrote to
    /// (`sent`) this session's client (`Bytes_received`, `Bytes_sent`).
    pub fn add_traffic(&self, received: u64, sent: u64) {
        let c = &self.counters;
        c.bytes_received.fetch_add(received, Ordering::Relaxed);
        c.bytes_sent.fetch_add(sent, Ordering::Relaxed);
    }

    /// Error 1317 if the running statement was killed.
    pub(crate) fn interrupted(&self) -> bool {
        self.kill.load(Ordering::Relaxed) != KILL_NONE
    }

    /// Whether the connection was killed (it should close).
    pub fn connection_killed(&self) -> bool {
        self.kill.load(Ordering::Relaxed) == KILL_CONNECTION
    }

    /// Arms (`Some`) or clears the running statement's time limit as lock
    /// waits see it.
    pub(crate) fn set_deadline(&self, deadline: Option<Instant>) {
        let us = deadline.map_or(0, |d| {
            (d.saturating_duration_since(self.born).as_micros() as u64).max(1)
        });
        self.deadline_us.store(us, Ordering::Relaxed);
    }

    /// Whether the running statement is past its time limit.
    pub(crate) fn past_deadline(&self) -> bool {
        let us = self.deadline_us.load(Ordering::Relaxed);
        us != 0 && self.born.elapsed().as_micros() as u64 >= us
    }

    /// Time this session's statements have waited for row locks.
    pub(crate) fn lock_wait(&self) -> Duration {
        Duration::from_micros(self.lock_wait_us.load(Ordering::Relaxed))
    }

    /// Counts one row read by the executor (the session's own thread
    /// only: a load and a store, no read-modify-write).
    #[inline]
    pub(crate) fn examined_one(&self) {
        let n = self.examined.load(Ordering::Relaxed);
        self.examined.store(n.wrapping_add(1), Ordering::Relaxed);
    }
}

/// A waiting row lock of the session's transaction stops when the
/// statement is killed or past `max_execution_time`, and its time counts
/// toward the slow log's `Lock_time`.
impl cairndb::LockWaitHook for SessionInfo {
    fn interrupted(&self) -> bool {
        self.interrupted() || self.past_deadline()
    }

    fn waited(&self, waited: Duration) {
        self.lock_wait_us
            .fetch_add(waited.as_micros() as u64, Ordering::Relaxed);
    }
}

/// A row of the process list.
#[derive(Debug, Clone)]
pub struct Process {
    /// Session id.
    pub id: u64,
    /// Account user name.
    pub user: String,
    /// Client host and port.
    pub host: String,
    /// Current database.
    pub db: Option<String>,
    /// `Query` while a statement runs, else `Sleep`.
    pub command: &'static str,
    /// Seconds in that state.
    pub time: u64,
    /// The statement's text while it runs.
    pub info: Option<Arc<str>>,
}

impl Process {
    /// The row `SHOW PROCESSLIST` and `information_schema.PROCESSLIST`
    /// show: id, user, host, db, command, time, state, info (its first
    /// 100 characters unless `full`).
    pub fn row(&self, full: bool) -> Vec<crate::types::Value> {
        use crate::types::Value;
        let t = |s: &str| Value::Str(s.as_bytes().to_vec());
        let info = self.info.as_deref().map_or(Value::Null, |i| {
            if full {
                t(i)
            } else {
                t(&i.chars().take(100).collect::<String>())
            }
        });
        vec![
            Value::UInt(self.id),
            t(&self.user),
            t(&self.host),
            self.db.as_deref().map_or(Value::Null, t),
            t(self.command),
            Value::UInt(self.time),
            t(if self.info.is_some() { "executing" } else { "" }),
            info,
        ]
    }
}

/// Counters kept outside the SQL layer (the network server's), under
/// MySQL's status names; a name the registry also counts is added to its
/// value.
pub type StatusSource = Box<dyn Fn() -> Vec<(&'static str, u64)> + Send + Sync>;

/// Every live session of a database, and the totals of closed ones.
pub(crate) struct Registry {
    sessions: Mutex<BTreeMap<u64, Arc<SessionInfo>>>,
    retired: Counters,
    started: Instant,
    connections: AtomicU64,
    max_used: AtomicU64,
    /// The server's counters, if a server reports any.
    source: Mutex<Option<Arc<StatusSource>>>,
    /// Per account (user, host pattern) with an hourly limit: what it
    /// used in its current hour.
    hourly: Mutex<HashMap<(String, String), HourlyUse>>,
}

/// What an account used since `since` (its hour starts at the first use
/// counted and ends 3600 s later, as in MySQL).
#[derive(Debug, Clone, Copy)]
struct HourlyUse {
    since: Instant,
    questions: u64,
    updates: u64,
    connections: u64,
}

/// The hourly limits of an account (0: none) and which one a use went
/// over.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HourlyLimits {
    pub(crate) questions: u32,
    pub(crate) updates: u32,
    pub(crate) connections: u32,
}

impl HourlyLimits {
    pub(crate) fn any(&self) -> bool {
        self.questions > 0 || self.updates > 0 || self.connections > 0
    }
}

const HOUR: Duration = Duration::from_secs(3600);

impl HourlyUse {
    /// An hour starting at `now` with nothing used.
    fn starting(now: Instant) -> HourlyUse {
        HourlyUse {
            since: now,
            questions: 0,
            updates: 0,
            connections: 0,
        }
    }
}

impl Registry {
    pub(crate) fn new() -> Registry {
        Registry {
            sessions: Mutex::new(BTreeMap::new()),
            retired: Counters::default(),
            started: Instant::now(),
            connections: AtomicU64::new(0),
            max_used: AtomicU64::new(0),
            source: Mutex::new(None),
            hourly: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one use of an account with hourly `limits`: a login
    /// (`login`) or a statement (`update`: one that changes data). Err
    /// names the resource (MySQL's name) and its limit when this use
    /// would go over it; a refused use is not counted.
    pub(crate) fn charge_hourly(
        &self,
        account: (&str, &str),
        limits: HourlyLimits,
        login: bool,
        update: bool,
    ) -> Result<(), (&'static str, u32)> {
        let mut m = self.hourly.lock();
        let now = Instant::now();
        let u = m
            .entry((account.0.to_string(), account.1.to_string()))
            .or_insert_with(|| HourlyUse::starting(now));
        if now.duration_since(u.since) >= HOUR {
            *u = HourlyUse::starting(now);
        }
        let over = |used: u64, limit: u32| limit > 0 && used >= u64::from(limit);
        if login {
            if over(u.connections, limits.connections) {
                return Err(("max_connections_per_hour", limits.connections));
            }
            u.connections += 1;
            return Ok(());
        }
        if over(u.questions, limits.questions) {
            return Err(("max_questions", limits.questions));
        }
        if update && over(u.updates, limits.updates) {
            return Err(("max_updates", limits.updates));
        }
        u.questions += 1;
        if update {
            u.updates += 1;
        }
        Ok(())
    }

    /// Starts the hourly counts again: of one account (its limits were
    /// set), or of every account (`FLUSH USER_RESOURCES`, `FLUSH
    /// PRIVILEGES`).
    pub(crate) fn reset_hourly(&self, account: Option<(&str, &str)>) {
        let mut m = self.hourly.lock();
        match account {
            Some((u, h)) => {
                m.remove(&(u.to_string(), h.to_string()));
            }
            None => m.clear(),
        }
    }

    /// Sets where the server's own counters are read.
    pub(crate) fn set_source(&self, source: Option<StatusSource>) {
        *self.source.lock() = source.map(Arc::new);
    }

    /// Registers a new session.
    pub(crate) fn add(&self, id: u64, user: &str) -> Arc<SessionInfo> {
        let info = Arc::new(SessionInfo {
            id,
            user: user.to_string(),
            host: Mutex::new("localhost".into()),
            activity: Mutex::new(Activity {
                since: Some(Instant::now()),
                ..Default::default()
            }),
            kill: AtomicU8::new(KILL_NONE),
            deadline_us: AtomicU64::new(0),
            born: Instant::now(),
            lock_wait_us: AtomicU64::new(0),
            examined: AtomicU64::new(0),
            on_kill: Mutex::new(None),
            counters: Counters::default(),
            account: Mutex::new(None),
        });
        let n = {
            let mut m = self.sessions.lock();
            m.insert(id, info.clone());
            m.len() as u64
        };
        self.connections.fetch_add(1, Ordering::Relaxed);
        self.max_used.fetch_max(n, Ordering::Relaxed);
        info
    }

    /// Admits session `id` under account `account`: false when `limit`
    /// (not 0) sessions of the account are open already. Counting and
    /// admitting happen under one lock, so concurrent logins cannot both
    /// take the last place.
    pub(crate) fn admit(&self, id: u64, account: (&str, &str), limit: u32) -> bool {
        let m = self.sessions.lock();
        if limit > 0 {
            let open = m
                .values()
                .filter(|s| {
                    s.account
                        .lock()
                        .as_ref()
                        .is_some_and(|(u, h)| u == account.0 && h == account.1)
                })
                .count();
            if open >= limit as usize {
                return false;
            }
        }
        if let Some(info) = m.get(&id) {
            *info.account.lock() = Some((account.0.to_string(), account.1.to_string()));
        }
        true
    }

    /// A session closed: its counts join the retired totals.
    pub(crate) fn remove(&self, id: u64) {
        if let Some(info) = self.sessions.lock().remove(&id) {
            self.retired.absorb(&info.counters);
        }
    }

    /// The user name of session `id`, if it is live.
    pub(crate) fn owner(&self, id: u64) -> Option<String> {
        self.sessions.lock().get(&id).map(|s| s.user.clone())
    }

    /// `KILL`: marks session `id`; false if there is none.
    pub(crate) fn kill(&self, id: u64, connection: bool) -> bool {
        let Some(info) = self.sessions.lock().get(&id).cloned() else {
            return false;
        };
        let how = if connection {
            KILL_CONNECTION
        } else {
            KILL_QUERY
        };
        info.kill.fetch_max(how, Ordering::Relaxed);
        if connection {
            if let Some(f) = info.on_kill.lock().as_ref() {
                f();
            }
        }
        true
    }

    /// The process list, by id.
    pub(crate) fn list(&self) -> Vec<Process> {
        let now = Instant::now();
        let m = self.sessions.lock();
        m.values()
            .map(|s| {
                let a = s.activity.lock();
                Process {
                    id: s.id,
                    user: s.user.clone(),
                    host: s.host.lock().clone(),
                    db: a.db.clone(),
                    command: if a.info.is_some() { "Query" } else { "Sleep" },
                    time: a
                        .since
                        .map_or(0, |t| now.saturating_duration_since(t).as_secs()),
                    info: a.info.clone(),
                }
            })
            .collect()
    }

    /// Global status variables (name, value), MySQL's names, sorted.
    pub(crate) fn status(&self) -> Vec<(&'static str, u64)> {
        let (running, connected, mut sums) = {
            let m = self.sessions.lock();
            let mut sums = Sums::default();
            self.retired.add_to(&mut sums);
            let mut running = 0;
            for s in m.values() {
                s.counters.add_to(&mut sums);
                if s.activity.lock().info.is_some() {
                    running += 1;
                }
            }
            (running, m.len() as u64, sums)
        };
        let mut v: Vec<(&'static str, u64)> = vec![
            ("Bytes_received", sums.bytes_received),
            ("Bytes_sent", sums.bytes_sent),
            ("Connections", self.connections.load(Ordering::Relaxed)),
            // Held rows never go to disk as a table: past
            // max_session_mem_used the statement fails (1290), and a
            // sort's spill is a temporary file (Created_tmp_files).
            ("Created_tmp_disk_tables", 0),
            ("Created_tmp_files", sums.tmp_files),
            ("Created_tmp_tables", sums.tmp_tables),
            (
                "Max_used_connections",
                self.max_used.load(Ordering::Relaxed),
            ),
            ("Queries", sums.questions),
            ("Questions", sums.questions),
            ("Slow_queries", sums.slow_queries),
            ("Sort_merge_passes", sums.sort_merge_passes),
            ("Threads_connected", connected),
            ("Threads_running", running),
            ("Uptime", self.started.elapsed().as_secs()),
        ];
        for (name, n) in COM_NAMES.iter().zip(sums.com.iter_mut()) {
            v.push((name, std::mem::take(n)));
        }
        for (name, n) in HANDLER_NAMES.iter().zip(sums.handler.iter_mut()) {
            v.push((name, std::mem::take(n)));
        }
        let source = self.source.lock().clone();
        if let Some(f) = source {
            for (name, value) in f() {
                match v.iter_mut().find(|x| x.0 == name) {
                    Some(x) => x.1 += value,
                    None => v.push((name, value)),
                }
            }
        }
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// One session's own status (`SHOW SESSION STATUS`).
    pub(crate) fn session_status(&self, info: &SessionInfo) -> Vec<(&'static str, u64)> {
        let mut sums = Sums::default();
        info.counters.add_to(&mut sums);
        let mut v = self.status();
        for (name, value) in &mut v {
            match *name {
                "Queries" | "Questions" => *value = sums.questions,
                "Slow_queries" => *value = sums.slow_queries,
                "Bytes_received" => *value = sums.bytes_received,
                "Bytes_sent" => *value = sums.bytes_sent,
                "Created_tmp_files" => *value = sums.tmp_files,
                "Created_tmp_tables" => *value = sums.tmp_tables,
                "Sort_merge_passes" => *value = sums.sort_merge_passes,
                _ => {
                    if let Some(i) = COM_NAMES.iter().position(|n| n == name) {
                        *value = sums.com.get(i).copied().unwrap_or(0);
                    } else if let Some(i) = HANDLER_NAMES.iter().position(|n| n == name) {
                        *value = sums.handler.get(i).copied().unwrap_or(0);
                    }
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_kinds_are_read_from_the_first_words() {
        assert_eq!(Com::of("  /* x */ select 1"), Com::Select);
        assert_eq!(Com::of("INSERT INTO t SELECT * FROM u"), Com::InsertSelect);
        assert_eq!(Com::of("insert into t values (1)"), Com::Insert);
        assert_eq!(Com::of("CREATE UNIQUE INDEX i ON t (a)"), Com::CreateIndex);
        assert_eq!(Com::of("drop schema d"), Com::DropDb);
        assert_eq!(Com::of("START TRANSACTION"), Com::Begin);
        assert_eq!(Com::of(""), Com::Other);
    }

    #[test]
    fn counters_survive_a_session_closing() {
        let r = Registry::new();
        let a = r.add(1, "root");
        let b = r.add(2, "app");
        a.begin(Com::Select, "SELECT 1".into(), None);
        a.end(false);
        b.begin(Com::Insert, "INSERT".into(), Some("d"));
        let get = |r: &Registry, n: &str| {
            r.status()
                .iter()
                .find(|x| x.0 == n)
                .map_or(u64::MAX, |x| x.1)
        };
        assert_eq!(get(&r, "Questions"), 2);
        assert_eq!(get(&r, "Threads_connected"), 2);
        assert_eq!(get(&r, "Threads_running"), 1);
        r.remove(1);
        assert_eq!(get(&r, "Questions"), 2);
        assert_eq!(get(&r, "Com_select"), 1);
        assert_eq!(get(&r, "Threads_connected"), 1);
        assert_eq!(get(&r, "Max_used_connections"), 2);
        assert_eq!(get(&r, "Connections"), 2);
        let list = r.list();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].command, "Query");
        assert_eq!(list[0].db.as_deref(), Some("d"));
    }

    #[test]
    fn kill_query_is_dropped_at_the_next_statement_kill_connection_is_not() {
        let r = Registry::new();
        let a = r.add(1, "root");
        assert!(r.kill(1, false));
        assert!(a.interrupted());
        a.begin(Com::Select, "SELECT 1".into(), None);
        assert!(!a.interrupted());
        assert!(r.kill(1, true));
        a.begin(Com::Select, "SELECT 1".into(), None);
        assert!(a.interrupted() && a.connection_killed());
        assert!(!r.kill(9, false));
    }
}
