#!/usr/bin/env bash
# tests/fuzz/run.sh - build the libFuzzer harnesses (tests/fuzz) and run them.
#
#   tests/fuzz/run.sh --replay [BUILD_DIR]     the committed corpora only
#   tests/fuzz/run.sh SECONDS [BUILD_DIR]      replay, then explore (make test: 60 s,
#                                              FUZZ_SEED=1; make fuzz: longer, a new seed)
#   tests/fuzz/run.sh --merge [BUILD_DIR]      add what exploring found to the corpora
#
# Contract:
#   - Needs clang with libFuzzer and the sanitizer runtimes (Debian: clang,
#     libclang-rt-dev, libomp-dev). Without them it prints
#     "skipped: no clang with libFuzzer" and exits 0.
#   - Configures BUILD_DIR (default build-fuzz) once with clang,
#     -DTG_FUZZ=ON -DTG_SANITIZE=address,undefined, CUDA and the Criterion
#     suites off, and builds fuzz_ops and fuzz_npy (JOBS parallel jobs, default 2).
#   - --replay runs every input of the committed corpora (tests/fuzz/corpus/ops,
#     tests/fuzz/corpus/npy) through the harnesses: the same inputs on every
#     machine.
#   - SECONDS replays, then runs both fuzzers in parallel for SECONDS each, on
#     seed FUZZ_SEED when it is set (else a new random seed), from the
#     committed corpora plus what earlier runs kept in BUILD_DIR/corpus (a unit
#     may take up to 60 s). Crash inputs go to BUILD_DIR/artifacts/, logs to
#     BUILD_DIR/*.log. Even on one seed, two runs part ways after some hundred
#     inputs (pointer values and timing feed libFuzzer's feedback): a finding
#     is a real bug to fix, not a flake, and its input then joins the corpus.
#   - --merge adds to the committed corpora the inputs of BUILD_DIR/corpus that
#     reach coverage they lack (libFuzzer's -set_cover_merge=1), so the replay covers it
#     from then on.
#   - The committed corpora are written only by --merge. Exits 0 when nothing
#     was found, 1 otherwise (after printing the end of the failing log and how
#     to reproduce the crash), 2 on bad arguments. Nothing is downloaded.
set -euo pipefail

mode=explore
secs=""
case "${1:-}" in
--replay) mode=replay; shift ;;
--merge) mode=merge; shift ;;
*)
    secs="${1:-60}"
    [[ "$secs" =~ ^[0-9]+$ ]] || {
        echo "usage: tests/fuzz/run.sh --replay|--merge|SECONDS [BUILD_DIR]" >&2
        exit 2
    }
    shift || true
    ;;
esac
dir="${1:-build-fuzz}"
jobs="${JOBS:-2}"
cc="${FUZZ_CC:-clang}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

# ---- is there a clang that links a libFuzzer target with ASan + UBSan? --------------------
probe_dir="$(mktemp -d)"
trap 'rm -rf "$probe_dir"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
    >"$probe_dir/probe.c"
if ! command -v "$cc" >/dev/null 2>&1 ||
    ! "$cc" -fsanitize=fuzzer,address,undefined -fopenmp "$probe_dir/probe.c" \
        -o "$probe_dir/probe" >/dev/null 2>&1; then
    echo "fuzz: skipped: no clang with libFuzzer"
    exit 0
fi

# ---- build ------------------------------------------------------------------------------------
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
if [[ ! -f "$dir/CMakeCache.txt" ]]; then
    cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DTG_FUZZ=ON -DTG_SANITIZE=address,undefined -DTG_CUDA=OFF -DTG_TESTS=OFF \
        -DTG_WERROR=OFF >/dev/null
fi
cmake --build "$dir" -j "$jobs" --target fuzz_ops fuzz_npy

