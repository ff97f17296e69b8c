//! Accounts and privileges: the account records kept in the data
//! dictionary (`docs/format/sql-keys.md`, "Accounts"), their in-memory
//! copy, the checks statements make against it, and the account
//! statements (CREATE/ALTER/DROP/RENAME USER, SET PASSWORD, GRANT,
//! REVOKE, SHOW GRANTS), parsed here by hand since `sqlparser` reads
//! few of them.
//!
//! Only hashes are stored: `SHA1(SHA1(password))` for
//! `mysql_native_password` (what verifying its scramble needs), MySQL's
//! salted SHA-256 crypt string for `caching_sha2_password`
//! (`sha2crypt.rs`; a data directory written before that keeps 32-byte
//! `SHA256(SHA256(password))` values, still verified, replaced when the
//! password is next set). An empty hash means an empty password.
//!
//! Invariants: the in-memory [`Acl`] equals the dictionary's account
//! entries once an account statement returns; each account statement
//! writes every entry it changes in one synced transaction, so after a
//! crash the accounts are as before or after it. Accounts are kept in
//! MySQL's match order (the most specific host first), so a login takes
//! the first account that matches.
//!
//! Locking: `SqlDb::acl` (an `RwLock<Arc<Acl>>`) is read to clone the
//! `Arc` and released at once; account statements are serialised by
//! `SqlDb::ddl_lock` and take the write lock only to install their
//! result, then bump `SqlDb::acl_epoch` (and the schema epoch, so that
//! cached plans, whose privileges were checked when they were compiled,
//! are compiled and checked again). A session keeps its account's
//! record and the epoch it was read at, and reads it again only when the
//! epoch moved: a statement's check is an atomic load and bit tests,
//! with no lock and no allocation when the privilege is global.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cairndb::{ReadOptions, TransactionDb};
use sha1::{Digest, Sha1};
use sha2::Sha256;

use crate::catalog::{self, DICT_INDEX_ID};
use crate::context::StmtCx;
use crate::db::{put_dict, SqlDb};
use crate::error::{SqlError, SqlResult};
use crate::keys;
use crate::output::{ColumnInfo, Output};
use crate::preparse::{tokens, Tok};
use crate::types::Value;

// Privilege bits, as stored (docs/format/sql-keys.md, "Accounts").
/// SELECT.
pub(crate) const SELECT: u32 = 1;
/// INSERT.
pub(crate) const INSERT: u32 = 1 << 1;
/// UPDATE.
pub(crate) const UPDATE: u32 = 1 << 2;
/// DELETE.
pub(crate) const DELETE: u32 = 1 << 3;
/// CREATE.
pub(crate) const CREATE: u32 = 1 << 4;
/// DROP.
pub(crate) const DROP: u32 = 1 << 5;
/// RELOAD.
pub(crate) const RELOAD: u32 = 1 << 6;
/// PROCESS.
pub(crate) const PROCESS: u32 = 1 << 7;
/// REFERENCES.
pub(crate) const REFERENCES: u32 = 1 << 8;
/// INDEX.
pub(crate) const INDEX: u32 = 1 << 9;
/// ALTER.
pub(crate) const ALTER: u32 = 1 << 10;
/// SHOW DATABASES.
pub(crate) const SHOW_DATABASES: u32 = 1 << 11;
/// SUPER.
pub(crate) const SUPER: u32 = 1 << 12;
/// LOCK TABLES.
pub(crate) const LOCK_TABLES: u32 = 1 << 13;
/// REPLICATION SLAVE.
pub(crate) const REPLICATION_SLAVE: u32 = 1 << 14;
/// REPLICATION CLIENT.
pub(crate) const REPLICATION_CLIENT: u32 = 1 << 15;
/// CREATE VIEW.
pub(crate) const CREATE_VIEW: u32 = 1 << 16;
/// SHOW VIEW.
pub(crate) const SHOW_VIEW: u32 = 1 << 17;
/// CREATE USER.
pub(crate) const CREATE_USER: u32 = 1 << 18;
/// CONNECTION_ADMIN (a dynamic privilege in MySQL).
pub(crate) const CONNECTION_ADMIN: u32 = 1 << 19;
/// GRANT OPTION.
pub(crate) const GRANT_OPTION: u32 = 1 << 31;

/// Static privileges in the order MySQL prints them, with the levels
/// they may be granted at.
const STATIC: [(u32, &str, u8); 19] = [
    (SELECT, "SELECT", G | D | T | C),
    (INSERT, "INSERT", G | D | T | C),
    (UPDATE, "UPDATE", G | D | T | C),
    (DELETE, "DELETE", G | D | T),
    (CREATE, "CREATE", G | D | T),
    (DROP, "DROP", G | D | T),
    (RELOAD, "RELOAD", G),
    (PROCESS, "PROCESS", G),
    (REFERENCES, "REFERENCES", G | D | T | C),
    (INDEX, "INDEX", G | D | T),
    (ALTER, "ALTER", G | D | T),
    (SHOW_DATABASES, "SHOW DATABASES", G),
    (SUPER, "SUPER", G),
    (LOCK_TABLES, "LOCK TABLES", G | D),
    (REPLICATION_SLAVE, "REPLICATION SLAVE", G),
    (REPLICATION_CLIENT, "REPLICATION CLIENT", G),
    (CREATE_VIEW, "CREATE VIEW", G | D | T),
    (SHOW_VIEW, "SHOW VIEW", G | D | T),
    (CREATE_USER, "CREATE USER", G),
];

const G: u8 = 1;
const D: u8 = 2;
const T: u8 = 4;
const C: u8 = 8;

/// Every privilege that may be granted at `level` (without GRANT OPTION).
fn all_at(level: u8) -> u32 {
    let s = STATIC
        .iter()
        .filter(|p| p.2 & level != 0)
        .fold(0, |a, p| a | p.0);
    if level == G {
        s | CONNECTION_ADMIN
    } else {
        s
    }
}

/// A privilege's name (the first of `bits`), for messages.
fn priv_name(bits: u32) -> &'static str {
    if bits & GRANT_OPTION != 0 && bits & !GRANT_OPTION == 0 {
        return "GRANT";
    }
    STATIC
        .iter()
        .find(|p| p.0 & bits != 0)
        .map_or("CONNECTION_ADMIN", |p| p.1)
}

/// An authentication plugin of an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Plugin {
    /// `mysql_native_password`: SHA1(SHA1(password)) stored.
    #[serde(rename = "mysql_native_password")]
    Native,
    /// `caching_sha2_password`: a SHA-256 crypt string stored.
    #[serde(rename = "caching_sha2_password")]
    CachingSha2,
}

impl Plugin {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Plugin::Native => "mysql_native_password",
            Plugin::CachingSha2 => "caching_sha2_password",
        }
    }

    fn parse(name: &str) -> SqlResult<Plugin> {
        match name.to_ascii_lowercase().as_str() {
            "mysql_native_password" => Ok(Plugin::Native),
            "caching_sha2_password" => Ok(Plugin::CachingSha2),
            _ => Err(SqlError::new(
                1524,
                "HY000",
                format!("Plugin '{name}' is not loaded"),
            )),
        }
    }

    /// The stored hash of `password` (empty for an empty password).
    fn hash(self, password: &[u8]) -> Vec<u8> {
        if password.is_empty() {
            return Vec::new();
        }
        match self {
            Plugin::Native => Sha1::digest(Sha1::digest(password)).to_vec(),
            Plugin::CachingSha2 => crate::sha2crypt::hash(password),
        }
    }
}

/// The plugin of accounts created without `IDENTIFIED WITH` (MySQL 8.0's
/// default).
pub const DEFAULT_PLUGIN: Plugin = Plugin::CachingSha2;

/// What the protocol layer needs to log an account in.
#[derive(Debug, Clone)]
pub struct AccountAuth {
    /// The account's plugin.
    pub plugin: Plugin,
    /// The stored hash (20 bytes for native; for caching_sha2 a 70-byte
    /// crypt string, or 32 bytes from before salted strings); empty: the
    /// account has an empty password.
    pub hash: Vec<u8>,
    /// caching_sha2: `SHA256(SHA256(password))` when known (a 32-byte
    /// stored hash, or one this process has set or verified), which
    /// verifies a fast-auth scramble; None: a scramble gets full
    /// authentication, whose password [`SqlDb::check_password`] checks.
    pub fast_sha2: Option<[u8; 32]>,
    /// `REQUIRE SSL`: a login over plain TCP is refused.
    pub require_ssl: bool,
    /// SUPER or CONNECTION_ADMIN: may take the connection kept beyond
    /// `max_connections`.
    pub connection_admin: bool,
}

/// A database-level grant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct DbGrant {
    pub(crate) db: String,
    pub(crate) privs: u32,
}

/// A column-level grant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ColumnGrant {
    pub(crate) column: String,
    pub(crate) privs: u32,
}

/// A table-level grant, with the grants on its columns.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct TableGrant {
    pub(crate) db: String,
    pub(crate) table: String,
    pub(crate) privs: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) columns: Vec<ColumnGrant>,
}

/// One account: its name, how it logs in, and its grants.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Account {
    pub(crate) user: String,
    /// The host pattern, lower-case (`%` and `_` are wildcards).
    pub(crate) host: String,
    pub(crate) plugin: Plugin,
    /// The plugin's hash of the password, hex; empty: no password.
    #[serde(default)]
    pub(crate) auth: String,
    #[serde(default)]
    pub(crate) require_ssl: bool,
    /// `ACCOUNT LOCK`: every login is refused (3118).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) locked: bool,
    /// `WITH MAX_USER_CONNECTIONS n`: sessions of the account open at
    /// once (0: no limit of its own).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) max_user_connections: u32,
    /// `WITH MAX_QUERIES_PER_HOUR n`: statements per hour (0: no limit).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) max_questions: u32,
    /// `WITH MAX_UPDATES_PER_HOUR n`: statements that change data per
    /// hour (0: no limit).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) max_updates: u32,
    /// `WITH MAX_CONNECTIONS_PER_HOUR n`: logins per hour (0: no limit).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) max_connections_per_hour: u32,
    /// Global privileges (GRANT OPTION included).
    #[serde(default)]
    pub(crate) global: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) dbs: Vec<DbGrant>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tables: Vec<TableGrant>,
}

