//! Small shared helpers: integer coding and checksums. No state, no locks.

pub mod coding;
pub mod crc;
