//! A concurrent skiplist over internal keys whose nodes live in an [`Arena`]
//! (LevelDB's `db/skiplist.h`, with RocksDB `InlineSkipList`'s inline layout).
//!
//! # Layout
//!
//! Each entry is one allocation in the node arena, 8-byte aligned:
//!
//! ```text
//! [next[h-1]] ... [next[1]] [next[0]] | key_len u32 | value_len u32 | value ptr | key bytes [| value bytes]
//!                                     ^ node pointer
//! ```
//!
//! A value of at most [`INLINE_VALUE_MAX`] bytes follows the key; a longer
//! one is a separate allocation in the value arena, and `value ptr` points
//! at the value either way. Searches touch only nodes: keeping the values
//! out of them packs the searched bytes of a 64 MiB memtable of 100-byte
//! values into about a third of the memory, most of which then stays in
//! the CPU's last-level cache instead of missing to DRAM on every level.
//!
//! The `h` forward links (`AtomicPtr<Node>`) sit *before* the node address so
//! that the key is at a fixed offset (8 bytes) from it and can be read without
//! knowing the height. Keys are internal keys (`user_key ++ trailer`) ordered
//! by [`crate::key::compare_internal`]; the head node has height
//! [`MAX_HEIGHT`] and an empty key that is never compared.
//!
//! # Concurrency
//!
//! Any number of writers and readers at once. [`SkipList::insert_parts`]
//! takes a small internal mutex only to draw the node's height and carve
//! its memory out of the arena (a bump pointer: tens of nanoseconds); it
//! copies the entry and links it in without a lock, with a compare-and-swap
//! per level (RocksDB `InlineSkipList::InsertConcurrently`'s scheme). The
//! engine's write path relies on this: the memtable inserts of one write
//! group overlap the WAL append of the next.
//!
//! Readers take no lock. The argument is LevelDB's, extended to concurrent
//! writers:
//!
//! * Nodes are never removed or modified after they are linked in, except for
//!   their `next` links, which change only to splice in a new node. Node
//!   memory is freed only when the list (arena) is dropped, which cannot
//!   happen while a reader borrows the list or an iterator holds an owner of
//!   it.
//! * A writer fills a new node completely (header, key, value, and its own
//!   `next` links, which point at nodes already published) before making it
//!   reachable, and makes it reachable with a `Release` compare-and-swap on
//!   the predecessor's link, bottom level first. Readers and writers load
//!   links with `Acquire`. Whoever observes the pointer synchronises-with
//!   that store and sees every byte written before it: the node is fully
//!   initialised whenever it is reachable.
//! * A compare-and-swap fails only when another writer spliced a node in
//!   between the predecessor and the expected successor at that level; the
//!   writer then walks forward from the same predecessor (still smaller than
//!   its key: nodes never move) to the new splice point and retries. So each
//!   level stays sorted, and a level is a sublist of the level below at
//!   every instant (a node is linked at level `i` only after level `i - 1`).
//!   A reader may see a new node at some levels and not at others; every
//!   search is still correct (it may just not see the newest entry yet).
//! * `max_height` only grows (`fetch_max`), `Relaxed`: a reader that sees
//!   the new, larger height may find null links in the head at the new
//!   levels (they are initialised to null before the list is shared) and
//!   simply drops a level; one that sees the old height starts lower. Both
//!   are correct.

use std::cmp::Ordering as CmpOrdering;
use std::mem::{align_of, size_of};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::arena::Arena;
use crate::key::TRAILER_LEN;

/// Tallest tower a node can have. With branching 4 this comfortably indexes
/// 4^12 = 16M entries.
pub const MAX_HEIGHT: usize = 12;

/// Node header, at the node address. Links precede it, key and value follow.
#[repr(C)]
struct Node {
    key_len: u32,
    value_len: u32,
    /// The value's first byte: just after the key (inline), in the value
    /// arena, or dangling when the value is empty.
    value: *const u8,
}

/// Values up to this many bytes are stored inline, after the key.
pub const INLINE_VALUE_MAX: usize = 16;

const LINK: usize = size_of::<AtomicPtr<Node>>();
const HEADER: usize = size_of::<Node>();

impl Node {
    /// The `i`-th forward link.
    ///
    /// # Safety
    /// `node` must point to a live, initialised node of height `> i`.
    #[inline(always)]
    unsafe fn link<'a>(node: *const Node, i: usize) -> &'a AtomicPtr<Node> {
        // SAFETY: per the contract, the `h > i` links live just below `node`,
        // 8-byte aligned (the allocation is 8-aligned and the header offset is
        // a multiple of 8) and initialised.
        unsafe { &*(node as *const AtomicPtr<Node>).sub(i + 1) }
    }

    /// # Safety
    /// `node` must point to a live, initialised node; the slice must not
    /// outlive the arena holding it.
    #[inline(always)]
    unsafe fn key<'a>(node: *const Node) -> &'a [u8] {
        // SAFETY: an initialised node has `key_len` initialised bytes right
        // after its header; they are never written again.
        unsafe {
            let len = (*node).key_len as usize;
            std::slice::from_raw_parts((node as *const u8).add(HEADER), len)
        }
    }

    /// # Safety
    /// As for [`Node::key`].
    #[inline(always)]
    unsafe fn value<'a>(node: *const Node) -> &'a [u8] {
        // SAFETY: `value` points at `value_len` initialised bytes that live
        // as long as the node (inline, or in the list's value arena, which
        // is dropped with the node arena), or dangles (aligned, non-null)
        // for an empty value.
        unsafe {
            let vlen = (*node).value_len as usize;
            std::slice::from_raw_parts((*node).value, vlen)
        }
    }
}

