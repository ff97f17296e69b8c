//! INSERT, REPLACE, UPDATE and DELETE on the engine's transaction.
//!
//! Every write locks the row's primary key (also a key that does not yet
//! exist, so two inserts of one id serialise and the second sees the
//! first), reads the latest committed row, and writes the row and its
//! secondary-index entries in the transaction. A unique secondary index
//! is checked against the latest data and the transaction's own writes
//! under a lock on the unique value. The transaction's commit makes the
//! statement's (or transaction's) writes visible atomically.
//!
//! A multi-table UPDATE or DELETE reads its join first (latest rows,
//! locked), then changes each target table's matched rows once, each
//! re-read under its lock.
//!
//! FOREIGN KEY and CHECK constraints (`constraints.rs`) are looked up once
//! per statement; a table without any (and without children) runs the
//! loops below with nothing added per row.

use std::collections::HashSet;

use crate::context::StmtCx;
use crate::error::{SqlError, SqlResult};
use crate::exec::{scan_table, select_rows, successor, Cx, Effects, Reader, Scratch};
use crate::expr::{eval, to_i64, truth, Env};
use crate::keys;
use crate::output::Output;
use crate::plan::{DeletePlan, InsertPlan, SelectPlan, Source, Target, UpdatePlan};
use crate::row::{self, IndexDef, TableDef};
use crate::status::Handler;
use crate::types::Value;

/// A row with its sort keys: (keys, (primary key, row)).
type SortedRow = (Vec<Value>, (Vec<u8>, Vec<Value>));

/// The output rows of a multi-table statement's join, read and locked.
fn joined_rows(
    s: &StmtCx,
    rd: &mut Reader,
    scan: &SelectPlan,
    scratch: &mut Scratch,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    select_rows(s, rd, scan, None, scratch, &mut |r| {
        rows.push(r.to_vec());
        true
    })?;
    Ok(rows)
}

/// The rows of target `tg` that the joined `rows` matched, each once:
/// (primary key, index of the first joined row that matched it). A row
/// of NULLs that an outer join made up is no row. A table without a
/// primary key has no key in the join's output: its rows are found by
/// value (identical rows match alike), read under lock.
fn target_hits(
    rd: &mut Reader,
    tg: &Target,
    rows: &[Vec<Value>],
) -> SqlResult<Vec<(Vec<u8>, usize)>> {
    let def = &tg.t.def;
    let n = def.columns.len();
    fn cols(r: &[Value], at: usize, n: usize) -> SqlResult<&[Value]> {
        r.get(at..at + n)
            .ok_or_else(|| SqlError::internal("multi-table row"))
    }
    let mut hits = Vec::new();
    if !def.hidden_pk {
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        for (i, r) in rows.iter().enumerate() {
            let vals = cols(r, tg.at, n)?;
            if def.primary.columns.iter().any(|c| vals[*c].is_null()) {
                continue;
            }
            let mut k = Vec::new();
            row::pk_key(def, vals, 0, &mut k);
            if seen.insert(k.clone()) {
                hits.push((k, i));
            }
        }
        return Ok(hits);
    }
    // By value: each distinct matched row's encoding, first match kept.
    let mut wanted: std::collections::HashMap<Vec<u8>, usize> = Default::default();
    for (i, r) in rows.iter().enumerate() {
        let vals = cols(r, tg.at, n)?;
        if tg.outer && vals.iter().all(Value::is_null) {
            continue;
        }
        let mut v = Vec::new();
        row::row_value(def, vals, &mut v);
        wanted.entry(v).or_insert(i);
    }
    if wanted.is_empty() {
        return Ok(hits);
    }
    let all = primary_keys(rd, def)?;
    let mut buf = Vec::new();
    let mut r = vec![Value::Null; n];
    let mut enc = Vec::new();
    for k in all {
        if !rd.get(&k, &mut buf)? {
            continue;
        }
        row::decode_row_into(def, &k, &buf, &mut r, &mut Vec::new())
            .ok_or_else(|| SqlError::internal(format!("row of {} is damaged", def.name)))?;
        enc.clear();
        row::row_value(def, &r, &mut enc);
        if let Some(i) = wanted.get(&enc) {
            hits.push((k, *i));
        }
    }
    Ok(hits)
}

