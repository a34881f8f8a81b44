#!/usr/bin/env bash
# The GPU check: run on a lent GPU machine (CUDA, ptxas, compute-sanitizer,
# PyTorch; no Go, no network), over what `make gpu-build` put in gpu/ and
# nothing else. Logs go to $OUT (the device tool brings that folder back)
# or to gpu/out; each step's row is appended to summary.txt there as the
# step ends, so a hang or a kill loses one step, not the run.
#
#   ptxas      build/ptxas-archs.sh: every PTX module for sm_70 ... sm_90
#   cuda-unit  the backends/cuda tests on the real driver (TestRealDevice
#              must pass, not skip), -short: without the host emulation,
#              which make test runs and which would eat the budget here
#   conf-cuda  the conformance suite (TestConformance) on cuda:0
#   grad-cuda  the gradient checks (TestGrad) on cuda:0
#   conf-wgpu  both on wgpu:0 (the NVIDIA Vulkan driver where the machine
#              has one, else the carried lavapipe; the row says which)
#   wgpu-mm    the WGSL matmul's rate on wgpu:0
#   nccl       dist's one-rank NCCL group on cuda:0 (TestNCCLOneRank)
#   root, nn   the root package's and nn's tests, with cuda:0 required
#   mlp, cnn   the examples trained on cuda:0 against the cpu, in float32
#              and under autocast (bfloat16, float16): their TestTrain*Devices
#   memcheck   compute-sanitizer memcheck (caching allocator off, leak
#              check at the context's release) on a slice of conf-cuda
#   bench      lathe-bench on cuda:0, beside PyTorch where it has CUDA
#
# Every test step runs with LATHE_REQUIRE_DEVICES naming its device, so a
# device that does not open fails the step (internal/testenv), and a step
# passes only if some test passed on that device. A missing binary fails.
#
# Budget: one deadline for the whole run, GPU_CHECK_DEADLINE seconds (520:
# the device tool stops a command at 600); each step's own timeout is cut
# to what is left of it, and a step with no time left fails as not run.
set -u
deadline=${GPU_CHECK_DEADLINE:-520}
t_all=$(date +%s)
t_end=$((t_all + deadline))
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${GPU_DIR:-}" ]; then G=$(cd "$GPU_DIR" && pwd)
elif [ -d "$here/bin" ]; then G=$here
else G=$(cd "$here/../gpu" 2>/dev/null && pwd) || G=""; fi
if [ -z "$G" ] || [ ! -d "$G/bin" ]; then
	echo "gpu-check: no gpu/ folder: run make gpu-build first (here), then carry gpu/ to the GPU machine" >&2
	exit 2
fi
# gpu-build packs the binaries, Dawn and lavapipe with xz (gzip where it
# had no xz) to travel (the PTX that each test binary embeds compresses
# tenfold): unpack them once, with python3's lzma where this machine has no
# working xz, and make the binaries executable again (the carried copy may
# lose the bit).
find "$G" -name '*.gz' -type f -exec gunzip -f {} + 2>/dev/null
find "$G" -name '*.xz' -type f -print0 | while IFS= read -r -d '' f; do
	xz -d -f "$f" 2>/dev/null || python3 -c '
import lzma, shutil, sys
with lzma.open(sys.argv[1]) as src, open(sys.argv[1][:-3], "wb") as dst:
    shutil.copyfileobj(src, dst)' "$f" && rm -f "$f"
done
# The binaries travel as one archive (gpu-build.sh says why).
if [ -e "$G/bin/all.tar" ]; then
	tar -xf "$G/bin/all.tar" -C "$G/bin" 2>/dev/null || python3 -c '
import sys, tarfile
tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$G/bin/all.tar" "$G/bin"
	rm -f "$G/bin/all.tar"
