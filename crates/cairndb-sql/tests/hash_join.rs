//! Joins whose condition no index serves, read through a hash table:
//! the same rows in the same order as the nested loop (the condition
//! written so that no hash join applies gives the reference), for
//! inner and LEFT joins, NULL keys, collations, signed and unsigned
//! integers, dates, derived tables, and columns that compare across
//! types (which stay on the nested loop).

use cairndb_sql::Session;

mod common;
use common::{q, rows};

fn r(s: &mut Session, sql: &str) -> Vec<String> {
    rows(&q(s, sql))
}

fn setup(s: &mut Session) {
    q(s, "CREATE DATABASE d");
    q(s, "USE d");
    q(
        s,
        "CREATE TABLE a (id INT PRIMARY KEY, k INT, u BIGINT UNSIGNED, name VARCHAR(20), bn VARCHAR(20) COLLATE utf8mb4_bin, dt DATE, ks VARCHAR(10))",
    );
    q(
        s,
        "CREATE TABLE b (id INT PRIMARY KEY, k BIGINT, u INT, name VARCHAR(30), bn VARCHAR(30) COLLATE utf8mb4_bin, dt DATE, v INT)",
    );
    q(
        s,
        "INSERT INTO a VALUES (1, 1, 1, 'abc', 'abc', '2024-01-01', '1'), (2, 2, 2, 'ABC ', 'ABC', '2024-01-02', '2'), \
         (3, NULL, NULL, NULL, NULL, NULL, NULL), (4, 3, 3, 'x', 'x ', '2024-01-03', ' 3'), (5, 1, 1, 'Äbc', 'abc', '2024-01-01', '1.0')",
    );
    q(
        s,
        "INSERT INTO b VALUES (10, 1, 1, 'ABC', 'abc', '2024-01-01', 100), (11, 1, 1, 'abc', 'abc ', '2024-01-02', 101), \
         (12, NULL, NULL, NULL, NULL, NULL, 102), (13, 2, 2, 'x', 'x', '2024-01-03', 103), (14, 4, 4, 'y', 'y', '2024-01-04', 104)",
    );
}

fn session() -> (tempfile::TempDir, Session) {
    let (dir, mut s) = common::session();
    setup(&mut s);
    (dir, s)
}

/// The query with `cond`, and with `cond` made opaque to the hash join
/// (`x + 0`, `CONCAT(x)`), must give the same rows in the same order.
fn same(s: &mut Session, sql: &str, hashed: &str, opaque: &str) -> Vec<String> {
    let got = r(s, &sql.replace("{}", hashed));
    let want = r(s, &sql.replace("{}", opaque));
    assert_eq!(got, want, "{sql} with {hashed} against {opaque}");
    got
}

#[test]
fn hash_join_integer_keys_match_the_nested_loop() {
    let (_d, mut s) = session();
    let got = same(
        &mut s,
        "SELECT a.id, b.id FROM a JOIN b ON {}",
        "a.k = b.k",
        "a.k + 0 = b.k",
    );
    assert_eq!(got, vec!["1|10", "1|11", "2|13", "5|10", "5|11"]);
    // Signed against unsigned columns.
    same(
        &mut s,
        "SELECT a.id, b.id FROM a JOIN b ON {}",
        "a.u = b.u",
        "a.u + 0 = b.u",
    );
    // Written the other way round, and as a WHERE of a comma join.
    same(
        &mut s,
        "SELECT a.id, b.id FROM a, b WHERE {} ORDER BY b.v DESC",
        "b.k = a.k",
        "b.k = a.k + 0",
    );
}

#[test]
fn hash_join_left_join_keeps_unmatched_and_null_key_rows() {
    let (_d, mut s) = session();
    let got = same(
        &mut s,
        "SELECT a.id, b.id FROM a LEFT JOIN b ON {}",
        "a.k = b.k",
        "a.k + 0 = b.k",
    );
    assert_eq!(
        got,
        vec!["1|10", "1|11", "2|13", "3|NULL", "4|NULL", "5|10", "5|11"]
    );
    // A second condition on the joined table decides matching too.
    let got = same(
        &mut s,
        "SELECT a.id, b.id FROM a LEFT JOIN b ON {} AND b.v > 100",
        "a.k = b.k",
        "a.k + 0 = b.k",
    );
    assert_eq!(got, vec!["1|11", "2|13", "3|NULL", "4|NULL", "5|11"]);
}

