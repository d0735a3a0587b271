# SPDX-License-Identifier: Apache-2.0
# Entry point. Everything builds through CMake into build/ (programs in build/bin/).
#   make          build the product: libraries, programs, the Python module (no tests)
#   make deps     install missing Debian packages (scripts/install-deps.sh)
#   make test     deps + the product and the tests (target qaic_tests) + the whole ctest suite,
#                 the fuzz targets' committed corpora replayed by the same compiler as the rest
#   make demo     deps + the programs the demo runs (DEMO_TARGETS) + an end-to-end run on an
#                 emulated device
#   make bench    deps + the product and the benchmarks (qaic_benchmarks), reported as ratios to
#                 same-run baselines
#   make fuzz     libFuzzer runs (FUZZ_SECONDS per target, FUZZ_TARGETS to choose), adding up
#                 in a campaign kept in $(FUZZ_BUILD)/fuzz-campaign; make fuzz-report sums it,
#                 make fuzz-minimize FUZZ_TARGETS=... adds its new coverage to tests/fuzz/corpus
#   make sanitize the suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
#   make tsan     threaded runtime and emulator tests under ThreadSanitizer (build-tsan/)
#   make soak     long reliability runs, not part of make test (docs/reliability.md)
#   make llm-7b   a Llama-2-7B-shaped decoder generated into $(LLM7B_DIR), compiled with
#                 efficient-transformers' command line and run on an emulated card against a
#                 PyTorch reference, with its time and memory (docs/llm.md, "Real-size models";
#                 about 30 GB of disk; not part of make test); LLM7B_FLAGS adds run_llama.py options
#   make model-operators  every torchvision classification model and torch.nn transformer at
#                 full size, opsets 13, 14 and 17: are all their ONNX operators claimed?
#   make install  build, then install into $(DESTDIR)$(PREFIX) (default /usr/local)
#   make uninstall remove every file the last make install installed (and install-compat's links)
#   make install-compat  the vendor's paths under $(COMPAT_ROOT) (/opt/qti-aic) as links into
#                 $(DESTDIR)$(PREFIX) (docs/python.md); make uninstall-compat removes them
#   make package  build, then the Debian packages into $(PACKAGE_DIR) (lintian-checked)

BUILD        ?= build
FUZZ_BUILD   ?= build-fuzz
BUILD_TYPE   ?= RelWithDebInfo
JOBS         ?= $(shell nproc)
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?=
CMAKE_FLAGS  ?=
CTEST_FLAGS  ?= --output-on-failure
PREFIX       ?= /usr/local
COMPAT_ROOT  ?= /opt/qti-aic
PACKAGE_DIR  ?= $(BUILD)/packages
LLM7B_DIR    ?= $(BUILD)/llm-7b
LLM7B_FLAGS  ?=
# What scripts/demo.sh runs; make demo builds these and nothing else (no tests or benchmarks).
DEMO_TARGETS := qaic-emu qaicd qaic-exec qaic-runner qaic-util lightnet
# Ninja when it is installed (it schedules the 2-core build better than make); GENERATOR= picks.
GENERATOR    ?= $(if $(shell command -v ninja 2>/dev/null),Ninja,Unix Makefiles)

.PHONY: all build test-build deps test demo bench fuzz fuzz-build fuzz-report fuzz-minimize sanitize tsan soak llm-7b model-operators clean install uninstall install-compat uninstall-compat package

all: build

deps:
	@scripts/install-deps.sh

# The fuzz campaigns' own tree: libFuzzer (-fsanitize=fuzzer) is a clang-only feature, so this
# one tree is built by clang; the suite replays the same targets' corpora with its own compiler.
$(FUZZ_BUILD)/CMakeCache.txt:
	cmake -S . -B $(FUZZ_BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DQAIC_FUZZ=ON $(CMAKE_FLAGS)

fuzz-build: $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target qaic_fuzz_targets

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The product and every test program in one build (one scheduler over both).
test-build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target all qaic_tests

test: deps test-build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -j $(JOBS)

demo: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS)
	@scripts/demo.sh $(BUILD)

bench: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target all qaic_benchmarks
	@scripts/bench.sh $(BUILD)

fuzz: deps fuzz-build
	@scripts/fuzz.sh run $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-report:
	@scripts/fuzz.sh report $(FUZZ_BUILD)

fuzz-minimize: fuzz-build
	@scripts/fuzz.sh minimize $(FUZZ_BUILD) $(FUZZ_TARGETS)

sanitize: deps
	$(MAKE) test-build BUILD=build-asan BUILD_TYPE=Debug CMAKE_FLAGS="-DQAIC_SANITIZE=address,undefined"
	cd build-asan && ctest $(CTEST_FLAGS) -j $(JOBS)

tsan: deps
	$(MAKE) build-tsan/CMakeCache.txt BUILD=build-tsan BUILD_TYPE=Debug CMAKE_FLAGS="-DQAIC_SANITIZE=thread"
	cmake --build build-tsan -j $(JOBS) --target qaic_threaded_tests
	cd build-tsan && ctest $(CTEST_FLAGS) -j $(JOBS) -L threaded

# Long reliability runs (docs/reliability.md): a million requests under injected faults
# (SOAK_SECONDS, SOAK_SEED); qaicd SIGKILLed at 200 random points of create and release; 2,000
# InferenceSets in one libqaic client; 100 qaic-runner runs of ResNet-50.
soak: deps test-build
	cmake --build $(BUILD) -j $(JOBS) --target soak_tests
	$(BUILD)/tests/soak_tests
	QAICD_CRASH_ITERATIONS=200 $(BUILD)/tests/qaicd_lease_tests --gtest_filter='CrashConsistencyTest.*'
	QAIC_CLIENT_CYCLES=2000 $(BUILD)/tests/runtime_partition_tests --gtest_filter='*InferenceSetsCreated*'
	EMULATOR_MEMORY_MODEL=resnet50_full EMULATOR_MEMORY_RUNS=100 EMULATOR_MEMORY_INFERENCES=5 \
	  $(BUILD)/tests/emulator_memory_tests

# Generation is skipped when LLM7B_DIR already holds the same model (and the same reference).
llm-7b: build
	/usr/bin/python3 examples/llm/run_llama.py --build $(BUILD) --dir $(LLM7B_DIR) $(LLM7B_FLAGS)

model-operators: build
	$(BUILD)/bin/qaic-exec -operators-supported=$(BUILD)/claimed-operators.txt
	/usr/bin/python3 scripts/check-model-operators.py --claimed $(BUILD)/claimed-operators.txt \
	  --json $(BUILD)/model-operators.json

# DESTDIR is read from the environment by cmake --install, as by every make install.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

uninstall:
	cmake --build $(BUILD) --target uninstall

# Links only: the stack itself is make install's (run it first, with the same PREFIX).
install-compat: build
	cmake -DMODE=install -DBUILD=$(abspath $(BUILD)) -DPREFIX=$(PREFIX) -DCOMPAT_ROOT=$(COMPAT_ROOT) \
	  -P cmake/Compat.cmake

uninstall-compat:
	cmake -DMODE=uninstall -DBUILD=$(abspath $(BUILD)) -P cmake/Compat.cmake

package: deps build
	deploy/debian/build-packages.sh $(BUILD) $(PACKAGE_DIR)

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD) build-asan build-tsan
