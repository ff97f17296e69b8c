//! Snapshots: a registered sequence number that reads can be pinned to and
//! that compaction must preserve.
//!
//! The list of live snapshots is a multiset of sequence numbers behind a
//! mutex; a [`Snapshot`] removes its entry when its last clone drops.
//! Compaction asks for the oldest live sequence number and keeps every version
//! a live snapshot can see.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::key::SeqNo;

/// The live snapshots of one database.
#[derive(Default)]
pub(crate) struct SnapshotList {
    seqs: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    /// Registers a snapshot at the sequence `seq()` returns, reading it
    /// under the list's lock: a compaction that asks for [`Self::all`]
    /// either sees the new snapshot or ran before its sequence was chosen
    /// (so it could not have dropped a version that sequence needs).
    pub(crate) fn create(self: &Arc<Self>, seq: impl FnOnce() -> SeqNo) -> Snapshot {
        let mut seqs = self.seqs.lock();
        let seq = seq();
        *seqs.entry(seq).or_insert(0) += 1;
        drop(seqs);
        Snapshot {
            inner: Arc::new(SnapshotInner {
                seq,
                list: self.clone(),
            }),
        }
    }

    /// Every live snapshot sequence number, ascending.
    pub(crate) fn all(&self) -> Vec<SeqNo> {
        self.seqs.lock().keys().copied().collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.seqs.lock().values().sum()
    }
}

struct SnapshotInner {
    seq: SeqNo,
    list: Arc<SnapshotList>,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        let mut m = self.list.seqs.lock();
        if let Some(c) = m.get_mut(&self.seq) {
            *c -= 1;
            if *c == 0 {
                m.remove(&self.seq);
            }
        }
    }
}

/// A consistent point-in-time view of the database. Cheap to clone; released
/// when the last clone is dropped.
#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SeqNo {
        self.inner.seq
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Snapshot({})", self.inner.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_tracks_live_snapshots() {
        let l = Arc::new(SnapshotList::default());
        assert_eq!(l.all().first(), None);
        let a = l.create(|| 5);
        let b = l.create(|| 3);
        let b2 = b.clone();
        let c = l.create(|| 3);
        assert_eq!(l.all().first(), Some(&3));
        drop(b);
        drop(b2);
        assert_eq!(l.all().first(), Some(&3));
        drop(c);
        assert_eq!(l.all().first(), Some(&5));
        assert_eq!(a.sequence(), 5);
        drop(a);
        assert_eq!(l.len(), 0);
    }
}
