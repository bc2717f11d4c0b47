# tests/cli/lib.sh - the small harness shared by the CLI check scripts.
# Source it, then call `cli_init NAME PATH_TO_TAPEGRAD`: it sets $bin, a
# temporary directory $tmp removed on exit, and the counters $passed and
# $failed that ok/bad update. run/has write and read files under $tmp;
# usage_error checks the exit status 2 and the one-line error of misuse.

cli_init() { # NAME BIN
    bin="$2"
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/tapegrad-$1.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    passed=0
    failed=0
}

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# run NAME EXPECTED_RC ARGS... : runs the command, stdout/stderr to files
run() {
    local name="$1" want="$2"
    shift 2
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local rc=$?
    if [[ "$rc" != "$want" ]]; then
        bad "$name: exit status $rc, expected $want"
        sed 's/^/  stdout: /' "$tmp/out" | tail -20
        sed 's/^/  stderr: /' "$tmp/err" | tail -20
        return 1
    fi
    ok
}

has() { # NAME FILE TEXT: FILE (under $tmp) contains TEXT (fixed string)
    if grep -qF -- "$3" "$tmp/$2"; then ok; else
        bad "$1: $2 lacks '$3'"
        sed 's/^/  | /' "$tmp/$2" | head -5
    fi
}

usage_error() { # NAME ARGS...: exit 2, nothing on stdout, one line on stderr
    local name="$1"
    shift
    run "$name" 2 "$@" || return
    if [[ -s "$tmp/out" ]]; then bad "$name: printed on stdout"; else ok; fi
    if [[ "$(wc -l <"$tmp/err")" == 1 ]] && grep -q '^tapegrad: ' "$tmp/err"; then ok; else
        bad "$name: stderr is not one 'tapegrad: ...' line:"
        cat "$tmp/err"
    fi
}
