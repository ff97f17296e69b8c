#!/usr/bin/env bash
# Checks that the Markdown documentation names things that exist. No
# compilation; run from anywhere (it works from the repository root).
#
# Files checked: README.md and every *.md under docs/. Fenced code blocks
# (``` ... ```) are skipped; inline `code` spans and [text](links) are read.
#
# (a) Paths. In a code span, each whitespace-separated word (and the part
#     after the last `=` of a --flag=value word), with surrounding
#     punctuation stripped, is a repository path when it starts with
#     crates/, docs/, scripts/, fuzz/ or .ci/, or contains a slash and ends
#     in .rs, .md, .sh or .toml. Absolute paths (/...) are not checked.
#     A Markdown link target is a path unless it is http(s)://, mailto: or
#     only an #anchor; its #anchor is dropped. A path must exist relative
#     to the repository root or to the document's own directory.
#     Placeholders are not checked: words containing <, >, *, $, {, ...,
#     NNNNNN, DIR, FILE or Wn. Nor is ../shared/... (the peers live beside
#     the repository, not in it, and CI's clone may sit elsewhere).
# (b) Names. In a code span, each word, or each ::-separated part of it, that
#     is a snake_case identifier of at least four words ([a-z0-9_], three or
#     more underscores, no dots, slashes or spaces) must occur as a whole
#     word somewhere under crates/, fuzz/ or scripts/ (this script aside) or
#     be a file name stem there (a fuzz target). So test names (`fn NAME`),
#     option names and flags pass when they exist anywhere, and names that
#     exist nowhere are reported. Not applied under docs/bench/history/,
#     which records runs of older code (and names kernel symbols).
#
# Prints one line per problem, `FILE:LINE: ...`, and exits 1 if there are
# any, 0 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

self=scripts/check-docs.sh
words=$(mktemp)
trap 'rm -f "$words"' EXIT

# Every identifier-like word in the sources, plus file name stems.
{
    grep -rhoIE '[A-Za-z0-9_]+' crates fuzz scripts \
        --exclude-dir=target --exclude-dir=corpus --exclude-dir=artifacts \
        --exclude="$(basename "$self")" || true
    find crates fuzz scripts -name target -prune -o -type f -print \
        | sed -E 's#.*/##; s#\.[^.]*$##'
} | sort -u >"$words"

docs=(README.md)
while IFS= read -r f; do docs+=("$f"); done < <(find docs -name '*.md' | sort)

problems=0
report() {
    echo "$1"
    problems=$((problems + 1))
}

is_placeholder() {
    case "$1" in
    *'<'* | *'>'* | *'*'* | *'$'* | *'{'* | *...* | *NNNNNN* | *DIR* | *FILE* | *Wn*) return 0 ;;
    ../shared/*) return 0 ;;
    esac
    return 1
}

path_exists() { # path, document's directory
    local p="${1%/}"
    [ -e "$p" ] || [ -e "$2/$p" ]
}

for doc in "${docs[@]}"; do
    dir=$(dirname "$doc")
    # Lines "N<TAB>code<TAB>word" and "N<TAB>link<TAB>target".
    while IFS=$'\t' read -r n kind tok; do
        if [ "$kind" = link ]; then
            case "$tok" in http://* | https://* | mailto:* | '#'*) continue ;; esac
            tok="${tok%%#*}"
            [ -n "$tok" ] || continue
            is_placeholder "$tok" && continue
            path_exists "$tok" "$dir" || report "$doc:$n: link target does not exist: $tok"
            continue
        fi
        w="$tok"
        is_placeholder "$w" && continue
        # (a) paths, in the word itself or after the last '='.
        for cand in "$w" "${w##*=}"; do
            case "$cand" in /* | '') continue ;; esac
            ispath=0
            case "$cand" in
            crates/* | docs/* | scripts/* | fuzz/* | .ci/*) ispath=1 ;;
            */*.rs | */*.md | */*.sh | */*.toml) ispath=1 ;;
            esac
            if [ $ispath = 1 ]; then
                path_exists "$cand" "$dir" || report "$doc:$n: path does not exist: $cand"
                break
            fi
        done
        # (b) names; not in history/, which records runs of older code.
        case "$doc" in docs/bench/history/*) continue ;; esac
        case "$w" in */* | *.*) continue ;; esac
        IFS=' ' read -r -a parts <<<"${w//::/ }"
        for part in "${parts[@]}"; do
            [[ "$part" =~ ^[a-z0-9]+(_[a-z0-9]+){3,}$ ]] || continue
            grep -qxF "$part" "$words" || report "$doc:$n: name not found under crates/, fuzz/ or scripts/: $part"
        done
    done < <(awk '
        /^[ \t]*(```|~~~)/ { fence = !fence; next }
        fence { next }
        {
            line = $0
            # Links [text](target).
            rest = line
            while (match(rest, /\]\([^) \t]+\)/)) {
                t = substr(rest, RSTART + 2, RLENGTH - 3)
                printf "%d\tlink\t%s\n", NR, t
                rest = substr(rest, RSTART + RLENGTH)
            }
            # Code spans: the odd fields between backticks.
            n = split(line, seg, "`")
            for (i = 2; i <= n; i += 2) {
                if (i == n) break  # unclosed span
                m = split(seg[i], w, /[ \t]+/)
                for (j = 1; j <= m; j++) {
                    # Strip surrounding punctuation.
                    x = w[j]
                    sub(/^[("'"'"'\[]+/, "", x)
                    sub(/[\]),;:."'"'"'!?]+$/, "", x)
                    if (x != "") printf "%d\tcode\t%s\n", NR, x
                }
            }
        }' "$doc")
done

if [ "$problems" -gt 0 ]; then
    echo "check-docs: $problems problem(s)" >&2
    exit 1
fi
echo "check-docs: ok (${#docs[@]} files)"
