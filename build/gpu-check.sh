#!/usr/bin/env bash
# The GPU check: run on a lent GPU machine (CUDA, ptxas, compute-sanitizer,
# PyTorch; no Go, no network), over what `make gpu-build` put in gpu/ and
# nothing else. Each step's outcome and time is recorded and the script goes
# on whatever a step does; a summary table comes last. Logs go to $OUT (the
# device tool brings that folder back) or to gpu/out.
#
#   ptxas      ptxas -arch=sm_90 on every committed PTX module
#   cuda-unit  the backends/cuda tests on the real driver (and, where the
#              machine has g++, TestKernelsMatchCPU on the host emulation,
#              built from gpu/tree/kernels by internal/cudaemu)
#   conf-cuda  the conformance suite (TestConformance) on cuda:0
#   grad-cuda  the gradient checks (TestGrad) on cuda:0
#   conf-wgpu  both on wgpu:0, where the backend opens (Vulkan loader carried)
#   root, nn   the root package's and nn's tests, which use every device that opens
#   memcheck   compute-sanitizer memcheck on a slice of the suite on cuda:0
#   bench      lathe-bench on cuda:0, beside PyTorch where it has CUDA
#
# Budget: under 8 minutes on an H200; each step has its own timeout.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -d "$here/bin" ]; then G=$here; else G=$(cd "$here/../gpu" 2>/dev/null && pwd) || G=""; fi
if [ -z "$G" ] || [ ! -d "$G/bin" ]; then
	echo "gpu-check: no gpu/ folder: run make gpu-build first (here), then carry gpu/ to the GPU machine" >&2
	exit 2
fi
# gpu-build gzips the binaries and Dawn to travel (the PTX that each test
# binary embeds compresses tenfold): unpack them once.
for f in "$G"/bin/*.gz "$G"/cache/lathe/dawn/*.gz; do
	[ -e "$f" ] && gunzip -f "$f"
done
logdir=${OUT:-$G/out}
mkdir -p "$logdir"
LOG=$logdir/gpu-check.log
: >"$LOG"
t_all=$(date +%s)

names=() statuses=() times=() whys=()
record() { # name status seconds why
	names+=("$1") statuses+=("$2") times+=("$3") whys+=("$4")
	printf '== %-10s %-5s %4ss  %s\n' "$1" "$2" "$3" "$4" | tee -a "$LOG"
}

# step NAME FUNC: runs FUNC, which sets status and why.
step() {
	local name=$1 fn=$2 t0
	t0=$(date +%s)
	status=fail why="" 
	echo "== $name: start $(date -u +%T)" >>"$LOG"
	"$fn"
	record "$name" "$status" $(($(date +%s) - t0)) "$why"
}

# counts FILE: "N passed, N failed, N skipped" from a -test.v log.
counts() {
	local p f s
	p=$(grep -c -- '--- PASS' "$1")
	f=$(grep -c -- '--- FAIL' "$1")
	s=$(grep -c -- '--- SKIP' "$1")
	echo "$p passed, $f failed, $s skipped"
}

# gotest NAME BINARY PKGDIR TIMEOUT ARGS...: a test binary in its package's
# folder under gpu/tree; the full log goes to $LOG, failures to stdout.
gotest() {
	local name=$1 bin=$G/bin/$2 dir=$G/tree/$3 limit=$4 rc
	shift 4
	if [ ! -x "$bin" ]; then status=skip why="$bin was not built"; return; fi
	local out=$logdir/.$name.log
	(cd "$dir" && timeout "$limit" "$bin" -test.v -test.count=1 -test.timeout "$((limit - 5))s" "$@") >"$out" 2>&1
	rc=$?
	grep -E -- '--- FAIL|^panic|^FAIL' "$out" | head -40
	{ echo "-- $name: $bin $*"; cat "$out"; } >>"$LOG"
	why=$(counts "$out")
	if [ $rc -eq 124 ]; then status=fail why="timed out after ${limit}s; $why"
	elif [ $rc -ne 0 ]; then status=fail why="exit $rc; $why"
	elif [ -n "${skipif:-}" ] && grep -qE -- "--- SKIP: ($skipif) " "$out"; then
		# The skip's reason is the line after the subtest's RUN line.
		status=skip why="$(grep -m1 -A1 -E "^=== RUN +($skipif)\$" "$out" | tail -1 | sed 's/^ *//' | cut -c1-240)"
	else status=pass; fi
	rm -f "$out"
}

