"""Scheme runners. Each returns dict(total, frames, dict_c, decoded_avg, mbps)."""
from common import *
import random

RAW_TOTAL = None

def verify(dz, frames, plains, n=300):
    rnd = random.Random(1)
    for i in rnd.sample(range(len(frames)), min(n, len(frames))):
        assert dz.decompress(frames[i], max_output_size=len(plains[i]) + 1) == plains[i], i

def _compress_all(plains, dict_bytes, raw, level):
    """Compresses each plain as one frame; returns (frames, dict cost, compress s, cdict s)."""
    t0 = time.perf_counter()
    c, d = make_cctx(dict_bytes, level, raw)
    tb = time.perf_counter() - t0
    t0 = time.perf_counter()
    frames = [c.compress(p) for p in plains]
    tc = time.perf_counter() - t0
    verify(make_dctx(d), frames, plains)
    dc = dict_cost(dict_bytes) if dict_bytes else 0
    return frames, dc, tc, tb

def run_groups(vals, g, dict_bytes, raw, level):
    """Groups of g consecutive rows, one frame each. The group is stored as the
    concatenation of the values (row lengths would live in the index)."""
    plains = [b''.join(vals[i:i + g]) for i in range(0, len(vals), g)]
    frames, dc, tc, tb = _compress_all(plains, dict_bytes, raw, level)
    fr = sum(map(len, frames))
    tot = sum(map(len, plains))
    # a point read (uniform over rows) decodes its whole group
    dec = sum(len(p) * len(vals[i * g:(i + 1) * g]) for i, p in enumerate(plains)) / len(vals)
    return dict(frames=fr, dict_c=dc, total=fr + dc, decoded=dec,
                mbps=tot / tc / 1e6, cdict_build_s=tb)

def run_records(vals, dict_bytes, raw, level):
    frames, dc, tc, tb = _compress_all(vals, dict_bytes, raw, level)
    fr = sum(map(len, frames))
    tot = sum(map(len, vals))
    dec_row = tot / len(vals)  # a point read (uniform over rows) decodes its own row
    return dict(frames=fr, dict_c=dc, total=fr + dc, decoded=dec_row,
                mbps=tot / tc / 1e6, cdict_build_s=tb, sizes=[len(f) for f in frames])

def fmt(name, r):
    return (f"{name:48s} total={r['total']:>10,} frames={r['frames']:>10,} dict_c={r['dict_c']:>9,} "
            f"vs10.88M={r['total']/10.88e6:.3f} vs10.90M={r['total']/(11939721-640000-400000):.3f} "
            f"decoded/read={r['decoded']:>8,.0f} build={r['mbps']:.2f}MB/s cdict={r['cdict_build_s']:.2f}s")
