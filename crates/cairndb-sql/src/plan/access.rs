//! Access paths: for each table of a compiled SELECT, the index whose
//! leading columns the WHERE and ON conjuncts bind best (equalities on a
//! prefix, then an IN list or a range on the next column; OR of such on
//! one column), the bounds that may read earlier tables' columns (an
//! index nested-loop join), and the order that serves ORDER BY without
//! a sort. A path only narrows what is read: the WHERE is checked again
//! on every row it returns.

use super::*;

/// The row slots filled when a source of a join is read: the spans
/// (`lo..hi`) of the sources joined before it, in join order (which
/// need not be FROM order, so not every slot below the source's own).
#[derive(Clone, Copy)]
pub(super) struct Avail<'a>(pub(super) &'a [(usize, usize)]);

impl Avail<'_> {
    pub(super) fn has(self, slot: usize) -> bool {
        self.0.iter().any(|(lo, hi)| slot >= *lo && slot < *hi)
    }
}

/// Whether `e` reads only slots of `avail` (earlier tables) and
/// nothing that changes per row of this table.
fn available(e: &Expr, avail: Avail) -> bool {
    let mut v = Vec::new();
    slots(e, &mut v);
    v.iter().all(|s| avail.has(*s)) && !matches!(e, Expr::Agg(_)) && !has_correlated_subquery(e)
}

/// What the conjuncts say about one column (slot), and which conjunct
/// (an index into the list given to [`bounds_for`]) gave each bound.
#[derive(Default)]
struct ColumnBounds {
    eq: Option<Expr>,
    alts: Option<Vec<KeyAlt>>,
    lo: Option<(Expr, bool)>,
    hi: Option<(Expr, bool)>,
    eq_src: Option<usize>,
    /// The conjunct of `alts`, and whether the alternatives say exactly
    /// what it says (an OR whose every disjunct is one restriction of
    /// the column; an IN list).
    alts_src: Option<(usize, bool)>,
    lo_src: Option<usize>,
    hi_src: Option<usize>,
    /// BETWEENs that gave only one end (the other was already bound).
    partial: Vec<usize>,
}

impl ColumnBounds {
    /// Whether conjunct `i` is said in full by `lo` and `hi`: a
    /// comparison gives one end, a BETWEEN both (unless `partial`).
    fn says_range(&self, i: usize) -> bool {
        (self.lo_src == Some(i) || self.hi_src == Some(i)) && !self.partial.contains(&i)
    }
}

/// The alternatives of an OR of restrictions on `slot` (`k BETWEEN 1 AND
/// 5 OR k = 9 OR k IN (20, 30)`), each disjunct giving a point or a range
/// (a disjunct with more conditions gives the range of its conditions on
/// `slot`, a superset the WHERE narrows); None when a disjunct leaves
/// `slot` unbounded. The flag: every disjunct is one restriction said in
/// full by its alternative.
fn or_alts(e: &Expr, slot: usize, avail: Avail) -> Option<(Vec<KeyAlt>, bool)> {
    fn disjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
        match e {
            Expr::Binary(BinOp::Or, l, r) => {
                disjuncts(l, out);
                disjuncts(r, out);
            }
            other => out.push(other),
        }
    }
    let mut ds = Vec::new();
    disjuncts(e, &mut ds);
    let mut alts = Vec::new();
    let mut exact = true;
    for d in ds {
        let mut conj = Vec::new();
        conjuncts(d, &mut conj);
        let b = bounds_for(slot, &conj, avail);
        let one = conj.len() == 1;
        if let Some(x) = b.eq {
            exact &= one && b.eq_src == Some(0);
            alts.push(KeyAlt::Point(x));
        } else if let Some(mut a) = b.alts {
            exact &= one && b.alts_src == Some((0, true));
            alts.append(&mut a);
        } else if b.lo.is_some() || b.hi.is_some() {
            exact &= one && b.lo_src.or(b.hi_src) == Some(0);
            alts.push(KeyAlt::Range(b.lo, b.hi));
        } else {
            return None;
        }
    }
    Some((alts, exact))
}

