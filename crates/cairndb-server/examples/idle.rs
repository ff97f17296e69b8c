//! Measures the memory one idle connection costs the server process: logs
//! in N raw clients (default 2000), then reads the resident set size
//! (VmRSS, Linux) before and after. The clients live in the same process
//! but hold only a socket each. Run with a descriptor limit above 2N.
//!
//! usage: cargo run --release -p cairndb-server --example idle [N]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use cairndb_server::{
    Backend, Config, Prepared, Results, Server, Session, SqlError, StatusFlags, Value,
};

struct B;
struct S;
impl Backend for B {
    type Session = S;
    fn open_session(&self, _: u32, _: &str, _: Option<&str>) -> Result<S, SqlError> {
        Ok(S)
    }
}
impl Session for S {
    fn query(&mut self, _: &str, out: &mut dyn Results) {
        out.ok(0, 0, 0, "");
    }
    fn prepare(&mut self, _: u32, _: &str) -> Result<Prepared, SqlError> {
        Ok(Prepared::default())
    }
    fn execute(&mut self, _: u32, _: &[Value<'_>], out: &mut dyn Results) {
        out.ok(0, 0, 0, "");
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

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn read_packet(s: &mut TcpStream) -> Vec<u8> {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).expect("header");
    let mut p = vec![0u8; u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize];
    s.read_exact(&mut p).expect("payload");
    p
}

fn login(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    read_packet(&mut s);
    let caps: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x0100_0000;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend((1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend([0u8; 23]);
    p.extend(b"root\0\0mysql_native_password\0");
    let l = (p.len() as u32).to_le_bytes();
    let mut pk = vec![l[0], l[1], l[2], 1];
    pk.extend(p);
    s.write_all(&pk).expect("login");
    assert_eq!(read_packet(&mut s).first(), Some(&0), "login OK");
    s
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server = rt
        .block_on(Server::bind(
            Config {
                port: 0,
                max_connections: n as u32 + 10,
                ..Config::default()
            },
            Arc::new(B),
        ))
        .expect("bind");
    let port = server.local_addr().expect("addr").port();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let h = rt.spawn(server.run(async {
        let _ = stop_rx.await;
    }));
    // One connection first, so lazily built runtime state is counted out.
    let first = login(port);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let before = rss_kib();
    let conns: Vec<TcpStream> = (0..n).map(|_| login(port)).collect();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let after = rss_kib();
    println!(
        "{n} idle connections: RSS {before} KiB -> {after} KiB, {:.1} KiB per connection",
        (after.saturating_sub(before)) as f64 / n as f64
    );
    drop(conns);
    drop(first);
    let _ = stop_tx.send(());
    let _ = rt.block_on(h);
}