fi
chmod +x "$G"/bin/* 2>/dev/null
logdir=${OUT:-$G/out}
mkdir -p "$logdir"
LOG=$logdir/gpu-check.log
SUM=$logdir/summary.txt
: >"$LOG"
: >"$SUM"
export LATHE_TEST_SUMMARY=$logdir/test-summary.tsv
: >"$LATHE_TEST_SUMMARY"

# left: seconds to the deadline.
left() { echo $((t_end - $(date +%s))); }

# note LINE: a line of the summary's header, written at once.
note() { echo "$*" | tee -a "$SUM" | tee -a "$LOG"; }

nfail=0
row() { # name status seconds why: one summary row, appended as it is known
	printf '| %-10s | %-6s | %5ss | %s\n' "$1" "$2" "$3" "$4" | tee -a "$SUM" | tee -a "$LOG"
	[ "$2" = fail ] && nfail=$((nfail + 1))
}

# step NAME FUNC SECONDS: runs FUNC with $limit set to SECONDS cut to
# what is left of the deadline (10 s kept for the last rows); FUNC sets
# status and why.
step() {
	local name=$1 fn=$2 want=$3 t0 room
	t0=$(date +%s)
	room=$(($(left) - 10))
	if [ "$room" -lt 15 ]; then
		row "$name" fail 0 "not run: ${room}s left of the ${deadline}s deadline"
		return
	fi
	limit=$((want < room ? want : room))
	status=fail why=""
	echo "== $name: start $(date -u +%T), limit ${limit}s" >>"$LOG"
	"$fn"
	[ "$limit" -lt "$want" ] && why="$why (limit cut to ${limit}s by the deadline)"
	row "$name" "$status" $(($(date +%s) - t0)) "$why"
}

# counts FILE: "N passed, N failed, N skipped" from a -test.v log (tests
# and subtests alike).
counts() {
	local p f s
	p=$(grep -c -- '--- PASS' "$1")
	f=$(grep -c -- '--- FAIL' "$1")
	s=$(grep -c -- '--- SKIP' "$1")
	echo "$p passed, $f failed, $s skipped"
}

# gotest NAME BINARY PKGDIR DEVICE ARGS...: a test binary in its package's
# folder under gpu/tree, with DEVICE required (LATHE_REQUIRE_DEVICES) and
# $limit as its timeout; the full log goes to $LOG, failures to stdout.
# It passes only if the binary exits 0 and some test passed on DEVICE
# (a test or subtest whose name holds it, or one named in $needpass).
gotest() {
	local name=$1 bin=$G/bin/$2 dir=$G/tree/$3 dev=$4 rc
	shift 4
	if [ ! -e "$bin" ]; then why="$bin is missing (make gpu-build)"; return; fi
	if [ ! -x "$bin" ]; then why="$bin is not executable"; return; fi
	local out=$logdir/$name.log
	(cd "$dir" && env LATHE_REQUIRE_DEVICES=cpu,$dev ${stepenv:-} timeout -k 5 "$limit" "$bin" -test.v -test.count=1 \
		-test.timeout "$((limit > 20 ? limit - 5 : limit))s" "$@") >"$out" 2>&1
	rc=$?
	grep -E -- '--- FAIL|^panic|^FAIL|is required here' "$out" | head -40
	{ echo "-- $name: $bin $*"; cat "$out"; } >>"$LOG"
	local ondev
	ondev=$(grep -cE -- "--- PASS: [^ ]*(${needpass:-$dev})( |/)" "$out")
	why="$(counts "$out"); $ondev passed on $dev"
	if [ $rc -eq 124 ] || [ $rc -eq 137 ] || grep -q '^panic: test timed out' "$out"; then status=fail why="timed out after ${limit}s; $why"
	elif grep -q 'is required here' "$out"; then
		status=fail why="$dev did not open: $(grep -m1 -o 'but: .*' "$out" | cut -c6-200); $why"
	elif [ $rc -ne 0 ]; then status=fail why="exit $rc; $why"
	elif [ "$ondev" -eq 0 ]; then status=fail why="no test passed on $dev; $why"
	else status=pass; fi
}

# --- the machine ---------------------------------------------------------
note "gpu-check of commit $(cat "$G/COMMIT" 2>/dev/null) on $(hostname), $(date -u), deadline ${deadline}s"
export PATH=$PATH:/usr/local/cuda/bin
if command -v nvidia-smi >/dev/null; then
	note "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1); $(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1)"
else
	note "GPU: nvidia-smi not found"
fi

# use_library VAR CANDIDATE...: unless the caller set VAR, export it as the
# first candidate that exists, and put its folder on LD_LIBRARY_PATH for
# the libraries beside it (cuBLAS's libcublasLt, cuDNN 9's engines,
# libcudnn_cnn.so.9 and the rest, which libcudnn.so.9 loads from there).
use_library() {
	local var=$1 f
	shift
	if [ -z "${!var:-}" ]; then
		for f in "$@"; do
			if [ -e "$f" ]; then export "$var=$f"; break; fi
		done
	fi
	if [ -n "${!var:-}" ]; then
		export LD_LIBRARY_PATH=$(dirname "${!var}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
}

# cuBLAS and cuDNN: the loader's, the toolkit's, else those that PyTorch's
# wheels carry (nvidia/cudnn/lib for cuDNN).
use_library LATHE_CUBLAS_LIB $(ldconfig -p 2>/dev/null | grep -o '/[^ ]*libcublas\.so\.1[123]$') \
	/usr/local/cuda/lib64/libcublas.so.1[321] \
	$(find /usr/local /opt /usr/lib -name 'libcublas.so.1[321]' 2>/dev/null | sort -r)
note "cuBLAS found: ${LATHE_CUBLAS_LIB:-none (matmul runs on the PTX kernel)}; whether it opened: the cuda:0 line below"
use_library LATHE_CUDNN_LIB $(ldconfig -p 2>/dev/null | grep -o '/[^ ]*libcudnn\.so\.[98]$') \
	/usr/local/cuda/lib64/libcudnn.so.[98] \
	$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0] + "/lib/libcudnn.so.9")' 2>/dev/null) \
	$(find /usr/local /opt /usr/lib -name 'libcudnn.so.[98]' 2>/dev/null | sort -r)
note "cuDNN found: ${LATHE_CUDNN_LIB:-none (convolution runs by im2col and matmul)}; whether it opened: the cuda:0 line below"

# wgpu: Dawn and lavapipe from gpu/cache (os.UserCacheDir reads
# XDG_CACHE_HOME); the Vulkan loader from gpu/gl where the machine has none.
# lavapipe's manifest names its library by an absolute path: rewritten to
# where it was carried. The backend prefers the machine's own Vulkan driver
# (NVIDIA's, where its manifest is installed) to lavapipe, and never takes
# Dawn's Null backend.
if [ -d "$G/cache/lathe" ]; then
	export XDG_CACHE_HOME=$G/cache
	icd=$G/cache/lathe/mesa/lvp_icd.json
	[ -e "$icd" ] && sed -i "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$G/cache/lathe/mesa/lib/libvulkan_lvp.so\"|" "$icd"
fi
if ! ldconfig -p 2>/dev/null | grep -q libvulkan && ls "$G"/gl/*.deb >/dev/null 2>&1; then
	for f in "$G"/gl/*.deb; do dpkg -x "$f" / 2>>"$LOG"; done
	ldconfig
	[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] &&
		export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
note "Vulkan loader: $(ldconfig -p 2>/dev/null | grep -m1 -o 'libvulkan.so.1' | head -1 || echo none); Dawn: $([ -d "$G/cache/lathe/dawn" ] && echo carried || echo 'not carried'); lavapipe: $([ -e "$G/cache/lathe/mesa/lvp_icd.json" ] && echo carried || echo 'not carried'); NVIDIA Vulkan manifest: $(ls /usr/share/vulkan/icd.d/nvidia*.json /etc/vulkan/icd.d/nvidia*.json /usr/local/nvidia/share/vulkan/icd.d/nvidia*.json 2>/dev/null | head -1 || true)"
echo | tee -a "$SUM"
printf '| %-10s | %-6s | %6s | %s\n' step result time detail | tee -a "$SUM"
printf '|%s|%s|%s|%s\n' ------------ -------- -------- -------- | tee -a "$SUM"

# describe DEV STEP: the line a test logged about DEV (Describe: the GPU,
# driver, cuBLAS; for wgpu:0 the adapter and its Vulkan driver).
describe() {
	local line
	line=$(grep -m1 -E "^ +[a-z_]+_test.go:[0-9]+: $1: " "$logdir/$2.log" 2>/dev/null | sed -E 's/^ +[a-z_]+_test.go:[0-9]+: //' | cut -c1-400)
	[ -n "$line" ] && note "   $line"
}

# --- the steps -----------------------------------------------------------
do_ptxas() {
	local out
	out=$("$G/ptxas-archs.sh" "$G/tree/kernels/ptx" "$limit" 2>&1)
	case $? in
	0) status=pass ;;
	2) status=fail ;; # this machine has a toolkit: no ptxas is a failure here
	esac
	echo "$out" >>"$LOG"
	echo "$out" | head -20
	why=$(echo "$out" | tail -1 | sed 's/^ptxas-archs: [a-zA-Z]*: //')
}

do_unit() {
	needpass=TestRealDevice gotest cuda-unit backends_cuda.test backends/cuda cuda:0 -test.short
	if [ "$status" = pass ] && ! grep -q -- '--- PASS: TestRealDevice ' "$logdir/cuda-unit.log"; then
		status=fail why="TestRealDevice did not pass; $why"
	fi
}
do_conf_cuda() { gotest conf-cuda internal_conformance.test internal/conformance cuda:0 -test.run '^TestConformance$/^cuda:0$'; }
do_grad_cuda() { gotest grad-cuda internal_conformance.test internal/conformance cuda:0 -test.run '^TestGrad$/^cuda:0$'; }
do_conf_wgpu() {
	gotest conf-wgpu internal_conformance.test internal/conformance wgpu:0 -test.run '^(TestConformance|TestGrad)$/^wgpu:0$'
	local d
	d=$(grep -m1 -E 'wgpu:0: ' "$logdir/conf-wgpu.log" 2>/dev/null | sed -E 's/^ +[a-z_]+_test.go:[0-9]+: //')
	case $d in
	*NVIDIA* | *nvidia*) why="on NVIDIA's Vulkan driver; $why" ;;
	*lavapipe* | *llvmpipe*) why="on lavapipe (CPU), not the GPU; $why" ;;
	*Null* | *null*) status=fail why="on Dawn's Null backend; $why" ;;
	"") ;;
	*) why="on an adapter neither NVIDIA nor lavapipe; $why" ;;
	esac
}
# The WGSL matmul's rate on wgpu:0's driver.
do_wgpu_matmul() {
	local out=$logdir/wgpu-mm.log bin=$G/bin/backends_wgpu.test
	[ -e "$bin" ] || { why="$bin is missing (make gpu-build)"; return; }
	[ -x "$bin" ] || { why="$bin is not executable"; return; }
	(cd "$G/tree/backends/wgpu" && LATHE_REQUIRE_DEVICES=cpu,wgpu:0 timeout -k 5 "$limit" "$bin" -test.run '^$' -test.bench 'MatmulWGPU' -test.benchtime 20x -test.v) >"$out" 2>&1
	local rc=$?
	cat "$out" >>"$LOG"
	grep -E 'Benchmark|SKIP|FAIL|required' "$out" | head -10
	if grep -q 'GFLOP/s' "$out" && [ $rc -eq 0 ]; then
		status=pass why="$(grep -E '^Benchmark.*GFLOP/s' "$out" | awk '{print $1": "$(NF-1)" GFLOP/s"}' | sed 's/BenchmarkMatmulWGPU//' | paste -sd' ')"
	else
		why="exit $rc, no GFLOP/s line: $(grep -m1 -E 'required here|unavailable|FAIL' "$out" | cut -c1-200)"
	fi
}
# NCCL's collectives on cuda:0 (dist's TestNCCLOneRank: one GPU holds one
# NCCL rank): libnccl.so.2 from the system, else PyTorch's wheel.
do_nccl() {
	if [ -z "${LATHE_NCCL_LIB:-}" ]; then
		local f
		for f in $(ldconfig -p 2>/dev/null | grep -o '/[^ ]*libnccl\.so\.2$') \
			$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | sort); do
			if [ -e "$f" ]; then export LATHE_NCCL_LIB=$f; break; fi
		done
	fi
	needpass=TestNCCLOneRank stepenv="LATHE_REQUIRE_DEVICES=cpu,cuda:0,nccl" gotest nccl dist.test dist cuda:0 -test.run '^TestNCCLOneRank$'
	why="${LATHE_NCCL_LIB:-no libnccl.so.2 found}; $why"
}
do_root() { stepenv="LATHE_DEVICE=cuda:0" gotest root lathe.test . cuda:0; }
do_nn() { stepenv="LATHE_DEVICE=cuda:0" gotest nn nn.test nn cuda:0; }
# The examples trained on cuda:0 against the cpu, in float32 and under
# autocast in bfloat16 and float16 (their TestTrain*Devices).
do_mlp() { gotest examples-mlp examples_mlp.test examples/mlp cuda:0 -test.run 'Devices$/^cuda:0$'; }
do_cnn() { gotest examples-cnn examples_cnn.test examples/cnn cuda:0 -test.run 'Devices$/^cuda:0$'; }

do_memcheck() {
	local cs rc out=$logdir/memcheck.log bin=$G/bin/internal_conformance.test
	cs=$(command -v compute-sanitizer) || { why="no compute-sanitizer on PATH or in /usr/local/cuda/bin"; return; }
	[ -x "$bin" ] || { why="$bin is missing or not executable"; return; }
	# The caching allocator off: each tensor its own allocation, so an
	# access past its end is outside any; TestMain's lathe.Close releases
	# the context, where the leak check reports. API errors are not
	# reported: the backend asks cuFuncGetParamInfo for one parameter past
	# a kernel's last, whose CUDA_ERROR_INVALID_VALUE is how the driver
	# says where the list ends (the first H200 run counted 49 of those as
	# its only "errors"); an API error the backend does not expect is a Go
	# error and fails the tests anyway.
	local api=()
	"$cs" --help 2>&1 | grep -q -- '--report-api-errors' && api=(--report-api-errors no)
	(cd "$G/tree/internal/conformance" && LATHE_CUDA_NO_CACHING=1 LATHE_REQUIRE_DEVICES=cpu,cuda:0 \
		timeout -k 5 "$limit" "$cs" --tool memcheck --leak-check full --error-exitcode 86 "${api[@]}" \
		"$bin" -test.count=1 -test.v \
		-test.run '^TestConformance$/^cuda:0$/^(matmul|sum|softmax|add|index_select|gather)') >"$out" 2>&1
	rc=$?
	grep -E 'ERROR SUMMARY|LEAK SUMMARY|Invalid|--- FAIL|Device not supported|required here' "$out" | head -20
	{ echo "-- memcheck"; cat "$out"; } >>"$LOG"
	local ondev
	ondev=$(grep -cE -- '--- PASS: [^ ]*cuda:0' "$out")
	why="$(grep -m1 'ERROR SUMMARY' "$out" | sed 's/^=* *//'); $(counts "$out"); $ondev passed on cuda:0"
	case $rc in
	0) if [ "$ondev" -gt 0 ]; then status=pass; else why="no test passed on cuda:0; $why"; fi ;;
	86) why="memcheck found errors: $why" ;;
	124 | 137) why="timed out after ${limit}s; $why" ;;
	*) why="exit $rc; $why" ;;
	esac
	grep -q 'is required here' "$out" && why="cuda:0 did not open under compute-sanitizer; $why"
	# Under gVisor compute-sanitizer refuses the GPU (device/KINDS.md).
	grep -q 'Device not supported' "$out" && why="compute-sanitizer: Device not supported (a sandbox that hides the GPU from it); $why"
}

