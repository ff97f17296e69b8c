//! Parsing one statement with `sqlparser` in CairnDB's dialect: the
//! parser with its recursion limit, its errors as MySQL reports them
//! (1064, 1436), and the rewrites of forms sqlparser does not read
//! (MySQL's `/*!80016 ... */` comments, an UPDATE's ORDER BY, an
//! UPDATE or DELETE over comma joins, comma-separated table references
//! inside parentheses).

use sqlparser::ast::{self, Statement};
use sqlparser::parser::Parser;

use crate::dialect::CairnDialect;
use crate::error::{SqlError, SqlResult};

/// How deep the parser may recurse (parentheses, nested functions and
/// CASE, prefix operators); deeper is error 1436. The parser grows its
/// own stack as it recurses (`sqlparser`'s `recursive-protection`).
const PARSER_RECURSION_LIMIT: usize = 256;

/// A MySQL-dialect parser over `text`.
pub(crate) fn parser(text: &str) -> Result<Parser<'static>, sqlparser::parser::ParserError> {
    Parser::new(&CairnDialect)
        .with_recursion_limit(PARSER_RECURSION_LIMIT)
        .try_with_sql(text)
}

/// A parser error as MySQL reports it: 1436 past the nesting limit,
/// else 1064.
pub(crate) fn parse_error(e: sqlparser::parser::ParserError) -> SqlError {
    match e {
        sqlparser::parser::ParserError::RecursionLimitExceeded => SqlError::new(
            1436,
            "HY000",
            format!(
                "Thread stack overrun: the statement nests expressions more than \
                 {PARSER_RECURSION_LIMIT} levels deep"
            ),
        ),
        e => SqlError::syntax(format!("You have an error in your SQL syntax: {e}")),
    }
}

/// Parses one statement with the MySQL dialect, with the ORDER BY of a
/// single-table UPDATE (which sqlparser does not parse) apart.
pub(crate) fn parse_statement(text: &str) -> SqlResult<(Statement, Vec<ast::OrderByExpr>)> {
    // SHOW CREATE TABLE prints `/*!80016 NOT ENFORCED */` after a CHECK,
    // as MySQL does: its content is read (the parser skips comments).
    let expanded;
    let text = if text.contains("/*!80016 ") {
        expanded = expand_80016(text);
        expanded.as_str()
    } else {
        text
    };
    // Only UPDATE and DELETE need the rewrites below: others are parsed
    // as they are, without tokenizing them first.
    let Some(mut dml) = DmlTokens::of(text) else {
        return Ok((parse_one(text)?, Vec::new()));
    };
    let joined;
    let text = match update_comma_joins(&dml) {
        Some(t) => {
            joined = t;
            match DmlTokens::of(&joined) {
                Some(d) => dml = d,
                None => return Ok((parse_one(&joined)?, Vec::new())),
            }
            joined.as_str()
        }
        None => text,
    };
    let Some((update, order)) = split_update_order_by(&dml) else {
        return Ok((parse_one(text)?, Vec::new()));
    };
    let st = parse_one(&update)?;
    let q = parse_one(&format!("SELECT 1 ORDER BY {order}"))?;
    let list = match q {
        Statement::Query(q) => match q.order_by.map(|o| o.kind) {
            Some(ast::OrderByKind::Expressions(list)) => list,
            _ => return Err(SqlError::syntax(format!("bad ORDER BY of UPDATE: {order}"))),
        },
        _ => return Err(SqlError::syntax(format!("bad ORDER BY of UPDATE: {order}"))),
    };
    Ok((st, list))
}

