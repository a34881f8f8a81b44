package wgpu

import (
	"os"
	"path/filepath"
	"strings"
)

// Finding the libraries is lathe's job, not the user's (DESIGN.md): `make
// deps` puts Dawn and Mesa's lavapipe in lathe's folder of the user cache
// dir, and any program that imports lathe looks there.

// libraryName is the file that the npm package bun-webgpu-linux-x64 ships:
// Dawn's webgpu.h C API, built whole into one shared library.
const libraryName = "libwebgpu_wrapper.so"

// cacheDir is lathe's folder in the user cache dir ("" if there is none).
func cacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "lathe")
}

// libraryCandidates lists where Dawn is looked for, in order: the path in
// LATHE_WEBGPU_LIB, the folder `make deps` installs into, then the names
// the system's loader resolves.
func libraryCandidates() []string {
	var out []string
	if p := os.Getenv("LATHE_WEBGPU_LIB"); p != "" {
		out = append(out, p)
	}
	if dir := cacheDir(); dir != "" {
		out = append(out, filepath.Join(dir, "dawn", libraryName))
	}
	return append(out, libraryName, "libwebgpu_dawn.so")
}

// vulkanDriver says how the Vulkan loader will find a driver: the variables
// to set (none where the user or the machine has a driver of its own), the
// libraries to load first, and a line for Describe.
type vulkanDriver struct {
	env     map[string]string
	preload []string
	note    string
}

// systemICDDirs are where the Vulkan loader looks for drivers' manifests.
var systemICDDirs = []string{
	"/etc/vulkan/icd.d", "/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d",
	"/usr/local/nvidia/share/vulkan/icd.d",
}

// findVulkanDriver picks the project's lavapipe when neither the user (by
// VK_DRIVER_FILES or VK_ICD_FILENAMES) nor the machine names a driver other
// than a lavapipe: Debian 12's own lavapipe is too old for Dawn, and a real
// GPU's driver is always preferred.
func findVulkanDriver(icdDirs []string, cache string) vulkanDriver {
	for _, v := range []string{"VK_DRIVER_FILES", "VK_ICD_FILENAMES"} {
		if os.Getenv(v) != "" {
			return vulkanDriver{note: "Vulkan driver from " + v}
		}
	}
	for _, dir := range icdDirs {
		manifests, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, m := range manifests {
			if !strings.Contains(filepath.Base(m), "lvp") {
				return vulkanDriver{note: "Vulkan driver " + m}
			}
		}
	}
	if cache == "" {
		return vulkanDriver{note: "no Vulkan driver of the machine's and no user cache dir"}
	}
	icd := filepath.Join(cache, "mesa", "lvp_icd.json")
	if _, err := os.Stat(icd); err != nil {
		return vulkanDriver{note: "no Vulkan driver of the machine's, and no lavapipe at " + icd + " (run make deps)"}
	}
	lib := filepath.Join(cache, "mesa", "lib")
	return vulkanDriver{
		env: map[string]string{"VK_DRIVER_FILES": icd, "VK_ICD_FILENAMES": icd},
		// lavapipe 25 links libdrm 2.4.121; loaded by path first, these
		// copies stand in for the machine's older ones.
		preload: []string{filepath.Join(lib, "libdrm.so.2"), filepath.Join(lib, "libdrm_amdgpu.so.1")},
		note:    "lavapipe from " + filepath.Join(cache, "mesa"),
	}
}
