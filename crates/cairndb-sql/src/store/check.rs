//! Consistency check of the SQL tables (`cairndb sql-check`): every row
//! decodes, every row has exactly its secondary-index entries, and every
//! index entry leads to a row whose columns it matches. Reads one
//! snapshot, so it may run while the server serves writes.

use std::collections::HashSet;

use cairndb::ReadOptions;

use crate::db::SqlDb;
use crate::error::SqlResult;
use crate::exec::successor;
use crate::keys;
use crate::row::{self, TableDef};
use crate::types::Value;

/// What the check found.
#[derive(Debug, Default, Clone)]
pub struct CheckReport {
    /// Tables checked.
    pub tables: u64,
    /// Rows read.
    pub rows: u64,
    /// Index entries read.
    pub index_entries: u64,
    /// Problems, each naming the table, index and key.
    pub problems: Vec<String>,
}

/// Checks every table of every database.
pub fn check(db: &SqlDb) -> SqlResult<CheckReport> {
    let tables: Vec<(String, std::sync::Arc<TableDef>)> = {
        let cat = db.catalog.read();
        cat.dbs
            .values()
            .flat_map(|d| d.tables.values().map(|t| (d.name.clone(), t.clone())))
            .collect()
    };
    let snap = db.db.db().snapshot();
    let mut rep = CheckReport::default();
    for (dbname, t) in tables {
        rep.tables += 1;
        check_table(db, &snap, &dbname, &t, &mut rep)?;
        if rep.problems.len() > 1000 {
            rep.problems.push("(stopped after 1000 problems)".into());
            break;
        }
    }
    Ok(rep)
}

fn range(id: u32) -> (Vec<u8>, Vec<u8>) {
    let mut lo = Vec::new();
    keys::put_index_id(&mut lo, id);
    let hi = successor(&lo);
    (lo, hi)
}

fn check_table(
    db: &SqlDb,
    snap: &cairndb::Snapshot,
    dbname: &str,
    t: &TableDef,
    rep: &mut CheckReport,
) -> SqlResult<()> {
    let name = format!("{dbname}.{}", t.name);
    let ro = |lo: Vec<u8>, hi: Vec<u8>| ReadOptions {
        snapshot: Some(snap.clone()),
        iterate_lower_bound: Some(lo),
        iterate_upper_bound: Some(hi),
        // A full check reads everything once: not worth caching.
        fill_cache_off: true,
        ..Default::default()
    };
    // Expected secondary entries, from the rows.
    let mut expected: Vec<HashSet<(Vec<u8>, Vec<u8>)>> = vec![HashSet::new(); t.secondary.len()];
    let (lo, hi) = range(t.primary.id);
    let mut it = db.db.db().iter(&ro(lo.clone(), hi))?;
    it.seek(&lo);
    let mut r: Vec<Value> = Vec::new();
    let (mut k, mut v) = (Vec::new(), Vec::new());
    while it.valid() {
        rep.rows += 1;
        match row::decode_row(t, it.key(), it.value(), &mut r) {
            None => rep.problems.push(format!(
                "{name}: row {} does not decode",
                it.key().escape_ascii()
            )),
            Some(hidden) => {
                for (i, ix) in t.secondary.iter().enumerate() {
                    row::secondary_entry(t, ix, &r, hidden, &mut k, &mut v);
                    expected[i].insert((k.clone(), v.clone()));
                }
            }
        }
        it.next();
    }
    it.status()?;
    for (i, ix) in t.secondary.iter().enumerate() {
        let (lo, hi) = range(ix.id);
        let mut it = db.db.db().iter(&ro(lo.clone(), hi))?;
        it.seek(&lo);
        while it.valid() {
            rep.index_entries += 1;
            let e = (it.key().to_vec(), it.value().to_vec());
            if !expected[i].remove(&e) {
                rep.problems.push(format!(
                    "{name}: index {} has entry {} that no row has",
                    ix.name,
                    it.key().escape_ascii()
                ));
            }
            it.next();
        }
        it.status()?;
        for (k, _) in expected[i].iter().take(20) {
            rep.problems.push(format!(
                "{name}: index {} lacks entry {} of a row",
                ix.name,
                k.escape_ascii()
            ));
        }
    }
    Ok(())
}
