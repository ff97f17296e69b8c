//! `cairndb-mysqld`: the MySQL-compatible server, in a library. The SQL
//! layer of `cairndb-sql` answers behind the protocol of `cairndb-server`;
//! this crate is the glue between them and a server's life around it
//! (open, accounts, TLS, listen, shut down, close).
//!
//! `cairndb server` parses its options into [`ServerOptions`] and calls
//! [`serve`]; tests, fuzz targets and tools call [`start`] to run the
//! same server in their own process, or put [`SqlBackend`] behind any
//! transport `cairndb_server` drives.
//!
//! The arrows run one way: this crate uses `cairndb-sql` and
//! `cairndb-server`, which know nothing of each other or of it.

mod backend;
mod serve;

pub use backend::{SqlBackend, SqlConn};
pub use serve::{serve, start, Running, ServerOptions, TlsSource};

#[cfg(test)]
mod tests {
    use super::*;
    use mysql_async::prelude::*;
    use mysql_async::{Conn, OptsBuilder};

    type R = Result<(), Box<dyn std::error::Error>>;

    fn options(dir: &std::path::Path) -> ServerOptions {
        let mut o = ServerOptions::new(dir);
        o.port = 0;
        o.worker_threads = 2;
        o
    }

    async fn connect(srv: &Running) -> Result<Conn, mysql_async::Error> {
        let o = OptsBuilder::default()
            .ip_or_hostname("127.0.0.1")
            .tcp_port(srv.addr().port())
            .user(Some("root"));
        Conn::new(o).await
    }

    fn code(r: Result<(), mysql_async::Error>) -> Option<u16> {
        match r {
            Err(mysql_async::Error::Server(s)) => Some(s.code),
            _ => None,
        }
    }

    /// The whole stack in one process: a server started on a free port
    /// with its generated TLS material, a real client, queries and
    /// prepared statements, a hostile expression and an error that keep
    /// the connection, a database name the dictionary cannot hold; then
    /// a stop and a restart on the same directory that finds the rows.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_started_in_process_serves_stops_and_restarts() -> R {
        let dir = tempfile::tempdir()?;
        let srv = start(options(dir.path()))?;
        assert!(dir.path().join("ca.pem").exists(), "TLS material was made");
        let mut c = connect(&srv).await?;
        c.query_drop("CREATE DATABASE d").await?;
        c.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, s VARCHAR(10), j JSON)")
            .await?;
        c.query_drop(r#"INSERT INTO d.t VALUES (1, 'one', '{"a": [1, 2]}'), (2, 'two', NULL)"#)
            .await?;
        let s: Option<String> = c.exec_first("SELECT s FROM d.t WHERE id = ?", (2,)).await?;
        assert_eq!(s.as_deref(), Some("two"));
        let j: Option<String> = c
            .query_first("SELECT j->'$.a[1]' FROM d.t WHERE id = 1")
            .await?;
        assert_eq!(j.as_deref(), Some("2"));
        // A 20 KB expression runs; an error leaves the connection usable.
        let long = format!("SELECT 1{}", "+1".repeat(9_999));
        let n: Option<i64> = c.query_first(long).await?;
        assert_eq!(n, Some(10_000));
        assert_eq!(code(c.query_drop("SELECT * FROM d.nope").await), Some(1146));
        assert!(c.query_drop("CREATE DATABASE `a\0b`").await.is_err());
        let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM d.t").await?;
        assert_eq!(n, Some(2));
        c.disconnect().await?;
        srv.stop()?;

        let srv = start(options(dir.path()))?;
        let mut c = connect(&srv).await?;
        let rows: Vec<(i64, String)> = c.query("SELECT id, s FROM d.t ORDER BY id").await?;
        assert_eq!(rows, [(1, "one".to_string()), (2, "two".to_string())]);
        c.disconnect().await?;
        srv.stop()?;
        Ok(())
    }

    /// A server that cannot start says why, and [`start`] returns it
    /// instead of hanging: root without a password may not listen beyond
    /// loopback.
    #[test]
    fn a_server_that_cannot_start_returns_its_error() -> R {
        let dir = tempfile::tempdir()?;
        let mut o = options(dir.path());
        o.bind = "0.0.0.0".into();
        o.tls = TlsSource::Off;
        match start(o) {
            Ok(_) => Err("root with an empty password listened on 0.0.0.0".into()),
            Err(e) => {
                assert!(e.contains("empty password"), "{e}");
                Ok(())
            }
        }
    }
}
