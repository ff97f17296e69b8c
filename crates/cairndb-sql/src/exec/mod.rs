//! Running plans: reading rows through an access path (in the session's
//! transaction when it has one, with row locks for locking reads and
//! writes), nested-loop joins, filtering, grouping and aggregates,
//! DISTINCT, ORDER BY (streamed in index order when the plan says so,
//! else sorted, bounded by LIMIT), and sending rows to the output.
//!
//! Buffers for keys, values and rows live in [`Scratch`] and are reused
//! from statement to statement, so a primary-key point select allocates
//! nothing per row once warm.
//!
//! Correlated subqueries stay in the plan and run when evaluated: a
//! query whose plan says `correlated` evaluates through a [`Cx`] that
//! holds the enclosing queries' current rows ([`Frame`]s) and the
//! reader. A subquery's results are kept per statement (in the
//! [`Reader`]) by the tuple of outer values it reads, up to
//! [`SUBQUERY_CACHE`] tuples each; a plan that is not correlated
//! evaluates against the session as before.

//!
//! Submodules: `dml` (INSERT, REPLACE, UPDATE, DELETE), `hashjoin` (joins
//! no index serves), `spill` (the memory a statement holds; sorts through
//! temporary files) and `window` (window functions).

pub(crate) mod dml;
pub(crate) mod hashjoin;
pub(crate) mod spill;
pub(crate) mod window;

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

use cairndb::{DbIterator, ReadOptions, Snapshot, Transaction, TransactionIterator};

use crate::error::{SqlError, SqlResult};
use std::sync::Arc;

use crate::context::StmtCx;
use crate::expr::{
    compare, eval, to_i64, truth, AggCall, AggFunc, Env, Expr, RowSet, SubQuery, SubTest, ValueSet,
};
use crate::hashjoin::{HashJoin, HashState, HashTable};
use crate::keys;
use crate::output::Output;
use crate::plan::{
    Access, IndexAccess, KeyAlt, Plan, SelectPlan, SetNode, SetOp, Source, TableRef,
};
use crate::row::{self, ColumnDef, TableDef};
use crate::status::{Handler, HandlerCounts};
use crate::types::{Collation, ColumnType, StrKind, Value};

/// Reused buffers.
#[derive(Default)]
pub struct Scratch {
    pub(crate) key: Vec<u8>,
    pub(crate) val: Vec<u8>,
    pub(crate) row: Vec<Value>,
    pub(crate) out: Vec<Value>,
    /// String buffers of earlier statements' rows, for the strings the
    /// next rows decode (a point select then allocates nothing for its
    /// row once the connection is warm).
    pub(crate) strs: Vec<Vec<u8>>,
    /// Rows an earlier statement sorted, for the next sort's rows (their
    /// vectors and string buffers are reused: an ORDER BY over a range
    /// allocates nothing per row once the connection is warm).
    pub(crate) rows: Vec<Vec<Value>>,
}

/// Spare string buffers kept per session, and the largest kept.
const SPARE_STRS: usize = 64;
const SPARE_STR_BYTES: usize = 64 << 10;

/// Spare sorted rows kept per session, and the most string bytes a kept
/// row may hold (so a session keeps at most half a megabyte this way).
const SPARE_ROWS: usize = 256;
const SPARE_ROW_BYTES: usize = 2 << 10;

/// Keeps the small ones of `rows` in `pool` for the next sort.
fn keep_rows(pool: &mut Vec<Vec<Value>>, rows: &mut Vec<Vec<Value>>) {
    for r in rows.drain(..) {
        if pool.len() >= SPARE_ROWS {
            break;
        }
        let bytes: usize = r
            .iter()
            .map(|v| match v {
                Value::Str(b) => b.capacity(),
                _ => 0,
            })
            .sum();
        if bytes <= SPARE_ROW_BYTES {
            pool.push(r);
        }
    }
}

/// Empties `row`, keeping its string buffers in `strs`.
fn recycle(row: &mut Vec<Value>, strs: &mut Vec<Vec<u8>>) {
    for v in row.drain(..) {
        if let Value::Str(b) = v {
            if strs.len() < SPARE_STRS && b.capacity() <= SPARE_STR_BYTES {
                strs.push(b);
            }
        }
    }
}

/// How rows are read: through the session's transaction (own writes
/// first) or the database; at a snapshot or the latest; locking or not.
pub(crate) struct Reader<'a> {
    pub(crate) db: &'a cairndb::Db,
    pub(crate) txn: Option<&'a mut Transaction>,
    pub(crate) snapshot: Option<Snapshot>,
    /// Some(exclusive): lock each row read and read its latest version.
    pub(crate) lock: Option<bool>,
    /// Common table expressions materialised in this execution, by id.
    /// (A list: empty, it costs nothing to make.)
    pub(crate) ctes: Vec<(u32, Arc<Vec<Vec<Value>>>)>,
    /// The previous iteration's rows of the recursive CTEs running.
    pub(crate) work: Vec<(u32, Arc<Vec<Vec<Value>>>)>,
    /// Correlated subqueries run in this statement, by id.
    pub(crate) subs: HashMap<u64, SubCache>,
    /// Bytes counted in the session's [`spill::Mem`] for what this
    /// execution keeps to its end (materialised subquery sets, cached
    /// subquery results); given back by whoever made the reader, once
    /// it is dropped ([`spill::Mem::release`]).
    pub(crate) held: u64,
}

/// Tuples of outer values kept per correlated subquery and statement.
pub(crate) const SUBQUERY_CACHE: usize = 10_000;

/// A correlated subquery's state within one statement.
#[derive(Default)]
pub(crate) struct SubCache {
    /// Its plan with its uncorrelated subqueries materialised (None: the
    /// compiled plan has none).
    plan: Option<Arc<SelectPlan>>,
    /// Results by the key of the outer values read (and the operand).
    results: HashMap<Vec<u8>, Value>,
}

/// The current row of an enclosing query, and the frames further out.
pub(crate) struct Frame<'a> {
    pub(crate) row: &'a [Value],
    pub(crate) up: Option<&'a Frame<'a>>,
}

impl Frame<'_> {
    /// Slot `slot` of the row `up` frames out (1: this one).
    fn get(&self, up: usize, slot: usize) -> SqlResult<Value> {
        let mut f = self;
        for _ in 1..up {
            f =
                f.up.ok_or_else(|| SqlError::internal("outer reference past the outermost query"))?;
        }
        Ok(f.row.get(slot).cloned().unwrap_or(Value::Null))
    }
}

/// The evaluation context of a correlated query: the session, the rows
/// of the enclosing queries, and (where subqueries may run) the reader.
pub(crate) struct Cx<'c, 'r> {
    pub(crate) s: &'c StmtCx,
    pub(crate) fr: Option<&'c Frame<'c>>,
    pub(crate) rd: Option<RefCell<&'c mut Reader<'r>>>,
}

impl<'c, 'r> Cx<'c, 'r> {
    /// A context that runs subqueries through `rd`.
    pub(crate) fn new(s: &'c StmtCx, fr: Option<&'c Frame<'c>>, rd: &'c mut Reader<'r>) -> Self {
        Cx {
            s,
            fr,
            rd: Some(RefCell::new(rd)),
        }
    }

    /// A context with the enclosing rows only (for key bounds).
    pub(crate) fn frames(s: &'c StmtCx, fr: Option<&'c Frame<'c>>) -> Self {
        Cx { s, fr, rd: None }
    }
}

/// Appends `v` to a cache key: equal keys exactly when the values are
/// the same value (strings byte for byte, whatever the collation).
fn exact_key(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(0),
        Value::Int(i) => {
            out.push(1);
            out.extend_from_slice(&i.to_be_bytes());
        }
        Value::UInt(u) => {
            out.push(2);
            out.extend_from_slice(&u.to_be_bytes());
        }
        Value::Str(b) => {
            out.push(3);
            keys::put_bytes(out, b);
        }
        Value::Double(f) => {
            out.push(4);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        other => {
            out.push(5);
            keys::put_bytes(out, format!("{other:?}").as_bytes());
        }
    }
}

impl Env for Cx<'_, '_> {
    fn params(&self) -> &[Value] {
        Env::params(self.s)
    }
    fn check_interrupt(&self) -> SqlResult<()> {
        self.s.check_interrupt()
    }
    fn sys_var(&self, name: &str) -> SqlResult<Value> {
        Env::sys_var(self.s, name)
    }
    fn user_var(&self, name: &str) -> Value {
        Env::user_var(self.s, name)
    }
    fn database(&self) -> Option<String> {
        Env::database(self.s)
    }
    fn connection_id(&self) -> u64 {
        Env::connection_id(self.s)
    }
    fn last_insert_id(&self) -> u64 {
        Env::last_insert_id(self.s)
    }
    fn user(&self) -> String {
        Env::user(self.s)
    }
    fn current_user(&self) -> String {
        Env::current_user(self.s)
    }
    fn found_rows(&self) -> u64 {
        Env::found_rows(self.s)
    }
    fn row_count(&self) -> i64 {
        Env::row_count(self.s)
    }
    fn warn(&self, code: u16, message: String) {
        Env::warn(self.s, code, message)
    }
    fn outer(&self, up: usize, slot: usize) -> SqlResult<Value> {
        match self.fr {
            Some(f) => f.get(up, slot),
            None => Err(SqlError::internal("outer reference outside a subquery")),
        }
    }
    fn subquery(
        &self,
        sq: &SubQuery,
        x: Option<(Value, Collation)>,
        row: &[Value],
    ) -> SqlResult<Value> {
        let key: &[Value] = match &x {
            Some((v, _)) => std::slice::from_ref(v),
            None => &[],
        };
        self.cached_run(sq, &mut key.iter(), row, &mut |s, rd, plan, fr| {
            run_subquery(s, rd, plan, sq.test, x.clone(), fr)
        })
    }

    fn row_subquery(
        &self,
        sq: &SubQuery,
        x: &[(Value, Collation)],
        row: &[Value],
    ) -> SqlResult<Value> {
        let mut key = x.iter().map(|(v, _)| v);
        self.cached_run(sq, &mut key, row, &mut |s, rd, plan, fr| {
            let mut charge = spill::Charge::new(&s.mem);
            let rows = collect_rows(s, rd, plan, Some(fr), &mut charge)?;
            // Tested once: not worth an index.
            RowSet::plain(rows).test(sq.test, x)
        })
    }
}

/// The plan and the run of a correlated subquery.
type SubRun<'f> = dyn FnMut(&StmtCx, &mut Reader, &SelectPlan, &Frame) -> SqlResult<Value> + 'f;

