#!/usr/bin/env bash
# A self-test of gpu-check.sh's logic, with stand-ins for everything it
# runs (make gpu-check-selftest; about 40 s, no GPU, no Go): a test binary
# that passes on cuda:0, one whose device does not open, one that hangs,
# one that is missing, one packed with xz on a machine whose xz fails (the
# python3 fallback), one in gpu-build's solid archive, and a ptxas that refuses sm_70 and sm_72 as CUDA
# 13's does. It checks the rows of summary.txt: present while the run is
# still going (the hang), the hang cut by the deadline, the steps after it
# failed as not run, a missing binary and an unopened device failed.
set -u
cd "$(dirname "$0")/.."
t=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-selftest.XXXXXX")
trap 'rm -rf "$t"' EXIT
G=$t/gpu
mkdir -p "$G/bin" "$G/tree/kernels/ptx" "$G/tree/internal/conformance" "$G/tree/backends/cuda" "$G/tree/backends/wgpu" "$G/tree/dist" "$t/path" "$t/out"
cp build/gpu-check.sh build/ptxas-archs.sh "$G/"
printf '.version 7.8\n.target sm_70\n.address_size 64\n' >"$G/tree/kernels/ptx/a.ptx"
cat >"$t/path/ptxas" <<'X'
#!/bin/sh
case "$1" in --version) echo "Cuda compilation tools, release 13.0"; exit 0 ;; -arch=sm_70|-arch=sm_72) echo "ptxas fatal   : Value '${1#-arch=}' is not defined for option 'gpu-name'" >&2; exit 1 ;; esac
exit 0
X
cat >"$G/bin/backends_cuda.test" <<'X'
#!/bin/sh
echo "=== RUN   TestRealDevice"
echo "    real_test.go:23: cuda:0: Stand-in H200, compute capability 9.0, CUDA driver 13.0, matmul by cuBLAS 13.1.0"
echo "--- PASS: TestRealDevice (0.01s)"
echo PASS
X
cat >"$G/bin/internal_conformance.test" <<'X'
#!/bin/sh
case "$*" in
*wgpu:0*) echo "    harness_test.go:88: wgpu:0: llvmpipe (lavapipe from /x/mesa)"; echo "--- PASS: TestConformance/wgpu:0/add (0.00s)"; echo PASS; exit 0 ;;
esac
echo "    harness_test.go:86: cuda:0 is required here (LATHE_REQUIRE_DEVICES=$LATHE_REQUIRE_DEVICES) but: cuda is unavailable: no libcuda.so.1"
echo "--- FAIL: TestConformance/cuda:0 (0.00s)"
echo FAIL
exit 1
X
printf '#!/bin/sh\nexec sleep 1000\n' >"$G/bin/lathe.test"
# dist.test travels in the solid archive that gpu-build makes (all.tar.xz).
printf '#!/bin/sh\necho "--- PASS: TestNCCLOneRank (0.01s)"\necho PASS\n' >"$t/dist.test"
chmod +x "$t/dist.test"
tar -C "$t" -cf "$G/bin/all.tar" dist.test && xz -9 "$G/bin/all.tar" && rm "$t/dist.test"
printf '#!/bin/sh\necho "BenchmarkMatmulWGPU/256 20 1 ns/op 12.5 GFLOP/s"\n' | gzip >"$G/bin/backends_wgpu.test.gz"
# The cuda test binary travels as .xz, and this machine's xz is broken (a
# stand-in that fails): gpu-check must fall back to python3's lzma.
python3 -c 'import lzma, sys; d = open(sys.argv[1], "rb").read(); open(sys.argv[1] + ".xz", "wb").write(lzma.compress(d))' "$G/bin/backends_cuda.test"
rm "$G/bin/backends_cuda.test"
printf '#!/bin/sh\nexit 1\n' >"$t/path/xz"
chmod +x "$G"/bin/*.test "$t/path/ptxas" "$t/path/xz"
# nn.test and lathe-bench are missing.

PATH=$t/path:$PATH OUT=$t/out GPU_DIR=$G GPU_CHECK_DEADLINE=45 GPU_CHECK_DRY=0 bash "$G/gpu-check.sh" >"$t/stdout" 2>&1 &
pid=$!
sleep 12
during=$(cat "$t/out/summary.txt")
wait $pid
rc=$?
sum=$(cat "$t/out/summary.txt")
fails=0
expect() { # what pattern [text]
	if ! echo "${3:-$sum}" | grep -qE -- "$2"; then
		echo "gpu-check-selftest: FAIL: $1: no line matches /$2/"
		fails=$((fails + 1))
	fi
}
expect "a row written while the run goes on" '^\| cuda-unit +\| pass' "$during"
expect "an .xz binary unpacked without xz runs" '^\| cuda-unit +\| pass'
expect "ptxas reports the toolkit's refusal" '^\| ptxas +\| pass .*refuses sm_70.*sm_72.*the toolkit'
expect "the cuda:0 Describe line" 'cuda:0: Stand-in H200'
expect "a binary from the archive runs" '^\| nccl +\| pass'
expect "an unopened device fails" '^\| conf-cuda +\| fail .*cuda:0 did not open'
expect "the hang is cut by the deadline" '^\| root +\| fail .*timed out.*cut to [0-9]+s by the deadline'
expect "no time left: not run" '^\| nn +\| fail .*not run'
expect "the last line" 'step\(s\) failed'
[ $rc -ne 0 ] || { echo "gpu-check-selftest: FAIL: gpu-check exited 0 with failed steps"; fails=$((fails + 1)); }
# A missing binary with time left, and the wgpu steps, which come after
# the cuda ones: no hang this time (the first run's root test is gone).
rm -f "$t/out/summary.txt" "$G/bin/lathe.test"
PATH=$t/path:$PATH OUT=$t/out GPU_DIR=$G GPU_CHECK_DEADLINE=45 GPU_CHECK_DRY=0 timeout 30 bash "$G/gpu-check.sh" >/dev/null 2>&1
second=$(cat "$t/out/summary.txt")
expect "a missing binary fails" '^\| root +\| fail .*lathe.test is missing' "$second"
expect "wgpu:0 says its driver" '^\| conf-wgpu +\| pass .*on lavapipe' "$second"
expect "a gunzipped binary runs" '^\| wgpu-mm +\| pass .*GFLOP/s' "$second"
if [ $fails -ne 0 ]; then
	echo "--- summary.txt:"; echo "$sum"; echo "--- stdout:"; cat "$t/stdout"
	exit 1
fi
echo "gpu-check-selftest: ok"
