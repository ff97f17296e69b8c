# C. Base + delta within a group: row 0 of each group vs the table dictionary;
# rows 1..n vs a per-group dictionary built from row 0. A point read decodes <= 2 rows.
from runner import *
import sys
keys, vals = load_rows()
N = len(vals); TOTAL = sum(map(len, vals))
LEVEL = int(sys.argv[1]) if len(sys.argv) > 1 else 9
raw3 = every_nth(vals, 0.03)
table = finalize(raw3, vals[::4], LEVEL)          # raw-nth 3% + entropy tables (full dict)
hdr = table[:len(table) - len(raw3)]               # entropy-table header; content sits at the end
assert table[len(hdr):] == raw3
tc, td = make_cctx(table, LEVEL, raw=False)
tdz = make_dctx(td)
P = lambda n: params(LEVEL, n)

def per_group_dict(kind, row0):
    if kind == 'row0-raw':           # raw-content dict = row 0 alone
        return row0, True
    if kind == 'ent+row0':           # table's entropy tables + row 0 as content
        return (hdr + row0, False) if len(row0) >= 8 else (row0, True)
    if kind == 'table+row0-raw':     # raw-content dict = table dict content + row 0
        return raw3 + row0, True
    if kind == 'table+row0-full':    # full table dict (entropy + content) + row 0 appended
        return table + row0, False

res = {}
def go(g, kind):
    frames = 0; build = 0.0; comp = 0.0; dec = 0
    rnd_checks = set(range(0, N // g, max(1, (N // g) // 40)))
    for gi, s in enumerate(range(0, N, g)):
        grp = vals[s:s + g]; row0 = grp[0]
        t = time.perf_counter(); f0 = tc.compress(row0); comp += time.perf_counter() - t
        frames += len(f0); dec += len(row0)
        if len(grp) == 1: continue
        t = time.perf_counter()
        db, raw = per_group_dict(kind, row0)
        c, d = make_cctx(db, LEVEL, raw)
        build += time.perf_counter() - t
        t = time.perf_counter(); fs = [c.compress(v) for v in grp[1:]]; comp += time.perf_counter() - t
        frames += sum(map(len, fs)); dec += sum(len(row0) + len(v) for v in grp[1:])
        if gi in rnd_checks:
            assert tdz.decompress(f0, max_output_size=len(row0) + 1) == row0
            dz = make_dctx(d)
            for f, v in zip(fs, grp[1:]):
                assert dz.decompress(f, max_output_size=len(v) + 1) == v
    dc = dict_cost(table)
    r = dict(frames=frames, dict_c=dc, total=frames + dc, decoded=dec / N,
             mbps=TOTAL / (comp + build) / 1e6, cdict_build_s=build, comp_mbps=TOTAL / comp / 1e6)
    name = f'C b+d L{LEVEL} g{g} {kind}'
    res[name] = r; log(fmt(name, r), f'(compress-only {r["comp_mbps"]:.1f}MB/s)')
    with open(f'out/c{LEVEL}.pkl', 'wb') as f: pickle.dump(res, f)

for g in (8, 16, 32):
    for kind in ('row0-raw', 'ent+row0', 'table+row0-full'):
        go(g, kind)
go(16, 'table+row0-raw')
