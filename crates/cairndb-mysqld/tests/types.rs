//! ENUM, SET, YEAR, TIME, BIT and JSON columns over the wire: the column
//! definitions MySQL sends for them (type and ENUM/SET flags) and their
//! values in the text protocol (COM_QUERY) and the binary protocol
//! (COM_STMT_EXECUTE results and parameters), read by the mysql_async
//! client, against a server running in the test's process.

use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::prelude::*;
use mysql_async::{Row, Value};

/// A server in this process on a free port (TLS off), as `cairndb
/// server` runs it.
fn start(dir: &std::path::Path) -> cairndb_mysqld::Running {
    let mut o = cairndb_mysqld::ServerOptions::new(dir);
    o.port = 0;
    o.worker_threads = 2;
    o.tls = cairndb_mysqld::TlsSource::Off;
    cairndb_mysqld::start(o).unwrap()
}

async fn connect(port: u16, user: &str, pw: &str) -> Result<mysql_async::Conn, mysql_async::Error> {
    let o = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass((!pw.is_empty()).then_some(pw));
    mysql_async::Conn::new(o).await
}

fn vals(r: &Row) -> Vec<Value> {
    (0..r.len()).map(|i| r.as_ref(i).unwrap().clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enum_set_year_time_and_bit_over_text_and_binary_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path());
    let mut c = connect(srv.addr().port(), "root", "").await.unwrap();
    c.query_drop("CREATE DATABASE d").await.unwrap();
    c.query_drop("USE d").await.unwrap();
    c.query_drop(
        "CREATE TABLE t (id INT PRIMARY KEY, e ENUM('a','b'), s SET('x','y','z'), \
         y YEAR, tm TIME(2), b BIT(10))",
    )
    .await
    .unwrap();
    c.query_drop(
        "INSERT INTO t VALUES (1,'b','z,x',0,'-25:01:02.5',b'1000000001'),\
         (2,'a','',2024,'10:00:00',1)",
    )
    .await
    .unwrap();

    // Text protocol.
    let rows: Vec<Row> = c
        .query("SELECT e, s, y, tm, b FROM t ORDER BY id")
        .await
        .unwrap();
    let cols = rows[0].columns_ref();
    assert_eq!(cols[0].column_type(), ColumnType::MYSQL_TYPE_STRING);
    assert!(cols[0].flags().contains(ColumnFlags::ENUM_FLAG));
    assert_eq!(cols[0].column_length(), 4);
    assert_eq!(cols[1].column_length(), 20);
    assert_eq!(cols[1].column_type(), ColumnType::MYSQL_TYPE_STRING);
    assert!(cols[1].flags().contains(ColumnFlags::SET_FLAG));
    assert_eq!(cols[2].column_type(), ColumnType::MYSQL_TYPE_YEAR);
    assert_eq!(cols[3].column_type(), ColumnType::MYSQL_TYPE_TIME);
    assert_eq!(cols[3].decimals(), 2);
    assert_eq!(cols[4].column_type(), ColumnType::MYSQL_TYPE_BIT);
    assert_eq!(cols[4].column_length(), 10);
    let b = |s: &[u8]| Value::Bytes(s.to_vec());
    assert_eq!(
        vals(&rows[0]),
        [
            b(b"b"),
            b(b"x,z"),
            b(b"0000"),
            b(b"-25:01:02.50"),
            b(&[0x02, 0x01])
        ]
    );
    assert_eq!(
        vals(&rows[1]),
        [
            b(b"a"),
            b(b""),
            b(b"2024"),
            b(b"10:00:00.00"),
            b(&[0x00, 0x01])
        ]
    );

    // Binary protocol: results.
    let rows: Vec<Row> = c
        .exec("SELECT e, s, y, tm, b, e+0 FROM t WHERE id = ?", (1,))
        .await
        .unwrap();
    let v = vals(&rows[0]);
    assert_eq!(v[0], b(b"b"));
    assert_eq!(v[1], b(b"x,z"));
    assert_eq!(mysql_async::from_value::<i64>(v[2].clone()), 0);
    assert_eq!(v[3], Value::Time(true, 1, 1, 1, 2, 500_000));
    assert_eq!(v[4], b(&[0x02, 0x01]));
    assert_eq!(mysql_async::from_value::<i64>(v[5].clone()), 2);

    // Binary protocol: parameters of each type, and a TIME parameter
    // compared with a TIME column.
    c.exec_drop(
        "INSERT INTO t VALUES (?,?,?,?,?,?)",
        (
            3,
            "B",
            "y,x,y",
            1999,
            Value::Time(false, 0, 1, 2, 3, 0),
            5u64,
        ),
    )
    .await
    .unwrap();
    let rows: Vec<Row> = c
        .exec(
            "SELECT id, e, s, y, tm, b+0 FROM t WHERE tm > ? ORDER BY tm",
            (Value::Time(true, 0, 0, 0, 0, 0),),
        )
        .await
        .unwrap();
    let got: Vec<(i64, String, String, i64, i64)> = rows
        .iter()
        .map(|r| {
            let tm = match r.as_ref(4).unwrap() {
                Value::Time(neg, d, h, m, s, _) => {
                    let secs = i64::from(*d) * 86_400
                        + i64::from(*h) * 3600
                        + i64::from(*m) * 60
                        + i64::from(*s);
                    if *neg {
                        -secs
                    } else {
                        secs
                    }
                }
                other => panic!("{other:?}"),
            };
            (
                r.get(0).unwrap(),
                r.get(1).unwrap(),
                r.get(2).unwrap(),
                r.get(3).unwrap(),
                tm,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (3, "b".into(), "x,y".into(), 1999, 3723),
            (2, "a".into(), "".into(), 2024, 36_000)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_over_text_and_binary_protocol_as_mysql_sends_it() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path());
    let mut c = connect(srv.addr().port(), "root", "").await.unwrap();
    c.query_drop("CREATE DATABASE d").await.unwrap();
    c.query_drop("USE d").await.unwrap();
    c.query_drop("CREATE TABLE t (id INT PRIMARY KEY, j JSON)")
        .await
        .unwrap();
    // A document as a parameter of a prepared INSERT.
    c.exec_drop(
        "INSERT INTO t VALUES (?, ?)",
        (1, r#"{"b": [1, 2.5], "a": "é\n"}"#),
    )
    .await
    .unwrap();
    let want = Value::Bytes(r#"{"a": "é\n", "b": [1, 2.5]}"#.as_bytes().to_vec());
    for binary in [false, true] {
        let rows: Vec<Row> = if binary {
            c.exec("SELECT j, j->'$.b[1]', j->>'$.a' FROM t WHERE id = ?", (1,))
                .await
                .unwrap()
        } else {
            c.query("SELECT j, j->'$.b[1]', j->>'$.a' FROM t WHERE id = 1")
                .await
                .unwrap()
        };
        let cols = rows[0].columns_ref();
        // MySQL sends JSON as MYSQL_TYPE_JSON, binary charset, BLOB flag.
        assert_eq!(cols[0].column_type(), ColumnType::MYSQL_TYPE_JSON);
        assert_eq!(cols[0].character_set(), 63);
        assert!(cols[0].flags().contains(ColumnFlags::BLOB_FLAG));
        assert_eq!(cols[1].column_type(), ColumnType::MYSQL_TYPE_JSON);
        let v = vals(&rows[0]);
        assert_eq!(v[0], want, "binary: {binary}");
        assert_eq!(v[1], Value::Bytes(b"2.5".to_vec()));
        assert_eq!(v[2], Value::Bytes("é\n".as_bytes().to_vec()));
    }
    // Invalid text is refused with 3140 and the connection stays usable.
    let e = c
        .exec_drop("INSERT INTO t VALUES (?, ?)", (2, "{oops"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("3140"), "{e}");
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM t").await.unwrap();
    assert_eq!(n, Some(1));
}
