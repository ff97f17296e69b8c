//! Window functions: compiling `f(..) OVER (..)` / `OVER w` against the
//! query's `WINDOW` clause (MySQL's inheritance rules and errors), and
//! computing their values over the rows of a query after WHERE, GROUP BY
//! and HAVING, before DISTINCT, ORDER BY and LIMIT.
//!
//! A window function of a select list or ORDER BY compiles to
//! `Expr::Agg(WIN_BASE + k)` while the query is compiled (its aggregates
//! are not all known yet); the planner then renumbers it to
//! `Expr::Agg(n + k)`, `n` being the query's aggregate count, so
//! evaluation reads the group's aggregate values followed by the window
//! values.
//!
//! Rows are partitioned (PARTITION BY), sorted (the window's ORDER BY,
//! stable, NULL first ascending) and each function computed partition by
//! partition. Frames are ROWS or RANGE; a frame's start and end only move
//! forward from row to row, so SUM / COUNT / AVG add the rows entering the
//! frame and take out the rows leaving it, and MIN / MAX keep a monotonic
//! queue: linear in the partition size whatever the frame.
//!
//! No locks, no I/O.

use std::cmp::Ordering;
use std::collections::VecDeque;

use sqlparser::ast;

use crate::error::{SqlError, SqlResult};
use crate::expr::{compare, eval, AggCall, AggFunc, Compiler, Env, Expr};
use crate::output::OutType;
use crate::types::{Collation, Value};

/// Where window function `k` reads while its query is compiled:
/// `Expr::Agg(WIN_BASE + k)`.
pub const WIN_BASE: usize = usize::MAX / 2 + 1;

/// A window function's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WinFunc {
    /// ROW_NUMBER().
    RowNumber,
    /// RANK().
    Rank,
    /// DENSE_RANK().
    DenseRank,
    /// PERCENT_RANK(): (rank - 1) / (rows - 1), DOUBLE.
    PercentRank,
    /// CUME_DIST(): rows up to the current row's last peer / rows, DOUBLE.
    CumeDist,
    /// NTILE(n): the bucket, 1..n.
    Ntile,
    /// LAG(x [, n [, default]]).
    Lag,
    /// LEAD(x [, n [, default]]).
    Lead,
    /// FIRST_VALUE(x) of the frame.
    FirstValue,
    /// LAST_VALUE(x) of the frame.
    LastValue,
    /// NTH_VALUE(x, n) of the frame, counted from its first row.
    NthValue,
    /// An aggregate over the window's frame.
    Agg,
}

/// A frame offset: `n PRECEDING` / `n FOLLOWING`.
#[derive(Clone, Debug)]
pub struct Offset {
    /// The offset (for an INTERVAL, its count), constant for an execution.
    pub n: Expr,
    /// RANGE over a temporal key: the key moved by the INTERVAL (towards
    /// the bound), per row.
    pub target: Option<Expr>,
}

/// One end of a frame.
#[derive(Clone, Debug)]
pub enum Bound {
    /// UNBOUNDED PRECEDING.
    UnboundedPreceding,
    /// n PRECEDING.
    Preceding(Offset),
    /// CURRENT ROW.
    CurrentRow,
    /// n FOLLOWING.
    Following(Offset),
    /// UNBOUNDED FOLLOWING.
    UnboundedFollowing,
}

/// A window frame. Without a frame clause: RANGE BETWEEN UNBOUNDED
/// PRECEDING AND CURRENT ROW (every row is a peer without ORDER BY, so
/// that is the whole partition).
#[derive(Clone, Debug)]
pub struct Frame {
    /// ROWS (true) or RANGE.
    pub rows: bool,
    /// Its start.
    pub start: Bound,
    /// Its end.
    pub end: Bound,
}

/// A window function call: its value per row is computed after WHERE,
/// GROUP BY and HAVING, before DISTINCT / ORDER BY / LIMIT.
#[derive(Clone, Debug)]
pub struct WinCall {
    /// Which.
    pub func: WinFunc,
    /// The aggregate (`WinFunc::Agg`); for the other functions the call
    /// giving the result's type (MAX(x) for those returning their
    /// argument, COUNT(*) for BIGINTs, STD() for DOUBLEs), `arg` being
    /// the function's argument.
    pub agg: AggCall,
    /// LAG / LEAD: the offset and the default; NTILE / NTH_VALUE: n.
    pub extra: Vec<Expr>,
    /// PARTITION BY.
    pub partition: Vec<Expr>,
    /// The window's ORDER BY: expression and ascending.
    pub order: Vec<(Expr, bool)>,
    /// The frame (the default one when the window has none).
    pub frame: Frame,
    /// The function's name, for errors.
    pub fname: String,
    /// The window's name, for errors (`<unnamed window>`).
    pub wname: String,
    /// Whether the window has a frame clause.
    pub explicit_frame: bool,
}

impl WinCall {
    /// MySQL's note 3599 for a function that ignores its window's frame
    /// clause (the ranking functions, LAG / LEAD).
    pub fn ignored_frame_note(&self) -> Option<String> {
        let ignores = !matches!(
            self.func,
            WinFunc::Agg | WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue
        );
        (ignores && self.explicit_frame).then(|| {
            format!(
                "Window function '{}' ignores the frame clause of window '{}' and aggregates over the whole partition",
                self.fname, self.wname
            )
        })
    }
}

fn err(code: u16, msg: String) -> SqlError {
    SqlError::new(code, "HY000", msg)
}