impl Cx<'_, '_> {
    /// Runs correlated subquery `sq` for the current row `row` through
    /// `run`, or answers from the results kept for the same outer values
    /// and left operand values `x`.
    fn cached_run(
        &self,
        sq: &SubQuery,
        x: &mut dyn Iterator<Item = &Value>,
        row: &[Value],
        run: &mut SubRun<'_>,
    ) -> SqlResult<Value> {
        let cell = self
            .rd
            .as_ref()
            .ok_or_else(|| SqlError::internal("subquery where none can run"))?;
        let mut guard = cell
            .try_borrow_mut()
            .map_err(|_| SqlError::internal("subquery reader in use"))?;
        let rd: &mut Reader = &mut guard;
        let here = Frame { row, up: self.fr };
        let mut key = Vec::new();
        for &(up, slot) in &sq.plan.outer_refs {
            exact_key(&mut key, &here.get(up, slot)?);
        }
        for v in x {
            exact_key(&mut key, v);
        }
        if let Some(v) = rd.subs.get(&sq.id).and_then(|c| c.results.get(&key)) {
            return Ok(v.clone());
        }
        // Its uncorrelated subqueries are materialised once a statement.
        let plan = match rd.subs.get(&sq.id) {
            Some(c) => c.plan.clone(),
            None => {
                let plan = if sq.plan.subqueries {
                    let mut p = sq.plan.clone();
                    resolve_select(self.s, rd, &mut p)?;
                    Some(Arc::new(p))
                } else {
                    None
                };
                rd.subs.insert(
                    sq.id,
                    SubCache {
                        plan: plan.clone(),
                        results: HashMap::new(),
                    },
                );
                plan
            }
        };
        let plan = plan.as_deref().unwrap_or(&sq.plan);
        let v = run(self.s, rd, plan, &here)?;
        if let Some(c) = rd.subs.get_mut(&sq.id) {
            if c.results.len() < SUBQUERY_CACHE {
                // Kept to the statement's end: counted until then. A
                // result past the session's memory is not kept (the cache
                // only saves runs).
                let bytes =
                    (spill::key_bytes(&key) + spill::row_bytes(std::slice::from_ref(&v))) as u64;
                if self.s.mem.hold(bytes).is_ok() {
                    rd.held = rd.held.saturating_add(bytes);
                    c.results.insert(key, v.clone());
                }
            }
        }
        Ok(v)
    }
}

/// One run of a correlated subquery for the enclosing rows `fr`: its
/// value for `test`. EXISTS stops at the first row, a scalar subquery
/// at the second (1242), a quantified comparison where it is decided.
fn run_subquery(
    s: &StmtCx,
    rd: &mut Reader,
    plan: &SelectPlan,
    test: SubTest,
    x: Option<(Value, Collation)>,
    fr: &Frame,
) -> SqlResult<Value> {
    let mut sub = Scratch::default();
    match (test, x) {
        (SubTest::Scalar, _) => {
            let mut first = None;
            let mut n = 0;
            select_rows(s, rd, plan, Some(fr), &mut sub, &mut |r| {
                n += 1;
                if n == 1 {
                    first = Some(r.first().cloned().unwrap_or(Value::Null));
                }
                n < 2
            })?;
            if n > 1 {
                return Err(SqlError::new(
                    1242,
                    "21000",
                    "Subquery returns more than 1 row",
                ));
            }
            Ok(first.unwrap_or(Value::Null))
        }
        (SubTest::Exists, _) => {
            let mut any = false;
            select_rows(s, rd, plan, Some(fr), &mut sub, &mut |_| {
                any = true;
                false
            })?;
            Ok(Value::Int(i64::from(any)))
        }
        (SubTest::Quant(op, all), Some((v, coll))) => {
            // Over no rows ANY is false and ALL true, whatever `v`; over
            // some, a NULL `v` gives NULL.
            let mut any_row = false;
            let mut unknown = false;
            let mut decided = None;
            select_rows(s, rd, plan, Some(fr), &mut sub, &mut |r| {
                any_row = true;
                if v.is_null() {
                    return false;
                }
                let w = r.first().unwrap_or(&Value::Null);
                match compare(&v, w, coll) {
                    None => unknown = true,
                    Some(o) => {
                        let h = crate::expr::holds(op, o);
                        // ANY decides at the first true, ALL at the
                        // first false.
                        if h != all {
                            decided = Some(h);
                            return false;
                        }
                    }
                }
                true
            })?;
            Ok(match decided {
                Some(h) => Value::Int(i64::from(h)),
                None if !any_row => Value::Int(i64::from(all)),
                None if v.is_null() || unknown => Value::Null,
                None => Value::Int(i64::from(all)),
            })
        }
        (SubTest::Quant(..), None) => Err(SqlError::internal("quantified subquery")),
        (SubTest::Rows(..) | SubTest::RowCmp(_), _) => {
            Err(SqlError::internal("row subquery run as a value"))
        }
    }
}

/// The rows kept under `id` in a list of [`Reader::ctes`] or
/// [`Reader::work`].
pub(crate) fn find(list: &[(u32, Arc<Vec<Vec<Value>>>)], id: u32) -> Option<Arc<Vec<Vec<Value>>>> {
    list.iter().find(|(i, _)| *i == id).map(|(_, r)| r.clone())
}

/// Forgets the rows kept under `id`.
pub(crate) fn remove(list: &mut Vec<(u32, Arc<Vec<Vec<Value>>>)>, id: u32) {
    list.retain(|(i, _)| *i != id);
}

/// An iterator of either kind.
pub(crate) enum RIter {
    Db(DbIterator),
    Txn(TransactionIterator),
}

macro_rules! both {
    ($s:expr, $i:ident => $e:expr) => {
        match $s {
            RIter::Db($i) => $e,
            RIter::Txn($i) => $e,
        }
    };
}

impl RIter {
    pub(crate) fn valid(&self) -> bool {
        both!(self, i => i.valid())
    }
    pub(crate) fn key(&self) -> &[u8] {
        both!(self, i => i.key())
    }
    pub(crate) fn value(&self) -> &[u8] {
        both!(self, i => i.value())
    }
    pub(crate) fn next(&mut self) {
        both!(self, i => i.next())
    }
    pub(crate) fn prev(&mut self) {
        both!(self, i => i.prev())
    }
    pub(crate) fn seek_to_first(&mut self) {
        both!(self, i => i.seek_to_first())
    }
    pub(crate) fn seek_to_last(&mut self) {
        both!(self, i => i.seek_to_last())
    }
    pub(crate) fn status(&self) -> SqlResult<()> {
        both!(self, i => i.status().map_err(SqlError::from))
    }
    /// New bounds; unpositioned until the next seek.
    fn set_bounds(&mut self, lo: Vec<u8>, hi: Vec<u8>) {
        both!(self, i => i.set_bounds(Some(lo), Some(hi)))
    }
}

impl Reader<'_> {
    fn read_opts(&self) -> ReadOptions {
        ReadOptions {
            snapshot: if self.lock.is_some() {
                None
            } else {
                self.snapshot.clone()
            },
            ..Default::default()
        }
    }

    /// Point read of `key` into `buf`.
    pub(crate) fn get(&mut self, key: &[u8], buf: &mut Vec<u8>) -> SqlResult<bool> {
        let ro = self.read_opts();
        Ok(match (&mut self.txn, self.lock) {
            (Some(t), Some(x)) => t.get_for_update_into(&ro, key, x, buf)?,
            (Some(t), None) => t.get_into(&ro, key, buf)?,
            (None, _) => self.db.get_into(&ro, key, buf)?,
        })
    }

    /// An iterator over `[lo, hi)`.
    pub(crate) fn iter(&self, lo: Vec<u8>, hi: Vec<u8>) -> SqlResult<RIter> {
        let ro = ReadOptions {
            iterate_lower_bound: Some(lo),
            iterate_upper_bound: Some(hi),
            ..self.read_opts()
        };
        Ok(match &self.txn {
            Some(t) => RIter::Txn(t.iter(&ro)?),
            None => RIter::Db(self.db.iter(&ro)?),
        })
    }
}

/// The smallest byte string greater than every string starting with `p`.
pub(crate) fn successor(p: &[u8]) -> Vec<u8> {
    let mut v = p.to_vec();
    while let Some(last) = v.pop() {
        if last != 0xFF {
            v.push(last + 1);
            return v;
        }
    }
    vec![0xFF; p.len() + 1]
}

/// Runs any plan.
pub(crate) fn run(s: &mut StmtCx, plan: &Plan, out: &mut dyn Output) -> SqlResult<()> {
    let mut txn = s.txn.take();
    let snapshot = if txn.is_some() {
        s.txn = txn.take();
        let snap = match plan {
            Plan::Select(p) if p.lock.is_none() => s.read_snapshot(),
            Plan::Insert(p) if p.select.is_some() => s.read_snapshot(),
            _ => None,
        };
        txn = s.txn.take();
        snap
    } else {
        None
    };
    let mut scratch = std::mem::take(&mut s.scratch);
    let db = s.db.clone();
    let lock = match plan {
        Plan::Select(p) => p.lock,
        _ => Some(true),
    };
    let mut rd = Reader {
        db: db.engine().db(),
        txn: txn.as_mut().map(|t| &mut t.txn),
        snapshot,
        lock,
        ctes: Vec::new(),
        work: Vec::new(),
        subs: HashMap::new(),
        held: 0,
    };
    // Subqueries are materialised into a copy of the plan, once per
    // execution (the cached plan stays as compiled).
    let r = if plan.has_subqueries() {
        match resolve_plan(s, &mut rd, plan) {
            Ok(p) => dispatch(s, &mut rd, &p, out, &mut scratch),
            Err(e) => Err(e),
        }
    } else {
        dispatch(s, &mut rd, plan, out, &mut scratch)
    };
    let held = rd.held;
    drop(rd);
    s.mem.release(held);
    s.txn = txn;
    s.scratch = scratch;
    let e = r?;
    if let Some(n) = e.found_rows {
        s.found_rows = n;
        s.row_count = -1;
    }
    if let Some(n) = e.row_count {
        s.row_count = n;
    }
    if let Some(id) = e.last_insert_id {
        s.last_insert_id = id;
    }
    Ok(())
}

fn dispatch(
    s: &mut StmtCx,
    rd: &mut Reader,
    plan: &Plan,
    out: &mut dyn Output,
    scratch: &mut Scratch,
) -> SqlResult<Effects> {
    match plan {
        Plan::Select(p) => run_select(s, rd, p, out, scratch).map(|n| Effects {
            found_rows: Some(n),
            ..Default::default()
        }),
        Plan::Insert(p) => crate::dml::insert(s, rd, p, out, scratch),
        Plan::Update(p) => crate::dml::update(s, rd, p, out, scratch),
        Plan::Delete(p) => crate::dml::delete(s, rd, p, out, scratch),
    }
}

/// A copy of `plan` with each subquery run and replaced by its value
/// (or its set of values).
fn resolve_plan(s: &StmtCx, rd: &mut Reader, plan: &Plan) -> SqlResult<Plan> {
    let mut p = plan.clone();
    match &mut p {
        Plan::Select(sp) => resolve_select(s, rd, sp)?,
        Plan::Insert(ip) => {
            if let Some(sp) = ip.select.as_mut() {
                resolve_select(s, rd, sp)?;
            }
            if ip.subqueries {
                for e in ip.rows.iter_mut().flatten().flatten() {
                    resolve_expr(s, rd, e, &[])?;
                }
                // ON DUPLICATE KEY UPDATE's slots: the existing row, then
                // the row that was to be inserted.
                let row: Vec<Option<ColumnType>> =
                    ip.t.def.columns.iter().map(|c| Some(c.ty)).collect();
                let types = [row.as_slice(), row.as_slice()].concat();
                for (_, e) in ip.on_dup.iter_mut() {
                    resolve_expr(s, rd, e, &types)?;
                }
            }
        }
        Plan::Update(up) => {
            let types = up.scan.types.clone();
            for (_, e) in up.sets.iter_mut() {
                resolve_expr(s, rd, e, &types)?;
            }
            resolve_select(s, rd, &mut up.scan)?;
        }
        Plan::Delete(dp) => resolve_select(s, rd, &mut dp.scan)?,
    }
    Ok(p)
}

