#!/usr/bin/env bash
# scripts/python.sh - prints the Python the project builds its module for and
# tests with: the first of /usr/bin/python3 (Debian's, where python3-numpy and
# python3-torch install) and python3 that imports pytest; else the first that
# exists; nothing (exit 1) when there is no Python. The Makefile gives it to
# CMake (Python3_EXECUTABLE) and scripts/test-python.sh runs the tests with it,
# so that the module is built for the interpreter that imports it.
for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import pytest' >/dev/null 2>&1; then
        command -v "$p"
        exit 0
    fi
done
for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null 2>&1; then
        command -v "$p"
        exit 0
    fi
done
exit 1
