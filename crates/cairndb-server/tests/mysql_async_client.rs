//! The `mysql_async` client library against the server and the mock SQL
//! layer (tests/common), over TCP on 127.0.0.1: text queries, prepared
//! statements with every parameter type (and long data), multi-statements,
//! errors, ping, reset, authentication, limits, large payloads both ways,
//! and graceful shutdown; under each executor.

mod common;

use std::time::{Duration, Instant};

use cairndb_server::{AuthPlugin, Config, Executor};
use common::{config, start};
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, Value};

async fn connect(url: &str) -> Result<Conn, mysql_async::Error> {
    Conn::new(Opts::from_url(url).unwrap()).await
}

fn server_code(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(s) => Some(s.code),
        _ => None,
    }
}

async fn exercise(cfg: Config) {
    let srv = start(cfg);
    let mut c = connect(&srv.url("u", "secret")).await.unwrap();

    // Text protocol.
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    let vc: Option<String> = c.query_first("SELECT @@version_comment").await.unwrap();
    assert_eq!(vc.as_deref(), Some("CairnDB"));
    let rows: Vec<(i64, Option<String>, f64, String)> = c.query("SELECT rows").await.unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows[0],
        (1, Some("name1".into()), 1.5, "2024-01-01 12:30:15".into())
    );
    assert_eq!(rows[1].1, None);
    let e = c.query_drop("bad").await.unwrap_err();
    assert_eq!(server_code(&e), Some(1064));
    // The connection is still usable after an error.
    assert_eq!(c.query_first::<i64, _>("SELECT 1").await.unwrap(), Some(1));

    // OK packet fields.
    c.query_drop("INSERT INTO t VALUES (1), (2)").await.unwrap();
    assert_eq!(c.affected_rows(), 2);
    assert_eq!(c.last_insert_id(), Some(42));
    assert_eq!(c.get_warnings(), 1);
    assert_eq!(c.info().as_ref(), "Records: 2  Duplicates: 0  Warnings: 1");

    // Multi-statements: several results, MORE_RESULTS between them.
    let mut r = c
        .query_iter("SELECT 1; SELECT rows; INSERT INTO t VALUES (1); SELECT @@version_comment")
        .await
        .unwrap();
    let a: Vec<i64> = r.collect().await.unwrap();
    assert_eq!(a, vec![1]);
    let b: Vec<(i64, Option<String>, f64, String)> = r.collect().await.unwrap();
    assert_eq!(b.len(), 3);
    let ins: Vec<mysql_async::Row> = r.collect().await.unwrap();
    assert!(ins.is_empty());
    assert_eq!(r.affected_rows(), 2);
    let d: Vec<String> = r.collect().await.unwrap();
    assert_eq!(d, vec!["CairnDB".to_string()]);
    assert!(r.is_empty());
    drop(r);
    // An error in the middle ends the answer; earlier results arrive.
    let mut r = c.query_iter("SELECT 1; bad; SELECT 1").await.unwrap();
    let a: Vec<i64> = r.collect().await.unwrap();
    assert_eq!(a, vec![1]);
    let e = r.collect::<i64>().await.unwrap_err();
    assert_eq!(server_code(&e), Some(1064));
    drop(r);
    assert_eq!(c.query_first::<i64, _>("SELECT 1").await.unwrap(), Some(1));

    // Prepared statements, every parameter type, echoed back in binary.
    let stmt = c
        .prep("SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?")
        .await
        .unwrap();
    assert_eq!(stmt.num_params(), 11);
    let params = vec![
        Value::Int(-5),
        Value::Int(i64::MIN),
        Value::UInt(u64::MAX),
        Value::Float(1.25),
        Value::Double(-2.5e300),
        Value::Bytes(b"text \xe2\x9c\x93".to_vec()),
        Value::Bytes(vec![0, 1, 2, 255]),
        Value::NULL,
        Value::Date(2024, 2, 29, 0, 0, 0, 0),
        Value::Date(1999, 12, 31, 23, 59, 58, 123456),
        Value::Time(true, 2, 3, 4, 5, 6),
    ];
    let row: mysql_async::Row = c.exec_first(&stmt, params.clone()).await.unwrap().unwrap();
    let got: Vec<Value> = row.unwrap();
    assert_eq!(got.len(), params.len());
    assert_eq!(got[0], Value::Int(-5));
    assert_eq!(got[1], Value::Int(i64::MIN));
    assert_eq!(got[2], Value::UInt(u64::MAX));
    assert_eq!(got[3], Value::Float(1.25));
    assert_eq!(got[4], Value::Double(-2.5e300));
    assert_eq!(got[5], Value::Bytes(b"text \xe2\x9c\x93".to_vec()));
    assert_eq!(got[6], Value::Bytes(vec![0, 1, 2, 255]));
    assert_eq!(got[7], Value::NULL);
    assert_eq!(got[8], Value::Date(2024, 2, 29, 0, 0, 0, 0));
    assert_eq!(got[9], Value::Date(1999, 12, 31, 23, 59, 58, 123456));
    assert_eq!(got[10], Value::Time(true, 2, 3, 4, 5, 6));
    // Again with the same statement: types sent again, values differ.
    let row: Option<(i64, Option<String>)> = c
        .exec_first("SELECT ?, ?", (7, None::<String>))
        .await
        .unwrap();
    assert_eq!(row, Some((7, None)));
    // A statement without parameters; a binary result set of three rows.
    let rows: Vec<(i64, Option<String>, f64, Value)> = c.exec("SELECT rows", ()).await.unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[2].0, 3);
    assert_eq!(rows[2].3, Value::Date(2024, 1, 3, 12, 30, 15, 0));
    // Prepare errors.
    let e = c.prep("bad").await.unwrap_err();
    assert_eq!(server_code(&e), Some(1064));
    c.close(stmt).await.unwrap();

    // A parameter over 16 MiB goes as COM_STMT_SEND_LONG_DATA.
    let big = vec![b'z'; 17 << 20];
    let back: Option<Vec<u8>> = c.exec_first("SELECT ?", (big.clone(),)).await.unwrap();
    assert_eq!(back.as_deref().map(|b| b.len()), Some(big.len()));
    assert!(back.unwrap() == big);
    // A query over 16 MiB arrives in several packets.
    let q = format!("SELECT length /*{}*/", "y".repeat(17 << 20));
    let len: Option<u64> = c.query_first(q.as_str()).await.unwrap();
    assert_eq!(len, Some(q.len() as u64));
    // A result larger than the spill threshold streams (2 MiB).
    let rows: Vec<(i32, Vec<u8>)> = c.query("SELECT big 2000").await.unwrap();
    assert_eq!(rows.len(), 2000);
    assert_eq!(rows[1999].0, 1999);
    let rows: Vec<(i32, Vec<u8>)> = c.exec("SELECT big 2000", ()).await.unwrap();
    assert_eq!(rows.len(), 2000);

    // Ping, reset (COM_RESET_CONNECTION), still usable.
    c.ping().await.unwrap();
    c.reset().await.unwrap();
    assert_eq!(c.query_first::<i64, _>("SELECT 1").await.unwrap(), Some(1));
    c.disconnect().await.unwrap();
    srv.stop().unwrap();
}