do_bench() {
	local py="" bin=$G/bin/lathe-bench args=(--devices cuda:0 --json "$logdir/bench.json")
	[ -e "$bin" ] || { why="$bin is missing (make gpu-build)"; return; }
	[ -x "$bin" ] || { why="$bin is not executable"; return; }
	for p in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null && timeout 30 "$p" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
			py=$(command -v "$p"); break
		fi
	done
	[ -n "$py" ] && args+=(--vs-torch --python "$py" --torch-script "$G/tree/build/bench_torch.py")
	(cd "$G/tree" && timeout -k 5 "$limit" "$bin" "${args[@]}") >"$logdir/bench.txt" 2>&1
	local rc=$?
	tail -40 "$logdir/bench.txt"
	cat "$logdir/bench.txt" >>"$LOG"
	if grep -q 'cuda:0 skipped' "$logdir/bench.txt"; then
		why="cuda:0 did not open: $(grep -m1 'cuda:0 skipped' "$logdir/bench.txt" | cut -c1-200)"
	elif [ "$rc" -eq 0 ]; then status=pass why="every row${py:+, vs torch ($py)}; table in bench.txt"
	else why="exit $rc"; fi
}

# Each step's own budget, cut to the deadline: 60+60+110+80+45+45+45+60+120+90+40
# = 755 s asked of 520, so the last steps are cut first when the early
# ones run long (the device tool's 600 s would otherwise kill the run).
# The cuda steps come first: they are what the GPU machine is for. The
# first H200 run (2026-12-04) took 101 s in all, with the quick benchmark;
# the whole benchmark took 35 s more.
#
# On a machine with no NVIDIA GPU (no /dev/nvidia0 and no nvidia-smi: a
# dry run of the check here), the cuda steps are reported as skipped, by
# name, with that reason, instead of failing for a device that cannot be
# there; the steps that need no GPU run as on the GPU machine.
# GPU_CHECK_DRY=0 or 1 overrides the guess (the self-test sets 0).
dry=${GPU_CHECK_DRY:-}
if [ -z "$dry" ]; then
	dry=1
	{ [ -e /dev/nvidia0 ] || command -v nvidia-smi >/dev/null; } && dry=0
