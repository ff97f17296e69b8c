//! Fuzz target: any bytes, taken as what a client sends over a MySQL
//! connection, make the server answer, send errors or close, never panic
//! or hang. The connection runs over in-memory streams with a mock SQL
//! layer that answers queries with a result set, and prepared statements
//! by echoing their parameters (so both row encoders run).
//!
//! The first byte picks where the bytes start: 0, at the handshake
//! response; 1, after a valid login (root, no password); 2, after a valid
//! login, with the rest cut into commands (a length byte, then that many
//! payload bytes, each sent as a packet with sequence id 0).
#![no_main]

use std::io::Cursor;
use std::sync::Arc;

use cairndb_server::internals::drive_connection;
use cairndb_server::{
    Backend, Column, ColumnType, Config, Executor, Prepared, Results, Session, SqlError,
    StatusFlags, Value,
};
use libfuzzer_sys::fuzz_target;

#[path = "common/wire.rs"]
mod wire;
use wire::{login, packet, runtime};

struct Mock;

struct MockSession {
    in_trans: bool,
}

impl Backend for Mock {
    type Session = MockSession;
    fn open_session(&self, _: u32, _: &str, db: Option<&str>) -> Result<MockSession, SqlError> {
        match db {
            Some("x") => Err(SqlError::bad_db("x")),
            _ => Ok(MockSession { in_trans: false }),
        }
    }
}

fn echo(params: &[Value<'_>], out: &mut dyn Results) {
    let cols: Vec<Column> = params
        .iter()
        .map(|v| {
            let t = match v {
                Value::Null => ColumnType::MYSQL_TYPE_NULL,
                Value::Int(_) | Value::UInt(_) => ColumnType::MYSQL_TYPE_LONGLONG,
                Value::Float(_) => ColumnType::MYSQL_TYPE_FLOAT,
                Value::Double(_) => ColumnType::MYSQL_TYPE_DOUBLE,
                Value::Bytes(_) => ColumnType::MYSQL_TYPE_BLOB,
                Value::DateTime(_) => ColumnType::MYSQL_TYPE_DATETIME,
                Value::Time(_) => ColumnType::MYSQL_TYPE_TIME,
            };
            Column::new("p", t)
        })
        .collect();
    out.begin_result_set(&cols);
    let r = out.row();
    for v in params {
        match *v {
            Value::Null => r.null(),
            Value::Int(x) => r.int(x),
            Value::UInt(x) => r.uint(x),
            Value::Float(x) => r.double(f64::from(x)),
            Value::Double(x) => r.double(x),
            Value::Bytes(b) => r.bytes(b),
            Value::DateTime(d) => r.datetime(d),
            Value::Time(t) => r.time(t),
        }
    }
    r.finish();
    out.end_result_set(0);
}

impl Session for MockSession {
    fn query(&mut self, sql: &str, out: &mut dyn Results) {
        for s in sql.split(';') {
            match s.trim() {
                "" => {}
                "begin" => {
                    self.in_trans = true;
                    out.set_status(self.status());
                    out.ok(0, 0, 0, "");
                }
                s if s.starts_with('s') => {
                    let cols = [
                        Column::new("a", ColumnType::MYSQL_TYPE_LONG),
                        Column::new("b", ColumnType::MYSQL_TYPE_VAR_STRING),
                    ];
                    out.begin_result_set(&cols);
                    for (i, w) in s.split(' ').enumerate() {
                        let r = out.row();
                        r.int(i as i64);
                        r.bytes(w.as_bytes());
                        r.finish();
                    }
                    out.end_result_set(0);
                }
                s if s.starts_with('i') => out.ok(1, 2, 0, s),
                s => out.error(SqlError::syntax(s)),
            }
            if !out.multi_statements() {
                break;
            }
        }
    }
    fn prepare(&mut self, _stmt: u32, sql: &str) -> Result<Prepared, SqlError> {
        if sql.starts_with('x') {
            return Err(SqlError::syntax(sql));
        }
        Ok(Prepared {
            params: sql.matches('?').count().min(64) as u16,
            columns: vec![Column::new("c", ColumnType::MYSQL_TYPE_VAR_STRING)],
        })
    }
    fn execute(&mut self, _stmt: u32, params: &[Value<'_>], out: &mut dyn Results) {
        echo(params, out);
    }
    fn close_statement(&mut self, _stmt: u32) {}
    fn reset_statement(&mut self, _stmt: u32) {}
    fn init_db(&mut self, db: &str) -> Result<(), SqlError> {
        if db == "x" {
            Err(SqlError::bad_db(db))
        } else {
            Ok(())
        }
    }
    fn reset_connection(&mut self) {
        self.in_trans = false;
    }
    fn status(&self) -> StatusFlags {
        if self.in_trans {
            StatusFlags::SERVER_STATUS_AUTOCOMMIT | StatusFlags::SERVER_STATUS_IN_TRANS
        } else {
            StatusFlags::SERVER_STATUS_AUTOCOMMIT
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let input = match mode % 3 {
        0 => rest.to_vec(),
        1 => {
            let mut v = login(b"db");
            v.extend_from_slice(rest);
            v
        }
        _ => {
            let mut v = login(b"db");
            let mut r = rest;
            while let Some((&n, tail)) = r.split_first() {
                let n = usize::from(n).min(tail.len());
                let (cmd, tail) = tail.split_at(n);
                v.extend(packet(0, cmd));
                r = tail;
            }
            v
        }
    };
    let config = Config {
        max_allowed_packet: 1 << 16,
        executor: Executor::Inline,
        ..Config::default()
    };
    runtime().block_on(drive_connection(
        config,
        Arc::new(Mock),
        Cursor::new(input),
        tokio::io::sink(),
    ));
});