/// Runs a multi-table UPDATE: the join read and locked, then each target
/// table's matched rows changed once, in the order the SET list first
/// names the tables, with the values the first joined row that matched
/// the row computed.
fn update_multi(
    s: &StmtCx,
    rd: &mut Reader,
    p: &UpdatePlan,
    out: &mut dyn Output,
    scratch: &mut Scratch,
) -> SqlResult<Effects> {
    let rows = joined_rows(s, rd, &p.scan, scratch)?;
    let (mut matched, mut changed) = (0u64, 0u64);
    for tg in &p.multi {
        let def = tg.t.def.clone();
        let cons = crate::constraints::Cons::for_table(s, &tg.t.db, &def)?;
        for (k, i) in target_hits(rd, tg, &rows)? {
            // The latest row (an earlier target or a cascade may have
            // changed or removed it).
            let Some(old) = reread(rd, &def, &k)? else {
                continue;
            };
            matched += 1;
            let mut new = old.clone();
            for &(c, slot) in &tg.sets {
                let val = rows[i].get(slot).cloned().unwrap_or(Value::Null);
                new[c] = crate::convert::to_column(val, &def.columns[c], matched)?;
            }
            if new == old {
                continue;
            }
            change_row(s, rd, &def, cons.as_deref(), (&k, &old, &new), matched)?;
            changed += 1;
        }
    }
    Ok(updated(s, out, matched, changed))
}

/// Runs a multi-table DELETE: the join read and locked, then each named
/// table's matched rows deleted once, in the order they are named.
fn delete_multi(
    s: &StmtCx,
    rd: &mut Reader,
    p: &DeletePlan,
    out: &mut dyn Output,
    scratch: &mut Scratch,
) -> SqlResult<Effects> {
    let rows = joined_rows(s, rd, &p.scan, scratch)?;
    let mut n = 0u64;
    for tg in &p.multi {
        let def = tg.t.def.clone();
        let cons = crate::constraints::Cons::for_table(s, &tg.t.db, &def)?;
        for (k, _) in target_hits(rd, tg, &rows)? {
            let Some(old) = reread(rd, &def, &k)? else {
                continue;
            };
            delete_one(s, rd, &def, cons.as_deref(), &k, &old)?;
            n += 1;
        }
    }
    Ok(deleted(s, out, n))
}

/// The OK of an UPDATE: affected rows (changed, or matched with
/// `CLIENT_FOUND_ROWS`) and MySQL's info line.
fn updated(s: &StmtCx, out: &mut dyn Output, matched: u64, changed: u64) -> Effects {
    let affected = if s.client_found_rows {
        matched
    } else {
        changed
    };
    let warnings = s.warning_count();
    out.ok(
        affected,
        0,
        warnings,
        &format!("Rows matched: {matched}  Changed: {changed}  Warnings: {warnings}"),
    );
    Effects {
        row_count: Some(affected as i64),
        ..Default::default()
    }
}

/// Replaces row `old` (at key `k`) of `def` with `new` after its
/// CHECK and FOREIGN KEY constraints pass, then runs its children's
/// actions when it is a parent.
fn change_row(
    s: &StmtCx,
    rd: &mut Reader,
    def: &TableDef,
    cons: Option<&crate::constraints::Cons>,
    (k, old, new): (&[u8], &[Value], &[Value]),
    row_no: u64,
) -> SqlResult<()> {
    if let Some(c) = cons {
        c.check_row(s, rd, new, Some(old))?;
    }
    update_row(rd, def, k, old, new, row_no)?;
    s.info.handler_one(Handler::Update);
    if let Some(c) = cons.filter(|c| c.is_parent()) {
        c.row_updated(s, rd, old, new)?;
    }
    Ok(())
}

/// Deletes row `old` (at key `k`) of `def` with its index entries, and
/// runs its children's actions when it is a parent.
fn delete_one(
    s: &StmtCx,
    rd: &mut Reader,
    def: &TableDef,
    cons: Option<&crate::constraints::Cons>,
    k: &[u8],
    old: &[Value],
) -> SqlResult<()> {
    let hidden = hidden_of(def, k);
    txn(rd)?.delete(k)?;
    delete_secondary(rd, def, old, hidden)?;
    s.info.handler_one(Handler::Delete);
    if let Some(c) = cons.filter(|c| c.is_parent()) {
        c.row_deleted(s, rd, old)?;
    }
    Ok(())
}

