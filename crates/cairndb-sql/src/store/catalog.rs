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
/// Dictionary format version, stored under [`dict_version_key`]: 2 since
/// the dictionary may hold accounts (a reader of version 1 would ignore
/// them and let every client do everything); 1 is read as well.
pub const DICT_VERSION: u8 = 2;

const TAG_VERSION: u8 = b'V';
const TAG_NEXT_ID: u8 = b'N';
const TAG_DATABASE: u8 = b'D';
const TAG_TABLE: u8 = b'T';
const TAG_VIEW: u8 = b'W';

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

/// Key of a view's definition.
pub fn view_key(db: &str, view: &str) -> Vec<u8> {
    dict_key(TAG_VIEW, &[db, view])
}

/// A database and its tables.
#[derive(Debug, Clone, Default)]
pub struct Database {
    /// Its name as created.
    pub name: String,
    /// Tables by lower-case name.
    pub tables: BTreeMap<String, Arc<TableDef>>,
    /// Views by lower-case name.
    pub views: BTreeMap<String, Arc<ViewDef>>,
}

/// A view's stored definition (`docs/format/sql-keys.md`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ViewDef {
    /// Its name as created.
    pub name: String,
    /// The column list given (empty: the SELECT's column names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
    /// The SELECT, as written.
    pub select: String,
    /// `UNDEFINED`, `MERGE` or `TEMPTABLE`.
    pub algorithm: String,
    /// `` `user`@`host` ``.
    pub definer: String,
    /// `DEFINER` or `INVOKER`.
    pub security: String,
    /// `NONE`, `CASCADED` or `LOCAL`.
    pub check_option: String,
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
    /// Dictionary entries that could not be read at open, each with
    /// why: their tables are left out of the catalog (and their keys are
    /// kept: nothing is swept while this is not empty).
    pub damaged: Vec<String>,
}

/// What a name names, for [`check_name`]'s error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A database (error 1102).
    Database,
    /// A table (error 1103).
    Table,
    /// A column (error 1166).
    Column,
    /// An index (error 1280).
    Index,
}

/// The longest name, in characters (MySQL's `NAME_CHAR_LEN`).
pub const MAX_NAME_CHARS: usize = 64;

/// Checks a new name as MySQL does: not empty, no NUL character, no
/// trailing space (databases, tables and columns), at most
/// [`MAX_NAME_CHARS`] characters (error 1059).
pub fn check_name(kind: NameKind, name: &str) -> SqlResult<()> {
    let shown = name.replace('\0', "\\0");
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(SqlError::new(
            1059,
            "42000",
            format!("Identifier name '{shown}' is too long"),
        ));
    }
    let trailing_space_ok = kind == NameKind::Index;
    if name.is_empty() || name.contains('\0') || (!trailing_space_ok && name.ends_with(' ')) {
        let (code, what) = match kind {
            NameKind::Database => (1102, "database"),
            NameKind::Table => (1103, "table"),
            NameKind::Column => (1166, "column"),
            NameKind::Index => (1280, "index"),
        };
        return Err(SqlError::new(
            code,
            "42000",
            format!("Incorrect {what} name '{shown}'"),
        ));
    }
    Ok(())
}

