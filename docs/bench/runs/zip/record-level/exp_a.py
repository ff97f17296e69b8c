# A. Baseline replica: groups of 16 rows, zstd level 9, one magicless frame per group.
from runner import *
keys, vals = load_rows()
N = len(vals)
res = {}
t = time.time(); trained = zstd.train_dictionary(1_400_000, vals, k=1024, d=8, f=20, accel=1, level=9, threads=1).as_bytes()
log(f'train 1.4MB: {time.time()-t:.1f}s')
raw3 = every_nth(vals, 0.03)
groups16 = [b''.join(vals[i:i + 16]) for i in range(0, N, 16)]
t = time.time(); fin3 = finalize(raw3, groups16[::4], 9)
log(f'finalize raw3% (+entropy tables, samples=every 4th group): {time.time()-t:.1f}s, {len(fin3):,} bytes')
for name, db, raw in (('A g16 L9 trained-1.4MB', trained, False),
                      ('A g16 L9 raw-3%', raw3, True),
                      ('A g16 L9 raw-3%+entropy (shipped-like)', fin3, False),
                      ('A g16 L9 no dict', None, True)):
    r = run_groups(vals, 16, db, raw, 9); res[name] = r; log(fmt(name, r))
with open('out/a.pkl', 'wb') as f: pickle.dump(res, f)
with open('out/dicts_a.pkl', 'wb') as f: pickle.dump(dict(trained=trained, raw3=raw3, fin3=fin3), f)
