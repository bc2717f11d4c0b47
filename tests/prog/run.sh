#!/usr/bin/env bash
# tests/prog/run.sh - the CTest test prog_programs: every program of
# tests/prog/programs/*.txt runs with the executor's contract checks (statuses,
# messages, versions, ownership, nothing alive at the end: see tests/prog/prog.h),
# and every program survives print -> parse and print -> encode -> decode unchanged
# (the fuzzers' byte form). Under the ASan/UBSan build the same run is also a sanitizer test.
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
    ok=1
    # print -> parse and print -> bytes -> decode give the program back
    if ! "$run" --forms "$f" >"$tmp/forms" 2>&1; then
        echo "prog_programs: $name: the text and byte forms differ:"
        cat "$tmp/forms"
        ok=0
    fi
    if ! "$run" "$f" >"$tmp/out" 2>&1; then
        echo "prog_programs: $name broke a contract:"
        grep -v -E "^ *[0-9]+  TG_" "$tmp/out" | tail -n 40
        ok=0
    fi
    if ((ok == 0)); then
        rc=1
        continue
    fi
    echo "prog_programs: $name: ok ($(grep -c -E '^ *[0-9]+  TG_' "$tmp/out") instructions)"
done
exit "$rc"
