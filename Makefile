# SPDX-License-Identifier: Apache-2.0
# Common tasks. `make demo` and `make test` set everything up themselves (Debian packages,
# configure, build) on a fresh Debian 12 machine.

# Recursive makes stay quiet, so that CTest's summary is the last thing `make test` prints.
MAKEFLAGS += --no-print-directory

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS       ?= $(shell nproc)
# CI sets CI=true: warnings become errors there.
WERROR     := $(if $(CI),ON,OFF)
CMAKE_FLAGS ?=

.PHONY: all build deps configure test test-release test-asan test-tsan demo bench bench-quick format clean install

all: build

deps:
	sh scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DKILN_WERROR=$(WERROR) $(CMAKE_FLAGS)

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON \
	      -DKILN_WERROR=$(WERROR) $(CMAKE_FLAGS)

$(TSAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_TSAN=ON \
	      -DKILN_BUILD_EXAMPLES=OFF -DKILN_WERROR=$(WERROR) $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The whole suite twice: optimized, then under AddressSanitizer + UndefinedBehaviorSanitizer,
# with a short libFuzzer run on the StableHLO parser in between; then the threaded scenarios
# under ThreadSanitizer.
test: deps
	$(MAKE) test-release
	$(MAKE) fuzz FUZZ_SECONDS=$(CI_FUZZ_SECONDS)
	$(MAKE) test-tsan
	$(MAKE) test-asan

test-release: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# One executable called from many threads, regions and donation included: data races are
# ThreadSanitizer reports, which fail the test (tests/tsan/threads_tsan.c).
test-tsan: $(TSAN_BUILD)/CMakeCache.txt
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target threads_tsan pjrt_tsan
	cd $(TSAN_BUILD) && ctest --output-on-failure

test-asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

# Trains a CNN on the digits data set (examples/train_digits.c); options go in DEMO_ARGS
# (e.g. DEMO_ARGS="--epochs 20 --print-ir").
demo: deps
	$(MAKE) build
	./$(BUILD)/examples/kiln-demo --out $(BUILD)/kiln_digits_cnn.safetensors $(DEMO_ARGS)

# Benchmarks: kiln's cases (bench/results/latest.json, and each case's inputs and results in
# bench/results/check), then the peers computing the same from the same inputs (numpy, JAX,
# PyTorch eager / torch.compile / torch.jit.script, ONNX Runtime, time_to_load processes;
# bench/results/peers.json), then the ratio table, bench/RESULTS.md and
# bench/results/ratios.png (bench/README.md). The peers live in bench/.venv, which
# bench-env makes from the pinned bench/requirements.txt: only `make bench` installs them.
BENCH_PY := bench/.venv/bin/python
# JAX on kiln (the PJRT plugin) against JAX on XLA's CPU, side by side in one process.
JAX_KILN := JAX_PLATFORMS=cpu,kiln PYTHONPATH=python/jax_kiln KILN_PJRT_LIBRARY=$(BUILD)/libkiln_pjrt.so
bench: deps bench-env
	$(MAKE) build
	./$(BUILD)/bench/kiln-bench
	bench/run_peers.sh
	$(BENCH_PY) bench/report.py
	$(JAX_KILN) $(BENCH_PY) bench/jax_plugin_bench.py
	bench/run_mpi.sh $(BUILD)

bench-quick: deps bench-env
	$(MAKE) build
	./$(BUILD)/bench/kiln-bench --quick
	bench/run_peers.sh --quick
	$(BENCH_PY) bench/report.py
	$(JAX_KILN) $(BENCH_PY) bench/jax_plugin_bench.py --quick
	bench/run_mpi.sh $(BUILD) --quick

.PHONY: bench-env
bench-env:
	sh scripts/bench_env.sh

install: build
	cmake --install $(BUILD)

format:
	DEPS_EXTRA=clang-format sh scripts/deps.sh
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)

# Fuzzing the StableHLO text parser and the portable-artifact reader with libFuzzer
# (clang), FUZZ_SECONDS each: the library itself is built with coverage instrumentation in
# $(FUZZ_BUILD), seeded with the conformance files and StableHLO's artifacts.
# `make fuzz FUZZ_SECONDS=60` for a short run; crashes are written to $(FUZZ_BUILD)/.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 600
# The bounded libFuzzer run that `make test` (and so CI) does on the parser.
CI_FUZZ_SECONDS ?= 30
FUZZ_CORPUS  ?= ../shared/conformance/stablehlo-interpret
BYTECODE_CORPUS ?= ../shared/conformance/vhlo
.PHONY: fuzz
fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKILN_FUZZ=ON \
	      -DKILN_BUILD_EXAMPLES=OFF \
	      -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" \
	      $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_parse_libfuzzer fuzz_bytecode_libfuzzer
	mkdir -p $(FUZZ_BUILD)/corpus/parse $(FUZZ_BUILD)/corpus/bytecode
	cd $(FUZZ_BUILD) && ./tests/fuzz_parse_libfuzzer -max_total_time=$(FUZZ_SECONDS) \
	      -max_len=65536 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
	      -dict=$(abspath tests/fuzz/parse.dict) \
	      corpus/parse $(abspath tests/fuzz/corpus/parse) $(abspath $(FUZZ_CORPUS))
	cd $(FUZZ_BUILD) && ./tests/fuzz_bytecode_libfuzzer -max_total_time=$(FUZZ_SECONDS) \
	      -max_len=65536 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
	      corpus/bytecode $(abspath tests/fuzz/corpus/bytecode) $(abspath $(BYTECODE_CORPUS))

# Random programs, eager against compiled (tests/runtime/test_random_programs.c), far more
# than `make test` runs: each of the 4 batches for RPG_SECONDS (a few hundred programs a second
# each, 2 batches at a time), or RPG_SECONDS=0 RPG_COUNT=N for N programs per batch. A
# failure prints the program and its seed: KILN_RPG_SEED=<seed> KILN_RPG_COUNT=1 reruns it.
RPG_SECONDS ?= 60
RPG_COUNT   ?= 50000
.PHONY: fuzz-programs
fuzz-programs: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target test_runtime
	cd $(BUILD) && KILN_RPG_SECONDS=$(RPG_SECONDS) KILN_RPG_COUNT=$(RPG_COUNT) \
	      ./tests/test_runtime --filter 'random_programs/*' --jobs=$(JOBS)
