//! Measures what running session calls off the async scheduler costs per
//! command: a trivial backend answers `SELECT 1` with one row; blocking
//! raw clients on 127.0.0.1 send COM_QUERY round trips back to back, one
//! client and then several at once; each [`Executor`] is timed in turn
//! against `Inline` (the session called on the connection's task).
//!
//! usage: cargo run --release -p cairndb-server --example overhead [QUERIES] [CLIENTS] [EXECUTOR...]
//!
//! EXECUTOR is inline, block-in-place or blocking-pool (default: all
//! three, in that order). On a shared machine, alternate runs of one
//! executor each and take medians.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairndb_server::{
    Backend, Column, ColumnType, Config, Executor, Prepared, Results, Server, Session, SqlError,
    StatusFlags, Value,
};

struct One;
struct OneSession;

impl Backend for One {
    type Session = OneSession;
    fn open_session(&self, _: u32, _: &str, _: Option<&str>) -> Result<OneSession, SqlError> {
        Ok(OneSession)
    }
}

impl Session for OneSession {
    fn query(&mut self, _sql: &str, out: &mut dyn Results) {
        out.begin_result_set(&[Column::new("1", ColumnType::MYSQL_TYPE_LONGLONG)]);
        let r = out.row();
        r.int(1);
        r.finish();
        out.end_result_set(0);
    }
    fn prepare(&mut self, _: u32, _: &str) -> Result<Prepared, SqlError> {
        Err(SqlError::not_supported("prepare"))
    }
    fn execute(&mut self, _: u32, _: &[Value<'_>], out: &mut dyn Results) {
        out.error(SqlError::not_supported("execute"));
    }
    fn close_statement(&mut self, _: u32) {}
    fn reset_statement(&mut self, _: u32) {}
    fn init_db(&mut self, _: &str) -> Result<(), SqlError> {
        Ok(())
    }
    fn reset_connection(&mut self) {}
    fn status(&self) -> StatusFlags {
        StatusFlags::SERVER_STATUS_AUTOCOMMIT
    }
}

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let l = (payload.len() as u32).to_le_bytes();
    let mut v = vec![l[0], l[1], l[2], seq];
    v.extend_from_slice(payload);
    v
}

fn read_packet(s: &mut TcpStream, buf: &mut Vec<u8>) -> u8 {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).expect("header");
    let n = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
    buf.resize(n, 0);
    s.read_exact(buf).expect("payload");
    buf.first().copied().unwrap_or(0)
}

fn login(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_nodelay(true).expect("nodelay");
    let mut buf = Vec::new();
    read_packet(&mut s, &mut buf);
    // PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | DEPRECATE_EOF
    let caps: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x0100_0000;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend((1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend([0u8; 23]);
    p.extend(b"root\0\0mysql_native_password\0");
    s.write_all(&packet(1, &p)).expect("login");
    assert_eq!(read_packet(&mut s, &mut buf), 0, "login OK");
    s
}

/// Runs `n` SELECT 1 round trips; returns each one's latency.
fn client(port: u16, n: usize) -> Vec<Duration> {
    let mut s = login(port);
    let q = packet(0, b"\x03SELECT 1");
    let mut buf = Vec::with_capacity(64);
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        s.write_all(&q).expect("send");
        // column count, column, row, OK(0xFE)
        for _ in 0..3 {
            read_packet(&mut s, &mut buf);
        }
        assert_eq!(read_packet(&mut s, &mut buf), 0xFE);
        lat.push(t.elapsed());
    }
    lat
}

fn run(executor: Executor, queries: usize, clients: usize) -> (f64, f64, f64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = rt
        .block_on(Server::bind(
            Config {
                port: 0,
                executor,
                ..Config::default()
            },
            Arc::new(One),
        ))
        .expect("bind");
    let port = server.local_addr().expect("addr").port();
    let h = rt.spawn(server.run(async {
        let _ = stop_rx.await;
    }));
    // Warm up.
    client(port, 2000);
    let t = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| std::thread::spawn(move || client(port, queries / clients)))
        .collect();
    let mut lat: Vec<Duration> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("client"))
        .collect();
    let secs = t.elapsed().as_secs_f64();
    let _ = stop_tx.send(());
    let _ = rt.block_on(h);
    lat.sort();
    let mean = lat.iter().sum::<Duration>().as_secs_f64() / lat.len() as f64 * 1e6;
    let p99 = lat[lat.len() * 99 / 100].as_secs_f64() * 1e6;
    (mean, p99, lat.len() as f64 / secs)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let queries: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let many: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(8);
    let mut executors: Vec<Executor> = args
        .map(|a| match a.as_str() {
            "inline" => Executor::Inline,
            "block-in-place" => Executor::BlockInPlace,
            "blocking-pool" => Executor::BlockingPool,
            other => panic!("unknown executor {other}"),
        })
        .collect();
    if executors.is_empty() {
        executors = vec![
            Executor::Inline,
            Executor::BlockInPlace,
            Executor::BlockingPool,
        ];
    }
    println!("{queries} SELECT 1 round trips per run, 2 tokio workers; latency in us");
    for clients in [1, many] {
        for &ex in &executors {
            let (mean, p99, qps) = run(ex, queries, clients);
            println!(
                "clients {clients:>2}  {:<13} mean {mean:7.2}  p99 {p99:7.2}  {qps:8.0} q/s",
                format!("{ex:?}"),
            );
        }
    }
}
