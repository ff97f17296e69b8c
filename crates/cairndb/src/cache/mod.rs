//! (filled in by the cache work)