# --- the machine ---------------------------------------------------------
{
	echo "gpu-check of commit $(cat "$G/COMMIT" 2>/dev/null) on $(hostname), $(date -u)"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "nvidia-smi: not found"
} | tee -a "$LOG"
export PATH=$PATH:/usr/local/cuda/bin

# cuBLAS: the toolkit's, else the one that PyTorch's wheels carry. Its
# folder goes on LD_LIBRARY_PATH too, for libcublasLt beside it.
if [ -z "${LATHE_CUBLAS_LIB:-}" ]; then
	for f in $(ldconfig -p 2>/dev/null | grep -o '/[^ ]*libcublas\.so\.1[123]$') \
		/usr/local/cuda/lib64/libcublas.so.1[321] \
		$(find /usr/local /opt /usr/lib -name 'libcublas.so.1[321]' 2>/dev/null | sort -r); do
		if [ -e "$f" ]; then export LATHE_CUBLAS_LIB=$f; break; fi
	done
fi
if [ -n "${LATHE_CUBLAS_LIB:-}" ]; then
	export LD_LIBRARY_PATH=$(dirname "$LATHE_CUBLAS_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
echo "cuBLAS: ${LATHE_CUBLAS_LIB:-none found (matmul runs on the PTX kernel)}" | tee -a "$LOG"

# wgpu: Dawn from gpu/cache (os.UserCacheDir reads XDG_CACHE_HOME), and the
# Vulkan loader from gpu/gl where the machine has none.
if [ -d "$G/cache/lathe/dawn" ]; then
	export XDG_CACHE_HOME=$G/cache
fi
if ! ldconfig -p 2>/dev/null | grep -q libvulkan && ls "$G"/gl/*.deb >/dev/null 2>&1; then
	for f in "$G"/gl/*.deb; do dpkg -x "$f" / 2>>"$LOG"; done
	ldconfig
	[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] &&
		export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
echo "Vulkan loader: $(ldconfig -p 2>/dev/null | grep -m1 -o 'libvulkan.so.1' || echo none); Dawn: $([ -d "$G/cache/lathe/dawn" ] && echo carried || echo 'not carried')" | tee -a "$LOG"

# --- the steps -----------------------------------------------------------
do_ptxas() {
	local ptxas n=0 bad=0 f
	ptxas=$(command -v ptxas) || { status=skip why="no ptxas on PATH or in /usr/local/cuda/bin"; return; }
	for f in "$G"/tree/kernels/ptx/*.ptx; do
		[ -e "$f" ] || { status=skip why="no PTX in gpu/tree/kernels/ptx"; return; }
		n=$((n + 1))
		if ! "$ptxas" -arch=sm_90 -o /dev/null "$f" >>"$LOG" 2>&1; then
			bad=$((bad + 1))
			echo "ptxas failed on $(basename "$f")"
		fi
	done
	why="$n modules, $bad failed ($($ptxas --version | tail -1))"
	[ $bad -eq 0 ] && status=pass
}

do_unit() { skipif="" gotest cuda-unit backends_cuda.test backends/cuda 60; }
do_conf_cuda() { skipif="TestConformance/cuda:0" gotest conf-cuda internal_conformance.test internal/conformance 180 -test.run '^TestConformance$/^cuda:0$'; }
do_grad_cuda() { skipif="TestGrad/cuda:0" gotest grad-cuda internal_conformance.test internal/conformance 120 -test.run '^TestGrad$/^cuda:0$'; }
do_conf_wgpu() { skipif="Test(Conformance|Grad)/wgpu:0" gotest conf-wgpu internal_conformance.test internal/conformance 150 -test.run '^(TestConformance|TestGrad)$/^wgpu:0$'; }
# The WGSL matmul's rate on the GPU's own Vulkan driver (the issue asks
# for it: on lavapipe it is a correctness check only).
do_wgpu_matmul() {
	local out=$logdir/wgpu-matmul.txt
	[ -x "$G/bin/backends_wgpu.test" ] || { status=skip why="no wgpu test binary"; return; }
	(cd "$G/tree/backends/wgpu" && timeout 90 "$G/bin/backends_wgpu.test" -test.run '^$' -test.bench 'MatmulWGPU' -test.benchtime 20x -test.v) >"$out" 2>&1
	local rc=$?
	cat "$out" >>"$LOG"
	grep -E 'Benchmark|SKIP|skip' "$out" | head -10
	if grep -q -- '--- SKIP' "$out"; then
		status=skip why="the benchmark skipped: wgpu:0 is unavailable (conf-wgpu says why)"
	elif grep -q 'GFLOP/s' "$out"; then
		status=pass why="$(grep -E 'Benchmark' "$out" | awk '{print $1": "$(NF-1)" GFLOP/s"}' | sed 's/BenchmarkMatmulWGPU//' | paste -sd' ')"
	elif grep -qi 'unavailable' "$out"; then
		status=skip why="$(grep -m1 -i 'unavailable' "$out" | cut -c1-160)"
	else
		why="exit $rc, no GFLOP/s line"
	fi
}
do_root() { skipif="" gotest root lathe.test . 60; }
do_nn() { skipif="" gotest nn nn.test nn 60; }

do_memcheck() {
	local cs rc out=$logdir/.memcheck.log
	cs=$(command -v compute-sanitizer) || { status=skip why="no compute-sanitizer"; return; }
	(cd "$G/tree/internal/conformance" && timeout 150 "$cs" --tool memcheck --leak-check full --error-exitcode 86 \
		"$G/bin/internal_conformance.test" -test.count=1 -test.v \
		-test.run '^TestConformance$/^cuda:0$/^(matmul|sum|softmax|add|index_select|gather)') >"$out" 2>&1
	rc=$?
	grep -E 'ERROR SUMMARY|Invalid|--- FAIL|Device not supported' "$out" | head -20
	{ echo "-- memcheck"; cat "$out"; } >>"$LOG"
	why="$(grep -m1 'ERROR SUMMARY' "$out" | sed 's/^=* *//'); $(counts "$out")"
	case $rc in
	0) status=pass ;;
	86) why="memcheck found errors: $why" ;;
	124) why="timed out after 150s; $why" ;;
	*) why="exit $rc; $why" ;;
	esac
	if grep -q -- '--- SKIP: TestConformance/cuda:0 ' "$out"; then status=skip why="cuda:0 unavailable"; fi
	# Under gVisor compute-sanitizer refuses the GPU (device/KINDS.md).
	if grep -q 'Device not supported' "$out"; then status=skip why="compute-sanitizer: Device not supported (a sandbox that hides the GPU from it)"; fi
	rm -f "$out"
}