/// Internal-key order; falls back to bytewise order when a key is shorter
/// than a trailer (only possible for a malformed seek target), so that no
/// input can make a comparison panic.
#[inline(always)]
fn cmp(a: &[u8], b: &[u8]) -> CmpOrdering {
    if a.len() >= TRAILER_LEN && b.len() >= TRAILER_LEN {
        crate::key::compare_internal(a, b)
    } else {
        a.cmp(b)
    }
}

/// The skiplist. `Send + Sync`; see the module documentation.
pub struct SkipList {
    arena: Arena,
    /// Values longer than [`INLINE_VALUE_MAX`]; allocated, like nodes,
    /// under `alloc`.
    values: Arena,
    head: NonNull<Node>,
    max_height: AtomicUsize,
    len: AtomicUsize,
    /// Guards the xorshift state and arena allocation (never held while
    /// searching or copying).
    alloc: Mutex<u64>,
    /// User key -> node of its newest entry, when the list was made with one
    /// ([`SkipList::with_hash_index`]).
    hash: Option<NodeHash>,
}

/// A hash index from user keys to the node of each key's newest entry, so
/// a point read finds its key in a slot or two instead of a descent through
/// the levels (a dependent cache miss per level in a large memtable):
/// RocksDB's hash memtables answer the same need.
///
/// Slots are `AtomicU64`: 0 when empty, else `fp << 48 | node address`
/// (`fp` = the top 16 bits of the key's xxh3 hash; user-space addresses fit
/// in 48 bits, and a node above that is simply not indexed). Linear probing
/// from `h mod slots`. A slot, once it holds a key, only ever holds nodes of
/// that key, each newer than the last (a compare-and-swap that keeps the
/// larger sequence number), so writers inserting the same key at once meet
/// in the same slot. Keys past three quarters of the slots are not indexed:
/// `incomplete` is set and lookups that find no slot for their key search
/// the list instead.
///
/// Ordering: a writer stores a node's slot (`Release`) after linking the node
/// at level 0 and before `insert_parts` returns, so before the engine
/// publishes the entry's sequence number; a reader that may see the entry
/// loaded that sequence number with `Acquire` first, so it loads the slot
/// (`Acquire`) as new as that entry or newer, and the node it names is
/// fully initialised. From the slot's node the reader walks level 0 to the
/// first version its snapshot may see.
struct NodeHash {
    slots: Box<[AtomicU64]>,
    mask: usize,
    /// Most keys indexed (3/4 of the slots).
    limit: usize,
    count: AtomicUsize,
    incomplete: AtomicBool,
}

/// Bits of a slot holding the node address.
const ADDR_BITS: u32 = 48;
const ADDR_MASK: u64 = (1 << ADDR_BITS) - 1;

impl NodeHash {
    fn new(slots: usize) -> NodeHash {
        let n = slots.max(2).next_power_of_two();
        NodeHash {
            slots: (0..n).map(|_| AtomicU64::new(0)).collect(),
            mask: n - 1,
            limit: n / 4 * 3,
            count: AtomicUsize::new(0),
            incomplete: AtomicBool::new(false),
        }
    }

    #[inline]
    fn fp(h: u64) -> u64 {
        h >> ADDR_BITS
    }

    /// The node in slot value `v` (non-zero).
    #[inline]
    fn node(v: u64) -> *const Node {
        (v & ADDR_MASK) as usize as *const Node
    }

    /// The user key of a published node (its internal key minus the
    /// trailer).
    ///
    /// # Safety
    /// `node` must be a published node of the list owning this index.
    #[inline]
    unsafe fn user_key<'a>(node: *const Node) -> &'a [u8] {
        // SAFETY: per the contract the node is initialised; its key is an
        // internal key (`insert_parts` asserts at least a trailer).
        crate::key::user_key(unsafe { Node::key(node) })
    }

    /// The sequence-and-type trailer of a published node, as a number that
    /// orders versions of one user key (larger = newer).
    ///
    /// # Safety
    /// As for [`NodeHash::user_key`].
    #[inline]
    unsafe fn trailer(node: *const Node) -> u64 {
        // SAFETY: as above.
        crate::key::trailer(unsafe { Node::key(node) })
    }