impl Account {
    fn new(user: &str, host: &str, plugin: Plugin, password: &[u8]) -> Account {
        Account {
            user: user.to_string(),
            host: host.to_lowercase(),
            plugin,
            auth: hex(&plugin.hash(password)),
            require_ssl: false,
            locked: false,
            max_user_connections: 0,
            max_questions: 0,
            max_updates: 0,
            max_connections_per_hour: 0,
            global: 0,
            dbs: Vec::new(),
            tables: Vec::new(),
        }
    }

    /// Privileges at the database level on `db` (global ones included).
    pub(crate) fn on_db(&self, db: &str) -> u32 {
        self.global
            | self
                .dbs
                .iter()
                .filter(|g| g.db.eq_ignore_ascii_case(db))
                .fold(0, |a, g| a | g.privs)
    }

    /// Privileges on `db`.`table` (global and database ones included).
    pub(crate) fn on_table(&self, db: &str, table: &str) -> u32 {
        self.on_db(db)
            | self
                .tables
                .iter()
                .filter(|g| g.db.eq_ignore_ascii_case(db) && g.table.eq_ignore_ascii_case(table))
                .fold(0, |a, g| a | g.privs)
    }

    /// Privileges on one column of `db`.`table`, all levels included.
    pub(crate) fn on_column(&self, db: &str, table: &str, column: &str) -> u32 {
        self.on_table(db, table)
            | self
                .tables
                .iter()
                .filter(|g| g.db.eq_ignore_ascii_case(db) && g.table.eq_ignore_ascii_case(table))
                .flat_map(|g| g.columns.iter())
                .filter(|c| c.column.eq_ignore_ascii_case(column))
                .fold(0, |a, c| a | c.privs)
    }

    /// Whether the account holds some privilege on `db` or on something
    /// in it (what makes a database visible).
    fn sees_db(&self, db: &str) -> bool {
        self.global & !GRANT_OPTION != 0
            || self.dbs.iter().any(|g| g.db.eq_ignore_ascii_case(db))
            || self.tables.iter().any(|g| g.db.eq_ignore_ascii_case(db))
    }

    /// Whether the account holds some privilege on `db`.`table` or on
    /// one of its columns.
    fn sees_table(&self, db: &str, table: &str) -> bool {
        self.on_db(db) & !GRANT_OPTION != 0
            || self
                .tables
                .iter()
                .any(|g| g.db.eq_ignore_ascii_case(db) && g.table.eq_ignore_ascii_case(table))
    }

    fn auth(&self) -> AccountAuth {
        let hash = unhex(&self.auth).unwrap_or_default();
        let fast_sha2 = match self.plugin {
            Plugin::CachingSha2 => match <[u8; 32]>::try_from(hash.as_slice()) {
                Ok(legacy) => Some(legacy),
                Err(_) => crate::sha2crypt::cached(&hash),
            },
            Plugin::Native => None,
        };
        AccountAuth {
            plugin: self.plugin,
            hash,
            fast_sha2,
            require_ssl: self.require_ssl,
            connection_admin: self.global & (SUPER | CONNECTION_ADMIN) != 0,
        }
    }

    fn key(&self) -> Vec<u8> {
        account_key(&self.user, &self.host)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if b.len() % 2 == 1 {
        return None;
    }
    b.chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

const TAG_ACCOUNTS_MADE: u8 = b'A';
const TAG_ACCOUNT: u8 = b'U';

/// Key of the marker written with the first accounts: its presence means
/// the accounts were set up (and the bootstrap account is not made again).
pub(crate) fn accounts_made_key() -> Vec<u8> {
    let mut k = Vec::with_capacity(5);
    keys::put_index_id(&mut k, DICT_INDEX_ID);
    k.push(TAG_ACCOUNTS_MADE);
    k
}

/// Key of an account: `user ‖ 0x00 ‖ host` (user as given, host
/// lower-case).
pub(crate) fn account_key(user: &str, host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + user.len() + host.len());
    keys::put_index_id(&mut k, DICT_INDEX_ID);
    k.push(TAG_ACCOUNT);
    k.extend_from_slice(user.as_bytes());
    k.push(0);
    k.extend_from_slice(host.to_lowercase().as_bytes());
    k
}

/// Whether a dictionary key's tag is one of this module's.
pub(crate) fn is_acl_tag(tag: u8) -> bool {
    tag == TAG_ACCOUNT || tag == TAG_ACCOUNTS_MADE
}

/// The accounts, in match order.
#[derive(Debug, Default)]
pub(crate) struct Acl {
    /// The accounts were set up (the marker entry exists).
    pub(crate) made: bool,
    pub(crate) accounts: Vec<Arc<Account>>,
    /// Account entries that could not be read, each with why: left out
    /// (so those accounts cannot log in), reported at open.
    pub(crate) damaged: Vec<String>,
}

/// How specific a host pattern is: a literal host before any pattern,
/// then the later its first wildcard the more specific (`%` last).
fn host_rank(host: &str) -> (bool, usize) {
    match host.find(['%', '_']) {
        None => (true, 0),
        Some(p) => (false, p),
    }
}

impl Acl {
    /// Reads the account entries of the dictionary.
    pub(crate) fn load(db: &TransactionDb) -> SqlResult<Acl> {
        let (lower, upper) = keys::index_bounds(DICT_INDEX_ID);
        let mut it = db.db().iter(&ReadOptions {
            iterate_lower_bound: Some(lower.clone()),
            iterate_upper_bound: Some(upper),
            ..Default::default()
        })?;
        let mut acl = Acl::default();
        for tag in [TAG_ACCOUNTS_MADE, TAG_ACCOUNT] {
            let mut start = lower.clone();
            start.push(tag);
            it.seek(&start);
            while it.valid() && it.key().get(keys::INDEX_ID_LEN) == Some(&tag) {
                if tag == TAG_ACCOUNTS_MADE {
                    acl.made = true;
                } else {
                    match serde_json::from_slice::<Account>(it.value()) {
                        Ok(a) => acl.accounts.push(Arc::new(a)),
                        Err(e) => acl.damaged.push(format!(
                            "data dictionary entry {} is damaged: {e}",
                            it.key().escape_ascii()
                        )),
                    }
                }
                it.next();
            }
            it.status()?;
        }
        acl.sort();
        Ok(acl)
    }

    fn sort(&mut self) {
        self.accounts.sort_by(|a, b| {
            let (ra, rb) = (host_rank(&a.host), host_rank(&b.host));
            rb.cmp(&ra)
                .then_with(|| a.user.is_empty().cmp(&b.user.is_empty()))
                .then_with(|| a.host.cmp(&b.host))
                .then_with(|| a.user.cmp(&b.user))
        });
    }

    /// The account named exactly `user`@`host`.
    pub(crate) fn find(&self, user: &str, host: &str) -> Option<&Arc<Account>> {
        self.accounts
            .iter()
            .find(|a| a.user == user && a.host.eq_ignore_ascii_case(host))
    }

    /// The account `user` connecting from `client` logs in as: the first,
    /// in match order, whose host pattern matches and whose user is
    /// `user` or anonymous.
    pub(crate) fn login(&self, user: &str, client: &str) -> Option<&Arc<Account>> {
        let client = normal_client(client);
        let loopback = is_loopback(client);
        self.accounts.iter().find(|a| {
            (a.user == user || a.user.is_empty())
                && (like_host(&a.host, client)
                    || (loopback && (a.host == "localhost" || like_host(&a.host, "localhost"))))
        })
    }
}

/// A client address as the server gives it, IPv4-mapped IPv6 unmapped.
fn normal_client(client: &str) -> &str {
    client.strip_prefix("::ffff:").unwrap_or(client)
}

fn is_loopback(client: &str) -> bool {
    client == "localhost"
        || client
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The client's host as `USER()` and messages show it: `localhost` for
/// a loopback address.
pub(crate) fn client_shown(client: &str) -> String {
    let c = normal_client(client);
    if is_loopback(c) {
        "localhost".into()
    } else {
        c.to_string()
    }
}

/// SQL LIKE with `%` and `_`, ASCII case-insensitive, without escapes.
/// Iterative, with one backtrack point: linear in practice, and bounded
/// by `pattern.len() * s.len()`.
fn like_host(pattern: &str, s: &str) -> bool {
    let (p, s) = (pattern.as_bytes(), s.as_bytes());
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'%') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == b'_' || s.get(si).is_some_and(|x| x.eq_ignore_ascii_case(&c)) => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..)
        .is_some_and(|rest| rest.iter().all(|&c| c == b'%'))
}

/// Who a session is logged in as.
#[derive(Debug, Clone)]
pub(crate) struct Who {
    /// The user name the client gave.
    pub(crate) user: String,
    /// The client's host as shown (`localhost` for loopback).
    pub(crate) client: String,
    /// The account matched: its user (possibly anonymous) and host pattern.
    pub(crate) account_user: String,
    pub(crate) account_host: String,
}

impl SqlDb {
    /// The account `user` connecting from `client_host` (an IP address)
    /// logs in as, with what verifies its password; None if no account
    /// matches.
    pub fn lookup_account(&self, user: &str, client_host: &str) -> Option<AccountAuth> {
        let acl = self.acl.read().clone();
        acl.login(user, client_host).map(|a| a.auth())
    }

    /// Whether `password` is the password of the account `user` connecting
    /// from `client_host` logs in as (a full authentication). A right
    /// caching_sha2 password also lets later scrambles of this process
    /// through fast authentication.
    pub fn check_password(&self, user: &str, client_host: &str, password: &[u8]) -> bool {
        let acl = self.acl.read().clone();
        let Some(a) = acl.login(user, client_host) else {
            // As long as a wrong password takes: no tell-tale timing.
            return crate::sha2crypt::verify_decoy(password);
        };
        let stored = unhex(&a.auth).unwrap_or_default();
        if stored.is_empty() || password.is_empty() {
            return stored.is_empty() && password.is_empty();
        }
        let same = |x: &[u8], y: &[u8]| {
            x.len() == y.len() && x.iter().zip(y).fold(0u8, |acc, (p, q)| acc | (p ^ q)) == 0
        };
        match a.plugin {
            Plugin::Native => same(&Sha1::digest(Sha1::digest(password)), &stored),
            Plugin::CachingSha2 if stored.len() == 32 => {
                same(&Sha256::digest(Sha256::digest(password)), &stored)
            }
            Plugin::CachingSha2 => crate::sha2crypt::verify(&stored, password),
        }
    }

