//! Leveled compaction: choosing what to compact and merging it.
//!
//! Picking (LevelDB's scores): level 0 scores its file count over
//! `level0_file_num_compaction_trigger`; level N >= 1 its bytes over
//! `max_bytes_for_level(N)`. The highest score >= 1 is compacted. Level 0
//! compacts all its files at once (they overlap); level N compacts one file,
//! chosen round robin after the level's compact pointer, with every file of
//! level N+1 it overlaps.
//!
//! Merging keeps, per user key, the newest entry of each snapshot stripe
//! (entries that no live snapshot can tell apart collapse to the newest), and
//! drops a tombstone once every snapshot sees it and no deeper level can hold
//! the key. Outputs are cut near `target_file_size_base`, never between two
//! entries of one user key, so no user key spans two files of a level.
//!
//! Locking: a compaction reads a pinned `Version` and its files without any
//! database lock; only installing the result takes the version-set lock.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::merge::MergingIterator;
use crate::iter::InternalIterator;
use crate::key::{parse_internal_key, SeqNo, ValueType};
use crate::options::{Options, NUM_LEVELS};
use crate::version::{FileMeta, LevelIter, Version};

/// One unit of compaction work.
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The level being compacted.
    pub level: usize,
    /// Files of `level`.
    pub inputs: Vec<Arc<FileMeta>>,
    /// Overlapping files of `level + 1`.
    pub next_inputs: Vec<Arc<FileMeta>>,
    /// The score that triggered it (0 for manual compactions).
    pub score: f64,
    /// Rewrite inputs even when a trivial move would do (manual compactions,
    /// so that tombstones and shadowed versions are dropped).
    pub force_rewrite: bool,
}

impl Compaction {
    /// The level outputs go to.
    pub fn output_level(&self) -> usize {
        (self.level + 1).min(NUM_LEVELS - 1)
    }

    /// The smallest and largest user keys over both input levels; None
    /// when there are no inputs.
    pub fn user_key_range(&self) -> Option<(&[u8], &[u8])> {
        user_key_range(self.inputs.iter().chain(&self.next_inputs))
    }

    /// True when the inputs can move down without being rewritten: nothing
    /// in the next level overlaps them, and (for level 0, whose files may
    /// overlap) no two of them overlap each other, as after sequential
    /// inserts.
    pub fn is_trivial_move(&self) -> bool {
        if !self.next_inputs.is_empty() || self.inputs.is_empty() {
            return false;
        }
        if self.level >= 1 {
            return self.inputs.len() == 1;
        }
        let mut by_key: Vec<&Arc<FileMeta>> = self.inputs.iter().collect();
        by_key.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
        by_key
            .windows(2)
            .all(|w| w[0].largest_user_key() < w[1].smallest_user_key())
    }

    /// Bytes of all inputs.
    pub fn input_bytes(&self) -> u64 {
        self.inputs
            .iter()
            .chain(&self.next_inputs)
            .map(|f| f.size)
            .sum()
    }
}

/// Compaction score of each level (index 0..NUM_LEVELS-1; the last level
/// never compacts).
pub fn level_scores(v: &Version, opts: &Options) -> Vec<f64> {
    let mut scores = vec![0.0; NUM_LEVELS];
    scores[0] = v.num_files(0) as f64 / opts.level0_file_num_compaction_trigger as f64;
    for (level, s) in scores.iter_mut().enumerate().take(NUM_LEVELS - 1).skip(1) {
        *s = v.level_bytes(level) as f64 / opts.max_bytes_for_level(level) as f64;
    }
    scores
}

