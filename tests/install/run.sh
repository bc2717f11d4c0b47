#!/usr/bin/env bash
# tests/install/run.sh - installs a built tapegrad into a temporary prefix and
# builds tests/install/prog.c against it, as another project would:
#   1. pkg-config, shared library (rpath into the prefix)
#   2. pkg-config --static, static library (checks Libs.private)
#   3. CMake find_package(tapegrad): tapegrad::tapegrad and ::tapegrad_static
# Each program must print "grad 2 4 6" and "site prog.c:N": call sites are
# relative to the project's directory (the CMake package maps it away; with
# pkg-config, -fmacro-prefix-map as README.md says).
# Usage: run.sh BUILD_DIR C_COMPILER [EXTRA_FLAGS]
#   EXTRA_FLAGS go to every compile and link (e.g. -fsanitize=address,undefined
#   when the library itself was built with sanitizers).
# Exits 0 when all builds and runs succeed, 1 otherwise (printing why).
set -euo pipefail

build_dir="$(cd "$1" && pwd)"
cc="$2"
extra="${3:-}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# the line of prog.c whose tg_mul the in-place error names
site_line="$(grep -n 'tg_mul(a, x)' "$here/prog.c" | cut -d: -f1)"
expected="grad 2 4 6
site prog.c:$site_line"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/tapegrad-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

fail() { echo "install test: FAIL: $*" >&2; exit 1; }
check_run() { # name, executable
    local out
    out="$("$2")" || fail "$1: the program exited with status $?"
    [[ "$out" == "$expected" ]] || fail "$1: printed '$out', expected '$expected'"
    echo "install test: $1: ok (${out//$'\n'/; })"
}

echo "install test: cmake --install $build_dir --prefix $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$tmp/install.log" ||
    { cat "$tmp/install.log"; fail "cmake --install failed"; }
[[ -f "$prefix/include/tapegrad.h" ]] || fail "include/tapegrad.h was not installed"

pc="$(find "$prefix" -name tapegrad.pc -print -quit)"
[[ -n "$pc" ]] || fail "tapegrad.pc was not installed"
PKG_CONFIG_PATH="$(dirname "$pc")"
export PKG_CONFIG_PATH
libdir="$(pkg-config --variable=libdir tapegrad)"
[[ -f "$libdir/libtapegrad.a" ]] || fail "no libtapegrad.a in pkg-config's libdir $libdir"
read -r -a extra_flags <<<"$extra"
cflags=(-std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror "${extra_flags[@]}")

# 1. pkg-config, shared library
# shellcheck disable=SC2046
map="-fmacro-prefix-map=$here/="
"$cc" "${cflags[@]}" "$map" "$here/prog.c" -o "$tmp/prog_pc" \
    $(pkg-config --cflags --libs tapegrad) -Wl,-rpath,"$libdir" ||
    fail "build with 'pkg-config --cflags --libs tapegrad' failed"
check_run "pkg-config (shared)" "$tmp/prog_pc"

# 2. pkg-config --static, static archive named explicitly
static_libs="$(pkg-config --static --libs tapegrad |
    sed -E "s#(^| )-ltapegrad( |\$)#\\1$libdir/libtapegrad.a\\2#")"
# shellcheck disable=SC2046,SC2086
"$cc" "${cflags[@]}" "$map" "$here/prog.c" -o "$tmp/prog_pc_static" \
    $(pkg-config --cflags tapegrad) $static_libs ||
    fail "build with 'pkg-config --static --libs tapegrad' failed"
check_run "pkg-config (static)" "$tmp/prog_pc_static"

# 3. CMake find_package
cmake -S "$here" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="${cflags[*]}" \
    -DCMAKE_EXE_LINKER_FLAGS="$extra" >"$tmp/cmake.log" 2>&1 ||
    { cat "$tmp/cmake.log"; fail "configuring a find_package(tapegrad) project failed"; }
cmake --build "$tmp/cmake-build" >>"$tmp/cmake.log" 2>&1 ||
    { cat "$tmp/cmake.log"; fail "building a find_package(tapegrad) project failed"; }
check_run "find_package (tapegrad::tapegrad)" "$tmp/cmake-build/prog"
check_run "find_package (tapegrad::tapegrad_static)" "$tmp/cmake-build/prog_static"

echo "install test: PASS"