/// `text` with each `/*!80016 ... */` replaced by its content.
pub(crate) fn expand_80016(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("/*!80016 ") {
        out.push_str(rest.get(..i).unwrap_or_default());
        let after = rest.get(i + 9..).unwrap_or_default();
        match after.find("*/") {
            Some(e) => {
                out.push_str(after.get(..e).unwrap_or_default());
                rest = after.get(e + 2..).unwrap_or_default();
            }
            None => {
                out.push_str(rest.get(i..).unwrap_or_default());
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The tokens of an UPDATE or DELETE statement, for the rewrites of
/// forms sqlparser does not read.
struct DmlTokens {
    tokens: Vec<sqlparser::tokenizer::Token>,
    /// Where its first word (UPDATE or DELETE) is.
    first: usize,
    /// UPDATE (else DELETE).
    update: bool,
}

impl DmlTokens {
    /// `text` tokenized when it is an UPDATE or DELETE; None for any
    /// other statement, told apart by its first bytes (a leading
    /// comment is tokenized to look past it).
    fn of(text: &str) -> Option<DmlTokens> {
        use sqlparser::tokenizer::{Token, Tokenizer};
        let head = text.trim_start().as_bytes();
        let starts = |w: &[u8]| {
            head.get(..w.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(w))
        };
        if ![&b"UPDATE"[..], b"DELETE", b"/*", b"--", b"#"]
            .iter()
            .any(|w| starts(w))
        {
            return None;
        }
        let tokens = Tokenizer::new(&CairnDialect, text).tokenize().ok()?;
        let first = tokens
            .iter()
            .position(|t| !matches!(t, Token::Whitespace(_)))?;
        let update = is_word(tokens.get(first)?, "UPDATE");
        if !update && !is_word(tokens.get(first)?, "DELETE") {
            return None;
        }
        Some(DmlTokens {
            tokens,
            first,
            update,
        })
    }
}

/// Whether `t` is the unquoted keyword `kw`.
fn is_word(t: &sqlparser::tokenizer::Token, kw: &str) -> bool {
    matches!(t, sqlparser::tokenizer::Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(kw))
}

/// MySQL's multi-table forms that sqlparser does not read, rewritten:
/// `UPDATE t1, t2 SET ...` as `UPDATE t1 CROSS JOIN t2 SET ...` (each
/// comma between UPDATE and SET outside parentheses), and `DELETE t1.*,
/// t2.* FROM ...` as `DELETE t1, t2 FROM ...`; None for any other
/// statement.
fn update_comma_joins(dml: &DmlTokens) -> Option<String> {
    use sqlparser::tokenizer::Token;
    let (tokens, first, update) = (&dml.tokens, dml.first, dml.update);
    let mut depth = 0i32;
    // Token positions to replace: (position, replacement).
    let mut edits: Vec<(usize, &str)> = Vec::new();
    for (i, t) in tokens.iter().enumerate().skip(first + 1) {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Comma if update && depth == 0 => edits.push((i, " CROSS JOIN ")),
            Token::Period if !update && matches!(tokens.get(i + 1), Some(Token::Mul)) => {
                edits.push((i, ""));
                edits.push((i + 1, ""));
            }
            _ if depth == 0 && is_word(t, if update { "SET" } else { "FROM" }) => break,
            _ => {}
        }
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (i, t) in tokens.iter().enumerate() {
        match edits.iter().find(|(at, _)| *at == i) {
            Some((_, with)) => out.push_str(with),
            None => out.push_str(&t.to_string()),
        }
    }
    Some(out)
}

/// `UPDATE .. ORDER BY o [LIMIT n]` split into `UPDATE .. [LIMIT n]` and
/// `o`; None for any other statement.
fn split_update_order_by(dml: &DmlTokens) -> Option<(String, String)> {
    use sqlparser::tokenizer::Token;
    let tokens = &dml.tokens;
    if !dml.update {
        return None;
    }
    let word = is_word;
    let mut depth = 0i32;
    let mut order_at = None;
    let mut limit_at = None;
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth != 0 => {}
            _ if order_at.is_none() && word(t, "ORDER") => {
                let next = tokens
                    .get(i + 1..)?
                    .iter()
                    .position(|t| !matches!(t, Token::Whitespace(_)))?;
                if word(tokens.get(i + 1 + next)?, "BY") {
                    order_at = Some((i, i + 2 + next));
                }
            }
            _ if word(t, "LIMIT") => {
                // LIMIT before ORDER BY is left to the parser's 1064.
                order_at?;
                limit_at = Some(i);
                break;
            }
            _ => {}
        }
    }
    let (order, by_end) = order_at?;
    let end = limit_at.unwrap_or(tokens.len());
    let join = |ts: &[Token]| ts.iter().map(|t| t.to_string()).collect::<String>();
    let mut update = join(tokens.get(..order)?);
    update.push(' ');
    update.push_str(&join(tokens.get(end..)?));
    Some((update, join(tokens.get(by_end..end)?)))
}

/// Parses one statement with the MySQL dialect. A text sqlparser
/// refuses is tried once more with MySQL's comma-separated nests
/// (`a LEFT JOIN (b, c) ON ...`) written as CROSS JOINs; if that fails
/// too, the first error is the answer.
pub(crate) fn parse_one(text: &str) -> SqlResult<Statement> {
    match parse_exactly(text) {
        Ok(st) => Ok(st),
        Err(e) if e.code == 1064 => match nest_commas(text) {
            Some(t) => parse_exactly(&t).map_err(|_| e),
            None => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// What opens a parenthesis in [`nest_commas`].
#[derive(Clone, Copy, PartialEq)]
enum Paren {
    /// A list of table references (`FROM (b, c)`, `JOIN (b, c)`).
    Nest,
    /// Anything else: a subquery, an argument list, a row.
    Other,
}

/// `text` with each comma that separates the table references of a
/// parenthesised nest rewritten as ` CROSS JOIN ` (what it means: in
/// MySQL `(b, c)` in a FROM is `(b CROSS JOIN c)`), and the parentheses
/// of a nest of one table reference (`FROM (t)`) dropped; None when
/// there is nothing to rewrite. A nest is a parenthesis opened right
/// after FROM, a JOIN, a comma of a FROM list or another nest's
/// parenthesis, that does not start a query.
fn nest_commas(text: &str) -> Option<String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let spans = Tokenizer::new(&CairnDialect, text)
        .tokenize_with_location()
        .ok()?;
    let tokens: Vec<&Token> = spans.iter().map(|t| &t.token).collect();
    let word = |t: &Token, kws: &[&str]| kws.iter().any(|k| is_word(t, k));
    let significant = |from: usize| {
        tokens
            .get(from..)
            .and_then(|ts| ts.iter().find(|t| !matches!(t, Token::Whitespace(_))))
            .copied()
    };
    // Per open parenthesis (and the statement's level at the bottom).
    struct Level {
        /// What opened it.
        kind: Paren,
        /// A FROM list is being read at its level.
        in_from: bool,
        /// Where it opened.
        at: (u64, u64),
        /// A comma or a JOIN at its level (else a nest holds one table
        /// reference, which sqlparser does not read in parentheses).
        joins: bool,
        /// A comma at its level (a nest's).
        comma: bool,
        /// A query's level (the statement's, or a parenthesis that starts
        /// a query): only there does FROM start a list of tables (inside
        /// `SUBSTRING(s FROM (n))` it does not).
        query: bool,
    }
    let place = |i: usize| {
        spans
            .get(i)
            .map(|t| (t.span.start.line, t.span.start.column))
    };
    let mut stack = vec![Level {
        kind: Paren::Other,
        in_from: false,
        at: (0, 0),
        joins: false,
        comma: false,
        query: true,
    }];
    let mut prev: Option<&Token> = None;
    // (place, the character there, what replaces it)
    let mut edits: Vec<((u64, u64), char, &str)> = Vec::new();
    for (i, &t) in tokens.iter().enumerate() {
        if matches!(t, Token::Whitespace(_)) {
            continue;
        }
        let (kind, in_from, query) = stack.last().map(|l| (l.kind, l.in_from, l.query))?;
        match t {
            Token::LParen => {
                let after_table_slot = match prev {
                    Some(p) if word(p, &["FROM"]) => query,
                    Some(p) if word(p, &["JOIN", "STRAIGHT_JOIN"]) => true,
                    Some(Token::Comma) => in_from || kind == Paren::Nest,
                    Some(Token::LParen) => kind == Paren::Nest,
                    _ => false,
                };
                let starts_query = significant(i + 1)
                    .is_some_and(|n| word(n, &["SELECT", "WITH", "VALUES", "TABLE"]));
                let k = if after_table_slot && !starts_query {
                    Paren::Nest
                } else {
                    Paren::Other
                };
                stack.push(Level {
                    kind: k,
                    in_from: false,
                    at: place(i)?,
                    joins: false,
                    comma: false,
                    query: starts_query,
                });
            }
            Token::RParen if stack.len() > 1 => {
                let l = stack.pop()?;
                if l.kind == Paren::Nest && !l.joins {
                    edits.push((l.at, '(', " "));
                    edits.push((place(i)?, ')', " "));
                }
            }
            Token::Comma if kind == Paren::Nest => {
                edits.push((place(i)?, ',', " CROSS JOIN "));
                if let Some(top) = stack.last_mut() {
                    top.joins = true;
                    top.comma = true;
                }
            }
            // A comma binds more loosely than any JOIN: `(a, b RIGHT JOIN
            // c ON x)` is `a CROSS JOIN (b RIGHT JOIN c ON x)`, which the
            // rewrite (joins read left to right) would not keep. Left as
            // sqlparser's syntax error.
            _ if kind == Paren::Nest
                && stack.last().is_some_and(|l| l.comma)
                && word(t, &["JOIN", "STRAIGHT_JOIN"]) =>
            {
                return None;
            }
            _ if word(t, &["JOIN", "STRAIGHT_JOIN"]) => {
                if let Some(top) = stack.last_mut() {
                    top.joins = true;
                }
            }
            _ if query && word(t, &["FROM"]) => {
                if let Some(top) = stack.last_mut() {
                    top.in_from = true;
                }
            }
            _ if word(
                t,
                &[
                    "WHERE",
                    "GROUP",
                    "HAVING",
                    "ORDER",
                    "LIMIT",
                    "WINDOW",
                    "UNION",
                    "EXCEPT",
                    "INTERSECT",
                    "SELECT",
                    "SET",
                    "INTO",
                    "FOR",
                    "LOCK",
                ],
            ) =>
            {
                if let Some(top) = stack.last_mut() {
                    top.in_from = false;
                }
            }
            _ => {}
        }
        prev = Some(t);
    }
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|e| e.0);
    // The text itself is edited, at the tokens' places (line and column
    // counted as the tokenizer counts them: a column per character), so
    // that literals keep their exact spelling.
    let mut out = String::with_capacity(text.len() + 16 * edits.len());
    let (mut line, mut column) = (1u64, 1u64);
    let mut next = edits.iter().peekable();
    for ch in text.chars() {
        if let Some((_, _, with)) = next.next_if(|e| e.0 == (line, column) && e.1 == ch) {
            out.push_str(with);
        } else {
            out.push(ch);
        }
        if ch == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    if next.next().is_some() {
        // The places did not match the text: leave it as it was.
        return None;
    }
    Some(out)
}

/// Parses one statement with the MySQL dialect, as it is written.
fn parse_exactly(text: &str) -> SqlResult<Statement> {
    let mut v = parser(text)
        .and_then(|mut p| p.parse_statements())
        .map_err(parse_error)?;
    match v.len() {
        1 => Ok(v.remove(0)),
        0 => Err(SqlError::syntax("Query was empty")),
        _ => Err(SqlError::syntax(
            "several statements in one; send them separately or enable multi-statements",
        )),
    }
}
