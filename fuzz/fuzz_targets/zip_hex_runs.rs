//! Fuzz target: the hex-run filter of zip format version 4
//! (`docs/format/ziptable.md`, "Hex runs"). The first bytes pick the escape
//! byte, the expanded length and how many of the rest are packed digits;
//! `unfilter` must return an error or fill the output without panicking,
//! and `unfilter_range` (a point read's expansion of one record) must agree
//! with it: a range of a successful expansion comes out as the same bytes,
//! and it fails where the whole expansion fails. The whole input also goes
//! through `filter`, whose output must expand back to it exactly, whole
//! and by ranges.
#![no_main]

use cairndb::internals::sst::zip::hexrun::{filter, unfilter, unfilter_range};
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
    let whole = unfilter(text, packed, esc, &mut out, out_len);
    if whole.is_ok() {
        assert_eq!(out.len(), out_len, "an expansion that succeeds fills its length");
    }
    // A range picked by the packed-length byte and the escape.
    let skip = (data[3] as usize * 7).min(out_len);
    let len = (esc as usize * 5).min(out_len - skip);
    let mut part = Vec::new();
    let ranged = unfilter_range(text, packed, esc, (skip, len), out_len, &mut part);
    assert_eq!(ranged.is_ok(), whole.is_ok(), "a range fails where the whole does");
    if ranged.is_ok() {
        assert_eq!(part, out[skip..skip + len], "a range is the same bytes of the whole");
    }

    let (mut t, mut p) = (Vec::new(), Vec::new());
    filter(data, esc, &mut t, &mut p);
    let mut back = Vec::new();
    unfilter(&t, &p, esc, &mut back, data.len()).expect("a filtered input expands");
    assert_eq!(back, data, "filter round trip");
    let mid = data.len() / 3;
    let mut part = Vec::new();
    unfilter_range(&t, &p, esc, (mid, mid), data.len(), &mut part)
        .expect("a filtered input's range expands");
    assert_eq!(part, data[mid..2 * mid], "filter round trip of a range");
});
