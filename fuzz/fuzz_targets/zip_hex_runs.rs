//! Fuzz target: the hex-run filter of zip format version 4
//! (`docs/format/ziptable.md`, "Hex runs"). The first bytes pick the escape
//! byte, the expanded length and how many of the rest are packed digits;
//! `unfilter` must return an error or fill the output without panicking.
//! The whole input also goes through `filter`, whose output must expand
//! back to it exactly.
#![no_main]

use cairndb::internals::sst::zip::hexrun::{filter, unfilter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let esc = data[0];
    let out_len = u16::from_le_bytes([data[1], data[2]]) as usize;
    let rest = &data[4..];
    let packed_len = (data[3] as usize).min(rest.len());
    let (packed, text) = rest.split_at(packed_len);
    let mut out = Vec::new();
    if unfilter(text, packed, esc, &mut out, out_len).is_ok() {
        assert_eq!(out.len(), out_len, "an expansion that succeeds fills its length");
    }

    let (mut t, mut p) = (Vec::new(), Vec::new());
    filter(data, esc, &mut t, &mut p);
    let mut back = Vec::new();
    unfilter(&t, &p, esc, &mut back, data.len()).expect("a filtered input expands");
    assert_eq!(back, data, "filter round trip");
});
