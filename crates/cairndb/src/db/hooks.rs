//! Test-only interleaving points.
//!
//! A race between a reader, a writer and a background thread is usually a
//! window of a few instructions. Tests force the bad interleaving by
//! installing a one-shot closure at a named point; the engine calls it at
//! that point with the database. Outside `cfg(test)` a point compiles to
//! nothing.
//!
//! Locking: a hook runs with no database lock held (every point is placed
//! where none is), except `compaction_lock` at the compaction points, so it
//! may call any `DbInner` method (but one that compacts from those).

#[cfg(test)]
use std::collections::HashMap;

#[cfg(test)]
use parking_lot::Mutex;

use super::DbInner;

/// Between a read's two steps: taking the super-version and choosing its
/// sequence number (`get`, `iter`).
pub(crate) const READ_BETWEEN: &str = "read-between";
/// Before `Db::snapshot` registers its sequence number.
pub(crate) const SNAPSHOT: &str = "snapshot";
/// After a compaction installed its version, holding only `compaction_lock`.
pub(crate) const COMPACTION_INSTALLED: &str = "compaction-installed";
/// At the start of each pass of `compact_range`, before it picks, holding
/// only `compaction_lock`.
pub(crate) const COMPACT_RANGE_PASS: &str = "compact-range-pass";
/// A write group's leader, after logging the group and releasing `log`,
/// before its memtable inserts.
pub(crate) const BEFORE_INSERT: &str = "before-insert";
/// In a WAL sync round (`durable.rs`), holding the syncing role, after
/// releasing `log`, before its fdatasync.
pub(crate) const SYNC_ROUND: &str = "sync-round";
/// In the file collector, after it listed the directory.
pub(crate) const GC_LISTED: &str = "gc-listed";

#[cfg(test)]
type Hook = Box<dyn FnOnce(&DbInner) + Send>;

/// The installed hooks, each run at most once.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Hooks {
    map: Mutex<HashMap<&'static str, Hook>>,
}

#[cfg(test)]
impl Hooks {
    /// Installs `f` to run the next time `point` is reached.
    pub(crate) fn set(&self, point: &'static str, f: impl FnOnce(&DbInner) + Send + 'static) {
        self.map.lock().insert(point, Box::new(f));
    }

    fn take(&self, point: &'static str) -> Option<Hook> {
        self.map.lock().remove(point)
    }
}

impl DbInner {
    /// Runs the hook installed at `point`, if any (tests only).
    #[inline(always)]
    pub(crate) fn hook(&self, point: &'static str) {
        #[cfg(test)]
        if let Some(f) = self.hooks.take(point) {
            f(self);
        }
        #[cfg(not(test))]
        let _ = point;
    }
}
