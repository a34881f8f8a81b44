#!/usr/bin/env bash
# Installs the wgpu backend's device libraries into lathe's folder in the
# user cache dir, idempotently (quick when both are there):
#
#   dawn/libwebgpu_wrapper.so   Dawn's webgpu.h C API, from the npm package
#                               bun-webgpu-linux-x64 (prebuilt; needs glibc 2.27)
#   mesa/                       Mesa 25's lavapipe (Vulkan on the CPU) from
#                               bookworm-backports, with the libdrm it needs:
#                               Debian 12's own Mesa 22.3 is refused by Dawn
#                               (shaderUniform*ArrayDynamicIndexing required)
#
# Nothing under /etc is touched: apt runs with a private sources list and
# state folder, and the packages are unpacked with dpkg -x, not installed.
# The backend finds both at run time (backends/wgpu/library.go).
set -euo pipefail

cache="${XDG_CACHE_HOME:-$HOME/.cache}/lathe"
dawn_version=0.1.7
dawn="$cache/dawn"
mesa="$cache/mesa"

if [ ! -e "$dawn/libwebgpu_wrapper.so" ] || [ "$(cat "$dawn/VERSION" 2>/dev/null)" != "$dawn_version" ]; then
	if ! command -v npm >/dev/null; then
		echo "deps: npm is needed to fetch Dawn (bun-webgpu-linux-x64); install Node.js" >&2
		exit 1
	fi
	echo "deps: fetching Dawn (npm bun-webgpu-linux-x64@$dawn_version) into $dawn"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/lathe-dawn.XXXXXX")
	(cd "$tmp" && npm pack --silent "bun-webgpu-linux-x64@$dawn_version" >/dev/null && tar xzf ./*.tgz)
	mkdir -p "$dawn"
	# Each file lands by rename, so an interrupted run leaves nothing
	# half-written that the next one would take as installed.
	cp "$tmp/package/libwebgpu_wrapper.so" "$dawn/libwebgpu_wrapper.so.tmp"
	cp "$tmp/package/LICENSE" "$dawn/LICENSE"
	mv "$dawn/libwebgpu_wrapper.so.tmp" "$dawn/libwebgpu_wrapper.so"
	echo "$dawn_version" >"$dawn/VERSION"
	rm -rf "$tmp"
fi

if [ ! -e "$mesa/lvp_icd.json" ]; then
	echo "deps: fetching Mesa 25 lavapipe (bookworm-backports) into $mesa"
	apt_dir=$(mktemp -d "${TMPDIR:-/tmp}/lathe-mesa-apt.XXXXXX")
	trap 'rm -rf "$apt_dir"' EXIT
	mkdir -p "$apt_dir"/{parts,state/lists/partial,cache/archives/partial,debs,root}
	: >"$apt_dir/state/status"
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $codename-backports main" >"$apt_dir/sources.list"
	apt_opts=(-qq -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/parts"
		-o "Dir::State=$apt_dir/state" -o "Dir::State::status=$apt_dir/state/status"
		-o "Dir::Cache=$apt_dir/cache" -o "APT::Sandbox::User=$(id -un)")
	apt-get "${apt_opts[@]}" update
	(cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download \
		"mesa-vulkan-drivers/$codename-backports" "libdrm2/$codename-backports" "libdrm-amdgpu1/$codename-backports")
	for deb in "$apt_dir"/debs/*.deb; do dpkg -x "$deb" "$apt_dir/root"; done
	mkdir -p "$mesa/lib"
	lib=$(dirname "$(find "$apt_dir/root" -name libvulkan_lvp.so | head -n1)")
	cp -L "$lib/libvulkan_lvp.so" "$mesa/lib/"
	# lavapipe links libdrm >= 2.4.121; the backend loads these copies by
	# path before the Vulkan loader opens lavapipe, so the system's older
	# libdrm is never picked.
	for so in libdrm.so.2 libdrm_amdgpu.so.1; do
		cp -L "$(find "$apt_dir/root" -name "$so" | head -n1)" "$mesa/lib/$so"
	done
	# The ICD manifest names the driver by an absolute path, so the Vulkan
	# loader needs no library path. Written last: its presence means done.
	sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$mesa/lib/libvulkan_lvp.so\"|" \
		"$(find "$apt_dir/root" -name 'lvp_icd*.json' | head -n1)" >"$mesa/lvp_icd.json.tmp"
	mv "$mesa/lvp_icd.json.tmp" "$mesa/lvp_icd.json"
	rm -rf "$apt_dir"
	trap - EXIT
fi