/// 1210: an argument of a window function out of its domain.
fn wrong_arguments(name: &str) -> SqlError {
    err(1210, format!("Incorrect arguments to {name}"))
}

/// 3593: a window function where none may be.
pub fn misplaced(name: &str) -> SqlError {
    err(
        3593,
        format!("You cannot use the window function '{name}' in this context.'"),
    )
}

/// Whether some subexpression of `e` (itself included) satisfies `pred`.
fn any(e: &Expr, pred: &dyn Fn(&Expr) -> bool) -> bool {
    fn walk(e: &mut Expr, pred: &dyn Fn(&Expr) -> bool) -> bool {
        if pred(e) {
            return true;
        }
        let mut found = false;
        let _ = crate::expr::children_mut(e, &mut |c| {
            found = found || walk(c, pred);
            Ok(())
        });
        found
    }
    let mut e2 = e.clone();
    walk(&mut e2, pred)
}

/// Whether `e` contains a window function (before renumbering).
pub fn has_window(e: &Expr) -> bool {
    any(e, &|x| matches!(x, Expr::Agg(k) if *k >= WIN_BASE))
}

/// Renumbers the window references of `e` to follow `naggs` aggregates.
pub fn renumber(e: &mut Expr, naggs: usize) -> SqlResult<()> {
    if let Expr::Agg(k) = e {
        if *k >= WIN_BASE {
            *k = *k - WIN_BASE + naggs;
        }
        return Ok(());
    }
    crate::expr::children_mut(e, &mut |c| renumber(c, naggs))
}

/// A window specification with the windows it refines merged in.
struct Spec {
    partition: Vec<ast::Expr>,
    order: Vec<ast::OrderByExpr>,
    frame: Option<ast::WindowFrame>,
    name: String,
}

const UNNAMED: &str = "<unnamed window>";

/// The definition of the named window `name` (case-insensitive).
fn lookup(named: &[ast::NamedWindowDefinition], name: &str) -> SqlResult<ast::WindowSpec> {
    for d in named {
        if d.0.value.eq_ignore_ascii_case(name) {
            return Ok(match &d.1 {
                ast::NamedWindowExpr::WindowSpec(s) => s.clone(),
                ast::NamedWindowExpr::NamedWindow(id) => ast::WindowSpec {
                    window_name: Some(id.clone()),
                    partition_by: Vec::new(),
                    order_by: Vec::new(),
                    window_frame: None,
                },
            });
        }
    }
    Err(err(3579, format!("Window name '{name}' is not defined.")))
}

/// `spec` (named `name`) merged with the windows it refines, checked as
/// MySQL checks a window: only the root of a chain partitions (3581), a
/// window with a frame is not refined (3582), one ORDER BY along the
/// chain (3583), no cycle (3580), names defined (3579).
fn resolve(
    named: &[ast::NamedWindowDefinition],
    spec: &ast::WindowSpec,
    name: &str,
) -> SqlResult<Spec> {
    let mut node = spec.clone();
    let mut node_name = name.to_string();
    let mut order: Option<(Vec<ast::OrderByExpr>, String)> = None;
    let mut steps = 0;
    loop {
        if !node.order_by.is_empty() {
            if let Some((_, seen)) = &order {
                return Err(err(
                    3583,
                    format!(
                        "Window '{seen}' cannot inherit '{node_name}' since both contain an ORDER BY clause."
                    ),
                ));
            }
            order = Some((node.order_by.clone(), node_name.clone()));
        }
        match node.window_name.clone() {
            None => {
                return Ok(Spec {
                    partition: node.partition_by,
                    order: order.map(|o| o.0).unwrap_or_default(),
                    frame: spec.window_frame.clone(),
                    name: name.to_string(),
                })
            }
            Some(parent) => {
                if !node.partition_by.is_empty() {
                    return Err(err(
                        3581,
                        "A window which depends on another cannot define partitioning.".into(),
                    ));
                }
                let p = lookup(named, &parent.value)?;
                steps += 1;
                if steps > named.len() {
                    return Err(err(
                        3580,
                        "There is a circularity in the window dependency graph.".into(),
                    ));
                }
                if p.window_frame.is_some() {
                    return Err(err(
                        3582,
                        format!(
                            "Window '{}' has a frame definition, so cannot be referenced by another window.",
                            parent.value
                        ),
                    ));
                }
                node = p;
                node_name = parent.value.clone();
            }
        }
    }
}

/// Checks a query's WINDOW clause as MySQL does, every window whether a
/// function uses it or not: names unique (3591), references resolved
/// and acyclic, the inheritance rules of [`resolve`].
pub fn check_window_clause(named: &[ast::NamedWindowDefinition]) -> SqlResult<()> {
    for (i, d) in named.iter().enumerate() {
        if named
            .iter()
            .take(i)
            .any(|o| o.0.value.eq_ignore_ascii_case(&d.0.value))
        {
            return Err(err(
                3591,
                format!("Window '{}' is defined twice.", d.0.value),
            ));
        }
    }
    for d in named {
        let spec = lookup(named, &d.0.value)?;
        resolve(named, &spec, &d.0.value)?;
        if let Some(fr) = &spec.window_frame {
            frame_shape(fr, &d.0.value)?;
        }
    }
    Ok(())
}

/// Whether `e` is constant for an execution (literals, parameters,
/// variables and operators over them).
fn is_constant(e: &Expr) -> bool {
    !any(e, &|x| {
        matches!(
            x,
            Expr::Column(_) | Expr::Outer(..) | Expr::Agg(_) | Expr::Subquery(..)
        )
    })
}

