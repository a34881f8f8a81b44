# lathe's front door. `make test` and `make bench` are all a fresh Debian
# machine needs (as root): both run `make deps` first, which installs what
# is missing and is quick when nothing is.

GO ?= go
export CGO_ENABLED := 1

# The devices `make deps` installs, which `make test` requires: a test that
# cannot open one fails instead of skipping (internal/testenv). cuda:0 only
# where the machine has an NVIDIA GPU; a device not listed may be skipped,
# and the summary at the end of `make test` names every skip.
comma := ,
REQUIRE_DEVICES ?= cpu,wgpu:0$(if $(wildcard /dev/nvidia0),$(comma)cuda:0)
# Where the tests append what each device ran (git-ignored).
SUMMARY := out/test-summary.tsv

.PHONY: all deps test vet race unit mpi refs bench fuzz fuzz-short soak kernels mutants

all: test

deps:
	@build/deps.sh

# vet twice: with cgo, and without it, the build every backend's nocgo.go
# stands in for (lathe builds and runs on gonum and the pure-Go loops).
vet: deps
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

vet race unit: export LATHE_REQUIRE_DEVICES := $(REQUIRE_DEVICES)

# The race detector over the layers that hold shared state, over DDP,
# whose buckets are all-reduced on a goroutine while the backward pass runs,
# and over the tests that share tensors, modules and devices between
# goroutines (RACE_TESTS); the last three packages in one go test, which
# builds and runs them side by side (DDP's and TCP's test names match none
# in the root or nn).
RACE_TESTS := Concurrent|TestReleaseRacingAnOp|TestFailedCheckStaysWithItsTensor|TestWithDataHoldsX
race: deps
	$(GO) test -race -count=1 ./dispatch/... ./autodiff/... ./layout/... ./alloc/...
	$(GO) test -race -count=1 -run 'TestDDP|TestMPI$$/ddp|TestTCP|$(RACE_TESTS)' ./dist/ . ./nn/

# The whole suite, then the matmul conformance cases again on gonum's BLAS
# (the cpu backend uses OpenBLAS when it opens), so both GEMM paths stay
# tested, and the cpu's conformance and gradient cases with every buffer
# filled with NaN bits (LATHE_CPU_POISON), since the cpu pool does not
# clear what it reuses and a kernel must write all it reads of its output;
# last, the cases run and skipped on each device (build/testsummary),
# printed whether the suite passed or not.
unit: deps
	@mkdir -p $(dir $(SUMMARY)) && rm -f $(SUMMARY) $(SUMMARY).failed
	LATHE_TEST_SUMMARY=$(abspath $(SUMMARY)) $(GO) test -count=1 -skip '^TestMPI$$' ./... || touch $(SUMMARY).failed
	LATHE_BLAS=gonum $(GO) test -count=1 -run 'TestConformance/cpu/matmul' ./internal/conformance/ || touch $(SUMMARY).failed
	LATHE_CPU_POISON=1 $(GO) test -count=1 -run 'TestConformance/cpu|TestGrad$$/cpu|TestGradFiniteDiff|TestGradCases' ./internal/conformance/ || touch $(SUMMARY).failed
	$(GO) run ./build/testsummary $(SUMMARY)
	@if [ -e $(SUMMARY).failed ]; then echo "unit: FAIL (see the go test output above)"; exit 1; fi

# package dist's tests on two ranks under Open MPI's mpirun (collectives
# for every dtype and op, DDP against one process, peers that leave), in
# their own run: `make deps` installs Open MPI, so here a missing mpirun
# fails (LATHE_REQUIRE_MPI) instead of skipping. About 15 s.
mpi: deps
	LATHE_REQUIRE_MPI=1 $(GO) test -count=1 -run '^TestMPI$$' ./dist/ ./examples/ddp/

test: vet race unit mpi fuzz-short

# Compile the CUDA kernels (kernels/cuda/*.cu) to PTX (kernels/ptx/*.ptx)
# with NVRTC from .deps/cuda; the PTX is committed, and `make test` checks
# that it is fresh and that ptxas assembles it.
kernels: deps
	$(GO) run ./build/nvrtc

# Regenerate the PyTorch reference data under testdata/ (needs python3-torch).
refs: deps
	/usr/bin/python3 build/torchref/gen.py

