# softverbs: a thin wrapper around CMake, ctest and the scripts in scripts/.
# Every target that needs Debian packages installs the missing ones first
# (scripts/deps.sh: as root by itself, otherwise it says what to install).
#
#   make             build build/lib/libibverbs.so.1 and librdmacm.so.1
#   make demo        Debian's ibv_rc_pingpong, server and client, over softverbs
#   make test        all tests: plain, ASan+UBSan (build-asan/), TSan (build-tsan/)
#   make test-extended  the same plus the long runs (60 s of fuzzing per path)
#   make test-plain  the tests of build/ only; also test-asan, test-tsan
#   make bench       benchmarks (bench/run.sh)
#   make stamps      build-stamps/lib: the libraries with TSC stamps (bench/stamps.py)
#   make deps        install every Debian package the project uses
#   make lint        shellcheck the shell scripts, check the layering of src/
#                    and that the libraries make no cancellation points (tools/nocancel.sh)
#   make install     libraries to PREFIX/lib/softverbs, softverbs to PREFIX/bin (DESTDIR too)
#   make uninstall   remove exactly what make install put
#   make clean       remove the build directories

SHELL := /bin/bash
JOBS ?= 2
BUILD_DIR ?= build
PREFIX ?= /usr/local

.PHONY: install uninstall all build deps deps-build test test-extended test-plain test-asan test-tsan demo bench stamps lint clean help

all: build

deps:
	@bash scripts/deps.sh all

deps-build:
	@bash scripts/deps.sh build

build: deps-build
	cmake -S . -B $(BUILD_DIR) -DSANITIZE=
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: deps
	JOBS=$(JOBS) bash scripts/test.sh plain asan tsan

# The extended mode: everything in `make test`, plus the long runs (60 s of
# fuzzing per receive path) that are skipped otherwise.
test-extended: deps
	SOFTVERBS_TEST_EXTENDED=1 JOBS=$(JOBS) bash scripts/test.sh plain asan tsan

test-plain: deps
	JOBS=$(JOBS) bash scripts/test.sh plain

test-asan: deps
	JOBS=$(JOBS) bash scripts/test.sh asan

test-tsan: deps
	JOBS=$(JOBS) bash scripts/test.sh tsan

demo: build
	@bash scripts/deps.sh run tools
	bash tools/demo.sh $(BUILD_DIR)

bench: build
	@bash scripts/deps.sh bench
	@if [ -f bench/run.sh ]; then \
	  bash bench/run.sh; \
	else \
	  echo "make bench: bench/run.sh does not exist yet: no benchmarks to run"; \
	fi

# The libraries with TSC stamps along the per-message path, in a directory
# of their own (src/util/stamp.h; read with bench/stamps.py).
stamps: deps-build
	cmake -S . -B build-stamps -DSANITIZE= -DSV_STAMPS=ON -DSV_BUILD_TESTS=OFF
	cmake --build build-stamps -j $(JOBS) --target ibverbs rdmacm

lint:
	@if command -v shellcheck >/dev/null; then \
	  shellcheck -x scripts/*.sh tools/*.sh tests/*.sh tests/compat/*.sh tests/net/*.sh tests/cm/*.sh tests/consumers/*.sh tests/qperf/*.sh tests/libfabric/*.sh tests/pyverbs/*.sh tests/mpi/*.sh tests/unit/*.sh \
	    tests/lint/*.sh bench/*.sh .ci/run && echo "shellcheck: clean"; \
	else \
	  echo "make lint: shellcheck is not installed (apt-get install shellcheck)"; exit 1; \
	fi
	@bash tools/layering.sh
	@bash tools/nocancel.sh

# cmake --install honours DESTDIR from the environment and writes the list of
# installed files to the build directory; uninstall removes exactly those.
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD_DIR) --prefix "$(PREFIX)"

uninstall:
	@manifest=$(BUILD_DIR)/install_manifest.txt; \
	if [ ! -f "$$manifest" ]; then echo "make uninstall: $$manifest missing: nothing was installed from $(BUILD_DIR)"; exit 1; fi; \
	while IFS= read -r f || [ -n "$$f" ]; do rm -f -- "$(DESTDIR)$$f"; done < "$$manifest"; \
	rmdir -- "$(DESTDIR)$(PREFIX)/lib/softverbs" 2>/dev/null || true; \
	rm -f -- "$$manifest"; echo "make uninstall: removed the files of $$manifest"

clean:
	rm -rf build build-asan build-tsan

help:
	@sed -n '5,15s/^# \{0,1\}//p' Makefile