fi
gpustep() {
	if [ "$dry" = 1 ]; then
		row "$1" skip 0 "no NVIDIA GPU on this machine (no /dev/nvidia0, no nvidia-smi): a dry run; nothing ran on cuda:0"
		return
	fi
	step "$@"
}
step ptxas do_ptxas 60
gpustep cuda-unit do_unit 60
[ "$dry" = 1 ] || describe cuda:0 cuda-unit
gpustep conf-cuda do_conf_cuda 110
gpustep grad-cuda do_grad_cuda 80
gpustep nccl do_nccl 45
gpustep root do_root 45
gpustep nn do_nn 45
gpustep mlp do_mlp 45
gpustep cnn do_cnn 45
gpustep memcheck do_memcheck 60
gpustep bench do_bench 120
step conf-wgpu do_conf_wgpu 90
describe wgpu:0 conf-wgpu
step wgpu-mm do_wgpu_matmul 40

{
	echo
	echo "gpu-check: $nfail step(s) failed, $(($(date +%s) - t_all))s of the ${deadline}s deadline (commit $(cat "$G/COMMIT" 2>/dev/null))"
	echo "(PTX freshness against the CUDA C sources is checked by make test, where NVRTC and Go are; this machine has no Go.)"
} | tee -a "$SUM" | tee -a "$LOG"
echo
echo "== summary ($SUM)"
cat "$SUM"
[ "$nfail" -eq 0 ]
