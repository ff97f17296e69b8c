//! Writes a zip table (`docs/format/ziptable.md`) from sorted internal keys.
//!
//! `add` streams user keys into an fst builder and keeps each record's
//! trailer and value length in memory; value bytes go to a spool that stays
//! in memory up to `ZipTableOptions::soft_working_mem_limit` (and only as far
//! as the process-wide [`ZipMemBudget`] grants, the hard limit) and spills to
//! a temporary file in the database directory beyond that (format version
//! 3: a value that holds its own user key is spooled without it, and its
//! key position kept beside its length). A fraction
//! (`sample_ratio`) of the values is copied aside as dictionary samples,
//! and (format version 2) every `STAT_GROUP_EVERY`-th group of values as
//! entropy samples. `finish` decides whether the table filters hex runs
//! (version 4: when the samples' long hex runs are a large enough share;
//! then the samples are filtered and each group's values too), builds the
//! dictionary (version 2: the samples as raw content wrapped with entropy
//! tables by zstd; version 1: trained by zstd), then reads the spool back
//! in order and writes the compressed groups, followed by the dictionary, the offset
//! array, the key index, the trailer and key-start arrays, the properties,
//! the meta section and the footer, and syncs the file.
//!
//! Invariants: keys arrive strictly increasing in internal-key order (user
//! keys non-decreasing), as from a flush or compaction. A builder is used by
//! one thread; the budget is shared through atomics. The temporary file is
//! `filename::temp_file_name(dir, table_number)`, which file garbage
//! collection keeps while the table number is a pending output.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::env::{Fs, SequentialFile, WritableFile};
use crate::error::{Error, Result};
use crate::key;
use crate::options::ZipTableOptions;
use crate::sst::builder::TableFileInfo;
use crate::sst::format::{COMPRESSION_ZSTD, MAX_UNCOMPRESSED_BLOCK};
use crate::sst::properties::TableProperties;
use crate::sst::zip::bitpack::{encode_offsets, encode_packed};
use crate::sst::zip::format::{
    encode_envelope, is_packed, sec, Meta, Section, ZipFooter, FLAG_HAS_DICT, FLAG_HEX_RUNS,
    FLAG_KEY_IN_VALUE, ZIP_VERSION_HEX_RUNS, ZIP_VERSION_KEY_IN_VALUE, ZIP_VERSION_PACKED_SECTIONS,
};
use crate::sst::zip::hexrun;
use crate::util::coding::{put_varint32, put_varint64};
use crate::util::crc;

/// Bytes of working memory all zip table builds of a process may hold at
/// once (TerarkZipTable_hardZipWorkingMemLimit). Builds reserve in chunks;
/// a build that is refused spills to its temporary file instead of waiting,
/// so no build ever blocks on another.
#[derive(Debug)]
pub struct ZipMemBudget {
    limit: usize,
    used: AtomicUsize,
}