/// Picks the most urgent compaction, if any level is over its limit.
pub fn pick(v: &Version, opts: &Options, compact_pointers: &[Vec<u8>]) -> Option<Compaction> {
    let scores = level_scores(v, opts);
    let (level, score) = scores
        .iter()
        .copied()
        .enumerate()
        .take(NUM_LEVELS - 1)
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if score < 1.0 {
        return None;
    }
    let inputs = if level == 0 {
        v.files[0].clone()
    } else {
        let files = &v.files[level];
        let ptr = &compact_pointers[level];
        let f = files
            .iter()
            .find(|f| ptr.is_empty() || crate::key::compare_internal(&f.largest, ptr).is_gt())
            .or_else(|| files.first())?;
        vec![f.clone()]
    };
    Some(with_next_inputs(v, level, inputs, score))
}

/// A compaction of the files of `level` overlapping `[begin, end]` (user
/// keys, None = unbounded), for `compact_range`.
pub fn pick_range(
    v: &Version,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<Compaction> {
    let inputs = v.overlapping_inputs(level, begin, end);
    if inputs.is_empty() {
        return None;
    }
    Some(with_next_inputs(v, level, inputs, 0.0))
}

/// The smallest and largest user keys of `files`; None when empty.
fn user_key_range<'a>(
    files: impl Iterator<Item = &'a Arc<FileMeta>> + Clone,
) -> Option<(&'a [u8], &'a [u8])> {
    let lo = files.clone().map(|f| f.smallest_user_key()).min()?;
    let hi = files.map(|f| f.largest_user_key()).max()?;
    Some((lo, hi))
}

fn with_next_inputs(
    v: &Version,
    level: usize,
    inputs: Vec<Arc<FileMeta>>,
    score: f64,
) -> Compaction {
    let next_inputs = if level + 1 < NUM_LEVELS {
        let r = user_key_range(inputs.iter());
        v.overlapping_inputs(level + 1, r.map(|r| r.0), r.map(|r| r.1))
    } else {
        Vec::new()
    };
    Compaction {
        level,
        inputs,
        next_inputs,
        score,
        force_rewrite: false,
    }
}

/// Builds the merged input stream of a compaction.
pub fn input_iterator(
    c: &Compaction,
    tables: &Arc<crate::cache::table_cache::TableCache>,
) -> Result<MergingIterator> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    if c.level == 0 {
        for f in &c.inputs {
            children.push(Box::new(tables.get(f.number)?.iter(false)));
        }
    } else {
        children.push(Box::new(LevelIter::new(
            c.inputs.clone(),
            tables.clone(),
            false,
        )));
    }
    if !c.next_inputs.is_empty() {
        children.push(Box::new(LevelIter::new(
            c.next_inputs.clone(),
            tables.clone(),
            false,
        )));
    }
    Ok(MergingIterator::new(children))
}

/// Decides, entry by entry, what a compaction keeps, and which kept
/// entries lose their sequence number.
///
/// Sequence zeroing (RocksDB does the same at its bottommost level): when
/// no level below the output holds any key of the compaction's range, an
/// entry that every live snapshot sees (stripe 0) and that is not a
/// tombstone is written with sequence number 0. Nothing can tell 0 from
/// its real number any more: every snapshot is at or above both, no older
/// version of the key is left anywhere to order against, and an
/// optimistic transaction holds a snapshot from its first tracked key
/// (`txn/mod.rs`), so a write it must see as a conflict is never zeroed.
/// Zeroed trailers make the zip table's trailer array almost free and
/// block-based keys more compressible.
pub struct DropFilter<'a> {
    snapshots: &'a [SeqNo],
    version: &'a Version,
    output_level: usize,
    current_key: Vec<u8>,
    has_current: bool,
    last_stripe: usize,
    /// Nothing below the output level overlaps the compaction's keys.
    bottommost: bool,
    /// The last kept entry may be written with sequence number 0.
    zero_last: bool,
    /// Entries dropped as shadowed.
    pub dropped_shadowed: u64,
    /// Tombstones dropped.
    pub dropped_tombstones: u64,
}

impl<'a> DropFilter<'a> {
    /// `snapshots` ascending; `output_level` the level written.
    pub fn new(snapshots: &'a [SeqNo], version: &'a Version, output_level: usize) -> Self {
        DropFilter {
            snapshots,
            version,
            output_level,
            current_key: Vec::new(),
            has_current: false,
            last_stripe: usize::MAX,
            bottommost: false,
            zero_last: false,
            dropped_shadowed: 0,
            dropped_tombstones: 0,
        }
    }

