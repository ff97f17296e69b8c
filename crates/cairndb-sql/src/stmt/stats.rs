//! Table statistics: what `ANALYZE TABLE` counts (rows, bytes of rows
//! and of index entries, distinct values of each leading part of each
//! index) and what `SHOW TABLE STATUS`, `SHOW INDEX`, the
//! `information_schema` TABLES and STATISTICS tables and the join order
//! read back.
//!
//! Statistics are a snapshot as of the last `ANALYZE TABLE` of the table
//! (MySQL's persistent statistics; no automatic recount), kept in memory
//! in [`Stats`] and stored under the reserved index id
//! [`STATS_INDEX_ID`] (docs/format/sql-keys.md, "Table statistics"), one
//! entry per table keyed by its primary index id, so a table copy (new
//! ids) starts without statistics and a binary that predates them never
//! reads the entries. They are advice: nothing they say changes an
//! answer, only the order tables are read in and what the SHOW
//! statements print.
//!
//! Locking: [`Stats`] is one `RwLock` over a map of `Arc`s, held only to
//! clone or swap an `Arc`; counting runs on an engine iterator with no
//! lock of this module held.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use cairndb::{ReadOptions, TransactionDb, WriteOptions};
use parking_lot::RwLock;

use crate::context::StmtCx;
use crate::error::{SqlError, SqlResult};
use crate::keys;
use crate::output::Output;
use crate::row::{get_key_value, IndexDef, TableDef};
use crate::types::ColumnType;

/// The reserved index id under which table statistics are stored
/// (docs/format/sql-keys.md, "Table statistics").
pub(crate) const STATS_INDEX_ID: u32 = 2;

/// One table's statistics.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct TableStats {
    /// Rows (primary-key entries).
    pub rows: u64,
    /// Bytes of the primary-key entries, keys and values, as stored
    /// before compression.
    pub data_bytes: u64,
    /// Bytes of the secondary-index entries, likewise.
    pub index_bytes: u64,
    /// When it was counted: seconds since the Unix epoch.
    pub analyzed: i64,
    /// Per index: distinct values of its first 1, 2, ... key parts.
    pub indexes: Vec<IndexStats>,
}

/// One index's distinct-prefix counts.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct IndexStats {
    /// The index id.
    pub id: u32,
    /// `distinct[k]`: distinct values of the first `k + 1` key parts.
    pub distinct: Vec<u64>,
}

impl TableStats {
    /// MySQL's `Cardinality` of key part `seq` (0-based) of index `id`.
    pub(crate) fn cardinality(&self, id: u32, seq: usize) -> Option<u64> {
        self.indexes
            .iter()
            .find(|i| i.id == id)
            .and_then(|i| i.distinct.get(seq).copied())
    }

    /// Average bytes of a row (0 for an empty table).
    pub(crate) fn avg_row_length(&self) -> u64 {
        self.data_bytes.checked_div(self.rows).unwrap_or(0)
    }
}

/// The statistics of every analyzed table, by primary index id.
#[derive(Default)]
pub(crate) struct Stats {
    map: RwLock<HashMap<u32, Arc<TableStats>>>,
}

impl Stats {
    /// Reads the stored statistics of the tables whose primary index ids
    /// are `live`; with `sweep`, deletes the entries of any other id
    /// (tables dropped or copied since; not when a dictionary entry could
    /// not be read, since its ids are unknown). An entry that cannot be
    /// decoded reads as never analyzed (the next `ANALYZE TABLE` counts
    /// again).
    pub(crate) fn load(db: &TransactionDb, live: &HashSet<u32>, sweep: bool) -> SqlResult<Stats> {
        let (lower, upper) = keys::index_bounds(STATS_INDEX_ID);
        let mut it = db.db().iter(&ReadOptions {
            iterate_lower_bound: Some(lower.clone()),
            iterate_upper_bound: Some(upper),
            ..Default::default()
        })?;
        it.seek(&lower);
        let mut map = HashMap::new();
        let mut stale = Vec::new();
        while it.valid() {
            let (k, v) = (it.key(), it.value());
            let id = k
                .get(keys::INDEX_ID_LEN..)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes);
            match (id, serde_json::from_slice::<TableStats>(v)) {
                (Some(id), Ok(st)) if live.contains(&id) => {
                    map.insert(id, Arc::new(st));
                }
                _ => stale.push(k.to_vec()),
            }
            it.next();
        }
        it.status()?;
        drop(it);
        if sweep && !stale.is_empty() {
            let mut batch = cairndb::WriteBatch::new();
            for k in &stale {
                batch.delete(k);
            }
            db.db().write(&WriteOptions::default(), batch)?;
        }
        Ok(Stats {
            map: RwLock::new(map),
        })
    }

    /// The statistics of the table whose primary index id is `id`.
    pub(crate) fn get(&self, id: u32) -> Option<Arc<TableStats>> {
        self.map.read().get(&id).cloned()
    }

    /// Stores `st` as the statistics of `def`.
    fn put(&self, db: &TransactionDb, def: &TableDef, st: TableStats) -> SqlResult<()> {
        let value = serde_json::to_vec(&st)
            .map_err(|e| SqlError::internal(format!("table statistics: {e}")))?;
        db.db()
            .put(&WriteOptions::default(), &stats_key(def.primary.id), &value)?;
        self.map.write().insert(def.primary.id, Arc::new(st));
        Ok(())
    }
}