impl ZipMemBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> ZipMemBudget {
        ZipMemBudget {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// Takes `n` bytes if they fit under the limit.
    pub fn try_reserve(&self, n: usize) -> bool {
        let mut cur = self.used.load(Ordering::Relaxed);
        loop {
            let Some(next) = cur.checked_add(n).filter(|&x| x <= self.limit) else {
                return false;
            };
            match self
                .used
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Returns `n` bytes taken by `try_reserve`.
    pub fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    /// Bytes currently reserved.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// Where a build may put its temporary file and whose memory it uses.
#[derive(Clone)]
pub struct ZipBuildEnv {
    /// File system of the database.
    pub fs: Arc<dyn Fs>,
    /// The spool file (created only if the build spills).
    pub tmp_path: PathBuf,
    /// The process-wide working-memory budget.
    pub budget: Arc<ZipMemBudget>,
}

/// Reservation granularity against the budget.
const RESERVE_CHUNK: usize = 1 << 20;
/// Samples must be this many times the dictionary size for zstd training.
const TRAIN_MIN_SAMPLE_FACTOR: usize = 8;
/// First bytes of a formatted zstd dictionary (ZSTD_MAGIC_DICTIONARY, LE).
const ZSTD_DICT_MAGIC: [u8; 4] = [0x37, 0xA4, 0x30, 0xEC];
/// Read buffer of the spool reader.
const SPOOL_READ_BUF: usize = 1 << 20;
/// Version 2: one group in this many is copied aside as an entropy sample
/// for the dictionary's Huffman and FSE tables (`ziptable.md`, "Dictionary
/// section").
const STAT_GROUP_EVERY: u64 = 16;
/// Version 2: entropy samples stop growing at this many bytes.
const STAT_SAMPLE_CAP: usize = 16 << 20;
/// Version 2: zstd level of the packed sections (`ziptable.md`, "Packed
/// sections"): the dictionary, key index, trailer and key-start arrays.
/// Level 12 made them 0.2% smaller but took a fifth of a table's build
/// time on rows with many short records (sysbench's).
const SECTION_LEVEL: i32 = 6;
/// Version 2: the level a table's groups fall back to when the configured
/// one does not pay for itself (`ZipTableOptions::level_trial_gain`).
pub const FAST_LEVEL: i32 = 1;
/// Version 2: input bytes of the level trial (whole sampled groups).
const TRIAL_BYTES: usize = 512 << 10;
/// Version 2: fewer sampled groups than this skip the level trial.
const TRIAL_MIN_GROUPS: usize = 8;
/// Version 2: dictionary id written into the formatted dictionary (frames
/// carry none; a fixed value keeps builds byte-for-byte repeatable).
const DICT_ID: u32 = 32768;

/// Version 4: a table's groups use the hex-run filter when the digits
/// of long hex runs are at least 1/`HEX_MIN_SHARE` of its sampled value
/// bytes (`ziptable.md`, "Hex runs"). Below that the filter saves little
/// and costs every group decode a pass over its bytes.
const HEX_MIN_SHARE: usize = 32;

/// Version 3: user keys shorter than this are never looked for in their
/// values (a short key matches by chance, and saves little when it does).
const MIN_KEY_IN_VALUE: usize = 4;

/// Builds a zip table (see the module doc).
pub struct ZipTableBuilder {
    zip: ZipTableOptions,
    file: Box<dyn WritableFile>,
    env: ZipBuildEnv,
    index: fst::MapBuilder<Vec<u8>>,
    last_ikey: Vec<u8>,
    num_keys: u64,
    key_starts: Vec<u64>,
    trailers: Vec<u64>,
    lens: Vec<u32>,
    /// Version 3: per record, 0 or 1 + where its user key was cut out of
    /// its value (`ziptable.md`, "Group"); empty below version 3.
    key_pos: Vec<u32>,
    /// A value with its key cut out, assembled for the spool.
    cut: Vec<u8>,
    mem: Vec<u8>,
    reserved: usize,
    spill: Option<Box<dyn WritableFile>>,
    samples: Vec<u8>,
    sample_sizes: Vec<usize>,
    sample_credit: f64,
    stat_samples: Vec<u8>,
    stat_sizes: Vec<usize>,
    props: TableProperties,
    error: Option<Error>,
}

impl ZipTableBuilder {
    /// A builder writing to `file` (which should be empty). `prefix_name` is
    /// recorded in the properties like the block-based builder does.
    pub fn new(
        zip: ZipTableOptions,
        prefix_name: String,
        file: Box<dyn WritableFile>,
        env: ZipBuildEnv,
    ) -> ZipTableBuilder {
        ZipTableBuilder {
            zip,
            file,
            env,
            index: fst::MapBuilder::memory(),
            last_ikey: Vec::new(),
            num_keys: 0,
            key_starts: Vec::new(),
            trailers: Vec::new(),
            lens: Vec::new(),
            key_pos: Vec::new(),
            cut: Vec::new(),
            mem: Vec::new(),
            reserved: 0,
            spill: None,
            samples: Vec::new(),
            sample_sizes: Vec::new(),
            sample_credit: 0.0,
            stat_samples: Vec::new(),
            stat_sizes: Vec::new(),
            props: TableProperties {
                compression: COMPRESSION_ZSTD,
                prefix_extractor_name: prefix_name,
                smallest_seq: u64::MAX,
                ..TableProperties::default()
            },
            error: None,
        }
    }

    fn path_str(&self) -> String {
        self.file.path().display().to_string()
    }

    /// Adds an entry. REQUIRES: `ikey` is an internal key greater than every
    /// key added before.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let Some(parsed) = key::parse_internal_key(ikey) else {
            return Err(Error::invalid(format!(
                "zip table builder for {}: not an internal key ({} bytes)",
                self.path_str(),
                ikey.len()
            )));
        };
        if u32::try_from(value.len()).is_err() {
            return Err(Error::invalid(format!(
                "zip table builder for {}: value of {} bytes is too large",
                self.path_str(),
                value.len()
            )));
        }
        let new_key =
            self.props.num_entries == 0 || key::user_key(&self.last_ikey) != parsed.user_key;
        if new_key {
            if let Err(e) = self.index.insert(parsed.user_key, self.num_keys) {
                let e = Error::invalid(format!(
                    "zip table builder for {}: user keys out of order ({e})",
                    self.path_str()
                ));
                self.error = Some(e.clone());
                return Err(e);
            }
            self.key_starts.push(self.props.num_entries);
            self.num_keys += 1;
        } else if !key::compare_internal(&self.last_ikey, ikey).is_lt() {
            return Err(Error::invalid(format!(
                "zip table builder for {}: internal keys out of order",
                self.path_str()
            )));
        }
        let rec = self.props.num_entries;
        self.props.add_entry(ikey, &parsed, value.len());
        // Version 3: the value is stored without its user key when it holds
        // it (the key index has the key already).
        let mut cut = std::mem::take(&mut self.cut);
        let found = self.find_key_in_value(parsed.user_key, value);
        if self.zip.format_version >= ZIP_VERSION_KEY_IN_VALUE {
            // p < value.len() <= u32::MAX (checked above), so p + 1 fits.
            self.key_pos.push(found.map_or(0, |p| p as u32 + 1));
        }
        let value = match found {
            Some(p) => {
                cut.clear();
                cut.extend_from_slice(&value[..p]);
                cut.extend_from_slice(&value[p + parsed.user_key.len()..]);
                &cut[..]
            }
            None => value,
        };
        let r = self.add_stored(ikey, rec, value);
        self.cut = cut;
        r
    }

    /// Where `value` holds `user_key`, when this table cuts keys out of
    /// values (version 3 on) and the key is long enough to look for.
    fn find_key_in_value(&self, user_key: &[u8], value: &[u8]) -> Option<usize> {
        if self.zip.format_version < ZIP_VERSION_KEY_IN_VALUE
            || user_key.len() < MIN_KEY_IN_VALUE
            || value.len() < user_key.len()
        {
            return None;
        }
        if value.starts_with(user_key) {
            return Some(0);
        }
        memchr::memmem::find(value, user_key)
    }

    /// Records the stored bytes of record `rec` (its value, less its user
    /// key when that was cut out).
    fn add_stored(&mut self, ikey: &[u8], rec: u64, value: &[u8]) -> Result<()> {
        if self.zip.format_version >= ZIP_VERSION_PACKED_SECTIONS && self.zip.dict_size > 0 {
            self.add_stat_sample(rec, value);
        }
        self.last_ikey.clear();
        self.last_ikey.extend_from_slice(ikey);
        self.trailers.push(key::trailer(ikey));
        // Fits: no longer than the value `add` checked.
        self.lens.push(value.len() as u32);
        if !value.is_empty() {
            self.sample_credit += value.len() as f64 * self.zip.sample_ratio;
            if self.sample_credit >= value.len() as f64 {
                self.sample_credit -= value.len() as f64;
                self.samples.extend_from_slice(value);
                self.sample_sizes.push(value.len());
            }
        }
        if let Err(e) = self.spool(value) {
            self.error = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    /// Copies record `rec`'s value into the entropy samples when its group
    /// is one of every `STAT_GROUP_EVERY`; each sampled group is one sample.
    fn add_stat_sample(&mut self, rec: u64, value: &[u8]) {
        let g = self.zip.group_size.max(1) as u64;
        if !(rec / g).is_multiple_of(STAT_GROUP_EVERY) || self.stat_samples.len() >= STAT_SAMPLE_CAP
        {
            return;
        }
        if rec.is_multiple_of(g) || self.stat_sizes.is_empty() {
            self.stat_sizes.push(0);
        }
        self.stat_samples.extend_from_slice(value);
        if let Some(last) = self.stat_sizes.last_mut() {
            *last += value.len();
        }
    }

    /// Appends value bytes to the in-memory spool, spilling it first when it
    /// may not grow.
    fn spool(&mut self, value: &[u8]) -> Result<()> {
        let need = self.mem.len() + value.len();
        while need > self.reserved {
            let may_grow = self.reserved + RESERVE_CHUNK <= self.zip.soft_working_mem_limit
                && self.env.budget.try_reserve(RESERVE_CHUNK);
            if !may_grow {
                break;
            }
            self.reserved += RESERVE_CHUNK;
        }
        if need > self.reserved && !self.mem.is_empty() {
            self.spill_mem()?;
        }
        if value.len() > self.reserved {
            // A single value larger than the memory we may hold goes
            // straight to the spool file.
            self.spill_bytes(value)
        } else {
            self.mem.extend_from_slice(value);
            Ok(())
        }
    }

    fn spill_file(&mut self) -> Result<&mut Box<dyn WritableFile>> {
        if self.spill.is_none() {
            self.spill = Some(self.env.fs.create(&self.env.tmp_path)?);
        }
        Ok(self.spill.as_mut().expect("spill file just created"))
    }

    fn spill_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.spill_file()?.append(bytes)
    }

    fn spill_mem(&mut self) -> Result<()> {
        let mem = std::mem::take(&mut self.mem);
        let r = self.spill_bytes(&mem);
        self.mem = mem;
        self.mem.clear();
        r
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Raw key and value bytes added so far: compaction cuts zip outputs by
    /// input size (their compressed size is known only at `finish`).
    pub fn estimated_file_size(&self) -> u64 {
        self.props.raw_key_size + self.props.raw_value_size
    }

    /// Bytes of working memory held (spool, samples, per-record arrays).
    pub fn memory_usage(&self) -> usize {
        self.mem.capacity()
            + self.samples.capacity()
            + self.stat_samples.capacity()
            + self.trailers.capacity() * 8
            + self.lens.capacity() * 4
            + self.key_pos.capacity() * 4
            + self.cut.capacity()
            + self.key_starts.capacity() * 8
    }

    /// The value dictionary: trained by zstd from the samples when there are
    /// enough of them (`TRAIN_MIN_SAMPLE_FACTOR` times the dictionary size),
    /// else the samples themselves as a raw-content dictionary (training has
    /// a fixed cost of tens of milliseconds that small tables do not repay).
    fn train_dictionary(&mut self) -> Option<Vec<u8>> {
        if self.zip.dict_size == 0 || self.samples.is_empty() {
            return None;
        }
        let samples = std::mem::take(&mut self.samples);
        let sizes = std::mem::take(&mut self.sample_sizes);
        if samples.len() >= TRAIN_MIN_SAMPLE_FACTOR * self.zip.dict_size && sizes.len() >= 8 {
            if let Ok(d) = zstd::dict::from_continuous(&samples, &sizes, self.zip.dict_size) {
                if !d.is_empty() {
                    return Some(d);
                }
            }
        }
        // Raw content: the most recent samples, up to the size limit. zstd
        // would read bytes starting with its dictionary magic as a formatted
        // dictionary, so such a start is shifted by one zero byte.
        let start = samples.len().saturating_sub(self.zip.dict_size);
        let mut d = Vec::with_capacity(self.zip.dict_size + 1);
        if samples[start..].starts_with(&ZSTD_DICT_MAGIC) {
            d.push(0);
        }
        d.extend_from_slice(&samples[start..]);
        (d.len() >= 8).then_some(d)
    }

    /// Version 2's dictionary (`ziptable.md`, "Dictionary section") and the
    /// level of the groups: the sampled values, thinned evenly to
    /// `dict_size`, as content, wrapped by zstd with entropy tables computed
    /// from the entropy samples (the bare content when zstd cannot finalise
    /// it); the level from [`choose_level`] on those samples.
    fn sampled_dictionary(&mut self) -> (Option<Vec<u8>>, i32) {
        let level = self.zip.compression_level;
        if self.zip.dict_size == 0 || self.samples.is_empty() {
            return (None, level);
        }
        let samples = std::mem::take(&mut self.samples);
        let sizes = std::mem::take(&mut self.sample_sizes);
        let mut content = Vec::with_capacity(samples.len().min(self.zip.dict_size) + 1);
        if samples.len() <= self.zip.dict_size {
            content.extend_from_slice(&samples);
        } else {
            // Keep whole values, evenly spread, up to the cap.
            let keep = self.zip.dict_size as f64 / samples.len() as f64;
            let mut credit = 0.0;
            let mut pos = 0usize;
            for len in sizes {
                credit += keep * len as f64;
                if credit >= len as f64 && content.len() + len <= self.zip.dict_size {
                    credit -= len as f64;
                    content.extend_from_slice(samples.get(pos..pos + len).unwrap_or_default());
                }
                pos += len;
            }
        }
        drop(samples);
        if content.starts_with(&ZSTD_DICT_MAGIC) {
            content.insert(0, 0);
        }
        if content.len() < 8 {
            return (None, level);
        }
        let stats = std::mem::take(&mut self.stat_samples);
        let mut stat_sizes = std::mem::take(&mut self.stat_sizes);
        stat_sizes.retain(|&n| n > 0);
        if stat_sizes.is_empty() {
            return (Some(content), level);
        }
        let level = choose_level(&self.zip, &content, &stats, &stat_sizes);
        let dict = finalize_dictionary(&content, &stats, &stat_sizes, level).unwrap_or(content);
        (Some(dict), level)
    }

    /// Version 4: the escape byte of the hex-run filter when this table
    /// uses it (its samples' long hex runs are a large enough share).
    fn hex_escape(&self) -> Option<u8> {
        if self.zip.format_version < ZIP_VERSION_HEX_RUNS || self.samples.is_empty() {
            return None;
        }
        let digits = hexrun::packable_digits(&self.samples);
        (digits * HEX_MIN_SHARE >= self.samples.len()).then(|| hexrun::choose_escape(&self.samples))
    }

    /// Replaces the dictionary and entropy samples by their filtered text
    /// (the packed digits are not what the groups' text repeats).
    fn filter_samples(&mut self, esc: u8) {
        let mut packed = Vec::new();
        for (bytes, sizes) in [
            (&mut self.samples, &mut self.sample_sizes),
            (&mut self.stat_samples, &mut self.stat_sizes),
        ] {
            let mut text = Vec::with_capacity(bytes.len());
            let mut at = 0usize;
            for size in sizes.iter_mut() {
                let before = text.len();
                let piece = bytes.get(at..at + *size).unwrap_or_default();
                hexrun::filter(piece, esc, &mut text, &mut packed);
                packed.clear();
                at += *size;
                *size = text.len() - before;
            }
            *bytes = text;
        }
    }

    /// Writes everything and syncs the file.
    pub fn finish(mut self) -> Result<TableFileInfo> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let r = self.write_all();
        self.cleanup();
        r
    }

    fn zstd_err(&self, op: &'static str, code: usize) -> Error {
        Error::io(
            op,
            self.file.path(),
            std::io::Error::other(zstd::zstd_safe::get_error_name(code)),
        )
    }

    fn write_all(&mut self) -> Result<TableFileInfo> {
        use zstd::zstd_safe::{CCtx, CParameter, DictAttachPref, FrameFormat};
        let hex = self.hex_escape();
        if let Some(esc) = hex {
            self.filter_samples(esc);
        }
        let (dict, level) = if self.zip.format_version >= ZIP_VERSION_PACKED_SECTIONS {
            self.sampled_dictionary()
        } else {
            (self.train_dictionary(), self.zip.compression_level)
        };
        let mut cctx = CCtx::create();
        for p in [
            CParameter::CompressionLevel(level),
            CParameter::Format(FrameFormat::Magicless),
            CParameter::ContentSizeFlag(false),
            CParameter::ChecksumFlag(false),
            CParameter::DictIdFlag(false),
        ] {
            cctx.set_parameter(p)
                .map_err(|c| self.zstd_err("zstd set parameter", c))?;
        }
        if self.zip.min_match != 0 {
            cctx.set_parameter(CParameter::MinMatch(self.zip.min_match))
                .map_err(|c| self.zstd_err("zstd set parameter", c))?;
        }
        // Groups over zstd's attach cutoff (about 32 KiB for these levels)
        // would copy the dictionary's match tables into the context for
        // every frame: with groups of 64 Debian rows that memmove was a
        // quarter of the build. Attached, each group searches the
        // dictionary's tables in place.
        cctx.set_parameter(CParameter::ForceAttachDict(DictAttachPref::ForceAttach))
            .map_err(|c| self.zstd_err("zstd set parameter", c))?;
        if let Some(d) = &dict {
            cctx.load_dictionary(d)
                .map_err(|c| self.zstd_err("zstd load dictionary", c))?;
        }
        let mut spool = match self.spill.take() {
            Some(mut f) => {
                f.flush()?;
                drop(f);
                Some(SpoolReader::new(
                    self.env.fs.open_sequential(&self.env.tmp_path)?,
                ))
            }
            None => None,
        };
        let mut mem_pos = 0usize;
        let group_size = self.zip.group_size as u64;
        let n = self.props.num_entries;
        let num_groups = n.div_ceil(group_size);
        let mut offsets = Vec::with_capacity(num_groups as usize + 1);
        let mut offset = 0u64;
        let mut raw = Vec::new();
        let mut out = Vec::new();
        let mut head = Vec::with_capacity(16);
        let (mut text, mut packed) = (Vec::new(), Vec::new());
        // Positions are stored only when some value held its key.
        let key_in_value = self.key_pos.iter().any(|&p| p != 0);
        for g in 0..num_groups {
            let (a, b) = (g * group_size, ((g + 1) * group_size).min(n));
            raw.clear();
            for r in a..b {
                put_varint32(&mut raw, self.lens[r as usize]);
            }
            if key_in_value {
                for r in a..b {
                    put_varint32(&mut raw, self.key_pos[r as usize]);
                }
            }
            let hdr = raw.len();
            for r in a..b {
                let len = self.lens[r as usize] as usize;
                let from_spool = match &mut spool {
                    Some(s) if !s.done => s.take(len, &mut raw)?,
                    _ => false,
                };
                if !from_spool {
                    let Some(v) = self.mem.get(mem_pos..mem_pos + len) else {
                        return Err(Error::corruption(
                            &self.env.tmp_path,
                            0,
                            "zip build spool is shorter than the values added",
                        ));
                    };
                    raw.extend_from_slice(v);
                    mem_pos += len;
                }
            }
            // Version 4: the values' hex runs leave the text for the packed
            // digits, which the body ends with (`ziptable.md`, "Hex runs").
            packed.clear();
            if let Some(esc) = hex {
                text.clear();
                text.extend_from_slice(&raw[..hdr]);
                let mut at = hdr;
                for r in a..b {
                    let len = self.lens[r as usize] as usize;
                    hexrun::filter(&raw[at..at + len], esc, &mut text, &mut packed);
                    at += len;
                }
                std::mem::swap(&mut raw, &mut text);
            }
            let raw_len = raw.len() + packed.len();
            // A group larger than the reader's decompression limit (huge
            // values) is stored raw: raw groups have no such limit.
            // A group without value bytes (keys only, as a secondary
            // index's entries) is stored raw too: its body is a few bytes
            // of lengths, which a reader parses in place, where a
            // compressed one would cost a decompression (and a block-cache
            // entry) per group read for the bytes or so it saves.
            let no_values = (a..b).all(|r| self.lens.get(r as usize) == Some(&0));
            out.clear();
            if raw_len <= MAX_UNCOMPRESSED_BLOCK && !no_values {
                out.reserve(zstd::zstd_safe::compress_bound(raw_len));
                if packed.is_empty() {
                    cctx.compress2(&mut out, &raw).map(|_| ())
                } else {
                    compress_two_blocks(&mut cctx, &mut out, &raw, &packed)
                }
                .map_err(|c| self.zstd_err("zstd compress", c))?;
            }
            let compressed = !out.is_empty() && out.len() < raw_len;
            if !compressed {
                raw.extend_from_slice(&packed);
            }
            let body: &[u8] = if compressed { &out } else { &raw };
            // varint64: a group of values up to u32::MAX bytes each can be
            // 2 GiB or more, whose `raw_len << 1` would not fit a u32.
            head.clear();
            put_varint64(&mut head, ((raw_len as u64) << 1) | compressed as u64);
            if hex.is_some() {
                put_varint64(&mut head, packed.len() as u64);
            }
            let c = crc::mask(crc::extend(crc::crc32c(&head), body));
            offsets.push(offset);
            self.file.append(&c.to_le_bytes())?;
            self.file.append(&head)?;
            self.file.append(body)?;
            offset += (4 + head.len() + body.len()) as u64;
        }
        offsets.push(offset);
        if let Some(s) = &mut spool {
            let mut probe = Vec::new();
            if !s.done && s.take(0, &mut probe)? {
                return Err(Error::corruption(
                    &self.env.tmp_path,
                    s.consumed,
                    "zip build spool is longer than the values added",
                ));
            }
        }
        self.props.data_size = offset;
        self.props.num_data_blocks = num_groups;
        self.props.largest_key = self.last_ikey.clone();
        if n == 0 {
            self.props.smallest_seq = 0;
        }
        let mut meta = Meta {
            group_size: self.zip.group_size as u32,
            num_records: n,
            num_keys: self.num_keys,
            num_groups,
            flags: if dict.is_some() { FLAG_HAS_DICT } else { 0 }
                | if key_in_value { FLAG_KEY_IN_VALUE } else { 0 }
                | if hex.is_some() { FLAG_HEX_RUNS } else { 0 },
            compression_level: level,
            sections: [Section::default(); 6],
            hex_escape: hex.unwrap_or(0),
        };
        let mut pos = offset;
        let version = self.zip.format_version;
        let key_index_in_place = self.zip.key_index_in_place;
        let path = self.file.path().to_path_buf();
        let mut write_section = |file: &mut Box<dyn WritableFile>,
                                 s: Option<usize>,
                                 contents: &[u8]|
         -> Result<Section> {
            // The section is `head` then `body`: an envelope's header and
            // the contents it keeps raw are written without joining them,
            // so a raw key index is not copied.
            let mut head = Vec::new();
            let packed;
            let body = match s {
                Some(s) if is_packed(version, s) && !contents.is_empty() => {
                    if s == sec::INDEX && key_index_in_place {
                        put_varint64(&mut head, (contents.len() as u64) << 1);
                        contents
                    } else {
                        packed = encode_envelope(contents, SECTION_LEVEL).map_err(|c| {
                            Error::io(
                                "zstd compress section",
                                &path,
                                std::io::Error::other(zstd::zstd_safe::get_error_name(c)),
                            )
                        })?;
                        &packed[..]
                    }
                }
                _ => contents,
            };
            let sec = Section {
                offset: pos,
                size: (head.len() + body.len()) as u64,
                crc: crc::mask(crc::extend(crc::crc32c(&head), body)),
            };
            if !head.is_empty() {
                file.append(&head)?;
            }
            file.append(body)?;
            pos += sec.size;
            Ok(sec)
        };
        meta.sections[sec::DICT] = write_section(
            &mut self.file,
            Some(sec::DICT),
            dict.as_deref().unwrap_or(&[]),
        )?;
        drop(dict);
        let mut b = Vec::new();
        encode_offsets(&mut b, &offsets);
        meta.sections[sec::OFFSETS] = write_section(&mut self.file, Some(sec::OFFSETS), &b)?;
        let index = std::mem::replace(&mut self.index, fst::MapBuilder::memory())
            .into_inner()
            .map_err(|e| Error::invalid(format!("zip key index for {}: {e}", self.path_str())))?;
        self.props.index_size = index.len() as u64;
        meta.sections[sec::INDEX] = write_section(&mut self.file, Some(sec::INDEX), &index)?;
        b.clear();
        encode_packed(&mut b, &self.trailers);
        meta.sections[sec::TRAILERS] = write_section(&mut self.file, Some(sec::TRAILERS), &b)?;
        b.clear();
        if self.num_keys != n {
            self.key_starts.push(n);
            encode_packed(&mut b, &self.key_starts);
        }
        meta.sections[sec::KEY_STARTS] = write_section(&mut self.file, Some(sec::KEY_STARTS), &b)?;
        meta.sections[sec::PROPS] =
            write_section(&mut self.file, Some(sec::PROPS), &self.props.encode())?;
        let meta_bytes = meta.encode();
        let meta_sec = write_section(&mut self.file, None, &meta_bytes)?;
        let footer = ZipFooter {
            meta: meta_sec,
            version: self.zip.format_version,
        };
        self.file.append(&footer.encode())?;
        pos += footer.encode().len() as u64;
        self.file.flush()?;
        self.file.sync()?;
        Ok(TableFileInfo {
            file_size: pos,
            num_entries: n,
            smallest: self.props.smallest_key.clone(),
            largest: self.props.largest_key.clone(),
            props: self.props.clone(),
        })
    }

    fn cleanup(&mut self) {
        if self.reserved > 0 {
            self.env.budget.release(self.reserved);
            self.reserved = 0;
        }
        self.spill = None;
        if self.env.fs.exists(&self.env.tmp_path) {
            // Best effort: a leftover temporary file is deleted by file
            // garbage collection once the table number is no longer pending.
            let _ = self.env.fs.remove_file(&self.env.tmp_path);
        }
    }

    /// Drops the builder without finishing the file (the caller deletes it).
    pub fn abandon(mut self) {
        self.cleanup();
    }
}

impl Drop for ZipTableBuilder {
    fn drop(&mut self) {
        if self.reserved > 0 {
            self.env.budget.release(self.reserved);
            self.reserved = 0;
        }
    }
}

/// The level of a table's groups (`ZipTableOptions::level_trial_gain`):
/// compresses up to `TRIAL_BYTES` of the entropy samples (whole sampled
/// groups, evenly spread; `sizes` bytes each) with `content` as a
/// raw-content dictionary, at `compression_level` and at `FAST_LEVEL`, and
/// keeps `compression_level` only when it saves at least the asked share.
/// Deterministic: the same rows give the same level. Any zstd error keeps
/// `compression_level`.
fn choose_level(zip: &ZipTableOptions, content: &[u8], samples: &[u8], sizes: &[usize]) -> i32 {
    use zstd::zstd_safe::{CCtx, CParameter, DictAttachPref, FrameFormat};
    let level = zip.compression_level;
    if zip.level_trial_gain <= 0.0 || level <= FAST_LEVEL || sizes.len() < TRIAL_MIN_GROUPS {
        return level;
    }
    let total: usize = sizes.iter().sum();
    // One group in `every`, so that about TRIAL_BYTES are compressed.
    let every = total.div_ceil(TRIAL_BYTES).max(1);
    let cctx_at = |l: i32| -> Option<CCtx<'static>> {
        let mut c = CCtx::create();
        for p in [
            CParameter::ForceAttachDict(DictAttachPref::ForceAttach),
            CParameter::CompressionLevel(l),
            CParameter::Format(FrameFormat::Magicless),
            CParameter::ContentSizeFlag(false),
            CParameter::ChecksumFlag(false),
            CParameter::DictIdFlag(false),
        ] {
            c.set_parameter(p).ok()?;
        }
        if zip.min_match != 0 {
            c.set_parameter(CParameter::MinMatch(zip.min_match)).ok()?;
        }
        c.load_dictionary(content).ok()?;
        Some(c)
    };
    let (Some(mut slow), Some(mut fast)) = (cctx_at(level), cctx_at(FAST_LEVEL)) else {
        return level;
    };
    let (mut slow_bytes, mut fast_bytes) = (0usize, 0usize);
    let mut out = Vec::new();
    let mut pos = 0usize;
    for (i, &n) in sizes.iter().enumerate() {
        let Some(group) = samples.get(pos..pos + n) else {
            break;
        };
        pos += n;
        if i % every != 0 {
            continue;
        }
        for (cctx, bytes) in [(&mut slow, &mut slow_bytes), (&mut fast, &mut fast_bytes)] {
            out.clear();
            out.reserve(zstd::zstd_safe::compress_bound(n));
            match cctx.compress2(&mut out, group) {
                // An incompressible group would be stored raw.
                Ok(_) => *bytes += out.len().min(n),
                Err(_) => return level,
            }
        }
    }
    if fast_bytes == 0 {
        return level;
    }
    let saved = 1.0 - slow_bytes as f64 / fast_bytes as f64;
    if saved >= zip.level_trial_gain {
        level
    } else {
        FAST_LEVEL
    }
}

/// Compresses `text` and then `packed` into `out` as one zstd frame, the
/// packed digits in a block of their own so that their bytes do not share
/// the text's literal Huffman table (`ziptable.md`, "Hex runs").
fn compress_two_blocks(
    cctx: &mut zstd::zstd_safe::CCtx<'static>,
    out: &mut Vec<u8>,
    text: &[u8],
    packed: &[u8],
) -> std::result::Result<(), usize> {
    use zstd::zstd_safe::{zstd_sys::ZSTD_EndDirective, InBuffer, OutBuffer};
    // The size lets zstd pick the parameters `compress2` would for it.
    cctx.set_pledged_src_size(Some((text.len() + packed.len()) as u64))?;
    for (part, op) in [
        (text, ZSTD_EndDirective::ZSTD_e_flush),
        (packed, ZSTD_EndDirective::ZSTD_e_end),
    ] {
        let mut input = InBuffer::around(part);
        loop {
            if out.capacity() - out.len() < 256 {
                out.reserve(out.capacity().max(4096));
            }
            let pos = out.len();
            let left =
                cctx.compress_stream2(&mut OutBuffer::around_pos(out, pos), &mut input, op)?;
            if left == 0 && input.pos() == part.len() {
                break;
            }
        }
    }
    Ok(())
}

/// Wraps raw dictionary `content` into a formatted zstd dictionary whose
/// entropy tables come from compressing `samples` (concatenated, `sizes`
/// bytes each) at `level`. `None` when zstd refuses.
fn finalize_dictionary(
    content: &[u8],
    samples: &[u8],
    sizes: &[usize],
    level: i32,
) -> Option<Vec<u8>> {
    use zstd::zstd_safe::zstd_sys;
    let total: usize = sizes.iter().sum();
    if total > samples.len() {
        return None;
    }
    let nb = u32::try_from(sizes.len()).ok()?;
    // Room for the header (magic, id, entropy tables: a few KiB) and all
    // of the content; with less, zstd would cut the content's start.
    let mut out = vec![0u8; content.len() + (64 << 10)];
    let params = zstd_sys::ZDICT_params_t {
        compressionLevel: level,
        notificationLevel: 0,
        dictID: DICT_ID,
    };
    // SAFETY: every pointer comes from a live slice or Vec with the length
    // passed beside it: `out` is writable for `out.len()` bytes, `content`
    // readable for `content.len()`, `samples` for the sum of `sizes` (checked
    // above to be within `samples.len()`), and `sizes` holds `nb` entries.
    // zstd reads and writes only within those bounds and keeps no pointer
    // after returning.
    let n = unsafe {
        zstd_sys::ZDICT_finalizeDictionary(
            out.as_mut_ptr().cast(),
            out.len(),
            content.as_ptr().cast(),
            content.len(),
            samples.as_ptr().cast(),
            sizes.as_ptr(),
            nb,
            params,
        )
    };
    // SAFETY: ZDICT_isError only inspects the integer it is given.
    if unsafe { zstd_sys::ZDICT_isError(n) } != 0 || n > out.len() {
        return None;
    }
    out.truncate(n);
    Some(out)
}

/// Reads the spool file back in order.
struct SpoolReader {
    file: Box<dyn SequentialFile>,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    consumed: u64,
    done: bool,
}

impl SpoolReader {
    fn new(file: Box<dyn SequentialFile>) -> SpoolReader {
        SpoolReader {
            file,
            buf: vec![0; SPOOL_READ_BUF],
            pos: 0,
            len: 0,
            consumed: 0,
            done: false,
        }
    }

    /// Appends the next `n` bytes to `dst`. False (appending nothing) when
    /// the file is exhausted exactly here: the rest is in memory. A file
    /// ending inside a value is a `Corruption` error.
    fn take(&mut self, mut n: usize, dst: &mut Vec<u8>) -> Result<bool> {
        if self.pos == self.len && !self.refill()? {
            self.done = true;
            return Ok(false);
        }
        while n > 0 {
            if self.pos == self.len && !self.refill()? {
                return Err(Error::corruption(
                    self.file.path(),
                    self.consumed,
                    "zip build spool ends inside a value",
                ));
            }
            let k = n.min(self.len - self.pos);
            dst.extend_from_slice(&self.buf[self.pos..self.pos + k]);
            self.pos += k;
            self.consumed += k as u64;
            n -= k;
        }
        Ok(true)
    }

    /// Reads the next buffer; false at the end of the file.
    fn refill(&mut self) -> Result<bool> {
        self.len = self.file.read(&mut self.buf)?;
        self.pos = 0;
        Ok(self.len > 0)
    }
}
