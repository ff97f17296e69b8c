//! What a `caching_sha2_password` account keeps: MySQL 8.0's
//! authentication string, SHA-256 crypt (the "Unix crypt using SHA-256"
//! algorithm of glibc, with MySQL's 20-byte salt) laid out as
//! `$A$` ‖ rounds / 1000 in three upper-case hex digits ‖ `$` ‖ 20 salt
//! bytes ‖ 43 characters of crypt's base 64 (70 bytes with MySQL's 5000
//! rounds; docs/format/sql-keys.md, "Accounts"). A string made here
//! verifies in MySQL and one copied from MySQL's `mysql.user` verifies
//! here, so accounts move between the two with `IDENTIFIED WITH
//! caching_sha2_password AS '...'`.
//!
//! MySQL's fast authentication needs `SHA256(SHA256(password))`, which
//! the stored string does not give: like MySQL's, a cache here learns it
//! when a password is hashed (CREATE USER, ALTER USER, SET PASSWORD) or
//! verified (a full authentication), keyed by the stored string, so a
//! changed password (a new salt) never meets an old entry. After a
//! restart the cache is empty and each account's first login is a full
//! authentication, over TLS or with the server's RSA key, as in MySQL.
//!
//! Crypt's cost grows with the square of the password's length, so, as
//! MySQL does, a password is at most [`MAX_PASSWORD`] bytes: a longer one
//! is refused when set and verifies nothing (a login cannot make the
//! server hash a megabyte 5000 times).
//!
//! Invariants: the salt is 20 random bytes below 0x80, never NUL or `$`
//! (as MySQL draws it); a stored string that does not parse verifies no
//! password; comparisons are constant-time; a cache entry is the double
//! SHA-256 of a password its key verifies.
//!
//! Locking: the cache is one process-wide mutex held for a map look-up
//! or insert, never across hashing.

use std::collections::HashMap;
use std::sync::OnceLock;

use parking_lot::Mutex;
use rand::Rng;
use sha2::{Digest, Sha256};

/// Stored string -> `SHA256(SHA256(password))`.
type Cache = Mutex<HashMap<Vec<u8>, [u8; 32]>>;

/// Entries the cache holds before it starts again empty (each a salted
/// string of a password that logged in or was set since the start).
const CACHE_MAX: usize = 1 << 16;

fn cache() -> &'static Cache {
    static C: OnceLock<Cache> = OnceLock::new();
    C.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Remembers that `stored` was made from `password`.
fn remember(stored: &[u8], password: &[u8]) {
    let fast: [u8; 32] = Sha256::digest(Sha256::digest(password)).into();
    let mut c = cache().lock();
    if c.len() >= CACHE_MAX {
        c.clear();
    }
    c.insert(stored.to_vec(), fast);
}

/// `SHA256(SHA256(password))` of the password `stored` was made from,
/// when this process has seen it (what verifies a fast-auth scramble).
pub(crate) fn cached(stored: &[u8]) -> Option<[u8; 32]> {
    cache().lock().get(stored).copied()
}

/// The longest password hashed or verified, bytes (MySQL's
/// CACHING_SHA2_PASSWORD_MAX_PASSWORD_LENGTH).
pub(crate) const MAX_PASSWORD: usize = 256;

/// Rounds of a new hash (MySQL's `caching_sha2_password_digest_rounds`
/// default).
const ROUNDS: u32 = 5000;
/// Salt bytes (MySQL's CRYPT_SALT_LENGTH).
const SALT_LEN: usize = 20;
/// The encoded digest's length.
const DIGEST_CHARS: usize = 43;
/// The fewest and most rounds MySQL accepts (its digest_rounds bounds).
const MIN_ROUNDS: u32 = 5000;
const MAX_ROUNDS: u32 = 0xFFF * 1000;

/// crypt's base-64 alphabet.
const B64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The order crypt encodes the 32 digest bytes in, three at a time.
const ORDER: [(usize, usize, usize); 10] = [
    (0, 10, 20),
    (21, 1, 11),
    (12, 22, 2),
    (3, 13, 23),
    (24, 4, 14),
    (15, 25, 5),
    (6, 16, 26),
    (27, 7, 17),
    (18, 28, 8),
    (9, 19, 29),
];

/// The stored string of `password` with a new random salt.
pub(crate) fn hash(password: &[u8]) -> Vec<u8> {
    let mut rng = rand::thread_rng();
    let mut salt = [0u8; SALT_LEN];
    for b in &mut salt {
        *b = rng.gen::<u8>() & 0x7f;
        if *b == 0 || *b == b'$' {
            *b += 1;
        }
    }
    let stored = format(password, &salt, ROUNDS);
    remember(&stored, password);
    stored
}