/// The key of the statistics of the table whose primary index is `id`.
fn stats_key(id: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(8);
    keys::put_index_id(&mut k, STATS_INDEX_ID);
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// Counts `def`'s rows, bytes and distinct key prefixes from one scan of
/// each of its indexes (each at its own latest state; no snapshot ties
/// them together, as statistics need none). Stops with 1317 / 3024 when
/// the statement is killed or runs out of time.
fn count(s: &StmtCx, def: &TableDef) -> SqlResult<TableStats> {
    let mut st = TableStats {
        analyzed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        ..TableStats::default()
    };
    let parts = |ix: &IndexDef| -> Vec<(ColumnType, bool)> {
        ix.columns
            .iter()
            .filter_map(|&c| def.columns.get(c))
            .map(|c| (c.ty, c.nullable))
            .collect()
    };
    let primary = if def.hidden_pk {
        Vec::new()
    } else {
        parts(&def.primary)
    };
    let (rows, bytes, distinct) = count_index(s, def, &def.primary, &primary)?;
    st.rows = rows;
    st.data_bytes = bytes;
    if !def.hidden_pk {
        st.indexes.push(IndexStats {
            id: def.primary.id,
            distinct,
        });
    }
    for ix in &def.secondary {
        let (_, bytes, distinct) = count_index(s, def, ix, &parts(ix))?;
        st.index_bytes += bytes;
        st.indexes.push(IndexStats {
            id: ix.id,
            distinct,
        });
    }
    Ok(st)
}

/// One index's entries, their bytes, and the distinct values of each
/// leading run of `parts` (the key parts' types and nullability).
fn count_index(
    s: &StmtCx,
    def: &TableDef,
    ix: &IndexDef,
    parts: &[(ColumnType, bool)],
) -> SqlResult<(u64, u64, Vec<u64>)> {
    let mut it = s.db.scan_index(ix.id)?;
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut distinct = vec![0u64; parts.len()];
    let mut prev: Vec<u8> = Vec::new();
    let mut prev_ends: Vec<usize> = Vec::with_capacity(parts.len());
    let mut ends: Vec<usize> = Vec::with_capacity(parts.len());
    while it.valid() {
        let k = it.key();
        n += 1;
        bytes += (k.len() + it.value().len()) as u64;
        ends.clear();
        let mut rest = k.get(keys::INDEX_ID_LEN..).unwrap_or_default();
        for (ty, nullable) in parts {
            if get_key_value(&mut rest, ty, *nullable).is_none() {
                return Err(SqlError::new(
                    1034,
                    "HY000",
                    format!(
                        "Index '{}' of table '{}' has a key that cannot be decoded: {}",
                        ix.name,
                        def.name,
                        k.escape_ascii()
                    ),
                ));
            }
            ends.push(k.len() - rest.len());
        }
        // The first key part where this entry's prefix differs from the
        // previous entry's: every longer prefix is new too.
        let first_new = if n == 1 {
            0
        } else {
            (0..ends.len())
                .find(|&i| {
                    let a = ends.get(i).and_then(|&e| k.get(..e));
                    let b = prev_ends.get(i).and_then(|&e| prev.get(..e));
                    a != b
                })
                .unwrap_or(ends.len())
        };
        for d in distinct.iter_mut().skip(first_new) {
            *d += 1;
        }
        prev.clear();
        prev.extend_from_slice(k);
        std::mem::swap(&mut prev_ends, &mut ends);
        if n % 4096 == 0 {
            s.check_interrupt()?;
        }
        it.next();
    }
    it.status()?;
    Ok((n, bytes, distinct))
}

/// ANALYZE TABLE: counts each table's statistics and stores them; the
/// result set of [`crate::ddl::per_table`] (SELECT and INSERT needed on
/// each table, as MySQL).
pub(crate) fn analyze(
    s: &StmtCx,
    tables: &[(Option<String>, String)],
    out: &mut dyn Output,
) -> SqlResult<()> {
    crate::ddl::per_table(s, tables, "analyze", out, |def| {
        let st = count(s, def)?;
        s.db.stats.put(&s.db.db, def, st)?;
        // Cached plans are compiled again, with the new join order.
        s.db.schema_epoch
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(())
    })
}
