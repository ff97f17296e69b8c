//! Splitting a query text into statements, and the statements handled
//! before (or instead of) the `sqlparser` crate: transaction control,
//! USE, SET (MySQL's many forms, including Connector/J's comma lists),
//! SHOW, and rewrites of forms `sqlparser` misreads (`LOCK IN SHARE
//! MODE`).

use crate::error::{SqlError, SqlResult};

/// Splits `sql` at top-level semicolons (outside quotes and comments);
/// returns the non-empty statements, trimmed.
pub fn split_statements(sql: &str) -> Vec<&str> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b.get(i).copied().unwrap_or(0) {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() {
                    let c = b.get(i).copied().unwrap_or(0);
                    if c == b'\\' && q != b'`' {
                        i += 2;
                        continue;
                    }
                    if c == q {
                        if b.get(i + 1) == Some(&q) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_none_or(|c| c.is_ascii_whitespace()) =>
            {
                while i < b.len() && b.get(i) != Some(&b'\n') {
                    i += 1;
                }
            }
            b'#' => {
                while i < b.len() && b.get(i) != Some(&b'\n') {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b.get(i) == Some(&b'*') && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            b';' => {
                if let Some(s) = sql.get(start..i) {
                    push_stmt(&mut out, s);
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if let Some(s) = sql.get(start..) {
        push_stmt(&mut out, s);
    }
    out
}

fn push_stmt<'a>(out: &mut Vec<&'a str>, s: &'a str) {
    let t = s.trim();
    if !t.is_empty() && !strip_comments(t).trim().is_empty() {
        out.push(t);
    }
}

/// A query text that is not UTF-8 made into one: each quoted string
/// literal whose bytes are not UTF-8 (mysqldump writes binary columns'
/// bytes raw inside quotes) becomes the hex literal of those bytes
/// (`X'..'`, escapes and doubled quotes resolved as MySQL reads them);
/// everything else is copied. None when a byte outside a string literal
/// is not UTF-8 (error 1300 then).
pub fn binary_literals(sql: &[u8]) -> Option<String> {
    let mut out: Vec<u8> = Vec::with_capacity(sql.len() * 2);
    let mut i = 0;
    let at = |i: usize| sql.get(i).copied().unwrap_or(0);
    let mut plain_from = 0;
    while i < sql.len() {
        match at(i) {
            q @ (b'\'' | b'"') => {
                let start = i;
                let mut bytes = Vec::new();
                i += 1;
                let mut closed = false;
                while i < sql.len() {
                    let c = at(i);
                    if c == b'\\' && i + 1 < sql.len() {
                        let e = at(i + 1);
                        match e {
                            b'0' => bytes.push(0),
                            b'b' => bytes.push(8),
                            b'n' => bytes.push(b'\n'),
                            b'r' => bytes.push(b'\r'),
                            b't' => bytes.push(b'\t'),
                            b'Z' => bytes.push(26),
                            b'%' | b'_' => bytes.extend_from_slice(&[b'\\', e]),
                            other => bytes.push(other),
                        }
                        i += 2;
                        continue;
                    }
                    i += 1;
                    if c == q {
                        if at(i) == q {
                            bytes.push(q);
                            i += 1;
                            continue;
                        }
                        closed = true;
                        break;
                    }
                    bytes.push(c);
                }
                if !closed {
                    return None;
                }
                let literal = sql.get(start..i)?;
                if std::str::from_utf8(literal).is_ok() {
                    continue;
                }
                out.extend_from_slice(sql.get(plain_from..start)?);
                out.extend_from_slice(b"X'");
                for b in bytes {
                    out.extend_from_slice(format!("{b:02X}").as_bytes());
                }
                out.push(b'\'');
                plain_from = i;
            }
            b'`' => {
                i += 1;
                while i < sql.len() && at(i) != b'`' {
                    i += 1;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    out.extend_from_slice(sql.get(plain_from.min(sql.len())..)?);
    String::from_utf8(out).ok()
}

/// The server version executable comments are compared with: 8.0.36,
/// as [`crate::SERVER_VERSION`] says.
const COMMENT_VERSION: u32 = 80036;

/// `sql` with MySQL's executable comments resolved, as MySQL's lexer
/// does: `/*! body */` and `/*!NNNNN body */` with NNNNN at most the
/// server's version (8.0.36) become their body; a later version's, and
/// MariaDB's `/*M!NNNNNN ... */`, become a space (a MySQL server reads
/// them as plain comments). Quotes and ordinary comments are kept as
/// they are. Borrowed when there is none (the common case).
pub fn executable_comments(sql: &str) -> std::borrow::Cow<'_, str> {
    if !sql.contains("/*!") && !sql.contains("/*M!") {
        return std::borrow::Cow::Borrowed(sql);
    }
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    // Bytes copied through so far.
    let mut from = 0;
    let mut i = 0;
    // Inside a kept executable comment: its `*/` is dropped.
    let mut in_exec = false;
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    while i < b.len() {
        match at(i) {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() {
                    let c = at(i);
                    if c == b'\\' && q != b'`' {
                        i += 2;
                        continue;
                    }
                    i += 1;
                    if c == q {
                        if at(i) == q {
                            i += 1;
                            continue;
                        }
                        break;
                    }
                }
            }
            b'#' => {
                while i < b.len() && at(i) != b'\n' {
                    i += 1;
                }
            }
            b'-' if at(i + 1) == b'-' && matches!(at(i + 2), b' ' | b'\t' | b'\n' | b'\r' | 0) => {
                while i < b.len() && at(i) != b'\n' {
                    i += 1;
                }
            }
            b'*' if in_exec && at(i + 1) == b'/' => {
                out.push_str(sql.get(from..i).unwrap_or_default());
                out.push(' ');
                i += 2;
                from = i;
                in_exec = false;
            }
            b'/' if at(i + 1) == b'*' => {
                let mariadb = at(i + 2) == b'M' && at(i + 3) == b'!';
                if at(i + 2) != b'!' && !mariadb {
                    // An ordinary comment, kept.
                    i += 2;
                    while i < b.len() && !(at(i) == b'*' && at(i + 1) == b'/') {
                        i += 1;
                    }
                    i += 2;
                    continue;
                }
                out.push_str(sql.get(from..i).unwrap_or_default());
                out.push(' ');
                i += if mariadb { 4 } else { 3 };
                let digits = i;
                while at(i).is_ascii_digit() && i - digits < 6 {
                    i += 1;
                }
                let version = sql
                    .get(digits..i)
                    .and_then(|d| d.parse::<u32>().ok())
                    .unwrap_or(0);
                if !mariadb && version <= COMMENT_VERSION {
                    in_exec = true;
                    from = i;
                } else {
                    // Skipped whole, to its end.
                    while i < b.len() && !(at(i) == b'*' && at(i + 1) == b'/') {
                        i += 1;
                    }
                    i = (i + 2).min(b.len());
                    from = i;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(sql.get(from.min(sql.len())..).unwrap_or_default());
    std::borrow::Cow::Owned(out)
}

/// `sql` without the select options of MySQL that change no result
/// (`SQL_NO_CACHE`, `SQL_CACHE`, `HIGH_PRIORITY`, `STRAIGHT_JOIN`,
/// `SQL_SMALL_RESULT`, `SQL_BIG_RESULT`, `SQL_BUFFER_RESULT`) after its
/// leading `SELECT [ALL | DISTINCT]`, which the parser does not know
/// (mysqldump sends `SELECT /*!40001 SQL_NO_CACHE */ ...`). Only the
/// first words are looked at; borrowed when there is none.
pub fn select_options(sql: &str) -> std::borrow::Cow<'_, str> {
    const DROP: [&str; 7] = [
        "SQL_NO_CACHE",
        "SQL_CACHE",
        "HIGH_PRIORITY",
        "STRAIGHT_JOIN",
        "SQL_SMALL_RESULT",
        "SQL_BIG_RESULT",
        "SQL_BUFFER_RESULT",
    ];
    let body = sql.trim_start();
    let lead = sql.len() - body.len();
    let word_at = |at: usize| -> (usize, usize) {
        let rest = sql.get(at..).unwrap_or_default();
        let start = at + (rest.len() - rest.trim_start().len());
        let len = sql
            .get(start..)
            .unwrap_or_default()
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
            .count();
        (start, start + len)
    };
    let (s0, e0) = word_at(lead);
    if !sql
        .get(s0..e0)
        .is_some_and(|w| w.eq_ignore_ascii_case("SELECT"))
    {
        return std::borrow::Cow::Borrowed(sql);
    }
    let mut at = e0;
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    loop {
        let (s, e) = word_at(at);
        let Some(w) = sql.get(s..e).filter(|w| !w.is_empty()) else {
            break;
        };
        if DROP.iter().any(|d| d.eq_ignore_ascii_case(w)) {
            cuts.push((s, e));
        } else if !["ALL", "DISTINCT", "DISTINCTROW"]
            .iter()
            .any(|d| d.eq_ignore_ascii_case(w))
        {
            break;
        }
        at = e;
    }
    if cuts.is_empty() {
        return std::borrow::Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut from = 0;
    for (s, e) in cuts {
        out.push_str(sql.get(from..s).unwrap_or_default());
        from = e;
    }
    out.push_str(sql.get(from..).unwrap_or_default());
    std::borrow::Cow::Owned(out)
}

/// MySQL's `MAX_EXECUTION_TIME(N)` optimizer hint (milliseconds) of a
/// statement that starts `SELECT /*+ ... */`: the hint comment must
/// follow the leading SELECT keyword, as MySQL reads it. None when there
/// is none or it is malformed (MySQL ignores a bad hint with a warning;
/// this reads it as absent).
pub fn max_execution_time_hint(sql: &str) -> Option<u64> {
    let body = strip_comments(sql);
    let kw = body.get(..6)?;
    if !kw.eq_ignore_ascii_case("SELECT") {
        return None;
    }
    let rest = body.get(6..)?;
    if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let hint = rest.trim_start().strip_prefix("/*+")?;
    let hint = hint.get(..hint.find("*/")?)?;
    let upper = hint.to_ascii_uppercase();
    let at = upper.find("MAX_EXECUTION_TIME")?;
    let args = upper.get(at + "MAX_EXECUTION_TIME".len()..)?.trim_start();
    let args = args.strip_prefix('(')?;
    let inner = args.get(..args.find(')')?)?.trim();
    inner.parse::<u64>().ok()
}

/// `s` without leading comments (`/* */`, `-- `, `#`), except MySQL's
/// executable comments `/*! ... */`, whose content is kept.
pub fn strip_comments(s: &str) -> &str {
    let mut t = s.trim_start();
    loop {
        if let Some(rest) = t.strip_prefix("/*") {
            if rest.starts_with('!') {
                return t;
            }
            match rest.find("*/") {
                Some(e) => t = rest.get(e + 2..).unwrap_or("").trim_start(),
                None => return "",
            }
        } else if t.starts_with("-- ") || t.starts_with('#') || t == "--" {
            match t.find('\n') {
                Some(e) => t = t.get(e + 1..).unwrap_or("").trim_start(),
                None => return "",
            }
        } else {
            return t;
        }
    }
}

/// A small token of the pre-parser.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A word or identifier (backticks removed).
    Word(String),
    /// A quoted string.
    Str(String),
    /// A number.
    Num(String),
    /// Punctuation (`=`, `,`, `.`, `(`, `)`, `:=`, `@`, `@@`...).
    Punct(String),
}

impl Tok {
    fn is_word(&self, w: &str) -> bool {
        matches!(self, Tok::Word(x) if x.eq_ignore_ascii_case(w))
    }
}

/// Tokenizes a statement for the pre-parser.
pub fn tokens(s: &str) -> SqlResult<Vec<Tok>> {
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = at(i);
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '*' {
            // Executable comments `/*!40101 ... */` keep their content.
            if at(i + 2) == '!' {
                i += 3;
                while at(i).is_ascii_digit() {
                    i += 1;
                }
                continue;
            }
            i += 2;
            while i < c.len() && !(at(i) == '*' && at(i + 1) == '/') {
                i += 1;
            }
            i += 2;
        } else if ch == '*' && at(i + 1) == '/' {
            i += 2;
        } else if ch == '#' || (ch == '-' && at(i + 1) == '-') {
            while i < c.len() && at(i) != '\n' {
                i += 1;
            }
        } else if ch == '\'' || ch == '"' {
            let q = ch;
            let mut v = String::new();
            i += 1;
            loop {
                if i >= c.len() {
                    return Err(SqlError::syntax("unterminated string"));
                }
                let x = at(i);
                if x == '\\' {
                    v.push(match at(i + 1) {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        o => o,
                    });
                    i += 2;
                } else if x == q && at(i + 1) == q {
                    v.push(q);
                    i += 2;
                } else if x == q {
                    i += 1;
                    break;
                } else {
                    v.push(x);
                    i += 1;
                }
            }
            out.push(Tok::Str(v));
        } else if ch == '`' {
            let mut v = String::new();
            i += 1;
            while i < c.len() && at(i) != '`' {
                v.push(at(i));
                i += 1;
            }
            i += 1;
            out.push(Tok::Word(v));
        } else if ch.is_ascii_digit() {
            let mut v = String::new();
            while at(i).is_ascii_alphanumeric() || at(i) == '.' {
                v.push(at(i));
                i += 1;
            }
            out.push(Tok::Num(v));
        } else if ch.is_alphanumeric() || ch == '_' || ch == '$' {
            let mut v = String::new();
            while at(i).is_alphanumeric() || at(i) == '_' || at(i) == '$' {
                v.push(at(i));
                i += 1;
            }
            out.push(Tok::Word(v));
        } else if ch == '@' && at(i + 1) == '@' {
            out.push(Tok::Punct("@@".into()));
            i += 2;
        } else if ch == ':' && at(i + 1) == '=' {
            out.push(Tok::Punct("=".into()));
            i += 2;
        } else {
            out.push(Tok::Punct(ch.to_string()));
            i += 1;
        }
    }
    Ok(out)
}

/// Scope of a SET or SHOW.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarScope {
    /// SESSION / LOCAL (the default).
    Session,
    /// GLOBAL / PERSIST.
    Global,
}

/// One assignment of a SET statement.
#[derive(Debug, Clone, PartialEq)]
pub enum SetItem {
    /// `@@[scope.]name = expr` / `[scope] name = expr`: the expression's text.
    Var(VarScope, String, String),
    /// `@name = expr`.
    User(String, String),
    /// `NAMES charset [COLLATE collation]` / `CHARACTER SET charset`.
    Names(String, Option<String>),
    /// `[scope] TRANSACTION ISOLATION LEVEL level`.
    Isolation(VarScope, String),
    /// `[scope] TRANSACTION READ ONLY|WRITE`.
    ReadOnly(VarScope, bool),
}

/// SHOW statements.
#[derive(Debug, Clone, PartialEq)]
pub enum Show {
    /// `SHOW [scope] VARIABLES [LIKE p | WHERE ...]`.
    Variables(VarScope, Option<String>),
    /// `SHOW [scope] STATUS [LIKE p]`.
    Status(VarScope, Option<String>),
    /// `SHOW ENGINE name STATUS`.
    EngineStatus(String),
    /// `SHOW DATABASES [LIKE p]`.
    Databases(Option<String>),
    /// `SHOW [FULL] TABLES [FROM db] [LIKE p]`.
    Tables(bool, Option<String>, Option<String>),
    /// `SHOW TABLE STATUS [FROM db] [LIKE p]`.
    TableStatus(Option<String>, Option<String>),
    /// `SHOW CREATE TABLE [db.]t`.
    CreateTable(Option<String>, String),
    /// `SHOW CREATE VIEW [db.]v`.
    CreateView(Option<String>, String),
    /// `SHOW CREATE DATABASE db`.
    CreateDatabase(String),
    /// `SHOW [FULL] COLUMNS FROM [db.]t [FROM db] [LIKE p]`.
    Columns(bool, Option<String>, String, Option<String>),
    /// `SHOW INDEX FROM [db.]t [FROM db]`.
    Index(Option<String>, String),
    /// `SHOW WARNINGS` / `SHOW ERRORS`.
    Warnings,
    /// `SHOW ENGINES`.
    Engines,
    /// `SHOW COLLATION [LIKE p]`.
    Collation(Option<String>),
    /// `SHOW CHARACTER SET [LIKE p]`.
    Charset(Option<String>),
    /// `SHOW [FULL] PROCESSLIST`.
    ProcessList(bool),
    /// `SHOW REPLICA STATUS` (true) or `SHOW SLAVE STATUS` (false), with
    /// an optional `FOR CHANNEL name`: no replication, so no rows.
    ReplicaStatus(bool),
}

/// Where `PREPARE` takes its statement from.
#[derive(Debug, Clone, PartialEq)]
pub enum PrepareFrom {
    /// A string literal.
    Text(String),
    /// A user variable (`@name`, lower-case).
    Var(String),
}

/// A statement recognised by the pre-parser.
#[derive(Debug, Clone, PartialEq)]
pub enum Pre {
    /// BEGIN / START TRANSACTION.
    Begin,
    /// COMMIT.
    Commit,
    /// ROLLBACK.
    Rollback,
    /// SAVEPOINT name.
    Savepoint(String),
    /// ROLLBACK TO [SAVEPOINT] name.
    RollbackTo(String),
    /// RELEASE SAVEPOINT name.
    Release(String),
    /// USE db.
    Use(String),
    /// SET ...
    Set(Vec<SetItem>),
    /// SHOW ...
    Show(Show),
    /// A statement with nothing to do (comments only, `DO 0`, FLUSH of
    /// tables or privileges, LOCK/UNLOCK TABLES...).
    Nothing,
    /// `FLUSH [NO_WRITE_TO_BINLOG | LOCAL] what [, what ...]` naming
    /// HOSTS (`hosts`), LOGS / SLOW LOGS / GENERAL LOGS (`logs`), or
    /// USER_RESOURCES / PRIVILEGES (`user_resources`).
    Flush {
        /// FLUSH HOSTS.
        hosts: bool,
        /// FLUSH [SLOW | GENERAL] LOGS.
        logs: bool,
        /// FLUSH USER_RESOURCES or PRIVILEGES: the accounts' hourly
        /// counts start again.
        user_resources: bool,
    },
    /// `OPTIMIZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, t ...]`: the
    /// tables, each with its database when qualified.
    Optimize(Vec<(Option<String>, String)>),
    /// `ANALYZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, t ...]`: likewise.
    Analyze(Vec<(Option<String>, String)>),
    /// `LOCK {TABLE | TABLES} t [[AS] alias] lock_type [, ...]`: the
    /// tables, each with its database when qualified (the lock types are
    /// read past: the statement locks nothing, see docs/sql.md).
    LockTables(Vec<(Option<String>, String)>),
    /// `ALTER {DATABASE | SCHEMA} [db] options`: the database (None: the
    /// current one); its character set and collation options, checked,
    /// have no effect.
    AlterDatabase(Option<String>),
    /// `ALTER TABLE ...`: its text, parsed when it runs (`sqlparser` reads
    /// only some of MySQL's clauses; see `alter.rs`).
    AlterTable(String),
    /// An account statement (CREATE/ALTER/DROP/RENAME USER, SET PASSWORD,
    /// GRANT, REVOKE, SHOW GRANTS).
    Acl(crate::acl::AclStmt),
    /// `BACKUP DATABASE TO 'dir'`: the target directory (`backup.rs`).
    Backup(String),
    /// `PREPARE name FROM {'text' | @var}`: the name and the statement's
    /// text, or the user variable holding it.
    Prepare(String, PrepareFrom),
    /// `EXECUTE name [USING @a, @b ...]`: the name and the variables.
    Execute(String, Vec<String>),
    /// `{DEALLOCATE | DROP} PREPARE name`.
    Deallocate(String),
    /// Everything else, for `sqlparser` (possibly rewritten).
    Sql(String),
}

/// Classifies one statement.
pub fn classify(stmt: &str) -> SqlResult<Pre> {
    let body = strip_comments(stmt);
    if body.is_empty() {
        return Ok(Pre::Nothing);
    }
    let first = body
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    if let Some(st) = crate::acl::classify(&first, body)? {
        return Ok(Pre::Acl(st));
    }
    match first.as_str() {
        "BEGIN" | "START" | "COMMIT" | "ROLLBACK" | "SAVEPOINT" | "RELEASE" | "USE" | "SET"
        | "SHOW" | "DESC" | "DESCRIBE" | "FLUSH" | "LOCK" | "UNLOCK" | "DO" | "ANALYZE"
        | "OPTIMIZE" | "BACKUP" | "PREPARE" | "EXECUTE" | "DEALLOCATE" => {}
        "DROP"
            if body
                .split_whitespace()
                .nth(1)
                .is_some_and(|w| w.eq_ignore_ascii_case("PREPARE")) => {}
        "CREATE" | "ALTER" => {
            let second = body
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_ascii_uppercase();
            if second == "DATABASE" || second == "SCHEMA" {
                return database_options(body, first == "CREATE");
            }
            let second_word: String = body
                .get(first.len()..)
                .unwrap_or("")
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if first == "ALTER" && second_word.eq_ignore_ascii_case("TABLE") {
                return Ok(Pre::AlterTable(body.to_string()));
            }
            return Ok(Pre::Sql(rewrite(body)));
        }
        _ => return Ok(Pre::Sql(rewrite(body))),
    }
    let t = tokens(body)?;
    let w = |i: usize| match t.get(i) {
        Some(Tok::Word(x)) => x.to_ascii_uppercase(),
        _ => String::new(),
    };
    // Tokens before a final `;`.
    let n = t.len() - usize::from(t.last() == Some(&Tok::Punct(";".into())));
    let name_at = |i: usize| -> SqlResult<String> {
        match t.get(i) {
            Some(Tok::Word(x)) | Some(Tok::Str(x)) => Ok(x.clone()),
            _ => Err(SqlError::syntax(format!("a name was expected in: {body}"))),
        }
    };
    Ok(match first.as_str() {
        "BEGIN" => Pre::Begin,
        "START" if w(1) == "TRANSACTION" => Pre::Begin,
        "COMMIT" => Pre::Commit,
        "ROLLBACK" => {
            let mut i = 1;
            if w(i) == "WORK" {
                i += 1;
            }
            if w(i) == "TO" {
                i += 1;
                if w(i) == "SAVEPOINT" {
                    i += 1;
                }
                Pre::RollbackTo(name_at(i)?)
            } else {
                Pre::Rollback
            }
        }
        "SAVEPOINT" => Pre::Savepoint(name_at(1)?),
        "PREPARE" => {
            let name = name_at(1)?;
            if w(2) != "FROM" {
                return Err(SqlError::syntax(format!(
                    "PREPARE name FROM 'statement' was expected: {body}"
                )));
            }
            let from = match (t.get(3), t.get(4)) {
                (Some(Tok::Str(s)), _) if n == 4 => PrepareFrom::Text(s.clone()),
                (Some(Tok::Punct(p)), Some(Tok::Word(v))) if p == "@" && n == 5 => {
                    PrepareFrom::Var(v.to_lowercase())
                }
                _ => {
                    return Err(SqlError::syntax(format!(
                        "PREPARE takes a string or a user variable: {body}"
                    )))
                }
            };
            Pre::Prepare(name, from)
        }
        "EXECUTE" => {
            let name = name_at(1)?;
            let mut vars = Vec::new();
            if n > 2 {
                if w(2) != "USING" {
                    return Err(SqlError::syntax(format!(
                        "EXECUTE name [USING @var, ...] was expected: {body}"
                    )));
                }
                let mut i = 3;
                loop {
                    match (t.get(i), t.get(i + 1)) {
                        (Some(Tok::Punct(p)), Some(Tok::Word(v))) if p == "@" => {
                            vars.push(v.to_lowercase())
                        }
                        _ => {
                            return Err(SqlError::syntax(format!(
                                "EXECUTE ... USING takes user variables: {body}"
                            )))
                        }
                    }
                    i += 2;
                    match t.get(i).filter(|_| i < n) {
                        None => break,
                        Some(Tok::Punct(p)) if p == "," => i += 1,
                        Some(_) => {
                            return Err(SqlError::syntax(format!(
                                "unexpected text after the variables: {body}"
                            )))
                        }
                    }
                }
            }
            Pre::Execute(name, vars)
        }
        "DEALLOCATE" | "DROP" if w(1) == "PREPARE" && n == 3 => Pre::Deallocate(name_at(2)?),
        "RELEASE" if w(1) == "SAVEPOINT" => Pre::Release(name_at(2)?),
        "USE" => Pre::Use(name_at(1)?),
        "SET" => Pre::Set(parse_set(body, &t)?),
        "SHOW" => Pre::Show(parse_show(&t)?),
        "DESC" | "DESCRIBE" => {
            let (db, table) = qualified(&t, 1)?;
            Pre::Show(Show::Columns(false, db, table, None))
        }
        "OPTIMIZE" | "ANALYZE" => {
            let mut i = 1;
            if matches!(w(i).as_str(), "NO_WRITE_TO_BINLOG" | "LOCAL") {
                i += 1;
            }
            if !matches!(w(i).as_str(), "TABLE" | "TABLES") {
                return Err(SqlError::syntax(format!(
                    "{first} TABLE was expected: {body}"
                )));
            }
            i += 1;
            let mut tables = Vec::new();
            loop {
                let q = qualified(&t, i)?;
                i += if q.0.is_some() { 3 } else { 1 };
                tables.push(q);
                if t.get(i) == Some(&Tok::Punct(",".into())) {
                    i += 1;
                    continue;
                }
                // MariaDB's `PERSISTENT FOR ...` and MySQL's `UPDATE |
                // DROP HISTOGRAM ...`: the plain count is what runs.
                if first == "ANALYZE" && matches!(w(i).as_str(), "PERSISTENT" | "UPDATE" | "DROP") {
                    break;
                }
                if t.get(i).is_some_and(|x| *x != Tok::Punct(";".into())) {
                    return Err(SqlError::syntax(format!(
                        "unexpected text after the tables: {body}"
                    )));
                }
                break;
            }
            if first == "ANALYZE" {
                Pre::Analyze(tables)
            } else {
                Pre::Optimize(tables)
            }
        }
        "FLUSH" => {
            let words: Vec<String> = (1..t.len()).map(w).collect();
            let hosts = words.iter().any(|x| x == "HOSTS");
            let logs = words.iter().any(|x| x == "LOGS");
            let user_resources = words
                .iter()
                .any(|x| x == "USER_RESOURCES" || x == "PRIVILEGES");
            // Every kind needs RELOAD, as in MySQL; the others do nothing.
            Pre::Flush {
                hosts,
                logs,
                user_resources,
            }
        }
        "BACKUP" => {
            let end = match t.get(4) {
                None => true,
                Some(Tok::Punct(p)) => p == ";" && t.len() == 5,
                Some(_) => false,
            };
            match t.get(3) {
                Some(Tok::Str(dir)) if w(1) == "DATABASE" && w(2) == "TO" && end => {
                    Pre::Backup(dir.clone())
                }
                _ => {
                    return Err(SqlError::syntax(format!(
                        "BACKUP DATABASE TO 'directory' was expected: {body}"
                    )))
                }
            }
        }
        "LOCK" if matches!(w(1).as_str(), "TABLE" | "TABLES") => {
            let mut i = 2;
            let mut tables = Vec::new();
            loop {
                let q = qualified(&t, i)?;
                i += if q.0.is_some() { 3 } else { 1 };
                tables.push(q);
                // [[AS] alias] {READ [LOCAL] | [LOW_PRIORITY] WRITE [CONCURRENT]}
                let kw = |x: &str| ["READ", "WRITE", "LOW_PRIORITY"].contains(&x);
                if w(i) == "AS" {
                    i += 2;
                } else if matches!(t.get(i), Some(Tok::Word(_))) && !kw(&w(i)) {
                    i += 1;
                }
                match w(i).as_str() {
                    "READ" => i += 1 + usize::from(w(i + 1) == "LOCAL"),
                    "WRITE" => i += 1 + usize::from(w(i + 1) == "CONCURRENT"),
                    "LOW_PRIORITY" if w(i + 1) == "WRITE" => i += 2,
                    _ => {
                        return Err(SqlError::syntax(format!(
                            "READ or WRITE was expected after a table of LOCK TABLES: {body}"
                        )))
                    }
                }
                match t.get(i) {
                    Some(Tok::Punct(p)) if p == "," => i += 1,
                    None => break,
                    Some(Tok::Punct(p)) if p == ";" => break,
                    Some(_) => {
                        return Err(SqlError::syntax(format!(
                            "LOCK TABLES t {{READ | WRITE}} [, ...] was expected: {body}"
                        )))
                    }
                }
            }
            Pre::LockTables(tables)
        }
        "LOCK" | "UNLOCK" | "DO" => Pre::Nothing,
        _ => Pre::Sql(rewrite(body)),
    })
}

/// Character sets a database may name (all stored as utf8mb4).
const CHARSETS: &[&str] = &["utf8mb4", "utf8mb3", "utf8", "latin1", "binary", "ascii"];

/// `CREATE {DATABASE | SCHEMA} [IF NOT EXISTS] db [options]` (rewritten
/// without its options for `sqlparser`) or `ALTER {DATABASE | SCHEMA}
/// [db] options`. The options are `[DEFAULT] {CHARACTER SET | CHARSET}
/// [=] cs`, `[DEFAULT] COLLATE [=] coll` and `[DEFAULT] ENCRYPTION [=]
/// 'N'`; an unknown character set is 1115, an unknown collation 1273, a
/// collation of another character set 1253, encryption 1235.
fn database_options(body: &str, create: bool) -> SqlResult<Pre> {
    let t = tokens(body)?;
    let bad = || SqlError::syntax(format!("You have an error in your SQL syntax near: {body}"));
    let w = |i: usize| match t.get(i) {
        Some(Tok::Word(x)) => x.to_ascii_uppercase(),
        _ => String::new(),
    };
    let is_option = |i: usize| {
        matches!(
            w(i).as_str(),
            "DEFAULT" | "CHARACTER" | "CHARSET" | "COLLATE"
        )
    };
    let mut i = 2;
    let mut if_not_exists = false;
    if create && w(i) == "IF" && w(i + 1) == "NOT" && w(i + 2) == "EXISTS" {
        if_not_exists = true;
        i += 3;
    }
    // A backquoted name is a word too; an unquoted option word is not a name.
    let name = match t.get(i) {
        Some(Tok::Word(n)) if !is_option(i) || body.contains(&format!("`{n}`")) => {
            i += 1;
            Some(n.clone())
        }
        _ if create => return Err(bad()),
        _ => None,
    };
    let mut charset: Option<String> = None;
    let mut collation: Option<String> = None;
    while i < t.len() {
        if t.get(i) == Some(&Tok::Punct(";".into())) {
            i += 1;
            continue;
        }
        if w(i) == "DEFAULT" {
            i += 1;
        }
        if w(i) == "ENCRYPTION" {
            // mysqldump writes `DEFAULT ENCRYPTION='N'`; CairnDB does not
            // encrypt.
            i += 1;
            if t.get(i) == Some(&Tok::Punct("=".into())) {
                i += 1;
            }
            match t.get(i) {
                Some(Tok::Str(v) | Tok::Word(v)) if v.eq_ignore_ascii_case("n") => {}
                Some(Tok::Str(v) | Tok::Word(v)) if v.eq_ignore_ascii_case("y") => {
                    return Err(SqlError::unsupported("ENCRYPTION='Y'"))
                }
                _ => return Err(bad()),
            }
            i += 1;
            continue;
        }
        let is_collate = match w(i).as_str() {
            "CHARACTER" if w(i + 1) == "SET" => {
                i += 2;
                false
            }
            "CHARSET" => {
                i += 1;
                false
            }
            "COLLATE" => {
                i += 1;
                true
            }
            _ => return Err(bad()),
        };
        if t.get(i) == Some(&Tok::Punct("=".into())) {
            i += 1;
        }
        let value = match t.get(i) {
            Some(Tok::Word(v) | Tok::Str(v)) => v.to_ascii_lowercase(),
            _ => return Err(bad()),
        };
        i += 1;
        if is_collate {
            collation = Some(value);
        } else {
            charset = Some(value);
        }
    }
    if !create && charset.is_none() && collation.is_none() {
        return Err(bad());
    }
    check_charset(charset.as_deref(), collation.as_deref())?;
    if !create {
        return Ok(Pre::AlterDatabase(name));
    }
    let name = name.ok_or_else(bad)?;
    Ok(Pre::Sql(format!(
        "CREATE DATABASE {}`{}`",
        if if_not_exists { "IF NOT EXISTS " } else { "" },
        name.replace('`', "``")
    )))
}

/// Checks a `CHARACTER SET` and `COLLATE` pair (either may be absent),
/// both lower-case: an unknown character set is 1115, an unknown
/// collation 1273, a collation of another character set 1253.
pub(crate) fn check_charset(charset: Option<&str>, collation: Option<&str>) -> SqlResult<()> {
    if let Some(cs) = charset {
        if !CHARSETS.contains(&cs) {
            return Err(SqlError::new(
                1115,
                "42000",
                format!("Unknown character set: '{cs}'"),
            ));
        }
    }
    if let Some(coll) = collation {
        let of = if coll == "binary" {
            "binary"
        } else {
            coll.split('_').next().unwrap_or("")
        };
        if (of == "binary" && coll != "binary") || !CHARSETS.contains(&of) {
            return Err(SqlError::new(
                1273,
                "HY000",
                format!("Unknown collation: '{coll}'"),
            ));
        }
        if let Some(cs) = charset {
            if same_charset(cs) != same_charset(of) {
                return Err(SqlError::new(
                    1253,
                    "42000",
                    format!("COLLATION '{coll}' is not valid for CHARACTER SET '{cs}'"),
                ));
            }
        }
    }
    Ok(())
}

/// `utf8` is `utf8mb3`.
fn same_charset(cs: &str) -> &str {
    if cs == "utf8" {
        "utf8mb3"
    } else {
        cs
    }
}

/// Rewrites forms `sqlparser` rejects into equivalent ones it reads.
fn rewrite(s: &str) -> String {
    // `0b0101` (lower-case `0b` only, as MySQL) is `b'0101'`.
    if s.contains("0b") {
        if let Some(r) = bit_literals(s) {
            return rewrite(&r);
        }
    }
    let up = s.to_ascii_uppercase();
    if up.contains("NTH_VALUE") {
        if let Some(r) = nth_value_from(s, &up) {
            return rewrite(&r);
        }
    }
    if let Some(p) = up.rfind("LOCK IN SHARE MODE") {
        let mut r = String::with_capacity(s.len());
        r.push_str(s.get(..p).unwrap_or(s));
        r.push_str("FOR SHARE");
        r.push_str(s.get(p + "LOCK IN SHARE MODE".len()..).unwrap_or(""));
        return r;
    }
    s.to_string()
}

/// `NTH_VALUE(..) FROM FIRST` without `FROM FIRST` (the default), and
/// `NTH_VALUE(..) FROM LAST` as a call of `NTH_VALUE_FROM_LAST`, which
/// the compiler refuses (1235); None when no call has either (`up`: `s`
/// in upper case).
fn nth_value_from(s: &str, up: &str) -> Option<String> {
    let b = up.as_bytes();
    let word_end = |i: usize| {
        b.get(i)
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
    };
    let skip_ws = |mut i: usize| {
        while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        i
    };
    let mut pos = 0;
    let mut outer_quote = None::<u8>;
    while let Some(&c) = b.get(pos) {
        pos += 1;
        match outer_quote {
            Some(q) if c == q => outer_quote = None,
            Some(q) if c == b'\\' && q != b'`' => pos += 1,
            Some(_) => {}
            None if c == b'\'' || c == b'"' || c == b'`' => outer_quote = Some(c),
            None => {}
        }
        let at = pos - 1;
        let starts = outer_quote.is_none()
            && up.get(at..).is_some_and(|t| t.starts_with("NTH_VALUE"))
            && (at == 0 || word_end(at - 1));
        if !starts {
            continue;
        }
        let from = at + "NTH_VALUE".len();
        pos = from;
        let open = skip_ws(from);
        if b.get(open) != Some(&b'(') {
            continue;
        }
        // The matching parenthesis, outside quotes.
        let (mut i, mut depth, mut quote) = (open, 0usize, None::<u8>);
        while let Some(&c) = b.get(i) {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == b'\'' || c == b'"' || c == b'`' => quote = Some(c),
                None if c == b'(' => depth += 1,
                None if c == b')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                None => {}
            }
            i += 1;
        }
        let f = skip_ws(i + 1);
        if !(up.get(f..).is_some_and(|t| t.starts_with("FROM")) && word_end(f + 4)) {
            continue;
        }
        let w = skip_ws(f + 4);
        let last = if up.get(w..).is_some_and(|t| t.starts_with("FIRST")) && word_end(w + 5) {
            false
        } else if up.get(w..).is_some_and(|t| t.starts_with("LAST")) && word_end(w + 4) {
            true
        } else {
            continue;
        };
        let end = w + if last { 4 } else { 5 };
        let mut r = String::with_capacity(s.len() + 10);
        r.push_str(s.get(..from)?);
        if last {
            r.push_str("_FROM_LAST");
        }
        r.push_str(s.get(from..=i)?);
        r.push_str(s.get(end..)?);
        return Some(r);
    }
    None
}

/// `s` with its `0b0101` literals (outside quotes and comments, not part
/// of a name) written `b'0101'`; None when it has none.
fn bit_literals(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
    let mut out = String::with_capacity(s.len() + 8);
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        match at(i) {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() && at(i) != q {
                    i += if at(i) == b'\\' && q != b'`' { 2 } else { 1 };
                }
                i += 1;
            }
            b'#' => {
                while i < b.len() && at(i) != b'\n' {
                    i += 1;
                }
            }
            b'-' if at(i + 1) == b'-' => {
                while i < b.len() && at(i) != b'\n' {
                    i += 1;
                }
            }
            b'/' if at(i + 1) == b'*' => {
                i += 2;
                while i < b.len() && !(at(i) == b'*' && at(i + 1) == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'0' if at(i + 1) == b'b' && (i == 0 || !word(at(i - 1))) => {
                let mut j = i + 2;
                while at(j) == b'0' || at(j) == b'1' {
                    j += 1;
                }
                if j > i + 2 && !word(at(j)) {
                    out.push_str(s.get(last..i)?);
                    out.push_str("b'");
                    out.push_str(s.get(i + 2..j)?);
                    out.push('\'');
                    last = j;
                }
                i = j.max(i + 1);
            }
            c if word(c) => {
                while i < b.len() && word(at(i)) {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    if last == 0 {
        return None;
    }
    out.push_str(s.get(last..)?);
    Some(out)
}

/// `[db.]name` at token `i`.
fn qualified(t: &[Tok], i: usize) -> SqlResult<(Option<String>, String)> {
    let name = |j: usize| match t.get(j) {
        Some(Tok::Word(x)) => Some(x.clone()),
        _ => None,
    };
    let a = name(i).ok_or_else(|| SqlError::syntax("a table name was expected"))?;
    if t.get(i + 1) == Some(&Tok::Punct(".".into())) {
        let b = name(i + 2).ok_or_else(|| SqlError::syntax("a table name was expected"))?;
        return Ok((Some(a), b));
    }
    Ok((None, a))
}

fn like_at(t: &[Tok], i: usize) -> Option<String> {
    if t.get(i).is_some_and(|x| x.is_word("LIKE")) {
        if let Some(Tok::Str(p)) = t.get(i + 1) {
            return Some(p.clone());
        }
    }
    // `WHERE Variable_name = 'x'` / `WHERE Variable_name LIKE 'x'`.
    if t.get(i).is_some_and(|x| x.is_word("WHERE")) {
        for j in i..t.len() {
            if let Some(Tok::Str(p)) = t.get(j) {
                return Some(p.clone());
            }
        }
    }
    None
}

fn parse_show(t: &[Tok]) -> SqlResult<Show> {
    let w = |i: usize| match t.get(i) {
        Some(Tok::Word(x)) => x.to_ascii_uppercase(),
        _ => String::new(),
    };
    let mut i = 1;
    let mut scope = VarScope::Session;
    let mut full = false;
    loop {
        match w(i).as_str() {
            "GLOBAL" => scope = VarScope::Global,
            "SESSION" | "LOCAL" => scope = VarScope::Session,
            "FULL" | "EXTENDED" => full = true,
            _ => break,
        }
        i += 1;
    }
    let from_db = |j: usize| -> Option<String> {
        if matches!(w(j).as_str(), "FROM" | "IN") {
            if let Some(Tok::Word(d)) = t.get(j + 1) {
                return Some(d.clone());
            }
        }
        None
    };
    Ok(match w(i).as_str() {
        "VARIABLES" => Show::Variables(scope, like_at(t, i + 1)),
        "STATUS" => Show::Status(scope, like_at(t, i + 1)),
        "ENGINE" if w(i + 2) == "STATUS" => Show::EngineStatus(w(i + 1)),
        "DATABASES" | "SCHEMAS" => Show::Databases(like_at(t, i + 1)),
        "TABLES" => {
            let db = from_db(i + 1);
            let j = if db.is_some() { i + 3 } else { i + 1 };
            Show::Tables(full, db, like_at(t, j))
        }
        "TABLE" if w(i + 1) == "STATUS" => {
            let db = from_db(i + 2);
            let j = if db.is_some() { i + 4 } else { i + 2 };
            Show::TableStatus(db, like_at(t, j))
        }
        "CREATE" if w(i + 1) == "TABLE" => {
            let (db, table) = qualified(t, i + 2)?;
            Show::CreateTable(db, table)
        }
        "CREATE" if w(i + 1) == "VIEW" => {
            let (db, view) = qualified(t, i + 2)?;
            Show::CreateView(db, view)
        }
        "CREATE" if matches!(w(i + 1).as_str(), "DATABASE" | "SCHEMA") => match t.get(i + 2) {
            Some(Tok::Word(d)) => Show::CreateDatabase(d.clone()),
            _ => return Err(SqlError::syntax("a database name was expected")),
        },
        "COLUMNS" | "FIELDS" => {
            if !matches!(w(i + 1).as_str(), "FROM" | "IN") {
                return Err(SqlError::syntax("SHOW COLUMNS FROM table"));
            }
            let (mut db, table) = qualified(t, i + 2)?;
            let after = if db.is_some() { i + 5 } else { i + 3 };
            if let Some(d) = from_db(after) {
                db = Some(d);
            }
            let j = if from_db(after).is_some() {
                after + 2
            } else {
                after
            };
            Show::Columns(full, db, table, like_at(t, j))
        }
        "INDEX" | "INDEXES" | "KEYS" => {
            if !matches!(w(i + 1).as_str(), "FROM" | "IN") {
                return Err(SqlError::syntax("SHOW INDEX FROM table"));
            }
            let (mut db, table) = qualified(t, i + 2)?;
            let after = if db.is_some() { i + 5 } else { i + 3 };
            if let Some(d) = from_db(after) {
                db = Some(d);
            }
            Show::Index(db, table)
        }
        "WARNINGS" | "ERRORS" => Show::Warnings,
        "ENGINES" | "STORAGE" => Show::Engines,
        "COLLATION" => Show::Collation(like_at(t, i + 1)),
        "CHARACTER" | "CHARSET" => {
            let j = if w(i) == "CHARACTER" { i + 2 } else { i + 1 };
            Show::Charset(like_at(t, j))
        }
        "PROCESSLIST" => Show::ProcessList(full),
        "REPLICA" | "SLAVE" if w(i + 1) == "STATUS" => {
            // Only `FOR CHANNEL name` may follow (MariaDB's `SHOW ALL
            // SLAVES STATUS` and Percona's NONBLOCKING are not MySQL's).
            let mut rest = t.get(i + 2..).unwrap_or_default();
            while let [head @ .., Tok::Punct(p)] = rest {
                if p != ";" {
                    break;
                }
                rest = head;
            }
            let channel = matches!(rest, [Tok::Word(f), Tok::Word(c), _]
                if f.eq_ignore_ascii_case("FOR") && c.eq_ignore_ascii_case("CHANNEL"));
            if !rest.is_empty() && !channel {
                return Err(SqlError::syntax(format!(
                    "SHOW {} STATUS [FOR CHANNEL name]",
                    w(i)
                )));
            }
            Show::ReplicaStatus(w(i) == "REPLICA")
        }
        other => return Err(SqlError::unsupported(format!("SHOW {other}"))),
    })
}

fn parse_set(body: &str, t: &[Tok]) -> SqlResult<Vec<SetItem>> {
    // Split the tokens after SET at top-level commas, and recover each
    // item's value text from the statement by re-joining its tokens.
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut cur: Vec<Tok> = Vec::new();
    for tok in t.iter().skip(1) {
        match tok {
            Tok::Punct(p) if p == "(" => depth += 1,
            Tok::Punct(p) if p == ")" => depth -= 1,
            Tok::Punct(p) if p == "," && depth == 0 => {
                items.push(set_item(body, std::mem::take(&mut cur))?);
                continue;
            }
            _ => {}
        }
        cur.push(tok.clone());
    }
    if !cur.is_empty() {
        items.push(set_item(body, cur)?);
    }
    Ok(items)
}

fn scope_word(w: &str) -> Option<VarScope> {
    match w.to_ascii_uppercase().as_str() {
        "SESSION" | "LOCAL" => Some(VarScope::Session),
        "GLOBAL" | "PERSIST" | "PERSIST_ONLY" => Some(VarScope::Global),
        _ => None,
    }
}

fn set_item(body: &str, t: Vec<Tok>) -> SqlResult<SetItem> {
    let bad = || SqlError::syntax(format!("cannot read the SET statement: {body}"));
    let mut i = 0;
    let word = |i: usize| match t.get(i) {
        Some(Tok::Word(x)) => x.to_ascii_uppercase(),
        _ => String::new(),
    };
    let mut scope = VarScope::Session;
    if let Some(s) = scope_word(&word(0)) {
        scope = s;
        i = 1;
    }
    match word(i).as_str() {
        "NAMES" => {
            let cs = match t.get(i + 1) {
                Some(Tok::Word(x)) | Some(Tok::Str(x)) => x.clone(),
                _ => return Err(bad()),
            };
            let coll = if word(i + 2) == "COLLATE" {
                match t.get(i + 3) {
                    Some(Tok::Word(x)) | Some(Tok::Str(x)) => Some(x.clone()),
                    _ => None,
                }
            } else {
                None
            };
            return Ok(SetItem::Names(cs, coll));
        }
        "CHARACTER" | "CHARSET" => {
            let j = if word(i) == "CHARACTER" { i + 2 } else { i + 1 };
            let cs = match t.get(j) {
                Some(Tok::Word(x)) | Some(Tok::Str(x)) => x.clone(),
                _ => return Err(bad()),
            };
            return Ok(SetItem::Names(cs, None));
        }
        "TRANSACTION" => {
            if word(i + 1) == "ISOLATION" && word(i + 2) == "LEVEL" {
                let level: Vec<String> = (i + 3..t.len()).map(word).collect();
                return Ok(SetItem::Isolation(scope, level.join(" ")));
            }
            if word(i + 1) == "READ" {
                return Ok(SetItem::ReadOnly(scope, word(i + 2) == "ONLY"));
            }
            return Err(bad());
        }
        _ => {}
    }
    // A variable: `@@[scope.]name`, `@name`, or `name`.
    let (user, name, next) = match (t.get(i), t.get(i + 1)) {
        (Some(Tok::Punct(p)), Some(Tok::Word(n))) if p == "@@" => {
            if t.get(i + 2) == Some(&Tok::Punct(".".into())) {
                if let Some(s) = scope_word(n) {
                    scope = s;
                }
                match t.get(i + 3) {
                    Some(Tok::Word(n2)) => (false, n2.clone(), i + 4),
                    _ => return Err(bad()),
                }
            } else {
                (false, n.clone(), i + 2)
            }
        }
        (Some(Tok::Punct(p)), Some(Tok::Word(n))) if p == "@" => (true, n.clone(), i + 2),
        (Some(Tok::Punct(p)), Some(Tok::Str(n))) if p == "@" => (true, n.clone(), i + 2),
        (Some(Tok::Word(n)), _) => (false, n.clone(), i + 1),
        _ => return Err(bad()),
    };
    if t.get(next) != Some(&Tok::Punct("=".into())) {
        return Err(bad());
    }
    let value = render(t.get(next + 1..).unwrap_or_default());
    Ok(if user {
        SetItem::User(name.to_lowercase(), value)
    } else {
        SetItem::Var(scope, name.to_lowercase(), value)
    })
}

/// Renders tokens back into SQL text (for the value of a SET).
fn render(t: &[Tok]) -> String {
    let mut s = String::new();
    for (k, tok) in t.iter().enumerate() {
        if k > 0
            && !matches!(tok, Tok::Punct(p) if p == "." || p == "(" || p == ")" || p == ",")
            && !matches!(t.get(k - 1), Some(Tok::Punct(p)) if p == "." || p == "(" || p == "@" || p == "@@")
        {
            s.push(' ');
        }
        match tok {
            Tok::Word(w) => s.push_str(w),
            Tok::Num(n) => s.push_str(n),
            Tok::Punct(p) => s.push_str(p),
            Tok::Str(v) => {
                s.push('\'');
                for ch in v.chars() {
                    match ch {
                        '\'' => s.push_str("''"),
                        '\\' => s.push_str("\\\\"),
                        c => s.push(c),
                    }
                }
                s.push('\'');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_execution_time_hints_are_read_where_mysql_reads_them() {
        let h = max_execution_time_hint;
        assert_eq!(
            h("SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t"),
            Some(1000)
        );
        assert_eq!(
            h("  /* c */ select/*+ BKA(t) max_execution_time ( 25 ) NO_ICP(t) */ 1"),
            Some(25)
        );
        assert_eq!(h("SELECT /*+ MAX_EXECUTION_TIME(0) */ 1"), Some(0));
        // Not a hint: a plain comment, another place, another statement,
        // a bad argument.
        assert_eq!(h("SELECT /* MAX_EXECUTION_TIME(5) */ 1"), None);
        assert_eq!(h("SELECT 1, /*+ MAX_EXECUTION_TIME(5) */ 2"), None);
        assert_eq!(h("UPDATE /*+ MAX_EXECUTION_TIME(5) */ t SET a = 1"), None);
        assert_eq!(h("SELECTx /*+ MAX_EXECUTION_TIME(5) */"), None);
        assert_eq!(h("SELECT /*+ MAX_EXECUTION_TIME(-5) */ 1"), None);
        assert_eq!(h("SELECT /*+ MAX_EXECUTION_TIME(5 */ 1"), None);
        assert_eq!(h("SELECT"), None);
        assert_eq!(h("SEL"), None);
    }

    #[test]
    fn select_options_that_change_nothing_are_dropped() {
        let o = |x: &str| {
            select_options(x)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(o("SELECT  SQL_NO_CACHE `id` FROM t"), "SELECT `id` FROM t");
        assert_eq!(
            o("select distinct sql_cache high_priority a from t"),
            "select distinct a from t"
        );
        assert_eq!(
            o("SELECT sql_no_cache_col FROM t"),
            "SELECT sql_no_cache_col FROM t"
        );
        assert!(matches!(
            select_options("SELECT 1"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(matches!(
            select_options("UPDATE t SET a=1"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn binary_literals_become_hex_literals() {
        let sql = b"INSERT INTO t VALUES (1,'ok\\'s','ab\\0\xff\xfe''x',\"\xff\")";
        assert_eq!(
            binary_literals(sql).as_deref(),
            Some("INSERT INTO t VALUES (1,'ok\\'s',X'616200FFFE2778',X'FF')")
        );
        // A bad byte outside a literal, or an unclosed literal.
        assert_eq!(binary_literals(b"SELECT \xff"), None);
        assert_eq!(binary_literals(b"SELECT '\xff"), None);
    }

    #[test]
    fn executable_comments_run_their_body_by_version() {
        let e = |x: &str| executable_comments(x).into_owned();
        assert_eq!(
            e("/*!40100 SET @@SQL_MODE='' */").trim(),
            "SET @@SQL_MODE=''"
        );
        assert_eq!(
            e("SELECT /*! 1 + */ 1")
                .split_whitespace()
                .collect::<Vec<_>>(),
            vec!["SELECT", "1", "+", "1"]
        );
        assert_eq!(e("SELECT 1 /*!90000 + 5 */").trim(), "SELECT 1");
        assert_eq!(e("/*M!100100 SET x=1 */ SELECT 2").trim(), "SELECT 2");
        assert_eq!(e("/*M!999999\\- enable the sandbox mode */").trim(), "");
        // Quotes and plain comments are left alone.
        assert_eq!(
            e("SELECT '/*!50000 no */' /*!50000 , 3 */"),
            "SELECT '/*!50000 no */'   , 3  "
        );
        assert!(matches!(
            executable_comments("SELECT 1 /* x */"),
            std::borrow::Cow::Borrowed(_)
        ));
        // mysqldump's view header.
        let v = e("/*!50001 CREATE ALGORITHM=UNDEFINED */\n/*!50013 DEFINER=`root`@`localhost` SQL SECURITY DEFINER */\n/*!50001 VIEW `v` AS select 1 AS `a` */");
        assert_eq!(v.split_whitespace().collect::<Vec<_>>().join(" "), "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 1 AS `a`");
    }

    #[test]
    fn splits_at_top_level_semicolons_only() {
        let s = split_statements("select 'a;b'; select \"c;\" ; -- x;\n select 1; /* ; */ ");
        assert_eq!(s, vec!["select 'a;b'", "select \"c;\"", "-- x;\n select 1"]);
    }

    #[test]
    fn connector_j_set_list_is_read() {
        let p = classify(
            "SET autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES'), NAMES utf8mb4 COLLATE utf8mb4_general_ci",
        )
        .unwrap();
        let Pre::Set(items) = p else { panic!("{p:?}") };
        assert_eq!(items.len(), 3);
        assert_eq!(
            items[0],
            SetItem::Var(VarScope::Session, "autocommit".into(), "1".into())
        );
        assert!(
            matches!(&items[1], SetItem::Var(_, n, v) if n == "sql_mode" && v.contains("concat"))
        );
        assert_eq!(
            items[2],
            SetItem::Names("utf8mb4".into(), Some("utf8mb4_general_ci".into()))
        );
    }

    #[test]
    fn set_session_transaction_keeps_its_scope() {
        let Pre::Set(items) =
            classify("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            items,
            vec![SetItem::Isolation(
                VarScope::Session,
                "READ COMMITTED".into()
            )]
        );
        let Pre::Set(items) = classify("set @@session.tx_isolation='REPEATABLE-READ'").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            items,
            vec![SetItem::Var(
                VarScope::Session,
                "tx_isolation".into(),
                "'REPEATABLE-READ'".into()
            )]
        );
    }

    #[test]
    fn show_forms_are_read() {
        assert_eq!(
            classify("SHOW SESSION VARIABLES LIKE 'auto%'").unwrap(),
            Pre::Show(Show::Variables(VarScope::Session, Some("auto%".into())))
        );
        assert_eq!(
            classify("show table status like 'sbtest1'").unwrap(),
            Pre::Show(Show::TableStatus(None, Some("sbtest1".into())))
        );
        assert_eq!(
            classify("SHOW CREATE TABLE db.t").unwrap(),
            Pre::Show(Show::CreateTable(Some("db".into()), "t".into()))
        );
    }

    #[test]
    fn lock_in_share_mode_becomes_for_share() {
        assert_eq!(
            classify("SELECT c FROM t WHERE id=1 LOCK IN SHARE MODE").unwrap(),
            Pre::Sql("SELECT c FROM t WHERE id=1 FOR SHARE".into())
        );
        assert_eq!(
            classify("rollback to savepoint s1").unwrap(),
            Pre::RollbackTo("s1".into())
        );
        assert_eq!(classify("/* ping */").unwrap(), Pre::Nothing);
    }
}
