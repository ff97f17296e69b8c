//! Range reads and the sorting and duplicate removal after them: several
//! key ranges read through one iterator (forward, backward, inside a
//! transaction with its own writes, on a secondary index), and DISTINCT
//! with ORDER BY, which drops duplicates after sorting when the ORDER BY
//! covers every selected column and through a hash set otherwise.

mod common;

use common::{open, q, rows};

fn setup() -> (tempfile::TempDir, cairndb_sql::Session) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = cairndb_sql::Session::new(db, "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(20), KEY k_1 (k))",
    );
    let vals: Vec<String> = (1..=200)
        .map(|i| format!("({i}, {}, 'c{}')", (i * 7) % 50, i % 13))
        .collect();
    q(&mut s, &format!("INSERT INTO t VALUES {}", vals.join(",")));
    (dir, s)
}

/// The rows `sql` returns, computed by hand from the same data:
/// `(id, k, c)` for ids 1..=200.
fn data() -> Vec<(i64, i64, String)> {
    (1..=200)
        .map(|i| (i, (i * 7) % 50, format!("c{}", i % 13)))
        .collect()
}

#[test]
fn several_primary_key_ranges_forward_and_backward() {
    let (_d, mut s) = setup();
    let sql = "SELECT id FROM t WHERE id BETWEEN 5 AND 7 OR id BETWEEN 100 AND 102 \
               OR id BETWEEN 198 AND 250 OR id < 2";
    let want: Vec<String> = [1, 5, 6, 7, 100, 101, 102, 198, 199, 200]
        .iter()
        .map(|i| i.to_string())
        .collect();
    assert_eq!(rows(&q(&mut s, sql)), want);
    let mut back = want.clone();
    back.reverse();
    assert_eq!(rows(&q(&mut s, &format!("{sql} ORDER BY id DESC"))), back);
}

#[test]
fn several_secondary_index_ranges_count_and_list() {
    let (_d, mut s) = setup();
    let ranges = [(3, 5), (20, 21), (47, 60)];
    let cond = ranges
        .iter()
        .map(|(a, b)| format!("k BETWEEN {a} AND {b}"))
        .collect::<Vec<_>>()
        .join(" OR ");
    let hit = |k: i64| ranges.iter().any(|(a, b)| (*a..=*b).contains(&k));
    let n = data().iter().filter(|r| hit(r.1)).count();
    assert_eq!(
        rows(&q(&mut s, &format!("SELECT count(k) FROM t WHERE {cond}"))),
        [n.to_string()]
    );
    let mut want: Vec<(i64, i64)> = data()
        .iter()
        .filter(|r| hit(r.1))
        .map(|r| (r.1, r.0))
        .collect();
    want.sort();
    let want: Vec<String> = want.iter().map(|(k, id)| format!("{k}|{id}")).collect();
    assert_eq!(
        rows(&q(
            &mut s,
            &format!("SELECT k, id FROM t WHERE {cond} ORDER BY k, id")
        )),
        want
    );
    let mut back = want.clone();
    back.reverse();
    assert_eq!(
        rows(&q(
            &mut s,
            &format!("SELECT k, id FROM t WHERE {cond} ORDER BY k DESC, id DESC")
        )),
        back
    );
}

#[test]
fn ranges_inside_a_transaction_see_its_own_writes() {
    let (_d, mut s) = setup();
    q(&mut s, "BEGIN");
    q(&mut s, "DELETE FROM t WHERE id = 6");
    q(&mut s, "UPDATE t SET c = 'new' WHERE id = 101");
    q(&mut s, "INSERT INTO t VALUES (1000, 1, 'ins')");
    let sql = "SELECT id, c FROM t WHERE id BETWEEN 5 AND 7 OR id BETWEEN 100 AND 101 \
               OR id BETWEEN 999 AND 1001";
    let want = ["5|c5", "7|c7", "100|c9", "101|new", "1000|ins"];
    assert_eq!(rows(&q(&mut s, sql)), want);
    let mut back: Vec<&str> = want.to_vec();
    back.reverse();
    assert_eq!(rows(&q(&mut s, &format!("{sql} ORDER BY id DESC"))), back);
    q(&mut s, "ROLLBACK");
    assert_eq!(
        rows(&q(&mut s, sql)),
        ["5|c5", "6|c6", "7|c7", "100|c9", "101|c10"]
    );
}

