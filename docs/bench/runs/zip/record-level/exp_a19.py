# A'. Groups of 16 at level 19 (same-level reference for the level-19 record-level runs),
# dictionary = raw-nth 3% + entropy tables (finalized at level 19, samples = every 4th group).
from runner import *
keys, vals = load_rows()
raw3 = every_nth(vals, 0.03)
groups16 = [b''.join(vals[i:i + 16]) for i in range(0, len(vals), 16)]
fin = finalize(raw3, groups16[::4], 19)
r = run_groups(vals, 16, fin, False, 19); log(fmt('A g16 L19 raw-3%+entropy', r))
with open('out/a19.pkl', 'wb') as f: pickle.dump(r, f)
