//! Compiling expressions: the parser's AST bound against a [`Scope`]
//! of columns into an [`Expr`] tree, so a cached plan evaluates without
//! name lookups; literals parsed, functions resolved by name (an unknown
//! one is 1305, one not implemented 1235), argument counts checked,
//! aggregates and window functions collected where the clause allows
//! them, and subqueries planned through [`SubPlanner`].
//!
//! Pure: no locks, no I/O.

use super::*;

/// Compiles parser expressions against a scope.
pub struct Compiler<'a> {
    /// Columns an expression may name.
    pub scope: &'a Scope,
    /// Aggregates met (when `allow_agg`).
    pub aggs: Vec<AggCall>,
    /// Whether aggregates may appear.
    pub allow_agg: bool,
    /// Next `?` parameter number.
    pub next_param: usize,
    /// Plans subqueries (None: subqueries are refused here).
    pub sub: Option<&'a dyn SubPlanner>,
    /// Scopes of the enclosing queries, innermost last.
    pub outer: Vec<&'a Scope>,
    /// Subqueries compiled.
    pub subqueries: usize,
    /// SLEEP() compiled.
    pub waits: bool,
    /// Columns of enclosing queries read (by this query's expressions or
    /// its subqueries'): (queries out, slot), each once.
    pub outer_refs: Vec<(usize, usize)>,
    /// Whether an expression compiled reads an enclosing query's column
    /// itself ([`Expr::Outer`]).
    pub direct_outer: bool,
    /// Whether a correlated subquery was compiled.
    pub correlated_subqueries: bool,
    /// Window functions met (when `allow_win`); window k reads as
    /// `Expr::Agg(crate::window::WIN_BASE + k)` until the planner
    /// renumbers it past the query's aggregates.
    pub wins: Vec<WinCall>,
    /// Whether window functions may appear (a select list, ORDER BY).
    pub allow_win: bool,
    /// The query's WINDOW clause.
    pub named_windows: &'a [ast::NamedWindowDefinition],
}

impl<'a> Compiler<'a> {
    /// A compiler over `scope`.
    pub fn new(scope: &'a Scope) -> Self {
        Compiler {
            scope,
            aggs: Vec::new(),
            allow_agg: false,
            next_param: 0,
            sub: None,
            outer: Vec::new(),
            subqueries: 0,
            waits: false,
            outer_refs: Vec::new(),
            direct_outer: false,
            correlated_subqueries: false,
            wins: Vec::new(),
            allow_win: false,
            named_windows: &[],
        }
    }

    /// Notes a read of slot `slot` of the query `up` levels out.
    fn note_outer(&mut self, up: usize, slot: usize) {
        if !self.outer_refs.contains(&(up, slot)) {
            self.outer_refs.push((up, slot));
        }
    }

