//! Result columns: the name a select-list item is shown under and the
//! protocol type (`OutType`) of a compiled expression, from its
//! columns, literals, functions and aggregates, as MySQL 8.0 types them.
//!
//! Pure: no locks, no I/O.

use super::*;

pub(super) fn column_info_for_slot(sc: &ScopeColumn, label: &str) -> ColumnInfo {
    match &sc.ty {
        Some(ty) => {
            let mut ci = ColumnInfo::of_column(ty, label);
            ci.table = sc.table.clone();
            ci.org_table = sc.table.clone();
            ci.org_name = sc.name.clone();
            if let Some(o) = &sc.origin {
                ci.schema = o.schema.clone();
                ci.org_table = o.table.clone();
                ci.not_null = o.not_null;
                ci.primary_key = o.primary_key;
                ci.auto_increment = o.auto_increment;
                ci.unique_key = o.unique_key;
                ci.multiple_key = o.multiple_key;
                if let Some(w) = o.display_width {
                    ci.length = w;
                }
            }
            ci
        }
        None => ColumnInfo::computed(label, OutType::VarString),
    }
}

/// The label MySQL gives an unaliased select item.
pub(super) fn label_of(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => i.value.clone(),
        // `@@session.x` is labelled as written; `t.c` is `c`.
        ast::Expr::CompoundIdentifier(p)
            if p.first()
                .is_some_and(|i| i.quote_style.is_none() && i.value.starts_with("@@")) =>
        {
            p.iter()
                .map(|i| i.value.as_str())
                .collect::<Vec<_>>()
                .join(".")
        }
        ast::Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()).unwrap_or_default(),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// Result metadata of an output expression.
pub(super) fn info_for_expr(x: &Expr, label: &str, scope: &Scope, aggs: &[AggCall]) -> ColumnInfo {
    if let Expr::Column(i) = x {
        if let Some(sc) = scope.cols.get(*i) {
            let mut ci = column_info_for_slot(sc, label);
            ci.name = label.to_string();
            return ci;
        }
    }
    let mut ci = ColumnInfo::computed(label, out_type(x, scope, aggs));
    match x {
        // BIGINT UNSIGNED, as MySQL sends these.
        Expr::Cast(_, CastTo::Unsigned) => ci.unsigned = true,
        Expr::Binary(
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr,
            ..,
        ) => ci.unsigned = true,
        Expr::SysVar(n) if matches!(crate::vars::default_of(n), Some(Value::UInt(_))) => {
            ci.unsigned = true
        }
        Expr::Cast(_, CastTo::Decimal(scale)) => ci.decimals = *scale,
        Expr::Cast(_, CastTo::Time(fsp) | CastTo::DateTime(fsp)) => ci.decimals = *fsp,
        Expr::Agg(i)
            if aggs.get(*i).is_some_and(|a| {
                matches!(a.func, AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor)
            }) =>
        {
            ci.unsigned = true
        }
        _ => {}
    }
    ci
}