# The fuzz targets, as package:name: the shape rules, safetensors files,
# and one per op family (DESIGN.md, Tests). Plain `go test` runs each one's
# seed corpus (testdata/fuzz/); `make fuzz` fuzzes each for FUZZTIME, and
# `make test` for a fixed number of inputs each (fuzz-short). fuzz-short
# counts executions rather than seconds: Go 1.26's coordinator can report
# "context deadline exceeded" as a failure when a duration -fuzztime ends
# while a starved worker is mid-call (go.dev/issue/75804, fixed in 1.27), and
# that failed CI on this 2-core machine. A count has no deadline to race.
# What the fuzzer finds is
# written to the package's testdata/fuzz/<target>/, to commit with the fix.
FUZZ_TARGETS := ./dispatch/ops:FuzzBroadcast ./nn:FuzzLoad .:FuzzElementwise .:FuzzViews \
	.:FuzzReduce .:FuzzIndex .:FuzzWindow .:FuzzCast .:FuzzRandom .:FuzzSelect .:FuzzMatMul .:FuzzSort .:FuzzConcat \
	.:FuzzNorm .:FuzzAttention .:FuzzGrid .:FuzzPad .:FuzzEinsum .:FuzzRepeat .:FuzzLoss .:FuzzLossMore .:FuzzMathMore .:FuzzSpecialLinalg .:FuzzShapesWindows .:FuzzSampling .:FuzzCTC
FUZZTIME ?= 30s
# How long the fuzzer shrinks an input that finds new code or fails. Go's
# default (a minute) suits make fuzz, whose failures are kept to read; in
# fuzz-short, which starts from an empty cache, every new input was
# shrunk while the workers waited, up to a minute of a 4000x run's 70 s.
FUZZMINIMIZE ?= 60s
# How many targets fuzz at once (build/fuzz.sh).
FUZZJOBS ?= 1

# Plants the bugs listed in build/mutants.txt one at a time in a scratch
# copy of the tree and reports which the suite catches (killed) and which it
# misses (survived); not part of make test (minutes). Logs in out/mutants/.
mutants: deps
	LATHE_REQUIRE_DEVICES=$(REQUIRE_DEVICES) build/mutants.sh

fuzz: deps
	@GO=$(GO) build/fuzz.sh $(FUZZJOBS) $(FUZZTIME) $(FUZZMINIMIZE) $(FUZZ_TARGETS)

fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=4000x FUZZMINIMIZE=100x FUZZJOBS=2

# The soak run (nn/soak_test.go, build tag soak): 10,000 training steps on
# the cpu and 1,000 on wgpu:0, with the pool's bytes, the heap, the RSS and
# the goroutines required flat. Not part of make test.
soak: deps
	$(GO) test -tags soak -run '^TestSoak$$' -count=1 -timeout 30m -v ./nn/

# The benchmark binary on every device that opens (its dist rows on two
# ranks under mpirun), then the Go benchmarks (dispatch overhead, kernel
# rates). Results go to bench-out/ (git-ignored).
bench: deps
	@mkdir -p bench-out
	$(GO) run ./cmd/lathe-bench --devices all --vs-torch --json bench-out/bench.json --plot bench-out/bench.svg | tee bench-out/lathe-bench.txt
	$(GO) test -run '^$$' -bench . -benchtime 1s ./ ./backends/cpu/ ./dispatch/ | tee bench-out/go-bench.txt

# The GPU check (DESIGN.md, Tests): `make gpu-build` here compiles the test
# binaries, lathe-bench and the PTX into gpu/ (git-ignored); on the lent GPU
# machine, which has no Go, `make gpu-check` runs only what gpu/ holds and
# prints a summary table last.
.PHONY: gpu-build gpu-check gpu-check-selftest ptx-archs
gpu-build: deps
	@build/gpu-build.sh

gpu-check:
	@build/gpu-check.sh

# gpu-check.sh's logic (deadline, summary rows as steps end, failures for a
# missing binary or an unopened device) against stand-ins; about 40 s.
gpu-check-selftest:
	@build/gpu-check-selftest.sh

# ptxas on every PTX module for each architecture from sm_70 to sm_90
# (.deps/cuda's ptxas 11.8 or one on PATH); skipped by name without one.
ptx-archs:
	@build/ptxas-archs.sh kernels/ptx; rc=$$?; [ $$rc -eq 2 ] && exit 0; exit $$rc
