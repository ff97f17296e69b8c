//! The host cache of failed connections: MySQL's `max_connect_errors`
//! blocking and a growing delay on failed logins (in the manner of
//! MySQL's `connection_control` plugin); beside it, the time a
//! connection phase may take (`connect_timeout`, settable while the
//! server runs).
//!
//! Each client IP address that failed to connect (a refused login, a
//! malformed or timed-out handshake, a failed TLS handshake, a client
//! that closed before logging in) has a count of its consecutive
//! failures; a successful login forgets the address. When the count
//! reaches `max_connect_errors` the address is blocked: its connections
//! get ERR 1129 instead of the greeting until `FLUSH HOSTS`
//! ([`Hosts::flush`]). Loopback addresses are counted (for the delay)
//! but never blocked, as in MySQL, so that a local administrator can
//! always log in to unblock. From the fourth consecutive failure on, a
//! refused login's answer is delayed by `min(failures - 3, 10) * 100`
//! ms, on the connection's task (no thread waits).
//!
//! Invariants: at most [`MAX_HOSTS`] addresses are kept; a new one
//! evicts the least recently failed. Locking: one mutex, taken once when
//! a connection arrives from a known failing address (an atomic count of
//! entries skips it when the table is empty) and once when a connection
//! phase ends; never held across an await.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The most addresses the cache keeps.
pub const MAX_HOSTS: usize = 10_000;

/// Failures before refused logins are delayed.
const DELAY_AFTER: u64 = 3;
/// The delay's step and its most steps.
const DELAY_STEP: Duration = Duration::from_millis(100);
const DELAY_STEPS: u64 = 10;

#[derive(Default)]
struct Table {
    /// Address -> (consecutive failures, tick of the last one).
    hosts: HashMap<IpAddr, (u64, u64)>,
    /// Tick -> address: the eviction order.
    by_tick: BTreeMap<u64, IpAddr>,
    tick: u64,
}

/// The server's host cache ([`crate::Server::hosts`]); clones share it.
#[derive(Clone)]
pub struct Hosts(Arc<Inner>);

struct Inner {
    table: Mutex<Table>,
    len: AtomicUsize,
    max_errors: AtomicU64,
    /// `connect_timeout`, milliseconds.
    connect_timeout_ms: AtomicU64,
    /// Block loopback addresses too (tests).
    block_loopback: AtomicBool,
}

impl std::fmt::Debug for Hosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hosts")
            .field("len", &self.0.len.load(Ordering::Relaxed))
            .field("max_connect_errors", &self.max_connect_errors())
            .finish()
    }
}

impl Hosts {
    /// An empty cache blocking an address after `max_errors` consecutive
    /// failures.
    pub fn new(max_errors: u64) -> Hosts {
        Hosts(Arc::new(Inner {
            table: Mutex::new(Table::default()),
            len: AtomicUsize::new(0),
            max_errors: AtomicU64::new(max_errors.max(1)),
            connect_timeout_ms: AtomicU64::new(10_000),
            block_loopback: AtomicBool::new(false),
        }))
    }

    /// `SET GLOBAL max_connect_errors` (at least 1): applies to the
    /// next connection.
    pub fn set_max_connect_errors(&self, n: u64) {
        self.0.max_errors.store(n.max(1), Ordering::Relaxed);
    }