/// The OK of a DELETE of `n` rows.
fn deleted(s: &StmtCx, out: &mut dyn Output, n: u64) -> Effects {
    out.ok(n, 0, s.warning_count(), "");
    Effects {
        row_count: Some(n as i64),
        ..Default::default()
    }
}

/// Every primary key of table `def`, in order (read through the reader:
/// the latest, for a locking statement).
fn primary_keys(rd: &mut Reader, def: &TableDef) -> SqlResult<Vec<Vec<u8>>> {
    let mut lo = Vec::new();
    keys::put_index_id(&mut lo, def.primary.id);
    let mut hi = Vec::new();
    keys::put_index_id(&mut hi, def.primary.id + 1);
    let mut it = rd.iter(lo, hi)?;
    it.seek_to_first();
    let mut all = Vec::new();
    while it.valid() {
        all.push(it.key().to_vec());
        it.next();
    }
    it.status()?;
    Ok(all)
}

fn txn<'a>(rd: &'a mut Reader) -> SqlResult<&'a mut cairndb::Transaction> {
    rd.txn
        .as_deref_mut()
        .ok_or_else(|| SqlError::internal("a write outside a transaction"))
}

/// The unique-value lock key of `ix` for `row` (None when a column is
/// NULL: NULLs never collide).
fn unique_prefix(t: &TableDef, ix: &IndexDef, row: &[Value]) -> Option<Vec<u8>> {
    if ix
        .columns
        .iter()
        .any(|c| row.get(*c).is_none_or(Value::is_null))
    {
        return None;
    }
    let vals: Vec<Value> = ix.columns.iter().map(|c| row[*c].clone()).collect();
    let mut k = Vec::new();
    row::index_prefix(t, ix, &vals, &mut k);
    Some(k)
}

/// Checks unique secondary indexes for `row` (whose primary key is
/// `pk`); returns the first violated index's name and value.
fn check_unique(
    rd: &mut Reader,
    t: &TableDef,
    row: &[Value],
    pk: &[u8],
) -> SqlResult<Option<(String, String)>> {
    for ix in t.secondary.iter().filter(|ix| ix.unique) {
        let Some(prefix) = unique_prefix(t, ix, row) else {
            continue;
        };
        // Serialise writers of this unique value.
        let mut buf = Vec::new();
        let tx = txn(rd)?;
        tx.get_for_update_into(&Default::default(), &prefix, true, &mut buf)?;
        let it_hi = successor(&prefix);
        let mut it = tx.iter(&cairndb::ReadOptions {
            iterate_lower_bound: Some(prefix.clone()),
            iterate_upper_bound: Some(it_hi),
            ..Default::default()
        })?;
        it.seek(&prefix);
        let mut other = Vec::new();
        while it.valid() {
            other.clear();
            let mut r = vec![Value::Null; t.columns.len()];
            let hidden =
                row::decode_secondary_into(t, ix, it.key(), it.value(), &mut r).unwrap_or(0);
            row::pk_key(t, &r, hidden, &mut other);
            if other != pk {
                let vals: Vec<Value> = ix.columns.iter().map(|c| row[*c].clone()).collect();
                return Ok(Some((ix.name.clone(), row::shown_key(t, ix, &vals))));
            }
            it.next();
        }
        it.status()?;
    }
    Ok(None)
}

/// Writes `row`'s secondary entries.
fn put_secondary(rd: &mut Reader, t: &TableDef, row: &[Value], hidden: u64) -> SqlResult<()> {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    for ix in &t.secondary {
        row::secondary_entry(t, ix, row, hidden, &mut k, &mut v);
        txn(rd)?.put_untracked(&k, &v)?;
    }
    Ok(())
}

/// Deletes `row`'s secondary entries.
fn delete_secondary(rd: &mut Reader, t: &TableDef, row: &[Value], hidden: u64) -> SqlResult<()> {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    for ix in &t.secondary {
        row::secondary_entry(t, ix, row, hidden, &mut k, &mut v);
        txn(rd)?.delete_untracked(&k)?;
    }
    Ok(())
}

/// Hidden row id of a decoded row key (tables without a primary key).
fn hidden_of(t: &TableDef, key: &[u8]) -> u64 {
    if !t.hidden_pk {
        return 0;
    }
    let mut k = key.get(keys::INDEX_ID_LEN..).unwrap_or_default();
    keys::get_uint(&mut k, 8).unwrap_or(0)
}