impl Catalog {
    /// Reads the dictionary from `db`; a database without one gets an
    /// empty catalog (written by the first DDL statement).
    pub fn load(db: &TransactionDb) -> SqlResult<Catalog> {
        let mut cat = Catalog {
            dbs: BTreeMap::new(),
            next_index_id: FIRST_USER_INDEX_ID,
            damaged: Vec::new(),
        };
        let (lower, upper) = keys::index_bounds(DICT_INDEX_ID);
        let mut it = db.db().iter(&ReadOptions {
            iterate_lower_bound: Some(lower.clone()),
            iterate_upper_bound: Some(upper),
            ..Default::default()
        })?;
        it.seek(&lower);
        let mut tables = Vec::new();
        let mut views = Vec::new();
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
                    if !matches!(v, [1..=DICT_VERSION]) {
                        return Err(bad("unknown dictionary version"));
                    }
                }
                Some(&TAG_NEXT_ID) => {
                    let b: [u8; 4] = v.try_into().map_err(|_| bad("next id is not 4 bytes"))?;
                    cat.next_index_id = u32::from_be_bytes(b).max(FIRST_USER_INDEX_ID);
                }
                // A database or table entry that cannot be read is
                // reported and left out; the others open.
                Some(&TAG_DATABASE) => match serde_json::from_slice::<DatabaseRecord>(v) {
                    Ok(r) => {
                        cat.dbs.insert(
                            r.name.to_lowercase(),
                            Database {
                                name: r.name,
                                tables: BTreeMap::new(),
                                views: BTreeMap::new(),
                            },
                        );
                    }
                    Err(e) => cat.damaged.push(bad(&e.to_string()).message),
                },
                Some(&TAG_TABLE) => match table_entry(k, v) {
                    Ok(entry) => tables.push(entry),
                    Err(why) => cat.damaged.push(bad(&why).message),
                },
                // Accounts: read by `acl::Acl::load`.
                Some(&tag) if crate::acl::is_acl_tag(tag) => {}
                Some(&TAG_VIEW) => match view_entry(k, v) {
                    Ok(entry) => views.push(entry),
                    Err(why) => cat.damaged.push(bad(&why).message),
                },
                _ => return Err(bad("unknown entry")),
            }
            it.next();
        }
        it.status()?;
        for (dbname, t) in tables {
            // A table whose database entry is missing or damaged stays
            // reachable: its database is listed under the key's name.
            let d = cat.dbs.entry(dbname.clone()).or_insert_with(|| Database {
                name: dbname.clone(),
                tables: BTreeMap::new(),
                views: BTreeMap::new(),
            });
            d.tables.insert(t.name.to_lowercase(), Arc::new(t));
        }
        for (dbname, v) in views {
            let d = cat.dbs.entry(dbname.clone()).or_insert_with(|| Database {
                name: dbname.clone(),
                ..Default::default()
            });
            d.views.insert(v.name.to_lowercase(), Arc::new(v));
        }
        cat.link_foreign_keys();
        Ok(cat)
    }

    /// Works out every table's `referenced_by` from the foreign keys the
    /// tables hold; a table whose list changes gets a new `Arc`. Run on
    /// every catalog installed, so DML finds a parent's children without
    /// looking further when it has none.
    pub fn link_foreign_keys(&mut self) {
        let mut refs: BTreeMap<(String, String), Vec<crate::row::ChildRef>> = BTreeMap::new();
        for (dbname, d) in &self.dbs {
            for (tname, t) in &d.tables {
                for fk in &t.foreign_keys {
                    refs.entry((fk.ref_db.to_lowercase(), fk.ref_table.to_lowercase()))
                        .or_default()
                        .push(crate::row::ChildRef {
                            db: dbname.clone(),
                            table: tname.clone(),
                            fk: fk.name.clone(),
                        });
                }
            }
        }
        for (dbname, d) in self.dbs.iter_mut() {
            for (tname, t) in d.tables.iter_mut() {
                let want = refs
                    .remove(&(dbname.clone(), tname.clone()))
                    .unwrap_or_default();
                if t.referenced_by != want {
                    let mut nt = (**t).clone();
                    nt.referenced_by = want;
                    *t = Arc::new(nt);
                }
            }
        }
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

/// A table entry's database (lower-case) and definition. The key is
/// `db ‖ 0x00 ‖ table`, the table's lower-case name as in its definition:
/// the database is what precedes that suffix, whatever bytes either
/// name holds (names written before names were checked may hold a NUL).
fn table_entry(k: &[u8], v: &[u8]) -> Result<(String, TableDef), String> {
    let rest = k.get(keys::INDEX_ID_LEN + 1..).unwrap_or_default();
    let t: TableDef = serde_json::from_slice(v).map_err(|e| e.to_string())?;
    let tname = t.name.to_lowercase();
    let db = rest
        .strip_suffix(tname.as_bytes())
        .and_then(|r| r.strip_suffix(&[0]))
        .ok_or_else(|| format!("key does not end in table name {}", t.name))?;
    let db = std::str::from_utf8(db).map_err(|_| "database name is not UTF-8".to_string())?;
    Ok((db.to_string(), t))
}

/// A view entry's database (lower-case) and definition; the key is read
/// as a table key is.
fn view_entry(k: &[u8], v: &[u8]) -> Result<(String, ViewDef), String> {
    let rest = k.get(keys::INDEX_ID_LEN + 1..).unwrap_or_default();
    let d: ViewDef = serde_json::from_slice(v).map_err(|e| e.to_string())?;
    let vname = d.name.to_lowercase();
    let db = rest
        .strip_suffix(vname.as_bytes())
        .and_then(|r| r.strip_suffix(&[0]))
        .ok_or_else(|| format!("key does not end in view name {}", d.name))?;
    let db = std::str::from_utf8(db).map_err(|_| "database name is not UTF-8".to_string())?;
    Ok((db.to_string(), d))
}

/// Serialises a view definition.
pub fn encode_view(v: &ViewDef) -> SqlResult<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| SqlError::internal(format!("view definition: {e}")))
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