do_bench() {
	local py="" args=(--devices cuda:0 --quick --json "$logdir/bench.json")
	for p in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null && "$p" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
			py=$(command -v "$p"); break
		fi
	done
	[ -n "$py" ] && args+=(--vs-torch --python "$py" --torch-script "$G/tree/build/bench_torch.py")
	(cd "$G/tree" && timeout 150 "$G/bin/lathe-bench" "${args[@]}") 2>&1 | tee "$logdir/bench.txt" | tail -40
	local rc=${PIPESTATUS[0]}
	cat "$logdir/bench.txt" >>"$LOG"
	if grep -q 'cuda:0 skipped' "$logdir/bench.txt"; then
		status=skip why="$(grep -m1 'cuda:0 skipped' "$logdir/bench.txt" | cut -c1-200)"
	elif [ "$rc" -eq 0 ]; then status=pass why="--quick${py:+, vs torch ($py)}; table in bench.txt"
	else why="exit $rc"; fi
}

step ptxas do_ptxas
step cuda-unit do_unit
step conf-cuda do_conf_cuda
step grad-cuda do_grad_cuda
step conf-wgpu do_conf_wgpu
step wgpu-mm do_wgpu_matmul
step root do_root
step nn do_nn
step memcheck do_memcheck
step bench do_bench

# --- the summary, last ---------------------------------------------------
{
	echo
	echo "gpu-check summary (commit $(cat "$G/COMMIT" 2>/dev/null), $(($(date +%s) - t_all))s in all)"
	printf '| %-10s | %-6s | %6s | %s\n' step result time detail
	printf '|%s|%s|%s|%s\n' ------------ -------- -------- --------
	for i in "${!names[@]}"; do
		printf '| %-10s | %-6s | %5ss | %s\n' "${names[$i]}" "${statuses[$i]}" "${times[$i]}" "${whys[$i]}"
	done
	echo "(PTX freshness against the CUDA C sources is checked by make test, where NVRTC and Go are; this machine has no Go.)"
} | tee "$logdir/summary.txt" | tee -a "$LOG"
for s in "${statuses[@]}"; do [ "$s" = fail ] && exit 1; done
exit 0