    /// A subquery of `test` (with the left operand `x` of a quantified
    /// comparison).
    fn subquery(&mut self, q: &ast::Query, test: SubTest, x: Option<Expr>) -> SqlResult<Expr> {
        let Some(sub) = self.sub else {
            return Err(SqlError::unsupported("subquery in this context"));
        };
        let mut chain = self.outer.clone();
        chain.push(self.scope);
        let mut plan = sub.plan(q, &mut self.next_param, &chain)?;
        let width = match &x {
            Some(Expr::Row(items)) => items.len(),
            _ => 1,
        };
        if test != SubTest::Exists && plan.columns.len() != width {
            return Err(operand_columns(width));
        }
        self.subqueries += 1;
        if !plan.outer_refs.is_empty() {
            self.correlated_subqueries = true;
            // What it reads further out than this query, this query
            // reads too.
            for &(up, slot) in &plan.outer_refs {
                if up > 1 {
                    self.note_outer(up - 1, slot);
                }
            }
        }
        // EXISTS needs one row, a scalar subquery two (to tell 1242).
        if plan.limit.is_none() && plan.offset.is_none() {
            match test {
                SubTest::Exists => plan.limit = Some(Expr::Const(Value::Int(1))),
                SubTest::Scalar | SubTest::RowCmp(_) => {
                    plan.limit = Some(Expr::Const(Value::Int(2)))
                }
                SubTest::Quant(..) | SubTest::Rows(..) => {}
            }
        }
        let id = NEXT_SUBQUERY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Expr::Subquery(
            x.map(Box::new),
            Arc::new(SubQuery { plan, test, id }),
        ))
    }

    /// `left op ANY/SOME/ALL (SELECT ...)`.
    fn quantified(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        all: bool,
    ) -> SqlResult<Expr> {
        let op = match op {
            ast::BinaryOperator::Eq => BinOp::Eq,
            ast::BinaryOperator::NotEq => BinOp::Ne,
            ast::BinaryOperator::Lt => BinOp::Lt,
            ast::BinaryOperator::LtEq => BinOp::Le,
            ast::BinaryOperator::Gt => BinOp::Gt,
            ast::BinaryOperator::GtEq => BinOp::Ge,
            other => return Err(SqlError::unsupported(format!("{other} ANY/ALL"))),
        };
        let mut r = right;
        while let ast::Expr::Nested(inner) = r {
            r = inner;
        }
        let ast::Expr::Subquery(q) = r else {
            return Err(SqlError::unsupported("ANY/ALL without a subquery"));
        };
        if let Some(items) = row_items(left) {
            if !matches!(op, BinOp::Eq | BinOp::Ne) {
                return Err(SqlError::unsupported(
                    "a row compared by other than = or <> with ANY/ALL",
                ));
            }
            let x = self.row(&items)?;
            return self.subquery(q, SubTest::Rows(op, all), Some(x));
        }
        let x = self.compile(left)?;
        self.subquery(q, SubTest::Quant(op, all), Some(x))
    }

    /// Compiles one expression.
    pub fn compile(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as A;
        Ok(match e {
            A::Identifier(id) => self.identifier(None, id)?,
            A::CompoundIdentifier(parts) => match parts.as_slice() {
                // `@@session.name`, `@@global.name` (read as `global.name`:
                // the global value, `vars::get`).
                [t, c] if t.quote_style.is_none() && t.value.starts_with("@@") => {
                    if t.value.eq_ignore_ascii_case("@@global") {
                        Expr::SysVar(format!("global.{}", c.value.to_lowercase()))
                    } else {
                        Expr::SysVar(c.value.to_lowercase())
                    }
                }
                [t, c] => self.identifier(Some(&t.value), c)?,
                [_db, t, c] => self.identifier(Some(&t.value), c)?,
                _ => return Err(SqlError::unsupported(e)),
            },
            A::Value(v) => self.value(&v.value)?,
            A::Subquery(q) => self.subquery(q, SubTest::Scalar, None)?,
            A::Exists { subquery, negated } => {
                let e = self.subquery(subquery, SubTest::Exists, None)?;
                if *negated {
                    Expr::Not(Box::new(e))
                } else {
                    e
                }
            }
            A::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                if let Some(items) = row_items(expr) {
                    let x = self.row(&items)?;
                    let test = if *negated {
                        SubTest::Rows(BinOp::Ne, true)
                    } else {
                        SubTest::Rows(BinOp::Eq, false)
                    };
                    return self.subquery(subquery, test, Some(x));
                }
                let x = self.compile(expr)?;
                let test = if *negated {
                    SubTest::Quant(BinOp::Ne, true)
                } else {
                    SubTest::Quant(BinOp::Eq, false)
                };
                self.subquery(subquery, test, Some(x))?
            }
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => self.quantified(left, compare_op, right, false)?,
            A::AllOp {
                left,
                compare_op,
                right,
            } => self.quantified(left, compare_op, right, true)?,
            A::Tuple(_) => return Err(operand_columns(1)),
            A::BinaryOp { left, op, right }
                if row_items(left).is_some() || row_items(right).is_some() =>
            {
                self.row_compare(op, left, right)?
            }
            A::InList {
                expr,
                list,
                negated,
            } if row_items(expr).is_some() || list.iter().any(|x| row_items(x).is_some()) => {
                // `(a, b) IN ((1, 2), (3, 4))`: an OR of row equalities.
                let mut any: Option<Expr> = None;
                for item in list {
                    let eq = self.row_compare(&ast::BinaryOperator::Eq, expr, item)?;
                    any = Some(match any {
                        None => eq,
                        Some(a) => Expr::Binary(BinOp::Or, Box::new(a), Box::new(eq)),
                    });
                }
                let any = any.ok_or_else(|| SqlError::syntax("empty IN list"))?;
                if *negated {
                    Expr::Not(Box::new(any))
                } else {
                    any
                }
            }
            A::Nested(inner) => self.compile(inner)?,
            A::IsNull(x) => Expr::IsNull(Box::new(self.compile(x)?), false),
            A::IsNotNull(x) => Expr::IsNull(Box::new(self.compile(x)?), true),
            A::IsTrue(x) => self.truth(x, true, false)?,
            A::IsNotTrue(x) => self.truth(x, true, true)?,
            A::IsFalse(x) => self.truth(x, false, false)?,
            A::IsNotFalse(x) => self.truth(x, false, true)?,
            A::InList {
                expr,
                list,
                negated,
            } => {
                let x = self.compile(expr)?;
                let list = list
                    .iter()
                    .map(|i| {
                        let k = self.compile(i)?;
                        Ok(self.year_side(&x, k))
                    })
                    .collect::<SqlResult<_>>()?;
                Expr::InList(Box::new(x), list, *negated)
            }
            A::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.compile(expr)?;
                let (lo, hi) = (self.compile(low)?, self.compile(high)?);
                let (lo, hi) = (self.year_side(&x, lo), self.year_side(&x, hi));
                Expr::Between(Box::new(x), Box::new(lo), Box::new(hi), *negated)
            }
            A::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => Expr::Like(
                Box::new(self.compile(expr)?),
                Box::new(self.compile(pattern)?),
                *negated,
                like_escape_char(escape_char.as_ref())?,
            ),
            // A chain of AND, OR or XOR (left-deep as parsed, as long as
            // the query) becomes a balanced tree: the operators are
            // associative, the operands keep their order (so evaluation
            // stops at the same operand), and the tree is as deep as the
            // logarithm of the chain.
            A::BinaryOp {
                op:
                    op @ (ast::BinaryOperator::And | ast::BinaryOperator::Or | ast::BinaryOperator::Xor),
                ..
            } => {
                let bop = match op {
                    ast::BinaryOperator::And => BinOp::And,
                    ast::BinaryOperator::Or => BinOp::Or,
                    _ => BinOp::Xor,
                };
                let mut operands = Vec::new();
                let mut cur = e;
                while let A::BinaryOp { left, op: o, right } = cur {
                    if o != op {
                        break;
                    }
                    operands.push(&**right);
                    cur = left;
                }
                operands.push(cur);
                operands.reverse();
                let parts = operands
                    .into_iter()
                    .map(|x| self.compile(x))
                    .collect::<SqlResult<Vec<_>>>()?;
                balanced(bop, parts)
            }
            A::BinaryOp {
                left,
                op: op @ (ast::BinaryOperator::Plus | ast::BinaryOperator::Minus),
                right,
            } if matches!(**right, A::Interval(_))
                || (matches!(op, ast::BinaryOperator::Plus)
                    && matches!(**left, A::Interval(_))) =>
            {
                // `x + INTERVAL n unit`, `INTERVAL n unit + x`, `x - INTERVAL n unit`.
                let (x, iv) = match &**right {
                    A::Interval(iv) => (left, iv),
                    _ => match &**left {
                        A::Interval(iv) => (right, iv),
                        _ => return Err(SqlError::unsupported(e)),
                    },
                };
                let unit = interval_unit(iv)?;
                let neg = matches!(op, ast::BinaryOperator::Minus);
                Expr::Func(
                    Func::Dt(crate::datefuncs::DtFn::AddInterval(unit, neg)),
                    vec![self.compile(x)?, self.compile(&iv.value)?],
                )
            }
            A::Interval(_) => return Err(SqlError::syntax(format!("unexpected {e}"))),
            A::RLike {
                negated,
                expr,
                pattern,
                ..
            } => {
                let (x, p) = (self.compile(expr)?, self.compile(pattern)?);
                let flags = self.regexp_flags(&x, &p);
                let m = Expr::Func(Func::RegexpLike, vec![x, p, flags]);
                if *negated {
                    Expr::Not(Box::new(m))
                } else {
                    m
                }
            }
            A::Extract { field, expr, .. } => {
                let unit = field_unit(field)?;
                Expr::Func(
                    Func::Dt(crate::datefuncs::DtFn::Extract(unit)),
                    vec![self.compile(expr)?],
                )
            }
            A::BinaryOp {
                left,
                op: op @ (ast::BinaryOperator::Arrow | ast::BinaryOperator::LongArrow),
                right,
            } => {
                // `col -> path` is JSON_EXTRACT(col, path); `->>` also
                // unquotes. MySQL takes a column on the left and a string
                // literal on the right only.
                if !matches!(**left, A::Identifier(_) | A::CompoundIdentifier(_))
                    || !matches!(&**right, A::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_) | ast::Value::DoubleQuotedString(_)))
                {
                    return Err(SqlError::syntax(format!(
                        "You have an error in your SQL syntax near '{e}': the JSON operators take a column and a path string"
                    )));
                }
                let x = Expr::Func(
                    Func::Json(crate::json::JsonFn::Extract),
                    vec![self.compile(left)?, self.compile(right)?],
                );
                if matches!(op, ast::BinaryOperator::LongArrow) {
                    Expr::Func(Func::Json(crate::json::JsonFn::Unquote), vec![x])
                } else {
                    x
                }
            }
            A::MemberOf(m) => {
                let v = self.compile(&m.value)?;
                let v = if is_truth_valued(&v) {
                    Expr::Func(Func::Json(crate::json::JsonFn::Bool), vec![v])
                } else {
                    v
                };
                Expr::Func(
                    Func::Json(crate::json::JsonFn::MemberOf),
                    vec![v, self.compile(&m.array)?],
                )
            }
            A::BinaryOp { left, op, right } => {
                let op = match op {
                    ast::BinaryOperator::Plus => BinOp::Add,
                    ast::BinaryOperator::Minus => BinOp::Sub,
                    ast::BinaryOperator::Multiply => BinOp::Mul,
                    ast::BinaryOperator::Divide => BinOp::Div,
                    ast::BinaryOperator::Modulo => BinOp::Mod,
                    ast::BinaryOperator::MyIntegerDivide => BinOp::IntDiv,
                    ast::BinaryOperator::Eq => BinOp::Eq,
                    ast::BinaryOperator::Spaceship => BinOp::NullSafeEq,
                    ast::BinaryOperator::NotEq => BinOp::Ne,
                    ast::BinaryOperator::Lt => BinOp::Lt,
                    ast::BinaryOperator::LtEq => BinOp::Le,
                    ast::BinaryOperator::Gt => BinOp::Gt,
                    ast::BinaryOperator::GtEq => BinOp::Ge,
                    ast::BinaryOperator::And => BinOp::And,
                    ast::BinaryOperator::Or => BinOp::Or,
                    ast::BinaryOperator::Xor => BinOp::Xor,
                    ast::BinaryOperator::BitwiseAnd => BinOp::BitAnd,
                    ast::BinaryOperator::BitwiseOr => BinOp::BitOr,
                    ast::BinaryOperator::BitwiseXor => BinOp::BitXor,
                    ast::BinaryOperator::PGBitwiseShiftLeft => BinOp::Shl,
                    ast::BinaryOperator::PGBitwiseShiftRight => BinOp::Shr,
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                };
                let (mut l, mut r) = (self.compile(left)?, self.compile(right)?);
                if op.is_comparison() {
                    r = self.year_side(&l, r);
                    l = self.year_side(&r, l);
                }
                Expr::Binary(op, Box::new(l), Box::new(r))
            }
            A::UnaryOp { op, expr } => match op {
                ast::UnaryOperator::Not | ast::UnaryOperator::BangNot => {
                    Expr::Not(Box::new(self.compile(expr)?))
                }
                ast::UnaryOperator::Minus => match self.compile(expr)? {
                    Expr::Const(Value::Int(i)) => Expr::Const(Value::Int(-i)),
                    Expr::Const(Value::Decimal(d, s)) => Expr::Const(Value::Decimal(-d, s)),
                    Expr::Const(Value::Double(f)) => Expr::Const(Value::Double(-f)),
                    Expr::Const(Value::UInt(u)) if u == 1u64 << 63 => {
                        Expr::Const(Value::Int(i64::MIN))
                    }
                    x => Expr::Neg(Box::new(x)),
                },
                ast::UnaryOperator::Plus => self.compile(expr)?,
                // `~x`: the 64-bit complement, `x ^ 0xFFFFFFFFFFFFFFFF`.
                ast::UnaryOperator::PGBitwiseNot => Expr::Binary(
                    BinOp::BitXor,
                    Box::new(self.compile(expr)?),
                    Box::new(Expr::Const(Value::UInt(u64::MAX))),
                ),
                other => return Err(SqlError::unsupported(format!("operator {other}"))),
            },
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let operand = match operand {
                    Some(o) => Some(Box::new(self.compile(o)?)),
                    None => None,
                };
                let mut arms = Vec::new();
                for w in conditions {
                    arms.push((self.compile(&w.condition)?, self.compile(&w.result)?));
                }
                let els = match else_result {
                    Some(x) => Some(Box::new(self.compile(x)?)),
                    None => None,
                };
                Expr::Case(operand, arms, els)
            }
            A::Cast {
                expr, data_type, ..
            } => Expr::Cast(Box::new(self.compile(expr)?), cast_target(data_type)?),
            A::Convert {
                expr,
                data_type: Some(dt),
                ..
            } => Expr::Cast(Box::new(self.compile(expr)?), cast_target(dt)?),
            A::Convert {
                expr,
                data_type: None,
                ..
            } => self.compile(expr)?,
            A::Function(f) => self.function(f)?,
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.compile(expr)?];
                if let Some(f) = substring_from {
                    args.push(self.compile(f)?);
                }
                if let Some(f) = substring_for {
                    args.push(self.compile(f)?);
                }
                Expr::Func(Func::Substring, args)
            }
            A::Trim {
                expr,
                trim_where: None,
                trim_what: None,
                trim_characters: None,
            } => Expr::Func(Func::Trim, vec![self.compile(expr)?]),
            A::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters: None,
            } => {
                let what = match trim_what {
                    Some(w) => self.compile(w)?,
                    None => Expr::Const(Value::Str(b" ".to_vec())),
                };
                let f = match trim_where {
                    Some(ast::TrimWhereField::Leading) => Func::TrimLeading,
                    Some(ast::TrimWhereField::Trailing) => Func::TrimTrailing,
                    _ => Func::TrimBoth,
                };
                Expr::Func(f, vec![self.compile(expr)?, what])
            }
            A::Position { expr, r#in } => {
                Expr::Func(Func::Locate, vec![self.compile(expr)?, self.compile(r#in)?])
            }
            A::Floor { expr, .. } => Expr::Func(Func::Floor, vec![self.compile(expr)?]),
            A::Ceil { expr, .. } => Expr::Func(Func::Ceil, vec![self.compile(expr)?]),
            A::TypedString(ts) => {
                // DATE '...' and TIMESTAMP '...' are dates, not strings.
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(t) | ast::Value::DoubleQuotedString(t) => {
                        Some(t.as_bytes())
                    }
                    _ => None,
                };
                match (&ts.data_type, text) {
                    (ast::DataType::Date, Some(t)) => match crate::convert::parse_date_str(t) {
                        Some(d) => Expr::Const(Value::Date(d)),
                        None => self.value(&ts.value.value)?,
                    },
                    (ast::DataType::Timestamp(..) | ast::DataType::Datetime(_), Some(t)) => {
                        match crate::convert::parse_datetime_str(t) {
                            Some(d) => Expr::Const(Value::DateTime(d)),
                            None => self.value(&ts.value.value)?,
                        }
                    }
                    _ => self.value(&ts.value.value)?,
                }
            }
            _ => return Err(SqlError::unsupported(e)),
        })
    }

    /// `k` compared with `x`: a constant read as a YEAR when `x` is a
    /// YEAR column (MySQL converts the constant to the column's type),
    /// else `k` unchanged.
    fn year_side(&self, x: &Expr, k: Expr) -> Expr {
        match (x, k) {
            (Expr::Column(i), Expr::Const(v))
                if self
                    .scope
                    .cols
                    .get(*i)
                    .is_some_and(|c| c.ty == Some(ColumnType::Year)) =>
            {
                Expr::Const(crate::convert::year_constant(v))
            }
            (_, k) => k,
        }
    }

    /// The left operand of a row subquery: its items compiled (an item
    /// that is itself a row is refused: 1241).
    fn row(&mut self, items: &[&ast::Expr]) -> SqlResult<Expr> {
        let mut v = Vec::with_capacity(items.len());
        for x in items {
            if row_items(x).is_some() {
                return Err(operand_columns(1));
            }
            v.push(self.compile(x)?);
        }
        Ok(Expr::Row(v))
    }

    /// A comparison with a row constructor on either side, expanded into
    /// scalar comparisons with MySQL's row semantics: `=` is the AND of
    /// the pairs, `<>` their OR, `<=>` the AND of `<=>`, and `<`, `<=`,
    /// `>`, `>=` decide at the first pair that is not equal (NULL when
    /// that pair has a NULL).
    fn row_compare(
        &mut self,
        op: &ast::BinaryOperator,
        left: &ast::Expr,
        right: &ast::Expr,
    ) -> SqlResult<Expr> {
        use ast::BinaryOperator as B;
        let op = match op {
            B::Eq => BinOp::Eq,
            B::NotEq => BinOp::Ne,
            B::Spaceship => BinOp::NullSafeEq,
            B::Lt => BinOp::Lt,
            B::LtEq => BinOp::Le,
            B::Gt => BinOp::Gt,
            B::GtEq => BinOp::Ge,
            _ => return Err(operand_columns(1)),
        };
        let (l, r) = match (row_items(left), row_items(right)) {
            (Some(l), Some(r)) if l.len() == r.len() => (l, r),
            (Some(items), None) => {
                if let ast::Expr::Subquery(q) = unnest(right) {
                    let x = self.row(&items)?;
                    return self.subquery(q, SubTest::RowCmp(op), Some(x));
                }
                return Err(operand_columns(items.len()));
            }
            (None, Some(items)) => {
                if let ast::Expr::Subquery(q) = unnest(left) {
                    // `(SELECT ...) op (a, b)` is `(a, b) op' (SELECT ...)`.
                    let flipped = match op {
                        BinOp::Lt => BinOp::Gt,
                        BinOp::Le => BinOp::Ge,
                        BinOp::Gt => BinOp::Lt,
                        BinOp::Ge => BinOp::Le,
                        other => other,
                    };
                    let x = self.row(&items)?;
                    return self.subquery(q, SubTest::RowCmp(flipped), Some(x));
                }
                return Err(operand_columns(1));
            }
            (Some(l), _) => return Err(operand_columns(l.len())),
            (None, _) => return Err(operand_columns(1)),
        };
        let mut pairs = Vec::with_capacity(l.len());
        for (a, b) in l.into_iter().zip(r) {
            let nested = row_items(a).is_some() || row_items(b).is_some();
            pairs.push((a, b, nested));
        }
        // Built from the last pair backwards.
        let mut acc: Option<Expr> = None;
        for (a, b, nested) in pairs.into_iter().rev() {
            let cmp = |c: &mut Self, op: BinOp| -> SqlResult<Expr> {
                if nested {
                    let o = match op {
                        BinOp::Eq => B::Eq,
                        BinOp::Ne => B::NotEq,
                        BinOp::NullSafeEq => B::Spaceship,
                        BinOp::Lt => B::Lt,
                        BinOp::Le => B::LtEq,
                        BinOp::Gt => B::Gt,
                        _ => B::GtEq,
                    };
                    c.row_compare(&o, a, b)
                } else {
                    Ok(Expr::Binary(
                        op,
                        Box::new(c.compile(a)?),
                        Box::new(c.compile(b)?),
                    ))
                }
            };
            acc = Some(match (op, acc) {
                (_, None) => cmp(self, op)?,
                (BinOp::Eq | BinOp::NullSafeEq, Some(rest)) => {
                    Expr::Binary(BinOp::And, Box::new(cmp(self, op)?), Box::new(rest))
                }
                (BinOp::Ne, Some(rest)) => {
                    Expr::Binary(BinOp::Or, Box::new(cmp(self, op)?), Box::new(rest))
                }
                (_, Some(rest)) => {
                    let strict = match op {
                        BinOp::Lt | BinOp::Le => BinOp::Lt,
                        _ => BinOp::Gt,
                    };
                    Expr::Case(
                        None,
                        vec![(cmp(self, BinOp::Eq)?, rest)],
                        Some(Box::new(cmp(self, strict)?)),
                    )
                }
            });
        }
        acc.ok_or_else(|| operand_columns(1))
    }

    fn truth(&mut self, x: &ast::Expr, want: bool, negated: bool) -> SqlResult<Expr> {
        // `x IS TRUE` = coalesce(x <> 0, false); built from the pieces.
        let v = self.compile(x)?;
        let test = Expr::Func(
            Func::IfNull,
            vec![
                if want {
                    Expr::Binary(BinOp::Ne, Box::new(v), Box::new(Expr::Const(Value::Int(0))))
                } else {
                    Expr::Binary(BinOp::Eq, Box::new(v), Box::new(Expr::Const(Value::Int(0))))
                },
                Expr::Const(Value::Int(0)),
            ],
        );
        Ok(if negated {
            Expr::Not(Box::new(test))
        } else {
            test
        })
    }

    fn identifier(&mut self, table: Option<&str>, id: &ast::Ident) -> SqlResult<Expr> {
        let name = id.value.as_str();
        if id.quote_style.is_none() {
            if let Some(var) = name.strip_prefix("@@") {
                let var = var.to_lowercase();
                let var = match var.strip_prefix("global.") {
                    // The global value (`vars::get`).
                    Some(_) => var,
                    None => var
                        .strip_prefix("session.")
                        .or_else(|| var.strip_prefix("local."))
                        .unwrap_or(&var)
                        .to_string(),
                };
                return Ok(Expr::SysVar(var));
            }
            if let Some(var) = name.strip_prefix('@') {
                return Ok(Expr::UserVar(var.to_lowercase()));
            }
            if table.is_none() {
                match name.to_ascii_lowercase().as_str() {
                    "current_timestamp" | "localtimestamp" | "localtime" => {
                        return Ok(Expr::Func(Func::Now, vec![]))
                    }
                    "current_date" => return Ok(Expr::Func(Func::CurDate, vec![])),
                    "current_time" | "utc_time" => {
                        return Ok(Expr::Func(
                            Func::Dt(crate::datefuncs::DtFn::CurTime),
                            vec![],
                        ))
                    }
                    "utc_date" => {
                        return Ok(Expr::Func(
                            Func::Dt(crate::datefuncs::DtFn::UtcDate),
                            vec![],
                        ))
                    }
                    "utc_timestamp" => {
                        return Ok(Expr::Func(
                            Func::Dt(crate::datefuncs::DtFn::UtcTimestamp),
                            vec![],
                        ))
                    }
                    "current_user" => return Ok(Expr::Func(Func::CurrentUser, vec![])),
                    _ => {}
                }
            }
        }
        match self.scope.resolve(table, name) {
            Ok(i) => Ok(Expr::Column(i)),
            // A name of an enclosing query, the innermost that has it: a
            // correlated subquery.
            Err(e) if e.code == 1054 => {
                let n = self.outer.len();
                for level in (0..n).rev() {
                    match self.outer[level].resolve(table, name) {
                        Ok(slot) => {
                            let up = n - level;
                            self.note_outer(up, slot);
                            self.direct_outer = true;
                            return Ok(Expr::Outer(up, slot));
                        }
                        Err(o) if o.code != 1054 => return Err(o),
                        Err(_) => {}
                    }
                }
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    fn value(&mut self, v: &ast::Value) -> SqlResult<Expr> {
        use ast::Value as V;
        Ok(Expr::Const(match v {
            V::Number(n, _) => parse_number(n)?,
            V::SingleQuotedString(s) | V::DoubleQuotedString(s) => {
                Value::Str(s.clone().into_bytes())
            }
            V::HexStringLiteral(h) => Value::Str(parse_hex(h)?),
            // A bit-value literal is a number (up to 64 bits), as MySQL
            // reads one in numeric context.
            V::SingleQuotedByteStringLiteral(b) => {
                let bytes = parse_bits(b)?;
                if bytes.len() <= 8 && !b.is_empty() {
                    Value::UInt(bytes.iter().fold(0u64, |a, x| (a << 8) | u64::from(*x)))
                } else {
                    Value::Str(bytes)
                }
            }
            V::Boolean(b) => Value::Int(i64::from(*b)),
            V::Null => Value::Null,
            V::Placeholder(p) if p == "?" => {
                let n = self.next_param;
                self.next_param += 1;
                return Ok(Expr::Param(n));
            }
            other => return Err(SqlError::unsupported(other)),
        }))
    }

    fn function(&mut self, f: &ast::Function) -> SqlResult<Expr> {
        let name = f.name.to_string().to_ascii_lowercase();
        // Window functions would otherwise run as plain aggregates.
        if let Some(over) = &f.over {
            return self.window(f, over, &name);
        }
        if f.filter.is_some() || f.null_treatment.is_some() || !f.within_group.is_empty() {
            return Err(SqlError::unsupported(f));
        }
        let mut clauses: &[ast::FunctionArgumentClause] = &[];
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::List(l) => {
                let distinct = matches!(
                    l.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                );
                let mut star = false;
                let mut args = Vec::new();
                clauses = &l.clauses;
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
        let agg = match name.as_str() {
            "count" if star => Some(AggFunc::CountStar),
            "count" => Some(AggFunc::Count),
            "sum" => Some(AggFunc::Sum),
            "avg" => Some(AggFunc::Avg),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "bit_and" => Some(AggFunc::BitAnd),
            "bit_or" => Some(AggFunc::BitOr),
            "bit_xor" => Some(AggFunc::BitXor),
            "std" | "stddev" | "stddev_pop" => Some(AggFunc::StdPop),
            "stddev_samp" => Some(AggFunc::StdSamp),
            "variance" | "var_pop" => Some(AggFunc::VarPop),
            "var_samp" => Some(AggFunc::VarSamp),
            "group_concat" => Some(AggFunc::GroupConcat),
            "json_arrayagg" => Some(AggFunc::JsonArrayAgg),
            "json_objectagg" => Some(AggFunc::JsonObjectAgg),
            _ => None,
        };
        if !clauses.is_empty() && agg != Some(AggFunc::GroupConcat) {
            return Err(SqlError::unsupported(f));
        }
        if let Some(func) = agg {
            if !self.allow_agg {
                return Err(SqlError::new(
                    1111,
                    "HY000",
                    "Invalid use of group function",
                ));
            }
            if func == AggFunc::GroupConcat {
                if args.is_empty() {
                    return Err(wrong_args(&name));
                }
                let win_was = std::mem::replace(&mut self.allow_win, false);
                self.allow_agg = false;
                let r = self.group_concat(&args, clauses);
                self.allow_agg = true;
                self.allow_win = win_was;
                let (arg, spec) = r?;
                self.aggs.push(AggCall {
                    func,
                    arg: Some(arg),
                    distinct,
                    concat: Some(Box::new(spec)),
                });
                return Ok(Expr::Agg(self.aggs.len() - 1));
            }
            if distinct && matches!(func, AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg) {
                return Err(SqlError::syntax(format!(
                    "You have an error in your SQL syntax near '{f}': DISTINCT is not allowed here"
                )));
            }
            let arg = match (func, args.as_slice()) {
                (AggFunc::CountStar, []) => None,
                (AggFunc::JsonObjectAgg, [k, v]) => {
                    let win_was = std::mem::replace(&mut self.allow_win, false);
                    self.allow_agg = false;
                    let r = self.compile(k).and_then(|k| Ok((k, self.compile(v)?)));
                    self.allow_agg = true;
                    self.allow_win = win_was;
                    let (k, v) = r?;
                    // The key is its text (as JSON_OBJECT's keys are).
                    let k = Expr::Cast(Box::new(k), CastTo::Char);
                    Some(Expr::Func(
                        Func::Json(crate::json::JsonFn::Array),
                        vec![k, v],
                    ))
                }
                (AggFunc::JsonObjectAgg, _) => return Err(wrong_args(&name)),
                (_, [a]) => {
                    // An aggregate's argument cannot itself aggregate.
                    let win_was = std::mem::replace(&mut self.allow_win, false);
                    self.allow_agg = false;
                    let r = self.compile(a);
                    self.allow_agg = true;
                    self.allow_win = win_was;
                    let r = r?;
                    // Over enclosing queries' columns only, MySQL
                    // aggregates it in the outer query.
                    if reads_outer_only(&r) {
                        return Err(SqlError::unsupported(
                            "an aggregate of an enclosing query's columns in a subquery",
                        ));
                    }
                    Some(r)
                }
                _ => return Err(wrong_args(&name)),
            };
            self.aggs.push(AggCall {
                func,
                arg,
                distinct,
                concat: None,
            });
            return Ok(Expr::Agg(self.aggs.len() - 1));
        }
        if name == "mod" {
            // MOD(a, b) is a % b.
            let [a, b] = args.as_slice() else {
                return Err(wrong_args(&name));
            };
            let (a, b) = (self.compile(a)?, self.compile(b)?);
            return Ok(Expr::Binary(BinOp::Mod, Box::new(a), Box::new(b)));
        }
        if let Some(e) = self.date_function(&name, &args)? {
            return Ok(e);
        }
        let func = match name.as_str() {
            "concat" => Func::Concat,
            "length" | "octet_length" => Func::Length,
            "char_length" | "character_length" => Func::CharLength,
            "upper" | "ucase" => Func::Upper,
            "lower" | "lcase" => Func::Lower,
            "substring" | "substr" | "mid" => Func::Substring,
            "ifnull" => Func::IfNull,
            "coalesce" => Func::Coalesce,
            "if" => Func::If,
            "nullif" => Func::NullIf,
            "abs" => Func::Abs,
            "round" => Func::Round,
            "floor" => Func::Floor,
            "ceil" | "ceiling" => Func::Ceil,
            "database" | "schema" => Func::Database,
            "version" => Func::Version,
            "connection_id" => Func::ConnectionId,
            "sleep" => {
                self.waits = true;
                Func::Sleep
            }
            "last_insert_id" => Func::LastInsertId,
            "user" | "session_user" | "system_user" => Func::User,
            "current_user" => Func::CurrentUser,
            "now" | "current_timestamp" | "sysdate" | "localtimestamp" | "localtime" => Func::Now,
            "curdate" | "current_date" => Func::CurDate,
            "unix_timestamp" => Func::UnixTimestamp,
            "greatest" => Func::Greatest,
            "least" => Func::Least,
            "trim" => Func::Trim,
            "found_rows" => Func::FoundRows,
            "row_count" => Func::RowCount,
            "replace" => Func::Replace,
            "locate" => Func::Locate,
            "instr" => Func::Instr,
            "lpad" => Func::Lpad,
            "rpad" => Func::Rpad,
            "left" => Func::Left,
            "right" => Func::Right,
            "repeat" => Func::Repeat,
            "space" => Func::Space,
            "reverse" => Func::Reverse,
            "concat_ws" => Func::ConcatWs,
            "substring_index" => Func::SubstringIndex,
            "hex" => Func::Hex,
            "unhex" => Func::Unhex,
            "field" => Func::Field,
            "find_in_set" => Func::FindInSet,
            "elt" => Func::Elt,
            "ascii" => Func::Ascii,
            "ord" => Func::Ord,
            "ltrim" => Func::Ltrim,
            "rtrim" => Func::Rtrim,
            "strcmp" => Func::Strcmp,
            "insert" => Func::Insert,
            "md5" => Func::Md5,
            "sha1" | "sha" => Func::Sha1,
            "sha2" => Func::Sha2,
            "crc32" => Func::Crc32,
            "char" => Func::Char,
            "format" => Func::Format,
            "quote" => Func::Quote,
            "regexp_like" => Func::RegexpLike,
            "regexp_replace" => Func::RegexpReplace,
            "regexp_substr" => Func::RegexpSubstr,
            "regexp_instr" => Func::RegexpInstr,
            _ if crate::datefuncs::by_name(&name).is_some() => {
                Func::Dt(crate::datefuncs::by_name(&name).ok_or_else(|| wrong_args(&name))?)
            }
            _ if crate::mathfuncs::by_name(&name).is_some() => {
                Func::Math(crate::mathfuncs::by_name(&name).ok_or_else(|| wrong_args(&name))?)
            }
            _ if crate::json::by_name(&name).is_some() => {
                Func::Json(crate::json::by_name(&name).ok_or_else(|| wrong_args(&name))?)
            }
            _ if NOT_SUPPORTED.contains(&name.as_str()) => {
                return Err(SqlError::unsupported(format!(
                    "function {}",
                    name.to_uppercase()
                )))
            }
            _ => {
                return Err(SqlError::new(
                    1305,
                    "42000",
                    format!("FUNCTION {name} does not exist"),
                ))
            }
        };
        let args = args
            .into_iter()
            .enumerate()
            .map(|(i, a)| match (func, a) {
                // TRUE and FALSE given to a JSON function are JSON
                // booleans, as in MySQL (elsewhere they are 1 and 0).
                (Func::Json(_), ast::Expr::Value(v))
                    if matches!(v.value, ast::Value::Boolean(_)) =>
                {
                    Ok(Expr::Const(crate::json::boolean(matches!(
                        v.value,
                        ast::Value::Boolean(true)
                    ))))
                }
                // So is a comparison's truth value.
                (Func::Json(f), a) if crate::json::is_value_arg(f, i) => {
                    let x = self.compile(a)?;
                    Ok(if is_truth_valued(&x) {
                        Expr::Func(Func::Json(crate::json::JsonFn::Bool), vec![x])
                    } else {
                        x
                    })
                }
                _ => self.compile(a),
            })
            .collect::<SqlResult<Vec<_>>>()?;
        let arity_ok = match func {
            Func::Concat | Func::Coalesce | Func::Greatest | Func::Least => !args.is_empty(),
            Func::Length
            | Func::CharLength
            | Func::Upper
            | Func::Lower
            | Func::Abs
            | Func::Floor
            | Func::Ceil
            | Func::Trim
            | Func::Space
            | Func::Reverse
            | Func::Hex
            | Func::Unhex
            | Func::Ascii
            | Func::Ord
            | Func::Ltrim
            | Func::Rtrim
            | Func::Md5
            | Func::Sha1
            | Func::Crc32
            | Func::Quote => args.len() == 1,
            Func::Sha2 => args.len() == 2,
            Func::Format => (2..=3).contains(&args.len()),
            Func::Char => !args.is_empty(),
            Func::RegexpLike => (2..=3).contains(&args.len()),
            Func::RegexpReplace => (3..=6).contains(&args.len()),
            Func::RegexpSubstr => (2..=5).contains(&args.len()),
            Func::RegexpInstr => (2..=6).contains(&args.len()),
            Func::Locate => (2..=3).contains(&args.len()),
            Func::Instr
            | Func::Left
            | Func::Right
            | Func::Repeat
            | Func::FindInSet
            | Func::Strcmp
            | Func::TrimLeading
            | Func::TrimTrailing
            | Func::TrimBoth => args.len() == 2,
            Func::Replace | Func::Lpad | Func::Rpad | Func::SubstringIndex => args.len() == 3,
            Func::Insert => args.len() == 4,
            Func::ConcatWs | Func::Field | Func::Elt => args.len() >= 2,
            Func::Substring => (2..=3).contains(&args.len()),
            Func::IfNull | Func::NullIf => args.len() == 2,
            Func::If => args.len() == 3,
            Func::Round => (1..=2).contains(&args.len()),
            Func::LastInsertId => args.len() <= 1,
            Func::Sleep => args.len() == 1,
            Func::Now | Func::UnixTimestamp => args.len() <= 1,
            Func::Dt(d) => crate::datefuncs::arity_ok(d, args.len()),
            Func::Math(m) => crate::mathfuncs::arity_ok(m, args.len()),
            Func::Json(j) => crate::json::arity_ok(j, args.len()),
            _ => args.is_empty(),
        };
        if !arity_ok {
            return Err(wrong_args(&name));
        }
        let mut args = args;
        if matches!(
            func,
            Func::RegexpLike | Func::RegexpReplace | Func::RegexpSubstr | Func::RegexpInstr
        ) {
            let flags = self.regexp_flags(&args[0], &args[1]);
            args.push(flags);
        }
        Ok(Expr::Func(func, args))
    }
}

/// MySQL functions that need what CairnDB does not have (time zones,
/// periods): refused with 1235 rather than reported unknown.
const NOT_SUPPORTED: &[&str] = &[
    "convert_tz",
    "period_add",
    "period_diff",
    "get_format",
    "to_seconds",
];

impl Compiler<'_> {
    /// GROUP_CONCAT's value (the CONCAT of its arguments, NULL when one
    /// is) and its ORDER BY and SEPARATOR.
    fn group_concat(
        &mut self,
        args: &[&ast::Expr],
        clauses: &[ast::FunctionArgumentClause],
    ) -> SqlResult<(Expr, ConcatSpec)> {
        let mut parts = args
            .iter()
            .map(|a| self.compile(a))
            .collect::<SqlResult<Vec<_>>>()?;
        let arg = if parts.len() == 1 {
            parts.pop().unwrap_or(Expr::Const(Value::Null))
        } else {
            Expr::Func(Func::Concat, parts)
        };
        let mut spec = ConcatSpec {
            order: Vec::new(),
            sep: b",".to_vec(),
        };
        for c in clauses {
            match c {
                ast::FunctionArgumentClause::OrderBy(items) => {
                    for o in items {
                        if o.with_fill.is_some() || o.options.nulls_first.is_some() {
                            return Err(SqlError::unsupported(o));
                        }
                        // `ORDER BY 2`: a position among the arguments.
                        let key = match &o.expr {
                            ast::Expr::Value(v) => match &v.value {
                                ast::Value::Number(n, _) => {
                                    let k: usize = n.parse().unwrap_or(0);
                                    match args.get(k.wrapping_sub(1)) {
                                        Some(a) => self.compile(a)?,
                                        None => {
                                            return Err(SqlError::unknown_column(n, "order clause"))
                                        }
                                    }
                                }
                                _ => self.compile(&o.expr)?,
                            },
                            e => self.compile(e)?,
                        };
                        spec.order.push((key, o.options.asc == Some(false)));
                    }
                }
                ast::FunctionArgumentClause::Separator(v) => {
                    spec.sep = match v {
                        ast::Value::SingleQuotedString(t) | ast::Value::DoubleQuotedString(t) => {
                            t.clone().into_bytes()
                        }
                        other => return Err(SqlError::syntax(format!("SEPARATOR {other}"))),
                    }
                }
                other => return Err(SqlError::unsupported(other)),
            }
        }
        Ok((arg, spec))
    }

    /// The default match type of a regular expression over `x` and
    /// pattern `p`: case-sensitive ("c") when either is a column with a
    /// binary or `utf8mb4_bin` collation, else case-insensitive ("i").
    fn regexp_flags(&self, x: &Expr, p: &Expr) -> Expr {
        let sensitive = [x, p].iter().any(|e| match e {
            Expr::Column(i) => self.scope.cols.get(*i).is_some_and(|c| {
                c.ty.as_ref().is_some_and(|t| {
                    matches!(t, ColumnType::Str { .. })
                        && t.collation() != Collation::Utf8mb4GeneralCi
                })
            }),
            _ => false,
        });
        Expr::Const(Value::Str(if sensitive {
            b"c".to_vec()
        } else {
            b"i".to_vec()
        }))
    }

    /// The date functions whose arguments are not all expressions: an
    /// interval (DATE_ADD, DATE_SUB, ADDDATE, SUBDATE) or a unit
    /// (TIMESTAMPDIFF, TIMESTAMPADD). None for any other function.
    fn date_function(&mut self, name: &str, args: &[&ast::Expr]) -> SqlResult<Option<Expr>> {
        use crate::datefuncs::{DtFn, Unit};
        Ok(Some(match name {
            "date_add" | "date_sub" | "adddate" | "subdate" => {
                let [x, n] = args else {
                    return Err(wrong_args(name));
                };
                let neg = name == "date_sub" || name == "subdate";
                let (unit, n) = match n {
                    ast::Expr::Interval(iv) => (interval_unit(iv)?, &*iv.value),
                    // ADDDATE(x, n): n days.
                    _ if name == "adddate" || name == "subdate" => (Unit::Day, *n),
                    _ => return Err(SqlError::syntax(format!("{name} needs an INTERVAL"))),
                };
                Expr::Func(
                    Func::Dt(DtFn::AddInterval(unit, neg)),
                    vec![self.compile(x)?, self.compile(n)?],
                )
            }
            "timestampadd" | "timestampdiff" => {
                let [u, a, b] = args else {
                    return Err(wrong_args(name));
                };
                let unit = match u {
                    ast::Expr::Identifier(id) => Unit::parse(&id.value),
                    _ => None,
                }
                .filter(|u| u.is_simple())
                .ok_or_else(|| SqlError::syntax(format!("bad unit in {name}: {u}")))?;
                let (a, b) = (self.compile(a)?, self.compile(b)?);
                if name == "timestampadd" {
                    Expr::Func(Func::Dt(DtFn::AddInterval(unit, false)), vec![b, a])
                } else {
                    Expr::Func(Func::Dt(DtFn::TimestampDiff(unit)), vec![a, b])
                }
            }
            // A seeded RAND continues its sequence from row to row in
            // MySQL; expressions here keep no state between rows.
            "rand" if args.len() == 1 => return Err(SqlError::unsupported("RAND(seed)")),
            _ => return Ok(None),
        }))
    }
}

/// The unit of `INTERVAL n unit`.
pub(crate) fn interval_unit(iv: &ast::Interval) -> SqlResult<crate::datefuncs::Unit> {
    if iv.last_field.is_some() {
        return Err(SqlError::syntax(format!("unexpected INTERVAL {iv}")));
    }
    match &iv.leading_field {
        Some(f) => field_unit(f),
        None => Err(SqlError::syntax("INTERVAL without a unit")),
    }
}

/// A parser date-time field as a MySQL unit.
fn field_unit(f: &ast::DateTimeField) -> SqlResult<crate::datefuncs::Unit> {
    use ast::DateTimeField as F;
    let name = match f {
        F::Custom(id) => id.value.clone(),
        F::Week(None) => "WEEK".into(),
        other => other.to_string(),
    };
    crate::datefuncs::Unit::parse(&name)
        .ok_or_else(|| SqlError::syntax(format!("unknown interval unit {name}")))
}

/// `parts` joined by the associative `op` into a tree of logarithmic
/// depth, in their order (None of `parts` is dropped; an empty list is
/// NULL).
pub(crate) fn balanced(op: BinOp, mut parts: Vec<Expr>) -> Expr {
    match parts.len() {
        0 => Expr::Const(Value::Null),
        1 => parts.pop().unwrap_or(Expr::Const(Value::Null)),
        n => {
            let right = parts.split_off(n / 2);
            Expr::Binary(
                op,
                Box::new(balanced(op, parts)),
                Box::new(balanced(op, right)),
            )
        }
    }
}

/// MySQL's 1241: a row where a value (or a row of another width) was
/// expected.
pub(super) fn operand_columns(n: usize) -> SqlError {
    SqlError::new(
        1241,
        "21000",
        format!("Operand should contain {n} column(s)"),
    )
}

/// `e` without the parentheses around it.
fn unnest(mut e: &ast::Expr) -> &ast::Expr {
    while let ast::Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

/// The items of a row constructor: `(a, b)` or `ROW(a, b)` (possibly in
/// parentheses); None for anything else.
fn row_items(e: &ast::Expr) -> Option<Vec<&ast::Expr>> {
    match e {
        ast::Expr::Nested(inner) => row_items(inner),
        ast::Expr::Tuple(items) => Some(items.iter().collect()),
        ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("row") => match &f.args {
            ast::FunctionArguments::List(l) => l
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Some(x),
                    _ => None,
                })
                .collect(),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `e` gives a SQL truth value (a comparison, a logical
/// operator, IS NULL, IN, BETWEEN, LIKE, EXISTS): MySQL's JSON functions
/// take those as JSON booleans.
fn is_truth_valued(e: &Expr) -> bool {
    match e {
        Expr::Binary(op, ..) => {
            op.is_comparison() || matches!(op, BinOp::And | BinOp::Or | BinOp::Xor)
        }
        Expr::Not(_)
        | Expr::IsNull(..)
        | Expr::InList(..)
        | Expr::Between(..)
        | Expr::Like(..)
        | Expr::InSet(..)
        | Expr::InRows(..) => true,
        Expr::Subquery(_, sq) => sq.test != SubTest::Scalar,
        _ => false,
    }
}

pub(crate) fn wrong_args(name: &str) -> SqlError {
    SqlError::new(
        1582,
        "42000",
        format!("Incorrect parameter count in the call to native function '{name}'"),
    )
}

fn cast_target(dt: &ast::DataType) -> SqlResult<CastTo> {
    use ast::DataType as D;
    Ok(match dt {
        D::Signed | D::SignedInteger | D::Int(_) | D::Integer(_) | D::BigInt(_) => CastTo::Signed,
        D::Unsigned | D::UnsignedInteger => CastTo::Unsigned,
        D::Char(_) | D::Binary(_) | D::Varchar(_) | D::Text | D::String(_) => CastTo::Char,
        D::Decimal(info) | D::Numeric(info) => CastTo::Decimal(match info {
            ast::ExactNumberInfo::PrecisionAndScale(_, s) => (*s).clamp(0, 30) as u8,
            _ => 0,
        }),
        D::Double(_) | D::Float(_) | D::Real | D::DoublePrecision => CastTo::Double,
        D::Time(fsp, ast::TimezoneInfo::None) => CastTo::Time(fsp.unwrap_or(0).min(6) as u8),
        D::JSON => CastTo::Json,
        D::Date => CastTo::Date,
        D::Datetime(fsp) => CastTo::DateTime(fsp.unwrap_or(0).min(6) as u8),
        other => return Err(SqlError::unsupported(format!("CAST AS {other}"))),
    })
}

/// Parses a numeric literal: integers as Int (UInt above i64::MAX),
/// numbers with a point as Decimal, with an exponent as Double.
pub fn parse_number(n: &str) -> SqlResult<Value> {
    if n.contains(['e', 'E']) {
        return n
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| SqlError::syntax(format!("bad number {n}")));
    }
    if let Some((int, frac)) = n.split_once('.') {
        let scale = frac.len();
        if scale > 30 {
            return n
                .parse::<f64>()
                .map(Value::Double)
                .map_err(|_| SqlError::syntax(format!("bad number {n}")));
        }
        let digits: String = format!("{int}{frac}");
        return match digits.parse::<i128>() {
            Ok(d) => Ok(Value::Decimal(d, scale as u8)),
            Err(_) => n
                .parse::<f64>()
                .map(Value::Double)
                .map_err(|_| SqlError::syntax(format!("bad number {n}"))),
        };
    }
    if let Ok(i) = n.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(u) = n.parse::<u64>() {
        return Ok(Value::UInt(u));
    }
    match n.parse::<i128>() {
        Ok(d) => Ok(Value::Decimal(d, 0)),
        Err(_) => n
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| SqlError::syntax(format!("bad number {n}"))),
    }
}

fn parse_hex(h: &str) -> SqlResult<Vec<u8>> {
    let h = if h.len() % 2 == 1 {
        format!("0{h}")
    } else {
        h.to_string()
    };
    (0..h.len())
        .step_by(2)
        .map(|i| {
            h.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
                .ok_or_else(|| SqlError::syntax(format!("bad hex literal {h}")))
        })
        .collect()
}

/// The character of `LIKE .. ESCAPE 'c'`: a backslash without the
/// clause, None after `ESCAPE ''`; more than one character is MySQL's
/// error 1210.
fn like_escape_char(v: Option<&ast::Value>) -> SqlResult<Option<char>> {
    let bad = || SqlError::new(1210, "HY000", "Incorrect arguments to ESCAPE");
    match v {
        None => Ok(Some('\\')),
        Some(ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s)) => {
            let mut it = s.chars();
            match (it.next(), it.next()) {
                (None, _) => Ok(None),
                (Some(c), None) => Ok(Some(c)),
                _ => Err(bad()),
            }
        }
        Some(_) => Err(bad()),
    }
}

/// The bytes of a bit-value literal `b'0101'`: big-endian, as many as
/// the digits need (`b''` is the empty string).
pub(crate) fn parse_bits(b: &str) -> SqlResult<Vec<u8>> {
    if !b.bytes().all(|c| c == b'0' || c == b'1') {
        return Err(SqlError::syntax(format!("b'{b}'")));
    }
    let mut out = vec![0u8; b.len().div_ceil(8)];
    for (i, c) in b.bytes().rev().enumerate() {
        if c == b'1' {
            let n = out.len();
            if let Some(byte) = out.get_mut(n - 1 - i / 8) {
                *byte |= 1 << (i % 8);
            }
        }
    }
    Ok(out)
}