/// `$A$rrr$` ‖ salt ‖ crypt of `password` with `salt` and `rounds`.
fn format(password: &[u8], salt: &[u8], rounds: u32) -> Vec<u8> {
    let mut out = format!("$A${:03X}$", rounds / 1000).into_bytes();
    out.extend_from_slice(salt);
    out.extend_from_slice(&crypt(password, salt, rounds));
    out
}

/// The salt and rounds of a stored string, or None when it is not one.
fn parse(stored: &[u8]) -> Option<(&[u8], u32, &[u8])> {
    let rest = stored.strip_prefix(b"$A$")?;
    let (digits, rest) = rest.split_first_chunk::<3>()?;
    let rest = rest.strip_prefix(b"$")?;
    // Three upper-case hex digits, as MySQL writes them.
    let mut units = 0u32;
    for d in digits {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'A'..=b'F' => d - b'A' + 10,
            _ => return None,
        };
        units = units * 16 + u32::from(v);
    }
    let rounds = units.checked_mul(1000)?;
    if !(MIN_ROUNDS..=MAX_ROUNDS).contains(&rounds) || rest.len() != SALT_LEN + DIGEST_CHARS {
        return None;
    }
    let (salt, digest) = rest.split_at(SALT_LEN);
    if salt.iter().any(|&b| b == b'$' || b == 0) {
        return None;
    }
    Some((salt, rounds, digest))
}

/// The same work as verifying a password against a real account's
/// string, for a login that names no account: a refusal then takes as
/// long as one for a wrong password, so timing does not tell which user
/// names exist. Always false.
pub(crate) fn verify_decoy(password: &[u8]) -> bool {
    static DECOY: OnceLock<Vec<u8>> = OnceLock::new();
    let stored = DECOY.get_or_init(|| {
        let secret: [u8; 32] = rand::thread_rng().gen();
        format(&secret, b"decoydecoydecoydecoy", ROUNDS)
    });
    let p = password.get(..MAX_PASSWORD).unwrap_or(password);
    let mine = crypt(p, b"decoydecoydecoydecoy", ROUNDS);
    std::hint::black_box(mine.as_slice() == stored.get(27..).unwrap_or_default());
    false
}

/// Whether `stored` is an authentication string this module verifies.
pub(crate) fn is_valid(stored: &[u8]) -> bool {
    parse(stored).is_some_and(|(_, _, d)| d.iter().all(|c| B64.contains(c)))
}

/// Whether `password` is the one `stored` was made from (never for a
/// password longer than [`MAX_PASSWORD`]).
pub(crate) fn verify(stored: &[u8], password: &[u8]) -> bool {
    let Some((salt, rounds, digest)) = parse(stored) else {
        return false;
    };
    if password.len() > MAX_PASSWORD {
        return false;
    }
    let mine = crypt(password, salt, rounds);
    let ok = mine.len() == digest.len()
        && mine.iter().zip(digest).fold(0u8, |a, (x, y)| a | (x ^ y)) == 0;
    if ok {
        remember(stored, password);
    }
    ok
}

/// `bytes` repeated to `len` bytes.
fn stretch(bytes: &[u8; 32], len: usize) -> Vec<u8> {
    bytes.iter().copied().cycle().take(len).collect()
}