/// Materialises the subqueries of `p` (and of its derived tables) in
/// place.
pub(crate) fn resolve_select(s: &StmtCx, rd: &mut Reader, p: &mut SelectPlan) -> SqlResult<()> {
    if !p.subqueries {
        return Ok(());
    }
    let types = p.types.clone();
    let r = |rd: &mut Reader, e: &mut Expr| resolve_expr(s, rd, e, &types);
    for src in p.sources.iter_mut() {
        match src {
            Source::Table { access, on, .. } => {
                if let Some(o) = on {
                    r(rd, o)?;
                }
                if let Access::Index(ia) = access {
                    for e in ia.eq.iter_mut() {
                        r(rd, e)?;
                    }
                    for a in ia.alts.iter_mut().flatten() {
                        match a {
                            KeyAlt::Point(e) => r(rd, e)?,
                            KeyAlt::Range(lo, hi) => {
                                for (e, _) in lo.iter_mut().chain(hi.iter_mut()) {
                                    r(rd, e)?;
                                }
                            }
                        }
                    }
                    for (e, _) in ia.lo.iter_mut().chain(ia.hi.iter_mut()) {
                        r(rd, e)?;
                    }
                    if let Some(Some(e)) = ia.residual.as_mut() {
                        r(rd, e)?;
                    }
                }
            }
            Source::Derived { plan, set, on, .. } => {
                if let Some(o) = on {
                    r(rd, o)?;
                }
                if let Some(sp) = plan {
                    resolve_select(s, rd, sp)?;
                }
                if let Some(n) = set {
                    resolve_set(s, rd, n)?;
                }
            }
        }
    }
    for e in p
        .filter
        .iter_mut()
        .chain(p.proj.iter_mut())
        .chain(p.aggs.iter_mut().filter_map(|a| a.arg.as_mut()))
        .chain(p.group.iter_mut())
        .chain(p.having.iter_mut())
        .chain(p.order.iter_mut().map(|(e, _)| e))
        .chain(p.limit.iter_mut())
        .chain(p.offset.iter_mut())
    {
        r(rd, e)?;
    }
    p.subqueries = false;
    Ok(())
}

fn resolve_set(s: &StmtCx, rd: &mut Reader, n: &mut SetNode) -> SqlResult<()> {
    match n {
        SetNode::Plan(p) => resolve_select(s, rd, p),
        SetNode::Op(_, _, l, r) => {
            resolve_set(s, rd, l)?;
            resolve_set(s, rd, r)
        }
    }
}

/// Replaces each subquery in `e` by its result; `types` are the slot
/// types of the query `e` belongs to.
fn resolve_expr(
    s: &StmtCx,
    rd: &mut Reader,
    e: &mut Expr,
    types: &[Option<ColumnType>],
) -> SqlResult<()> {
    crate::expr::children_mut(e, &mut |c| resolve_expr(s, rd, c, types))?;
    let Expr::Subquery(x, sq) = e else {
        return Ok(());
    };
    // A correlated subquery runs per row of the query it is in.
    if !sq.plan.outer_refs.is_empty() {
        return Ok(());
    }
    let mut charge = spill::Charge::new(&s.mem);
    let rows = {
        let resolved;
        let plan = if sq.plan.subqueries {
            let mut p = sq.plan.clone();
            resolve_select(s, rd, &mut p)?;
            resolved = p;
            &resolved
        } else {
            &sq.plan
        };
        // EXISTS needs one row and a scalar subquery two (to tell 1242):
        // the rest are not read.
        let enough = match sq.test {
            SubTest::Exists => 1,
            SubTest::Scalar => 2,
            _ => usize::MAX,
        };
        let mut rows: Vec<Vec<Value>> = Vec::new();
        let mut sub = Scratch::default();
        let mut over = None;
        select_rows(s, rd, plan, None, &mut sub, &mut |r| {
            let r = r.to_vec();
            // A set's index takes about as much again as its rows.
            if let Err(e) = charge.add(2 * spill::row_bytes(&r)) {
                over = Some(e);
                return false;
            }
            rows.push(r);
            rows.len() < enough
        })?;
        if let Some(e) = over {
            return Err(e);
        }
        rows
    };
    // The set lives in the plan to the statement's end: so does its
    // count.
    rd.held = rd.held.saturating_add(charge.keep()?);
    *e = match (sq.test, x.take()) {
        (SubTest::Rows(..) | SubTest::RowCmp(_), Some(x)) => {
            let Expr::Row(items) = *x else {
                return Err(SqlError::internal("row subquery"));
            };
            let colls = items
                .iter()
                .map(|i| crate::expr::collation_of(i, types))
                .collect();
            Expr::InRows(items, sq.test, Arc::new(RowSet::new(rows, colls)))
        }
        (SubTest::Rows(..) | SubTest::RowCmp(_), None) => {
            return Err(SqlError::internal("row subquery"))
        }
        (SubTest::Scalar, _) => {
            if rows.len() > 1 {
                return Err(SqlError::new(
                    1242,
                    "21000",
                    "Subquery returns more than 1 row",
                ));
            }
            Expr::Const(
                rows.into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next())
                    .unwrap_or(Value::Null),
            )
        }
        (SubTest::Exists, _) => Expr::Const(Value::Int(i64::from(!rows.is_empty()))),
        (SubTest::Quant(op, all), Some(x)) => {
            let coll = crate::expr::collation_of(&x, types);
            let vals = rows
                .into_iter()
                .map(|r| r.into_iter().next().unwrap_or(Value::Null))
                .collect();
            Expr::InSet(x, op, all, Arc::new(ValueSet::new(vals, coll)))
        }
        (SubTest::Quant(..), None) => return Err(SqlError::internal("quantified subquery")),
    };
    Ok(())
}

/// A row's key for set operations (NULLs equal, strings compared as
/// `utf8mb4_general_ci`).
pub(crate) fn row_key(r: &[Value]) -> Vec<u8> {
    let mut k = Vec::new();
    for v in r {
        group_key(&mut k, v, Collation::Utf8mb4GeneralCi);
    }
    k
}

/// The rows of a set operation's tree (`fr`: the enclosing rows of the
/// query it is part of).
fn set_rows(
    s: &StmtCx,
    rd: &mut Reader,
    n: &SetNode,
    fr: Option<&Frame>,
    charge: &mut spill::Charge,
) -> SqlResult<Vec<Vec<Value>>> {
    let key = row_key;
    match n {
        SetNode::Plan(p) => collect_rows(s, rd, p, fr, charge),
        SetNode::Op(op, all, l, r) => {
            let left = set_rows(s, rd, l, fr, charge)?;
            let right = set_rows(s, rd, r, fr, charge)?;
            let mut out = Vec::new();
            match (op, all) {
                (SetOp::Union, true) => {
                    out = left;
                    out.extend(right);
                }
                (SetOp::Union, false) => {
                    let mut seen = std::collections::HashSet::new();
                    for row in left.into_iter().chain(right) {
                        let k = key(&row);
                        charge.add(spill::key_bytes(&k))?;
                        if seen.insert(k) {
                            out.push(row);
                        }
                    }
                }
                (SetOp::Intersect | SetOp::Except, _) => {
                    // Counts of the right side's rows; a left row is kept
                    // (INTERSECT) or dropped (EXCEPT) against one of them,
                    // ALL using each right row once, DISTINCT keeping each
                    // row once.
                    let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
                    for row in &right {
                        let k = key(row);
                        charge.add(spill::key_bytes(&k))?;
                        *counts.entry(k).or_default() += 1;
                    }
                    let mut seen = std::collections::HashSet::new();
                    for row in left {
                        let k = key(&row);
                        if !*all && !seen.insert(k.clone()) {
                            continue;
                        }
                        let c = counts.get_mut(&k);
                        let matched = match c {
                            Some(c) if *c > 0 => {
                                if *all {
                                    *c -= 1;
                                }
                                true
                            }
                            _ => false,
                        };
                        if matched == (*op == SetOp::Intersect) {
                            out.push(row);
                        }
                    }
                }
            }
            Ok(out)
        }
    }
}

/// The rows of `p`, each counted in `charge`.
fn collect_rows(
    s: &StmtCx,
    rd: &mut Reader,
    p: &SelectPlan,
    fr: Option<&Frame>,
    charge: &mut spill::Charge,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    let mut sub = Scratch::default();
    let mut over = None;
    select_rows(s, rd, p, fr, &mut sub, &mut |r| {
        let r = r.to_vec();
        if let Err(e) = charge.add(spill::row_bytes(&r)) {
            over = Some(e);
            return false;
        }
        rows.push(r);
        true
    })?;
    match over {
        Some(e) => Err(e),
        None => Ok(rows),
    }
}

/// What a statement changes in the session.
#[derive(Default)]
pub(crate) struct Effects {
    pub(crate) found_rows: Option<u64>,
    pub(crate) row_count: Option<i64>,
    pub(crate) last_insert_id: Option<u64>,
}

/// Converts `v` to a column's type exactly, for use in a key; None when
/// the conversion would change the value (the access path then widens).
pub(crate) fn key_value(col: &ColumnDef, v: &Value) -> Option<Value> {
    if v.is_null() {
        return None;
    }
    match col.ty {
        ColumnType::Int { bytes, unsigned } => {
            let n: i128 = match v {
                Value::Int(i) => i128::from(*i),
                Value::UInt(u) => i128::from(*u),
                Value::Decimal(d, s) => {
                    let p = 10i128.checked_pow(u32::from(*s))?;
                    if d % p != 0 {
                        return None;
                    }
                    d / p
                }
                Value::Double(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => *f as i128,
                Value::Str(s) => std::str::from_utf8(s).ok()?.trim().parse::<i128>().ok()?,
                _ => return None,
            };
            let (lo, hi) = ColumnType::int_range(bytes, unsigned);
            if n < lo || n > hi {
                return None;
            }
            Some(if unsigned {
                Value::UInt(n as u64)
            } else {
                Value::Int(n as i64)
            })
        }
        ColumnType::Str { kind, .. } => match v {
            Value::Str(s) => {
                if matches!(kind, StrKind::Char | StrKind::VarChar | StrKind::Text)
                    && std::str::from_utf8(s).is_err()
                {
                    return None;
                }
                Some(Value::Str(s.clone()))
            }
            _ => None,
        },
        ColumnType::Double | ColumnType::Float => match v {
            Value::Int(i) => Some(Value::Double(*i as f64)),
            Value::Double(f) => Some(Value::Double(*f)),
            Value::Decimal(d, s) => Some(Value::Double(*d as f64 / 10f64.powi(i32::from(*s)))),
            _ => None,
        }
        .filter(|_| col.ty == ColumnType::Double),
        _ => crate::convert::to_column(v.clone(), col, 0)
            .ok()
            .filter(|c| compare(c, v, Collation::Binary) == Some(Ordering::Equal)),
    }
}

/// The filter an execution of `p` must apply to the rows its access path
/// returns: the plan's residual when the path has one and every bound
/// value of this execution converts to its column's type unchanged (so
/// the key ranges say exactly what the conjuncts left out say), else the
/// whole WHERE.
pub(crate) fn effective_filter<'p>(s: &dyn Env, p: &'p SelectPlan) -> SqlResult<Option<&'p Expr>> {
    let [Source::Table {
        t,
        access: Access::Index(ia),
        ..
    }] = p.sources.as_slice()
    else {
        return Ok(p.filter.as_ref());
    };
    let Some(residual) = &ia.residual else {
        return Ok(p.filter.as_ref());
    };
    let def = &t.def;
    let ix = match ia.index {
        None => &def.primary,
        Some(i) => &def.secondary[i],
    };
    // Whether `e`'s value is NULL or has an exact key form in column `k`
    // of the index.
    let exact = |k: usize, e: &Expr| -> SqlResult<bool> {
        let Some(col) = ix.columns.get(k).map(|c| &def.columns[*c]) else {
            return Ok(false);
        };
        let v = eval(e, &[], &[], &[], s)?;
        Ok(v.is_null() || key_value(col, &v).is_some())
    };
    for (k, e) in ia.eq.iter().enumerate() {
        if !exact(k, e)? {
            return Ok(p.filter.as_ref());
        }
    }
    let k = ia.eq.len();
    let mut bounds: Vec<&Expr> = Vec::new();
    if let Some(alts) = &ia.alts {
        for a in alts {
            match a {
                KeyAlt::Point(e) => bounds.push(e),
                KeyAlt::Range(lo, hi) => bounds.extend(lo.iter().chain(hi).map(|(e, _)| e)),
            }
        }
    }
    bounds.extend(ia.lo.iter().chain(&ia.hi).map(|(e, _)| e));
    for e in bounds {
        if !exact(k, e)? {
            return Ok(p.filter.as_ref());
        }
    }
    Ok(residual.as_ref())
}

