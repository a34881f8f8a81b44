#!/usr/bin/env bash
# Installs what lathe's tests and benchmark need, and nothing twice: Go
# modules, and the Debian packages listed below. Quick when all is there.
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

# Debian packages: a C compiler for cgo and the race detector; OpenBLAS,
# which the cpu backend opens at run time for GEMM (gonum otherwise); PyTorch and
# numpy from Debian for the reference script (build/torchref) and for
# lathe-bench --vs-torch, under /usr/bin/python3; the Vulkan loader and the
# libraries that Mesa's lavapipe links (build/deps-wgpu.sh fetches lavapipe
# itself, which Debian 12 ships too old for Dawn).
packages=(gcc libc6-dev libopenblas0 python3-torch python3-numpy
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

# The wgpu backend's device libraries go to lathe's folder in the user cache
# dir (os.UserCacheDir()/lathe), where the backend looks for them at run
# time: so any program that imports lathe finds them, not only `make test`.
build/deps-wgpu.sh

go mod download
echo "deps: ok (go $have_go; ${packages[*]}; Dawn and lavapipe in ${XDG_CACHE_HOME:-$HOME/.cache}/lathe)"