    /// Whether some account named `root` has an empty password.
    pub fn root_password_is_empty(&self) -> bool {
        self.acl
            .read()
            .accounts
            .iter()
            .any(|a| a.user == "root" && a.auth.is_empty())
    }

    /// At the first start of a data directory without accounts, makes
    /// `root`@`localhost` with every privilege WITH GRANT OPTION and
    /// `root_password` (empty allowed). Returns whether it did.
    pub fn bootstrap_accounts(&self, root_password: &str) -> SqlResult<bool> {
        let _ddl = self.ddl_lock.lock();
        let acl = self.acl.read().clone();
        if acl.made {
            return Ok(false);
        }
        check_password_length(DEFAULT_PLUGIN, root_password)?;
        let mut map = account_map(&acl);
        if map.is_empty() {
            let mut root = Account::new(
                "root",
                "localhost",
                DEFAULT_PLUGIN,
                root_password.as_bytes(),
            );
            root.global = all_at(G) | GRANT_OPTION;
            map.insert(("root".into(), "localhost".into()), root);
        }
        self.write_accounts(&acl, map)?;
        Ok(true)
    }

    /// Makes `user`@`%` with `password` and every privilege WITH GRANT
    /// OPTION unless an account of that user name exists (the deprecated
    /// `--user=NAME:PASSWORD`). Returns whether it made it.
    pub fn ensure_account(&self, user: &str, password: &str) -> SqlResult<bool> {
        check_user_name(user)?;
        let _ddl = self.ddl_lock.lock();
        let acl = self.acl.read().clone();
        if acl.accounts.iter().any(|a| a.user == user) {
            return Ok(false);
        }
        if password.is_empty() {
            return Err(SqlError::new(
                1819,
                "HY000",
                format!(
                    "user = {user}: an account with every privilege needs a password \
                     (user = {user}:PASSWORD)"
                ),
            ));
        }
        check_password_length(DEFAULT_PLUGIN, password)?;
        let mut map = account_map(&acl);
        let mut a = Account::new(user, "%", DEFAULT_PLUGIN, password.as_bytes());
        a.global = all_at(G) | GRANT_OPTION;
        map.insert((user.to_string(), "%".into()), a);
        self.write_accounts(&acl, map)?;
        Ok(true)
    }

    /// Writes the difference between `old` and `new` in one synced
    /// transaction (with the marker and the dictionary version), then
    /// installs `new` and bumps the epochs.
    fn write_accounts(&self, old: &Acl, new: BTreeMap<(String, String), Account>) -> SqlResult<()> {
        let old_map = account_map(old);
        self.with_txn(|t| {
            put_dict(t, &catalog::dict_version_key(), &[catalog::DICT_VERSION])?;
            put_dict(t, &accounts_made_key(), &[1])?;
            for (k, a) in &old_map {
                if !new.contains_key(k) {
                    t.delete(&a.key())?;
                }
            }
            for (k, a) in &new {
                if old_map.get(k) != Some(a) {
                    let v = serde_json::to_vec(a)
                        .map_err(|e| SqlError::internal(format!("account record: {e}")))?;
                    put_dict(t, &a.key(), &v)?;
                }
            }
            Ok(())
        })?;
        let mut acl = Acl {
            made: true,
            accounts: new.into_values().map(Arc::new).collect(),
            damaged: old.damaged.clone(),
        };
        acl.sort();
        *self.acl.write() = Arc::new(acl);
        self.acl_epoch.fetch_add(1, Ordering::AcqRel);
        self.schema_epoch.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

fn account_map(acl: &Acl) -> BTreeMap<(String, String), Account> {
    acl.accounts
        .iter()
        .map(|a| ((a.user.clone(), a.host.clone()), (**a).clone()))
        .collect()
}

// ---- Sessions and checks ----

/// Reads the session's account record again if accounts changed since
/// it was read (an atomic load otherwise).
pub(crate) fn refresh(s: &mut StmtCx) {
    let Some(who) = &s.who else {
        return;
    };
    let epoch = s.db.acl_epoch.load(Ordering::Acquire);
    if epoch == s.grants_epoch {
        return;
    }
    let acl = s.db.acl.read().clone();
    s.grants = acl.find(&who.account_user, &who.account_host).cloned();
    s.grants_epoch = epoch;
}

/// Logs a session in: the account `user` from `client` matches, or 1045.
pub(crate) fn login(db: &SqlDb, user: &str, client: &str) -> SqlResult<(Who, Arc<Account>, u64)> {
    let epoch = db.acl_epoch.load(Ordering::Acquire);
    let acl = db.acl.read().clone();
    let shown = client_shown(client);
    let a = acl.login(user, client).cloned().ok_or_else(|| {
        SqlError::new(
            1045,
            "28000",
            format!("Access denied for user '{user}'@'{shown}' (using password: NO)"),
        )
    })?;
    if a.locked {
        return Err(SqlError::new(
            3118,
            "HY000",
            format!("Access denied for user '{user}'@'{shown}'. Account is locked."),
        ));
    }
    Ok((
        Who {
            user: user.to_string(),
            client: shown,
            account_user: a.user.clone(),
            account_host: a.host.clone(),
        },
        a,
        epoch,
    ))
}

/// The session's `'user'@'host'` for messages (the user given, the
/// client's host), as MySQL words its denials.
fn denied_to(who: &Who) -> String {
    format!("'{}'@'{}'", who.user, who.client)
}

/// 1142: `need` missing on `table`.
fn table_denied(who: &Who, need: u32, table: &str) -> SqlError {
    SqlError::new(
        1142,
        "42000",
        format!(
            "{} command denied to user {} for table '{table}'",
            priv_name(need),
            denied_to(who)
        ),
    )
}

/// 1044: no access to database `db`.
fn db_denied(who: &Who, db: &str) -> SqlError {
    SqlError::new(
        1044,
        "42000",
        format!(
            "Access denied for user {} to database '{db}'",
            denied_to(who)
        ),
    )
}

/// 1227: a global privilege missing.
fn global_denied(what: &str) -> SqlError {
    SqlError::new(
        1227,
        "42000",
        format!(
            "Access denied; you need (at least one of) the {what} privilege(s) for this operation"
        ),
    )
}

/// The session's privileges on `db`.`table` (every one for an internal
/// session).
fn have_table(s: &StmtCx, db: &str, table: &str, need: u32) -> u32 {
    match (&s.who, &s.grants) {
        (None, _) => u32::MAX,
        (Some(_), None) => 0,
        (Some(_), Some(a)) if a.global & need == need => a.global,
        (Some(_), Some(a)) => a.on_table(db, table),
    }
}

/// Checks that the session holds every privilege of `need` on
/// `db`.`table` at some level: 1142 otherwise.
pub(crate) fn check_table(s: &StmtCx, db: &str, table: &str, need: u32) -> SqlResult<()> {
    let Some(who) = &s.who else {
        return Ok(());
    };
    let missing = need & !have_table(s, db, table, need);
    if missing == 0 {
        return Ok(());
    }
    Err(table_denied(who, missing, table))
}

/// Checks `need` on the columns `cols` of `db`.`table` where the table
/// level lacks it: 1143 naming the first column without it, or 1142 when
/// the table has no column grant at all for it.
pub(crate) fn check_columns<'a>(
    s: &StmtCx,
    db: &str,
    table: &str,
    need: u32,
    cols: impl Iterator<Item = &'a str>,
) -> SqlResult<()> {
    let Some(who) = &s.who else {
        return Ok(());
    };
    if have_table(s, db, table, need) & need == need {
        return Ok(());
    }
    let Some(a) = &s.grants else {
        return Err(table_denied(who, need, table));
    };
    let has_column_grant = a.tables.iter().any(|g| {
        g.db.eq_ignore_ascii_case(db)
            && g.table.eq_ignore_ascii_case(table)
            && g.columns.iter().any(|c| c.privs & need != 0)
    });
    if !has_column_grant {
        return Err(table_denied(who, need, table));
    }
    for c in cols {
        if a.on_column(db, table, c) & need != need {
            return Err(SqlError::new(
                1143,
                "42000",
                format!(
                    "{} command denied to user {} for column '{c}' in table '{table}'",
                    priv_name(need),
                    denied_to(who)
                ),
            ));
        }
    }
    Ok(())
}

/// `LOCK TABLES` of `tables` (each with its database, or the current
/// one): the LOCK TABLES privilege on each table's database (1044) and
/// SELECT on each table (1142), then each table or view must exist
/// (1146), as MySQL checks them.
pub(crate) fn check_lock_tables(s: &StmtCx, tables: &[(Option<String>, String)]) -> SqlResult<()> {
    for (db, table) in tables {
        let db = match db.as_deref().or(s.current_db.as_deref()) {
            Some(d) => d,
            None => return Err(SqlError::new(1046, "3D000", "No database selected")),
        };
        check_db(s, db, LOCK_TABLES)?;
        check_table(s, db, table, SELECT)?;
        // A view may be locked too (mysqldump locks every table and view
        // it dumps).
        let is_view =
            s.db.catalog
                .read()
                .database(db)
                .is_some_and(|d| d.views.contains_key(&table.to_lowercase()));
        if !is_view {
            s.db.table(db, table)?;
        }
    }
    Ok(())
}

/// Whether the account holds column grants of `need` on `db`.`table`.
pub(crate) fn has_column_grant(s: &StmtCx, db: &str, table: &str, need: u32) -> bool {
    s.grants.as_ref().is_some_and(|a| {
        a.tables.iter().any(|g| {
            g.db.eq_ignore_ascii_case(db)
                && g.table.eq_ignore_ascii_case(table)
                && g.columns.iter().any(|c| c.privs & need != 0)
        })
    })
}

/// Whether the table-level check of `need` on `db`.`table` passes (no
/// column grant consulted).
pub(crate) fn has_table(s: &StmtCx, db: &str, table: &str, need: u32) -> bool {
    s.who.is_none() || have_table(s, db, table, need) & need == need
}

/// Checks `need` at the database level on `db`: 1044 otherwise.
pub(crate) fn check_db(s: &StmtCx, db: &str, need: u32) -> SqlResult<()> {
    let Some(who) = &s.who else {
        return Ok(());
    };
    let have = s.grants.as_ref().map_or(0, |a| a.on_db(db));
    if have & need == need {
        return Ok(());
    }
    Err(db_denied(who, db))
}

/// Whether the session holds one of the global privileges `any`.
pub(crate) fn has_global(s: &StmtCx, any: u32) -> bool {
    match (&s.who, &s.grants) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(_), Some(a)) => a.global & any != 0,
    }
}