/// The full row of an INSERT: given values converted, defaults for the
/// rest, AUTO_INCREMENT generated for 0/NULL.
fn build_row(
    s: &StmtCx,
    t: &TableDef,
    cols: &[usize],
    given: Vec<Option<Value>>,
    row_no: u64,
    auto_first: &mut Option<u64>,
    ignore: bool,
) -> SqlResult<Vec<Value>> {
    let mut row: Vec<Option<Value>> = vec![None; t.columns.len()];
    for (k, v) in given.into_iter().enumerate() {
        if let (Some(c), Some(v)) = (cols.get(k), v) {
            row[*c] = Some(v);
        }
    }
    let mut out = Vec::with_capacity(t.columns.len());
    for (i, col) in t.columns.iter().enumerate() {
        let v = match row[i].take() {
            Some(v) => v,
            None => match &col.default {
                Some(d) => d.clone(),
                None if col.auto_increment || col.nullable => Value::Null,
                None => {
                    return Err(SqlError::new(
                        1364,
                        "HY000",
                        format!("Field '{}' doesn't have a default value", col.name),
                    ))
                }
            },
        };
        let v = if col.auto_increment {
            let n = to_i64(&v);
            match n {
                None | Some(0) => {
                    let id = s.db.reserve_ids(t, 1, 1)?;
                    auto_first.get_or_insert(id);
                    match col.ty {
                        crate::types::ColumnType::Int { unsigned: true, .. } => Value::UInt(id),
                        _ => Value::Int(id as i64),
                    }
                }
                Some(n) => {
                    if n > 0 {
                        s.db.note_explicit_id(t, n as u64)?;
                    }
                    v
                }
            }
        } else {
            v
        };
        out.push(if ignore {
            crate::convert::to_column_ignoring(v, col, row_no, &mut |code, m| {
                s.warn("Warning", code, m)
            })?
        } else {
            crate::convert::to_column(v, col, row_no)?
        });
    }
    Ok(out)
}

