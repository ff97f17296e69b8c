//! A real `cairndb server` for end-to-end tests: started on a free port
//! with TLS off, killed when dropped, and the client helpers the tests
//! share (connect as a user, a server error's code).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use mysql_async::{Conn, Opts};

/// A running server; killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server command for `dir` (port 0, two worker threads, no TLS)
/// with `extra` options.
pub fn command(dir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cairndb"));
    c.arg("server")
        .arg(format!("--datadir={}", dir.display()))
        .arg("--port=0")
        .arg("--worker-threads=2")
        .arg("--ssl=0")
        .args(extra);
    c
}

/// Starts the server on `dir`; returns once it listens.
pub fn start(dir: &Path, extra: &[&str]) -> Server {
    let mut child = command(dir, extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut port = None;
    for line in BufReader::new(out).lines() {
        let line = line.unwrap();
        if let Some(addr) = line.split("listening on ").nth(1) {
            port = addr.rsplit(':').next().and_then(|p| p.trim().parse().ok());
            break;
        }
    }
    Server {
        child,
        port: port.expect("the server printed where it listens"),
    }
}

/// Connects as `user` with password `pw` (empty: none).
pub async fn connect(port: u16, user: &str, pw: &str) -> Result<Conn, mysql_async::Error> {
    let url = if pw.is_empty() {
        format!("mysql://{user}@127.0.0.1:{port}/")
    } else {
        format!("mysql://{user}:{pw}@127.0.0.1:{port}/")
    };
    Conn::new(Opts::from_url(&url).unwrap()).await
}

/// The code of a server error.
pub fn code(e: mysql_async::Error) -> u16 {
    match e {
        mysql_async::Error::Server(s) => s.code,
        other => panic!("expected a server error, got {other}"),
    }
}