/// Checks one of the global privileges `any` (named `what`): 1227.
pub(crate) fn check_global(s: &StmtCx, any: u32, what: &str) -> SqlResult<()> {
    if has_global(s, any) {
        Ok(())
    } else {
        Err(global_denied(what))
    }
}

/// `USE db`: some privilege on the database or in it, else 1044.
pub(crate) fn check_use(s: &StmtCx, db: &str) -> SqlResult<()> {
    match &s.who {
        None => Ok(()),
        Some(_) if sees_db(s, db) => Ok(()),
        Some(who) => Err(db_denied(who, db)),
    }
}

/// `SHOW CREATE TABLE`, `SHOW COLUMNS`, `SHOW INDEX`: some privilege on
/// the table, else 1142 (before the table is looked up, so that a
/// denial does not tell whether it exists).
pub(crate) fn check_sees_table(s: &StmtCx, db: &str, table: &str) -> SqlResult<()> {
    match &s.who {
        None => Ok(()),
        Some(_) if sees_table(s, db, table) => Ok(()),
        Some(who) => Err(SqlError::new(
            1142,
            "42000",
            format!(
                "SHOW command denied to user {} for table '{table}'",
                denied_to(who)
            ),
        )),
    }
}

/// Whether `SHOW DATABASES` and `information_schema` show `db`.
pub(crate) fn sees_db(s: &StmtCx, db: &str) -> bool {
    match (&s.who, &s.grants) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(_), Some(a)) => a.global & SHOW_DATABASES != 0 || a.sees_db(db),
    }
}

/// Whether `SHOW TABLES` and `information_schema` show `db`.`table`.
pub(crate) fn sees_table(s: &StmtCx, db: &str, table: &str) -> bool {
    match (&s.who, &s.grants) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(_), Some(a)) => a.sees_table(db, table),
    }
}

/// Whether the session may see and kill sessions of `user` other than
/// its own user name: PROCESS to see them, SUPER or CONNECTION_ADMIN to
/// kill them.
pub(crate) fn owns(s: &StmtCx, user: &str) -> bool {
    match &s.who {
        None => true,
        Some(w) => w.user == user,
    }
}

/// `CURRENT_USER()`: the account matched, `user@host`.
pub(crate) fn current_user(s: &StmtCx) -> String {
    match &s.who {
        None => format!("{}@localhost", s.user),
        Some(w) => format!("{}@{}", w.account_user, w.account_host),
    }
}

/// `USER()`: the user given and the client's host.
pub(crate) fn session_user(s: &StmtCx) -> String {
    match &s.who {
        None => format!("{}@localhost", s.user),
        Some(w) => format!("{}@{}", w.user, w.client),
    }
}

// ---- Statements ----

/// An account named in a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserSpec {
    /// `'user'@'host'` (host `%` when left out).
    Named(String, String),
    /// `CURRENT_USER` / `CURRENT_USER()` / `USER()`.
    Current,
}

/// `IDENTIFIED [WITH plugin] [BY 'pw' | AS 'hash']`.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthSpec {
    plugin: Option<Plugin>,
    /// A password, or (`AS`) a stored hash already.
    password: Option<String>,
    hash: Option<Vec<u8>>,
}

impl std::fmt::Debug for AuthSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthSpec")
            .field("plugin", &self.plugin)
            .finish_non_exhaustive()
    }
}

/// A privilege of GRANT or REVOKE, with its columns when it names some.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivItem {
    bits: u32,
    /// `ALL [PRIVILEGES]`: the level's every privilege.
    all: bool,
    columns: Vec<String>,
}

/// What GRANT and REVOKE apply to: `*.*`, `db.*` or `db.table`
/// (database None: the current one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `*.*`.
    Global,
    /// `db.*` / `*`.
    Db(Option<String>),
    /// `db.table` / `table`.
    Table(Option<String>, String),
}

/// An account's hourly limits.
pub(crate) fn hourly_limits(a: &Account) -> crate::status::HourlyLimits {
    crate::status::HourlyLimits {
        questions: a.max_questions,
        updates: a.max_updates,
        connections: a.max_connections_per_hour,
    }
}

/// The account options of CREATE USER and ALTER USER (None: not given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountOptions {
    /// `WITH MAX_USER_CONNECTIONS n`.
    pub max_user_connections: Option<u32>,
    /// `WITH MAX_QUERIES_PER_HOUR n`.
    pub max_questions: Option<u32>,
    /// `WITH MAX_UPDATES_PER_HOUR n`.
    pub max_updates: Option<u32>,
    /// `WITH MAX_CONNECTIONS_PER_HOUR n`.
    pub max_connections_per_hour: Option<u32>,
    /// `ACCOUNT LOCK` (true) or `ACCOUNT UNLOCK` (false).
    pub locked: Option<bool>,
}

impl AccountOptions {
    fn is_empty(&self) -> bool {
        *self == AccountOptions::default()
    }

    /// Whether any resource limit is given (setting one starts the
    /// account's hourly counts again, as in MySQL).
    fn sets_limits(&self) -> bool {
        self.max_user_connections.is_some()
            || self.max_questions.is_some()
            || self.max_updates.is_some()
            || self.max_connections_per_hour.is_some()
    }

    fn apply(&self, a: &mut Account) {
        if let Some(n) = self.max_user_connections {
            a.max_user_connections = n;
        }
        if let Some(n) = self.max_questions {
            a.max_questions = n;
        }
        if let Some(n) = self.max_updates {
            a.max_updates = n;
        }
        if let Some(n) = self.max_connections_per_hour {
            a.max_connections_per_hour = n;
        }
        if let Some(l) = self.locked {
            a.locked = l;
        }
    }
}

/// An account statement.
#[derive(Debug, Clone, PartialEq)]
pub enum AclStmt {
    /// `CREATE USER [IF NOT EXISTS] u [auth], ... [REQUIRE SSL|NONE]
    /// [WITH MAX_USER_CONNECTIONS n] [ACCOUNT LOCK|UNLOCK]`.
    CreateUser {
        /// IF NOT EXISTS.
        if_not_exists: bool,
        /// The accounts.
        users: Vec<(UserSpec, Option<AuthSpec>)>,
        /// REQUIRE SSL (true) or NONE (false).
        require_ssl: Option<bool>,
        /// Resource limits and locking.
        options: AccountOptions,
    },
    /// `ALTER USER [IF EXISTS] u [auth], ... [REQUIRE SSL|NONE]
    /// [WITH MAX_USER_CONNECTIONS n] [ACCOUNT LOCK|UNLOCK]`.
    AlterUser {
        /// IF EXISTS.
        if_exists: bool,
        /// The accounts.
        users: Vec<(UserSpec, Option<AuthSpec>)>,
        /// REQUIRE SSL (true) or NONE (false).
        require_ssl: Option<bool>,
        /// Resource limits and locking.
        options: AccountOptions,
    },
    /// `DROP USER [IF EXISTS] u, ...`.
    DropUser {
        /// IF EXISTS.
        if_exists: bool,
        /// The accounts.
        users: Vec<UserSpec>,
    },
    /// `RENAME USER a TO b, ...`.
    RenameUser(Vec<(UserSpec, UserSpec)>),
    /// `SET PASSWORD [FOR u] = 'pw'`.
    SetPassword(UserSpec, AuthSpec),
    /// `GRANT privs ON target TO u, ... [WITH GRANT OPTION]`.
    Grant {
        /// The privileges.
        privs: Vec<PrivItem>,
        /// Where.
        target: Target,
        /// To whom.
        users: Vec<UserSpec>,
        /// WITH GRANT OPTION.
        grant_option: bool,
    },
    /// `REVOKE privs ON target FROM u, ...`.
    Revoke {
        /// The privileges (GRANT OPTION among them).
        privs: Vec<PrivItem>,
        /// Where.
        target: Target,
        /// From whom.
        users: Vec<UserSpec>,
    },
    /// `REVOKE ALL [PRIVILEGES], GRANT OPTION FROM u, ...`.
    RevokeAll(Vec<UserSpec>),
    /// `SHOW GRANTS [FOR u]`.
    ShowGrants(Option<UserSpec>),
}

/// The longest user name (MySQL's 32 characters) and host (255).
const MAX_USER_CHARS: usize = 32;
const MAX_HOST_CHARS: usize = 255;

fn check_user_name(user: &str) -> SqlResult<()> {
    if user.chars().count() > MAX_USER_CHARS {
        return Err(SqlError::new(
            1470,
            "HY000",
            format!("String '{user}' is too long for user name (should be no longer than {MAX_USER_CHARS})"),
        ));
    }
    if user.contains('\0') {
        return Err(SqlError::new(
            1396,
            "HY000",
            "A user name may not hold a NUL character",
        ));
    }
    Ok(())
}

fn check_host_name(host: &str) -> SqlResult<()> {
    if host.chars().count() > MAX_HOST_CHARS {
        return Err(SqlError::new(
            1470,
            "HY000",
            format!("String '{host}' is too long for host name (should be no longer than {MAX_HOST_CHARS})"),
        ));
    }
    Ok(())
}

/// Recognises an account statement from its first words; None for any
/// other statement. `first` is the first word, upper-case.
pub(crate) fn classify(first: &str, body: &str) -> SqlResult<Option<AclStmt>> {
    let second = || {
        body.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .nth(1)
            .map(str::to_ascii_uppercase)
            .unwrap_or_default()
    };
    let ours = match first {
        "GRANT" | "REVOKE" => true,
        "CREATE" | "ALTER" | "DROP" | "RENAME" => second() == "USER",
        "SET" => second() == "PASSWORD",
        "SHOW" => second() == "GRANTS",
        _ => false,
    };
    if !ours {
        return Ok(None);
    }
    let t = tokens(body)?;
    let mut p = P { t: &t, i: 0, body };
    let st = p.statement()?;
    p.eat_punct(";");
    if p.i < t.len() {
        return Err(p.err());
    }
    Ok(Some(st))
}

