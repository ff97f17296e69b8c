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

/// EXPLAIN's (table, type) per row, in reading order.
fn plan_order(s: &mut Session, sql: &str) -> Vec<(String, String)> {
    let c = q(s, &format!("EXPLAIN {sql}"));
    c.rows
        .iter()
        .map(|row| {
            let cell = |i: usize| common::text(row.get(i).unwrap_or(&cairndb_sql::Value::Null));
            (cell(2), cell(3))
        })
        .collect()
}

/// Twelve tables of ten rows joined by a chain of `t_i.b = t_{i+1}.a`
/// (`a` the primary key), listed in a scrambled FROM order with one
/// constant: read in FROM order, t7 and t3 have no condition between
/// them and the product grows to 10^12 rows; read in the order the
/// conditions bind, each table after the first is one key lookup.
#[test]
fn inner_joins_are_read_in_the_order_their_conditions_bind() {
    let (_d, mut s) = session();
    let b_of = |t: i64, a: i64| (a * [1, 3, 7, 9][(t % 4) as usize] + t) % 10 + 1;
    for t in 1..=12i64 {
        q(
            &mut s,
            &format!("CREATE TABLE t{t} (a INT PRIMARY KEY, b INT, x VARCHAR(20))"),
        );
        let vals: Vec<String> = (1..=10)
            .map(|a| format!("({a}, {}, 't{t}-{a}')", b_of(t, a)))
            .collect();
        q(
            &mut s,
            &format!("INSERT INTO t{t} VALUES {}", vals.join(",")),
        );
    }
    let from = [7, 3, 12, 1, 9, 5, 11, 2, 8, 4, 10, 6]
        .map(|t| format!("t{t}"))
        .join(", ");
    let chain: Vec<String> = (1..12)
        .map(|i| {
            if i % 2 == 0 {
                format!("t{i}.b = t{}.a", i + 1)
            } else {
                format!("t{}.a = t{i}.b", i + 1)
            }
        })
        .collect();
    let cols = (1..=12)
        .map(|t| format!("t{t}.x"))
        .collect::<Vec<_>>()
        .join(", ");
    for start in 1..=10i64 {
        let sql = format!(
            "SELECT {cols} FROM {from} WHERE {} AND t1.a = {start}",
            chain.join(" AND ")
        );
        let mut a = start;
        let mut want = Vec::new();
        for t in 1..=12 {
            want.push(format!("t{t}-{a}"));
            a = b_of(t, a);
        }
        assert_eq!(r(&mut s, &sql), vec![want.join("|")], "{sql}");
        if start == 1 {
            let order = plan_order(&mut s, &sql);
            assert_eq!(order.len(), 12);
            assert_eq!(order[0].0, "t1", "{order:?}");
            assert!(order.iter().all(|(_, ty)| ty != "ALL"), "{order:?}");
        }
    }
    // Without the constant, the chain is still followed from the first
    // table in FROM order that starts it: ten rows, not 10^12.
    let sql = format!("SELECT COUNT(*) FROM {from} WHERE {}", chain.join(" AND "));
    assert_eq!(r(&mut s, &sql), vec!["10"]);
}

