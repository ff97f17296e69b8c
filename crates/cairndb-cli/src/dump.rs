//! `cairndb dump sst|wal|manifest FILE`: prints a file's contents.
pub fn main(_args: Vec<String>) -> Result<(), String> {
    Err("not yet".into())
}