/// Key bytes of a group or DISTINCT value (strings by collation weight),
/// appended to `out`: equal keys exactly when the values are one group.
/// A string is its length (4 bytes) and its weights, written in place (no
/// buffer of its own per value); the keys only hash and compare for
/// equality, they need not sort.
pub(crate) fn group_key(out: &mut Vec<u8>, v: &Value, coll: Collation) {
    match v {
        Value::Null => out.push(0),
        Value::Str(s) => {
            out.push(1);
            coll.put_key(s, out);
        }
        Value::Int(i) => {
            out.push(2);
            out.extend_from_slice(&i.to_be_bytes());
        }
        Value::UInt(u) if *u <= i64::MAX as u64 => {
            out.push(2);
            out.extend_from_slice(&(*u as i64).to_be_bytes());
        }
        // Equal documents (1 and 1.0 too) make equal keys.
        Value::Json(b) => {
            out.push(4);
            crate::json::group_key(b, out);
        }
        other => {
            out.push(3);
            keys::put_bytes(out, other.to_string().as_bytes());
        }
    }
}

/// One aggregate's running state.
#[derive(Clone)]
pub(crate) enum Acc {
    Count(u64),
    Sum(Option<Value>),
    Avg(Option<Value>, u64),
    MinMax(Option<Value>),
    /// BIT_AND / BIT_OR / BIT_XOR so far.
    Bits(u64),
    /// Rows, mean and sum of squared differences (Welford's recurrence,
    /// as MySQL computes variances).
    Var(u64, f64, f64),
    /// GROUP_CONCAT's values with their ORDER BY keys, and their bytes.
    Concat(Vec<(Vec<Value>, Vec<u8>)>, u64),
    /// JSON_ARRAYAGG's values, JSON_OBJECTAGG's `[key, value]` pairs.
    Items(Vec<Value>),
}

/// The session's `group_concat_max_len`.
fn concat_cap(env: &dyn Env) -> u64 {
    env.sys_var("group_concat_max_len")
        .ok()
        .and_then(|v| to_i64(&v))
        .map_or(1024, |n| n.max(4) as u64)
}