/// SHA-256 crypt's digest of `p` with salt `s` and `rounds`, encoded.
fn crypt(p: &[u8], s: &[u8], rounds: u32) -> [u8; DIGEST_CHARS] {
    let b: [u8; 32] = Sha256::new()
        .chain_update(p)
        .chain_update(s)
        .chain_update(p)
        .finalize()
        .into();
    let mut a = Sha256::new().chain_update(p).chain_update(s);
    let mut left = p.len();
    while left > 32 {
        a.update(b);
        left -= 32;
    }
    a.update(b.get(..left).unwrap_or(&b));
    let mut n = p.len();
    while n > 0 {
        if n & 1 == 1 {
            a.update(b);
        } else {
            a.update(p);
        }
        n >>= 1;
    }
    let mut c: [u8; 32] = a.finalize().into();
    let mut dp = Sha256::new();
    for _ in 0..p.len() {
        dp.update(p);
    }
    let pseq = stretch(&dp.finalize().into(), p.len());
    let mut ds = Sha256::new();
    for _ in 0..16 + usize::from(c[0]) {
        ds.update(s);
    }
    let sseq = stretch(&ds.finalize().into(), s.len());
    for i in 0..rounds {
        let mut h = Sha256::new();
        if i & 1 == 1 {
            h.update(&pseq);
        } else {
            h.update(c);
        }
        if i % 3 != 0 {
            h.update(&sseq);
        }
        if i % 7 != 0 {
            h.update(&pseq);
        }
        if i & 1 == 1 {
            h.update(c);
        } else {
            h.update(&pseq);
        }
        c = h.finalize().into();
    }
    let mut out = [0u8; DIGEST_CHARS];
    let mut at = 0;
    let mut put = |w: u32, n: usize| {
        let mut w = w;
        for _ in 0..n {
            if let Some(o) = out.get_mut(at) {
                *o = B64.get((w & 0x3f) as usize).copied().unwrap_or(b'.');
            }
            at += 1;
            w >>= 6;
        }
    };
    let byte = |i: usize| u32::from(c.get(i).copied().unwrap_or(0));
    for (x, y, z) in ORDER {
        put((byte(x) << 16) | (byte(y) << 8) | byte(z), 4);
    }
    put((byte(31) << 8) | byte(30), 3);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use super::*;

    /// Drepper's specification's vectors (salts of at most 16 bytes,
    /// where MySQL's 20-byte limit does not differ from glibc's).
    #[test]
    fn sha256_crypt_matches_the_specification_vectors() {
        assert_eq!(
            &crypt(b"Hello world!", b"saltstring", 5000),
            b"5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"
        );
        assert_eq!(
            &crypt(b"Hello world!", b"saltstringsaltst", 10000),
            b"3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA"
        );
        assert_eq!(
            &crypt(
                b"we have a short salt string but not a short password",
                b"short",
                77777
            ),
            b"JiO1O3ZpDAxGJeaDIuqCoEFysAe1mZNJRs3pw0KQRd/"
        );
    }

    /// MySQL 8.0's `mysql.user.authentication_string` for
    /// `CREATE USER 'foo'@'%' IDENTIFIED BY 'foobar'` (a salt with
    /// control bytes, all 20 of them used).
    #[test]
    fn a_string_made_by_mysql_verifies() {
        let s = crate::acl::unhex(
            "24412430303524031A69251C34295C4B35167C7F1E5A7B63091349503974624D34504B5A\
             424679354856336868686F52485A736E4A733368786E427575516C73446469496537",
        )
        .unwrap_or_default();
        assert!(is_valid(&s));
        assert!(verify(&s, b"foobar"));
        assert!(!verify(&s, b"not_foobar"));
        assert!(!verify(&s, b""));
    }

    /// The fast-auth value is known once a password was set or verified,
    /// and only for the string it was set under.
    #[test]
    fn the_cache_learns_from_hashing_and_verifying() {
        let a = hash(b"one");
        let fast: [u8; 32] = Sha256::digest(Sha256::digest(b"one")).into();
        assert_eq!(cached(&a), Some(fast));
        let mut other = format(b"two", b"abcdefghijklmnopqrst", 5000);
        assert_eq!(cached(&other), None);
        assert!(!verify(&other, b"one"));
        assert_eq!(cached(&other), None);
        assert!(verify(&other, b"two"));
        assert!(cached(&other).is_some());
        other[10] ^= 1;
        assert_eq!(cached(&other), None);
    }

    #[test]
    fn a_new_hash_verifies_only_its_password_and_is_salted() {
        let a = hash(b"s3cret");
        let b = hash(b"s3cret");
        assert_eq!(a.len(), 70);
        assert!(a.starts_with(b"$A$005$"));
        assert_ne!(a, b);
        assert!(is_valid(&a));
        assert!(verify(&a, b"s3cret"));
        assert!(verify(&b, b"s3cret"));
        assert!(!verify(&a, b"s3cret "));
        // A password longer than a digest (the 32-byte blocks of step 2).
        let long = vec![b'x'; 100];
        assert!(verify(&hash(&long), &long));
        // Past MySQL's 256 bytes: verifies nothing (its cost is
        // quadratic in the length).
        let too_long = vec![b'x'; MAX_PASSWORD + 1];
        let s = format(&too_long, b"abcdefghijklmnopqrst", 5000);
        assert!(!verify(&s, &too_long));
        assert!(!verify_decoy(b"anything"));
    }

    #[test]
    fn malformed_strings_verify_nothing() {
        let good = hash(b"pw");
        for bad in [
            &b""[..],
            b"$A$005$",
            b"$B$005$aaaaaaaaaaaaaaaaaaaa0123456789012345678901234567890123456789012",
            b"$A$004$aaaaaaaaaaaaaaaaaaaa0123456789012345678901234567890123456789012",
            b"$A$zzz$aaaaaaaaaaaaaaaaaaaa0123456789012345678901234567890123456789012",
            b"$A$+05$aaaaaaaaaaaaaaaaaaaa0123456789012345678901234567890123456789012",
            b"$A$00a$aaaaaaaaaaaaaaaaaaaa0123456789012345678901234567890123456789012",
            b"$A$005$aaaaaaaaaaaaaaaaaa\0a0123456789012345678901234567890123456789012",
            &good[..69],
        ] {
            assert!(!is_valid(bad), "{bad:?}");
            assert!(!verify(bad, b"pw"));
        }
        let mut flipped = good.clone();
        flipped[69] = if flipped[69] == b'a' { b'b' } else { b'a' };
        assert!(is_valid(&flipped));
        assert!(!verify(&flipped, b"pw"));
    }
}