    /// Indexes `node` (published at level 0, key hashing to `h`).
    ///
    /// # Safety
    /// `node` must be a published node of the list owning this index.
    unsafe fn insert(&self, h: u64, node: *const Node) {
        let addr = node as usize as u64;
        if addr > ADDR_MASK {
            self.incomplete.store(true, Ordering::Release);
            return;
        }
        let new = Self::fp(h) << ADDR_BITS | addr;
        // SAFETY: per the contract.
        let (ukey, trailer) = unsafe { (Self::user_key(node), Self::trailer(node)) };
        let mut i = (h as usize) & self.mask;
        for _ in 0..=self.mask {
            let Some(slot) = self.slots.get(i) else {
                break;
            };
            let mut v = slot.load(Ordering::Acquire);
            if v == 0 {
                if self.count.load(Ordering::Relaxed) >= self.limit {
                    self.incomplete.store(true, Ordering::Release);
                    return;
                }
                match slot.compare_exchange(0, new, Ordering::Release, Ordering::Acquire) {
                    Ok(_) => {
                        self.count.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    // Another writer took the slot: look at what it holds.
                    Err(cur) => v = cur,
                }
            }
            // SAFETY: non-zero slots hold published nodes of this list.
            if v >> ADDR_BITS == Self::fp(h) && unsafe { Self::user_key(Self::node(v)) } == ukey {
                // This key's slot: keep the newest version.
                loop {
                    // SAFETY: as above.
                    if unsafe { Self::trailer(Self::node(v)) } >= trailer {
                        return;
                    }
                    match slot.compare_exchange(v, new, Ordering::Release, Ordering::Acquire) {
                        Ok(_) => return,
                        // Only nodes of this key are ever stored here.
                        Err(cur) => v = cur,
                    }
                }
            }
            i = (i + 1) & self.mask;
        }
        self.incomplete.store(true, Ordering::Release);
    }

    /// The node of `user_key`'s newest entry (key hashing to `h`):
    /// `Ok(Some)`, `Ok(None)` when the list holds no entry of the key, `Err`
    /// when the index cannot tell (keys were left out).
    #[inline]
    fn find(&self, h: u64, user_key: &[u8]) -> Result<Option<*const Node>, ()> {
        let mut i = (h as usize) & self.mask;
        for _ in 0..=self.mask {
            let v = self.slots.get(i).map_or(0, |s| s.load(Ordering::Acquire));
            if v == 0 {
                break;
            }
            // SAFETY: non-zero slots hold published nodes of this list.
            if v >> ADDR_BITS == Self::fp(h) && unsafe { Self::user_key(Self::node(v)) } == user_key
            {
                return Ok(Some(Self::node(v)));
            }
            i = (i + 1) & self.mask;
        }
        if self.incomplete.load(Ordering::Acquire) {
            Err(())
        } else {
            Ok(None)
        }
    }

    #[inline]
    fn prefetch(&self, h: u64) {
        if let Some(s) = self.slots.get((h as usize) & self.mask) {
            prefetch(s as *const AtomicU64 as *const Node);
        }
    }

    fn memory_usage(&self) -> usize {
        self.slots.len() * size_of::<AtomicU64>()
    }
}

/// What [`SkipList::hash_seek`] found.
pub enum HashSeek<'a> {
    /// The first entry at or after the lookup key, of the lookup's user key.
    Found(&'a [u8], &'a [u8]),
    /// No entry of the lookup's user key at or after the lookup key.
    Absent,
    /// The index cannot tell (no hash index, or keys left out of it).
    Unknown,
}

// SAFETY: all nodes live in `arena`, which the list owns; `head` points into
// it. Moving the list moves the arena struct, not its chunks.
unsafe impl Send for SkipList {}
// SAFETY: shared access is either lock-free reads of immutable node bytes and
// atomic links (see the module doc for the ordering argument), or writes
// allocation serialised by the `alloc` mutex followed by writes to memory
// no other thread can reach yet and compare-and-swaps of links.
unsafe impl Sync for SkipList {}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl SkipList {
    /// An empty list.
    pub fn new() -> Self {
        let arena = Arena::new();
        let size = MAX_HEIGHT * LINK + HEADER;
        // SAFETY: the arena was just created and is not shared yet, so this
        // call cannot race another `allocate`.
        let base = unsafe { arena.allocate(size, align_of::<AtomicPtr<Node>>()) };
        // SAFETY: `base` points to `size` fresh bytes, 8-aligned; we write the
        // MAX_HEIGHT null links and an empty header, fully initialising the
        // head node before anyone can see it.
        let head = unsafe {
            let node = base.add(MAX_HEIGHT * LINK) as *mut Node;
            ptr::write(
                node,
                Node {
                    key_len: 0,
                    value_len: 0,
                    value: NonNull::<u8>::dangling().as_ptr(),
                },
            );
            for i in 0..MAX_HEIGHT {
                ptr::write(
                    (node as *mut AtomicPtr<Node>).sub(i + 1),
                    AtomicPtr::new(ptr::null_mut()),
                );
            }
            NonNull::new_unchecked(node)
        };
        SkipList {
            arena,
            values: Arena::new(),
            head,
            max_height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            alloc: Mutex::new(0x9E37_79B9_7F4A_7C15),
            hash: None,
        }
    }

    /// An empty list with a hash index of `slots` slots (rounded up to a
    /// power of two; see [`NodeHash`]): up to 3/4 of that many distinct user
    /// keys are found without a search.
    pub fn with_hash_index(slots: usize) -> Self {
        SkipList {
            hash: Some(NodeHash::new(slots)),
            ..Self::new()
        }
    }

    /// True when the list has a hash index (its inserts then need the
    /// user key's hash).
    #[inline]
    pub fn has_hash_index(&self) -> bool {
        self.hash.is_some()
    }

    /// Bytes of the hash index (0 without one).
    pub fn hash_memory_usage(&self) -> usize {
        self.hash.as_ref().map_or(0, NodeHash::memory_usage)
    }

    /// Starts loading the hash slot a lookup of the key hashing to `h`
    /// reads first.
    #[inline]
    pub fn prefetch_hash(&self, h: u64) {
        if let Some(ix) = &self.hash {
            ix.prefetch(h);
        }
    }

