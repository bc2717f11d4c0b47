# Makefile - the short way to build tapegrad; a thin wrapper around CMake.
#
#   make tour      install missing packages (or print the apt-get line), build,
#                  run `tapegrad tour`
#   make test      build and run every test (ctest), then again under
#                  AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
#   make build     configure and build build/ only
#   make install   install into PREFIX (default /usr/local)
#   make clean     remove build/ and build-asan/
#
# Variables: BUILD_DIR, ASAN_DIR, PREFIX, JOBS, CMAKE_ARGS (extra -D options).

BUILD_DIR  ?= build
ASAN_DIR   ?= build-asan
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

# Evaluated when a recipe runs, i.e. after `setup` may have installed ninja.
GENERATOR = $(if $(shell command -v ninja 2>/dev/null),-G Ninja,)

# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap is.
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0 \
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all setup build tour test test-asan install clean

all: build

setup:
	@bash scripts/setup-deps.sh

# configure (only once; later builds re-run CMake by themselves when needed)
$(BUILD_DIR)/CMakeCache.txt: | setup
	cmake -S . -B $(BUILD_DIR) $(GENERATOR) $(CMAKE_ARGS)

$(ASAN_DIR)/CMakeCache.txt: | setup
	cmake -S . -B $(ASAN_DIR) $(GENERATOR) -DCMAKE_BUILD_TYPE=Debug \
	      -DTG_SANITIZE=address,undefined $(CMAKE_ARGS)

build: setup $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

tour: build
	$(BUILD_DIR)/bin/tapegrad tour

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-asan

test-asan: setup $(ASAN_DIR)/CMakeCache.txt
	cmake --build $(ASAN_DIR) -j $(JOBS)
	$(SAN_ENV) ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)