#[tokio::test]
async fn everything_under_block_in_place() {
    exercise(config()).await;
}

#[tokio::test]
async fn everything_under_the_blocking_pool() {
    exercise(Config {
        executor: Executor::BlockingPool,
        ..config()
    })
    .await;
}

#[tokio::test]
async fn everything_inline() {
    exercise(Config {
        executor: Executor::Inline,
        ..config()
    })
    .await;
}

#[tokio::test]
async fn authentication() {
    let srv = start(config());
    // No password for root.
    let mut c = connect(&format!("mysql://root@127.0.0.1:{}", srv.port))
        .await
        .unwrap();
    assert_eq!(c.query_first::<i64, _>("SELECT 1").await.unwrap(), Some(1));
    c.disconnect().await.unwrap();
    // Wrong password, unknown user, password where none is set.
    for url in [
        srv.url("u", "wrong"),
        srv.url("nobody", "x"),
        srv.url("root", "x"),
    ] {
        let e = connect(&url).await.unwrap_err();
        assert_eq!(server_code(&e), Some(1045), "{url}");
    }
    // Unknown database at connect.
    let e = connect(&format!("mysql://u:secret@127.0.0.1:{}/nope", srv.port))
        .await
        .unwrap_err();
    assert_eq!(server_code(&e), Some(1049));
    drop(srv);

    // A server greeting with caching_sha2_password: fast auth.
    let srv = start(Config {
        auth_plugin: AuthPlugin::CachingSha2Password,
        ..config()
    });
    let mut c = connect(&srv.url("u", "secret")).await.unwrap();
    assert_eq!(c.query_first::<i64, _>("SELECT 1").await.unwrap(), Some(1));
    c.disconnect().await.unwrap();
    let e = connect(&srv.url("u", "wrong")).await.unwrap_err();
    assert_eq!(server_code(&e), Some(1045));
}