    /// The first entry at or after the internal key `lookup` when it has
    /// `lookup`'s user key (which hashes to `h`), through the hash index.
    #[inline]
    pub fn hash_seek(&self, h: u64, lookup: &[u8]) -> HashSeek<'_> {
        let Some(ix) = &self.hash else {
            return HashSeek::Unknown;
        };
        let Some(user_key) = lookup
            .len()
            .checked_sub(TRAILER_LEN)
            .and_then(|n| lookup.get(..n))
        else {
            return HashSeek::Unknown;
        };
        let mut x = match ix.find(h, user_key) {
            Ok(Some(n)) => n,
            Ok(None) => return HashSeek::Absent,
            Err(()) => return HashSeek::Unknown,
        };
        // Versions of a key are adjacent, newest first: walk to the first
        // the lookup may see.
        loop {
            // SAFETY: `x` is a published node of this list (from the index
            // or reached along level 0 from one).
            let k = unsafe { Node::key(x) };
            // SAFETY: as above.
            if unsafe { NodeHash::user_key(x) } != user_key {
                return HashSeek::Absent;
            }
            if cmp(k, lookup) != CmpOrdering::Less {
                // SAFETY: as above; the slices borrow `self`.
                return HashSeek::Found(k, unsafe { Node::value(x) });
            }
            // SAFETY: a published node has height >= 1.
            x = unsafe { Node::link(x, 0).load(Ordering::Acquire) };
            if x.is_null() {
                return HashSeek::Absent;
            }
        }
    }

    /// Number of entries. Acquire pairs with the writer's Release increment,
    /// which follows the node's publication: a reader that sees `len() == n`
    /// then finds at least `n` entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// True when there is no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Exact bytes reserved by the arena.
    #[inline]
    pub fn memory_usage(&self) -> usize {
        self.arena.memory_usage() + self.values.memory_usage()
    }

    /// Bytes reserved for nodes (links, headers, keys, inline values): the
    /// part of the list a search touches.
    #[inline]
    pub fn index_memory_usage(&self) -> usize {
        self.arena.memory_usage()
    }

    /// Inserts the entry whose key is `key_head ++ key_tail` (two parts so
    /// that a user key and its trailer are copied straight into the arena).
    /// May run on many threads at once.
    ///
    /// The key must be at least 8 bytes (an internal key) and both key and
    /// value shorter than 4 GiB; this panics otherwise (a caller bug, not
    /// input data). Keys must be unique (the memtable's are: sequence
    /// numbers are); an entry equal to an existing one goes before it.
    ///
    /// `h` is the `xxh3_64` of the user key (the key less its trailer), used
    /// only when the list has a hash index.
    pub fn insert_parts(&self, key_head: &[u8], key_tail: &[u8], value: &[u8], h: u64) {
        let key_len = key_head.len() + key_tail.len();
        assert!(
            key_len >= TRAILER_LEN,
            "skiplist key shorter than a trailer"
        );
        // `WriteBatch` refuses user keys over `MAX_KEY_LEN` (u32::MAX - 8)
        // and values over `MAX_VALUE_LEN` before anything is logged, so
        // these hold for every write that reaches the memtable.
        let key_len32 = u32::try_from(key_len).expect("internal key over u32::MAX: MAX_KEY_LEN");
        let value_len32 = u32::try_from(value.len()).expect("value over u32::MAX: MAX_VALUE_LEN");

        let inline = value.len() <= INLINE_VALUE_MAX;
        let (height, base, vbase) = {
            let mut rng = self.alloc.lock();
            let height = random_height(&mut rng);
            let size = height * LINK + HEADER + key_len + if inline { value.len() } else { 0 };
            // SAFETY: we hold the `alloc` lock, and every `allocate` on these
            // arenas after construction happens under it, so calls never
            // overlap.
            let base = unsafe { self.arena.allocate(size, align_of::<AtomicPtr<Node>>()) };
            let vbase = if inline {
                ptr::null_mut()
            } else {
                // SAFETY: as above; `value.len() > INLINE_VALUE_MAX > 0`.
                unsafe { self.values.allocate(value.len(), 1) }
            };
            (height, base, vbase)
        };
        // SAFETY: `base` is `height * LINK + HEADER + key_len` (+ the value
        // when inline) fresh, 8-aligned bytes, and `vbase` (when not inline)
        // `value.len()` fresh bytes, that no other thread can reach yet. We
        // initialise every part of the node: header, key, value and `height`
        // links (null for now).
        let node = unsafe {
            let node = base.add(height * LINK) as *mut Node;
            let kp = (node as *mut u8).add(HEADER);
            let vp = if !inline {
                vbase
            } else if value.is_empty() {
                NonNull::<u8>::dangling().as_ptr()
            } else {
                kp.add(key_len)
            };
            ptr::write(
                node,
                Node {
                    key_len: key_len32,
                    value_len: value_len32,
                    value: vp,
                },
            );
            ptr::copy_nonoverlapping(key_head.as_ptr(), kp, key_head.len());
            ptr::copy_nonoverlapping(key_tail.as_ptr(), kp.add(key_head.len()), key_tail.len());
            ptr::copy_nonoverlapping(value.as_ptr(), vp, value.len());
            for i in 0..height {
                ptr::write(
                    (node as *mut AtomicPtr<Node>).sub(i + 1),
                    AtomicPtr::new(ptr::null_mut()),
                );
            }
            node
        };
        // SAFETY: the node was fully initialised above and lives in our arena.
        let key = unsafe { Node::key(node) };
        let mut prev = [self.head.as_ptr(); MAX_HEIGHT];
        self.find_greater_or_equal(key, Some(&mut prev));
        // Levels above the height the search started from keep the head.
        self.max_height.fetch_max(height, Ordering::Relaxed);

        for (i, &start) in prev.iter().enumerate().take(height) {
            let mut p = start;
            loop {
                // SAFETY: `p` is the head (height MAX_HEIGHT) or a node reached
                // at level `i`, hence of height > i; `next`, when non-null, is
                // a published node linked at level `i`, so of height > i and
                // fully initialised (Acquire pairs with the Release CAS that
                // published it). `node` has height > i and is ours.
                unsafe {
                    let mut next = Node::link(p, i).load(Ordering::Acquire);
                    // Another writer may have spliced nodes in since the
                    // search: walk to the splice point from `p`, which is
                    // still smaller than `key` (nodes never move).
                    while !next.is_null() && cmp(Node::key(next), key) == CmpOrdering::Less {
                        p = next;
                        next = Node::link(p, i).load(Ordering::Acquire);
                    }
                    Node::link(node, i).store(next, Ordering::Relaxed);
                    // Release publishes the node's bytes and its own link.
                    if Node::link(p, i)
                        .compare_exchange(next, node, Ordering::Release, Ordering::Relaxed)
                        .is_ok()
                    {
                        break;
                    }
                }
            }
        }
        if let Some(ix) = &self.hash {
            // SAFETY: `node` is ours and now linked (published) at level 0.
            unsafe { ix.insert(h, node) };
        }
        self.len.fetch_add(1, Ordering::Release);
    }

    /// Inserts `key` -> `value`; see [`SkipList::insert_parts`].
    #[cfg(test)]
    pub fn insert(&self, key: &[u8], value: &[u8]) {
        let h = xxhash_rust::xxh3::xxh3_64(&key[..key.len().saturating_sub(TRAILER_LEN)]);
        self.insert_parts(key, &[], value, h)
    }

    /// First node with key >= `key`, or null. Fills `prev[i]` with the last
    /// node at level `i` whose key is < `key` (the head if none).
    fn find_greater_or_equal(
        &self,
        key: &[u8],
        mut prev: Option<&mut [*mut Node; MAX_HEIGHT]>,
    ) -> *mut Node {
        let mut x = self.head.as_ptr();
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        // The node already known to be >= key at the level above: skip
        // comparing it again (RocksDB's trick).
        let mut known_ge: *mut Node = ptr::null_mut();
        loop {
            // SAFETY: `x` is the head or a node reached at `level` or above,
            // so its height is > level; published links point to fully
            // initialised nodes (Acquire pairs with the writer's Release).
            let next = unsafe { Node::link(x, level).load(Ordering::Acquire) };
            if !next.is_null() {
                // SAFETY: `next` is a published node of height > level.
                prefetch(unsafe { Node::link(next, level).load(Ordering::Relaxed) });
            }
            let next_is_less = !next.is_null() && next != known_ge && {
                // SAFETY: `next` is non-null and published, so initialised.
                let next_key = unsafe { Node::key(next) };
                cmp(next_key, key) == CmpOrdering::Less
            };
            if next_is_less {
                x = next;
            } else {
                if let Some(p) = prev.as_deref_mut() {
                    p[level] = x;
                }
                if level == 0 {
                    return next;
                }
                known_ge = next;
                level -= 1;
            }
        }
    }

    /// Last node with key < `key`, or the head.
    fn find_less_than(&self, key: &[u8]) -> *mut Node {
        let mut x = self.head.as_ptr();
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        loop {
            // SAFETY: as in `find_greater_or_equal`.
            let next = unsafe { Node::link(x, level).load(Ordering::Acquire) };
            // SAFETY: `next` is non-null and published.
            if !next.is_null() && cmp(unsafe { Node::key(next) }, key) == CmpOrdering::Less {
                x = next;
            } else if level == 0 {
                return x;
            } else {
                level -= 1;
            }
        }
    }

    /// The last node, or the head when empty.
    fn find_last(&self) -> *mut Node {
        let mut x = self.head.as_ptr();
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        loop {
            // SAFETY: as in `find_greater_or_equal`.
            let next = unsafe { Node::link(x, level).load(Ordering::Acquire) };
            if !next.is_null() {
                x = next;
            } else if level == 0 {
                return x;
            } else {
                level -= 1;
            }
        }
    }

    /// The first entry with key >= `key`: `(key, value)`.
    #[inline]
    pub fn seek_entry(&self, key: &[u8]) -> Option<(&[u8], &[u8])> {
        let n = self.find_greater_or_equal(key, None);
        if n.is_null() {
            None
        } else {
            // SAFETY: `n` is a published node of this list; the slices borrow
            // `self`, which keeps the arena alive.
            Some(unsafe { (Node::key(n), Node::value(n)) })
        }
    }

    /// True when `key` is present (exact match).
    #[cfg(test)]
    pub fn contains(&self, key: &[u8]) -> bool {
        matches!(self.seek_entry(key), Some((k, _)) if k == key)
    }
}