fn bounds_for(slot: usize, conj: &[&Expr], avail: Avail) -> ColumnBounds {
    let mut b = ColumnBounds::default();
    for (i, c) in conj.iter().enumerate() {
        match c {
            Expr::Binary(BinOp::Or, ..) if b.alts.is_none() => {
                if let Some((alts, exact)) = or_alts(c, slot, avail) {
                    b.alts = Some(alts);
                    b.alts_src = Some((i, exact));
                }
            }
            Expr::Binary(op, l, r) => {
                let (col_left, other, op) = match (l.as_ref(), r.as_ref()) {
                    (Expr::Column(s), x) if *s == slot && available(x, avail) => (true, x, *op),
                    (x, Expr::Column(s)) if *s == slot && available(x, avail) => (false, x, *op),
                    _ => continue,
                };
                let op = if col_left {
                    op
                } else {
                    match op {
                        BinOp::Lt => BinOp::Gt,
                        BinOp::Le => BinOp::Ge,
                        BinOp::Gt => BinOp::Lt,
                        BinOp::Ge => BinOp::Le,
                        o => o,
                    }
                };
                match op {
                    BinOp::Eq if b.eq.is_none() => {
                        b.eq = Some(other.clone());
                        b.eq_src = Some(i);
                    }
                    BinOp::Gt | BinOp::Ge if b.lo.is_none() => {
                        b.lo = Some((other.clone(), op == BinOp::Ge));
                        b.lo_src = Some(i);
                    }
                    BinOp::Lt | BinOp::Le if b.hi.is_none() => {
                        b.hi = Some((other.clone(), op == BinOp::Le));
                        b.hi_src = Some(i);
                    }
                    _ => {}
                }
            }
            Expr::Between(x, lo, hi, false)
                if matches!(x.as_ref(), Expr::Column(s) if *s == slot)
                    && available(lo, avail)
                    && available(hi, avail) =>
            {
                // Said in full only when both ends are taken from it.
                let both = b.lo.is_none() && b.hi.is_none();
                if b.lo.is_none() {
                    b.lo = Some(((**lo).clone(), true));
                    b.lo_src = Some(i);
                }
                if b.hi.is_none() {
                    b.hi = Some(((**hi).clone(), true));
                    b.hi_src = Some(i);
                }
                if !both {
                    b.partial.push(i);
                }
            }
            Expr::InList(x, list, false)
                if matches!(x.as_ref(), Expr::Column(s) if *s == slot)
                    && list.iter().all(|e| available(e, avail))
                    && b.alts.is_none() =>
            {
                b.alts = Some(list.iter().cloned().map(KeyAlt::Point).collect());
                b.alts_src = Some((i, true));
            }
            _ => {}
        }
    }
    b
}