# ---- run ----------------------------------------------------------------------------------------
# allocator_may_return_null: a huge tensor must fail with TG_ERR_NOMEM, not stop ASan.
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
export OMP_NUM_THREADS=1 TAPEGRAD_CPU_CACHE_MB=0
mkdir -p "$dir/artifacts" "$dir/corpus"
rm -f "$dir"/artifacts/*
if [[ $mode == merge ]]; then
    for name in ops npy; do
        [[ -d "$dir/corpus/$name" ]] || continue
        before="$(ls "tests/fuzz/corpus/$name" | wc -l)"
        "$dir/fuzz/fuzz_$name" -set_cover_merge=1 -timeout=20 -rss_limit_mb=2048 \
            -artifact_prefix="$dir/artifacts/merge-${name}-" \
            "tests/fuzz/corpus/$name" "$dir/corpus/$name" >"$dir/merge_$name.log" 2>&1
        echo "fuzz: merge: tests/fuzz/corpus/$name: $before -> $(ls "tests/fuzz/corpus/$name" | wc -l) inputs"
    done
    exit 0
fi
rc=0
# what a failing log says, without the stack traces
summary() {
    grep -E "^(==== |  insn|  end of|fuzz_npy:|fuzz_ops:)|runtime error|ERROR: (Address|Leak)Sanitizer|SUMMARY|out-of-memory|Test unit written" "$1" |
        head -n 30
}
for name in ops npy; do
    bin="$dir/fuzz/fuzz_$name"
    echo "fuzz: replaying tests/fuzz/corpus/$name ($(ls tests/fuzz/corpus/$name | wc -l) inputs)"
    if ! "$bin" -runs=0 -timeout=20 -artifact_prefix="$dir/artifacts/${name}-" \
        "tests/fuzz/corpus/$name" >"$dir/replay_$name.log" 2>&1; then
        echo "fuzz: fuzz_$name failed on the committed corpus (log: $dir/replay_$name.log):" >&2
        summary "$dir/replay_$name.log" >&2
        rc=1
    fi
done

if [[ $mode == replay ]]; then
    [[ $rc == 0 ]] && echo "fuzz: replay: every committed input passed"
    exit "$rc"
fi
pids=()
for name in ops npy; do
    work="$dir/corpus/$name"
    mkdir -p "$work"
    cp -n "tests/fuzz/corpus/$name"/* "$work"/ 2>/dev/null || true
    max_len=4096
    [[ $name == npy ]] && max_len=2048
    seed_opt=()
    [[ -n "${FUZZ_SEED:-}" ]] && seed_opt=(-seed="$FUZZ_SEED")
    "$dir/fuzz/fuzz_$name" -max_total_time="$secs" "${seed_opt[@]}" -timeout=60 -rss_limit_mb=2048 \
        -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$dir/artifacts/${name}-" \
        "$work" "tests/fuzz/corpus/$name" >"$dir/fuzz_$name.log" 2>&1 &
    pids+=($!)
done
names=(ops npy)
for i in 0 1; do
    if wait "${pids[$i]}"; then
        n="$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$dir/fuzz_${names[$i]}.log" |
            grep -Eo '[0-9]+$' || echo '?')"
        echo "fuzz: fuzz_${names[$i]}: ${secs} s, $n inputs, nothing found"
    else
        rc=1
        echo "fuzz: fuzz_${names[$i]} found a problem (log: $dir/fuzz_${names[$i]}.log):" >&2
        summary "$dir/fuzz_${names[$i]}.log" >&2
        crash="$(ls -t "$dir/artifacts/${names[$i]}-"* 2>/dev/null | head -n 1 || true)"
        if [[ -n "$crash" ]]; then
            echo "fuzz: reproduce with: $dir/fuzz/fuzz_${names[$i]} $crash" >&2
            [[ ${names[$i]} == ops ]] &&
                echo "fuzz: as a readable program: build/tests/tg_diff_run --decode $crash" >&2
        fi
    fi
done
exit "$rc"
