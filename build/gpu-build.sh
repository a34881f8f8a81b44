#!/usr/bin/env bash
# Builds, here, everything that `make gpu-check` runs on a lent GPU machine
# (which has CUDA, PyTorch and no Go): into gpu/ (git-ignored), which the
# device tool carries (`carry: ["gpu"]`), well under its 64 MiB.
#
#   gpu/bin/all.tar.xz  one solid archive of the go test -c binaries (the
#                       conformance suite, the root package, nn, backends/cuda,
#                       dist (NCCL), the mlp and cnn examples, trained on cuda:0
#                       in float32 and under autocast, and backends/wgpu) and
#                       lathe-bench, the benchmark
#   gpu/tree/           the files those read at run time, at their repository
#                       paths (every testdata/ folder, build/bench_torch.py);
#                       each test binary runs in gpu/tree/<its package>
#   gpu/tree/kernels/   the CUDA C sources and the committed PTX (ptxas there;
#                       backends/cuda's emulation test builds the host
#                       emulation from them where there is g++, with simt.h
#                       from its binary, internal/cudaemu)
#   gpu/cache/lathe/dawn Dawn, and gpu/cache/lathe/mesa lavapipe, where the
#                       wgpu backend is built and make deps installed them
#                       (xz); gpu/gl/ the Vulkan loader packages, where
#                       .gl/ holds them (the device tool's README says how)
#   gpu/gpu-check.sh    the script that runs it all, with ptxas-archs.sh;
#                       gpu/MANIFEST what was built
#
# The binaries link only glibc (cgo) and open libcuda, cuBLAS and the rest
# with dlopen, so they run on the GPU machine as built here (x86-64).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export CGO_ENABLED=1
# What travels is 64 MiB with the working tree (tracked files); keep 2 MiB spare.
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
limit=$(((62 << 20) - tree))

if [ "$(uname -m)" != x86_64 ]; then
	echo "gpu-build: this machine is $(uname -m); the GPU machine is x86-64, so build there or cross-compile" >&2
	exit 1
fi

rm -rf gpu
mkdir -p gpu/bin gpu/tree/kernels/ptx gpu/tree/kernels/cuda
flags=(-trimpath -ldflags=-s\ -w)

# Test binaries: name = package path with / as _ (. is the root package).
pkgs=(./internal/conformance . ./nn ./backends/cuda ./dist ./examples/mlp ./examples/cnn)
if ls backends/wgpu/*_test.go >/dev/null 2>&1; then
	pkgs+=(./backends/wgpu)
fi
: >gpu/MANIFEST
for p in "${pkgs[@]}"; do
	name=$(echo "${p#./}" | tr / _)
	[ "$p" = . ] && name=lathe
	echo "gpu-build: go test -c $p -> gpu/bin/$name.test"
	"$GO" test -c "${flags[@]}" -o "gpu/bin/$name.test" "$p"
	echo "test $name ${p#./}" >>gpu/MANIFEST
done
echo "gpu-build: go build ./cmd/lathe-bench -> gpu/bin/lathe-bench"
"$GO" build "${flags[@]}" -o gpu/bin/lathe-bench ./cmd/lathe-bench

# What the tests and the benchmark read, at the paths they read it from.
git ls-files -z -- 'testdata/**' '*/testdata/**' build/bench_torch.py build/torchref/gpt.py |
	while IFS= read -r -d '' f; do
		mkdir -p "gpu/tree/$(dirname "$f")"
		cp "$f" "gpu/tree/$f"
	done
for p in "${pkgs[@]}"; do mkdir -p "gpu/tree/${p#./}"; done

# The committed PTX (kernels/ptx, made by `make kernels`).
if ls kernels/ptx/*.ptx >/dev/null 2>&1; then
	cp kernels/ptx/*.ptx gpu/tree/kernels/ptx/
	cp kernels/cuda/* gpu/tree/kernels/cuda/
fi
# wgpu's libraries, where that backend is more than its stub: Dawn, and
# Mesa's lavapipe, so that wgpu:0 runs there on the GPU's own Vulkan driver
# or, where the machine has none, on lavapipe (never on Dawn's Null
# backend, which the backend refuses).
if [ "$(ls backends/wgpu/*.go | wc -l)" -gt 1 ]; then
	for lib in dawn mesa; do
		src=${XDG_CACHE_HOME:-$HOME/.cache}/lathe/$lib
		if [ -d "$src" ]; then
			mkdir -p gpu/cache/lathe
			cp -r "$src" gpu/cache/lathe/
		else
			echo "gpu-build: no $lib in $src (make deps installs it): wgpu:0 may fail there"
		fi
	done
fi
# The Vulkan loader and GL dispatch packages the GPU machine lacks (the
# device tool's README): fetched once into .gl/ (git-ignored) with a
# private apt state, then carried.
if ! ls .gl/*.deb >/dev/null 2>&1 && command -v apt-get >/dev/null; then
	mkdir -p .gl /tmp/lathe-gl-apt/partial
	o=(-qq -oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/lathe-gl-apt)
	apt-get "${o[@]}" update && (cd .gl && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2) ||
		echo "gpu-build: could not fetch the Vulkan loader packages: wgpu:0 may be skipped there"
fi
if ls .gl/*.deb >/dev/null 2>&1; then
	mkdir -p gpu/gl
	cp .gl/*.deb gpu/gl/
fi
# What travels is limited: compress the binaries (each embeds the 4 MB of
# PTX, text that compresses tenfold), Dawn and lavapipe with xz, a third
# smaller than gzip -9 here (the root package's test binary: 4.1 MB
# against 5.9), where xz is installed; gpu-check.sh unpacks every .xz and
# .gz under gpu/ (with python3's lzma where the GPU machine has no xz) and
# makes the binaries executable again.
pack() {
	if command -v xz >/dev/null; then xz -9 -T0 "$@"; else gzip -9 "$@"; fi
}
# The binaries share most of their bytes (the Go runtime, lathe, the PTX
# that each embeds), so they travel as one solid archive whose dictionary
# spans them all: 14 MB, where nine .xz files were 37 (more than the
# device tool carries beside the working tree). gpu-check.sh unpacks it.
(cd gpu/bin && tar -cf all.tar --remove-files -- *)
if command -v xz >/dev/null; then
	xz -9 -T1 --lzma2=preset=9,dict=256MiB gpu/bin/all.tar
else
	gzip -9 gpu/bin/all.tar
fi
find gpu/cache -name '*.so*' -type f -print0 2>/dev/null | while IFS= read -r -d '' f; do pack "$f"; done
# The tree's large files too (the conformance JSON and the PTX): gzip,
# which they need no more than.
find gpu/tree -type f -size +4k -exec gzip -9 {} +
cp build/gpu-check.sh build/ptxas-archs.sh gpu/
git rev-parse HEAD >gpu/COMMIT 2>/dev/null || true

size=$(du -sb gpu | cut -f1)
du -sh gpu/bin gpu/cache gpu/gl gpu/tree 2>/dev/null | sed 's/^/gpu-build:   /'
echo "gpu-build: gpu/ holds $((size >> 20)) MiB ($(ls gpu/tree/kernels/ptx | wc -l) PTX files, commit $(cat gpu/COMMIT 2>/dev/null))"
if [ "$size" -gt "$limit" ]; then
	echo "gpu-build: gpu/ is over $((limit >> 20)) MiB: too big to travel with the $((tree >> 20)) MiB working tree" >&2
	du -sh gpu/* gpu/bin/* >&2
	exit 1
fi
