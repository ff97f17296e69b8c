//! Accounts against the real `cairndb server`: the root account made at
//! the first start (empty password, or `--init-password-file`), logins
//! with both plugins against the stored hashes, a wrong password (1045),
//! `REQUIRE SSL` over plain TCP (1045) and over TLS (logged in, with the
//! mariadb client), the refusal to listen beyond
//! loopback while root's password is empty, the deprecated `--user`, and
//! the connection kept beyond `max_connections` for CONNECTION_ADMIN.

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;

use mysql_async::prelude::*;
use mysql_async::{Conn, Opts};

mod common;
use common::server::{code, command, connect, start, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logins_against_stored_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path(), &[]);
    // The first start made root@localhost with an empty password.
    let mut root = connect(srv.port, "root", "").await.unwrap();
    let cu: Option<String> = root.query_first("SELECT CURRENT_USER()").await.unwrap();
    assert_eq!(cu.as_deref(), Some("root@localhost"));
    root.query_drop("CREATE USER 'n'@'%' IDENTIFIED WITH mysql_native_password BY 'pw1'")
        .await
        .unwrap();
    root.query_drop("CREATE USER 's'@'%' IDENTIFIED WITH caching_sha2_password BY 'pw2'")
        .await
        .unwrap();
    root.query_drop("CREATE USER 't'@'%' IDENTIFIED BY 'pw3' REQUIRE SSL")
        .await
        .unwrap();
    root.query_drop("CREATE DATABASE d").await.unwrap();
    root.query_drop("CREATE TABLE d.x (id INT PRIMARY KEY)")
        .await
        .unwrap();

    // Both plugins: a native account, and a caching_sha2 one (the client
    // starts with the greeting's native plugin and is switched).
    let mut n = connect(srv.port, "n", "pw1").await.unwrap();
    let cu: Option<String> = n.query_first("SELECT CURRENT_USER()").await.unwrap();
    assert_eq!(cu.as_deref(), Some("n@%"));
    assert_eq!(
        code(n.query_drop("SELECT * FROM d.x").await.unwrap_err()),
        1142
    );
    let mut s = connect(srv.port, "s", "pw2").await.unwrap();
    let one: Option<i64> = s.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));

    // Wrong passwords, an unknown user, and a database not granted.
    assert_eq!(
        code(connect(srv.port, "n", "nope").await.unwrap_err()),
        1045
    );
    assert_eq!(code(connect(srv.port, "n", "").await.unwrap_err()), 1045);
    assert_eq!(
        code(connect(srv.port, "nobody", "x").await.unwrap_err()),
        1045
    );
    assert!(connect(srv.port, "s", "nope").await.is_err());
    let url = format!("mysql://n:pw1@127.0.0.1:{}/d", srv.port);
    let e = Conn::new(Opts::from_url(&url).unwrap()).await.unwrap_err();
    assert_eq!(code(e), 1044);

    // REQUIRE SSL: the right password over plain TCP is refused.
    assert_eq!(code(connect(srv.port, "t", "pw3").await.unwrap_err()), 1045);

    // A grant takes effect on the open connection; a password change on
    // the next login.
    root.query_drop("GRANT SELECT ON d.* TO n").await.unwrap();
    n.query_drop("SELECT * FROM d.x").await.unwrap();
    root.query_drop("ALTER USER n IDENTIFIED BY 'pw9'")
        .await
        .unwrap();
    assert_eq!(code(connect(srv.port, "n", "pw1").await.unwrap_err()), 1045);
    connect(srv.port, "n", "pw9").await.unwrap();
    drop(srv);

    // After a restart the accounts are there, root is not made again.
    let srv = start(dir.path(), &[]);
    connect(srv.port, "s", "pw2").await.unwrap();
    let mut n = connect(srv.port, "n", "pw9").await.unwrap();
    n.query_drop("SELECT * FROM d.x").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_password_file_and_the_loopback_rule() {
    // An empty root password: refused beyond loopback, saying why.
    let dir = tempfile::tempdir().unwrap();
    let out = command(dir.path(), &["--bind=0.0.0.0"]).output().unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("refusing to listen on 0.0.0.0"), "{msg}");
    assert!(msg.contains("empty password"), "{msg}");

    // --init-password-file: root's password from its first line.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("root.pw");
    std::fs::write(&f, "s3cret\nignored\n").unwrap();
    let data = dir.path().join("data");
    let opt = format!("--init-password-file={}", f.display());
    let srv = start(&data, &[&opt, "--bind=0.0.0.0"]);
    assert_eq!(code(connect(srv.port, "root", "").await.unwrap_err()), 1045);
    let mut root = connect(srv.port, "root", "s3cret").await.unwrap();
    root.query_drop("CREATE USER IF NOT EXISTS w")
        .await
        .unwrap();
    drop(srv);
    // Read only at the first start.
    std::fs::write(&f, "other\n").unwrap();
    let srv = start(&data, &[&opt]);
    connect(srv.port, "root", "s3cret").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deprecated_user_option_and_the_admin_connection() {
    let dir = tempfile::tempdir().unwrap();
    // A password on the command line is refused, saying where it goes.
    let out = command(dir.path(), &["--user=app:pw"]).output().unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains("shows in `ps`") && msg.contains("config file"),
        "{msg}"
    );
    assert!(!msg.contains("app:pw"), "{msg}");
    // Nor an account without one (a superuser with no password).
    let out = command(dir.path(), &["--user=app"]).output().unwrap();
    assert!(!out.status.success());
    // The config file may still name one.
    let etc = tempfile::tempdir().unwrap();
    let cnf = etc.path().join("my.cnf");
    std::fs::write(&cnf, "[server]\nuser = app:pw\n").unwrap();
    let cnf_opt = format!("--config={}", cnf.display());
    let mut child = command(dir.path(), &[&cnf_opt, "--max-connections=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
    let srv = Server {
        port: port.unwrap(),
        child,
    };
    let mut app = connect(srv.port, "app", "pw").await.unwrap();
    let cu: Option<String> = app.query_first("SELECT CURRENT_USER()").await.unwrap();
    assert_eq!(cu.as_deref(), Some("app@%"));
    app.query_drop("CREATE USER plain IDENTIFIED BY 'p'")
        .await
        .unwrap();
    // max_connections is taken: a plain account is refused, an account
    // with CONNECTION_ADMIN gets the one kept beyond it.
    assert_eq!(
        code(connect(srv.port, "plain", "p").await.unwrap_err()),
        1040
    );
    let mut root = connect(srv.port, "root", "").await.unwrap();
    root.query_drop("SELECT 1").await.unwrap();
    drop(srv);
    let mut err = String::new();
    std::fs::write(&cnf, "user = app:other\n").unwrap();
    let mut srv_child = command(dir.path(), &[&cnf_opt])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut e = srv_child.stderr.take().unwrap();
    let mut buf = [0u8; 4096];
    while !err.contains("--user=app: an account named app exists") {
        let n = e.read(&mut buf).unwrap();
        assert!(n > 0, "{err}");
        err.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(err.contains("deprecated"), "{err}");
    let _ = srv_child.kill();
    let _ = srv_child.wait();
}

/// A connection refused with 1040 after its login gives its slot back
/// before the error is sent: the account with CONNECTION_ADMIN that
/// connects right after it gets the connection kept beyond
/// `max_connections` every time (it could find the refused one still
/// counted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_frees_its_slot_before_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path(), &["--max-connections=1"]);
    let mut app = connect(srv.port, "root", "").await.unwrap();
    app.query_drop("CREATE USER plain IDENTIFIED BY 'p'")
        .await
        .unwrap();
    for _ in 0..20 {
        assert_eq!(
            code(connect(srv.port, "plain", "p").await.unwrap_err()),
            1040
        );
        let root = connect(srv.port, "root", "").await.unwrap();
        root.disconnect().await.unwrap();
        // The admin connection's own slot is given back before its session
        // closes, so once `Threads_connected` shows 1 the next round's
        // admin login finds room (it once raced the slot's release).
        let mut n = 2;
        for _ in 0..500 {
            let row: Option<(String, String)> = app
                .query_first("SHOW STATUS LIKE 'Threads_connected'")
                .await
                .unwrap();
            n = row.and_then(|(_, v)| v.parse().ok()).unwrap_or(2);
            if n == 1 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(n, 1);
    }
}

/// Runs the `mariadb` client as `user` against `port` with `tls` options;
/// its exit status, standard output and standard error.
fn mariadb(port: u16, user: &str, pw: &str, tls: &[&str], sql: &str) -> (bool, String, String) {
    let out = std::process::Command::new("mariadb")
        .args(["--no-defaults", "-h127.0.0.1", "-N", "-B"])
        .arg(format!("-P{port}"))
        .arg(format!("-u{user}"))
        .arg(format!("-p{pw}"))
        .args(tls)
        .args(["-e", sql])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_ssl_account_logs_in_over_tls_only() {
    if std::process::Command::new("mariadb")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: the mariadb client is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // TLS on, with the certificates made in the data directory.
    let srv = start(dir.path(), &["--ssl=1"]);
    let mut root = connect(srv.port, "root", "").await.unwrap();
    root.query_drop("CREATE USER 'sec'@'%' IDENTIFIED BY 'pw5' REQUIRE SSL")
        .await
        .unwrap();
    // Plain TCP, the right password: 1045.
    assert_eq!(
        code(connect(srv.port, "sec", "pw5").await.unwrap_err()),
        1045
    );
    let (ok, _, err) = mariadb(srv.port, "sec", "pw5", &["--skip-ssl"], "SELECT 1");
    assert!(!ok && err.contains("1045"), "{err}");
    // Over TLS, verifying the server with the generated CA: logged in.
    let ca = dir.path().join("ca.pem");
    let tls = [
        "--ssl".to_string(),
        format!("--ssl-ca={}", ca.display()),
        "--ssl-verify-server-cert".to_string(),
    ];
    let tls: Vec<&str> = tls.iter().map(String::as_str).collect();
    let (ok, out, err) = mariadb(
        srv.port,
        "sec",
        "pw5",
        &tls,
        "SELECT CURRENT_USER(); SHOW STATUS LIKE 'Ssl_version'",
    );
    assert!(ok, "{err}");
    assert!(out.contains("sec@%"), "{out}");
    assert!(out.contains("TLSv1."), "{out}");
    // Over TLS with a wrong password: still 1045.
    let (ok, _, err) = mariadb(srv.port, "sec", "nope", &tls, "SELECT 1");
    assert!(!ok && err.contains("1045"), "{err}");
}
