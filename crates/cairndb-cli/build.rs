//! With the `rocksdb` feature, makes the rocksdb crate's `-lrocksdb` link the
//! release RocksDB library that `ROCKSDB_LIB_DIR` names (set in
//! .cargo/config.toml to ../shared/peers/rocksdb-9.10.0), dynamically, and
//! sets the binary's rpath to that directory so it runs without
//! LD_LIBRARY_PATH. That library is named librocksdbjni-linux64.so and has
//! no SONAME, so a one-line linker script `librocksdb.so` in OUT_DIR stands
//! in for it: the binary then needs `librocksdbjni-linux64.so`, found
//! through the rpath. Without the feature this does nothing.

use std::env;
use std::fs;
use std::path::PathBuf;

const RELEASE_LIB: &str = "librocksdbjni-linux64.so";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=ROCKSDB_LIB_DIR");
    if env::var_os("CARGO_FEATURE_ROCKSDB").is_none() {
        return;
    }
    let Some(dir) = env::var_os("ROCKSDB_LIB_DIR").map(PathBuf::from) else {
        panic!(
            "the `rocksdb` feature needs ROCKSDB_LIB_DIR (.cargo/config.toml sets it to \
             ../shared/peers/rocksdb-9.10.0 beside the repository); without it \
             librocksdb-sys compiles RocksDB from source"
        );
    };
    let dir = dir.canonicalize().unwrap_or_else(|e| {
        panic!(
            "ROCKSDB_LIB_DIR={}: {e} (the release RocksDB 9.10.0 library lives in \
             shared/peers/rocksdb-9.10.0 beside the repository)",
            dir.display()
        )
    });
    let named = ["librocksdb.so", "librocksdb.a"]
        .iter()
        .any(|n| dir.join(n).exists());
    if !named {
        if !dir.join(RELEASE_LIB).is_file() {
            panic!(
                "ROCKSDB_LIB_DIR={}: holds neither librocksdb.so nor {RELEASE_LIB}",
                dir.display()
            );
        }
        let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        fs::write(
            out.join("librocksdb.so"),
            format!(
                "/* -lrocksdb means {RELEASE_LIB} (see build.rs) */\nINPUT(-l:{RELEASE_LIB})\n"
            ),
        )
        .expect("writing the librocksdb.so linker script");
        println!("cargo:rustc-link-search=native={}", out.display());
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}
