from common import *
keys, vals = load_rows()
for size in (int(47.3e6*0.015), 1_400_000):
    t=time.time()
    d = zstd.train_dictionary(size, vals, k=1024, d=8, f=20, accel=1, level=9, threads=1)
    log(size, len(d.as_bytes()), time.time()-t)
