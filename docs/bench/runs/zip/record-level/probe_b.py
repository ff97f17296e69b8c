from runner import *
keys, vals = load_rows()
dd = pickle.load(open('out/dicts_a.pkl','rb'))
for lvl in (9, 19):
    t=time.time(); r = run_records(vals, dd['raw3'], True, lvl); log(fmt(f'probe rec L{lvl} raw3', r), f'{time.time()-t:.1f}s')