/// GROUP_CONCAT's result: the values in ORDER BY order joined by the
/// separator, cut at `group_concat_max_len` bytes (on a character
/// boundary) with warning 1260.
fn concat_result(
    items: &[(Vec<Value>, Vec<u8>)],
    spec: &crate::expr::ConcatSpec,
    env: &dyn Env,
    row: usize,
) -> Value {
    if items.is_empty() {
        return Value::Null;
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    if !spec.order.is_empty() {
        order.sort_by(|&x, &y| {
            for (i, (_, desc)) in spec.order.iter().enumerate() {
                let (a, b) = (&items[x].0[i], &items[y].0[i]);
                let o = match (a.is_null(), b.is_null()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Less,
                    (false, true) => Ordering::Greater,
                    _ => compare(a, b, Collation::Utf8mb4GeneralCi).unwrap_or(Ordering::Equal),
                };
                let o = if *desc { o.reverse() } else { o };
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
    }
    let cap = concat_cap(env) as usize;
    let mut out: Vec<u8> = Vec::new();
    let mut cut = false;
    for (n, &i) in order.iter().enumerate() {
        if n > 0 {
            out.extend_from_slice(&spec.sep);
        }
        out.extend_from_slice(&items[i].1);
        if out.len() > cap {
            cut = true;
            break;
        }
    }
    if cut {
        // Back to the start of a UTF-8 character.
        let mut end = cap.min(out.len());
        while end > 0 && out.get(end).is_some_and(|b| b & 0xC0 == 0x80) {
            end -= 1;
        }
        out.truncate(end);
        env.warn(1260, format!("Row {row} was cut by GROUP_CONCAT()"));
    }
    Value::Str(out)
}

pub(crate) fn new_acc(a: &AggCall) -> Acc {
    match a.func {
        AggFunc::Count | AggFunc::CountStar => Acc::Count(0),
        AggFunc::Sum => Acc::Sum(None),
        AggFunc::Avg => Acc::Avg(None, 0),
        AggFunc::Min | AggFunc::Max => Acc::MinMax(None),
        AggFunc::BitAnd => Acc::Bits(u64::MAX),
        AggFunc::BitOr | AggFunc::BitXor => Acc::Bits(0),
        AggFunc::StdPop | AggFunc::StdSamp | AggFunc::VarPop | AggFunc::VarSamp => {
            Acc::Var(0, 0.0, 0.0)
        }
        AggFunc::GroupConcat => Acc::Concat(Vec::new(), 0),
        AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg => Acc::Items(Vec::new()),
    }
}

/// `a + b` as SUM adds (integers as decimals).
pub(crate) fn add(a: &Value, b: &Value) -> SqlResult<Value> {
    // Integers sum as decimals (MySQL's SUM of INT is DECIMAL).
    let a = match a {
        Value::Int(i) => Value::Decimal(i128::from(*i), 0),
        Value::UInt(u) => Value::Decimal(i128::from(*u), 0),
        o => o.clone(),
    };
    eval(
        &Expr::Binary(
            crate::expr::BinOp::Add,
            Box::new(Expr::Const(a)),
            Box::new(Expr::Const(b.clone())),
        ),
        &[],
        &[],
        &[],
        &NoEnv,
    )
}

struct NoEnv;
impl Env for NoEnv {
    fn params(&self) -> &[Value] {
        &[]
    }
    fn sys_var(&self, name: &str) -> SqlResult<Value> {
        Err(SqlError::internal(format!("no variable {name} here")))
    }
    fn user_var(&self, _: &str) -> Value {
        Value::Null
    }
    fn database(&self) -> Option<String> {
        None
    }
    fn connection_id(&self) -> u64 {
        0
    }
    fn last_insert_id(&self) -> u64 {
        0
    }
    fn user(&self) -> String {
        String::new()
    }
    fn found_rows(&self) -> u64 {
        0
    }
    fn row_count(&self) -> i64 {
        0
    }
}

/// A value as SUM / AVG read it (strings as doubles, dates as numbers).
pub(crate) fn numeric(v: Value) -> Value {
    match v {
        Value::Str(s) => Value::Double(crate::expr::str_to_f64(&s)),
        Value::Date(_) | Value::DateTime(_) => Value::Int(to_i64(&v).unwrap_or(0)),
        o => o,
    }
}

pub(crate) fn feed(acc: &mut Acc, a: &AggCall, v: Option<Value>, coll: Collation) -> SqlResult<()> {
    match acc {
        // Fed with its ORDER BY keys by the grouping loop.
        Acc::Concat(..) => {}
        Acc::Count(n) => {
            if a.func == AggFunc::CountStar || v.as_ref().is_some_and(|v| !v.is_null()) {
                *n += 1;
            }
        }
        Acc::Sum(s) => {
            if let Some(v) = v.filter(|v| !v.is_null()) {
                let v = numeric(v);
                *s = Some(match s.take() {
                    None => add(&Value::Int(0), &v)?,
                    Some(cur) => add(&cur, &v)?,
                });
            }
        }
        Acc::Avg(s, n) => {
            if let Some(v) = v.filter(|v| !v.is_null()) {
                let v = numeric(v);
                *s = Some(match s.take() {
                    None => add(&Value::Int(0), &v)?,
                    Some(cur) => add(&cur, &v)?,
                });
                *n += 1;
            }
        }
        Acc::MinMax(m) => {
            if let Some(v) = v.filter(|v| !v.is_null()) {
                let replace = match m {
                    None => true,
                    Some(cur) => {
                        let o = match (&v, &*cur) {
                            // MIN and MAX of ENUM and SET compare their
                            // strings, as MySQL's do.
                            (Value::Member(_, x), Value::Member(_, y)) => Some(coll.cmp(x, y)),
                            _ => compare(&v, cur, coll),
                        };
                        if a.func == AggFunc::Min {
                            o == Some(Ordering::Less)
                        } else {
                            o == Some(Ordering::Greater)
                        }
                    }
                };
                if replace {
                    *m = Some(v);
                }
            }
        }
        Acc::Bits(b) => {
            if let Some(v) = v.filter(|v| !v.is_null()) {
                let x = match v {
                    Value::UInt(u) => u,
                    other => to_i64(&other).unwrap_or(0) as u64,
                };
                *b = match a.func {
                    AggFunc::BitAnd => *b & x,
                    AggFunc::BitOr => *b | x,
                    _ => *b ^ x,
                };
            }
        }
        Acc::Items(items) => items.push(v.unwrap_or(Value::Null)),
        Acc::Var(n, mean, m2) => {
            if let Some(v) = v.filter(|v| !v.is_null()) {
                let x = crate::expr::num_f64(&v).unwrap_or(0.0);
                *n += 1;
                let d = x - *mean;
                *mean += d / *n as f64;
                *m2 += d * (x - *mean);
            }
        }
    }
    Ok(())
}

pub(crate) fn finish(acc: &Acc, a: &AggCall, env: &dyn Env, row: usize) -> SqlResult<Value> {
    Ok(match acc {
        Acc::Concat(items, _) => match &a.concat {
            Some(spec) => concat_result(items, spec, env, row),
            None => Value::Null,
        },
        Acc::Items(items) if items.is_empty() => Value::Null,
        Acc::Items(items) if a.func == AggFunc::JsonObjectAgg => {
            crate::json::object_agg(items, env)?
        }
        Acc::Items(items) => crate::json::array_agg(items, env)?,
        Acc::Count(n) => Value::Int(*n as i64),
        Acc::Sum(s) => s.clone().unwrap_or(Value::Null),
        Acc::Avg(None, _) | Acc::Avg(_, 0) => Value::Null,
        Acc::Avg(Some(s), n) => avg_of(s, *n)?,
        Acc::MinMax(m) => m.clone().unwrap_or(Value::Null),
        Acc::Bits(b) => {
            if *b <= i64::MAX as u64 {
                Value::Int(*b as i64)
            } else {
                Value::UInt(*b)
            }
        }
        Acc::Var(n, _, m2) => {
            let (samp, root) = match a.func {
                AggFunc::StdPop => (false, true),
                AggFunc::StdSamp => (true, true),
                AggFunc::VarPop => (false, false),
                _ => (true, false),
            };
            let div = if samp { n.saturating_sub(1) } else { *n };
            if div == 0 {
                Value::Null
            } else {
                let var = m2 / div as f64;
                Value::Double(if root { var.sqrt() } else { var })
            }
        }
    })
}

/// AVG's value from the sum of `n` values.
pub(crate) fn avg_of(sum: &Value, n: u64) -> SqlResult<Value> {
    eval(
        &Expr::Binary(
            crate::expr::BinOp::Div,
            Box::new(Expr::Const(sum.clone())),
            Box::new(Expr::Const(Value::Int(
                i64::try_from(n).unwrap_or(i64::MAX),
            ))),
        ),
        &[],
        &[],
        &[],
        &NoEnv,
    )
}

struct Group {
    row: Vec<Value>,
    accs: Vec<Acc>,
    seen: Vec<Option<std::collections::HashSet<Vec<u8>>>>,
}

/// Which of a grouped query's slots its output (select list, HAVING,
/// ORDER BY) reads from a group's first row; None (keep them all) for a
/// query with window functions or subqueries.
fn group_columns(p: &SelectPlan) -> Option<Vec<bool>> {
    if !p.windows.is_empty() || p.subqueries {
        return None;
    }
    let mut used = Vec::new();
    for e in p
        .proj
        .iter()
        .chain(&p.having)
        .chain(p.order.iter().map(|(e, _)| e))
    {
        crate::plan::slots(e, &mut used);
    }
    let mut keep = vec![false; p.width];
    for i in used {
        *keep.get_mut(i)? = true;
    }
    Some(keep)
}

/// Evaluates a LIMIT / OFFSET expression.
/// A LIMIT or OFFSET count: a non-negative integer up to 2^64 - 1 (the
/// largest, `18446744073709551615`, is how clients say "no limit").
pub(crate) fn count_of(e: &Option<Expr>, env: &dyn Env) -> SqlResult<Option<u64>> {
    match e {
        None => Ok(None),
        Some(x) => match eval(x, &[], &[], &[], env)? {
            Value::UInt(u) => Ok(Some(u)),
            v => match to_i64(&v) {
                Some(n) if n >= 0 => Ok(Some(n as u64)),
                _ => Err(SqlError::new(1210, "HY000", "Incorrect arguments to LIMIT")),
            },
        },
    }
}

/// Runs a SELECT, sending its result set; returns the rows sent.
pub(crate) fn run_select(
    s: &StmtCx,
    rd: &mut Reader,
    p: &SelectPlan,
    out: &mut dyn Output,
    scratch: &mut Scratch,
) -> SqlResult<u64> {
    // A bad LIMIT is refused before the result set begins.
    count_of(&p.limit, s)?;
    count_of(&p.offset, s)?;
    out.columns(&p.columns);
    let mut rows_out = 0u64;
    let mut emit = |vals: &[Value]| {
        out.row(vals);
        rows_out += 1;
        true
    };
    select_rows(s, rd, p, None, scratch, &mut emit)?;
    out.end(s.warning_count());
    Ok(rows_out)
}

/// Produces a SELECT's output rows (after grouping, ordering, DISTINCT
/// and LIMIT) to `emit`, until it returns false; `fr` are the current
/// rows of the enclosing queries when this is a correlated subquery.
pub(crate) fn select_rows(
    s: &StmtCx,
    rd: &mut Reader,
    p: &SelectPlan,
    fr: Option<&Frame>,
    scratch: &mut Scratch,
    emit: &mut dyn FnMut(&[Value]) -> bool,
) -> SqlResult<()> {
    let limit = count_of(&p.limit, s)?;
    let offset = count_of(&p.offset, s)?.unwrap_or(0);
    if limit == Some(0) {
        return Ok(());
    }
    // What this execution holds past its rows' lifetimes: derived tables,
    // groups, DISTINCT's keys, window rows, buffered sort rows.
    let mut charge = spill::Charge::new(&s.mem);
    // Derived tables first.
    let mut derived: Vec<Arc<Vec<Vec<Value>>>> = Vec::new();
    for src in &p.sources {
        if let Source::Derived {
            plan,
            rows: fixed,
            set,
            cte,
            ..
        } = src
        {
            match plan {
                _ if cte.is_some() => match cte {
                    Some(crate::cte::CteSource::Shared(c)) => {
                        derived.push(crate::cte::rows(s, rd, c)?);
                    }
                    Some(crate::cte::CteSource::Work(id)) => {
                        derived.push(find(&rd.work, *id).unwrap_or_default());
                    }
                    None => {}
                },
                _ if set.is_some() => {
                    if let Some(n) = set {
                        s.info.count_tmp_table();
                        derived.push(Arc::new(set_rows(s, rd, n, fr, &mut charge)?));
                    }
                }
                Some(plan) => {
                    s.info.count_tmp_table();
                    let rows = collect_rows(s, rd, plan, fr, &mut charge)?;
                    derived.push(Arc::new(rows));
                }
                None => derived.push(Arc::new(fixed.clone())),
            }
        }
    }
    let jd = JoinData {
        derived,
        hashes: RefCell::new(
            (0..p.hash_joins.len())
                .map(|_| HashState::Unbuilt)
                .collect(),
        ),
        key: RefCell::new(Vec::new()),
    };
    let windowed = !p.windows.is_empty();
    let sorted = !p.order.is_empty() && !p.order_by_index;
    let grouped = p.grouped();
    // A windowed query's rows after WHERE (after HAVING, with their
    // aggregates, when grouped): its windows need them all.
    let mut win_rows: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    let mut row = std::mem::take(&mut scratch.row);
    recycle(&mut row, &mut scratch.strs);
    row.resize(p.width, Value::Null);
    let mut proj_row = std::mem::take(&mut scratch.out);

    // Consumers.
    let mut groups: Vec<Group> = Vec::new();
    let mut group_index: HashMap<Vec<u8>, usize> = HashMap::new();
    // A sorted row: the projection, then the ORDER BY values that are not
    // projected columns (`key_slot[k]`: where term k's value is).
    let mut buffered: Vec<Vec<Value>> = Vec::new();
    let mut spare_rows = if sorted {
        std::mem::take(&mut scratch.rows)
    } else {
        Vec::new()
    };
    let nproj = p.proj.len();
    let (key_slot, extra) = if sorted || grouped || windowed {
        order_slots(p)
    } else {
        (Vec::new(), Vec::new())
    };
    // DISTINCT with an ORDER BY over every selected column: equal rows
    // end up side by side, so they are dropped after sorting instead of
    // through a hash set of every row's key.
    let dedupe_sorted =
        p.distinct && !grouped && !windowed && sorted && (0..nproj).all(|j| key_slot.contains(&j));
    let proj_colls: Vec<Collation> = if dedupe_sorted {
        p.proj
            .iter()
            .map(|e| crate::expr::collation_of(e, &p.types))
            .collect()
    } else {
        Vec::new()
    };
    // Groups, a DISTINCT set and window partitions are what MySQL holds
    // in an internal temporary table.
    if !p.group.is_empty() || windowed || (p.distinct && !dedupe_sorted) {
        s.info.count_tmp_table();
    }
    let mut seen: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    // A plain sort's buffered bytes, the most it buffers before it writes
    // them out as a run, and its runs once it has.
    let mut sort_bytes = 0usize;
    let sort_limit = usize::try_from(s.mem.sort_limit()).unwrap_or(usize::MAX);
    let mut runs: Option<spill::Runs> = None;
    let tmpdir = s.db.globals.tmpdir.as_path();
    let info: &crate::status::SessionInfo = &s.info;
    let stmt: &StmtCx = s;
    // A plain sort's buffer in ORDER BY order, DISTINCT's equal rows
    // dropped when they end up side by side.
    let sort_buffer = |rows: &mut Vec<Vec<Value>>| {
        sort_rows(rows, &p.order, &key_slot, &p.types);
        if dedupe_sorted {
            dedupe(rows, &proj_colls);
        }
    };
    // Reused key buffer: a key is copied only when it is new.
    let mut kbuf: Vec<u8> = Vec::new();
    let mut skipped = 0u64;
    let mut sent = 0u64;
    let stream_limit = if !sorted && !grouped && !windowed {
        limit.map(|l| l.saturating_add(offset))
    } else {
        None
    };
    let types = &p.types;
    // Each aggregate's argument collation (DISTINCT keys, MIN/MAX of
    // strings), once per execution instead of per row.
    let agg_colls: Vec<Collation> = p
        .aggs
        .iter()
        .map(|a| {
            a.arg.as_ref().map_or(Collation::Utf8mb4GeneralCi, |e| {
                crate::expr::collation_of(e, types)
            })
        })
        .collect();
    let group_cols = if grouped { group_columns(p) } else { None };
    let mut produced = 0u64;
    let mut err: Option<SqlError> = None;
    // A correlated query evaluates through a context with the enclosing
    // rows and the reader; any other against the session.
    let dynamic = p.correlated;
    let filter = if fr.is_some() {
        effective_filter(&Cx::frames(s, fr), p)?
    } else {
        effective_filter(s, p)?
    };
    {
        let mut sink = |rd: &mut Reader, r: &[Value]| -> SqlResult<bool> {
            let cx;
            let s: &dyn Env = if dynamic {
                cx = Cx::new(s, fr, rd);
                &cx
            } else {
                s
            };
            if let Some(f) = filter {
                if truth(&eval(f, r, &[], types, s)?) != Some(true) {
                    return Ok(true);
                }
            }
            if windowed && !grouped {
                charge.add(spill::row_bytes(r))?;
                win_rows.push((r.to_vec(), Vec::new()));
                return Ok(true);
            }
            if grouped {
                kbuf.clear();
                for g in &p.group {
                    let v = eval(g, r, &[], types, s)?;
                    group_key(&mut kbuf, &v, crate::expr::collation_of(g, types));
                }
                // Without GROUP BY every row is in the one group: no
                // hashing per row.
                let known = if p.group.is_empty() && !groups.is_empty() {
                    Some(&0)
                } else {
                    group_index.get(&kbuf)
                };
                let gi = match known {
                    Some(i) => *i,
                    None => {
                        // The group keeps the columns its output reads.
                        let row: Vec<Value> = match &group_cols {
                            Some(keep) => r
                                .iter()
                                .zip(keep)
                                .map(|(v, k)| if *k { v.clone() } else { Value::Null })
                                .collect(),
                            None => r.to_vec(),
                        };
                        charge.add(
                            spill::row_bytes(&row)
                                + spill::key_bytes(&kbuf)
                                + p.aggs.len() * std::mem::size_of::<Acc>(),
                        )?;
                        groups.push(Group {
                            row,
                            accs: p.aggs.iter().map(new_acc).collect(),
                            seen: p
                                .aggs
                                .iter()
                                .map(|a| a.distinct.then(std::collections::HashSet::new))
                                .collect(),
                        });
                        group_index.insert(kbuf.clone(), groups.len() - 1);
                        groups.len() - 1
                    }
                };
                let g = &mut groups[gi];
                for (k, a) in p.aggs.iter().enumerate() {
                    let v = match &a.arg {
                        Some(e) => Some(eval(e, r, &[], types, s)?),
                        None => None,
                    };
                    if let (Some(set), Some(v)) = (g.seen[k].as_mut(), v.as_ref()) {
                        if v.is_null() {
                            continue;
                        }
                        kbuf.clear();
                        group_key(&mut kbuf, v, agg_colls[k]);
                        if set.contains(&kbuf) {
                            continue;
                        }
                        charge.add(spill::key_bytes(&kbuf))?;
                        set.insert(kbuf.clone());
                    }
                    if let (Some(spec), Some(v)) = (&a.concat, v.as_ref()) {
                        if v.is_null() {
                            continue;
                        }
                        let keys = spec
                            .order
                            .iter()
                            .map(|(e, _)| eval(e, r, &[], types, s))
                            .collect::<SqlResult<Vec<_>>>()?;
                        if let Some(Acc::Concat(items, bytes)) = g.accs.get_mut(k) {
                            let t = crate::expr::text_of(v);
                            // Without ORDER BY nothing past the cap is kept.
                            if spec.order.is_empty() && *bytes > concat_cap(s) {
                                *bytes += 1;
                                continue;
                            }
                            *bytes += t.len() as u64;
                            charge.add(t.len() + spill::row_bytes(&keys))?;
                            items.push((keys, t));
                        }
                        continue;
                    }
                    feed(&mut g.accs[k], a, v, agg_colls[k])?;
                }
                return Ok(true);
            }
            produced += 1;
            proj_row.resize(p.proj.len(), Value::Null);
            for (k, e) in p.proj.iter().enumerate() {
                match e {
                    Expr::Column(i) => assign(&mut proj_row[k], r.get(*i).unwrap_or(&Value::Null)),
                    other => proj_row[k] = eval(other, r, &[], types, s)?,
                }
            }
            if p.distinct && !dedupe_sorted {
                kbuf.clear();
                for (k, v) in proj_row.iter().enumerate() {
                    group_key(&mut kbuf, v, crate::expr::collation_of(&p.proj[k], types));
                }
                if seen.contains(&kbuf) {
                    return Ok(true);
                }
                charge.add(spill::key_bytes(&kbuf))?;
                seen.insert(kbuf.clone());
            }
            if sorted {
                let mut b = spare_rows.pop().unwrap_or_default();
                b.truncate(nproj);
                for (k, v) in proj_row.iter().enumerate() {
                    match b.get_mut(k) {
                        Some(slot) => assign(slot, v),
                        None => b.push(v.clone()),
                    }
                }
                for &k in &extra {
                    if let Some((e, _)) = p.order.get(k) {
                        b.push(eval(e, r, &[], types, s)?);
                    }
                }
                sort_bytes += spill::row_bytes(&b);
                buffered.push(b);
                // A bounded sort: keep the buffer near the limit.
                let keep =
                    limit.map(|l| usize::try_from(l.saturating_add(offset)).unwrap_or(usize::MAX));
                if let Some(keep) = keep {
                    if buffered.len() >= keep.saturating_mul(2).max(1024) {
                        sort_buffer(&mut buffered);
                        buffered.truncate(keep);
                        sort_bytes = buffered.iter().map(|r| spill::row_bytes(r)).sum();
                    }
                }
                // Past the sort buffer: the rows go to disk as a sorted run
                // (cut to what a LIMIT can still need).
                if sort_bytes > sort_limit {
                    let r = match &mut runs {
                        Some(r) => r,
                        None => runs.insert(spill::Runs::create(tmpdir)?),
                    };
                    sort_buffer(&mut buffered);
                    if let Some(keep) = keep {
                        buffered.truncate(keep);
                    }
                    r.write_run(&buffered)?;
                    // Empties the buffer, keeping some rows for reuse.
                    keep_rows(&mut spare_rows, &mut buffered);
                    sort_bytes = 0;
                }
                return Ok(true);
            }
            if skipped < offset {
                skipped += 1;
                return Ok(true);
            }
            sent += 1;
            if !emit(&proj_row) {
                return Ok(false);
            }
            Ok(stream_limit.is_none_or(|l| skipped + sent < l))
        };
        if p.sources.is_empty() {
            if let Err(e) = sink(rd, &row) {
                err = Some(e);
            }
        } else if let Err(e) = join(s, rd, p, fr, 0, &mut row, &jd, scratch, &mut sink) {
            err = Some(e);
        }
    }
    scratch.row = row;
    if let Some(e) = err {
        scratch.out = proj_row;
        scratch.rows = spare_rows;
        return Err(e);
    }
    let _ = produced;
    let cx;
    let s: &dyn Env = if dynamic {
        cx = Cx::new(s, fr, rd);
        &cx
    } else {
        s
    };
    if grouped {
        // An aggregate without GROUP BY over no rows still has one row.
        if groups.is_empty() && p.group.is_empty() {
            groups.push(Group {
                row: vec![Value::Null; p.width],
                accs: p.aggs.iter().map(new_acc).collect(),
                seen: Vec::new(),
            });
        }
    }
    if windowed {
        if grouped {
            for (gi, g) in groups.iter().enumerate() {
                let aggs = g
                    .accs
                    .iter()
                    .zip(&p.aggs)
                    .map(|(acc, a)| finish(acc, a, s, gi + 1))
                    .collect::<SqlResult<Vec<_>>>()?;
                if let Some(h) = &p.having {
                    if truth(&eval(h, &g.row, &aggs, types, s)?) != Some(true) {
                        continue;
                    }
                }
                win_rows.push((g.row.clone(), aggs));
            }
        }
        let vals = crate::window::window_values(&p.windows, &win_rows, types, s)?;
        let none = Vec::new();
        for (i, (r, aggs)) in win_rows.iter_mut().enumerate() {
            // The group's aggregates, then the window values.
            aggs.extend_from_slice(vals.get(i).unwrap_or(&none));
            let w = &*aggs;
            let mut b = p
                .proj
                .iter()
                .map(|e| eval(e, r, w, types, s))
                .collect::<SqlResult<Vec<_>>>()?;
            if p.distinct {
                kbuf.clear();
                for (k, v) in b.iter().enumerate() {
                    group_key(&mut kbuf, v, crate::expr::collation_of(&p.proj[k], types));
                }
                if seen.contains(&kbuf) {
                    continue;
                }
                seen.insert(kbuf.clone());
            }
            for &k in &extra {
                if let Some((e, _)) = p.order.get(k) {
                    b.push(eval(e, r, w, types, s)?);
                }
            }
            charge.add(spill::row_bytes(&b))?;
            buffered.push(b);
        }
        if !p.order.is_empty() {
            sort_rows(&mut buffered, &p.order, &key_slot, types);
        }
    } else if grouped {
        for (gi, g) in groups.iter().enumerate() {
            let aggs = g
                .accs
                .iter()
                .zip(&p.aggs)
                .map(|(acc, a)| finish(acc, a, s, gi + 1))
                .collect::<SqlResult<Vec<_>>>()?;
            if let Some(h) = &p.having {
                if truth(&eval(h, &g.row, &aggs, types, s)?) != Some(true) {
                    continue;
                }
            }
            let vals = p
                .proj
                .iter()
                .map(|e| eval(e, &g.row, &aggs, types, s))
                .collect::<SqlResult<Vec<_>>>()?;
            if p.distinct {
                kbuf.clear();
                for (k, v) in vals.iter().enumerate() {
                    group_key(&mut kbuf, v, crate::expr::collation_of(&p.proj[k], types));
                }
                if seen.contains(&kbuf) {
                    continue;
                }
                seen.insert(kbuf.clone());
            }
            let mut b = vals;
            for &k in &extra {
                if let Some((e, _)) = p.order.get(k) {
                    b.push(eval(e, &g.row, &aggs, types, s)?);
                }
            }
            charge.add(spill::row_bytes(&b))?;
            buffered.push(b);
        }
        if !p.order.is_empty() {
            sort_rows(&mut buffered, &p.order, &key_slot, types);
        }
    } else if let (true, Some(mut r)) = (sorted, runs.take()) {
        // A sort that spilled: the last rows become the last run, and the
        // merge feeds OFFSET, LIMIT and the output.
        sort_buffer(&mut buffered);
        r.write_run(&buffered)?;
        keep_rows(&mut spare_rows, &mut buffered);
        let colls = order_colls(&p.order, types);
        let cmp = |a: &[Value], b: &[Value]| cmp_rows(a, b, &p.order, &key_slot, &colls);
        let mut last: Vec<Value> = Vec::new();
        let mut skipped = 0u64;
        let mut sent = 0u64;
        let passes = r.merge(&cmp, &mut |row| {
            // KILL QUERY and max_execution_time stop a long merge too.
            stmt.check_interrupt()?;
            if dedupe_sorted {
                if !last.is_empty() && same_projection(&last, row, &proj_colls) {
                    return Ok(true);
                }
                last.clear();
                last.extend_from_slice(row);
            }
            if skipped < offset {
                skipped += 1;
                return Ok(true);
            }
            if limit.is_some_and(|l| sent >= l) {
                return Ok(false);
            }
            sent += 1;
            Ok(emit(row.get(..nproj).unwrap_or(row)) && limit.is_none_or(|l| sent < l))
        })?;
        info.count_spill(passes);
    } else if sorted {
        sort_buffer(&mut buffered);
    }
    if grouped || sorted || windowed {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(buffered.len());
        let end = match limit {
            Some(l) => start
                .saturating_add(usize::try_from(l).unwrap_or(usize::MAX))
                .min(buffered.len()),
            None => buffered.len(),
        };
        for b in buffered.get(start..end).unwrap_or_default() {
            if !emit(b.get(..nproj).unwrap_or(b)) {
                break;
            }
        }
    }
    scratch.out = proj_row;
    if sorted {
        keep_rows(&mut spare_rows, &mut buffered);
        scratch.rows = spare_rows;
    }
    Ok(())
}

/// Compares two values of a sort key under `coll`, NULL first.
pub(crate) fn sort_cmp(x: &Value, y: &Value, coll: Collation) -> Ordering {
    match (x.is_null(), y.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => compare(x, y, coll).unwrap_or(Ordering::Equal),
    }
}

/// Where each ORDER BY term's value sits in a buffered row (the
/// projection, then the terms that are not projected columns), and the
/// terms stored after the projection, in order.
fn order_slots(p: &SelectPlan) -> (Vec<usize>, Vec<usize>) {
    let mut slots = Vec::with_capacity(p.order.len());
    let mut extra = Vec::new();
    for (k, (e, _)) in p.order.iter().enumerate() {
        let same = match e {
            Expr::Column(i) => p
                .proj
                .iter()
                .position(|pe| matches!(pe, Expr::Column(j) if j == i)),
            _ => None,
        };
        match same {
            Some(j) => slots.push(j),
            None => {
                slots.push(p.proj.len() + extra.len());
                extra.push(k);
            }
        }
    }
    (slots, extra)
}

/// Sorts buffered rows by the ORDER BY terms (term k's value at
/// `slots[k]`); stable, so equal rows keep the order they came in.
fn sort_rows(
    rows: &mut [Vec<Value>],
    order: &[(Expr, bool)],
    slots: &[usize],
    types: &[Option<ColumnType>],
) {
    let colls = order_colls(order, types);
    rows.sort_by(|a, b| cmp_rows(a, b, order, slots, &colls));
}

/// Each ORDER BY term's collation.
fn order_colls(order: &[(Expr, bool)], types: &[Option<ColumnType>]) -> Vec<Collation> {
    order
        .iter()
        .map(|(e, _)| crate::expr::collation_of(e, types))
        .collect()
}

/// Two buffered rows in ORDER BY order (term k's value at `slots[k]`,
/// compared under `colls[k]`, NULL first, DESC reversed).
fn cmp_rows(
    a: &[Value],
    b: &[Value],
    order: &[(Expr, bool)],
    slots: &[usize],
    colls: &[Collation],
) -> Ordering {
    let null = Value::Null;
    for (k, (_, asc)) in order.iter().enumerate() {
        let slot = slots.get(k).copied().unwrap_or(usize::MAX);
        let (x, y) = (a.get(slot).unwrap_or(&null), b.get(slot).unwrap_or(&null));
        let coll = colls.get(k).copied().unwrap_or(Collation::Utf8mb4GeneralCi);
        let o = sort_cmp(x, y, coll);
        let o = if *asc { o } else { o.reverse() };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Drops each sorted row whose projection (the first `colls.len()`
/// values) equals the one before it under the columns' collations,
/// keeping the first of each run.
fn dedupe(rows: &mut Vec<Vec<Value>>, colls: &[Collation]) {
    rows.dedup_by(|b, a| same_projection(a, b, colls));
}

/// Whether two rows' projections (their first `colls.len()` values) are
/// equal under the columns' collations (NULL equal to NULL).
fn same_projection(a: &[Value], b: &[Value], colls: &[Collation]) -> bool {
    colls
        .iter()
        .enumerate()
        .all(|(j, coll)| match (a.get(j), b.get(j)) {
            (Some(x), Some(y)) => match (x.is_null(), y.is_null()) {
                (true, true) => true,
                (false, false) => compare(x, y, *coll) == Some(Ordering::Equal),
                _ => false,
            },
            _ => false,
        })
}

/// Copies `v` into `slot`, reusing a string buffer already there.
pub(crate) fn assign(slot: &mut Value, v: &Value) {
    match (slot, v) {
        (Value::Str(dst), Value::Str(src)) => {
            dst.clear();
            dst.extend_from_slice(src);
        }
        (slot, v) => *slot = v.clone(),
    }
}

type Sink<'a> = dyn FnMut(&mut Reader, &[Value]) -> SqlResult<bool> + 'a;

/// What one execution's joins share: the derived tables' rows (in
/// source order) and the hash tables of sources read by hash join.
struct JoinData {
    derived: Vec<Arc<Vec<Vec<Value>>>>,
    hashes: RefCell<Vec<HashState>>,
    /// The probe key of the current row.
    key: RefCell<Vec<u8>>,
}

/// The nested loop over `p.sources[level..]`; returns false to stop.
#[allow(clippy::too_many_arguments)]
fn join(
    s: &StmtCx,
    rd: &mut Reader,
    p: &SelectPlan,
    fr: Option<&Frame>,
    level: usize,
    row: &mut Vec<Value>,
    jd: &JoinData,
    scratch: &mut Scratch,
    sink: &mut Sink,
) -> SqlResult<bool> {
    let Some(src) = p.sources.get(level) else {
        return sink(rd, row);
    };
    let on_holds = |rd: &mut Reader, row: &[Value], on: &Option<Expr>| -> SqlResult<bool> {
        let Some(c) = on else {
            return Ok(true);
        };
        let hit = if p.correlated {
            eval(c, row, &[], &p.types, &Cx::new(s, fr, rd))?
        } else {
            eval(c, row, &[], &p.types, s)?
        };
        Ok(truth(&hit) == Some(true))
    };
    let hashed = match p.hash_joins.get(level) {
        Some(Some(hj)) => hash_table(s, fr, rd, p, level, hj, row, jd, scratch)?.map(|t| (hj, t)),
        _ => None,
    };
    match src {
        Source::Derived {
            offset,
            width,
            left,
            on,
            ..
        } => {
            let di = p.sources[..level]
                .iter()
                .filter(|s| matches!(s, Source::Derived { .. }))
                .count();
            let rows = jd.derived.get(di).map(|d| d.as_slice()).unwrap_or_default();
            let mut matched = false;
            let mut visit = |rd: &mut Reader,
                             row: &mut Vec<Value>,
                             scratch: &mut Scratch,
                             r: &[Value]|
             -> SqlResult<bool> {
                for (k, v) in r.iter().enumerate() {
                    row[offset + k] = v.clone();
                }
                if !on_holds(rd, row, on)? {
                    return Ok(true);
                }
                matched = true;
                join(s, rd, p, fr, level + 1, row, jd, scratch, sink)
            };
            let cands = match &hashed {
                Some((hj, t)) => t.candidates(hj, row, &mut jd.key.borrow_mut()),
                None => None,
            };
            match cands {
                Some(list) => {
                    for &i in list.iter() {
                        if let Some(r) = rows.get(i as usize) {
                            if !visit(rd, row, scratch, r)? {
                                return Ok(false);
                            }
                        }
                    }
                }
                None => {
                    for r in rows {
                        if !visit(rd, row, scratch, r)? {
                            return Ok(false);
                        }
                    }
                }
            }
            if *left && !matched {
                for k in 0..*width {
                    row[offset + k] = Value::Null;
                }
                return join(s, rd, p, fr, level + 1, row, jd, scratch, sink);
            }
            Ok(true)
        }
        Source::Table {
            t,
            access,
            left,
            on,
        } => {
            let mut matched = false;
            let mut cont = true;
            let mut each =
                |rd: &mut Reader, row: &mut Vec<Value>, scratch: &mut Scratch| -> SqlResult<bool> {
                    if !on_holds(rd, row, on)? {
                        return Ok(true);
                    }
                    matched = true;
                    join(s, rd, p, fr, level + 1, row, jd, scratch, sink)
                };
            if let Some((hj, tab)) = &hashed {
                let cands = tab.candidates(hj, row, &mut jd.key.borrow_mut());
                let n = t.def.columns.len();
                let mut visit = |i: u32, row: &mut Vec<Value>, scratch: &mut Scratch| {
                    let Some(r) = tab.rows.get(i as usize) else {
                        return Ok(true);
                    };
                    for (k, v) in r.iter().take(n).enumerate() {
                        assign(&mut row[t.offset + k], v);
                    }
                    each(rd, row, scratch)
                };
                match cands {
                    Some(list) => {
                        for &i in list.iter() {
                            if !visit(i, row, scratch)? {
                                return Ok(false);
                            }
                        }
                    }
                    None => {
                        for i in 0..u32::try_from(tab.rows.len()).unwrap_or(u32::MAX) {
                            if !visit(i, row, scratch)? {
                                return Ok(false);
                            }
                        }
                    }
                }
            } else {
                scan_table(
                    s,
                    fr,
                    rd,
                    t,
                    access,
                    row,
                    scratch,
                    &mut |rd, row, scratch| {
                        let r = each(rd, row, scratch)?;
                        if !r {
                            cont = false;
                        }
                        Ok(r)
                    },
                )?;
                if !cont {
                    return Ok(false);
                }
            }
            if *left && !matched {
                for k in 0..t.def.columns.len() {
                    row[t.offset + k] = Value::Null;
                }
                return join(s, rd, p, fr, level + 1, row, jd, scratch, sink);
            }
            Ok(true)
        }
    }
}

/// The hash table of the source at `level`, built on first use in this
/// execution (None: it is too large, and the source is read by the
/// nested loop).
#[allow(clippy::too_many_arguments)]
fn hash_table(
    s: &StmtCx,
    fr: Option<&Frame>,
    rd: &mut Reader,
    p: &SelectPlan,
    level: usize,
    hj: &HashJoin,
    row: &mut Vec<Value>,
    jd: &JoinData,
    scratch: &mut Scratch,
) -> SqlResult<Option<Rc<HashTable>>> {
    match jd.hashes.borrow().get(level) {
        Some(HashState::Built(t)) => return Ok(Some(Rc::clone(t))),
        Some(HashState::TooBig) | None => return Ok(None),
        Some(HashState::Unbuilt) => {}
    }
    let built = match p.sources.get(level) {
        Some(Source::Table { t, .. }) => {
            // The source's slots are overwritten for each candidate
            // anyway; the scan may use them now.
            let n = t.def.columns.len();
            let mut held: Vec<Vec<Value>> = Vec::new();
            let mut bytes = 0usize;
            let mut too_big = false;
            scan_table(
                s,
                fr,
                rd,
                t,
                &Access::Full,
                row,
                scratch,
                &mut |_, row, _| {
                    let r = row.get(t.offset..t.offset + n).unwrap_or_default().to_vec();
                    bytes += spill::row_bytes(&r);
                    if bytes > hashjoin::HASH_JOIN_MAX_BYTES {
                        too_big = true;
                        return Ok(false);
                    }
                    held.push(r);
                    Ok(true)
                },
            )?;
            (!too_big).then(|| HashTable::build(hj, t.offset, &[], held))
        }
        Some(Source::Derived { offset, .. }) => {
            let di = p.sources[..level]
                .iter()
                .filter(|s| matches!(s, Source::Derived { .. }))
                .count();
            let rows = jd.derived.get(di).map(|d| d.as_slice()).unwrap_or_default();
            Some(HashTable::build(hj, *offset, rows, Vec::new()))
        }
        None => None,
    };
    let state = match built {
        Some(t) => HashState::Built(Rc::new(t)),
        None => HashState::TooBig,
    };
    let out = match &state {
        HashState::Built(t) => Some(Rc::clone(t)),
        _ => None,
    };
    if let Some(slot) = jd.hashes.borrow_mut().get_mut(level) {
        *slot = state;
    }
    Ok(out)
}

type RowFn<'a> = dyn FnMut(&mut Reader, &mut Vec<Value>, &mut Scratch) -> SqlResult<bool> + 'a;

/// Decodes a primary-key entry into the row's slots of table `t`.
fn decode_into(
    t: &TableRef,
    key: &[u8],
    value: &[u8],
    row: &mut [Value],
    tmp: &mut Vec<Vec<u8>>,
) -> SqlResult<()> {
    let n = t.def.columns.len();
    let dst = row
        .get_mut(t.offset..t.offset + n)
        .ok_or_else(|| SqlError::internal("row slots"))?;
    row::decode_row_into(&t.def, key, value, dst, tmp).ok_or_else(|| {
        SqlError::internal(format!(
            "row of table {} is damaged (key {})",
            t.def.name,
            key.escape_ascii()
        ))
    })?;
    Ok(())
}

/// Enumerates the rows of table `t` through `access`, writing each into
/// `row` and calling `f`; stops when `f` returns false. Each row read
/// counts toward the session's rows examined (the slow log).
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_table(
    s: &StmtCx,
    fr: Option<&Frame>,
    rd: &mut Reader,
    t: &TableRef,
    access: &Access,
    row: &mut Vec<Value>,
    scratch: &mut Scratch,
    f: &mut RowFn,
) -> SqlResult<()> {
    let def = t.def.clone();
    let ia = match access {
        Access::Full => None,
        Access::Index(ia) => Some(ia),
    };
    let index = ia.and_then(|ia| ia.index);
    let covering = ia.is_some_and(|ia| ia.covering);
    let reverse = ia.is_some_and(|ia| ia.reverse);
    let mut tmp = std::mem::take(&mut scratch.strs);
    let mut key = std::mem::take(&mut scratch.key);
    let mut val = std::mem::take(&mut scratch.val);
    // Key bounds may read the enclosing queries' rows.
    let cx;
    let env: &dyn Env = match fr {
        Some(_) => {
            cx = Cx::frames(s, fr);
            &cx
        }
        None => s,
    };
    // Handler_* counts of this scan, added to the session's at its end.
    let mut hc = HandlerCounts::default();
    let result = (|| -> SqlResult<()> {
        // Key ranges to read: (lo, hi) byte bounds, or exact point keys;
        // `keyed`: bounds from key conditions (not a whole index).
        let mut keyed = true;
        let mut ranges = match ia {
            None => vec![full_range(def.primary.id)],
            // A primary-key point (every key column equal to a value): its
            // key in the session's buffer, read at once, no ranges built.
            Some(ia) if ia.index.is_none() && ia.eq.len() == def.primary.columns.len() => {
                match eq_prefix(env, &def, ia, row, &mut key)? {
                    EqPrefix::Built => {
                        hc.one(Handler::ReadKey);
                        if rd.get(&key, &mut val)? {
                            decode_into(t, &key, &val, row, &mut tmp)?;
                            s.info.examined_one();
                            f(rd, row, scratch)?;
                        }
                        return Ok(());
                    }
                    EqPrefix::MatchesNothing => return Ok(()),
                    EqPrefix::NoKeyForm => {
                        keyed = false;
                        vec![full_range(def.primary.id)]
                    }
                }
            }
            Some(ia) => match index_ranges(env, &def, ia, row)? {
                Some(r) => r,
                None => {
                    keyed = false;
                    vec![full_range(index_id_of(&def, ia.index))]
                }
            },
        };
        // What MySQL's handler would count: a table scan is a read of
        // the next row each time (the end included); an index is entered
        // at a key, or at its first or last entry, then stepped.
        let (enter, step) = match (ia.is_none(), keyed, reverse) {
            (true, _, _) => (Handler::ReadRndNext, Handler::ReadRndNext),
            (false, true, false) => (Handler::ReadKey, Handler::ReadNext),
            (false, true, true) => (Handler::ReadKey, Handler::ReadPrev),
            (false, false, false) => (Handler::ReadFirst, Handler::ReadNext),
            (false, false, true) => (Handler::ReadLast, Handler::ReadPrev),
        };
        if reverse {
            // Sorted, disjoint ranges: the last one first.
            ranges.reverse();
        }
        // One iterator for all the ranges, re-bounded per range (a seek
        // each, not a new merge of every memtable and table each).
        let mut iter: Option<RIter> = None;
        for (lo, hi, point) in ranges {
            if point && index.is_none() {
                // Primary-key point read.
                hc.one(Handler::ReadKey);
                if rd.get(&lo, &mut val)? {
                    decode_into(t, &lo, &val, row, &mut tmp)?;
                    s.info.examined_one();
                    if !f(rd, row, scratch)? {
                        return Ok(());
                    }
                }
                continue;
            }
            let it = match &mut iter {
                Some(it) => {
                    it.set_bounds(lo, hi);
                    it
                }
                None => iter.insert(rd.iter(lo, hi)?),
            };
            if reverse {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            hc.one(enter);
            while it.valid() {
                s.check_interrupt()?;
                match index {
                    None => {
                        if rd.lock.is_some() {
                            // Lock the row and read its latest version.
                            key.clear();
                            key.extend_from_slice(it.key());
                            if rd.get(&key, &mut val)? {
                                decode_into(t, &key, &val, row, &mut tmp)?;
                            } else {
                                advance(it, reverse);
                                hc.one(step);
                                continue;
                            }
                        } else {
                            decode_into(t, it.key(), it.value(), row, &mut tmp)?;
                        }
                    }
                    Some(i) => {
                        let ix = &def.secondary[i];
                        let n = def.columns.len();
                        let dst = row
                            .get_mut(t.offset..t.offset + n)
                            .ok_or_else(|| SqlError::internal("row slots"))?;
                        let hidden =
                            row::decode_secondary_into(&def, ix, it.key(), it.value(), dst)
                                .ok_or_else(|| {
                                    SqlError::internal(format!(
                                        "index {} of table {} is damaged",
                                        ix.name, def.name
                                    ))
                                })?;
                        if !covering || rd.lock.is_some() {
                            row::pk_key(&def, &row[t.offset..t.offset + n], hidden, &mut key);
                            if !rd.get(&key, &mut val)? {
                                // The index entry outlived its row (a
                                // concurrent delete): skip it.
                                advance(it, reverse);
                                hc.one(step);
                                continue;
                            }
                            decode_into(t, &key, &val, row, &mut tmp)?;
                        }
                    }
                }
                s.info.examined_one();
                if !f(rd, row, scratch)? {
                    return Ok(());
                }
                advance(it, reverse);
                hc.one(step);
            }
            it.status()?;
        }
        Ok(())
    })();
    s.info.add_handler(&hc);
    scratch.key = key;
    scratch.val = val;
    // A nested scan (a subquery in `f`) may have left buffers of its own.
    if scratch.strs.is_empty() {
        scratch.strs = tmp;
    }
    result
}

fn advance(it: &mut RIter, reverse: bool) {
    if reverse {
        it.prev()
    } else {
        it.next()
    }
}

fn index_id_of(def: &TableDef, index: Option<usize>) -> u32 {
    match index {
        None => def.primary.id,
        Some(i) => def.secondary.get(i).map_or(def.primary.id, |ix| ix.id),
    }
}

/// A key range to read: `[lo, hi)`, or the single key `lo` when the
/// flag is set (a primary-key point).
type KeyRange = (Vec<u8>, Vec<u8>, bool);

fn full_range(id: u32) -> KeyRange {
    let (lo, hi) = keys::index_bounds(id);
    (lo, hi, false)
}

/// Sorts key ranges by their start and merges the ones that overlap, so
/// that reading them one after another gives each key once, in order.
/// Ranges that only touch stay apart (two primary-key points stay point
/// reads); equal points stay one point.
fn merge_ranges(mut ranges: Vec<KeyRange>) -> Vec<KeyRange> {
    ranges.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut out: Vec<KeyRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.0 < last.1 => {
                let same_point = last.2 && r.2 && r.0 == last.0;
                if r.1 > last.1 {
                    last.1 = r.1;
                }
                last.2 = same_point;
            }
            _ => out.push(r),
        }
    }
    out
}

/// What [`eq_prefix`] made.
enum EqPrefix {
    /// The key prefix of the access's equalities.
    Built,
    /// An equality with NULL: no row matches.
    MatchesNothing,
    /// A value with no exact key form: scan and filter.
    NoKeyForm,
}

/// Writes into `prefix` the index id and the key values of the access's
/// equalities for the current outer row.
fn eq_prefix(
    s: &dyn Env,
    def: &TableDef,
    ia: &IndexAccess,
    outer: &[Value],
    prefix: &mut Vec<u8>,
) -> SqlResult<EqPrefix> {
    let ix = match ia.index {
        None => &def.primary,
        Some(i) => &def.secondary[i],
    };
    prefix.clear();
    keys::put_index_id(prefix, ix.id);
    for (k, e) in ia.eq.iter().enumerate() {
        let v = eval(e, outer, &[], &[], s)?;
        if v.is_null() {
            // `col = NULL` matches nothing.
            return Ok(EqPrefix::MatchesNothing);
        }
        let col = &def.columns[ix.columns[k]];
        let Some(kv) = key_value(col, &v) else {
            return Ok(EqPrefix::NoKeyForm);
        };
        row::put_key_part(prefix, col, ix.prefix_of(k), &kv);
    }
    Ok(EqPrefix::Built)
}

/// The byte ranges of an index access for the current outer row; None
/// when a bound cannot be encoded exactly (the caller scans the whole
/// index and the filter decides). A primary-key point is not one:
/// `scan_table` reads it without ranges.
fn index_ranges(
    s: &dyn Env,
    def: &TableDef,
    ia: &IndexAccess,
    outer: &[Value],
) -> SqlResult<Option<Vec<KeyRange>>> {
    let ix = match ia.index {
        None => &def.primary,
        Some(i) => &def.secondary[i],
    };
    let mut prefix = Vec::with_capacity(32);
    match eq_prefix(s, def, ia, outer, &mut prefix)? {
        EqPrefix::Built => {}
        EqPrefix::MatchesNothing => return Ok(Some(Vec::new())),
        EqPrefix::NoKeyForm => return Ok(None),
    }
    let next = ix.columns.get(ia.eq.len()).map(|c| &def.columns[*c]);
    // A prefix part keeps only the start of a value: a point reads every
    // value with that start, and a range is not narrowed on it (the
    // WHERE decides).
    let cut = ix.prefix_of(ia.eq.len());
    if let (Some(alts), Some(col)) = (&ia.alts, next) {
        // A key of `prefix ‖ v`: None for NULL (matches nothing), Err(())
        // when v has no exact key form.
        let key_of = |e: &Expr| -> SqlResult<Option<Result<Vec<u8>, ()>>> {
            let v = eval(e, outer, &[], &[], s)?;
            if v.is_null() {
                return Ok(None);
            }
            Ok(Some(key_value(col, &v).ok_or(()).map(|kv| {
                let mut k = prefix.clone();
                row::put_key_part(&mut k, col, cut, &kv);
                k
            })))
        };
        let point = ia.index.is_none() && ia.eq.len() + 1 == ix.columns.len();
        let mut ranges: Vec<KeyRange> = Vec::with_capacity(alts.len());
        'alt: for a in alts {
            match a {
                KeyAlt::Point(e) => match key_of(e)? {
                    None => {}
                    Some(Ok(k)) => {
                        let hi = successor(&k);
                        ranges.push((k, hi, point));
                    }
                    Some(Err(())) => return Ok(None),
                },
                KeyAlt::Range(..) if cut > 0 => {
                    ranges.push((prefix.clone(), successor(&prefix), false));
                }
                KeyAlt::Range(lo, hi) => {
                    // A bound without a key form widens to the prefix's
                    // end; the WHERE narrows again.
                    let mut from = prefix.clone();
                    let mut to = successor(&prefix);
                    if let Some((e, incl)) = lo {
                        match key_of(e)? {
                            None => continue 'alt,
                            Some(Ok(k)) => from = if *incl { k } else { successor(&k) },
                            Some(Err(())) => {}
                        }
                    }
                    if let Some((e, incl)) = hi {
                        match key_of(e)? {
                            None => continue 'alt,
                            Some(Ok(k)) => to = if *incl { successor(&k) } else { k },
                            Some(Err(())) => {}
                        }
                    }
                    if from < to {
                        ranges.push((from, to, false));
                    }
                }
            }
        }
        return Ok(Some(merge_ranges(ranges)));
    }
    let mut lo = prefix.clone();
    let mut hi = successor(&prefix);
    if let Some(col) = next.filter(|_| cut == 0) {
        if let Some((e, incl)) = &ia.lo {
            let v = eval(e, outer, &[], &[], s)?;
            if v.is_null() {
                return Ok(Some(Vec::new()));
            }
            if let Some(kv) = key_value(col, &v) {
                let mut k = prefix.clone();
                row::put_key_value(&mut k, &col.ty, col.nullable, &kv);
                lo = if *incl { k } else { successor(&k) };
            }
        }
        if let Some((e, incl)) = &ia.hi {
            let v = eval(e, outer, &[], &[], s)?;
            if v.is_null() {
                return Ok(Some(Vec::new()));
            }
            if let Some(kv) = key_value(col, &v) {
                let mut k = prefix.clone();
                row::put_key_value(&mut k, &col.ty, col.nullable, &kv);
                hi = if *incl { successor(&k) } else { k };
            }
        }
    }
    if lo >= hi {
        return Ok(Some(Vec::new()));
    }
    Ok(Some(vec![(lo, hi, false)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(lo: u8, hi: u8, point: bool) -> KeyRange {
        (vec![lo], vec![hi], point)
    }

    #[test]
    fn merged_ranges_are_sorted_disjoint_and_keep_lone_points() {
        let got = merge_ranges(vec![
            r(20, 30, false),
            r(5, 6, true),
            r(1, 10, false),
            r(25, 40, false),
            r(50, 51, true),
            r(50, 51, true),
            r(40, 45, false),
            r(60, 61, true),
            r(60, 70, false),
        ]);
        assert_eq!(
            got,
            vec![
                r(1, 10, false),
                r(20, 40, false),
                r(40, 45, false),
                r(50, 51, true),
                r(60, 70, false),
            ]
        );
    }
}