/// The type an expression's values are sent as.
pub(crate) fn out_type(x: &Expr, scope: &Scope, aggs: &[AggCall]) -> OutType {
    match x {
        Expr::Const(v) => match v {
            Value::Null => OutType::Null,
            Value::Int(_) | Value::UInt(_) => OutType::LongLong,
            Value::Double(_) => OutType::Double,
            Value::Decimal(..) => OutType::NewDecimal,
            Value::Str(_) => OutType::VarString,
            Value::Date(_) => OutType::Date,
            Value::DateTime(_) => OutType::DateTime,
            Value::Time(_) => OutType::Time,
            Value::Member(..) => OutType::String,
            Value::Json(_) => OutType::Json,
        },
        Expr::Column(i) => scope
            .cols
            .get(*i)
            .and_then(|c| c.ty.as_ref())
            .map_or(OutType::VarString, |t| ColumnInfo::of_column(t, "").ty),
        Expr::Agg(i) => match aggs.get(*i) {
            Some(a) => match a.func {
                AggFunc::Count | AggFunc::CountStar => OutType::LongLong,
                AggFunc::Avg => OutType::NewDecimal,
                AggFunc::Sum => match a.arg.as_ref().map(|e| out_type(e, scope, aggs)) {
                    Some(OutType::Double | OutType::Float) => OutType::Double,
                    _ => OutType::NewDecimal,
                },
                AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor => OutType::LongLong,
                AggFunc::StdPop | AggFunc::StdSamp | AggFunc::VarPop | AggFunc::VarSamp => {
                    OutType::Double
                }
                AggFunc::GroupConcat => OutType::Blob,
                AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg => OutType::Json,
                AggFunc::Min | AggFunc::Max => a
                    .arg
                    .as_ref()
                    .map_or(OutType::Null, |e| out_type(e, scope, aggs)),
            },
            None => OutType::Null,
        },
        Expr::Not(_) | Expr::IsNull(..) | Expr::InList(..) | Expr::Between(..) | Expr::Like(..) => {
            OutType::LongLong
        }
        Expr::Binary(op, l, r) => match op {
            BinOp::Eq
            | BinOp::NullSafeEq
            | BinOp::Ne
            | BinOp::Lt
            | BinOp::Le
            | BinOp::Gt
            | BinOp::Ge
            | BinOp::And
            | BinOp::Or
            | BinOp::Xor
            | BinOp::BitAnd
            | BinOp::BitOr
            | BinOp::BitXor
            | BinOp::Shl
            | BinOp::Shr
            | BinOp::IntDiv => OutType::LongLong,
            BinOp::Div => match (out_type(l, scope, aggs), out_type(r, scope, aggs)) {
                (OutType::Double | OutType::Float, _) | (_, OutType::Double | OutType::Float) => {
                    OutType::Double
                }
                _ => OutType::NewDecimal,
            },
            _ => match (out_type(l, scope, aggs), out_type(r, scope, aggs)) {
                (OutType::Double | OutType::Float | OutType::VarString, _)
                | (_, OutType::Double | OutType::Float | OutType::VarString) => OutType::Double,
                (OutType::NewDecimal, _) | (_, OutType::NewDecimal) => OutType::NewDecimal,
                _ => OutType::LongLong,
            },
        },
        Expr::Neg(e) => out_type(e, scope, aggs),
        Expr::Func(f, args) => func_type(*f, args, scope, aggs),
        Expr::Case(_, whens, els) => merged_type(
            whens
                .iter()
                .map(|(_, then)| then)
                .chain(els.as_deref())
                .map(|e| out_type(e, scope, aggs)),
        ),
        Expr::Cast(_, to) => match to {
            CastTo::Signed | CastTo::Unsigned => OutType::LongLong,
            CastTo::Char => OutType::VarString,
            CastTo::Decimal(_) => OutType::NewDecimal,
            CastTo::Double => OutType::Double,
            CastTo::Time(_) => OutType::Time,
            CastTo::Json => OutType::Json,
            CastTo::Date => OutType::Date,
            CastTo::DateTime(_) => OutType::DateTime,
        },
        Expr::SysVar(name) => match crate::vars::default_of(name) {
            Some(Value::Int(_) | Value::UInt(_)) => OutType::LongLong,
            Some(_) => OutType::VarString,
            None => match name.as_str() {
                "last_insert_id" | "identity" | "in_transaction" => OutType::LongLong,
                _ => OutType::VarString,
            },
        },
        Expr::Param(_) | Expr::UserVar(_) | Expr::Outer(..) => OutType::VarString,
        Expr::Subquery(None, sq) if sq.test == crate::expr::SubTest::Scalar => {
            sq.plan.columns.first().map_or(OutType::Null, |c| c.ty)
        }
        Expr::Subquery(..) | Expr::InSet(..) | Expr::InRows(..) | Expr::Row(_) => OutType::LongLong,
    }
}