/// The best index path for table `t` given the conjuncts `conj` that
/// hold on its rows and the slots `avail` filled before it is read, with
/// its score (a full primary-key point 1000, a unique point 900, else
/// ten per bound equality, five for alternatives, three for a range,
/// one more for the primary key); None when no index is bound. `exact_ok`:
/// the WHERE is the one filter on these rows, so the ranges may replace
/// the conjuncts they say in full (see [`IndexAccess::residual`]).
pub(super) fn best_path(
    t: &TableRef,
    conj: &[&Expr],
    avail: Avail,
    exact_ok: bool,
) -> Option<(u32, IndexAccess)> {
    let def = &t.def;
    let mut best: Option<(u32, IndexAccess)> = None;
    let indexes = std::iter::once((None, &def.primary)).chain(
        def.secondary
            .iter()
            .enumerate()
            .map(|(i, ix)| (Some(i), ix)),
    );
    for (which, ix) in indexes {
        if which.is_none() && def.hidden_pk {
            continue;
        }
        let mut ia = IndexAccess {
            index: which,
            eq: Vec::new(),
            alts: None,
            lo: None,
            hi: None,
            covering: false,
            reverse: false,
            residual: None,
        };
        // Conjuncts the ranges say in full, and whether every key
        // column they bind is an integer (whose key form compares as
        // SQL does once a bound converts unchanged).
        let mut consumed: Vec<usize> = Vec::new();
        let mut int_keys = true;
        for &col in &ix.columns {
            let Some(cdef) = def.columns.get(col) else {
                break;
            };
            let mut b = bounds_for(t.offset + col, conj, avail);
            int_keys &= matches!(cdef.ty, ColumnType::Int { .. });
            // ENUM and SET keys order by index, not by the strings a
            // range compares, and a prefix part holds only the start of
            // a value: only points of them are looked up.
            if matches!(cdef.ty, ColumnType::Enum { .. } | ColumnType::Set { .. })
                || ix.prefix_of(ia.eq.len()) > 0
            {
                b.lo = None;
                b.hi = None;
                if b.alts
                    .as_ref()
                    .is_some_and(|l| l.iter().any(|a| matches!(a, KeyAlt::Range(..))))
                {
                    b.alts = None;
                }
            }
            if let Some(e) = b.eq {
                consumed.extend(b.eq_src);
                ia.eq.push(e);
                continue;
            }
            // A range open below also holds the column's NULLs, which
            // only the WHERE removes.
            let open_below =
                |alts: &[KeyAlt]| alts.iter().any(|a| matches!(a, KeyAlt::Range(None, _)));
            match (&b.alts, b.alts_src) {
                (Some(l), Some((i, true))) if !(cdef.nullable && open_below(l)) => {
                    consumed.push(i);
                }
                (None, _) if b.hi.is_some() && !cdef.nullable || b.lo.is_some() => {
                    consumed.extend((0..conj.len()).filter(|i| b.says_range(*i)));
                }
                _ => {}
            }
            if let Some(l) = b.alts {
                ia.alts = Some(l);
            } else {
                ia.lo = b.lo;
                ia.hi = b.hi;
            }
            break;
        }
        if exact_ok && int_keys && !consumed.is_empty() {
            let rest: Vec<&Expr> = conj
                .iter()
                .enumerate()
                .filter(|(i, _)| !consumed.contains(i))
                .map(|(_, e)| *e)
                .collect();
            ia.residual = Some(and_all(&rest));
        }
        let full_point = which.is_none() && ia.eq.len() == ix.columns.len();
        let unique_point = ix.unique && ia.eq.len() == ix.columns.len();
        let score = if full_point {
            1000
        } else if unique_point {
            900
        } else {
            (ia.eq.len() as u32) * 10
                + u32::from(ia.alts.is_some()) * 5
                + u32::from(ia.lo.is_some() || ia.hi.is_some()) * 3
                + u32::from(which.is_none()) // prefer the primary on ties
        };
        if score == 0 || score == 1 {
            continue;
        }
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, ia));
        }
    }
    best
}

