//! STUB
#![allow(missing_docs, unused)]
use super::BlockCache;
use crate::env::Fs;
use crate::error::Result;
use crate::options::SliceTransform;
use crate::sst::Table;
use std::path::PathBuf;
use std::sync::Arc;
pub struct TableCache;
impl TableCache {
    pub fn new(
        fs: Arc<dyn Fs>,
        dir: PathBuf,
        capacity_files: usize,
        block_cache: Option<Arc<BlockCache>>,
        prefix_extractor: Option<Arc<dyn SliceTransform>>,
    ) -> Self {
        todo!()
    }
    pub fn get(&self, file_number: u64) -> Result<Arc<Table>> {
        todo!()
    }
    pub fn evict(&self, file_number: u64) {
        todo!()
    }
}