fn is_numeric(t: OutType) -> bool {
    matches!(
        t,
        OutType::Tiny
            | OutType::Short
            | OutType::Int24
            | OutType::Long
            | OutType::LongLong
            | OutType::NewDecimal
            | OutType::Float
            | OutType::Double
    )
}

fn is_temporal(t: OutType) -> bool {
    matches!(t, OutType::Date | OutType::DateTime | OutType::Timestamp)
}

impl Compiler<'_> {
    /// A window function call `f OVER (...)` / `f OVER w`.
    pub(crate) fn window(
        &mut self,
        f: &ast::Function,
        over: &ast::WindowType,
        name: &str,
    ) -> SqlResult<Expr> {
        if name == "nth_value_from_last" {
            // `NTH_VALUE(..) FROM LAST`, renamed by the preparser.
            return Err(SqlError::unsupported("NTH_VALUE .. FROM LAST"));
        }
        if !self.allow_win {
            return Err(misplaced(name));
        }
        let named = self.named_windows;
        let spec = match over {
            ast::WindowType::WindowSpec(w) => resolve(named, w, UNNAMED)?,
            ast::WindowType::NamedWindow(id) => {
                let w = lookup(named, &id.value)?;
                resolve(named, &w, &id.value)?
            }
        };
        if f.filter.is_some() || !f.within_group.is_empty() {
            return Err(SqlError::unsupported(f));
        }
        let value_fn = matches!(
            name,
            "lag" | "lead" | "first_value" | "last_value" | "nth_value"
        );
        match f.null_treatment {
            Some(ast::NullTreatment::IgnoreNulls) if value_fn => {
                return Err(SqlError::unsupported("IGNORE NULLS"))
            }
            Some(_) if !value_fn => {
                return Err(SqlError::syntax(format!(
                    "unexpected null treatment in {f}"
                )))
            }
            _ => {}
        }
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::List(l) => {
                if !l.clauses.is_empty() {
                    return Err(SqlError::unsupported(f));
                }
                let distinct = matches!(
                    l.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                );
                let mut star = false;
                let mut args = Vec::new();
                for a in &l.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        other => return Err(SqlError::unsupported(other)),
                    }
                }
                (args, distinct, star)
            }
            ast::FunctionArguments::Subquery(_) => return Err(SqlError::unsupported(f)),
        };
        if distinct {
            return Err(SqlError::unsupported(format!("{name}(DISTINCT ..) OVER")));
        }
        // (kind, type-giving aggregate, value arguments, constant arguments)
        let (func, tyfn, nvals, nconst): (
            WinFunc,
            AggFunc,
            usize,
            std::ops::RangeInclusive<usize>,
        ) = match name {
            "row_number" => (WinFunc::RowNumber, AggFunc::CountStar, 0, 0..=0),
            "rank" => (WinFunc::Rank, AggFunc::CountStar, 0, 0..=0),
            "dense_rank" => (WinFunc::DenseRank, AggFunc::CountStar, 0, 0..=0),
            "percent_rank" => (WinFunc::PercentRank, AggFunc::StdPop, 0, 0..=0),
            "cume_dist" => (WinFunc::CumeDist, AggFunc::StdPop, 0, 0..=0),
            "ntile" => (WinFunc::Ntile, AggFunc::CountStar, 0, 1..=1),
            "lag" => (WinFunc::Lag, AggFunc::Max, 1, 0..=2),
            "lead" => (WinFunc::Lead, AggFunc::Max, 1, 0..=2),
            "first_value" => (WinFunc::FirstValue, AggFunc::Max, 1, 0..=0),
            "last_value" => (WinFunc::LastValue, AggFunc::Max, 1, 0..=0),
            "nth_value" => (WinFunc::NthValue, AggFunc::Max, 1, 1..=1),
            "count" if star => (WinFunc::Agg, AggFunc::CountStar, 0, 0..=0),
            "count" => (WinFunc::Agg, AggFunc::Count, 1, 0..=0),
            "sum" => (WinFunc::Agg, AggFunc::Sum, 1, 0..=0),
            "avg" => (WinFunc::Agg, AggFunc::Avg, 1, 0..=0),
            "min" => (WinFunc::Agg, AggFunc::Min, 1, 0..=0),
            "max" => (WinFunc::Agg, AggFunc::Max, 1, 0..=0),
            "bit_and" => (WinFunc::Agg, AggFunc::BitAnd, 1, 0..=0),
            "bit_or" => (WinFunc::Agg, AggFunc::BitOr, 1, 0..=0),
            "bit_xor" => (WinFunc::Agg, AggFunc::BitXor, 1, 0..=0),
            "std" | "stddev" | "stddev_pop" => (WinFunc::Agg, AggFunc::StdPop, 1, 0..=0),
            "stddev_samp" => (WinFunc::Agg, AggFunc::StdSamp, 1, 0..=0),
            "variance" | "var_pop" => (WinFunc::Agg, AggFunc::VarPop, 1, 0..=0),
            "var_samp" => (WinFunc::Agg, AggFunc::VarSamp, 1, 0..=0),
            _ => return Err(SqlError::unsupported(format!("window function {name}"))),
        };
        if star && (func != WinFunc::Agg || !args.is_empty()) {
            return Err(crate::expr::wrong_args(name));
        }
        let nargs = args.len();
        if nargs < nvals + nconst.start() || nargs > nvals + nconst.end() {
            return Err(crate::expr::wrong_args(name));
        }
        // Arguments and the window's expressions: aggregates where the
        // query may have them, no nested windows, no subqueries (1235).
        let subs_was = self.subqueries;
        self.allow_win = false;
        let r = self.window_parts(func, tyfn, &args, nvals, &spec, name);
        self.allow_win = true;
        let w = r?;
        if self.subqueries != subs_was {
            return Err(SqlError::unsupported("subqueries in a window function"));
        }
        self.wins.push(w);
        Ok(Expr::Agg(WIN_BASE + self.wins.len() - 1))
    }

    fn window_parts(
        &mut self,
        func: WinFunc,
        tyfn: AggFunc,
        args: &[&ast::Expr],
        nvals: usize,
        spec: &Spec,
        name: &str,
    ) -> SqlResult<WinCall> {
        let arg = match args.first() {
            Some(a) if nvals == 1 => Some(self.compile(a)?),
            _ => None,
        };
        let mut extra = Vec::new();
        for (i, a) in args.iter().enumerate().skip(nvals) {
            let x = self.compile(a)?;
            // LAG / LEAD's default may read the row; the counts are
            // constants.
            let is_default = matches!(func, WinFunc::Lag | WinFunc::Lead) && i == 2;
            if !is_default && !is_constant(&x) {
                return Err(wrong_arguments(name));
            }
            extra.push(x);
        }
        let mut partition = Vec::new();
        for e in &spec.partition {
            if is_position(e) {
                return Err(positional(&spec.name));
            }
            partition.push(self.compile(e)?);
        }
        let mut order = Vec::new();
        for o in &spec.order {
            if is_position(&o.expr) {
                return Err(positional(&spec.name));
            }
            order.push((self.compile(&o.expr)?, o.options.asc.unwrap_or(true)));
        }
        let frame = match &spec.frame {
            None => Frame {
                rows: false,
                start: Bound::UnboundedPreceding,
                end: Bound::CurrentRow,
            },
            Some(fr) => self.frame(fr, &order, &spec.name)?,
        };
        Ok(WinCall {
            func,
            agg: AggCall {
                func: tyfn,
                arg,
                distinct: false,
                concat: None,
            },
            extra,
            partition,
            order,
            frame,
            fname: name.to_string(),
            wname: spec.name.clone(),
            explicit_frame: spec.frame.is_some(),
        })
    }

    /// A frame clause, checked as MySQL checks it.
    fn frame(
        &mut self,
        fr: &ast::WindowFrame,
        order: &[(Expr, bool)],
        wname: &str,
    ) -> SqlResult<Frame> {
        let (rows, end) = frame_shape(fr, wname)?;
        use ast::WindowFrameBound as B;
        let bound = |b: &B, c: &mut Self| -> SqlResult<Bound> {
            let (x, preceding) = match b {
                B::CurrentRow => return Ok(Bound::CurrentRow),
                B::Preceding(None) => return Ok(Bound::UnboundedPreceding),
                B::Following(None) => return Ok(Bound::UnboundedFollowing),
                B::Preceding(Some(x)) => (x, true),
                B::Following(Some(x)) => (x, false),
            };
            let (value, interval) = match &**x {
                ast::Expr::Interval(iv) => (&*iv.value, Some(iv)),
                other => (other, None),
            };
            if rows && interval.is_some() {
                return Err(err(
                    3596,
                    format!("Window '{wname}': INTERVAL can only be used with RANGE frames."),
                ));
            }
            let n = c.compile(value)?;
            if !is_constant(&n) {
                return Err(err(
                    3590,
                    format!("Window '{wname}' has a non-constant frame bound."),
                ));
            }
            let mut target = None;
            if !rows {
                let key = match order {
                    [(k, _)] => Some(k),
                    _ => None,
                };
                // A derived table's column has no declared type: its
                // values decide (an INTERVAL for dates, a number else).
                let ty = key.map(|k| match k {
                    Expr::Column(i) if c.scope.cols.get(*i).is_some_and(|sc| sc.ty.is_none()) => {
                        if interval.is_some() {
                            OutType::Date
                        } else {
                            OutType::Double
                        }
                    }
                    k => crate::plan::out_type(k, c.scope, &c.aggs),
                });
                let order_type = || {
                    err(
                        3587,
                        format!(
                            "Window '{wname}' with RANGE N PRECEDING/FOLLOWING frame requires exactly one ORDER BY expression, of numeric or temporal type"
                        ),
                    )
                };
                match (key, ty) {
                    (Some(k), Some(t)) if is_temporal(t) => {
                        let Some(iv) = interval else {
                            return Err(err(
                                3588,
                                format!("Window '{wname}' with RANGE frame has ORDER BY expression of datetime type. Only INTERVAL bound value allowed."),
                            ));
                        };
                        let unit = crate::expr::interval_unit(iv)?;
                        let asc = order.first().is_some_and(|o| o.1);
                        // Towards the bound: back for PRECEDING when
                        // ascending.
                        let neg = preceding == asc;
                        target = Some(Expr::Func(
                            crate::expr::Func::Dt(crate::datefuncs::DtFn::AddInterval(unit, neg)),
                            vec![k.clone(), n.clone()],
                        ));
                    }
                    (Some(_), Some(t)) if is_numeric(t) => {
                        if interval.is_some() {
                            return Err(err(
                                3589,
                                format!("Window '{wname}' with RANGE frame has ORDER BY expression of numeric type, INTERVAL bound value not allowed."),
                            ));
                        }
                    }
                    _ => return Err(order_type()),
                }
            }
            let off = Offset { n, target };
            Ok(if preceding {
                Bound::Preceding(off)
            } else {
                Bound::Following(off)
            })
        };
        let start = bound(&fr.start_bound, self)?;
        let end = bound(&end, self)?;
        Ok(Frame { rows, start, end })
    }
}