/// Picks each table's access path from the WHERE and ON conjuncts, for
/// the sources in their join order.
pub(super) fn choose_access_paths(plan: &mut SelectPlan) {
    let mut all: Vec<Expr> = Vec::new();
    if let Some(f) = &plan.filter {
        all.push(f.clone());
    }
    // Slots the query reads (for covering indexes): every ON counts,
    // a later source's ON reading this one's columns included.
    let mut used = Vec::new();
    for e in plan
        .proj
        .iter()
        .chain(plan.group.iter())
        .chain(plan.order.iter().map(|(e, _)| e))
    {
        slots(e, &mut used);
    }
    for a in &plan.aggs {
        if let Some(e) = &a.arg {
            slots(e, &mut used);
        }
    }
    if let Some(h) = &plan.having {
        slots(h, &mut used);
    }
    if let Some(f) = &plan.filter {
        slots(f, &mut used);
    }
    for src in &plan.sources {
        if let Source::Table { on: Some(o), .. } | Source::Derived { on: Some(o), .. } = src {
            slots(o, &mut used);
        }
    }
    let single = plan.sources.len() == 1;
    let order = plan.order.clone();
    let grouped = plan.grouped();
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(plan.sources.len());
    for src in plan.sources.iter_mut() {
        let span = src.span();
        let avail = Avail(&spans);
        let Source::Table {
            t,
            access,
            left,
            on,
        } = src
        else {
            spans.push(span);
            continue;
        };
        let mut conj_owned: Vec<Expr> = Vec::new();
        if let Some(o) = on {
            conj_owned.push(o.clone());
        }
        if !*left {
            conj_owned.extend(all.iter().cloned());
        }
        let mut conj = Vec::new();
        for e in &conj_owned {
            conjuncts(e, &mut conj);
        }
        let def = t.def.clone();
        // The WHERE may shrink to a residual only where it is the one
        // filter on this table's rows: a single table without ON.
        let exact_ok = single && on.is_none() && !*left;
        let mut best = best_path(t, &conj, avail, exact_ok);
        spans.push(span);
        // Covering: every slot of this table the query reads is in the
        // index or the primary key.
        if let Some((_, ia)) = best.as_mut() {
            if let Some(i) = ia.index {
                let ix = &def.secondary[i];
                let n = def.columns.len();
                ia.covering = !def.hidden_pk
                    && used
                        .iter()
                        .filter(|s| **s >= t.offset && **s < t.offset + n)
                        .all(|s| {
                            let c = *s - t.offset;
                            ix.whole(c) || def.primary.columns.contains(&c)
                        });
            }
        }
        // A covering scan of a secondary index when nothing binds it but
        // the query reads only its columns (COUNT(k) over k_1).
        if best.is_none() && !def.hidden_pk {
            let n = def.columns.len();
            for (i, ix) in def.secondary.iter().enumerate() {
                let cov = used
                    .iter()
                    .filter(|s| **s >= t.offset && **s < t.offset + n)
                    .all(|s| {
                        let c = *s - t.offset;
                        ix.whole(c) || def.primary.columns.contains(&c)
                    });
                let reads_non_pk = used.iter().any(|s| {
                    *s >= t.offset
                        && *s < t.offset + n
                        && !def.primary.columns.contains(&(*s - t.offset))
                });
                if cov && reads_non_pk {
                    best = Some((
                        1,
                        IndexAccess {
                            index: Some(i),
                            eq: Vec::new(),
                            alts: None,
                            lo: None,
                            hi: None,
                            covering: true,
                            reverse: false,
                            residual: None,
                        },
                    ));
                    break;
                }
            }
        }
        if let Some((_, ia)) = best {
            *access = Access::Index(Box::new(ia));
        }
    }
    // ORDER BY satisfied by a single table's access order.
    if single && !grouped && !plan.distinct && !order.is_empty() {
        if let Some(Source::Table { t, access, .. }) = plan.sources.first_mut() {
            let def = &t.def;
            let (cols, eq_len): (Vec<usize>, usize) = match access {
                Access::Full => (def.primary.columns.clone(), 0),
                // Alternatives are read as sorted, disjoint ranges: in
                // index order too.
                Access::Index(ia) => {
                    let ix = match ia.index {
                        None => &def.primary,
                        Some(i) => &def.secondary[i],
                    };
                    // Entries order by a prefix part's start only: the
                    // index gives no order from that part on.
                    let whole = (0..ix.columns.len())
                        .take_while(|k| ix.prefix_of(*k) == 0)
                        .count();
                    let mut cols: Vec<usize> = ix.columns.iter().copied().take(whole).collect();
                    if ia.index.is_some() && whole == ix.columns.len() {
                        cols.extend(def.pk_suffix(ix));
                    }
                    (cols, ia.eq.len().min(whole))
                }
            };
            let asc = order[0].1;
            let matches = !def.hidden_pk
                && order.iter().all(|(_, a)| *a == asc)
                && order.iter().enumerate().all(|(k, (e, _))| {
                    matches!(e, Expr::Column(s) if cols.get(eq_len + k) == Some(&(*s - t.offset)))
                        || matches!(e, Expr::Column(s) if cols[..eq_len.min(cols.len())].contains(&(*s - t.offset)))
                });
            if matches && !cols.is_empty() {
                plan.order_by_index = true;
                if !asc {
                    match access {
                        Access::Index(ia) => ia.reverse = true,
                        Access::Full => {
                            *access = Access::Index(Box::new(IndexAccess {
                                index: None,
                                eq: Vec::new(),
                                alts: None,
                                lo: None,
                                hi: None,
                                covering: false,
                                reverse: true,
                                residual: None,
                            }))
                        }
                    }
                }
            }
        }
    }
}
