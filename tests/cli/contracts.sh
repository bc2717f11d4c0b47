#!/usr/bin/env bash
# tests/cli/contracts.sh - the rules every subcommand of `tapegrad` follows
# (cli/cli.h, cli/common.h), checked as a user runs the command:
#  - files are written whole or not at all: under a 1 KiB file size limit
#    (SIGXFSZ ignored, so the write fails with EFBIG) --trace, --plot, --dot
#    and the .npy outputs of `logprob` fail with exit 1 and one line on
#    stderr, an earlier file of the same name is left as it was, and no
#    temporary file stays behind; a write error on stdout is exit 1 too;
#  - every demo's claims hold at small sizes, or it says why they do not
#    apply: a grid of small valid sizes exits 0 with nothing on stderr;
#  - options: given twice, the last one counts, for every option of every
#    subcommand; flags given twice count once;
#  - help: `tapegrad help TOPIC` is `tapegrad TOPIC --help`; an unknown topic
#    or an option is a usage error (exit 2, one line); --help wins over
#    anything else on the command line;
#  - progress: nothing on a stderr that is not a terminal on success (every
#    subcommand); on a terminal, progress lines (with script(1), when
#    installed);
#  - malformed invocations: exit 2 and one "tapegrad: " line, nothing on
#    stdout, whatever the option and wherever it stands.
# Usage: contracts.sh PATH_TO_TAPEGRAD. Prints each failed check, then
# "cli_contracts: N passed, N failed"; exits 0 when nothing failed.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
cli_init contracts "$1"

no_stderr() {
    if [[ -s "$tmp/err" ]]; then
        bad "$1: printed on a stderr that is not a terminal:"
        sed 's/^/  | /' "$tmp/err" | head -5
    else ok; fi
}
one_line_error() { # NAME EXPECTED_RC ARGS...: exit status, nothing on stdout, one line on stderr
    local name="$1" want="$2"
    shift 2
    run "$name" "$want" "$@" || return
    if [[ -s "$tmp/out" ]]; then bad "$name: printed on stdout"; else ok; fi
    if [[ "$(wc -l <"$tmp/err")" == 1 ]] && grep -q '^tapegrad' "$tmp/err"; then ok; else
        bad "$name: stderr is not one 'tapegrad...' line:"
        sed 's/^/  | /' "$tmp/err" | head -5
    fi
}
same() { # NAME FILE_A FILE_B: identical files (under $tmp)
    if cmp -s "$tmp/$2" "$tmp/$3"; then ok; else bad "$1: $2 and $3 differ"; fi
}
# json_field FILE KEY [LINE]: the value of "KEY": on line LINE (default 1), as text
json_field() {
    sed -n "${3:-1}p" "$tmp/$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p"
}

