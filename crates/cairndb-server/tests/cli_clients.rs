//! Real clients in other languages, when installed (each test says so and
//! passes when its client is missing; `.ci/run` installs them): the
//! `mariadb` command-line client (MariaDB Connector/C) and PyMySQL.

mod common;

use std::process::Command;

use common::{config, start};

fn have(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn mariadb_cli() {
    if !have("mariadb", &["--version"]) {
        eprintln!("SKIPPED mariadb_cli: no `mariadb` client (apt-get install mariadb-client)");
        return;
    }
    let srv = start(config());
    let port = srv.port.to_string();
    let o = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            "-uroot",
            "--batch",
            "-e",
            "select 1; select @@version_comment",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(out, "1\n1\n@@version_comment\nCairnDB\n");

    // A password, an error (exit status 1, the server's message).
    let o = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            "-uu",
            "-psecret",
            "-e",
            "bad",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("ERROR 1064 (42000)"), "{err}");
    let o = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            "-uu",
            "-pwrong",
            "-e",
            "select 1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ERROR 1045 (28000)"), "{err}");
}

const PY: &str = r#"
import sys, pymysql
port = int(sys.argv[1])
c = pymysql.connect(host="127.0.0.1", port=port, user="u", password="secret",
                    database="db", autocommit=None)
# The handshake's status flags: AUTOCOMMIT.
assert c.server_status & 2, c.server_status
assert c.get_autocommit() is True
assert c.get_server_info() == "8.0.36-CairnDB", c.get_server_info()
cur = c.cursor()
cur.execute("SELECT 1")
assert cur.fetchall() == ((1,),)
cur.execute("SELECT rows")
rows = cur.fetchall()
assert len(rows) == 3 and rows[1][1] is None, rows
assert [d[0] for d in cur.description] == ["id", "name", "score", "at"]
assert str(rows[0][3]) == "2024-01-01 12:30:15", rows[0]
# SET autocommit = 0 through the client: the OK's flags say so.
c.autocommit(False)
assert c.get_autocommit() is False
cur.execute("BEGIN")
assert c.server_status & 1
cur.execute("COMMIT")
try:
    cur.execute("bad")
    raise SystemExit("no error")
except pymysql.err.ProgrammingError as e:
    assert e.args[0] == 1064, e.args
c.ping()
c.close()
print("pymysql ok")
"#;

#[test]
fn pymysql() {
    if !have("python3", &["-c", "import pymysql"]) {
        eprintln!("SKIPPED pymysql: python3 cannot import pymysql (pip install PyMySQL)");
        return;
    }
    let srv = start(config());
    let o = Command::new("python3")
        .args(["-c", PY, &srv.port.to_string()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("pymysql ok"));
}