#[test]
fn distinct_order_by_keeps_the_first_of_equal_strings() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = cairndb_sql::Session::new(open(dir.path()), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(
        &mut s,
        "CREATE TABLE u (id INT PRIMARY KEY, c VARCHAR(10), n INT)",
    );
    q(
        &mut s,
        "INSERT INTO u VALUES (1,'b',1),(2,'A',2),(3,'a',2),(4,NULL,3),(5,'B ',1),\
         (6,NULL,4),(7,'é',5),(8,'E',5),(9,'c',6)",
    );
    // Under utf8mb4_general_ci 'A' = 'a', 'b' = 'B ' and 'é' = 'E': the
    // first row met of each stays, NULLs are one group, NULL sorts first.
    assert_eq!(
        rows(&q(&mut s, "SELECT DISTINCT c FROM u ORDER BY c")),
        ["NULL", "A", "b", "c", "é"]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT DISTINCT c FROM u ORDER BY c DESC")),
        ["é", "c", "b", "A", "NULL"]
    );
    // Two columns, ORDER BY naming both in another order.
    assert_eq!(
        rows(&q(&mut s, "SELECT DISTINCT c, n FROM u ORDER BY n, c")),
        ["b|1", "A|2", "NULL|3", "NULL|4", "é|5", "c|6"]
    );
    // ORDER BY not covering the selected columns: duplicates go by hash.
    assert_eq!(
        rows(&q(&mut s, "SELECT DISTINCT n, c FROM u ORDER BY c")),
        ["3|NULL", "4|NULL", "2|A", "1|b", "6|c", "5|é"]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT DISTINCT c FROM u ORDER BY c LIMIT 2 OFFSET 1"
        )),
        ["A", "b"]
    );
}

#[test]
fn distinct_order_by_with_a_limit_over_many_duplicates() {
    // More rows than the bounded sort keeps (twice the limit, at least
    // 1024), so duplicates meet across its intermediate sorts.
    let dir = tempfile::tempdir().unwrap();
    let mut s = cairndb_sql::Session::new(open(dir.path()), "root");
    q(&mut s, "CREATE DATABASE d");
    q(&mut s, "USE d");
    q(&mut s, "CREATE TABLE v (id INT PRIMARY KEY, c VARCHAR(10))");
    let vals: Vec<String> = (0..5000)
        .map(|i| format!("({i}, 'v{:03}')", (i * 37) % 300))
        .collect();
    q(&mut s, &format!("INSERT INTO v VALUES {}", vals.join(",")));
    let want: Vec<String> = (0..300).map(|i| format!("v{i:03}")).collect();
    assert_eq!(
        rows(&q(&mut s, "SELECT DISTINCT c FROM v ORDER BY c LIMIT 10")),
        want[..10]
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT DISTINCT c FROM v ORDER BY c LIMIT 5 OFFSET 290"
        )),
        want[290..295]
    );
    assert_eq!(
        rows(&q(&mut s, "SELECT DISTINCT c FROM v ORDER BY c")),
        want
    );
    assert_eq!(
        rows(&q(
            &mut s,
            "SELECT count(*) FROM (SELECT DISTINCT c FROM v) x"
        )),
        ["300"]
    );
}

#[test]
fn order_by_an_expression_beside_a_selected_column() {
    let (_d, mut s) = setup();
    let got = rows(&q(
        &mut s,
        "SELECT id, c FROM t WHERE id BETWEEN 10 AND 20 ORDER BY k DESC, id",
    ));
    let mut want: Vec<(i64, i64, String)> = data()
        .into_iter()
        .filter(|r| (10..=20).contains(&r.0))
        .collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let want: Vec<String> = want.iter().map(|r| format!("{}|{}", r.0, r.2)).collect();
    assert_eq!(got, want);
    let got = rows(&q(
        &mut s,
        "SELECT c, SUM(k) FROM t WHERE id <= 26 GROUP BY c ORDER BY SUM(k) DESC, c LIMIT 3",
    ));
    let mut sums: std::collections::BTreeMap<String, i64> = Default::default();
    for r in data().into_iter().filter(|r| r.0 <= 26) {
        *sums.entry(r.2).or_default() += r.1;
    }
    let mut want: Vec<(String, i64)> = sums.into_iter().collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let want: Vec<String> = want
        .iter()
        .take(3)
        .map(|(c, n)| format!("{c}|{n}"))
        .collect();
    assert_eq!(got, want);
}