/// An integer literal, which older MySQL releases read as a position.
fn is_position(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)))
}

/// A frame clause's unit (ROWS: true) and end, with the checks that
/// need no types: 1235 for GROUPS, 3584 / 3585 for an unbounded start
/// following or end preceding, 3586 for an end before the start, 3596
/// for an INTERVAL in a ROWS frame.
fn frame_shape(fr: &ast::WindowFrame, wname: &str) -> SqlResult<(bool, ast::WindowFrameBound)> {
    let rows = match fr.units {
        ast::WindowFrameUnits::Rows => true,
        ast::WindowFrameUnits::Range => false,
        ast::WindowFrameUnits::Groups => return Err(SqlError::unsupported("GROUPS")),
    };
    let end = fr
        .end_bound
        .clone()
        .unwrap_or(ast::WindowFrameBound::CurrentRow);
    use ast::WindowFrameBound as B;
    if matches!(fr.start_bound, B::Following(None)) {
        return Err(err(
            3584,
            format!("Window '{wname}': frame start cannot be UNBOUNDED FOLLOWING."),
        ));
    }
    if matches!(end, B::Preceding(None)) {
        return Err(err(
            3585,
            format!("Window '{wname}': frame end cannot be UNBOUNDED PRECEDING."),
        ));
    }
    match (&fr.start_bound, &end) {
        (B::CurrentRow, B::Preceding(Some(_)))
        | (B::Following(Some(_)), B::CurrentRow)
        | (B::Following(Some(_)), B::Preceding(Some(_))) => {
            return Err(err(
                3586,
                format!(
                    "Window '{wname}': frame start or end is negative, NULL or of non-integral type"
                ),
            ))
        }
        _ => {}
    }
    for b in [&fr.start_bound, &end] {
        if let B::Preceding(Some(x)) | B::Following(Some(x)) = b {
            if rows && matches!(**x, ast::Expr::Interval(_)) {
                return Err(err(
                    3596,
                    format!("Window '{wname}': INTERVAL can only be used with RANGE frames."),
                ));
            }
        }
    }
    Ok((rows, end))
}

