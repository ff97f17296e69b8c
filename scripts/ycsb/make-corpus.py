#!/usr/bin/env python3
"""Builds the YCSB text corpus: distinct UTF-8 text files from Debian source
packages (the Linux kernel, GCC, OpenJDK's class library, binutils, Go 1.19),
concatenated into one file.

Usage: make-corpus.py OUT [--bytes N] [--debs DIR]

The packages are fetched with `apt-get download` into DIR (default: OUT's
directory) unless already there. A file goes into the corpus only if it is
valid UTF-8, has no NUL byte, is at most 4 MiB, and its content was not seen
before (SHA-1 of the bytes); each is followed by one newline. Writing stops
at N bytes (default: everything). OUT.manifest.json records, per package,
the files and bytes taken, and the total.
"""
import argparse
import glob
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile

PACKAGES = ["linux-source-6.1", "gcc-12-source", "openjdk-17-source", "binutils-source", "golang-1.19-src"]
ARCHIVE_SUFFIXES = (".tar.xz", ".tar.gz", ".tar.bz2", ".tgz", ".zip")
MAX_FILE = 4 << 20


def members(path):
    """Yields (name, bytes) of the regular files in an archive; an archive
    that cannot be read (test data of a broken archive, say) yields what
    it could and is skipped from there."""
    try:
        if path.endswith(".zip"):
            with zipfile.ZipFile(path) as z:
                for info in z.infolist():
                    if not info.is_dir() and info.file_size <= MAX_FILE:
                        yield info.filename, z.read(info)
            return
        with tarfile.open(path, "r|*") as t:
            for m in t:
                if m.isfile() and m.size <= MAX_FILE:
                    f = t.extractfile(m)
                    if f is not None:
                        yield m.name, f.read()
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as e:
        print(f"skipping the rest of {path}: {e}", file=sys.stderr)


def is_text(data):
    if not data or b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--bytes", type=int, default=0)
    ap.add_argument("--debs")
    a = ap.parse_args()
    debs = a.debs or os.path.dirname(os.path.abspath(a.out))
    os.makedirs(debs, exist_ok=True)
    for p in PACKAGES:
        if not glob.glob(os.path.join(debs, p + "_*.deb")):
            subprocess.run(["apt-get", "download", p], cwd=debs, check=True)
    seen = set()
    total = 0
    manifest = {"packages": {}, "rule": __doc__.split("\n\n")[2]}
    with open(a.out, "wb") as out:
        for p in PACKAGES:
            deb = sorted(glob.glob(os.path.join(debs, p + "_*.deb")))[-1]
            stats = {"deb": os.path.basename(deb), "files": 0, "bytes": 0}
            manifest["packages"][p] = stats
            with tempfile.TemporaryDirectory(dir=debs) as tmp:
                subprocess.run(["dpkg-deb", "-x", deb, tmp], check=True)
                for root, _, files in os.walk(tmp):
                    for name in sorted(files):
                        path = os.path.join(root, name)
                        if os.path.islink(path) or not os.path.isfile(path):
                            continue
                        if path.endswith(ARCHIVE_SUFFIXES):
                            source = members(path)
                        else:
                            with open(path, "rb") as f:
                                source = [(path, f.read())]
                        for _, data in source:
                            if len(data) > MAX_FILE or not is_text(data):
                                continue
                            h = hashlib.sha1(data).digest()
                            if h in seen:
                                continue
                            seen.add(h)
                            out.write(data)
                            out.write(b"\n")
                            stats["files"] += 1
                            stats["bytes"] += len(data) + 1
                            total += len(data) + 1
                            if a.bytes and total >= a.bytes:
                                break
                        if a.bytes and total >= a.bytes:
                            break
                    if a.bytes and total >= a.bytes:
                        break
            print(f"{p}: {stats['files']} files, {stats['bytes']} bytes", file=sys.stderr)
            if a.bytes and total >= a.bytes:
                break
    manifest["total_bytes"] = total
    with open(a.out + ".manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"corpus {a.out}: {total} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
