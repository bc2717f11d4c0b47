#!/usr/bin/env bash
# tests/cli/run.sh - checks the `tapegrad` command as a user sees it: exit
# codes, one-line errors on misuse, and the content of the in-place demo.
# Usage: run.sh PATH_TO_TAPEGRAD. Exits 0 when every check passes, else 1
# after printing each failed check. Prints "N passed, N failed" at the end.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
cli_init cli "$1"

for h in --help -h help; do
    run "help $h" 0 "$h" && has "help $h" out "Usage:"
done
run version 0 version && has version out "tapegrad 0." && has version out "backends: cpu" &&
    has version out "CUDA devices: " && has version out "CPU kernels: "
if [[ "$(uname -m)" == x86_64 ]]; then
    TAPEGRAD_CPU_KERNELS=base TAPEGRAD_CPU_STREAM_STORES=on run "version, base" 0 version &&
        has "version, base" out "CPU kernels: base, non-temporal stores on"
fi
usage_error "no arguments"

usage_error "unknown command" frobnicate
if [[ "$(cat "$tmp/err")" == "tapegrad: unknown command 'frobnicate' (try 'tapegrad --help')" ]]; then
    ok
else
    bad "unknown command: message is '$(cat "$tmp/err")'"
fi
usage_error "unknown flag" --frobnicate
usage_error "unknown demo" demo nosuch
usage_error "demo without name" demo
usage_error "rows 0" demo inplace --rows 0
usage_error "rows not a number" demo inplace --rows abc
usage_error "rows negative" demo inplace --rows -3
usage_error "rows too large" demo inplace --rows 100000
usage_error "rows trailing junk" demo inplace --rows 4x
usage_error "vocab 1" demo inplace --vocab 1
usage_error "seed negative" demo inplace --seed -1
usage_error "seed overflow" demo inplace --seed 99999999999999999999999
usage_error "missing value" demo inplace --rows
usage_error "unknown demo option" demo inplace --bogus 1
usage_error "unknown tour section" tour nosuch

run "demo help" 0 demo inplace --help && has "demo help" out "--rows"

if run "demo inplace" 0 demo inplace; then
    has demo out "returned TG_ERR_INPLACE"
    # the library's message, printed wrapped as "    | ..." lines: join them
    sed -n 's/^    | //p' "$tmp/out" | tr '\n' ' ' >"$tmp/msg"
    has demo msg "is at version 3; expected version 1"
    has demo msg "saved by LogprobBackward"
    has demo msg "sub_ at "
    has demo msg "demo_inplace.c:"
    has demo msg "add_ at "
    has demo out "PASS"
    has demo out "Demo passed."
    if grep -q $'\e' "$tmp/out"; then bad "demo: terminal escape codes in piped output"; else ok; fi
fi
run "demo inplace, other sizes" 0 demo inplace --rows 3 --vocab=17 --seed 7 &&
    has "demo sizes" out "[3, 17]"
run "tour --list" 0 tour --list && has "tour --list" out "inplace"
# TAPEGRAD_TOUR_QUICK=1 (set by CMake for debug and sanitizer builds): tiny sizes
if [[ "${TAPEGRAD_TOUR_QUICK:-0}" == 1 ]]; then
    run "tour --quick" 0 tour --quick && has "tour --quick" out "all sections passed"
else
    run tour 0 tour && has tour out "all sections passed"
fi

echo "cli: $passed passed, $failed failed"
((failed == 0))