/// Reordered or not, a join gives the same rows: each query against
/// itself with `STRAIGHT_JOIN` (read in FROM order), over tables with
/// NULLs, duplicates, a secondary index and a table without a key.
#[test]
fn reordered_joins_give_the_rows_of_from_order() {
    let (_d, mut s) = session();
    for sql in [
        "CREATE TABLE p (id INT PRIMARY KEY, k INT, v INT, KEY (k))",
        "CREATE TABLE q (id INT PRIMARY KEY, pk INT, w VARCHAR(5))",
        "CREATE TABLE n (k INT, z INT)",
        "INSERT INTO p VALUES (1,1,10),(2,1,20),(3,2,30),(4,NULL,40),(5,3,50)",
        "INSERT INTO q VALUES (1,1,'a'),(2,2,'b'),(3,2,'c'),(4,NULL,'d'),(5,9,'e')",
        "INSERT INTO n VALUES (1,100),(2,200),(2,201),(NULL,300),(7,700)",
    ] {
        q(&mut s, sql);
    }
    let queries = [
        (
            "SELECT p.id, q.id, n.z FROM n {j} q {j} p",
            "WHERE q.pk = p.id AND n.k = p.k",
        ),
        (
            "SELECT p.id, q.id FROM q {j} p",
            "WHERE p.id = 2 AND q.pk = p.k",
        ),
        (
            "SELECT p.id, q.id, n.z FROM n {j} p {j} q",
            "WHERE p.k = n.k AND q.id IN (2, 3, 4) AND p.v >= 20",
        ),
        (
            "SELECT COUNT(*), SUM(n.z) FROM p {j} n {j} q",
            "WHERE n.k = q.pk OR p.v = 10",
        ),
        (
            "SELECT p.id, n.z FROM n {j} p",
            "WHERE p.id BETWEEN 2 AND 4",
        ),
        (
            "SELECT q.w, p.v FROM q {j} p",
            "ON p.k = q.pk WHERE q.id > 1",
        ),
        (
            "SELECT p.id, q.id, n.z FROM q {j} p",
            "ON q.pk = p.id LEFT JOIN n ON n.k = p.k WHERE p.v > 10",
        ),
        (
            "SELECT p.id, q.id, n.z FROM q {j} p",
            "ON q.pk = p.id LEFT JOIN n ON n.k = p.k WHERE n.z IS NULL OR p.id = 2",
        ),
        (
            "SELECT q.w, x.s FROM q {j} (SELECT k, SUM(z) AS s FROM n GROUP BY k) AS x {j} p",
            "WHERE p.id = 3 AND x.k = p.k AND q.pk = x.k",
        ),
    ];
    for (head, tail) in queries {
        let plain = format!("{} {tail}", head.replace("{j}", "JOIN"));
        let straight = format!("{} {tail}", head.replace("{j}", "STRAIGHT_JOIN"));
        let plain = if tail.starts_with("ON") {
            plain
        } else {
            plain.replace("JOIN", ",")
        };
        let mut a = r(&mut s, &plain);
        let mut b = r(&mut s, &straight);
        a.sort();
        b.sort();
        assert_eq!(a, b, "{plain}");
    }
    // STRAIGHT_JOIN reads in FROM order; the plain join starts at p.
    let order = |s: &mut Session, sql: &str| -> Vec<String> {
        plan_order(s, sql).into_iter().map(|(t, _)| t).collect()
    };
    assert_eq!(
        order(
            &mut s,
            "SELECT * FROM q STRAIGHT_JOIN p WHERE p.id = 2 AND q.pk = p.k"
        ),
        vec!["q", "p"]
    );
    assert_eq!(
        order(
            &mut s,
            "SELECT * FROM q JOIN p WHERE p.id = 2 AND q.pk = p.k"
        ),
        vec!["p", "q"]
    );
    // A LEFT JOIN keeps FROM order; the inner joins before it are
    // reordered among themselves.
    assert_eq!(
        order(
            &mut s,
            "SELECT * FROM q LEFT JOIN p ON p.id = q.pk WHERE q.id = 2"
        ),
        vec!["q", "p"]
    );
    assert_eq!(
        order(
            &mut s,
            "SELECT * FROM q JOIN p ON q.pk = p.k LEFT JOIN n ON n.k = p.k WHERE p.id = 2"
        ),
        vec!["p", "q", "n"]
    );
}

/// A table read through a covering secondary index must still give the
/// columns a later source's join condition reads: the index on `k`
/// covered `SELECT a.k, b.v ... WHERE a.k = 5`, and `a.bid`, read only by
/// b's ON, came back NULL, so no row matched.
#[test]
fn covering_index_keeps_the_columns_a_later_join_reads() {
    let (_d, mut s) = session();
    for sql in [
        "CREATE TABLE ca (id INT PRIMARY KEY, k INT, bid INT, KEY (k))",
        "CREATE TABLE cb (id INT PRIMARY KEY, v VARCHAR(5))",
        "INSERT INTO ca VALUES (1,5,10),(2,5,20),(3,6,10)",
        "INSERT INTO cb VALUES (10,'x'),(20,'y')",
    ] {
        q(&mut s, sql);
    }
    for sql in [
        "SELECT ca.k, cb.v FROM ca JOIN cb ON cb.id = ca.bid WHERE ca.k = 5",
        "SELECT ca.k, cb.v FROM ca STRAIGHT_JOIN cb ON cb.id = ca.bid WHERE ca.k = 5",
        "SELECT ca.k, cb.v FROM ca LEFT JOIN cb ON cb.id = ca.bid WHERE ca.k = 5",
    ] {
        let mut got = r(&mut s, sql);
        got.sort();
        assert_eq!(got, vec!["5|x", "5|y"], "{sql}");
    }
}