    /// Turns on sequence zeroing when no level below the output level
    /// holds a key in `[smallest, largest]` (user keys): the compaction's
    /// whole range.
    pub fn zero_sequences_in(mut self, smallest: &[u8], largest: &[u8]) -> Self {
        self.bottommost = (self.output_level + 1..NUM_LEVELS).all(|l| {
            self.version
                .overlapping_inputs(l, Some(smallest), Some(largest))
                .is_empty()
        });
        self
    }

    /// True when the entry `keep` last kept is to be written with sequence
    /// number 0 (see the type's doc).
    pub fn zero_sequence(&self) -> bool {
        self.zero_last
    }

    /// True when the entry (internal key `ikey`) must be kept. Entries arrive
    /// in internal-key order. `path` names the source for error messages.
    pub fn keep(&mut self, ikey: &[u8]) -> Result<bool> {
        let p = parse_internal_key(ikey)
            .ok_or_else(|| Error::corruption("<compaction input>", 0, "malformed internal key"))?;
        if !self.has_current || p.user_key != self.current_key.as_slice() {
            self.current_key.clear();
            self.current_key.extend_from_slice(p.user_key);
            self.has_current = true;
            self.last_stripe = usize::MAX;
        }
        // Stripe: index of the oldest snapshot that sees this entry
        // (len = only the latest state sees it).
        let stripe = self.snapshots.partition_point(|&s| s < p.seq);
        let keep = if stripe == self.last_stripe {
            self.dropped_shadowed += 1;
            false
        } else if p.vtype == ValueType::Deletion
            && stripe == 0
            && (self.bottommost
                || !self
                    .version
                    .key_may_exist_below(self.output_level, p.user_key))
        {
            self.dropped_tombstones += 1;
            false
        } else {
            true
        };
        self.zero_last =
            keep && self.bottommost && stripe == 0 && p.vtype != ValueType::Deletion && p.seq != 0;
        self.last_stripe = stripe;
        Ok(keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;

    fn run(entries: &[(&str, u64, ValueType)], snapshots: &[SeqNo]) -> Vec<(String, u64)> {
        let v = Version::default();
        let mut f = DropFilter::new(snapshots, &v, 1);
        let mut out = Vec::new();
        for (k, s, t) in entries {
            let ik = make_internal_key(k.as_bytes(), *s, *t);
            if f.keep(&ik).unwrap() {
                out.push((k.to_string(), *s));
            }
        }
        out
    }

    #[test]
    fn keeps_newest_per_stripe_and_drops_bottom_tombstones() {
        use ValueType::*;
        let e = [
            ("a", 9, Value),
            ("a", 7, Value),
            ("a", 3, Value),
            ("b", 8, Deletion),
            ("b", 2, Value),
            ("c", 5, Value),
        ];
        // No snapshots: newest of each key; b's tombstone and value vanish.
        assert_eq!(run(&e, &[]), vec![("a".into(), 9), ("c".into(), 5)]);
        // Snapshot at 4: a@3 and b@2 stay visible to it.
        assert_eq!(
            run(&e, &[4]),
            vec![
                ("a".into(), 9),
                ("a".into(), 3),
                ("b".into(), 8),
                ("b".into(), 2),
                ("c".into(), 5)
            ]
        );
        // Snapshot at 8: a@7 is what it sees; a@3 is shadowed inside its stripe;
        // the tombstone b@8 is seen by every snapshot and dropped with b@2.
        assert_eq!(
            run(&e, &[8]),
            vec![("a".into(), 9), ("a".into(), 7), ("c".into(), 5)]
        );
    }

    #[test]
    fn bottommost_zeroes_what_every_snapshot_sees_but_not_tombstones() {
        use ValueType::*;
        let e = [
            ("a", 9, Value),
            ("a", 3, Value),
            ("b", 8, Deletion),
            ("b", 2, Value),
            ("c", 5, BlobIndex),
        ];
        let zeroed = |snapshots: &[SeqNo], bottommost: bool| {
            let v = Version::default();
            let mut f = DropFilter::new(snapshots, &v, 1);
            if bottommost {
                f = f.zero_sequences_in(b"a", b"z");
            }
            let mut out = Vec::new();
            for (k, s, t) in e {
                if f.keep(&make_internal_key(k.as_bytes(), s, t)).unwrap() && f.zero_sequence() {
                    out.push((k, s));
                }
            }
            out
        };
        assert_eq!(zeroed(&[], true), vec![("a", 9), ("c", 5)]);
        // A snapshot at 4 sees a@3 and b@2 only; a@9 and the tombstone
        // b@8 keep their numbers, and so does c@5, newer than the snapshot.
        assert_eq!(zeroed(&[4], true), vec![("a", 3), ("b", 2)]);
        assert_eq!(zeroed(&[], false), vec![]);
        // A level below holding keys of the range turns zeroing off.
        let mut v = Version::default();
        v.files[2].push(Arc::new(FileMeta {
            number: 7,
            size: 100,
            smallest: make_internal_key(b"m", 1, Value),
            largest: make_internal_key(b"n", 1, Value),
            smallest_seq: 1,
            largest_seq: 1,
            oldest_blob_file: 0,
            reader: Default::default(),
        }));
        let mut f = DropFilter::new(&[], &v, 1).zero_sequences_in(b"a", b"z");
        assert!(f.keep(&make_internal_key(b"a", 9, Value)).unwrap());
        assert!(!f.zero_sequence());
        let mut f = DropFilter::new(&[], &v, 1).zero_sequences_in(b"a", b"c");
        assert!(f.keep(&make_internal_key(b"a", 9, Value)).unwrap());
        assert!(f.zero_sequence(), "the file below is outside a..c");
    }

    #[test]
    fn scores_and_pick() {
        let opts = Options {
            level0_file_num_compaction_trigger: 2,
            ..Options::default()
        };
        let mut v = Version::default();
        assert!(pick(&v, &opts, &vec![Vec::new(); NUM_LEVELS]).is_none());
        for n in 1..=2 {
            v.files[0].push(Arc::new(FileMeta {
                number: n,
                size: 100,
                smallest: make_internal_key(b"a", n, ValueType::Value),
                largest: make_internal_key(b"z", n, ValueType::Value),
                smallest_seq: n,
                largest_seq: n,
                oldest_blob_file: 0,
                reader: Default::default(),
            }));
        }
        let c = pick(&v, &opts, &vec![Vec::new(); NUM_LEVELS]).unwrap();
        assert_eq!(c.level, 0);
        assert_eq!(c.inputs.len(), 2);
        assert_eq!(c.output_level(), 1);
        // Both files span a..z: they overlap, so they must be merged.
        assert!(!c.is_trivial_move());
    }

    #[test]
    fn disjoint_level0_files_move_down_without_a_rewrite() {
        let file = |n: u64, lo: &[u8], hi: &[u8]| {
            Arc::new(FileMeta {
                number: n,
                size: 100,
                smallest: make_internal_key(lo, n, ValueType::Value),
                largest: make_internal_key(hi, n, ValueType::Value),
                smallest_seq: n,
                largest_seq: n,
                oldest_blob_file: 0,
                reader: Default::default(),
            })
        };
        let mut v = Version::default();
        v.files[0] = vec![file(2, b"m", b"p"), file(1, b"a", b"c")];
        let c = pick_range(&v, 0, None, None).unwrap();
        assert!(c.is_trivial_move());
        v.files[1] = vec![file(3, b"b", b"b")];
        let c = pick_range(&v, 0, None, None).unwrap();
        assert!(!c.is_trivial_move(), "level 1 overlaps");
    }
}