/// The hand parser of account statements over pre-parser tokens: every
/// step reads one token ahead, so it ends after at most one pass.
struct P<'a> {
    t: &'a [Tok],
    i: usize,
    body: &'a str,
}

impl P<'_> {
    fn err(&self) -> SqlError {
        let near: String = self
            .t
            .get(self.i..)
            .unwrap_or_default()
            .iter()
            .take(6)
            .map(|t| match t {
                Tok::Word(w) | Tok::Num(w) | Tok::Punct(w) => w.clone(),
                Tok::Str(s) => format!("'{s}'"),
            })
            .collect::<Vec<_>>()
            .join(" ");
        let near = if near.is_empty() {
            self.body.to_string()
        } else {
            near
        };
        SqlError::syntax(format!(
            "You have an error in your SQL syntax; check the manual that corresponds to your \
             CairnDB server version for the right syntax to use near '{near}'"
        ))
    }

    fn peek_word(&self, w: &str) -> bool {
        matches!(self.t.get(self.i), Some(Tok::Word(x)) if x.eq_ignore_ascii_case(w))
    }

    fn eat_word(&mut self, w: &str) -> bool {
        let yes = self.peek_word(w);
        if yes {
            self.i += 1;
        }
        yes
    }

    fn word(&mut self, w: &str) -> SqlResult<()> {
        if self.eat_word(w) {
            Ok(())
        } else {
            Err(self.err())
        }
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        let yes = matches!(self.t.get(self.i), Some(Tok::Punct(x)) if x == p);
        if yes {
            self.i += 1;
        }
        yes
    }

    fn string(&mut self) -> SqlResult<String> {
        match self.t.get(self.i) {
            Some(Tok::Str(s)) => {
                self.i += 1;
                Ok(s.clone())
            }
            _ => Err(self.err()),
        }
    }

    /// A name: a word, a quoted string or a number-like token.
    fn name(&mut self) -> SqlResult<String> {
        match self.t.get(self.i) {
            Some(Tok::Word(s) | Tok::Str(s) | Tok::Num(s)) => {
                self.i += 1;
                Ok(s.clone())
            }
            _ => Err(self.err()),
        }
    }

    fn user(&mut self) -> SqlResult<UserSpec> {
        if self.peek_word("CURRENT_USER") || self.peek_word("USER") {
            // `USER()` needs its parentheses; `CURRENT_USER` may omit them.
            let bare_user = self.peek_word("USER");
            self.i += 1;
            if self.eat_punct("(") {
                if !self.eat_punct(")") {
                    return Err(self.err());
                }
            } else if bare_user {
                return Err(self.err());
            }
            return Ok(UserSpec::Current);
        }
        let user = self.name()?;
        let host = if self.eat_punct("@") {
            match self.t.get(self.i) {
                Some(Tok::Punct(p)) if p == "%" => {
                    self.i += 1;
                    "%".to_string()
                }
                _ => self.name()?,
            }
        } else {
            "%".to_string()
        };
        check_user_name(&user)?;
        check_host_name(&host)?;
        let host = if host.is_empty() {
            "%".into()
        } else {
            host.to_lowercase()
        };
        Ok(UserSpec::Named(user, host))
    }

    fn users(&mut self) -> SqlResult<Vec<UserSpec>> {
        let mut v = vec![self.user()?];
        while self.eat_punct(",") {
            v.push(self.user()?);
        }
        Ok(v)
    }

    /// `[IDENTIFIED {BY 'pw' | WITH plugin [BY 'pw' | AS 'hash']}]`.
    fn auth(&mut self) -> SqlResult<Option<AuthSpec>> {
        if !self.eat_word("IDENTIFIED") {
            return Ok(None);
        }
        let mut a = AuthSpec {
            plugin: None,
            password: None,
            hash: None,
        };
        if self.eat_word("WITH") {
            a.plugin = Some(Plugin::parse(&self.name()?)?);
            if self.eat_word("BY") {
                a.password = Some(self.string()?);
            } else if self.eat_word("AS") {
                // A quoted string, or a hex literal (`AS 0x2441...`).
                let h = match self.t.get(self.i) {
                    Some(Tok::Num(n)) if n.starts_with("0x") || n.starts_with("0X") => {
                        self.i += 1;
                        n.clone()
                    }
                    _ => self.string()?,
                };
                a.hash = Some(parse_stored_hash(a.plugin, &h)?);
            } else {
                a.password = Some(String::new());
            }
        } else {
            self.word("BY")?;
            if self.eat_word("PASSWORD") {
                // MySQL 5.x's `IDENTIFIED BY PASSWORD '*hash'`.
                a.plugin = Some(Plugin::Native);
                let h = self.string()?;
                a.hash = Some(parse_stored_hash(a.plugin, &h)?);
            } else {
                a.password = Some(self.string()?);
            }
        }
        Ok(Some(a))
    }

    fn users_with_auth(&mut self) -> SqlResult<Vec<(UserSpec, Option<AuthSpec>)>> {
        let mut v = Vec::new();
        loop {
            let u = self.user()?;
            let a = self.auth()?;
            v.push((u, a));
            if !self.eat_punct(",") {
                return Ok(v);
            }
        }
    }

    /// `[REQUIRE {SSL | NONE}]`.
    fn require(&mut self) -> SqlResult<Option<bool>> {
        if !self.eat_word("REQUIRE") {
            return Ok(None);
        }
        if self.eat_word("SSL") {
            Ok(Some(true))
        } else if self.eat_word("NONE") {
            Ok(Some(false))
        } else if self.peek_word("X509")
            || self.peek_word("ISSUER")
            || self.peek_word("SUBJECT")
            || self.peek_word("CIPHER")
        {
            Err(SqlError::unsupported("REQUIRE X509/ISSUER/SUBJECT/CIPHER"))
        } else {
            Err(self.err())
        }
    }

    fn statement(&mut self) -> SqlResult<AclStmt> {
        if self.eat_word("CREATE") {
            self.word("USER")?;
            let if_not_exists = if self.eat_word("IF") {
                self.word("NOT")?;
                self.word("EXISTS")?;
                true
            } else {
                false
            };
            let users = self.users_with_auth()?;
            let require_ssl = self.require()?;
            let options = self.account_options()?;
            return Ok(AclStmt::CreateUser {
                if_not_exists,
                users,
                require_ssl,
                options,
            });
        }
        if self.eat_word("ALTER") {
            self.word("USER")?;
            let if_exists = if self.eat_word("IF") {
                self.word("EXISTS")?;
                true
            } else {
                false
            };
            let users = self.users_with_auth()?;
            let require_ssl = self.require()?;
            let options = self.account_options()?;
            return Ok(AclStmt::AlterUser {
                if_exists,
                users,
                require_ssl,
                options,
            });
        }
        if self.eat_word("DROP") {
            self.word("USER")?;
            let if_exists = if self.eat_word("IF") {
                self.word("EXISTS")?;
                true
            } else {
                false
            };
            return Ok(AclStmt::DropUser {
                if_exists,
                users: self.users()?,
            });
        }
        if self.eat_word("RENAME") {
            self.word("USER")?;
            let mut v = Vec::new();
            loop {
                let from = self.user()?;
                self.word("TO")?;
                let to = self.user()?;
                v.push((from, to));
                if !self.eat_punct(",") {
                    return Ok(AclStmt::RenameUser(v));
                }
            }
        }
        if self.eat_word("SET") {
            self.word("PASSWORD")?;
            let user = if self.eat_word("FOR") {
                self.user()?
            } else {
                UserSpec::Current
            };
            if !self.eat_punct("=") {
                return Err(self.err());
            }
            let password = self.string()?;
            return Ok(AclStmt::SetPassword(
                user,
                AuthSpec {
                    plugin: None,
                    password: Some(password),
                    hash: None,
                },
            ));
        }
        if self.eat_word("SHOW") {
            self.word("GRANTS")?;
            let u = if self.eat_word("FOR") {
                Some(self.user()?)
            } else {
                None
            };
            if self.eat_word("USING") {
                return Err(SqlError::unsupported("SHOW GRANTS ... USING (roles)"));
            }
            return Ok(AclStmt::ShowGrants(u));
        }
        let grant = self.eat_word("GRANT");
        if !grant {
            self.word("REVOKE")?;
            // `REVOKE ALL [PRIVILEGES], GRANT OPTION FROM u`.
            let save = self.i;
            if self.eat_word("ALL") {
                self.eat_word("PRIVILEGES");
                if self.eat_punct(",") && self.eat_word("GRANT") && self.eat_word("OPTION") {
                    self.word("FROM")?;
                    return Ok(AclStmt::RevokeAll(self.users()?));
                }
            }
            self.i = save;
        }
        let privs = self.privs()?;
        if !self.eat_word("ON") {
            // `GRANT role TO u`.
            if self.peek_word("TO") || self.peek_word("FROM") {
                return Err(SqlError::unsupported("roles"));
            }
            return Err(self.err());
        }
        if self.eat_word("PROCEDURE") || self.eat_word("FUNCTION") {
            return Err(SqlError::unsupported("routine privileges"));
        }
        self.eat_word("TABLE");
        let target = self.target()?;
        if grant {
            self.word("TO")?;
            let users = self.users()?;
            let mut grant_option = false;
            if self.eat_word("WITH") {
                self.word("GRANT")?;
                self.word("OPTION")?;
                grant_option = true;
            }
            Ok(AclStmt::Grant {
                privs,
                target,
                users,
                grant_option,
            })
        } else {
            self.word("FROM")?;
            Ok(AclStmt::Revoke {
                privs,
                target,
                users: self.users()?,
            })
        }
    }

    /// `[WITH resource_limit n ...] [ACCOUNT LOCK | UNLOCK]`, in either
    /// order (`MAX_USER_CONNECTIONS`, `MAX_QUERIES_PER_HOUR`,
    /// `MAX_UPDATES_PER_HOUR`, `MAX_CONNECTIONS_PER_HOUR`); the other
    /// options are refused (1235).
    fn account_options(&mut self) -> SqlResult<AccountOptions> {
        let mut o = AccountOptions::default();
        loop {
            if self.eat_word("WITH") {
                let mut any = false;
                loop {
                    let slot = if self.eat_word("MAX_USER_CONNECTIONS") {
                        &mut o.max_user_connections
                    } else if self.eat_word("MAX_QUERIES_PER_HOUR") {
                        &mut o.max_questions
                    } else if self.eat_word("MAX_UPDATES_PER_HOUR") {
                        &mut o.max_updates
                    } else if self.eat_word("MAX_CONNECTIONS_PER_HOUR") {
                        &mut o.max_connections_per_hour
                    } else {
                        break;
                    };
                    any = true;
                    let n = match self.t.get(self.i) {
                        Some(Tok::Num(n)) => n.parse::<u32>().ok(),
                        _ => None,
                    };
                    let Some(n) = n else {
                        return Err(self.err());
                    };
                    self.i += 1;
                    *slot = Some(n);
                }
                if !any {
                    return Err(self.err());
                }
            } else if self.eat_word("ACCOUNT") {
                if self.eat_word("LOCK") {
                    o.locked = Some(true);
                } else if self.eat_word("UNLOCK") {
                    o.locked = Some(false);
                } else {
                    return Err(self.err());
                }
            } else {
                self.no_options()?;
                return Ok(o);
            }
        }
    }

    /// Account options CairnDB does not keep (password expiry and
    /// history, failed-login locking, comments):
    /// 1235.
    fn no_options(&mut self) -> SqlResult<()> {
        for w in [
            "WITH",
            "PASSWORD",
            "ACCOUNT",
            "FAILED_LOGIN_ATTEMPTS",
            "PASSWORD_LOCK_TIME",
            "COMMENT",
            "ATTRIBUTE",
            "DEFAULT",
        ] {
            if self.peek_word(w) {
                return Err(SqlError::unsupported(format!("account option {w}")));
            }
        }
        Ok(())
    }

    fn privs(&mut self) -> SqlResult<Vec<PrivItem>> {
        let mut v = Vec::new();
        loop {
            let (bits, all) = self.priv_name()?;
            let mut columns = Vec::new();
            if self.eat_punct("(") {
                loop {
                    columns.push(self.name()?);
                    if self.eat_punct(")") {
                        break;
                    }
                    if !self.eat_punct(",") {
                        return Err(self.err());
                    }
                }
            }
            v.push(PrivItem { bits, all, columns });
            if !self.eat_punct(",") {
                return Ok(v);
            }
        }
    }

    /// One privilege name (several words for some): its bits, and
    /// whether it is ALL.
    fn priv_name(&mut self) -> SqlResult<(u32, bool)> {
        let w = match self.t.get(self.i) {
            Some(Tok::Word(w)) => w.to_ascii_uppercase(),
            _ => return Err(self.err()),
        };
        self.i += 1;
        let two = |p: &mut Self, second: &str, bits: u32| -> SqlResult<u32> {
            if p.eat_word(second) {
                Ok(bits)
            } else {
                Err(p.err())
            }
        };
        let bits = match w.as_str() {
            "ALL" => {
                self.eat_word("PRIVILEGES");
                return Ok((0, true));
            }
            "USAGE" => 0,
            "SELECT" => SELECT,
            "INSERT" => INSERT,
            "UPDATE" => UPDATE,
            "DELETE" => DELETE,
            "CREATE" => {
                if self.eat_word("VIEW") {
                    CREATE_VIEW
                } else if self.eat_word("USER") {
                    CREATE_USER
                } else if self.peek_word("ROUTINE")
                    || self.peek_word("TEMPORARY")
                    || self.peek_word("TABLESPACE")
                    || self.peek_word("ROLE")
                {
                    return Err(SqlError::unsupported(format!(
                        "privilege CREATE {}",
                        self.name()?
                    )));
                } else {
                    CREATE
                }
            }
            "DROP" => {
                if self.peek_word("ROLE") {
                    return Err(SqlError::unsupported("privilege DROP ROLE"));
                }
                DROP
            }
            "ALTER" => {
                if self.peek_word("ROUTINE") {
                    return Err(SqlError::unsupported("privilege ALTER ROUTINE"));
                }
                ALTER
            }
            "INDEX" => INDEX,
            "REFERENCES" => REFERENCES,
            "RELOAD" => RELOAD,
            "PROCESS" => PROCESS,
            "SUPER" => SUPER,
            "CONNECTION_ADMIN" => CONNECTION_ADMIN,
            "SHOW" => {
                if self.eat_word("VIEW") {
                    SHOW_VIEW
                } else {
                    two(self, "DATABASES", SHOW_DATABASES)?
                }
            }
            "LOCK" => two(self, "TABLES", LOCK_TABLES)?,
            "REPLICATION" => {
                if self.eat_word("SLAVE") {
                    REPLICATION_SLAVE
                } else {
                    two(self, "CLIENT", REPLICATION_CLIENT)?
                }
            }
            "BINLOG" => two(self, "MONITOR", REPLICATION_CLIENT)?,
            "GRANT" => two(self, "OPTION", GRANT_OPTION)?,
            other => return Err(SqlError::unsupported(format!("privilege {other}"))),
        };
        Ok((bits, false))
    }

    fn target(&mut self) -> SqlResult<Target> {
        if self.eat_punct("*") {
            if self.eat_punct(".") {
                if self.eat_punct("*") {
                    return Ok(Target::Global);
                }
                return Err(self.err());
            }
            return Ok(Target::Db(None));
        }
        let first = self.name()?;
        if self.eat_punct(".") {
            if self.eat_punct("*") {
                return Ok(Target::Db(Some(first)));
            }
            let t = self.name()?;
            return Ok(Target::Table(Some(first), t));
        }
        Ok(Target::Table(None, first))
    }
}

