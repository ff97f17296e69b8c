//! The data dictionary: databases, tables (columns, indexes) and the next
//! index id, kept in the engine under the reserved index id 1
//! (`docs/format/sql-keys.md`, "Data dictionary") and cached in memory.
//!
//! Invariants: the in-memory catalog equals what the dictionary keys say
//! once a DDL statement returns; a DDL statement writes its dictionary
//! changes in one synced transaction, so after a crash the dictionary is
//! as before or after it. Index ids are handed out once and never reused.
//!
//! Locking: `Catalog` is held by `SqlDb` behind an `RwLock`; statements
//! take `Arc<TableDef>` copies under the read lock and release it before
//! touching the engine. DDL is serialised by `SqlDb::ddl_lock` and takes
//! the write lock only to install its result.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairndb::{ReadOptions, TransactionDb};

use crate::error::{SqlError, SqlResult};
use crate::keys;
use crate::row::TableDef;

/// Index id of the data dictionary.
pub const DICT_INDEX_ID: u32 = 1;
/// The first index id given to a user index.
pub const FIRST_USER_INDEX_ID: u32 = 256;
/// Dictionary format version, stored under [`dict_version_key`].
pub const DICT_VERSION: u8 = 1;

const TAG_VERSION: u8 = b'V';
const TAG_NEXT_ID: u8 = b'N';
const TAG_DATABASE: u8 = b'D';
const TAG_TABLE: u8 = b'T';

fn dict_key(tag: u8, parts: &[&str]) -> Vec<u8> {
    let mut k = Vec::with_capacity(16);
    keys::put_index_id(&mut k, DICT_INDEX_ID);
    k.push(tag);
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            k.push(0);
        }
        k.extend_from_slice(p.to_lowercase().as_bytes());
    }
    k
}

/// Key of the dictionary version.
pub fn dict_version_key() -> Vec<u8> {
    dict_key(TAG_VERSION, &[])
}

/// Key of the next index id.
pub fn next_id_key() -> Vec<u8> {
    dict_key(TAG_NEXT_ID, &[])
}

/// Key of a database's record.
pub fn database_key(db: &str) -> Vec<u8> {
    dict_key(TAG_DATABASE, &[db])
}

/// Key of a table's definition.
pub fn table_key(db: &str, table: &str) -> Vec<u8> {
    dict_key(TAG_TABLE, &[db, table])
}

/// A database and its tables.
#[derive(Debug, Clone, Default)]
pub struct Database {
    /// Its name as created.
    pub name: String,
    /// Tables by lower-case name.
    pub tables: BTreeMap<String, Arc<TableDef>>,
}

/// A database's stored record.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct DatabaseRecord {
    name: String,
}

/// The in-memory copy of the dictionary.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Databases by lower-case name.
    pub dbs: BTreeMap<String, Database>,
    /// The next index id to hand out.
    pub next_index_id: u32,
}

impl Catalog {
    /// Reads the dictionary from `db`; a database without one gets an
    /// empty catalog (written by the first DDL statement).
    pub fn load(db: &TransactionDb) -> SqlResult<Catalog> {
        let mut cat = Catalog {
            dbs: BTreeMap::new(),
            next_index_id: FIRST_USER_INDEX_ID,
        };
        let mut lower = Vec::new();
        keys::put_index_id(&mut lower, DICT_INDEX_ID);
        let mut upper = Vec::new();
        keys::put_index_id(&mut upper, DICT_INDEX_ID + 1);
        let mut it = db.db().iter(&ReadOptions {
            iterate_lower_bound: Some(lower.clone()),
            iterate_upper_bound: Some(upper),
            ..Default::default()
        })?;
        it.seek(&lower);
        let mut tables = Vec::new();
        while it.valid() {
            let (k, v) = (it.key(), it.value());
            let bad = |what: &str| {
                SqlError::internal(format!(
                    "data dictionary entry {} is damaged: {what}",
                    k.escape_ascii()
                ))
            };
            match k.get(keys::INDEX_ID_LEN) {
                Some(&TAG_VERSION) => {
                    if v != [DICT_VERSION] {
                        return Err(bad("unknown dictionary version"));
                    }
                }
                Some(&TAG_NEXT_ID) => {
                    let b: [u8; 4] = v.try_into().map_err(|_| bad("next id is not 4 bytes"))?;
                    cat.next_index_id = u32::from_be_bytes(b).max(FIRST_USER_INDEX_ID);
                }
                Some(&TAG_DATABASE) => {
                    let r: DatabaseRecord =
                        serde_json::from_slice(v).map_err(|e| bad(&e.to_string()))?;
                    cat.dbs.insert(
                        r.name.to_lowercase(),
                        Database {
                            name: r.name,
                            tables: BTreeMap::new(),
                        },
                    );
                }
                Some(&TAG_TABLE) => {
                    let rest = k.get(keys::INDEX_ID_LEN + 1..).unwrap_or_default();
                    let sep = rest
                        .iter()
                        .position(|&b| b == 0)
                        .ok_or_else(|| bad("table key without database"))?;
                    let dbname =
                        String::from_utf8_lossy(rest.get(..sep).unwrap_or_default()).into_owned();
                    let t: TableDef = serde_json::from_slice(v).map_err(|e| bad(&e.to_string()))?;
                    tables.push((dbname, t));
                }
                _ => return Err(bad("unknown entry")),
            }
            it.next();
        }
        it.status()?;
        for (dbname, t) in tables {
            let d = cat.dbs.get_mut(&dbname).ok_or_else(|| {
                SqlError::internal(format!(
                    "data dictionary: table {} belongs to missing database {dbname}",
                    t.name
                ))
            })?;
            d.tables.insert(t.name.to_lowercase(), Arc::new(t));
        }
        Ok(cat)
    }

    /// A database by name (case-insensitive).
    pub fn database(&self, name: &str) -> Option<&Database> {
        self.dbs.get(&name.to_lowercase())
    }

    /// A table by database and name (case-insensitive).
    pub fn table(&self, db: &str, table: &str) -> SqlResult<Arc<TableDef>> {
        let d = self
            .database(db)
            .ok_or_else(|| SqlError::unknown_database(db))?;
        d.tables
            .get(&table.to_lowercase())
            .cloned()
            .ok_or_else(|| SqlError::no_such_table(&d.name, table))
    }
}

/// Serialises a database record.
pub fn encode_database(name: &str) -> Vec<u8> {
    serde_json::to_vec(&DatabaseRecord {
        name: name.to_string(),
    })
    .unwrap_or_default()
}

/// Serialises a table definition.
pub fn encode_table(t: &TableDef) -> SqlResult<Vec<u8>> {
    serde_json::to_vec(t).map_err(|e| SqlError::internal(format!("table definition: {e}")))
}
