//! `cairndb verify DB`: checks a database's files offline.
pub fn main(_args: Vec<String>) -> Result<(), String> {
    Err("not yet".into())
}