/// A stored hash given with `AS` (or `BY PASSWORD`): `*` and 40 hex
/// digits for mysql_native_password.
fn parse_stored_hash(plugin: Option<Plugin>, h: &str) -> SqlResult<Vec<u8>> {
    let bad = || {
        SqlError::new(
            1827,
            "HY000",
            "The password hash doesn't have the expected format.",
        )
    };
    match plugin {
        Some(Plugin::Native) => {
            if h.is_empty() {
                return Ok(Vec::new());
            }
            let hexpart = h.strip_prefix('*').ok_or_else(bad)?;
            let b = unhex(&hexpart.to_ascii_lowercase()).ok_or_else(bad)?;
            if b.len() != 20 {
                return Err(bad());
            }
            Ok(b)
        }
        Some(Plugin::CachingSha2) => {
            if h.is_empty() {
                return Ok(Vec::new());
            }
            // MySQL's string, as `mysql.user` keeps it, or in hex (how
            // mysqldump prints one whose salt is not printable).
            let b = match h.strip_prefix("0x").or_else(|| h.strip_prefix("0X")) {
                Some(x) => unhex(&x.to_ascii_lowercase()).ok_or_else(bad)?,
                None => h.as_bytes().to_vec(),
            };
            if !crate::sha2crypt::is_valid(&b) {
                return Err(bad());
            }
            Ok(b)
        }
        None => Err(bad()),
    }
}

/// Runs an account statement.
pub(crate) fn run(s: &mut StmtCx, st: AclStmt, out: &mut dyn Output) -> SqlResult<()> {
    if let AclStmt::ShowGrants(u) = st {
        return show_grants(s, u, out);
    }
    // As DDL: an open transaction commits first.
    s.commit()?;
    let db = s.db.clone();
    let _ddl = db.ddl_lock.lock();
    let old = db.acl.read().clone();
    let mut map = account_map(&old);
    let warnings = change(s, &st, &mut map)?;
    db.write_accounts(&old, map)?;
    refresh(s);
    for w in warnings {
        s.warn("Note", w.0, w.1);
    }
    out.ok(0, 0, s.warning_count(), "");
    Ok(())
}

type Map = BTreeMap<(String, String), Account>;

/// The account a spec names, `CURRENT_USER` resolved.
fn resolve(s: &StmtCx, u: &UserSpec) -> (String, String) {
    match u {
        UserSpec::Named(user, host) => (user.clone(), host.clone()),
        UserSpec::Current => match &s.who {
            Some(w) => (w.account_user.clone(), w.account_host.clone()),
            None => (s.user.clone(), "localhost".into()),
        },
    }
}

/// `'user'@'host'` as MySQL quotes accounts in messages.
fn quoted((u, h): &(String, String)) -> String {
    format!("'{u}'@'{h}'")
}

fn op_failed(op: &str, names: &[(String, String)]) -> SqlError {
    let list: Vec<String> = names.iter().map(quoted).collect();
    SqlError::new(
        1396,
        "HY000",
        format!("Operation {op} failed for {}", list.join(",")),
    )
}

fn is_self(s: &StmtCx, k: &(String, String)) -> bool {
    match &s.who {
        Some(w) => w.account_user == k.0 && w.account_host == k.1,
        None => false,
    }
}