fn positional(wname: &str) -> SqlError {
    err(
        3592,
        format!("Window '{wname}': ORDER BY or PARTITION BY uses legacy position indication which is not supported, use expression."),
    )
}

// ---------------------------------------------------------------------
// Execution.

/// A checked constant argument: a non-negative integer (`min` at least),
/// else `bad` (NULL, negative, fractional).
fn count_arg(e: &Expr, env: &dyn Env, min: i64, bad: &dyn Fn() -> SqlError) -> SqlResult<u64> {
    let v = eval(e, &[], &[], &[], env)?;
    let n = match v {
        Value::Int(i) => i,
        Value::UInt(u) => i64::try_from(u).unwrap_or(i64::MAX),
        Value::Decimal(m, s) => {
            let p = 10i128.checked_pow(u32::from(s)).unwrap_or(i128::MAX);
            if m % p != 0 {
                return Err(bad());
            }
            i64::try_from(m / p).unwrap_or(i64::MAX)
        }
        Value::Double(d) if d.fract() == 0.0 && d.is_finite() => d as i64,
        _ => return Err(bad()),
    };
    if n < min {
        return Err(bad());
    }
    Ok(u64::try_from(n).unwrap_or(0))
}

/// A RANGE offset: a non-negative number (or INTERVAL count).
fn range_arg(e: &Expr, env: &dyn Env, bad: &dyn Fn() -> SqlError) -> SqlResult<Value> {
    let v = eval(e, &[], &[], &[], env)?;
    if v.is_null() {
        return Err(bad());
    }
    match crate::expr::num_f64(&v) {
        Some(x) if x >= 0.0 => Ok(v),
        _ => Err(bad()),
    }
}

/// A frame bound made ready for a partition walk.
enum Edge {
    Unbounded,
    /// ROWS: rows before (negative) or after the current one.
    Rows(i64),
    Current,
    /// RANGE over a number: the offset, signed towards the bound in key
    /// order (added to the key).
    Num(Value),
    /// RANGE over a temporal key: the moved key, per row.
    Target(Expr),
}

fn edge(
    b: &Bound,
    rows: bool,
    asc: bool,
    env: &dyn Env,
    bad: &dyn Fn() -> SqlError,
) -> SqlResult<Edge> {
    let (off, preceding) = match b {
        Bound::UnboundedPreceding | Bound::UnboundedFollowing => return Ok(Edge::Unbounded),
        // ROWS: the row itself; RANGE: its peers.
        Bound::CurrentRow if rows => return Ok(Edge::Rows(0)),
        Bound::CurrentRow => return Ok(Edge::Current),
        Bound::Preceding(o) => (o, true),
        Bound::Following(o) => (o, false),
    };
    if rows {
        let n = i64::try_from(count_arg(&off.n, env, 0, bad)?).unwrap_or(i64::MAX);
        return Ok(Edge::Rows(if preceding { -n } else { n }));
    }
    let v = range_arg(&off.n, env, bad)?;
    if let Some(t) = &off.target {
        return Ok(Edge::Target(t.clone()));
    }
    // Ascending: PRECEDING lowers the key; descending raises it.
    Ok(Edge::Num(if preceding == asc { negate(&v) } else { v }))
}

