//! The SQL dialect CairnDB parses with: `sqlparser`'s MySQL dialect with
//! MySQL's operator precedence where that dialect departs from it.
//!
//! `sqlparser`'s MySQL dialect parses the right side of `DIV` as a whole
//! expression (so `20 DIV 96 + 90` is `20 DIV (96 + 90)`), and panics
//! when that side is missing; it has no infix `MOD`, no `<<`, `>>` or
//! unary `~`; it ranks `^` below `+` and `XOR` above `AND`; and it reads
//! the operand of `!` at the rank of `NOT` (`!1 + 1` as `!(1 + 1)`).
//! MySQL's order, tightest first: unary `-`, `+`, `~`, `!`; `^`; `*`,
//! `/`, `DIV`, `%`, `MOD`; `+`, `-`; `<<`, `>>`; `&`; `|`; comparisons;
//! `NOT`; `AND`; `XOR`; `OR`. Everything else is delegated to
//! [`MySqlDialect`], and [`Dialect::dialect`] reports that type, so the
//! parser's MySQL-specific paths stay on.

use std::any::TypeId;

use sqlparser::ast::{
    BinaryOperator, DateTimeField, Expr, Ident, Interval, Statement, UnaryOperator,
};
use sqlparser::dialect::{Dialect, MySqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// Precedence of `^` (above `*`).
const PREC_CARET: u8 = 45;
/// Precedence of `<<` and `>>` (between `+` and `&`).
const PREC_SHIFT: u8 = 25;
/// Precedence of XOR (between AND and OR).
const PREC_XOR: u8 = 7;
/// Precedence of the operand of unary `-`, `+`, `~` and `!` (above `^`).
const PREC_UNARY: u8 = 50;

/// MySQL's dialect with MySQL's operator precedence (see the module
/// documentation).
#[derive(Debug, Default, Clone, Copy)]
pub struct CairnDialect;

const MYSQL: MySqlDialect = MySqlDialect {};

/// `INTERVAL expr unit`, MySQL's form: any unit word, the composite
/// ones (`DAY_HOUR`, `YEAR_MONTH`, ...) included, which the parser's own
/// interval syntax does not know. The unit is kept as a custom field and
/// checked when the expression is compiled.
fn parse_interval(parser: &mut Parser) -> Result<Expr, ParserError> {
    parser.next_token();
    let value = parser.parse_expr()?;
    let unit = parser.next_token();
    match unit.token {
        Token::Word(w) if w.quote_style.is_none() => Ok(Expr::Interval(Interval {
            value: Box::new(value),
            leading_field: Some(DateTimeField::Custom(Ident::new(w.value))),
            leading_precision: None,
            last_field: None,
            fractional_seconds_precision: None,
        })),
        other => Err(ParserError::ParserError(format!(
            "INTERVAL requires a unit after the value, found {other}"
        ))),
    }
}

fn word_is(t: &Token, kw: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == kw && w.quote_style.is_none())
}

impl Dialect for CairnDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<MySqlDialect>()
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        let t = &parser.peek_token_ref().token;
        if word_is(t, Keyword::DIV) || word_is(t, Keyword::MOD) {
            return Some(Ok(self.prec_value(Precedence::MulDivModOp)));
        }
        if word_is(t, Keyword::XOR) {
            return Some(Ok(PREC_XOR));
        }
        match t {
            Token::Caret => Some(Ok(PREC_CARET)),
            Token::ShiftLeft | Token::ShiftRight => Some(Ok(PREC_SHIFT)),
            // `col -> 'path'` binds as tightly as a column reference:
            // `j->'$.a' = 1` compares the extracted value.
            Token::Arrow | Token::LongArrow => Some(Ok(self.prec_value(Precedence::DoubleColon))),
            _ => None,
        }
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        let t = parser.peek_token_ref().token.clone();
        let op = if word_is(&t, Keyword::DIV) {
            BinaryOperator::MyIntegerDivide
        } else if word_is(&t, Keyword::MOD) {
            BinaryOperator::Modulo
        } else {
            match t {
                Token::ShiftLeft => BinaryOperator::PGBitwiseShiftLeft,
                Token::ShiftRight => BinaryOperator::PGBitwiseShiftRight,
                _ => return None,
            }
        };
        parser.next_token();
        Some(
            parser
                .parse_subexpr(precedence)
                .map(|right| Expr::BinaryOp {
                    left: Box::new(expr.clone()),
                    op,
                    right: Box::new(right),
                }),
        )
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if word_is(&parser.peek_token_ref().token, Keyword::INTERVAL) {
            return Some(parse_interval(parser));
        }
        let op = match parser.peek_token_ref().token {
            Token::Tilde => UnaryOperator::PGBitwiseNot,
            Token::Minus => UnaryOperator::Minus,
            Token::Plus => UnaryOperator::Plus,
            Token::ExclamationMark => UnaryOperator::BangNot,
            _ => return None,
        };
        parser.next_token();
        Some(parser.parse_subexpr(PREC_UNARY).map(|e| Expr::UnaryOp {
            op,
            expr: Box::new(e),
        }))
    }

    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        MYSQL.parse_statement(parser)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        MYSQL.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        MYSQL.is_identifier_part(ch)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        MYSQL.is_delimited_identifier_start(ch)
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        MYSQL.identifier_quote_style(identifier)
    }

    fn supports_string_literal_backslash_escape(&self) -> bool {
        MYSQL.supports_string_literal_backslash_escape()
    }

    fn supports_string_literal_concatenation(&self) -> bool {
        MYSQL.supports_string_literal_concatenation()
    }

    fn ignores_wildcard_escapes(&self) -> bool {
        MYSQL.ignores_wildcard_escapes()
    }

    fn supports_numeric_prefix(&self) -> bool {
        MYSQL.supports_numeric_prefix()
    }

    fn require_interval_qualifier(&self) -> bool {
        MYSQL.require_interval_qualifier()
    }

    fn supports_limit_comma(&self) -> bool {
        MYSQL.supports_limit_comma()
    }

    fn supports_create_table_select(&self) -> bool {
        MYSQL.supports_create_table_select()
    }

    fn supports_insert_set(&self) -> bool {
        MYSQL.supports_insert_set()
    }

    fn supports_user_host_grantee(&self) -> bool {
        MYSQL.supports_user_host_grantee()
    }

    fn is_table_factor_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        MYSQL.is_table_factor_alias(explicit, kw, parser)
    }

    fn supports_table_hints(&self) -> bool {
        MYSQL.supports_table_hints()
    }

    fn requires_single_line_comment_whitespace(&self) -> bool {
        MYSQL.requires_single_line_comment_whitespace()
    }

    fn supports_match_against(&self) -> bool {
        MYSQL.supports_match_against()
    }

    fn supports_set_names(&self) -> bool {
        MYSQL.supports_set_names()
    }

    fn supports_comma_separated_set_assignments(&self) -> bool {
        MYSQL.supports_comma_separated_set_assignments()
    }

    fn supports_data_type_signed_suffix(&self) -> bool {
        MYSQL.supports_data_type_signed_suffix()
    }

    fn allow_extract_custom(&self) -> bool {
        // EXTRACT(DAY_HOUR FROM x) and the other composite units.
        true
    }

    fn supports_cross_join_constraint(&self) -> bool {
        MYSQL.supports_cross_join_constraint()
    }
}