    /// `SET GLOBAL connect_timeout` (at least 1 ms): applies to the next
    /// connection.
    pub fn set_connect_timeout(&self, t: Duration) {
        let ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1);
        self.0.connect_timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// The current `connect_timeout`.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.0.connect_timeout_ms.load(Ordering::Relaxed))
    }

    /// The current `max_connect_errors`.
    pub fn max_connect_errors(&self) -> u64 {
        self.0.max_errors.load(Ordering::Relaxed)
    }

    /// Blocks loopback addresses too (MySQL never does; for tests, which
    /// connect over loopback).
    #[doc(hidden)]
    pub fn set_block_loopback(&self, on: bool) {
        self.0.block_loopback.store(on, Ordering::Relaxed);
    }

    /// The table (a panic while it was held left it consistent: every
    /// change is made whole under the lock).
    fn table(&self) -> MutexGuard<'_, Table> {
        self.0.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `FLUSH HOSTS`: forgets every address (unblocking them).
    pub fn flush(&self) {
        let mut t = self.table();
        *t = Table::default();
        self.0.len.store(0, Ordering::Relaxed);
    }

    /// Addresses kept now.
    pub fn len(&self) -> usize {
        self.0.len.load(Ordering::Relaxed)
    }

    /// Whether no address is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether connections from `ip` are refused with 1129.
    pub fn blocked(&self, ip: IpAddr) -> bool {
        if self.is_empty() || (ip.is_loopback() && !self.0.block_loopback.load(Ordering::Relaxed)) {
            return false;
        }
        let max = self.max_connect_errors();
        self.table().hosts.get(&ip).is_some_and(|e| e.0 >= max)
    }

    /// Counts a failed connection from `ip`; returns how long to delay a
    /// refused login's answer.
    pub fn failed(&self, ip: IpAddr) -> Duration {
        let mut t = self.table();
        t.tick += 1;
        let tick = t.tick;
        let (n, old) = match t.hosts.get_mut(&ip) {
            Some(e) => {
                let old = e.1;
                *e = (e.0.saturating_add(1), tick);
                (e.0, Some(old))
            }
            None => {
                t.hosts.insert(ip, (1, tick));
                (1, None)
            }
        };
        if let Some(old) = old {
            t.by_tick.remove(&old);
        }
        t.by_tick.insert(tick, ip);
        while t.hosts.len() > MAX_HOSTS {
            let Some((_, oldest)) = t.by_tick.pop_first() else {
                break;
            };
            t.hosts.remove(&oldest);
        }
        self.0.len.store(t.hosts.len(), Ordering::Relaxed);
        delay(n)
    }

    /// A login from `ip` succeeded: its count is forgotten.
    pub fn succeeded(&self, ip: IpAddr) {
        if self.is_empty() {
            return;
        }
        let mut t = self.table();
        if let Some((_, tick)) = t.hosts.remove(&ip) {
            t.by_tick.remove(&tick);
        }
        self.0.len.store(t.hosts.len(), Ordering::Relaxed);
    }
}

/// The delay of a refused login that is the `n`th consecutive failure.
fn delay(n: u64) -> Duration {
    let steps = n.saturating_sub(DELAY_AFTER).min(DELAY_STEPS);
    DELAY_STEP * steps as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u32) -> IpAddr {
        IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + n))
    }

    #[test]
    fn blocks_after_max_errors_and_success_or_flush_forgets() {
        let h = Hosts::new(3);
        let a = ip(1);
        assert!(!h.blocked(a));
        assert_eq!(h.failed(a), Duration::ZERO);
        h.failed(a);
        assert!(!h.blocked(a));
        h.succeeded(a);
        assert!(h.is_empty());
        for _ in 0..3 {
            h.failed(a);
        }
        assert!(h.blocked(a));
        assert!(!h.blocked(ip(2)));
        h.flush();
        assert!(!h.blocked(a));
        assert!(h.is_empty());
    }

    #[test]
    fn loopback_is_delayed_but_never_blocked_unless_asked() {
        let h = Hosts::new(1);
        let lo = IpAddr::from(std::net::Ipv4Addr::LOCALHOST);
        h.failed(lo);
        assert!(!h.blocked(lo));
        h.set_block_loopback(true);
        assert!(h.blocked(lo));
    }

    #[test]
    fn delay_grows_from_the_fourth_failure_to_a_second() {
        let got: Vec<u128> = [1, 3, 4, 5, 13, 100]
            .iter()
            .map(|n| delay(*n).as_millis())
            .collect();
        assert_eq!(got, vec![0, 0, 100, 200, 1000, 1000]);
    }

    #[test]
    fn the_table_is_bounded_and_evicts_the_oldest() {
        let h = Hosts::new(1);
        for n in 0..(MAX_HOSTS as u32 + 5) {
            h.failed(ip(n));
        }
        assert_eq!(h.len(), MAX_HOSTS);
        assert!(!h.blocked(ip(0)));
        assert!(h.blocked(ip(MAX_HOSTS as u32 + 4)));
    }
}
