//! Fuzz target: any bytes decode as a version edit or an error; and any
//! bytes stored as a MANIFEST (named by CURRENT) load or fail cleanly.
#![no_main]

use std::path::Path;

use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::internals::version::set::read_manifest;
use cairndb::internals::version::VersionEdit;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(e) = VersionEdit::decode(data, Path::new("MANIFEST-000001"), 0) {
        let mut out = Vec::new();
        e.encode(&mut out);
        let again = VersionEdit::decode(&out, Path::new("re-encoded"), 0)
            .expect("a decoded edit re-encodes to something decodable");
        assert_eq!(again, e, "decode(encode(edit)) != edit");
    }
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let _ = fs.create_dir_all(dir);
    fs.set_contents(&dir.join("CURRENT"), b"MANIFEST-000001\n".to_vec());
    fs.set_contents(&dir.join("MANIFEST-000001"), data.to_vec());
    let _ = read_manifest(&fs, dir);
});