/// Hints the CPU to fetch the node at `p` (its header and key start); see
/// [`crate::util::prefetch`].
#[inline(always)]
fn prefetch(p: *const Node) {
    crate::util::prefetch(p);
}

/// Random tower height: 1 + number of leading "1 in 4" successes.
#[inline]
fn random_height(state: &mut u64) -> usize {
    // xorshift64*
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    let mut bits = x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
    let mut h = 1;
    while h < MAX_HEIGHT && bits & 3 == 0 {
        h += 1;
        bits >>= 2;
    }
    h
}

/// Something that owns (or borrows) a [`SkipList`] and keeps it alive.
///
/// # Safety
///
/// `list()` must return the same list on every call for the lifetime of the
/// value, and that list must not be dropped while the value exists: an
/// iterator stores raw node pointers obtained from one call and dereferences
/// them after later calls.
pub unsafe trait ListOwner {
    /// The list.
    fn list(&self) -> &SkipList;
}

// SAFETY: a shared reference always designates the same list and keeps it
// borrowed (alive) for `'a`.
unsafe impl ListOwner for &SkipList {
    fn list(&self) -> &SkipList {
        self
    }
}

// SAFETY: an `Arc` always derefs to the same allocation and keeps it alive.
unsafe impl ListOwner for Arc<SkipList> {
    fn list(&self) -> &SkipList {
        self
    }
}

/// A cursor over the list (LevelDB's `SkipList::Iterator`). It may observe
/// entries inserted after it was created.
pub struct Iter<O: ListOwner> {
    owner: O,
    /// Current node; null when not valid. Never the head.
    node: *const Node,
}

// SAFETY: `node` points into the arena of the list that `owner` keeps alive;
// the list is `Sync`, so reading its nodes from whichever thread holds the
// iterator is sound as long as the owner itself may move there.
unsafe impl<O: ListOwner + Send> Send for Iter<O> {}