/// Runs an INSERT / REPLACE.
pub(crate) fn insert(
    s: &StmtCx,
    rd: &mut Reader,
    p: &InsertPlan,
    out: &mut dyn Output,
    scratch: &mut Scratch,
) -> SqlResult<Effects> {
    let t = &p.t.def;
    let mut sources: Vec<Vec<Option<Value>>> = Vec::new();
    if let Some(sel) = &p.select {
        let mut rows = Vec::new();
        // Read the source at the statement's view, without locks.
        let lock = rd.lock.take();
        let mut sub = Scratch::default();
        let r = select_rows(s, rd, sel, None, &mut sub, &mut |r| {
            rows.push(r.iter().cloned().map(Some).collect());
            true
        });
        rd.lock = lock;
        r?;
        sources = rows;
    } else {
        for r in &p.rows {
            let mut vals = Vec::with_capacity(r.len());
            for e in r {
                vals.push(match e {
                    Some(e) => Some(eval(e, &[], &[], &[], s)?),
                    None => None,
                });
            }
            sources.push(vals);
        }
    }
    // Constraints: asked once; None for a table without any.
    let cons = crate::constraints::Cons::for_table(s, &p.t.db, &p.t.def)?;
    let mut affected = 0u64;
    let mut auto_first: Option<u64> = None;
    let (mut k, mut v) = (
        std::mem::take(&mut scratch.key),
        std::mem::take(&mut scratch.val),
    );
    let mut existing_buf = Vec::new();
    for (n, given) in sources.into_iter().enumerate() {
        let row_no = n as u64 + 1;
        let row = build_row(s, t, &p.cols, given, row_no, &mut auto_first, p.ignore)?;
        let hidden = if t.hidden_pk {
            s.db.reserve_ids(t, 1, 1)?
        } else {
            0
        };
        row::pk_key(t, &row, hidden, &mut k);
        // Lock the key (also when absent) and read the latest row.
        let exists = if t.hidden_pk {
            false
        } else {
            txn(rd)?.get_for_update_into(&Default::default(), &k, true, &mut existing_buf)?
        };
        if exists {
            let mut old = vec![Value::Null; t.columns.len()];
            row::decode_row_into(t, &k, &existing_buf, &mut old, &mut Vec::new())
                .ok_or_else(|| SqlError::internal(format!("row of {} is damaged", t.name)))?;
            if p.replace {
                if let Some(c) = &cons {
                    c.check_row(s, rd, &row, None)?;
                }
                delete_secondary(rd, t, &old, 0)?;
                if let Some(c) = cons.as_ref().filter(|c| c.is_parent()) {
                    txn(rd)?.delete(&k)?;
                    c.row_deleted(s, rd, &old)?;
                }
                s.info.handler_one(Handler::Delete);
                affected += 1;
            } else if !p.on_dup.is_empty() {
                // ON DUPLICATE KEY UPDATE: old row slots, then VALUES().
                let mut ctx = old.clone();
                ctx.extend(row.iter().cloned());
                let mut new = old.clone();
                for (c, e) in &p.on_dup {
                    let val = eval(e, &ctx, &[], &[], s)?;
                    new[*c] = crate::convert::to_column(val, &t.columns[*c], row_no)?;
                    ctx[*c] = new[*c].clone();
                }
                if new != old {
                    if let Some(c) = &cons {
                        c.check_row(s, rd, &new, Some(&old))?;
                    }
                    update_row(rd, t, &k, &old, &new, row_no)?;
                    s.info.handler_one(Handler::Update);
                    if let Some(c) = cons.as_ref().filter(|c| c.is_parent()) {
                        c.row_updated(s, rd, &old, &new)?;
                    }
                    affected += 2;
                }
                continue;
            } else {
                let shown: Vec<String> = t
                    .primary
                    .columns
                    .iter()
                    .map(|c| row[*c].to_string())
                    .collect();
                let e = SqlError::duplicate_key(&shown.join("-"), &format!("{}.PRIMARY", t.name));
                if p.ignore {
                    // IGNORE: the row is skipped with the error as a warning.
                    s.warn("Warning", e.code, e.message);
                    continue;
                }
                return Err(e);
            }
        }
        if let Some((ix, val)) = check_unique(rd, t, &row, &k)? {
            if p.ignore {
                let e = SqlError::duplicate_key(&val, &format!("{}.{ix}", t.name));
                s.warn("Warning", e.code, e.message);
                continue;
            }
            if p.replace {
                return Err(SqlError::unsupported("REPLACE over a unique secondary key"));
            }
            return Err(SqlError::duplicate_key(&val, &format!("{}.{ix}", t.name)));
        }
        if let Some(c) = &cons {
            if !exists || !p.replace {
                if let Err(e) = c.check_row(s, rd, &row, None) {
                    if p.ignore && matches!(e.code, 1452 | 3819) {
                        s.warn("Warning", e.code, e.message);
                        continue;
                    }
                    return Err(e);
                }
            }
        }
        row::row_value(t, &row, &mut v);
        txn(rd)?.put(&k, &v)?;
        put_secondary(rd, t, &row, hidden)?;
        s.info.handler_one(Handler::Write);
        affected += 1;
    }
    scratch.key = k;
    scratch.val = v;
    let id = auto_first.unwrap_or(0);
    out.ok(affected, id, s.warning_count(), "");
    Ok(Effects {
        row_count: Some(affected as i64),
        last_insert_id: auto_first,
        ..Default::default()
    })
}

/// Replaces row `old` (at primary key `k`) with `new`.
pub(crate) fn update_row(
    rd: &mut Reader,
    t: &TableDef,
    k: &[u8],
    old: &[Value],
    new: &[Value],
    row_no: u64,
) -> SqlResult<()> {
    let _ = row_no;
    let hidden = hidden_of(t, k);
    let mut nk = Vec::new();
    row::pk_key(t, new, hidden, &mut nk);
    if nk != k {
        // The primary key changes: a delete and an insert.
        let mut buf = Vec::new();
        if txn(rd)?.get_for_update_into(&Default::default(), &nk, true, &mut buf)? {
            let shown: Vec<String> = t
                .primary
                .columns
                .iter()
                .map(|c| new[*c].to_string())
                .collect();
            return Err(SqlError::duplicate_key(
                &shown.join("-"),
                &format!("{}.PRIMARY", t.name),
            ));
        }
        txn(rd)?.delete(k)?;
    }
    // Unique secondary indexes whose value changes.
    let changed_unique = t
        .secondary
        .iter()
        .any(|ix| ix.unique && ix.columns.iter().any(|c| old[*c] != new[*c]));
    if changed_unique {
        if let Some((ix, val)) = check_unique(rd, t, new, &nk)? {
            return Err(SqlError::duplicate_key(&val, &format!("{}.{ix}", t.name)));
        }
    }
    let (mut ok, mut ov, mut nkk, mut nv) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let pk_changed = nk != k;
    for ix in &t.secondary {
        row::secondary_entry(t, ix, old, hidden, &mut ok, &mut ov);
        row::secondary_entry(t, ix, new, hidden, &mut nkk, &mut nv);
        if ok != nkk {
            txn(rd)?.delete_untracked(&ok)?;
            txn(rd)?.put_untracked(&nkk, &nv)?;
        } else if ov != nv || pk_changed {
            txn(rd)?.put_untracked(&nkk, &nv)?;
        }
    }
    let mut v = Vec::new();
    row::row_value(t, new, &mut v);
    txn(rd)?.put(&nk, &v)?;
    Ok(())
}

