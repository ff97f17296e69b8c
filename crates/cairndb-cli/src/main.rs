//! The `cairndb` command-line tool. Each subcommand lives in its own module
//! and takes the arguments after its name.

mod backup;
mod bench;
mod compare;
mod dump;
mod server;
mod stress;
mod verify;

const USAGE: &str = "usage: cairndb <command> [flags]

commands:
  bench     run benchmarks (db_bench-style flags; `cairndb bench --help`)
  compare   run RocksDB's db_bench, LevelDB and CairnDB side by side
  stress    random concurrent load checked against a crash-proof oracle
  verify    check every checksum, the MANIFEST and key order of a database
  checkpoint make an openable copy of a live database (`cairndb checkpoint DB DIR`)
  backup    incremental backups (`cairndb backup create|list|verify|restore|purge`)
  dump      print an sst, wal, manifest or blob file (`cairndb dump sst|wal|manifest|blob FILE`)
  server    the MySQL-compatible SQL server (`cairndb server --datadir=DIR [--port=3306]`)
  sql-check check that every SQL table's indexes agree with its rows (`--datadir=DIR`)
";

/// Parses a subcommand's arguments (those after its name) with clap:
/// `None` when `--help` or `--version` was asked for and printed, an
/// error with clap's message (which names the bad flag) otherwise.
pub(crate) fn parse_args<T: clap::Parser>(
    command: &str,
    args: Vec<String>,
) -> Result<Option<T>, String> {
    let argv = std::iter::once(format!("cairndb {command}")).chain(args);
    match T::try_parse_from(argv) {
        Ok(t) => Ok(Some(t)),
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            // A closed stdout (`| head`) is not an error of the command.
            let _ = std::io::Write::write_fmt(&mut std::io::stdout(), format_args!("{e}"));
            Ok(None)
        }
        Err(e) => Err(e.to_string()),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let cmd = args.next();
    let rest: Vec<String> = args.collect();
    let result = match cmd.as_deref() {
        Some("bench") => bench::main(rest),
        Some("stress") => stress::main(rest),
        Some("verify") => verify::main(rest),
        Some("dump") => dump::main(rest),
        Some("checkpoint") => backup::checkpoint_main(rest),
        Some("backup") => backup::main(rest),
        Some("compare") => compare::main(rest),
        Some("server") => server::main(rest),
        Some("sql-check") => server::check_main(rest),
        Some("-h") | Some("--help") | Some("help") => {
            print!("{USAGE}");
            Ok(())
        }
        Some("-V") | Some("--version") => {
            println!("cairndb {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        None => Err(format!("no command given\n{USAGE}")),
        Some(other) => Err(format!("unknown command `{other}`\n{USAGE}")),
    };
    if let Err(e) = result {
        eprintln!("cairndb: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::parse_args;

    #[derive(clap::Parser, Debug)]
    struct Args {
        #[arg(long)]
        n: u32,
    }

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    /// `--help` prints the help and is not an error; a bad or missing
    /// flag is an error that names it; good flags parse.
    #[test]
    fn a_subcommands_help_is_not_an_error_and_a_bad_flag_is_named() {
        assert!(matches!(
            parse_args::<Args>("x", args(&["--help"])),
            Ok(None)
        ));
        assert!(matches!(
            parse_args::<Args>("x", args(&["--n", "3"])),
            Ok(Some(Args { n: 3 }))
        ));
        let e = parse_args::<Args>("x", args(&["--n", "many"])).err();
        assert!(e.is_some_and(|e| e.contains("--n")));
        let e = parse_args::<Args>("x", args(&[])).err();
        assert!(e.is_some_and(|e| e.contains("--n")));
    }
}
