#!/usr/bin/env bash
# Builds the file-workload data set of issue 6 from apt's Packages indexes.
#
#   scripts/make-debian-data.sh OUTDIR
#
# writes OUTDIR/debian.tsv (one stanza per line, fields separated by a tab:
# Package, Version, Architecture first, then every other "Field: value" of
# the stanza in its original order, continuation lines joined by a space)
# and OUTDIR/debian.keys (the key of every row: fields 0,1,2 joined, the way
# `cairndb bench --keyfields=0,1,2` joins them, i.e. with the separator).
# Rows with a repeated key (the same package version in two indexes) are
# kept once, the first time seen. Needs `apt-get update` to have been run.
set -euo pipefail
out=${1:?usage: make-debian-data.sh OUTDIR}
mkdir -p "$out"
mapfile -t files < <(apt-get indextargets --format '$(FILENAME)' 'Identifier: Packages')
if [ "${#files[@]}" -eq 0 ]; then
    echo "make-debian-data: apt lists no Packages indexes; run apt-get update first" >&2
    exit 1
fi
for f in "${files[@]}"; do
    [ -e "$f" ] || { echo "make-debian-data: $f listed by apt but missing; run apt-get update" >&2; exit 1; }
    /usr/lib/apt/apt-helper cat-file "$f"
    echo
done | awk -v OFS='\t' '
function flush(   i, line) {
    if (pkg != "" && !((pkg SUBSEP ver SUBSEP arch) in seen)) {
        seen[pkg, ver, arch] = 1
        line = pkg OFS ver OFS arch
        for (i = 1; i <= n; i++) line = line OFS rest[i]
        print line
    }
    pkg = ""; ver = ""; arch = ""; n = 0
}
/^$/ { flush(); next }
/^[ \t]/ { sub(/^[ \t]+/, ""); if (n > 0) rest[n] = rest[n] " " $0; next }
{
    gsub(/\t/, " ")
    if ($0 ~ /^Package: /) { pkg = substr($0, 10); next }
    if ($0 ~ /^Version: /) { ver = substr($0, 10); next }
    if ($0 ~ /^Architecture: /) { arch = substr($0, 15); next }
    rest[++n] = $0
}
END { flush() }
' > "$out/debian.tsv"
cut -f1-3 "$out/debian.tsv" > "$out/debian.keys"
rows=$(wc -l < "$out/debian.tsv")
bytes=$(wc -c < "$out/debian.tsv")
echo "make-debian-data: $rows rows, $bytes bytes in $out/debian.tsv; keys in $out/debian.keys" >&2
