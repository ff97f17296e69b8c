//! Merging iterator (to be written).