fn negate(v: &Value) -> Value {
    match v {
        Value::Int(i) => Value::Decimal(-i128::from(*i), 0),
        Value::UInt(u) => Value::Decimal(-i128::from(*u), 0),
        Value::Decimal(m, s) => Value::Decimal(-*m, *s),
        Value::Double(d) => Value::Double(-*d),
        other => Value::Double(-crate::expr::num_f64(other).unwrap_or(0.0)),
    }
}

/// The sorted rows of one partition: (ORDER BY values, row index).
type Part<'a> = &'a [(Vec<u8>, Vec<Value>, usize)];

/// Frame positions `[lo, hi)` of row `j` of a partition.
#[allow(clippy::too_many_arguments)]
fn frame_at(
    start: &Edge,
    end: &Edge,
    j: usize,
    part: Part,
    peers: &[(usize, usize)],
    asc: bool,
    coll: Collation,
    row: (&[Value], &[Value]),
    types: &[Option<crate::types::ColumnType>],
    env: &dyn Env,
) -> SqlResult<(usize, usize)> {
    let m = part.len();
    let key = part.get(j).and_then(|p| p.1.first());
    let (plo, phi) = peers.get(j).copied().unwrap_or((j, j + 1));
    let pos = |e: &Edge, is_start: bool| -> SqlResult<usize> {
        Ok(match e {
            Edge::Unbounded => {
                if is_start {
                    0
                } else {
                    m
                }
            }
            Edge::Current => {
                if is_start {
                    plo
                } else {
                    phi
                }
            }
            Edge::Rows(d) => {
                let base = i64::try_from(j).unwrap_or(i64::MAX);
                let p = base.saturating_add(*d).saturating_add(i64::from(!is_start));
                usize::try_from(p.max(0)).unwrap_or(0).min(m)
            }
            Edge::Num(_) | Edge::Target(_) => {
                let Some(k) = key.filter(|k| !k.is_null()) else {
                    // NULL keys: the NULL rows are the frame's range.
                    return Ok(if is_start { plo } else { phi });
                };
                let target = match e {
                    Edge::Num(d) => crate::exec::add(k, d)?,
                    Edge::Target(t) => eval(t, row.0, row.1, types, env)?,
                    _ => Value::Null,
                };
                if target.is_null() {
                    return Ok(if is_start { plo } else { phi });
                }
                let cmp = |v: &Value| compare(v, &target, coll).unwrap_or(Ordering::Equal);
                part.partition_point(|p| {
                    let v = p.1.first().unwrap_or(&Value::Null);
                    match (asc, is_start) {
                        (true, true) => v.is_null() || cmp(v) == Ordering::Less,
                        (true, false) => v.is_null() || cmp(v) != Ordering::Greater,
                        (false, true) => !v.is_null() && cmp(v) == Ordering::Greater,
                        (false, false) => !v.is_null() && cmp(v) != Ordering::Less,
                    }
                })
            }
        })
    };
    let lo = pos(start, true)?;
    let hi = pos(end, false)?;
    Ok((lo, hi.max(lo)))
}

/// SUM / COUNT / AVG over a moving frame: rows enter at the end and
/// leave at the start.
struct Slide {
    sum: Option<Value>,
    nonnull: u64,
    rows: u64,
}

impl Slide {
    fn put(&mut self, v: &Value, enter: bool) -> SqlResult<()> {
        if enter {
            self.rows += 1;
        } else {
            self.rows = self.rows.saturating_sub(1);
        }
        if v.is_null() {
            return Ok(());
        }
        let x = crate::exec::numeric(v.clone());
        if enter {
            self.nonnull += 1;
            self.sum = Some(match self.sum.take() {
                None => crate::exec::add(&Value::Int(0), &x)?,
                Some(cur) => crate::exec::add(&cur, &x)?,
            });
        } else {
            self.nonnull = self.nonnull.saturating_sub(1);
            self.sum = if self.nonnull == 0 {
                None
            } else {
                match self.sum.take() {
                    None => None,
                    Some(cur) => Some(crate::exec::add(&cur, &negate(&x))?),
                }
            };
        }
        Ok(())
    }

    fn value(&self, a: &AggCall) -> SqlResult<Value> {
        Ok(match a.func {
            AggFunc::CountStar => Value::Int(i64::try_from(self.rows).unwrap_or(i64::MAX)),
            AggFunc::Count => Value::Int(i64::try_from(self.nonnull).unwrap_or(i64::MAX)),
            AggFunc::Sum => self.sum.clone().unwrap_or(Value::Null),
            _ => match &self.sum {
                Some(s) if self.nonnull > 0 => crate::exec::avg_of(s, self.nonnull)?,
                _ => Value::Null,
            },
        })
    }
}

/// The window functions' values for each input row: `rows[i]` is a row
/// with its group's aggregate values (empty without grouping); `out[i][k]`
/// is window k's value at row i.
pub fn window_values(
    windows: &[WinCall],
    rows: &[(Vec<Value>, Vec<Value>)],
    types: &[Option<crate::types::ColumnType>],
    s: &dyn Env,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut out: Vec<Vec<Value>> = vec![Vec::with_capacity(windows.len()); rows.len()];
    for w in windows {
        let vals = one_window(w, rows, types, s)?;
        for (o, v) in out.iter_mut().zip(vals) {
            o.push(v);
        }
    }
    Ok(out)
}

