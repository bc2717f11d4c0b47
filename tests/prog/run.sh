#!/usr/bin/env bash
# tests/prog/run.sh - the CTest test prog_programs: every program of
# tests/prog/programs/*.txt runs with the executor's contract checks (statuses,
# messages, versions, ownership, nothing alive at the end: see tests/prog/prog.h),
# and every program survives print -> encode -> decode unchanged (the fuzzers' byte
# form). Under the ASan/UBSan build the same run is also a sanitizer test.
#
#   tests/prog/run.sh TG_DIFF_RUN PROGRAMS_DIR
#
# Exit status 0 when every program passes, 1 otherwise (the failing program's
# report is printed).
set -uo pipefail
# errors.txt asks for a 16 TiB tensor: it must fail with TG_ERR_NOMEM, not stop ASan
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:allocator_may_return_null=1"
run="$1"
dir="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
rc=0
for f in "$dir"/*.txt; do
    name="$(basename "$f")"
    if ! "$run" "$f" >"$tmp/out" 2>&1; then
        echo "prog_programs: $name broke a contract:"
        grep -v -E "^ *[0-9]+  TG_" "$tmp/out" | tail -n 40
        rc=1
        continue
    fi
    # text -> bytes -> text, program by program
    awk -v out="$tmp/p" 'BEGIN{n=0; f=out n ".txt"} /^---$/{n++; f=out n ".txt"; next} {print > f}' "$f"
    for p in "$tmp"/p*.txt; do
        "$run" "$p" | sed -E 's/^ *[0-9]+  [A-Z_]+ +//' | grep -v '^== ' >"$tmp/printed"
        "$run" --encode "$p" "$tmp/bytes" && "$run" --decode "$tmp/bytes" >"$tmp/decoded"
        if ! diff -u "$tmp/printed" "$tmp/decoded" >"$tmp/diff"; then
            echo "prog_programs: $name: the byte form does not give the program back:"
            cat "$tmp/diff"
            rc=1
        fi
    done
    rm -f "$tmp"/p*.txt
    echo "prog_programs: $name: ok ($(grep -c -E '^ *[0-9]+  TG_' "$tmp/out") instructions)"
done
exit "$rc"