/// Applies an account statement to `map` after checking the session may;
/// returns the notes to report.
fn change(s: &StmtCx, st: &AclStmt, map: &mut Map) -> SqlResult<Vec<(u16, String)>> {
    let mut notes = Vec::new();
    let need_create_user = || check_global(s, CREATE_USER, "CREATE USER");
    match st {
        AclStmt::CreateUser {
            if_not_exists,
            users,
            require_ssl,
            options,
        } => {
            need_create_user()?;
            let mut failed = Vec::new();
            for (u, auth) in users {
                let k = resolve(s, u);
                if map.contains_key(&k) {
                    if *if_not_exists {
                        notes.push((
                            3163,
                            format!("Authorization ID {} already exists.", quoted(&k)),
                        ));
                    } else {
                        failed.push(k);
                    }
                    continue;
                }
                let mut a = Account::new(&k.0, &k.1, DEFAULT_PLUGIN, b"");
                if let Some(auth) = auth {
                    set_auth(&mut a, auth)?;
                }
                a.require_ssl = require_ssl.unwrap_or(false);
                options.apply(&mut a);
                if options.sets_limits() {
                    s.db.registry.reset_hourly(Some((&k.0, &k.1)));
                }
                map.insert(k, a);
            }
            if !failed.is_empty() {
                return Err(op_failed("CREATE USER", &failed));
            }
        }
        AclStmt::AlterUser {
            if_exists,
            users,
            require_ssl,
            options,
        } => {
            let only_own_password = require_ssl.is_none()
                && options.is_empty()
                && users
                    .iter()
                    .all(|(u, _)| is_self(s, &resolve(s, u)) || *u == UserSpec::Current);
            if !only_own_password {
                need_create_user()?;
            }
            let mut failed = Vec::new();
            for (u, auth) in users {
                let k = resolve(s, u);
                let Some(a) = map.get_mut(&k) else {
                    if *if_exists {
                        notes.push((
                            3162,
                            format!("Authorization ID {} does not exist.", quoted(&k)),
                        ));
                    } else {
                        failed.push(k);
                    }
                    continue;
                };
                if let Some(auth) = auth {
                    set_auth(a, auth)?;
                }
                if let Some(r) = require_ssl {
                    a.require_ssl = *r;
                }
                options.apply(a);
                if options.sets_limits() {
                    s.db.registry.reset_hourly(Some((&k.0, &k.1)));
                }
            }
            if !failed.is_empty() {
                return Err(op_failed("ALTER USER", &failed));
            }
        }
        AclStmt::DropUser { if_exists, users } => {
            need_create_user()?;
            let mut failed = Vec::new();
            for u in users {
                let k = resolve(s, u);
                if map.remove(&k).is_none() {
                    if *if_exists {
                        notes.push((
                            3162,
                            format!("Authorization ID {} does not exist.", quoted(&k)),
                        ));
                    } else {
                        failed.push(k);
                    }
                }
            }
            if !failed.is_empty() {
                return Err(op_failed("DROP USER", &failed));
            }
        }
        AclStmt::RenameUser(pairs) => {
            need_create_user()?;
            let mut failed = Vec::new();
            for (from, to) in pairs {
                let (kf, kt) = (resolve(s, from), resolve(s, to));
                if map.contains_key(&kt) || !map.contains_key(&kf) {
                    failed.push(kf);
                    continue;
                }
                if let Some(mut a) = map.remove(&kf) {
                    a.user = kt.0.clone();
                    a.host = kt.1.clone();
                    map.insert(kt, a);
                }
            }
            if !failed.is_empty() {
                return Err(op_failed("RENAME USER", &failed));
            }
        }
        AclStmt::SetPassword(u, auth) => {
            let k = resolve(s, u);
            if !is_self(s, &k) {
                need_create_user()?;
            }
            let Some(a) = map.get_mut(&k) else {
                return Err(SqlError::new(
                    1133,
                    "28000",
                    "Can't find any matching row in the user table",
                ));
            };
            set_auth(a, auth)?;
        }
        AclStmt::Grant {
            privs,
            target,
            users,
            grant_option,
        } => {
            let (level, bits, cols) = grant_bits(s, privs, target)?;
            let bits = bits | if *grant_option { GRANT_OPTION } else { 0 };
            check_grantor(s, target, bits | GRANT_OPTION, &cols)?;
            for u in users {
                let k = resolve(s, u);
                let Some(a) = map.get_mut(&k) else {
                    return Err(SqlError::new(
                        1410,
                        "42000",
                        "You are not allowed to create a user with GRANT",
                    ));
                };
                apply(a, s, level, target, bits, &cols, true)?;
            }
        }
        AclStmt::Revoke {
            privs,
            target,
            users,
        } => {
            let (level, bits, cols) = grant_bits(s, privs, target)?;
            check_grantor(s, target, bits | GRANT_OPTION, &cols)?;
            for u in users {
                let k = resolve(s, u);
                let Some(a) = map.get_mut(&k) else {
                    return Err(no_such_grant(&k, None));
                };
                apply(a, s, level, target, bits, &cols, false)?;
            }
        }
        AclStmt::RevokeAll(users) => {
            need_create_user()?;
            let mut failed = Vec::new();
            for u in users {
                let k = resolve(s, u);
                match map.get_mut(&k) {
                    Some(a) => {
                        a.global = 0;
                        a.dbs.clear();
                        a.tables.clear();
                    }
                    None => failed.push(k),
                }
            }
            if !failed.is_empty() {
                return Err(op_failed("REVOKE ALL PRIVILEGES, GRANT OPTION", &failed));
            }
        }
        AclStmt::ShowGrants(_) => {}
    }
    Ok(notes)
}

fn set_auth(a: &mut Account, auth: &AuthSpec) -> SqlResult<()> {
    if let Some(p) = auth.plugin {
        a.plugin = p;
    }
    a.auth = match (&auth.hash, &auth.password) {
        (Some(h), _) => hex(h),
        (None, Some(pw)) => {
            check_password_length(a.plugin, pw)?;
            hex(&a.plugin.hash(pw.as_bytes()))
        }
        (None, None) => String::new(),
    };
    Ok(())
}

/// caching_sha2_password takes at most 256 bytes (MySQL's limit; its
/// hash costs the square of the length).
fn check_password_length(plugin: Plugin, pw: &str) -> SqlResult<()> {
    if plugin == Plugin::CachingSha2 && pw.len() > crate::sha2crypt::MAX_PASSWORD {
        return Err(SqlError::new(
            1819,
            "HY000",
            format!(
                "Your password does not satisfy the current policy requirements: \
                 caching_sha2_password takes at most {} bytes",
                crate::sha2crypt::MAX_PASSWORD
            ),
        ));
    }
    Ok(())
}

fn no_such_grant(k: &(String, String), table: Option<&str>) -> SqlError {
    match table {
        None => SqlError::new(
            1141,
            "42000",
            format!(
                "There is no such grant defined for user '{}' on host '{}'",
                k.0, k.1
            ),
        ),
        Some(t) => SqlError::new(
            1147,
            "42000",
            format!(
                "There is no such grant defined for user '{}' on host '{}' on table '{t}'",
                k.0, k.1
            ),
        ),
    }
}

/// Privilege bits by column name.
type ColumnBits = Vec<(String, u32)>;

/// The level, table-or-wider bits, and column bits of a privilege list
/// at `target`, with each checked against what the level allows (1221,
/// 1144) and the table and columns checked to exist (1146, 1054).
fn grant_bits(s: &StmtCx, privs: &[PrivItem], target: &Target) -> SqlResult<(u8, u32, ColumnBits)> {
    let level = match target {
        Target::Global => G,
        Target::Db(_) => D,
        Target::Table(..) => T,
    };
    let mut bits = 0;
    let mut cols: Vec<(String, u32)> = Vec::new();
    for p in privs {
        if !p.columns.is_empty() {
            if level != T || p.all || p.bits & !all_at(C) != 0 {
                return Err(illegal_grant());
            }
            for c in &p.columns {
                match cols.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(c)) {
                    Some((_, b)) => *b |= p.bits,
                    None => cols.push((c.clone(), p.bits)),
                }
            }
            continue;
        }
        let b = if p.all { all_at(level) } else { p.bits };
        if b & !GRANT_OPTION & !all_at(level) != 0 {
            return Err(match level {
                D => SqlError::new(
                    1221,
                    "HY000",
                    "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES",
                ),
                _ => illegal_grant(),
            });
        }
        bits |= b;
    }
    if let Target::Table(db, t) = target {
        let db = target_db(s, db)?;
        let is_view =
            s.db.catalog
                .read()
                .database(&db)
                .is_some_and(|d| d.views.contains_key(&t.to_lowercase()));
        // A view takes table-level grants (its columns are not checked
        // here); anything else must be a table.
        if !(is_view && cols.is_empty()) {
            let def = s.db.table(&db, t)?;
            for (c, _) in &cols {
                if def.column(c).is_none() {
                    return Err(SqlError::unknown_column(c, t));
                }
            }
        }
    }
    Ok((level, bits, cols))
}

fn illegal_grant() -> SqlError {
    SqlError::new(
        1144,
        "42000",
        "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used",
    )
}

fn target_db(s: &StmtCx, db: &Option<String>) -> SqlResult<String> {
    match db {
        Some(d) => Ok(d.clone()),
        None => s.current_db.clone().ok_or_else(SqlError::no_database),
    }
}

/// The granting session must hold GRANT OPTION and every privilege it
/// grants or revokes, at the target's level or above.
fn check_grantor(s: &StmtCx, target: &Target, bits: u32, cols: &[(String, u32)]) -> SqlResult<()> {
    let Some(who) = &s.who else {
        return Ok(());
    };
    let a = s.grants.as_deref();
    match target {
        Target::Global => {
            if a.is_some_and(|a| a.global & bits == bits) {
                Ok(())
            } else {
                Err(SqlError::new(
                    1045,
                    "28000",
                    format!(
                        "Access denied for user {} (using password: YES)",
                        denied_to(who)
                    ),
                ))
            }
        }
        Target::Db(db) => {
            let db = target_db(s, db)?;
            if a.is_some_and(|a| a.on_db(&db) & bits == bits) {
                Ok(())
            } else {
                Err(db_denied(who, &db))
            }
        }
        Target::Table(db, t) => {
            let db = target_db(s, db)?;
            let have = a.map_or(0, |a| a.on_table(&db, t));
            let col_bits = cols.iter().fold(0, |x, c| x | c.1);
            let missing = (bits | col_bits) & !have;
            if missing == 0 {
                Ok(())
            } else {
                Err(table_denied(who, GRANT_OPTION, t))
            }
        }
    }
}

