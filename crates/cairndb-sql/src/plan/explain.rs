//! EXPLAIN: the plan a SELECT (or the read side of a write) compiles
//! to, one row per table with the access path chosen, in MySQL's
//! traditional format; subqueries follow their query with their own ids.
//! It compiles the statement and runs nothing.

use sqlparser::ast;

use crate::context::StmtCx;
use crate::error::{SqlError, SqlResult};
use crate::output::{ColumnInfo, Output};
use crate::plan::{Access, Plan, Source};
use crate::types::Value;

/// EXPLAIN: one row per table with the access path chosen.
pub(crate) fn run(s: &mut StmtCx, st: &ast::Statement, out: &mut dyn Output) -> SqlResult<()> {
    let plan = crate::plan::compile(s, st)?
        .ok_or_else(|| SqlError::unsupported("EXPLAIN of this statement"))?;
    let sel = match &plan {
        Plan::Select(p) => p,
        Plan::Update(u) => &u.scan,
        Plan::Delete(d) => &d.scan,
        Plan::Insert(_) => {
            out.columns(&[
                ColumnInfo::text("id"),
                ColumnInfo::text("table"),
                ColumnInfo::text("type"),
            ]);
            out.end(0);
            return Ok(());
        }
    };
    let cols: Vec<ColumnInfo> = [
        "id",
        "select_type",
        "table",
        "type",
        "possible_keys",
        "key",
        "key_len",
        "ref",
        "rows",
        "filtered",
        "Extra",
    ]
    .iter()
    .map(|n| ColumnInfo::text(n))
    .collect();
    out.columns(&cols);
    let mut subs = Vec::new();
    subqueries_of(sel, &mut subs);
    let top = if subs.is_empty() { "SIMPLE" } else { "PRIMARY" };
    let mut id = 1;
    explain_rows(s, sel, &mut id, top, false, out);
    out.end(0);
    Ok(())
}

/// The subqueries in `p`'s expressions (not inside them, nor in its
/// derived tables), in clause order.
fn subqueries_of(p: &crate::plan::SelectPlan, out: &mut Vec<crate::plan::SelectPlan>) {
    let mut exprs: Vec<&crate::expr::Expr> = p.proj.iter().collect();
    for src in &p.sources {
        if let Source::Table { on: Some(o), .. } | Source::Derived { on: Some(o), .. } = src {
            exprs.push(o);
        }
    }
    exprs.extend(&p.filter);
    exprs.extend(&p.group);
    exprs.extend(&p.having);
    exprs.extend(p.order.iter().map(|(e, _)| e));
    for e in exprs {
        crate::expr::each_subquery(e, &mut |sp| out.push(sp.clone()));
    }
}

