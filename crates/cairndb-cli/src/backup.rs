//! `cairndb checkpoint DB DIR` and `cairndb backup create|list|verify|
//! restore|purge`: the engine's `Checkpoint` and `BackupEngine`
//! (docs/format/backup.md, docs/reliability.md) from the command line.
//! Each command opens what it needs, does one thing and closes it; errors
//! name the file or directory concerned.

use std::path::PathBuf;

use cairndb::{BackupEngine, BackupEngineOptions, BackupId, Checkpoint, Db, Options};
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "cairndb checkpoint",
    about = "Make an openable copy of a database"
)]
struct CheckpointArgs {
    /// The database directory.
    db: PathBuf,
    /// The checkpoint directory (must not exist).
    dir: PathBuf,
    /// Copy the WALs instead of flushing first when they hold less than
    /// this many bytes (0: always flush, RocksDB's `log_size_for_flush`).
    #[arg(long = "log-size-for-flush", default_value_t = 0)]
    log_size_for_flush: u64,
}

#[derive(Parser, Debug)]
#[command(name = "cairndb backup", about = "Incremental backups of a database")]
struct BackupArgs {
    #[command(subcommand)]
    cmd: BackupCmd,
}

#[derive(Subcommand, Debug)]
enum BackupCmd {
    /// Back up DB into BACKUP_DIR (created if missing).
    Create {
        db: PathBuf,
        backup_dir: PathBuf,
        /// Copy the WALs as they are instead of flushing the memtable first.
        #[arg(long = "no-flush")]
        no_flush: bool,
        /// Bytes per second the copy may write (0: unlimited).
        #[arg(long = "rate-limit", default_value_t = 0)]
        rate_limit: u64,
    },
    /// List the backups.
    List { backup_dir: PathBuf },
    /// Check every file of one backup (or all) against its sizes and checksums.
    Verify {
        backup_dir: PathBuf,
        id: Option<BackupId>,
    },
    /// Restore a backup (the newest by default) into a new database directory.
    Restore {
        backup_dir: PathBuf,
        new_db_dir: PathBuf,
        #[arg(long)]
        id: Option<BackupId>,
    },
    /// Delete all but the newest N backups.
    Purge {
        backup_dir: PathBuf,
        #[arg(long)]
        keep: usize,
    },
}

/// `cairndb checkpoint`.
pub fn checkpoint_main(args: Vec<String>) -> Result<(), String> {
    let Some(a) = crate::parse_args::<CheckpointArgs>("checkpoint", args)? else {
        return Ok(());
    };
    if a.dir.exists() {
        return Err(format!(
            "checkpoint directory {} already exists",
            a.dir.display()
        ));
    }
    let db = open_existing(&a.db)?;
    let seq = Checkpoint::new(&db)
        .create_checkpoint(&a.dir, a.log_size_for_flush)
        .map_err(|e| e.to_string())?;
    db.close().map_err(|e| e.to_string())?;
    println!("checkpoint {} made at sequence {seq}", a.dir.display());
    Ok(())
}

fn open_existing(dir: &std::path::Path) -> Result<Db, String> {
    let opts = Options {
        create_if_missing: false,
        ..Options::default()
    };
    Db::open(dir, opts).map_err(|e| format!("{}: {e}", dir.display()))
}

/// `cairndb backup ...`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    let Some(a) = crate::parse_args::<BackupArgs>("backup", args)? else {
        return Ok(());
    };
    let err = |e: cairndb::Error| e.to_string();
    match a.cmd {
        BackupCmd::Create {
            db,
            backup_dir,
            no_flush,
            rate_limit,
        } => {
            let source = open_existing(&db)?;
            let mut eng = BackupEngine::open_with(
                &backup_dir,
                BackupEngineOptions {
                    rate_limit,
                    flush_before_backup: !no_flush,
                    ..Default::default()
                },
            )
            .map_err(err)?;
            let id = eng.create_new_backup(&source).map_err(err)?;
            source.close().map_err(err)?;
            let s = eng.last_copy_stats();
            println!(
                "backup {id} created: {} files ({} bytes) copied, {} shared files ({} bytes) already present",
                s.files_copied, s.bytes_copied, s.files_reused, s.bytes_reused
            );
        }
        BackupCmd::List { backup_dir } => {
            let eng = open_engine(&backup_dir)?;
            println!(
                "{:>6}  {:>10}  {:>12}  {:>6}  {:>12}",
                "id", "timestamp", "sequence", "files", "bytes"
            );
            for b in eng.get_backup_info() {
                println!(
                    "{:>6}  {:>10}  {:>12}  {:>6}  {:>12}",
                    b.backup_id, b.timestamp, b.sequence, b.number_files, b.size
                );
            }
            for (name, e) in eng.corrupt_backups() {
                println!("corrupt metadata meta/{name}: {e}");
            }
        }
        BackupCmd::Verify { backup_dir, id } => {
            let eng = open_engine(&backup_dir)?;
            let ids: Vec<BackupId> = match id {
                Some(id) => vec![id],
                None => eng.get_backup_info().iter().map(|b| b.backup_id).collect(),
            };
            let mut bad = 0;
            for id in ids {
                match eng.verify_backup(id) {
                    Ok(()) => println!("backup {id}: OK"),
                    Err(e) => {
                        println!("backup {id}: {e}");
                        bad += 1;
                    }
                }
            }
            if bad > 0 {
                return Err(format!("{bad} backup(s) failed verification"));
            }
        }
        BackupCmd::Restore {
            backup_dir,
            new_db_dir,
            id,
        } => {
            if new_db_dir.exists() {
                return Err(format!(
                    "restore target {} already exists",
                    new_db_dir.display()
                ));
            }
            let eng = open_engine(&backup_dir)?;
            let id = match id {
                Some(id) => id,
                None => eng
                    .get_backup_info()
                    .last()
                    .map(|b| b.backup_id)
                    .ok_or_else(|| format!("{}: no backup", backup_dir.display()))?,
            };
            eng.restore_db_from_backup(id, &new_db_dir).map_err(err)?;
            println!("backup {id} restored into {}", new_db_dir.display());
        }
        BackupCmd::Purge { backup_dir, keep } => {
            let mut eng = open_engine(&backup_dir)?;
            eng.purge_old_backups(keep).map_err(err)?;
            println!("{} backup(s) kept", eng.get_backup_info().len());
        }
    }
    Ok(())
}

/// Opens an existing backup directory (never creates one).
fn open_engine(dir: &std::path::Path) -> Result<BackupEngine, String> {
    if !dir.join("meta").is_dir() {
        return Err(format!("{}: not a backup directory", dir.display()));
    }
    BackupEngine::open(dir).map_err(|e| e.to_string())
}
