#!/usr/bin/env bash
# tests/mpi/run.sh - the vocab-parallel suite under mpirun on this machine.
#
# Usage: run.sh PATH_TO_TEST_MPI [MPIRUN]. Runs test_mpi with 1, 2 and 4
# ranks (--oversubscribe: more ranks than cores is fine; as root Open MPI
# needs --allow-run-as-root), one OpenMP thread each, each run bounded by a
# timeout; then the killed-rank case: rank 1 exits while rank 0 waits in a
# collective, and the job must end (non-zero) well within its timeout rather
# than hang. Exits 0 when everything passed, 1 otherwise.
set -uo pipefail

bin="$1"
mpirun="${2:-mpirun}"
args=(--oversubscribe)
[[ "$(id -u)" == 0 ]] && args+=(--allow-run-as-root)
# loopback only, no InfiniBand probing: quieter and the same on every machine
export OMPI_MCA_btl="self,vader,tcp" OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_btl_base_warn_component_unused=0 OMP_NUM_THREADS=1
# Under AddressSanitizer: no leak report at exit (Open MPI's runtime keeps thousands of
# allocations to the end; LeakSanitizer cannot tell them from ours through its
# frame-pointer-less stacks). test_mpi checks that the library freed everything (tg_live).
[[ -n "${ASAN_OPTIONS:-}" ]] && export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
failed=0
for np in 1 2 4; do
    if timeout 240 "$mpirun" "${args[@]}" -np "$np" "$bin"; then
        echo "mpi: $np rank(s): passed"
    else
        echo "mpi: $np rank(s): FAILED (status $?)"
        failed=1
    fi
done
# NCCL (a build with it): one rank per GPU, at least one; SKIPPED without a GPU
nccl="$(dirname "$bin")/test_nccl"
if [[ -x "$nccl" ]]; then
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    ((ngpu >= 1)) || ngpu=1
    if out="$(timeout 240 "$mpirun" "${args[@]}" -np "$ngpu" "$nccl" 2>&1)"; then
        echo "mpi: nccl ($ngpu rank(s)): $(tail -1 <<<"$out")"
    else
        echo "mpi: nccl ($ngpu rank(s)): FAILED"
        echo "$out" | tail -20
        failed=1
    fi
fi
# the bench under mpirun: one JSON object per rank, the (N, V) part of the peak falling
tapegrad="$(dirname "$bin")/../bin/tapegrad"
if [[ -x "$tapegrad" ]]; then
    for op in logits linear; do
        out="$(timeout 120 "$mpirun" "${args[@]}" -np 2 "$tapegrad" bench vocab-parallel --op "$op" \
            --seq 64 --vocab 1000 --hidden 16 --reps 1 --json 2>/dev/null)"
        if [[ "$(grep -c '"bench":"vocab-parallel"' <<<"$out")" == 2 ]] &&
            grep -q '"collectives_per_step":' <<<"$out"; then
            echo "mpi: bench vocab-parallel --op $op: passed"
        else
            echo "mpi: bench vocab-parallel --op $op: FAILED:"
            echo "$out" | head -5
            failed=1
        fi
    done
fi
start=$(date +%s)
timeout 120 "$mpirun" "${args[@]}" -np 2 "$bin" kill >/dev/null 2>&1
rc=$?
took=$(($(date +%s) - start))
if [[ "$rc" == 124 ]]; then
    echo "mpi: killed rank: the job HUNG (killed by the 120 s timeout)"
    failed=1
elif [[ "$rc" == 0 ]]; then
    echo "mpi: killed rank: the job exited 0, expected a failure"
    failed=1
else
    echo "mpi: killed rank: the job ended with status $rc after ${took} s (no hang)"
fi
exit "$failed"