#[test]
fn hash_join_strings_compare_under_their_collation() {
    let (_d, mut s) = session();
    // utf8mb4_general_ci: case, accents and trailing spaces do not count.
    let got = same(
        &mut s,
        "SELECT a.id, b.id FROM a JOIN b ON {}",
        "a.name = b.name",
        "CONCAT(a.name) = b.name",
    );
    assert_eq!(
        got,
        vec!["1|10", "1|11", "2|10", "2|11", "4|13", "5|10", "5|11"]
    );
    // utf8mb4_bin: case counts, trailing spaces do not.
    let got = same(
        &mut s,
        "SELECT a.id, b.id FROM a JOIN b ON {}",
        "a.bn = b.bn",
        "CONCAT(a.bn) = b.bn",
    );
    assert_eq!(got, vec!["1|10", "1|11", "4|13", "5|10", "5|11"]);
}

#[test]
fn hash_join_dates_and_cross_type_conditions() {
    let (_d, mut s) = session();
    same(
        &mut s,
        "SELECT a.id, b.id FROM a JOIN b ON {}",
        "a.dt = b.dt",
        "a.dt + INTERVAL 0 DAY = b.dt",
    );
    // A string column against an integer one compares as numbers: no
    // hash join, and the answer is MySQL's (' 3' and '1.0' match).
    let got = r(&mut s, "SELECT a.id, b.id FROM a JOIN b ON a.ks = b.k");
    assert_eq!(got, vec!["1|10", "1|11", "2|13", "5|10", "5|11"]);
}

#[test]
fn hash_join_over_derived_tables_and_three_tables() {
    let (_d, mut s) = session();
    same(
        &mut s,
        "SELECT a.id, x.id FROM a JOIN (SELECT id, k FROM b WHERE v < 104) AS x ON {}",
        "a.k = x.k",
        "a.k + 0 = x.k",
    );
    same(
        &mut s,
        "SELECT a.id, b.id, c.id FROM a JOIN b ON {} JOIN a AS c ON c.k = b.k",
        "a.k = b.k",
        "a.k + 0 = b.k",
    );
}

#[test]
fn hash_join_shows_in_explain() {
    let (_d, mut s) = session();
    let c = q(
        &mut s,
        "EXPLAIN SELECT a.id, b.id FROM a JOIN b ON a.k = b.k",
    );
    let extra: Vec<String> = c
        .rows
        .iter()
        .map(|row| common::text(row.last().unwrap_or(&cairndb_sql::Value::Null)))
        .collect();
    assert_eq!(extra.len(), 2);
    assert!(
        extra[1].contains("Using join buffer (hash join)"),
        "{extra:?}"
    );
    assert!(!extra[0].contains("hash join"), "{extra:?}");
}

#[test]
fn hash_join_of_two_tables_without_indexes_over_many_rows() {
    let (_d, mut s) = session();
    q(
        &mut s,
        "CREATE TABLE big1 (id INT PRIMARY KEY, g INT, v INT)",
    );
    q(
        &mut s,
        "CREATE TABLE big2 (id INT PRIMARY KEY, g INT, w INT)",
    );
    for chunk in 0..20 {
        let vals: Vec<String> = (0..1000)
            .map(|i| {
                let id = chunk * 1000 + i;
                format!("({id}, {}, {})", id % 5000, id % 7)
            })
            .collect();
        q(
            &mut s,
            &format!("INSERT INTO big1 VALUES {}", vals.join(",")),
        );
        q(
            &mut s,
            &format!("INSERT INTO big2 VALUES {}", vals.join(",")),
        );
    }
    // 20,000 x 20,000 rows; each g value is on 4 rows of each side.
    let got = r(
        &mut s,
        "SELECT COUNT(*), SUM(big1.v * big2.w) FROM big1 JOIN big2 ON big1.g = big2.g",
    );
    let mut sum = 0i64;
    for g in 0..5000i64 {
        let ids: Vec<i64> = (0..4).map(|k| g + 5000 * k).collect();
        for x in &ids {
            for y in &ids {
                sum += (x % 7) * (y % 7);
            }
        }
    }
    assert_eq!(got, vec![format!("80000|{sum}")]);
}
