# (iii) greedy coverage dictionary: walk rows in key order; add a row when it
# compresses to more than X bytes against the dictionary-so-far. The dictionary
# CDict (level 3, for speed) is rebuilt every 64 KiB added; rows added since the
# last rebuild ("pending", <=64 KiB) are checked via a raw-content dict of the
# pending bytes, so near-duplicate neighbours are not both added. X is bisected
# so the walk ends with the dictionary near (<=) the budget without hitting the cap.
from common import *
keys, vals = load_rows()
TOTAL = sum(map(len, vals))
P3 = zstd.ZstdCompressionParameters.from_level(3, window_log=24,
        format=zstd.FORMAT_ZSTD1_MAGICLESS, write_checksum=0, write_content_size=0, write_dict_id=0)

def walk(X, budget):
    committed = b''; pending = []; plen = 0
    cc = zstd.ZstdCompressor(compression_params=P3)
    pc = None
    for v in vals:
        s = len(cc.compress(v))
        if s > X and pc is not None:
            s = min(s, len(pc.compress(v)))
        if s > X:
            if len(committed) + plen + len(v) > budget:
                break
            pending.append(v); plen += len(v)
            if plen >= 65536:
                committed += b''.join(pending); pending = []; plen = 0
                d = zstd.ZstdCompressionDict(committed, dict_type=zstd.DICT_TYPE_RAWCONTENT)
                d.precompute_compress(compression_params=P3)
                cc = zstd.ZstdCompressor(dict_data=d, compression_params=P3); pc = None
            else:
                pd = zstd.ZstdCompressionDict(b''.join(pending), dict_type=zstd.DICT_TYPE_RAWCONTENT)
                pc = zstd.ZstdCompressor(dict_data=pd, compression_params=P3)
    return committed + b''.join(pending)

out = {}
for frac in (0.015, 0.03, 0.06, 0.10, 0.15):
    budget = int(TOTAL * frac)
    lo, hi = 8, 4096  # X bounds (bytes); bigger X -> smaller dict
    best = None; t = time.time()
    for it in range(7):
        X = int(math.sqrt(lo * hi))
        d = walk(X, budget)
        full = len(d) >= budget - 20000  # walk hit the cap (X too small)
        log(f'  frac={frac} X={X} dict={len(d):,} cap_hit={full}')
        if full: lo = X
        else:
            hi = X; best = (X, d)
        if hi - lo <= 2: break
    if best is None:
        best = (lo, walk(lo, budget))   # capped walk (only if no uncapped X was found)
    # otherwise: the largest uncapped dictionary found (covers the whole key range)
    out[frac] = best
    log(f'coverage frac={frac}: X={best[0]} dict={len(best[1]):,} ({time.time()-t:.0f}s)')
with open('out/dicts_cov.pkl', 'wb') as f: pickle.dump(out, f)
