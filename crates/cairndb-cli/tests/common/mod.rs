//! Helpers shared by the CLI's end-to-end tests: running the built
//! `cairndb` binary and parsing its db_bench-shaped result lines.
#![allow(dead_code)]

pub mod server;

use std::process::{Command, Output};

/// Runs the built binary.
pub fn cairndb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cairndb"))
        .args(args)
        .output()
        .expect("run cairndb")
}

/// Runs a command that must succeed; returns (stdout, stderr).
pub fn ok(args: &[&str]) -> (String, String) {
    let out = cairndb(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "cairndb {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// Runs a command that must fail cleanly; returns its stderr.
pub fn fails(args: &[&str]) -> String {
    let out = cairndb(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "cairndb {args:?} should have failed\nstdout:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A parsed `name : X micros/op Y ops/sec Z seconds N operations;...` line.
#[derive(Debug)]
pub struct Line {
    pub name: String,
    pub micros: f64,
    pub ops_sec: u64,
    pub ops: u64,
    /// `(F of T found)`, when printed.
    pub found: Option<(u64, u64)>,
    /// The `W MB/s` figure, when printed.
    pub mb_per_sec: Option<f64>,
}

/// Every result line of `out`, checked for db_bench's shape.
pub fn parse_lines(out: &str) -> Vec<Line> {
    let mut v = Vec::new();
    for l in out.lines() {
        let Some((name, rest)) = l.split_once(" : ") else {
            continue;
        };
        let t: Vec<&str> = rest.split_whitespace().collect();
        if t.len() < 8 || t[1] != "micros/op" {
            continue;
        }
        assert_eq!(t[3], "ops/sec", "{l}");
        assert_eq!(t[5], "seconds", "{l}");
        assert_eq!(t[7], "operations;", "{l}");
        // db_bench pads the name to 12 and the micros to 11 characters.
        assert!(name.len() >= 12, "{l}");
        assert!(rest.find(" micros/op").unwrap() >= 11, "{l}");
        let found = l.rfind(" found)").map(|end| {
            let start = l[..end].rfind('(').unwrap();
            let inner: Vec<&str> = l[start + 1..end].split(" of ").collect();
            (inner[0].parse().unwrap(), inner[1].parse().unwrap())
        });
        let mb_per_sec = t
            .iter()
            .position(|x| *x == "MB/s")
            .map(|i| t[i - 1].parse().unwrap());
        v.push(Line {
            name: name.trim().to_string(),
            micros: t[0].parse().unwrap(),
            ops_sec: t[2].parse().unwrap(),
            ops: t[6].parse().unwrap(),
            found,
            mb_per_sec,
        });
    }
    v
}

/// The line named `name`.
pub fn line<'a>(ls: &'a [Line], name: &str) -> &'a Line {
    ls.iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no {name} line in {ls:?}"))
}
