#!/usr/bin/env bash
# scripts/check-api-docs.sh - fails when a public function is not documented.
#
# Contract: collects every name tg_xxx that include/**/*.h declares as a
# function (a name followed by "(" outside comments and preprocessor lines,
# but not "(*": that is a type in front of a function pointer)
# or defines as a function-like macro (#define tg_xxx(...)), and checks that
# docs/api.md mentions each one as a whole word. Prints the missing names and
# exits 1 if any; exits 0 otherwise. Usage: check-api-docs.sh [REPO_ROOT]
set -euo pipefail

root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
doc="$root/docs/api.md"
[[ -f "$doc" ]] || { echo "check-api-docs: $doc does not exist" >&2; exit 1; }

mapfile -t headers < <(find -L "$root/include" -name '*.h' | sort)
((${#headers[@]})) || { echo "check-api-docs: no headers under $root/include" >&2; exit 1; }

# Strip comments, join continued lines, then take
#   declarations: non-# lines, tg_name followed by "("
#   macros:       "#define tg_name("
names="$(
    for h in "${headers[@]}"; do
        sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$h" |
            perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g'
    done | awk '
        /^[ \t]*#[ \t]*define[ \t]+tg_[a-z0-9_]+\(/ {
            match($0, /tg_[a-z0-9_]+\(/); print substr($0, RSTART, RLENGTH - 1); next }
        /^[ \t]*#/ { next }
        { line = $0
          while (match(line, /tg_[a-z0-9_]+[ \t]*\(/)) {
              name = substr(line, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
              line = substr(line, RSTART + RLENGTH)
              if (line !~ /^[ \t]*\*/) print name } }' |
        grep -v '^tg__' | sort -u
)"

missing=()
count=0
while IFS= read -r name; do
    [[ -n "$name" ]] || continue
    count=$((count + 1))
    grep -qw -- "$name" "$doc" || missing+=("$name")
done <<<"$names"

if ((${#missing[@]})); then
    echo "check-api-docs: ${#missing[@]} of $count public names are not in docs/api.md:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi
echo "check-api-docs: all $count public names are documented in docs/api.md"