# npy_zeros FILE DESCR SHAPE BYTES: a version 1.0 .npy file of zero bytes
npy_zeros() {
    local file="$1" dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
    local hl=$((${#dict} + 1))
    local pad=$((64 - (10 + hl) % 64))
    local field=$((hl + pad))
    {
        printf '\x93NUMPY\x01\x00'
        printf "\\x$(printf %02x $((field & 255)))\\x$(printf %02x $((field >> 8)))"
        printf '%s' "$dict"
        printf '%*s\n' "$pad" ''
        head -c "$4" /dev/zero
    } >"$file"
}
npy_zeros "$tmp/z.npy" '<f8' '(64, 8)' 4096
npy_zeros "$tmp/y.npy" '<i8' '(64,)' 512
npy_zeros "$tmp/g.npy" '<f8' '(64,)' 512
npy_zeros "$tmp/z2.npy" '<f8' '(3, 5)' 120
npy_zeros "$tmp/y2.npy" '<i8' '(3,)' 24

# ---- 1. files written whole or not at all -----------------------------------------------------
# limited NAME FILE... -- ARGS...: with a 1 KiB file size limit, the command
# fails (exit 1, one "tapegrad" line saying "File too large"), every FILE
# keeps its earlier content, and no temporary file is left in their directory.
limited() {
    local name="$1" files=() f
    shift
    while [[ "$1" != -- ]]; do files+=("$1"); shift; done
    shift
    for f in "${files[@]}"; do echo "earlier $name" >"$f"; done
    (trap '' XFSZ; ulimit -f 1; exec "$bin" "$@") >/dev/null 2>"$tmp/err" </dev/null
    local rc=$?
    if [[ "$rc" == 1 ]]; then ok; else bad "$name: exit status $rc, expected 1"; fi
    if [[ "$(wc -l <"$tmp/err")" == 1 ]] && grep -q '^tapegrad' "$tmp/err" &&
        grep -q "$(printf '%s' "File too large")" "$tmp/err"; then ok; else
        bad "$name: stderr is not one line saying 'File too large':"
        sed 's/^/  | /' "$tmp/err" | head -5
    fi
    for f in "${files[@]}"; do
        if [[ "$(cat "$f")" == "earlier $name" ]]; then ok; else
            bad "$name: $f was changed by the failed write"
        fi
        if [[ -z "$(find "$(dirname "$f")" -maxdepth 1 -name '.*.??????' -print -quit)" ]]; then ok; else
            bad "$name: a temporary file was left in $(dirname "$f")"
        fi
    done
}
mkdir -p "$tmp/w"
limited "--trace under ulimit" "$tmp/w/t.json" -- demo inplace --rows 2 --vocab 3 --trace "$tmp/w/t.json"
limited "--plot under ulimit" "$tmp/w/p.svg" -- demo entropy --seq 4 --vocab 8 --reps 1 --plot "$tmp/w/p.svg"
limited "--dot under ulimit" "$tmp/w/g.dot" -- demo inplace --rows 2 --vocab 3 --dot "$tmp/w/g.dot"
limited "bench --trace under ulimit" "$tmp/w/b.json" -- bench logprob --seq 8 --vocab 16 --reps 1 \
    --bandwidth-mib 1 --impl fused --entropy-grad off --json --trace "$tmp/w/b.json"
# logprob: grad_logits.npy (4 KiB) does not fit; logprob.npy and entropy.npy
# would: all or none, the earlier three stay
mkdir -p "$tmp/w/lp"
limited "logprob under ulimit" "$tmp/w/lp/logprob.npy" "$tmp/w/lp/entropy.npy" \
    "$tmp/w/lp/grad_logits.npy" -- logprob --logits "$tmp/z.npy" --targets "$tmp/y.npy" \
    --grad-logprob "$tmp/g.npy" --out "$tmp/w/lp"
# without a limit the same runs replace the files
run "logprob replaces its outputs" 0 logprob --logits "$tmp/z.npy" --targets "$tmp/y.npy" \
    --grad-logprob "$tmp/g.npy" --out "$tmp/w/lp" &&
    if [[ "$(head -c 6 "$tmp/w/lp/grad_logits.npy" | tail -c 5)" == NUMPY ]]; then ok; else
        bad "logprob replaces its outputs: grad_logits.npy is not a .npy file"
    fi
run "--dot replaces a file" 0 demo inplace --rows 2 --vocab 3 --dot "$tmp/w/g.dot" &&
    if head -n 1 "$tmp/w/g.dot" | grep -q '^digraph'; then ok; else bad "--dot: old content"; fi
# a named pipe is written in place, once (checking it beforehand must not open it: its
# reader would take that for the end of the file, and the real write would wait forever)
if command -v mkfifo >/dev/null 2>&1 && command -v timeout >/dev/null 2>&1 &&
    mkfifo "$tmp/pipe" 2>/dev/null; then
    cat "$tmp/pipe" >"$tmp/from_pipe" &
    reader=$!
    timeout 60 "$bin" demo inplace --rows 2 --vocab 3 --dot "$tmp/pipe" >/dev/null 2>"$tmp/err"
    rc=$?
    wait "$reader" 2>/dev/null
    if [[ "$rc" == 0 ]] && head -n 1 "$tmp/from_pipe" | grep -q '^digraph'; then ok; else
        bad "--dot to a named pipe: exit status $rc, the reader got '$(head -c 40 "$tmp/from_pipe")'"
        kill "$reader" 2>/dev/null
    fi
fi
# a file that cannot be created: exit 1, one line, before any work
one_line_error "unwritable directory" 1 demo entropy --seq 4 --vocab 8 --trace "$tmp/no/dir/t.json"
# stdout that cannot be written (a full disk): exit 1, said on stderr
if [[ -w /dev/full ]]; then
    "$bin" --help >/dev/full 2>"$tmp/err"
    rc=$?
    if [[ "$rc" == 1 ]] && grep -q '^tapegrad: cannot write to standard output' "$tmp/err"; then ok
    else bad "stdout on a full disk: exit status $rc, stderr '$(cat "$tmp/err")'"; fi
    "$bin" demo inplace --rows 2 --vocab 3 >/dev/full 2>"$tmp/err"
    rc=$?
    if [[ "$rc" == 1 ]]; then ok; else bad "demo with stdout on a full disk: exit status $rc"; fi
fi

# ---- 2. every demo at small sizes: its claims hold, or it says why not -------------------------
grid() { # NAME ARGS...: exit 0, nothing on stderr (JSON runs: stdout is JSON lines)
    local name="$1"
    shift
    run "$name" 0 "$@" || return
    no_stderr "$name"
}
for sv in "1 2" "2 8" "3 16" "5 8" "5 16"; do
    read -r sq v <<<"$sv"
    grid "chunk seq $sq vocab $v" demo chunk --seq "$sq" --vocab "$v" --chunk 1,2,4 --reps 1 --json
done
grid "chunk 3 x 8, chunk 2 (text)" demo chunk --seq 3 --vocab 8 --chunk 2 --reps 1
has "chunk 3 x 8, chunk 2 (text)" out "Peak not compared with the unchunked row"
has "chunk 3 x 8, chunk 2 (text)" out "seq 3, chunk 2: vocab 8 < 16"
grid "chunk 9 x 64, chunk 6 (text)" demo chunk --seq 9 --vocab 64 --chunk 2,6 --reps 1
has "chunk 9 x 64, chunk 6 (text)" out "seq 9, chunk 6: the chunk is more than half the sequence"
if grep -q 'seq 9, chunk 2:' "$tmp/out"; then bad "chunk 9 x 64: chunk 2 not compared"; else ok; fi
grid "chunk 3 x 8, chunk 2, entropy off" demo chunk --seq 3 --vocab 8 --chunk 2 --reps 1 \
    --entropy-grad off --json
has "chunk peak_checked" out '"peak_checked":false'
for sv in "1 2" "2 3" "3 9"; do
    read -r sq v <<<"$sv"
    grid "entropy seq $sq vocab $v" demo entropy --seq "$sq" --vocab "$v" --reps 1 --json
done
for rv in "1 2" "2 3" "32 128"; do
    read -r r v <<<"$rv"
    grid "inplace rows $r vocab $v" demo inplace --rows "$r" --vocab "$v" --seed "$r"
done
for f in "--microbatches 1" "--microbatches 3 --detach" "--microbatches 2 --log-entropy-with-grad" \
    "--microbatches 2 --detach --log-entropy-with-grad"; do
    # shellcheck disable=SC2086
    grid "leak [1, 2] $f" demo leak --seq 1 --vocab 2 $f
done

# ---- 3. options: given twice, the last one counts ---------------------------------------------
# demo entropy: every option twice; the JSON shows the last values, and the
# seed's values equal a run with the last seed alone
run "entropy twice" 0 demo entropy --seq 9 --seq 3 --vocab 5 --vocab 4 --reps 7 --reps 1 \
    --seed 1 --seed 2 --json --json --trace "$tmp/a.json" --trace "$tmp/b.json" \
    --plot "$tmp/a.svg" --plot "$tmp/b.svg" --dot "$tmp/a.dot" --dot "$tmp/b.dot"
cp "$tmp/out" "$tmp/twice"
# with --json the lines announcing the files are on stderr: one per file, the last names
[[ "$(wc -l <"$tmp/err")" == 3 ]] && ! grep -qv '^wrote ' "$tmp/err" && ok ||
    bad "entropy twice: stderr: $(cat "$tmp/err")"
[[ "$(json_field twice seq)" == 3 && "$(json_field twice vocab)" == 4 ]] && ok ||
    bad "entropy twice: seq/vocab are $(json_field twice seq)/$(json_field twice vocab)"
for f in a.json a.svg a.dot; do [[ ! -e "$tmp/$f" ]] && ok || bad "entropy twice: wrote $f"; done
for f in b.json b.svg b.dot; do [[ -s "$tmp/$f" ]] && ok || bad "entropy twice: no $f"; done
grid "entropy once" demo entropy --seq 3 --vocab 4 --reps 1 --seed 2 --json
[[ "$(json_field out loss)" == "$(json_field twice loss)" ]] && ok ||
    bad "entropy twice: the loss is not the last seed's"
# demo chunk
grid "chunk twice" demo chunk --seq 8 --seq 4 --vocab 5 --vocab 16 --chunk 1 --chunk 2 \
    --reps 3 --reps 1 --entropy-grad on --entropy-grad off --seed 3 --seed 4 --json --json
[[ "$(json_field out seq)" == 4 && "$(json_field out vocab)" == 16 &&
    "$(json_field out entropy_grad)" == false && "$(json_field out chunk 3)" == 2 &&
    "$(wc -l <"$tmp/out")" == 4 ]] && ok || bad "chunk twice: $(head -c 300 "$tmp/out")"
# demo inplace
grid "inplace twice" demo inplace --rows 5 --rows 3 --vocab 9 --vocab 4 --seed 1 --seed 7
cp "$tmp/out" "$tmp/twice"
has "inplace twice" twice "[3, 4]"
grid "inplace once" demo inplace --rows 3 --vocab 4 --seed 7
same "inplace twice is the output of the last values" twice out
# demo leak: flags twice count once
grid "leak twice" demo leak --microbatches 4 --microbatches 2 --seq 8 --seq 2 --vocab 3 \
    --vocab 4 --detach --detach --log-entropy-with-grad --log-entropy-with-grad --json --json
[[ "$(wc -l <"$tmp/out")" == 3 ]] && ok || bad "leak twice: $(wc -l <"$tmp/out") lines, expected 3"
# bench logprob
grid "bench twice" bench logprob --device cpu --device cpu --seq 9 --seq 8 --vocab 9 \
    --vocab 16 --chunk 4 --chunk 0 --impl composite --impl fused --entropy-grad on \
    --entropy-grad off --threads 2 --threads 1 --reps 3 --reps 1 --dtype f32 --dtype f64 \
    --seed 5 --seed 6 --bandwidth-mib 2 --bandwidth-mib 1 --json --json
[[ "$(wc -l <"$tmp/out")" == 1 && "$(json_field out seq)" == 8 &&
    "$(json_field out vocab)" == 16 && "$(json_field out chunk)" == 0 &&
    "$(json_field out impl)" == fused && "$(json_field out entropy_grad)" == false &&
    "$(json_field out threads)" == 1 && "$(json_field out dtype)" == f64 ]] && ok ||
    bad "bench twice: $(cat "$tmp/out")"
# logprob: the last --logits, --targets, --out, --temperature, ... count
one_line_error "logprob twice, last path missing" 1 logprob --logits "$tmp/z2.npy" \
    --targets "$tmp/y2.npy" --out "$tmp/o3" --grad-logprob "$tmp/g.npy" --grad-logprob "$tmp/no.npy"
run "logprob twice, last values" 0 logprob --logits "$tmp/z.npy" --logits "$tmp/z2.npy" \
    --targets "$tmp/y.npy" --targets "$tmp/y2.npy" --out "$tmp/o1" --out "$tmp/o2" \
    --temperature 3 --temperature 2 --ignore-index 0 --ignore-index -100 --chunk 5 --chunk 2 \
    --impl fused --impl composite
has "logprob twice" out "3 rows x 5 (f64, composite, chunk 2, temperature 2"
has "logprob twice" out "0 ignored"
[[ -e "$tmp/o2/logprob.npy" && ! -e "$tmp/o1" ]] && ok || bad "logprob twice: wrote to the first --out"
# tour
run "tour flags twice" 0 tour --list --list && has "tour flags twice" out "inplace"
one_line_error "tour --list with a section" 2 tour --list chunk
one_line_error "tour two sections" 2 tour chunk chunk

# ---- 4. help ----------------------------------------------------------------------------------
for t in "help" "version" "tour" "logprob" "demo" "demo chunk" "bench logprob" "bench threads" \
    "bench linear-logprob" "bench vocab-parallel"; do
    read -ra T <<<"$t"
    run "help $t" 0 help "${T[@]}" || continue
    cp "$tmp/out" "$tmp/help"
    if [[ "$t" == help ]]; then run "--help" 0 --help; else run "$t --help" 0 "${T[@]}" --help; fi
    same "help $t is '$t --help'" help out
    no_stderr "help $t"
done
one_line_error "help --bogus" 2 help --bogus
one_line_error "help bogus" 2 help bogus
one_line_error "help demo bogus" 2 help demo bogus
one_line_error "help demo chunk extra" 2 help demo chunk extra
one_line_error "help tour --list" 2 help tour --list
one_line_error "no command" 2
one_line_error "help bench bogus" 2 help bench bogus
one_line_error "help bench threads extra" 2 help bench threads extra
# every command's help (made from its option table, cli/options.h): at most 79 columns, and
# every default readable
for c in "tour" "logprob" "demo inplace" "demo entropy" "demo chunk" "demo leak" \
    "demo linear" "bench logprob" "bench threads" "bench linear-logprob" "bench vocab-parallel"; do
    read -ra C <<<"$c"
    run "help of $c" 0 "${C[@]}" --help || continue
    if awk 'length($0) > 79 { exit 1 }' "$tmp/out"; then ok; else
        bad "help of $c: a line over 79 columns:"; awk 'length($0) > 79' "$tmp/out" | head -3
    fi
    if grep -q 'default ?' "$tmp/out"; then bad "help of $c: a default with no word"; else ok; fi
done

# ---- 5. progress only on a terminal ------------------------------------------------------------
grid "bench: nothing on stderr" bench logprob --seq 8 --vocab 16 --reps 2 --bandwidth-mib 1
grid "bench --json: nothing on stderr" bench logprob --seq 8 --vocab 16 --reps 2 \
    --bandwidth-mib 1 --json
# (--quick after the section, and twice: the options' rule holds for tour too)
grid "tour inplace --quick --quick: nothing on stderr" tour inplace --quick --quick
has "tour inplace --quick --quick" out "quick: tiny sizes"
grid "leak: nothing on stderr" demo leak --microbatches 2 --seq 2 --vocab 4 --json
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
    script -qec "'$bin' bench logprob --seq 8 --vocab 16 --reps 2 --bandwidth-mib 1 --json \
        >'$tmp/tty_out'" "$tmp/tty" >/dev/null 2>&1 </dev/null
    if grep -q 'rep 2/2' "$tmp/tty" && grep -q $'\e\\[K' "$tmp/tty"; then ok; else
        bad "bench on a terminal: no progress"
    fi
    if grep -q $'\e' "$tmp/tty_out"; then bad "bench on a terminal: escape codes in stdout"; else ok; fi
fi

# ---- 6. malformed invocations: exit 2, one line, nothing on stdout ------------------------------
declare -A base
base[inplace]="demo inplace --rows 2 --vocab 3"
base[entropy]="demo entropy --seq 2 --vocab 3 --reps 1"
base[chunk]="demo chunk --seq 2 --vocab 3 --reps 1"
base[leak]="demo leak --microbatches 1 --seq 2 --vocab 3"
base[bench]="bench logprob --seq 2 --vocab 3 --reps 1 --bandwidth-mib 1"
base[logprob]="logprob --logits $tmp/z2.npy --targets $tmp/y2.npy --out $tmp/mal"
declare -A numeric
numeric[inplace]="--rows --vocab --seed"
numeric[entropy]="--seq --vocab --reps --seed"
numeric[chunk]="--chunk --seq --vocab --reps --seed"
numeric[leak]="--microbatches --seq --vocab"
numeric[bench]="--threads --seq --vocab --chunk --reps --seed --bandwidth-mib"
numeric[logprob]="--ignore-index --temperature --chunk"
# the first option of each: bad values, missing, before the others; then
# unknown options and arguments, after and before the others
for k in inplace entropy chunk leak bench logprob; do
    read -ra B <<<"${base[$k]}"
    pre=2 # the words naming the subcommand
    [[ "$k" == logprob ]] && pre=1
    read -ra O <<<"${numeric[$k]}"
    o="${O[0]}"
    for v in 99999999999999999999 " 1"; do
        one_line_error "$k $o '$v'" 2 "${B[@]}" "$o" "$v"
    done
    one_line_error "$k $o missing" 2 "${B[@]}" "$o"
    one_line_error "$k $o before the others" 2 "${B[@]:0:pre}" "$o" x "${B[@]:pre}"
    one_line_error "$k --bogus before" 2 "${B[@]:0:pre}" --bogus "${B[@]:pre}"
    for u in extra --json=1; do
        one_line_error "$k '$u' after" 2 "${B[@]}" "$u"
    done
done
one_line_error "logprob --temperature ' 1'" 2 "${B[@]}" --temperature " 1"
one_line_error "logprob --temperature 0x10" 2 "${B[@]}" --temperature 0x10
one_line_error "logprob --temperature nan" 2 "${B[@]}" --temperature nan
[[ ! -e "$tmp/mal" ]] && ok || bad "a usage error created logprob's --out directory"

echo "cli_contracts: $passed passed, $failed failed"
((failed == 0))