#[allow(clippy::needless_range_loop)]
fn one_window(
    w: &WinCall,
    rows: &[(Vec<Value>, Vec<Value>)],
    types: &[Option<crate::types::ColumnType>],
    s: &dyn Env,
) -> SqlResult<Vec<Value>> {
    // Constant arguments first: their errors come even without rows.
    let bad_arg = || wrong_arguments(&w.fname);
    let n_arg = match w.func {
        WinFunc::Ntile | WinFunc::NthValue => match w.extra.first() {
            Some(e) => count_arg(e, s, 1, &bad_arg)?,
            None => 1,
        },
        WinFunc::Lag | WinFunc::Lead => match w.extra.first() {
            Some(e) => count_arg(e, s, 0, &bad_arg)?,
            None => 1,
        },
        _ => 0,
    };
    let wname = w.wname.clone();
    let bad_frame = move || {
        err(
            3586,
            format!(
                "Window '{wname}': frame start or end is negative, NULL or of non-integral type"
            ),
        )
    };
    let asc = w.order.first().is_none_or(|o| o.1);
    let start = edge(&w.frame.start, w.frame.rows, asc, s, &bad_frame)?;
    let end = edge(&w.frame.end, w.frame.rows, asc, s, &bad_frame)?;

    let colls: Vec<Collation> = w
        .order
        .iter()
        .map(|(e, _)| crate::expr::collation_of(e, types))
        .collect();
    let arg_coll = w.agg.arg.as_ref().map_or(Collation::Utf8mb4GeneralCi, |e| {
        crate::expr::collation_of(e, types)
    });
    let mut keyed: Vec<(Vec<u8>, Vec<Value>, usize)> = Vec::with_capacity(rows.len());
    for (i, (r, a)) in rows.iter().enumerate() {
        // KILL QUERY and max_execution_time stop window functions too.
        s.check_interrupt()?;
        let mut pk = Vec::new();
        for e in &w.partition {
            let v = eval(e, r, a, types, s)?;
            crate::exec::group_key(&mut pk, &v, crate::expr::collation_of(e, types));
        }
        let ov = w
            .order
            .iter()
            .map(|(e, _)| eval(e, r, a, types, s))
            .collect::<SqlResult<Vec<_>>>()?;
        keyed.push((pk, ov, i));
    }
    let order_cmp = |a: &[Value], b: &[Value]| -> Ordering {
        for (k, (_, asc)) in w.order.iter().enumerate() {
            let coll = colls.get(k).copied().unwrap_or(Collation::Utf8mb4GeneralCi);
            let o = match (a.get(k), b.get(k)) {
                (Some(x), Some(y)) => crate::exec::sort_cmp(x, y, coll),
                _ => Ordering::Equal,
            };
            let o = if *asc { o } else { o.reverse() };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    };
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| order_cmp(&a.1, &b.1)));
    let empty: (Vec<Value>, Vec<Value>) = (Vec::new(), Vec::new());
    let row_of = |i: usize| rows.get(i).unwrap_or(&empty);
    let mut vals: Vec<Value> = vec![Value::Null; rows.len()];
    let key_coll = colls
        .first()
        .copied()
        .unwrap_or(Collation::Utf8mb4GeneralCi);
    let mut start_at = 0;
    while start_at < keyed.len() {
        let mut end_at = start_at + 1;
        while end_at < keyed.len() && keyed[end_at].0 == keyed[start_at].0 {
            end_at += 1;
        }
        let part = keyed.get(start_at..end_at).unwrap_or_default();
        start_at = end_at;
        s.check_interrupt()?;
        let m = part.len();
        // Peer groups: (first, one past the last) per position.
        let mut peers: Vec<(usize, usize)> = Vec::with_capacity(m);
        let mut g = 0;
        while g < m {
            let mut h = g + 1;
            while h < m && order_cmp(&part[h].1, &part[g].1) == Ordering::Equal {
                h += 1;
            }
            for _ in g..h {
                peers.push((g, h));
            }
            g = h;
        }
        // The argument's value per position.
        let args: Vec<Value> = match &w.agg.arg {
            Some(e) => part
                .iter()
                .map(|p| {
                    let (r, a) = row_of(p.2);
                    eval(e, r, a, types, s)
                })
                .collect::<SqlResult<Vec<_>>>()?,
            None => Vec::new(),
        };
        let arg_at = |k: usize| args.get(k).cloned().unwrap_or(Value::Null);
        let int = |n: usize| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
        let mut set = |j: usize, v: Value| {
            if let Some(slot) = part.get(j).and_then(|p| vals.get_mut(p.2)) {
                *slot = v;
            }
        };
        match w.func {
            WinFunc::RowNumber => (0..m).for_each(|j| set(j, int(j + 1))),
            WinFunc::Rank => (0..m).for_each(|j| set(j, int(peers[j].0 + 1))),
            WinFunc::DenseRank => {
                let mut dense = 0;
                for j in 0..m {
                    if peers[j].0 == j {
                        dense += 1;
                    }
                    set(j, int(dense));
                }
            }
            WinFunc::PercentRank => (0..m).for_each(|j| {
                let v = if m > 1 {
                    peers[j].0 as f64 / (m - 1) as f64
                } else {
                    0.0
                };
                set(j, Value::Double(v))
            }),
            WinFunc::CumeDist => {
                (0..m).for_each(|j| set(j, Value::Double(peers[j].1 as f64 / m as f64)))
            }
            WinFunc::Ntile => {
                let n = usize::try_from(n_arg).unwrap_or(usize::MAX).max(1);
                let q = m / n;
                let r = m % n;
                for j in 0..m {
                    let b = if j < r * (q + 1) {
                        j / (q + 1)
                    } else {
                        r + (j - r * (q + 1)) / q.max(1)
                    };
                    set(j, int(b + 1));
                }
            }
            WinFunc::Lag | WinFunc::Lead => {
                let off = usize::try_from(n_arg).unwrap_or(usize::MAX);
                for j in 0..m {
                    let at = if w.func == WinFunc::Lag {
                        j.checked_sub(off)
                    } else {
                        j.checked_add(off).filter(|k| *k < m)
                    };
                    let v = match at {
                        Some(k) => arg_at(k),
                        None => match w.extra.get(1) {
                            Some(d) => {
                                let (r, a) = row_of(part[j].2);
                                eval(d, r, a, types, s)?
                            }
                            None => Value::Null,
                        },
                    };
                    set(j, v);
                }
            }
            WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue => {
                let nth = usize::try_from(n_arg).unwrap_or(usize::MAX);
                for j in 0..m {
                    let (r, a) = row_of(part[j].2);
                    let (lo, hi) = frame_at(
                        &start,
                        &end,
                        j,
                        part,
                        &peers,
                        asc,
                        key_coll,
                        (r, a),
                        types,
                        s,
                    )?;
                    let v = match w.func {
                        WinFunc::FirstValue if lo < hi => arg_at(lo),
                        WinFunc::LastValue if lo < hi => arg_at(hi - 1),
                        WinFunc::NthValue if lo.saturating_add(nth - 1) < hi => {
                            arg_at(lo + nth - 1)
                        }
                        _ => Value::Null,
                    };
                    set(j, v);
                }
            }
            WinFunc::Agg
                if !matches!(
                    w.agg.func,
                    AggFunc::Count
                        | AggFunc::CountStar
                        | AggFunc::Sum
                        | AggFunc::Avg
                        | AggFunc::Min
                        | AggFunc::Max
                ) =>
            {
                // BIT_* / STD / VARIANCE: fed as the frame grows from
                // the partition's start, else over each row's frame.
                let from_start = matches!(w.frame.start, Bound::UnboundedPreceding);
                let mut acc = crate::exec::new_acc(&w.agg);
                let mut fed = 0;
                for j in 0..m {
                    let (r, a) = row_of(part[j].2);
                    let (lo, hi) = frame_at(
                        &start,
                        &end,
                        j,
                        part,
                        &peers,
                        asc,
                        key_coll,
                        (r, a),
                        types,
                        s,
                    )?;
                    if !from_start {
                        acc = crate::exec::new_acc(&w.agg);
                        fed = lo;
                    }
                    for k in fed.max(lo)..hi {
                        crate::exec::feed(&mut acc, &w.agg, Some(arg_at(k)), arg_coll)?;
                    }
                    fed = fed.max(hi);
                    set(j, crate::exec::finish(&acc, &w.agg, s, 0)?);
                }
            }
            WinFunc::Agg => {
                let minmax = matches!(w.agg.func, AggFunc::Min | AggFunc::Max);
                let mut slide = Slide {
                    sum: None,
                    nonnull: 0,
                    rows: 0,
                };
                // Positions of candidate MIN / MAX values, best first.
                let mut queue: VecDeque<usize> = VecDeque::new();
                let (mut clo, mut chi) = (0usize, 0usize);
                for j in 0..m {
                    let (r, a) = row_of(part[j].2);
                    let (lo, hi) = frame_at(
                        &start,
                        &end,
                        j,
                        part,
                        &peers,
                        asc,
                        key_coll,
                        (r, a),
                        types,
                        s,
                    )?;
                    // Bounds only move forward.
                    let (lo, hi) = (lo.max(clo), hi.max(chi).max(lo.max(clo)));
                    for k in chi..hi {
                        let v = if w.agg.arg.is_some() {
                            arg_at(k)
                        } else {
                            Value::Int(1)
                        };
                        if minmax {
                            if v.is_null() {
                                continue;
                            }
                            while let Some(&b) = queue.back() {
                                let o = compare(&args[b], &v, arg_coll);
                                // Equal values keep the first one, as
                                // the plain aggregate does.
                                let dominated = if w.agg.func == AggFunc::Min {
                                    o == Some(Ordering::Greater)
                                } else {
                                    o == Some(Ordering::Less)
                                };
                                if dominated {
                                    queue.pop_back();
                                } else {
                                    break;
                                }
                            }
                            queue.push_back(k);
                        } else {
                            slide.put(&v, true)?;
                        }
                    }
                    if minmax {
                        while queue.front().is_some_and(|&f| f < lo) {
                            queue.pop_front();
                        }
                    } else {
                        for k in clo..lo.min(hi) {
                            let v = if w.agg.arg.is_some() {
                                arg_at(k)
                            } else {
                                Value::Int(1)
                            };
                            slide.put(&v, false)?;
                        }
                    }
                    clo = lo;
                    chi = hi;
                    let v = if minmax {
                        queue.front().map_or(Value::Null, |&f| arg_at(f))
                    } else {
                        slide.value(&w.agg)?
                    };
                    set(j, v);
                }
            }
        }
    }
    Ok(vals)
}