/// EXPLAIN's rows for `sel` (numbered `id`, of `kind`), then for its
/// subqueries: DEPENDENT SUBQUERY for a correlated one, which runs per
/// row of the query it is in (its key lookups on outer columns are
/// `ref` / `eq_ref`).
fn explain_rows(
    s: &StmtCx,
    sel: &crate::plan::SelectPlan,
    id: &mut usize,
    kind: &str,
    dependent: bool,
    out: &mut dyn Output,
) {
    let n = id.to_string();
    for (level, src) in sel.sources.iter().enumerate() {
        let mut rows = None;
        let (table, ty, key, extra) = match src {
            Source::Table { t, access, .. } => match access {
                Access::Full => {
                    rows = s.db.stats.get(t.def.primary.id).map(|st| st.rows);
                    (t.alias.clone(), "ALL", String::new(), String::new())
                }
                Access::Index(ia) => {
                    let ixname = match ia.index {
                        None => "PRIMARY".to_string(),
                        Some(i) => t.def.secondary[i].name.clone(),
                    };
                    let ix = match ia.index {
                        None => &t.def.primary,
                        Some(i) => &t.def.secondary[i],
                    };
                    // A key found from an earlier table's row, or from
                    // an enclosing query's, is looked up once per row.
                    let joined = ia.eq.iter().any(|e| {
                        let mut v = Vec::new();
                        crate::plan::slots(e, &mut v);
                        !v.is_empty()
                    });
                    let ty = if ia.index.is_none() && ia.eq.len() == ix.columns.len() {
                        if dependent || joined {
                            "eq_ref"
                        } else {
                            "const"
                        }
                    } else if ix.unique && ia.eq.len() == ix.columns.len() {
                        "eq_ref"
                    } else if ia.lo.is_some() || ia.hi.is_some() || ia.alts.is_some() {
                        "range"
                    } else if !ia.eq.is_empty() {
                        "ref"
                    } else {
                        "index"
                    };
                    let extra = if ia.covering { "Using index" } else { "" };
                    rows = estimate(s, t, ix, ia, ty);
                    (t.alias.clone(), ty, ixname, extra.to_string())
                }
            },
            Source::Derived {
                plan,
                rows: fixed,
                set,
                cte,
                ..
            } => {
                // Rows given in the statement (VALUES, information_schema)
                // are known; a query's are not estimated.
                if plan.is_none() && set.is_none() && cte.is_none() {
                    rows = Some(fixed.len() as u64);
                }
                ("<derived>".into(), "ALL", String::new(), String::new())
            }
        };
        let mut extra = extra;
        if sel.filter.is_some() {
            extra = if extra.is_empty() {
                "Using where".into()
            } else {
                format!("{extra}; Using where")
            };
        }
        if matches!(sel.hash_joins.get(level), Some(Some(_))) {
            extra = if extra.is_empty() {
                "Using join buffer (hash join)".into()
            } else {
                format!("{extra}; Using join buffer (hash join)")
            };
        }
        if !sel.order.is_empty() && !sel.order_by_index {
            extra = if extra.is_empty() {
                "Using filesort".into()
            } else {
                format!("{extra}; Using filesort")
            };
        }
        let t = |x: &str| Value::Str(x.as_bytes().to_vec());
        out.row(&[
            t(&n),
            t(kind),
            t(&table),
            t(ty),
            if key.is_empty() { Value::Null } else { t(&key) },
            if key.is_empty() { Value::Null } else { t(&key) },
            Value::Null,
            Value::Null,
            rows.map_or(Value::Null, |r| t(&r.to_string())),
            t("100.00"),
            if extra.is_empty() {
                Value::Null
            } else {
                t(&extra)
            },
        ]);
    }
    let mut subs = Vec::new();
    subqueries_of(sel, &mut subs);
    for sp in &subs {
        *id += 1;
        let dep = !sp.outer_refs.is_empty();
        let kind = if dep {
            "DEPENDENT SUBQUERY"
        } else {
            "SUBQUERY"
        };
        explain_rows(s, sp, id, kind, dep, out);
    }
}

/// EXPLAIN's `rows` for an index access of type `ty` on table `t`
/// through `ix`: 1 for a unique key, else from `ANALYZE TABLE`'s counts
/// (the table's rows over the distinct values of the key parts given,
/// times the values of an IN list; a range, the whole table: there is
/// no per-range estimate); None (NULL) for a table never analyzed.
fn estimate(
    s: &StmtCx,
    t: &crate::plan::TableRef,
    ix: &crate::row::IndexDef,
    ia: &crate::plan::IndexAccess,
    ty: &str,
) -> Option<u64> {
    if matches!(ty, "const" | "eq_ref") {
        return Some(1);
    }
    let st = s.db.stats.get(t.def.primary.id)?;
    let points = ia.alts.as_ref().and_then(|alts| {
        alts.iter()
            .all(|a| matches!(a, crate::plan::KeyAlt::Point(_)))
            .then_some(alts.len() as u64)
    });
    let per_key = |parts: usize| -> u64 {
        match parts.checked_sub(1).and_then(|k| st.cardinality(ix.id, k)) {
            Some(d) if d > 0 => st.rows.div_ceil(d),
            _ => st.rows,
        }
    };
    let rows = match (ty, points) {
        (_, Some(n)) => per_key(ia.eq.len() + 1).saturating_mul(n),
        ("ref", None) => per_key(ia.eq.len()),
        _ => st.rows,
    };
    Some(rows.clamp(1, st.rows.max(1)))
}
