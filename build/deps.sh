#!/usr/bin/env bash
# Installs what lathe's tests and benchmark need, and nothing twice: Go
# modules, the Debian packages listed below, and the CUDA kernel toolchain
# (into .deps/, git-ignored). Quick when all is there.
# Run as root on Debian (CI and the development machines are).
set -euo pipefail
cd "$(dirname "$0")/.."

need_go=$(sed -n 's/^go \([0-9.]*\).*/\1/p' go.mod)
if ! command -v go >/dev/null; then
	echo "deps: no go toolchain on PATH; lathe needs Go $need_go (Debian's golang is older: install from go.dev)" >&2
	exit 1
fi
have_go=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -n1)" != "$need_go" ]; then
	echo "deps: go $have_go is older than the go $need_go that go.mod asks for" >&2
	exit 1
fi

# Debian packages: a C compiler for cgo and the race detector, and a C++20
# one that runs the CUDA kernels on the host in the tests
# (internal/cudaemu); OpenBLAS,
# which the cpu backend opens at run time for GEMM (gonum otherwise); PyTorch and
# numpy from Debian for the reference script (build/torchref) and for
# lathe-bench --vs-torch, under /usr/bin/python3; the Vulkan loader and the
# libraries that Mesa's lavapipe links (build/deps-wgpu.sh fetches lavapipe
# itself, which Debian 12 ships too old for Dawn); Open MPI 4.1, whose
# libmpi.so.40 package dist opens at run time for cpu collectives and whose
# mpirun starts the MPI tests' ranks.
packages=(gcc g++ libc6-dev libopenblas0 python3-torch python3-numpy libopenmpi3 openmpi-bin
	libvulkan1 libllvm15 libelf1 libexpat1 libwayland-client0 libx11-xcb1 libxcb-dri3-0 libxcb-present0
	libxcb-randr0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb1 libxshmfence1 libzstd1 zlib1g)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	if [ "$(id -u)" != 0 ]; then
		echo "deps: installing Debian packages needs root" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The CUDA kernel toolchain, for `make kernels` and the kernels check in
# `make test`: NVRTC 11.8 (CUDA C to PTX, opened with dlopen by build/nvrtc)
# and ptxas 11.8 (assembles the PTX for sm_70/80/90). No machine here has a
# GPU or a CUDA install, so both come from Debian's non-free component,
# fetched with apt-get download through a private sources list and state
# (the system's apt configuration is not touched) and unpacked with dpkg -x.
# Only the three files needed are kept under .deps/cuda: the
# nvidia-cuda-toolkit .deb unpacks to 226 MB, and installing it would pull
# 5.5 GB.
cuda_dir=.deps/cuda
cuda_files=("$cuda_dir/bin/ptxas" "$cuda_dir/lib/libnvrtc.so.11.2" "$cuda_dir/lib/libnvrtc-builtins.so.11.8")
cuda_ok=1
for f in "${cuda_files[@]}"; do [ -e "$f" ] || cuda_ok=0; done
if [ "$cuda_ok" = 0 ]; then
	echo "deps: fetching NVRTC and ptxas 11.8 from Debian non-free into $cuda_dir"
	apt_dir=$(mktemp -d "${TMPDIR:-/tmp}/lathe-cuda-apt.XXXXXX")
	trap 'rm -rf "$apt_dir"' EXIT
	mkdir -p "$apt_dir"/{parts,state/lists/partial,cache/archives/partial,debs,root}
	: >"$apt_dir/state/status"
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $codename non-free" >"$apt_dir/sources.list"
	apt_opts=(-qq -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/parts"
		-o "Dir::State=$apt_dir/state" -o "Dir::State::status=$apt_dir/state/status"
		-o "Dir::Cache=$apt_dir/cache" -o "APT::Sandbox::User=$(id -un)")
	apt-get "${apt_opts[@]}" update
	(cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download libnvrtc11.2 libnvrtc-builtins11.8 nvidia-cuda-toolkit)
	for deb in "$apt_dir"/debs/*.deb; do dpkg -x "$deb" "$apt_dir/root"; done
	mkdir -p "$cuda_dir/bin" "$cuda_dir/lib"
	# cp -L: the packages' sonames are links to the versioned files. Each
	# file lands by rename, so an interrupted run leaves none half-written
	# for the next one to take as installed.
	for pair in usr/bin/ptxas:bin/ptxas \
		usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2:lib/libnvrtc.so.11.2 \
		usr/lib/x86_64-linux-gnu/libnvrtc-builtins.so.11.8:lib/libnvrtc-builtins.so.11.8; do
		cp -L "$apt_dir/root/${pair%%:*}" "$cuda_dir/${pair#*:}.tmp"
		mv "$cuda_dir/${pair#*:}.tmp" "$cuda_dir/${pair#*:}"
	done
	rm -rf "$apt_dir"
	trap - EXIT
fi

# The wgpu backend's device libraries go to lathe's folder in the user cache
# dir (os.UserCacheDir()/lathe), where the backend looks for them at run
# time: so any program that imports lathe finds them, not only `make test`.
build/deps-wgpu.sh

go mod download
echo "deps: ok (go $have_go; ${packages[*]}; NVRTC and ptxas 11.8 in $cuda_dir; Dawn and lavapipe in ${XDG_CACHE_HOME:-$HOME/.cache}/lathe)"