impl<O: ListOwner> Iter<O> {
    /// An iterator, not yet positioned (not valid).
    pub fn new(owner: O) -> Self {
        Iter {
            owner,
            node: ptr::null(),
        }
    }

    /// The owner.
    pub fn owner(&self) -> &O {
        &self.owner
    }

    #[inline]
    fn set(&mut self, n: *const Node) {
        let head = self.owner.list().head.as_ptr() as *const Node;
        self.node = if n == head { ptr::null() } else { n };
    }

    /// True when positioned on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        !self.node.is_null()
    }

    /// The current key. Panics when not valid.
    #[inline]
    pub fn key(&self) -> &[u8] {
        assert!(self.valid(), "skiplist iterator not valid");
        // SAFETY: a non-null `node` is a published node of the owner's list,
        // which outlives `&self` (ListOwner contract).
        unsafe { Node::key(self.node) }
    }

    /// The current value. Panics when not valid.
    #[inline]
    pub fn value(&self) -> &[u8] {
        assert!(self.valid(), "skiplist iterator not valid");
        // SAFETY: as in `key`.
        unsafe { Node::value(self.node) }
    }

    /// Moves to the next entry. Requires `valid()` (no-op otherwise).
    #[inline]
    pub fn next(&mut self) {
        if self.valid() {
            // SAFETY: a published node has height >= 1; link 0 is readable.
            self.node = unsafe { Node::link(self.node, 0).load(Ordering::Acquire) };
            self.prefetch_next();
        }
    }

    /// Starts loading the node after the current one into the cache. Nodes
    /// lie in the arena in insertion order, not key order, so a scan of a
    /// large memtable misses the cache on every node; asking for the next
    /// node one step early overlaps that miss with the caller's work on the
    /// current entry (the current node was itself prefetched a step ago, so
    /// reading its link here is a hit).
    #[inline]
    fn prefetch_next(&self) {
        if self.node.is_null() {
            return;
        }
        // SAFETY: a non-null `node` is a published node of the owner's
        // list (height >= 1, link 0 readable).
        let next = unsafe { Node::link(self.node, 0).load(Ordering::Acquire) };
        if !next.is_null() {
            // The node's link 0 sits just below it, its header and the
            // start of its key just above.
            prefetch((next as *const u8).wrapping_sub(LINK) as *const Node);
            prefetch((next as *const u8).wrapping_add(HEADER + 16) as *const Node);
        }
    }

    /// Moves to the previous entry (a search, as in LevelDB). Requires
    /// `valid()` (no-op otherwise).
    pub fn prev(&mut self) {
        if self.valid() {
            // SAFETY: as in `key`; the key slice is not used after the search.
            let key = unsafe { Node::key(self.node) };
            let n = self.owner.list().find_less_than(key);
            self.set(n);
        }
    }

    /// Positions on the first entry with key >= `target`.
    pub fn seek(&mut self, target: &[u8]) {
        let n = self.owner.list().find_greater_or_equal(target, None);
        self.node = n;
        self.prefetch_next();
    }

    /// Positions on the first entry.
    pub fn seek_to_first(&mut self) {
        let head = self.owner.list().head.as_ptr();
        // SAFETY: the head has MAX_HEIGHT initialised links.
        self.node = unsafe { Node::link(head, 0).load(Ordering::Acquire) };
        self.prefetch_next();
    }

    /// Positions on the last entry.
    pub fn seek_to_last(&mut self) {
        let n = self.owner.list().find_last();
        self.set(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, parse_internal_key, ValueType};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeSet;
    use std::sync::atomic::AtomicBool;

    fn ik(n: u64) -> Vec<u8> {
        make_internal_key(format!("key{n:08}").as_bytes(), 1, ValueType::Value)
    }

    #[test]
    fn empty_list() {
        let l = SkipList::new();
        assert!(l.is_empty());
        let mut it = Iter::new(&l);
        assert!(!it.valid());
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(&ik(5));
        assert!(!it.valid());
        assert!(!l.contains(&ik(5)));
    }

    #[test]
    fn values_inline_and_out_of_line_read_back() {
        // Around INLINE_VALUE_MAX: empty, inline, the boundary, out of
        // line, and large enough for a dedicated value-arena chunk.
        let lens = [
            0usize,
            1,
            INLINE_VALUE_MAX - 1,
            INLINE_VALUE_MAX,
            INLINE_VALUE_MAX + 1,
            100,
            5000,
            2 << 20,
        ];
        let l = SkipList::new();
        let value =
            |i: usize, n: usize| -> Vec<u8> { (0..n).map(|j| (i * 31 + j) as u8).collect() };
        for (i, &n) in lens.iter().enumerate() {
            l.insert(&ik(i as u64), &value(i, n));
        }
        for (i, &n) in lens.iter().enumerate() {
            let (k, v) = l.seek_entry(&ik(i as u64)).unwrap();
            assert_eq!(k, ik(i as u64).as_slice());
            assert_eq!(v, value(i, n).as_slice(), "value of {n} bytes");
        }
        let mut it = Iter::new(&l);
        it.seek_to_first();
        for (i, &n) in lens.iter().enumerate() {
            assert!(it.valid());
            assert_eq!(it.value().len(), n, "entry {i}");
            it.next();
        }
        assert!(!it.valid());
        // Out-of-line values are counted in the memory usage.
        assert!(l.memory_usage() > 2 << 20);
    }

    #[test]
    fn insert_and_iterate_both_ways() {
        let seed: u64 = rand::random();
        println!("seed {seed}");
        let mut rng = SmallRng::seed_from_u64(seed);
        // Smaller under Miri (scripts/miri.sh), which runs ~1000x slower.
        const INSERTS: usize = if cfg!(miri) { 150 } else { 3000 };
        const KEYS: u64 = if cfg!(miri) { 250 } else { 5000 };
        let l = SkipList::new();
        let mut model = BTreeSet::new();
        for _ in 0..INSERTS {
            let n = rng.gen_range(0..KEYS);
            if model.insert(n) {
                l.insert(&ik(n), format!("v{n}").as_bytes());
            }
        }
        assert_eq!(l.len(), model.len());
        for n in 0..KEYS {
            assert_eq!(l.contains(&ik(n)), model.contains(&n));
        }
        let mut it = Iter::new(&l);
        it.seek_to_first();
        for &n in &model {
            assert!(it.valid());
            assert_eq!(it.key(), &ik(n)[..]);
            assert_eq!(it.value(), format!("v{n}").as_bytes());
            it.next();
        }
        assert!(!it.valid());
        it.seek_to_last();
        for &n in model.iter().rev() {
            assert!(it.valid());
            assert_eq!(it.key(), &ik(n)[..]);
            it.prev();
        }
        assert!(!it.valid());
        // Seeks to every possible target.
        for n in 0..=KEYS {
            it.seek(&ik(n));
            match model.range(n..).next() {
                Some(&m) => assert_eq!(it.key(), &ik(m)[..]),
                None => assert!(!it.valid()),
            }
        }
        // Malformed (short) seek targets must not panic.
        it.seek(b"");
        it.seek(b"k");
    }

    #[test]
    fn arc_owner_and_send() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SkipList>();
        let l = Arc::new(SkipList::new());
        l.insert(&ik(1), b"one");
        let mut it = Iter::new(l.clone());
        drop(l);
        let h = std::thread::spawn(move || {
            it.seek_to_first();
            it.value().to_vec()
        });
        assert_eq!(h.join().unwrap(), b"one");
    }

    #[test]
    fn height_distribution() {
        let mut s = 1u64;
        let mut counts = [0usize; MAX_HEIGHT + 1];
        for _ in 0..100_000 {
            counts[random_height(&mut s)] += 1;
        }
        // About 3/4 of the towers have height 1, 3/16 height 2.
        assert!(counts[1] > 70_000 && counts[1] < 80_000, "{counts:?}");
        assert!(counts[2] > 16_000 && counts[2] < 21_000, "{counts:?}");
    }

    /// One writer inserts while readers scan and seek; every scan must be
    /// strictly increasing and see only complete entries, and each reader
    /// must eventually see everything inserted before it started.
    /// Walks the whole list from the first entry, asserting that keys
    /// strictly increase and calling `check` on each entry; the count.
    fn scan_sorted(l: &SkipList, mut check: impl FnMut(&[u8], &[u8])) -> usize {
        let mut it = Iter::new(l);
        it.seek_to_first();
        let mut count = 0usize;
        let mut last: Option<Vec<u8>> = None;
        while it.valid() {
            let k = it.key();
            if let Some(prev) = &last {
                assert_eq!(cmp(prev, k), CmpOrdering::Less, "out of order");
            }
            check(k, it.value());
            last = Some(k.to_vec());
            count += 1;
            it.next();
        }
        count
    }

    #[test]
    fn concurrent_writer_and_readers() {
        const N: u64 = if cfg!(miri) { 200 } else { 20_000 };
        let l = Arc::new(SkipList::new());
        let done = Arc::new(AtomicBool::new(false));
        let mut readers = Vec::new();
        for r in 0..3u64 {
            let l = l.clone();
            let done = done.clone();
            readers.push(std::thread::spawn(move || {
                let mut rounds = 0u64;
                loop {
                    let finished = done.load(Ordering::Acquire);
                    let len_before = l.len();
                    let count = scan_sorted(&l, |k, v| {
                        let p = parse_internal_key(k).expect("complete key");
                        let n: u64 = std::str::from_utf8(&p.user_key[3..])
                            .unwrap()
                            .parse()
                            .unwrap();
                        assert_eq!(v, format!("value-{n}").as_bytes());
                    });
                    assert!(count >= len_before, "missed published entries");
                    let mut it = Iter::new(&*l);
                    // Random seeks land on a key >= the target.
                    let t = ik((rounds * 7919 + r) % N);
                    it.seek(&t);
                    if it.valid() {
                        assert_ne!(cmp(it.key(), &t), CmpOrdering::Less);
                        // prev lands before the current key (not necessarily
                        // before `t`: a key between them may just have been
                        // inserted).
                        let at = it.key().to_vec();
                        it.prev();
                        if it.valid() {
                            assert_eq!(cmp(it.key(), &at), CmpOrdering::Less);
                        }
                    }
                    rounds += 1;
                    if finished {
                        assert_eq!(count as u64, N);
                        return rounds;
                    }
                }
            }));
        }
        // Insert in a scrambled order.
        for i in 0..N {
            let n = (i * 7_777_777) % N;
            l.insert(&ik(n), format!("value-{n}").as_bytes());
        }
        done.store(true, Ordering::Release);
        for r in readers {
            assert!(r.join().unwrap() >= 1);
        }
        assert_eq!(l.len() as u64, N);
    }

    /// Several writers insert at once (their keys interleave, so their
    /// compare-and-swaps collide on the same predecessors) while readers
    /// walk the list: every level stays sorted, nothing is lost.
    #[test]
    fn concurrent_writers_and_readers() {
        const N: u64 = if cfg!(miri) { 300 } else { 200_000 };
        const WRITERS: u64 = 4;
        let l = Arc::new(SkipList::new());
        let start = Arc::new(std::sync::Barrier::new(WRITERS as usize));
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let l = l.clone();
            let done = done.clone();
            std::thread::spawn(move || loop {
                let finished = done.load(Ordering::Acquire);
                let len_before = l.len();
                let count = scan_sorted(&l, |_, _| {});
                assert!(count >= len_before, "missed published entries");
                if finished {
                    return count;
                }
            })
        };
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let l = l.clone();
                let start = start.clone();
                std::thread::spawn(move || {
                    start.wait();
                    // Writer w owns the keys n with n % WRITERS == w, visited
                    // in a scrambled order.
                    for i in 0..N / WRITERS {
                        let n = ((i * 7_777_777) % (N / WRITERS)) * WRITERS + w;
                        l.insert(&ik(n), format!("value-{n}").as_bytes());
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        assert_eq!(reader.join().unwrap() as u64, N);
        assert_eq!(l.len() as u64, N);
        let mut it = Iter::new(&*l);
        it.seek_to_first();
        for n in 0..N {
            assert!(it.valid(), "entry {n} missing");
            assert_eq!(it.key(), &ik(n)[..]);
            assert_eq!(it.value(), format!("value-{n}").as_bytes());
            it.next();
        }
        assert!(!it.valid());
        // Every level is sorted and a sublist of level 0.
        for level in 0..MAX_HEIGHT {
            let mut x = l.head.as_ptr();
            let mut prev_key: Option<&[u8]> = None;
            loop {
                // SAFETY: `x` is the head or a node linked at `level`, so its
                // height is > level; the list is quiescent.
                let next = unsafe { Node::link(x, level).load(Ordering::Acquire) };
                if next.is_null() {
                    break;
                }
                // SAFETY: `next` is a published node.
                let k = unsafe { Node::key(next) };
                if let Some(p) = prev_key {
                    assert_eq!(cmp(p, k), CmpOrdering::Less, "level {level} out of order");
                }
                prev_key = Some(k);
                x = next;
            }
        }
    }

    fn versioned(uk: u64, seq: u64) -> Vec<u8> {
        make_internal_key(format!("user{uk:06}").as_bytes(), seq, ValueType::Value)
    }

    fn hash_of(ikey: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&ikey[..ikey.len() - TRAILER_LEN])
    }

    /// What `hash_seek` must agree with: the first entry at or after
    /// `lookup` when it has `lookup`'s user key.
    fn seek_same_user<'a>(l: &'a SkipList, lookup: &[u8]) -> Option<(&'a [u8], &'a [u8])> {
        let (k, v) = l.seek_entry(lookup)?;
        (k[..k.len() - TRAILER_LEN] == lookup[..lookup.len() - TRAILER_LEN]).then_some((k, v))
    }

    #[test]
    fn hash_seek_agrees_with_the_skiplist_at_every_snapshot() {
        // A few slots for many keys: past 3/4 full, keys are left out and
        // the lookups of those fall back to the search (`Unknown`).
        let (keys, few) = if cfg!(miri) { (40, 16) } else { (300, 64) };
        for slots in [1 << 12, few] {
            let l = SkipList::with_hash_index(slots);
            for seq in 1..=5u64 {
                for uk in (0..keys).filter(|uk| uk % seq == 0) {
                    let k = versioned(uk, seq * 10);
                    l.insert_parts(&k, &[], format!("v{uk}.{seq}").as_bytes(), hash_of(&k));
                }
            }
            let mut unknown = 0;
            for uk in 0..keys + 20 {
                for snap in [0, 5, 10, 15, 25, 35, 45, 55, 1000] {
                    let lookup = versioned(uk, snap);
                    let want = seek_same_user(&l, &lookup);
                    match l.hash_seek(hash_of(&lookup), &lookup) {
                        HashSeek::Found(k, v) => assert_eq!(Some((k, v)), want),
                        HashSeek::Absent => assert_eq!(None, want, "key {uk} at {snap}"),
                        HashSeek::Unknown => unknown += 1,
                    }
                }
            }
            assert_eq!(unknown > 0, slots == few, "slots {slots}");
        }
        assert!(matches!(
            SkipList::new().hash_seek(1, &versioned(1, 1)),
            HashSeek::Unknown
        ));
    }

    /// Writers inserting versions of the same keys at once: each key's slot
    /// ends on its newest version, and readers running meanwhile always get
    /// an answer the list agrees with.
    #[test]
    fn concurrent_writers_keep_the_newest_version_in_the_hash() {
        const KEYS: u64 = if cfg!(miri) { 20 } else { 2_000 };
        const WRITERS: u64 = 4;
        let l = Arc::new(SkipList::with_hash_index(KEYS as usize * 2));
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let (l, done) = (l.clone(), done.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !done.load(Ordering::Acquire) {
                    let lookup = versioned(n % KEYS, u64::MAX >> 9);
                    if let HashSeek::Found(k, _) = l.hash_seek(hash_of(&lookup), &lookup) {
                        assert_eq!(&k[..k.len() - 8], &lookup[..lookup.len() - 8]);
                    }
                    n += 1;
                }
            })
        };
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for uk in 0..KEYS {
                        // Sequence numbers unique per (writer, key).
                        let k = versioned(uk, 1 + w + uk % 3 * WRITERS);
                        l.insert_parts(&k, &[], b"v", hash_of(&k));
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        reader.join().unwrap();
        for uk in 0..KEYS {
            let lookup = versioned(uk, u64::MAX >> 9);
            let newest = 1 + (WRITERS - 1) + uk % 3 * WRITERS;
            match l.hash_seek(hash_of(&lookup), &lookup) {
                HashSeek::Found(k, _) => assert_eq!(k, versioned(uk, newest)),
                _ => panic!("key {uk} not found through the hash"),
            }
        }
    }
}
