# Makefile - the short way to build tapegrad; a thin wrapper around CMake.
#
#   make tour      install missing packages (or print the apt-get line), build,
#                  run `tapegrad tour`
#   make test      build and run every test (ctest), the Python package's tests
#                  (scripts/test-python.sh: `pip install .` into build/pip-venv), then again under
#                  AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/), then
#                  the two libFuzzer harnesses: every input of their committed
#                  corpora, then FUZZ_TEST_SECONDS of exploring each from seed
#                  FUZZ_TEST_SEED (build-fuzz/, clang; skipped without it)
#   make test-tsan tests/test_threads.c under ThreadSanitizer (build-tsan/, the CPU backend
#                  only): by hand, since the TSan build of the library takes minutes
#   make fuzz      the same for FUZZ_SECONDS each on a new random seed: looking
#                  for new problems (docs/testing.md)
#   make fuzz-merge  add what make fuzz reached to the committed corpora
#   make build     configure and build build/ only
#   make install   install into PREFIX (default /usr/local)
#   make clean     remove build/, build-asan/, build-tsan/ and build-fuzz/
#
# Variables: BUILD_DIR, ASAN_DIR, TSAN_DIR, FUZZ_DIR, PREFIX, JOBS, CMAKE_ARGS (extra -D options),
# FUZZ_SECONDS (make fuzz, default 600), FUZZ_TEST_SECONDS and FUZZ_TEST_SEED (make test,
# defaults 60 and 1).

BUILD_DIR  ?= build
ASAN_DIR   ?= build-asan
TSAN_DIR   ?= build-tsan
FUZZ_DIR   ?= build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_TEST_SECONDS ?= 60
FUZZ_TEST_SEED ?= 1
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

# Evaluated when a recipe runs, i.e. after `setup` may have installed ninja.
GENERATOR = $(if $(shell command -v ninja 2>/dev/null),-G Ninja,)
# The Python the module tapegrad._C is built for (and tested with): scripts/python.sh
PYTHON_ARG = $(if $(shell bash scripts/python.sh 2>/dev/null),-DPython3_EXECUTABLE=$(shell bash scripts/python.sh),)

# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap is.
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0 \
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all setup build tour test test-asan test-tsan test-fuzz fuzz fuzz-merge install clean

all: build

setup:
	@bash scripts/setup-deps.sh

# configure (only once; later builds re-run CMake by themselves when needed)
$(BUILD_DIR)/CMakeCache.txt: | setup
	cmake -S . -B $(BUILD_DIR) $(GENERATOR) $(PYTHON_ARG) $(CMAKE_ARGS)

$(ASAN_DIR)/CMakeCache.txt: | setup
	cmake -S . -B $(ASAN_DIR) $(GENERATOR) -DCMAKE_BUILD_TYPE=Debug \
	      -DTG_SANITIZE=address,undefined $(PYTHON_ARG) $(CMAKE_ARGS)

build: setup $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

tour: build
	$(BUILD_DIR)/bin/tapegrad tour

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)
	bash scripts/test-python.sh $(BUILD_DIR)
	$(MAKE) --no-print-directory test-asan
	$(MAKE) --no-print-directory test-fuzz

test-asan: setup $(ASAN_DIR)/CMakeCache.txt
	cmake --build $(ASAN_DIR) -j $(JOBS)
	$(SAN_ENV) ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)
	TG_PY_SANITIZE=1 bash scripts/test-python.sh $(ASAN_DIR)

# ThreadSanitizer: only test_threads is built and registered there (tests/CMakeLists.txt)
test-tsan: setup
	cmake -S . -B $(TSAN_DIR) $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	      -DTG_SANITIZE=thread -DTG_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(TSAN_DIR) -j $(JOBS) --target test_threads_tsan
	ctest --test-dir $(TSAN_DIR) -R test_threads_tsan --output-on-failure

# libFuzzer harnesses (tests/fuzz): corpus replay, then both fuzzers in parallel
test-fuzz: setup
	JOBS=$(JOBS) FUZZ_SEED=$(FUZZ_TEST_SEED) bash tests/fuzz/run.sh $(FUZZ_TEST_SECONDS) $(FUZZ_DIR)

fuzz: setup
	JOBS=$(JOBS) bash tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_DIR)

fuzz-merge: setup
	JOBS=$(JOBS) bash tests/fuzz/run.sh --merge $(FUZZ_DIR)

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR)