/// The type of a scalar function's result, as MySQL reports it.
fn func_type(f: Func, args: &[Expr], scope: &Scope, aggs: &[AggCall]) -> OutType {
    let arg = |i: usize| {
        args.get(i)
            .map_or(OutType::Null, |e| out_type(e, scope, aggs))
    };
    // A number function's type from its argument's: integers stay
    // integers (BIGINT), strings are read as doubles.
    let numeric = |t: OutType| match t {
        OutType::Tiny | OutType::Short | OutType::Int24 | OutType::Long | OutType::LongLong => {
            OutType::LongLong
        }
        OutType::NewDecimal => OutType::NewDecimal,
        OutType::Null => OutType::Null,
        _ => OutType::Double,
    };
    match f {
        Func::Length
        | Func::CharLength
        | Func::ConnectionId
        | Func::Sleep
        | Func::LastInsertId
        | Func::FoundRows
        | Func::RowCount
        | Func::UnixTimestamp
        | Func::Locate
        | Func::Instr
        | Func::Field
        | Func::FindInSet
        | Func::Ascii
        | Func::Ord
        | Func::Strcmp
        | Func::Crc32
        | Func::RegexpLike
        | Func::RegexpInstr => OutType::LongLong,
        Func::Md5
        | Func::Sha1
        | Func::Sha2
        | Func::Char
        | Func::Format
        | Func::Quote
        | Func::RegexpReplace
        | Func::RegexpSubstr => OutType::VarString,
        Func::Replace
        | Func::Lpad
        | Func::Rpad
        | Func::Left
        | Func::Right
        | Func::Repeat
        | Func::Space
        | Func::Reverse
        | Func::ConcatWs
        | Func::SubstringIndex
        | Func::Hex
        | Func::Unhex
        | Func::Elt
        | Func::Ltrim
        | Func::Rtrim
        | Func::Insert
        | Func::TrimLeading
        | Func::TrimTrailing
        | Func::TrimBoth => OutType::VarString,
        Func::Concat
        | Func::Upper
        | Func::Lower
        | Func::Substring
        | Func::Trim
        | Func::Database
        | Func::Version
        | Func::User
        | Func::CurrentUser => OutType::VarString,
        Func::Now => OutType::DateTime,
        Func::Dt(d) => {
            let types: Vec<OutType> = args.iter().map(|e| out_type(e, scope, aggs)).collect();
            let fmt = match args.get(1) {
                Some(Expr::Const(Value::Str(f))) => Some(f.as_slice()),
                _ => None,
            };
            crate::datefuncs::out_type(d, &types, fmt)
        }
        Func::Math(m) => crate::mathfuncs::out_type(m, &|i| arg(i)),
        Func::Json(j) => crate::json::out_type(j),
        Func::CurDate => OutType::Date,
        Func::Abs | Func::Round => numeric(arg(0)),
        Func::Floor | Func::Ceil => match numeric(arg(0)) {
            OutType::NewDecimal => OutType::LongLong,
            t => t,
        },
        Func::NullIf => arg(0),
        Func::If => merged_type([arg(1), arg(2)].into_iter()),
        Func::IfNull | Func::Coalesce | Func::Greatest | Func::Least => {
            merged_type(args.iter().map(|e| out_type(e, scope, aggs)))
        }
    }
}

/// The type of a result that is one of several expressions' (IF, IFNULL,
/// COALESCE, CASE, GREATEST): MySQL's aggregation of types, simplified.
/// NULLs do not count; a string or a date mixed with anything else is a
/// string; integers widen to DECIMAL, DECIMAL to DOUBLE.
pub(super) fn merged_type(types: impl Iterator<Item = OutType>) -> OutType {
    let mut acc = OutType::Null;
    for t in types {
        let t = match t {
            OutType::Tiny | OutType::Short | OutType::Int24 | OutType::Long => OutType::LongLong,
            OutType::Float => OutType::Double,
            OutType::String | OutType::Blob => OutType::VarString,
            OutType::Timestamp => OutType::DateTime,
            other => other,
        };
        acc = match (acc, t) {
            (OutType::Null, t) | (t, OutType::Null) => t,
            (a, b) if a == b => a,
            (OutType::Date, OutType::DateTime) | (OutType::DateTime, OutType::Date) => {
                OutType::DateTime
            }
            // JSON with anything else is its text.
            (OutType::VarString | OutType::Json, _)
            | (_, OutType::VarString | OutType::Json)
            | (OutType::Date | OutType::DateTime, _)
            | (_, OutType::Date | OutType::DateTime) => OutType::VarString,
            (OutType::Double, _) | (_, OutType::Double) => OutType::Double,
            (OutType::NewDecimal, _) | (_, OutType::NewDecimal) => OutType::NewDecimal,
            _ => OutType::LongLong,
        };
    }
    acc
}
