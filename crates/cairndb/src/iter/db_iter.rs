//! DB iterator (to be written).
