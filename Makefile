# Thin wrapper over CMake: everything builds out of tree in build/.
BUILD     ?= build
ASAN_BUILD ?= build-asan
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all configure test check unit asan tsan interop deps venv zoo install clean demo bench fuzz fuzz-smoke python-test

all: configure
	cmake --build $(BUILD) -j $(JOBS)

# A build dir counts as configured when CMake finished generating it: CMakeCache.txt is written
# early, so after a failed configure (a dependency missing) it exists without the Makefile (or
# build.ninja), and cmake is run again (tests/cli/make_reconfigure.sh).
configured = test -f $(1)/CMakeCache.txt && { test -f $(1)/Makefile || test -f $(1)/build.ninja; }

configure:
	@$(call configured,$(BUILD)) || cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

# Unit and CLI tests on the normal build.
test: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The same tests built with AddressSanitizer and UndefinedBehaviorSanitizer.
asan:
	@$(call configured,$(ASAN_BUILD)) || cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSM_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer on the tests that run threads: the serve layer's (manager, batcher, REST, deadlines,
# JSON), the runtime's, the model's, control flow's, test_base's first dtype lookups on four threads, and any
# test_plan* / test_concurrency*. Only the library and those tests are built (build-tsan); the
# first race fails the run (halt_on_error). No suppressions: our code gets none, OpenBLAS is not
# instrumented (TSan does not see its accesses), and these tests call the REST handler in-process,
# never starting libmicrohttpd. About 25 s on 2 cores, build included.
TSAN_BUILD ?= build-tsan
TSAN_TESTS = $(sort $(basename $(notdir $(wildcard tests/unit/test_serve_*.c tests/unit/test_runtime.c \
               tests/unit/test_model.c tests/unit/test_base.c tests/unit/test_plan*.c tests/unit/test_concurrency*.c \
               tests/unit/test_control.c))))
empty :=
space := $(empty) $(empty)
tsan:
	@$(call configured,$(TSAN_BUILD)) || cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSM_TSAN=ON
	cmake $(TSAN_BUILD) >/dev/null # re-read the test list: a target named before cmake saw its file is "no rule"
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target $(TSAN_TESTS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --output-on-failure -j $(JOBS) -R '^($(subst $(space),|,$(TSAN_TESTS)))$$'

# libFuzzer targets (clang, ASan + UBSan) in their own build dir, each run FUZZ_SECONDS; fails on
# any crash. FUZZ_TARGETS picks some of: saved_model pbtxt table bundle npy pyliteral example graph
# idx json keras grpc pb_decode media records kernels (empty: every target built). See fuzz/run.sh.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz:
	CLI=$(BUILD)/savedmodel fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# What `make check` runs: every parser's fuzz target briefly. 20 s each, not 60: with ten targets,
# 60 s each plus building them would add well over ten minutes to every CI run. fuzz_kernels is
# left out: its random walk over ~640 ops would fail CI on whichever kernel bug it meets first in
# that run (a different one each run); CI's kernel check is the seeded test_kernel_hostile, and
# `make fuzz FUZZ_TARGETS=kernels FUZZ_SECONDS=3600` the long run whose finds become its regressions.
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_SMOKE_TARGETS ?= saved_model pbtxt table bundle npy pyliteral example graph idx json keras grpc pb_decode media records
fuzz-smoke: all
	$(MAKE) fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS) FUZZ_TARGETS="$(FUZZ_SMOKE_TARGETS)"

# The Python package (python/): `pip install ./python` into a fresh venv (numpy, pytest, setuptools
# and wheel from PyPI, through pip's cache), its library built by setup.py in $(BUILD) (already
# built by `all`, so nothing is compiled again), then its pytest suite against the zoo's goldens.
PYVENV ?= $(BUILD)/pyvenv
python-test: all
	rm -rf $(PYVENV)
	python3 -m venv $(PYVENV)
	$(PYVENV)/bin/python -m pip install -q numpy pytest setuptools wheel
	env -u SAVEDMODEL_LIBRARY SAVEDMODEL_CMAKE_BUILD_DIR=$(abspath $(BUILD)) CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) \
	  $(PYVENV)/bin/python -m pip install -q --no-build-isolation ./python
	cd python/tests && env -u SAVEDMODEL_LIBRARY SAVEDMODEL_CLI=$(abspath $(BUILD))/savedmodel \
	  $(abspath $(PYVENV))/bin/python -m pytest -q -p no:cacheprovider

# Python venv with TensorFlow, used only by tools/ and the interop suite.
venv:
	tools/venv.sh $(BUILD)/venv

# Cross-check with real TensorFlow, both ways (needs the venv).
interop: all venv
	$(BUILD)/venv/bin/python tools/interop.py --build $(BUILD)

# Regenerate the committed zoo of TensorFlow-written models and goldens.
zoo: all venv
	$(BUILD)/venv/bin/python tools/make_zoo.py --out tests/fixtures/zoo

deps:
	tools/install-deps.sh

# Every test: dependencies, unit + CLI tests, the Python package, the ASan/UBSan and TSan builds,
# a short fuzz run, TensorFlow interop.
check: deps
	$(MAKE) test
	$(MAKE) python-test
	$(MAKE) asan
	$(MAKE) tsan
	$(MAKE) fuzz-smoke
	$(MAKE) interop

demo: all
	tools/demo.sh $(BUILD)

bench: all venv
	$(BUILD)/venv/bin/python bench/run.py --build $(BUILD)

install: all
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
