"""Shared helpers for the record-level compression experiments (CairnDB)."""
import ctypes, math, time, os, sys, pickle
import zstandard as zstd

DATA = '/tmp/reclevel/data/debian.tsv'
CACHE = '/tmp/reclevel/out/rows.pkl'

def load_rows():
    """Rows sorted bytewise by key (fields 0,1,2 joined with TAB); value = line
    with the 'f0\\tf1\\tf2\\t' key prefix stripped (key stored separately)."""
    if os.path.exists(CACHE):
        with open(CACHE, 'rb') as f:
            return pickle.load(f)
    rows = []
    with open(DATA, 'rb') as f:
        for line in f:
            line = line.rstrip(b'\n')
            p = line.split(b'\t', 3)
            key = b'\t'.join(p[:3])
            val = p[3] if len(p) > 3 else b''
            rows.append((key, val))
    rows.sort(key=lambda r: r[0])
    vals = [v for _, v in rows]
    keys = [k for k, _ in rows]
    with open(CACHE, 'wb') as f:
        pickle.dump((keys, vals), f)
    return keys, vals

def params(level, dict_size=0, src=0):
    """Frame params: magicless zstd1 format, no checksum/dict-id/content-size.
    window_log raised so window >= dictionary + source (so the whole dictionary
    stays referenceable)."""
    p0 = zstd.ZstdCompressionParameters.from_level(level)
    need = max(10, math.ceil(math.log2(dict_size + max(src, 1 << 16) + 1)))
    wl = min(27, max(p0.window_log, need))
    return zstd.ZstdCompressionParameters.from_level(
        level, window_log=wl,
        format=zstd.FORMAT_ZSTD1_MAGICLESS, write_checksum=0,
        write_content_size=0, write_dict_id=0)

def make_cctx(dict_bytes, level, raw=True, src=0):
    p = params(level, len(dict_bytes) if dict_bytes else 0, src)
    if not dict_bytes:
        return zstd.ZstdCompressor(compression_params=p), None
    d = zstd.ZstdCompressionDict(dict_bytes,
          dict_type=zstd.DICT_TYPE_RAWCONTENT if raw else zstd.DICT_TYPE_FULLDICT)
    d.precompute_compress(compression_params=p)
    return zstd.ZstdCompressor(dict_data=d, compression_params=p), d

def make_dctx(d):
    if d is None:
        return zstd.ZstdDecompressor(format=zstd.FORMAT_ZSTD1_MAGICLESS)
    return zstd.ZstdDecompressor(dict_data=d, format=zstd.FORMAT_ZSTD1_MAGICLESS)

_DC = {}
def dict_cost(dict_bytes):
    """Dictionary stored at its zstd-19 compressed size (memoised)."""
    h = hash(dict_bytes)
    if h not in _DC:
        _DC[h] = len(zstd.ZstdCompressor(level=19).compress(dict_bytes))
    return _DC[h]

# --- ZDICT_finalizeDictionary via ctypes (raw content + zstd entropy tables) ---
_lib = ctypes.CDLL('libzstd.so.1')
class _ZP(ctypes.Structure):
    _fields_ = [('compressionLevel', ctypes.c_int),
                ('notificationLevel', ctypes.c_uint),
                ('dictID', ctypes.c_uint)]
_lib.ZDICT_finalizeDictionary.restype = ctypes.c_size_t
_lib.ZDICT_isError.restype = ctypes.c_uint
_lib.ZDICT_getErrorName.restype = ctypes.c_char_p

def finalize(content, samples, level, dict_id=0x43414952):
    """Raw content + entropy tables computed from `samples` (list of bytes)."""
    buf = b''.join(samples)
    sizes = (ctypes.c_size_t * len(samples))(*[len(s) for s in samples])
    cap = len(content) + 65536
    dst = ctypes.create_string_buffer(cap)
    zp = _ZP(level, 0, dict_id)
    r = _lib.ZDICT_finalizeDictionary(dst, ctypes.c_size_t(cap), content,
            ctypes.c_size_t(len(content)), buf, sizes,
            ctypes.c_uint(len(samples)), zp)
    if _lib.ZDICT_isError(r):
        raise RuntimeError(_lib.ZDICT_getErrorName(r))
    return dst.raw[:r]

def every_nth(vals, frac):
    """Raw-content sample: every Nth row until ~frac of total bytes."""
    total = sum(map(len, vals))
    n = max(1, round(1 / frac))
    picked = vals[::n]
    s = b''.join(picked)
    return s[-int(total * frac * 1.02):] if len(s) > total * frac * 1.02 else s

def log(*a):
    print(*a, flush=True)
