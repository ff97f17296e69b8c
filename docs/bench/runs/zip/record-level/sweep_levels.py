from runner import *
import zstandard as zstd
keys, vals = load_rows()
d = pickle.load(open('out/dicts_a.pkl','rb'))
raw3 = d['raw3']
groups16 = [b''.join(vals[i:i + 16]) for i in range(0, len(vals), 16)]
import sys
for lvl in [int(x) for x in sys.argv[1:]]:
    fin = finalize(raw3, groups16[::4], lvl)
    r = run_groups(vals, 16, fin, False, lvl); log(fmt(f'g16 L{lvl} raw3+ent', r))
    p = zstd.ZstdCompressionParameters.from_level(lvl)
    log(f'   L{lvl}: strategy={p.strategy} wlog={p.window_log} clog={p.chain_log} hlog={p.hash_log} slog={p.search_log} mml={p.min_match} tlen={p.target_length}')