/// The rows a scan plan selects, locked: (primary key, row).
fn locked_rows(
    s: &StmtCx,
    rd: &mut Reader,
    scan: &SelectPlan,
    scratch: &mut Scratch,
) -> SqlResult<Vec<(Vec<u8>, Vec<Value>)>> {
    let Some(Source::Table { t, access, .. }) = scan.sources.first() else {
        return Err(SqlError::internal("scan without a table"));
    };
    let limit = crate::exec::count_of(&scan.limit, s)?;
    if t.def.hidden_pk {
        return hidden_rows(s, rd, scan, limit, scratch);
    }
    let mut found = Vec::new();
    let mut row = vec![Value::Null; scan.width];
    let ordered = !scan.order.is_empty() && !scan.order_by_index;
    let def = t.def.clone();
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let filter = crate::exec::effective_filter(s, scan)?;
    scan_table(
        s,
        None,
        rd,
        t,
        access,
        &mut row,
        scratch,
        &mut |rd, row, _sc| {
            if let Some(f) = filter {
                // A correlated subquery runs through the reader.
                let hit = if scan.correlated {
                    eval(f, row, &[], &scan.types, &Cx::new(s, None, rd))?
                } else {
                    eval(f, row, &[], &scan.types, s)?
                };
                if truth(&hit) != Some(true) {
                    return Ok(true);
                }
            }
            let mut k = Vec::new();
            row::pk_key(&def, row, 0, &mut k);
            if !seen.insert(k.clone()) {
                return Ok(true);
            }
            found.push((k, row.clone()));
            Ok(ordered || limit.is_none_or(|l| (found.len() as u64) < l))
        },
    )?;
    if ordered {
        let types = &scan.types;
        let mut keyed: Vec<SortedRow> = Vec::new();
        let cx = Cx::new(s, None, rd);
        let env: &dyn Env = if scan.correlated { &cx } else { s };
        for (k, r) in found {
            let ks = scan
                .order
                .iter()
                .map(|(e, _)| eval(e, &r, &[], types, env))
                .collect::<SqlResult<Vec<_>>>()?;
            keyed.push((ks, (k, r)));
        }
        keyed.sort_by(|a, b| {
            for (i, (e, asc)) in scan.order.iter().enumerate() {
                let coll = crate::expr::collation_of(e, types);
                let o = crate::expr::compare(&a.0[i], &b.0[i], coll)
                    .unwrap_or_else(|| a.0[i].is_null().cmp(&b.0[i].is_null()).reverse());
                let o = if *asc { o } else { o.reverse() };
                if o != std::cmp::Ordering::Equal {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
        found = keyed.into_iter().map(|(_, r)| r).collect();
        if let Some(l) = limit {
            found.truncate(usize::try_from(l).unwrap_or(usize::MAX));
        }
    }
    Ok(found)
}

/// `locked_rows` for a table without a primary key: a full scan that
/// keeps each row's hidden key.
fn hidden_rows(
    s: &StmtCx,
    rd: &mut Reader,
    scan: &SelectPlan,
    limit: Option<u64>,
    _scratch: &mut Scratch,
) -> SqlResult<Vec<(Vec<u8>, Vec<Value>)>> {
    let Some(Source::Table { t, .. }) = scan.sources.first() else {
        return Err(SqlError::internal("scan without a table"));
    };
    let def = &t.def;
    let keys_ = primary_keys(rd, def)?;
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for k in keys_ {
        if !rd.get(&k, &mut buf)? {
            continue;
        }
        let mut r = vec![Value::Null; def.columns.len()];
        row::decode_row_into(def, &k, &buf, &mut r, &mut Vec::new())
            .ok_or_else(|| SqlError::internal(format!("row of {} is damaged", def.name)))?;
        if let Some(f) = &scan.filter {
            let hit = if scan.correlated {
                eval(f, &r, &[], &scan.types, &Cx::new(s, None, rd))?
            } else {
                eval(f, &r, &[], &scan.types, s)?
            };
            if truth(&hit) != Some(true) {
                continue;
            }
        }
        out.push((k, r));
        if limit.is_some_and(|l| out.len() as u64 >= l) {
            break;
        }
    }
    Ok(out)
}

/// The row at `k` as it is now in the transaction (None: deleted).
fn reread(rd: &mut Reader, t: &TableDef, k: &[u8]) -> SqlResult<Option<Vec<Value>>> {
    let mut buf = Vec::new();
    if !txn(rd)?.get_for_update_into(&Default::default(), k, true, &mut buf)? {
        return Ok(None);
    }
    let mut r = vec![Value::Null; t.columns.len()];
    row::decode_row_into(t, k, &buf, &mut r, &mut Vec::new())
        .ok_or_else(|| SqlError::internal(format!("row of {} is damaged", t.name)))?;
    Ok(Some(r))
}

/// Runs an UPDATE.
pub(crate) fn update(
    s: &StmtCx,
    rd: &mut Reader,
    p: &UpdatePlan,
    out: &mut dyn Output,
    scratch: &mut Scratch,
) -> SqlResult<Effects> {
    if !p.multi.is_empty() {
        return update_multi(s, rd, p, out, scratch);
    }
    let Some(Source::Table { t, .. }) = p.scan.sources.first() else {
        return Err(SqlError::internal("update without a table"));
    };
    let def = t.def.clone();
    let cons = crate::constraints::Cons::for_table(s, &t.db, &def)?;
    let rows = locked_rows(s, rd, &p.scan, scratch)?;
    let (mut matched, mut changed) = (0u64, 0u64);
    for (n, (k, old)) in rows.into_iter().enumerate() {
        // A cascade of this statement may have changed or removed it.
        let old = match cons.as_ref().filter(|c| c.is_parent()) {
            Some(_) => match reread(rd, &def, &k)? {
                Some(r) => r,
                None => continue,
            },
            None => old,
        };
        matched += 1;
        let mut new = old.clone();
        for (c, e) in &p.sets {
            // MySQL evaluates assignments left to right over the row as
            // updated so far.
            let val = if p.scan.correlated {
                eval(e, &new, &[], &p.scan.types, &Cx::new(s, None, rd))?
            } else {
                eval(e, &new, &[], &p.scan.types, s)?
            };
            new[*c] = crate::convert::to_column(val, &def.columns[*c], n as u64 + 1)?;
        }
        if new == old {
            continue;
        }
        change_row(s, rd, &def, cons.as_deref(), (&k, &old, &new), n as u64 + 1)?;
        changed += 1;
    }
    Ok(updated(s, out, matched, changed))
}

/// Runs a DELETE.
pub(crate) fn delete(
    s: &StmtCx,
    rd: &mut Reader,
    p: &DeletePlan,
    out: &mut dyn Output,
    scratch: &mut Scratch,
) -> SqlResult<Effects> {
    if !p.multi.is_empty() {
        return delete_multi(s, rd, p, out, scratch);
    }
    let Some(Source::Table { t, .. }) = p.scan.sources.first() else {
        return Err(SqlError::internal("delete without a table"));
    };
    let def = t.def.clone();
    let cons = crate::constraints::Cons::for_table(s, &t.db, &def)?;
    let rows = locked_rows(s, rd, &p.scan, scratch)?;
    let mut n = 0u64;
    for (k, old) in rows {
        let old = match cons.as_ref().filter(|c| c.is_parent()) {
            // A cascade of this statement may have changed or removed it.
            Some(_) => match reread(rd, &def, &k)? {
                Some(r) => r,
                None => continue,
            },
            None => old,
        };
        delete_one(s, rd, &def, cons.as_deref(), &k, &old)?;
        n += 1;
    }
    Ok(deleted(s, out, n))
}