#[tokio::test]
async fn limits() {
    // max_connections: the second connection is refused at the greeting.
    let srv = start(Config {
        max_connections: 1,
        ..config()
    });
    let a = connect(&srv.url("u", "secret")).await.unwrap();
    let e = connect(&srv.url("u", "secret")).await.unwrap_err();
    assert_eq!(server_code(&e), Some(1040));
    a.disconnect().await.unwrap();
    // The slot is free again once the first has gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match connect(&srv.url("u", "secret")).await {
            Ok(c) => {
                c.disconnect().await.unwrap();
                break;
            }
            Err(e) if Instant::now() < deadline => {
                assert_eq!(server_code(&e), Some(1040));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    drop(srv);

    // max_allowed_packet: a larger query gets 1153 and the connection closes.
    let srv = start(Config {
        max_allowed_packet: 1 << 20,
        ..config()
    });
    let mut c = connect(&srv.url("u", "secret")).await.unwrap();
    let q = format!("SELECT length /*{}*/", "y".repeat(2 << 20));
    let e = c.query_drop(q.as_str()).await.unwrap_err();
    assert_eq!(server_code(&e), Some(1153), "{e}");
    assert!(c.ping().await.is_err());
    let mut c = connect(&srv.url("u", "secret")).await.unwrap();
    c.ping().await.unwrap();
    c.disconnect().await.unwrap();
}

#[tokio::test]
async fn oversized_query_gets_its_error_not_a_broken_pipe() {
    // A packet far larger than the socket buffers: the server sees the
    // length in the header while the client is still writing. Closing
    // then would reset the connection under the client's write; the
    // client must read ERR 1153 instead.
    let srv = start(Config {
        max_allowed_packet: 1 << 20,
        ..config()
    });
    for _ in 0..3 {
        let mut c = connect(&srv.url("u", "secret")).await.unwrap();
        let q = format!("SELECT length /*{}*/", "y".repeat(48 << 20));
        let e = c.query_drop(q.as_str()).await.unwrap_err();
        assert_eq!(server_code(&e), Some(1153), "{e}");
    }
    let mut c = connect(&srv.url("u", "secret")).await.unwrap();
    c.ping().await.unwrap();
    c.disconnect().await.unwrap();
}

#[tokio::test]
async fn graceful_shutdown_finishes_the_command_in_flight() {
    let mut srv = start(config());
    let mut busy = connect(&srv.url("u", "secret")).await.unwrap();
    let idle = connect(&srv.url("u", "secret")).await.unwrap();
    let port = srv.port;
    let q = tokio::spawn(async move {
        let r: Option<i64> = busy.query_first("SELECT sleep").await.unwrap();
        (r, busy)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    srv.signal();
    let (r, mut busy) = q.await.unwrap();
    assert_eq!(r, Some(1));
    // Then every connection is closed and the listener is gone.
    assert!(busy.ping().await.is_err());
    drop(idle);
    srv.stop().unwrap();
    assert!(connect(&format!("mysql://root@127.0.0.1:{port}"))
        .await
        .is_err());
}
