# B. Record-level: every row its own magicless frame against a per-table dictionary.
from runner import *
keys, vals = load_rows()
TOTAL = sum(map(len, vals))
cov = pickle.load(open('out/dicts_cov.pkl', 'rb'))
samples = vals[::4]  # entropy-table statistics for ZDICT_finalizeDictionary
FR = (0.015, 0.03, 0.06, 0.10, 0.15)
dicts = {}
for frac in FR:
    budget = int(TOTAL * frac)
    dicts[('raw-nth', frac)] = (every_nth(vals, frac), True)
    dicts[('cov', frac)] = (cov[frac][1], True)
    t = time.time()
    tr = zstd.train_dictionary(budget, vals, k=1024, d=8, f=20, accel=1, level=9, threads=1).as_bytes()
    log(f'train {frac}: {len(tr):,} bytes in {time.time()-t:.1f}s')
    dicts[('trained', frac)] = (tr, False)
res = {}
def go(kind, frac, level, entropy):
    db, raw = dicts[(kind, frac)]
    if entropy:
        t = time.time(); db = finalize(db, samples, level); raw = False
        ft = time.time() - t
    else: ft = 0
    name = f'B rec L{level} {kind}{"+ent" if entropy else ""} {frac*100:g}% ({len(db)/1e6:.2f}MB)'
    r = run_records(vals, db, raw, level); r['finalize_s'] = ft
    sz = r.pop('sizes'); r['le5'] = sum(1 for s in sz if s <= 5)
    res[name] = r; log(fmt(name, r), f'finalize={ft:.1f}s')
    with open('out/b.pkl', 'wb') as f: pickle.dump(res, f)
for frac in FR:
    for kind in ('raw-nth', 'cov'):
        go(kind, frac, 9, False); go(kind, frac, 9, True)
    go('trained', frac, 9, False)
for frac in FR:
    for kind in ('raw-nth', 'cov'):
        go(kind, frac, 19, True)
    go('trained', frac, 19, False)
