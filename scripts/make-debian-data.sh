#!/usr/bin/env bash
# Builds the file-workload data set of issue 6 from apt's Packages indexes.
#
#   scripts/make-debian-data.sh OUTDIR [--row-bytes N]
#   scripts/make-debian-data.sh OUTDIR --download "SUITES" "ARCHES"
#
# writes OUTDIR/debian.tsv (one stanza per line, fields separated by a tab:
# Package, Version, Architecture first, then every other "Field: value" of
# the stanza in its original order, continuation lines joined by a space)
# and OUTDIR/debian.keys (the key of every row: fields 0,1,2 joined, the way
# `cairndb bench --keyfields=0,1,2` joins them, i.e. with the separator).
# Rows with a repeated key (the same package version in two indexes) are
# kept once, the first time seen. Needs `apt-get update` to have been run.
#
# --row-bytes N also writes OUTDIR/debian-rowN.tsv and its .keys: runs of
# consecutive rows (in debian.tsv's order) joined with a tab until a joined
# row holds at least N bytes, so rows of a chosen size (2800 for the 2.8 KB
# rows of YCSB's Wikipedia load in seed 000) keep real text. A joined row's
# key is its first row's, so the keys stay unique.
#
# --download "SUITES" "ARCHES" builds the rows from the main Packages
# indexes of those suites and architectures fetched from deb.debian.org
# (kept in OUTDIR/cache) instead of apt's lists, for a larger set: e.g.
# --download "bookworm trixie sid" "amd64 arm64 armhf i386 ppc64el s390x"
# gave 578 MB of rows on 2026-11-26 (a package version of architecture
# `all`, or in two suites, appears once however many indexes list it).
set -euo pipefail
usage="usage: make-debian-data.sh OUTDIR [--row-bytes N | --download SUITES ARCHES]"
out=${1:?$usage}
row_bytes=
suites=
arches=
if [ $# -ge 2 ]; then
    case "$2" in
    --row-bytes)
        [ $# -eq 3 ] || { echo "$usage" >&2; exit 2; }
        [[ $3 =~ ^[1-9][0-9]*$ ]] || { echo "make-debian-data: --row-bytes must be a positive integer, not '$3'" >&2; exit 2; }
        row_bytes=$3 ;;
    --download)
        [ $# -eq 4 ] && [ -n "$3" ] && [ -n "$4" ] || { echo "$usage" >&2; exit 2; }
        suites=$3; arches=$4 ;;
    *) echo "$usage" >&2; exit 2 ;;
    esac
fi
mkdir -p "$out"
emit_indexes() {
    if [ -n "$suites" ]; then
        mkdir -p "$out/cache"
        for s in $suites; do
            for a in $arches; do
                local f="$out/cache/$s-main-$a-Packages.xz"
                if [ ! -s "$f" ]; then
                    curl -fsSL --retry 3 -o "$f.part" \
                        "http://deb.debian.org/debian/dists/$s/main/binary-$a/Packages.xz" ||
                        { echo "make-debian-data: cannot fetch $s/main/binary-$a/Packages.xz" >&2; exit 1; }
                    mv "$f.part" "$f"
                fi
                xz -dc "$f"
                echo
            done
        done
        return
    fi
    local files
    mapfile -t files < <(apt-get indextargets --format '$(FILENAME)' 'Identifier: Packages')
    if [ "${#files[@]}" -eq 0 ]; then
        echo "make-debian-data: apt lists no Packages indexes; run apt-get update first" >&2
        exit 1
    fi
    for f in "${files[@]}"; do
        [ -e "$f" ] || { echo "make-debian-data: $f listed by apt but missing; run apt-get update" >&2; exit 1; }
        /usr/lib/apt/apt-helper cat-file "$f"
        echo
    done
}
emit_indexes | awk -v OFS='\t' '
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
' > "$out/debian.tsv.part"
mv "$out/debian.tsv.part" "$out/debian.tsv"
cut -f1-3 "$out/debian.tsv" > "$out/debian.keys"
rows=$(wc -l < "$out/debian.tsv")
bytes=$(wc -c < "$out/debian.tsv")
echo "make-debian-data: $rows rows, $bytes bytes in $out/debian.tsv; keys in $out/debian.keys" >&2
if [ -n "$row_bytes" ]; then
    joined="$out/debian-row$row_bytes.tsv"
    awk -v N="$row_bytes" '
    { row = (row == "") ? $0 : row "\t" $0 }
    length(row) >= N { print row; row = "" }
    END { if (row != "") print row }
    ' "$out/debian.tsv" > "$joined"
    cut -f1-3 "$joined" > "${joined%.tsv}.keys"
    rows=$(wc -l < "$joined")
    bytes=$(wc -c < "$joined")
    echo "make-debian-data: $rows joined rows, $bytes bytes in $joined" >&2
fi
