//! STUB for compile-checking; replaced by the memwal branch.
#![allow(missing_docs, unused)]
use crate::batch::WriteBatch;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueType};
use std::sync::Arc;
pub struct MemTable;
pub enum MemGet<'a> {
    Value(&'a [u8]),
    Deleted,
}
pub struct MemTableIter;
impl MemTable {
    pub fn new() -> MemTable {
        todo!()
    }
    pub fn add(&self, seq: SeqNo, t: ValueType, user_key: &[u8], value: &[u8]) {
        todo!()
    }
    pub fn get(&self, user_key: &[u8], seq: SeqNo) -> Option<MemGet<'_>> {
        todo!()
    }
    pub fn approximate_memory_usage(&self) -> usize {
        todo!()
    }
    pub fn len(&self) -> usize {
        todo!()
    }
    pub fn is_empty(&self) -> bool {
        todo!()
    }
    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        todo!()
    }
    pub fn insert_batch(&self, batch: &WriteBatch, first_seq: SeqNo) {
        todo!()
    }
}
impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        todo!()
    }
    fn seek_to_first(&mut self) {
        todo!()
    }
    fn seek_to_last(&mut self) {
        todo!()
    }
    fn seek(&mut self, target: &[u8]) {
        todo!()
    }
    fn next(&mut self) {
        todo!()
    }
    fn prev(&mut self) {
        todo!()
    }
    fn key(&self) -> &[u8] {
        todo!()
    }
    fn value(&self) -> &[u8] {
        todo!()
    }
    fn status(&self) -> Result<()> {
        todo!()
    }
}