/// Grants (`add`) or revokes `bits` and `cols` at `target` on account `a`.
fn apply(
    a: &mut Account,
    s: &StmtCx,
    level: u8,
    target: &Target,
    bits: u32,
    cols: &[(String, u32)],
    add: bool,
) -> SqlResult<()> {
    let k = (a.user.clone(), a.host.clone());
    match (level, target) {
        (G, _) => {
            if add {
                a.global |= bits;
            } else {
                a.global &= !bits;
            }
        }
        (D, Target::Db(db)) => {
            let db = target_db(s, db)?;
            let i = a.dbs.iter().position(|g| g.db.eq_ignore_ascii_case(&db));
            match (i, add) {
                (Some(i), _) => {
                    if let Some(g) = a.dbs.get_mut(i) {
                        if add {
                            g.privs |= bits;
                        } else {
                            g.privs &= !bits;
                        }
                        if g.privs == 0 {
                            a.dbs.remove(i);
                        }
                    }
                }
                (None, true) => {
                    if bits != 0 {
                        a.dbs.push(DbGrant { db, privs: bits });
                        a.dbs.sort_by(|x, y| x.db.cmp(&y.db));
                    }
                }
                (None, false) => return Err(no_such_grant(&k, None)),
            }
        }
        (_, Target::Table(db, t)) => {
            let db = target_db(s, db)?;
            let i = a
                .tables
                .iter()
                .position(|g| g.db.eq_ignore_ascii_case(&db) && g.table.eq_ignore_ascii_case(t));
            let i = match (i, add) {
                (Some(i), _) => i,
                (None, true) => {
                    a.tables.push(TableGrant {
                        db: db.clone(),
                        table: t.clone(),
                        privs: 0,
                        columns: Vec::new(),
                    });
                    a.tables.len() - 1
                }
                (None, false) => return Err(no_such_grant(&k, Some(t))),
            };
            if let Some(g) = a.tables.get_mut(i) {
                if add {
                    g.privs |= bits;
                } else {
                    g.privs &= !bits;
                }
                for (c, b) in cols {
                    match g
                        .columns
                        .iter_mut()
                        .find(|x| x.column.eq_ignore_ascii_case(c))
                    {
                        Some(x) if add => x.privs |= b,
                        Some(x) => x.privs &= !b,
                        None if add => g.columns.push(ColumnGrant {
                            column: c.clone(),
                            privs: *b,
                        }),
                        None => {}
                    }
                }
                g.columns.retain(|c| c.privs != 0);
                g.columns.sort_by(|x, y| x.column.cmp(&y.column));
                if g.privs == 0 && g.columns.is_empty() {
                    a.tables.remove(i);
                }
            }
            a.tables
                .sort_by(|x, y| (&x.db, &x.table).cmp(&(&y.db, &y.table)));
        }
        _ => return Err(SqlError::internal("grant level and target disagree")),
    }
    Ok(())
}

/// Backtick-quotes a name.
fn bq(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// The privilege list of a GRANT line: `ALL PRIVILEGES` when every one
/// of the level is held (database and table levels, as MySQL 8.0 prints
/// them), the names otherwise, column privileges after their name.
fn priv_list(bits: u32, level: u8, cols: &[ColumnGrant]) -> String {
    let bits = bits & !GRANT_OPTION;
    if level != G && level != C && bits & all_at(level) == all_at(level) && cols.is_empty() {
        return "ALL PRIVILEGES".into();
    }
    let mut parts = Vec::new();
    for p in STATIC.iter() {
        if bits & p.0 != 0 {
            parts.push(p.1.to_string());
        } else {
            let names: Vec<String> = cols
                .iter()
                .filter(|c| c.privs & p.0 != 0)
                .map(|c| bq(&c.column))
                .collect();
            if !names.is_empty() {
                parts.push(format!("{} ({})", p.1, names.join(", ")));
            }
        }
    }
    if parts.is_empty() {
        "USAGE".into()
    } else {
        parts.join(", ")
    }
}

/// The lines of `SHOW GRANTS` for an account, as MySQL 8.0 prints them.
pub(crate) fn grant_lines(a: &Account) -> Vec<String> {
    let to = format!("{}@{}", bq(&a.user), bq(&a.host));
    let wgo = |b: u32| {
        if b & GRANT_OPTION != 0 {
            " WITH GRANT OPTION"
        } else {
            ""
        }
    };
    let mut v = vec![format!(
        "GRANT {} ON *.* TO {to}{}",
        priv_list(a.global & !CONNECTION_ADMIN, G, &[]),
        wgo(a.global)
    )];
    if a.global & CONNECTION_ADMIN != 0 {
        v.push(format!(
            "GRANT CONNECTION_ADMIN ON *.* TO {to}{}",
            wgo(a.global)
        ));
    }
    for g in &a.dbs {
        v.push(format!(
            "GRANT {} ON {}.* TO {to}{}",
            priv_list(g.privs, D, &[]),
            bq(&g.db),
            wgo(g.privs)
        ));
    }
    for g in &a.tables {
        v.push(format!(
            "GRANT {} ON {}.{} TO {to}{}",
            priv_list(g.privs, T, &g.columns),
            bq(&g.db),
            bq(&g.table),
            wgo(g.privs)
        ));
    }
    v
}

fn show_grants(s: &StmtCx, u: Option<UserSpec>, out: &mut dyn Output) -> SqlResult<()> {
    let k = match &u {
        None | Some(UserSpec::Current) => resolve(s, &UserSpec::Current),
        Some(n) => resolve(s, n),
    };
    // Another account's grants need CREATE USER or global SELECT (MySQL:
    // SELECT on the `mysql` schema).
    if !is_self(s, &k) && s.who.is_some() && !has_global(s, CREATE_USER | SELECT) {
        if let Some(who) = &s.who {
            return Err(db_denied(who, "mysql"));
        }
    }
    let acl = s.db.acl.read().clone();
    let lines = match acl.find(&k.0, &k.1) {
        Some(a) => grant_lines(a),
        // An internal session's own grants: everything.
        None if s.who.is_none() && u.is_none() => {
            let mut a = Account::new(&k.0, &k.1, DEFAULT_PLUGIN, b"");
            a.global = all_at(G) | GRANT_OPTION;
            grant_lines(&a)
        }
        None => return Err(no_such_grant(&k, None)),
    };
    out.columns(&[ColumnInfo::text(&format!("Grants for {}@{}", k.0, k.1))]);
    for l in lines {
        out.row(&[Value::Str(l.into_bytes())]);
    }
    out.end(0);
    Ok(())
}

/// Whether a statement's text names a password (its text is then kept
/// out of the process list): `CREATE USER`, `ALTER USER`, `SET PASSWORD`,
/// `GRANT`.
pub(crate) fn hides_text(sql: &str) -> bool {
    let body = crate::preparse::strip_comments(sql);
    let mut w = body
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty());
    let (a, b) = (w.next().unwrap_or(""), w.next().unwrap_or(""));
    let is = |x: &str, k: &str| x.eq_ignore_ascii_case(k);
    // `PREPARE s FROM 'CREATE USER ... IDENTIFIED BY ...'`: hidden when
    // the text it prepares could carry a password.
    if is(a, "PREPARE") {
        let up = body.to_ascii_uppercase();
        return ["USER", "PASSWORD", "GRANT", "IDENTIFIED"]
            .iter()
            .any(|k| up.contains(k));
    }
    ((is(a, "CREATE") || is(a, "ALTER")) && is(b, "USER"))
        || (is(a, "SET") && is(b, "PASSWORD"))
        || is(a, "GRANT")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_account_statements_hide_their_text() {
        assert!(hides_text(
            "PREPARE s FROM 'CREATE USER u IDENTIFIED BY ''pw'''"
        ));
        assert!(hides_text("prepare s from @q_with_password"));
        assert!(!hides_text("PREPARE s FROM 'SELECT 1'"));
        assert!(hides_text("CREATE USER u IDENTIFIED BY 'pw'"));
    }

    #[test]
    fn host_patterns() {
        assert!(like_host("%", "10.0.0.1"));
        assert!(like_host("10.0.0.%", "10.0.0.1"));
        assert!(!like_host("10.0.0.%", "10.0.1.1"));
        assert!(like_host("10.0.0._", "10.0.0.7"));
        assert!(!like_host("10.0.0._", "10.0.0.17"));
        assert!(like_host("LocalHost", "localhost"));
        assert!(like_host("%.%.%.%", "1.2.3.4"));
        assert!(!like_host("", "x"));
    }

    #[test]
    fn match_order_is_most_specific_first() {
        let mk = |u: &str, h: &str| Arc::new(Account::new(u, h, Plugin::Native, b""));
        let mut acl = Acl {
            made: true,
            accounts: vec![
                mk("app", "%"),
                mk("app", "10.0.%"),
                mk("app", "10.0.0.5"),
                mk("", "10.0.0.5"),
            ],
            damaged: Vec::new(),
        };
        acl.sort();
        let hosts = |c: &str| acl.login("app", c).map(|a| a.host.clone());
        assert_eq!(hosts("10.0.0.5").as_deref(), Some("10.0.0.5"));
        assert_eq!(
            acl.login("app", "10.0.0.5").map(|a| a.user.as_str()),
            Some("app")
        );
        assert_eq!(hosts("10.0.3.1").as_deref(), Some("10.0.%"));
        assert_eq!(hosts("192.168.0.1").as_deref(), Some("%"));
        assert_eq!(
            acl.login("bob", "10.0.0.5").map(|a| a.user.as_str()),
            Some("")
        );
    }

    #[test]
    fn parses_account_statements() -> SqlResult<()> {
        let p = |s: &str| -> SqlResult<AclStmt> {
            let first = s
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase();
            classify(&first, s)?.ok_or_else(|| SqlError::internal("not an account statement"))
        };
        assert!(matches!(
            p("CREATE USER IF NOT EXISTS 'a'@'%' IDENTIFIED BY 'x' REQUIRE SSL")?,
            AclStmt::CreateUser {
                if_not_exists: true,
                require_ssl: Some(true),
                ..
            }
        ));
        assert!(matches!(
            p("GRANT SELECT (a, b), INSERT ON d.t TO u@localhost WITH GRANT OPTION")?,
            AclStmt::Grant {
                grant_option: true,
                ..
            }
        ));
        assert!(matches!(
            p("REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'u'")?,
            AclStmt::RevokeAll(_)
        ));
        assert!(matches!(p("SHOW GRANTS")?, AclStmt::ShowGrants(None)));
        assert!(matches!(
            p("SET PASSWORD FOR 'u'@'%' = 'x'")?,
            AclStmt::SetPassword(UserSpec::Named(..), _)
        ));
        for bad in [
            "GRANT SELECT ON TO u",
            "CREATE USER",
            "GRANT FLY ON *.* TO u",
            "DROP USER u u",
            "SET PASSWORD 'x'",
        ] {
            let first = bad
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase();
            let e = classify(&first, bad).err().map(|e| e.code);
            assert!(matches!(e, Some(1064 | 1235)), "{bad}: {e:?}");
        }
        Ok(())
    }
}
