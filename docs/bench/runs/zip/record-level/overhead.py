# Per-record frame overhead: compress empty/1-byte/short records, with and without dict.
from common import *
keys, vals = load_rows()
d = every_nth(vals, 0.03)
for lvl in (9, 19):
    for name, db in (('nodict', None), ('raw3%', d)):
        c, dd = make_cctx(db, lvl)
        dz = make_dctx(dd)
        out = []
        for rec in (b'', b'x', b'ab', b'Installed-Size: 1'):
            f = c.compress(rec)
            assert dz.decompress(f, max_output_size=1 << 20) == rec
            out.append((len(rec), len(f)))
        log(f'level {lvl} {name}: (raw,frame) {out}; params format=magicless checksum=0 dictid=0 contentsize=0')
