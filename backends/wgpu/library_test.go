package wgpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindVulkanDriver: the project's lavapipe is used only where neither
// the user nor the machine names a driver other than a lavapipe.
func TestFindVulkanDriver(t *testing.T) {
	t.Setenv("VK_DRIVER_FILES", "")
	t.Setenv("VK_ICD_FILENAMES", "")
	cache := t.TempDir()
	system := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, "mesa"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path string) {
		if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if got := findVulkanDriver([]string{system}, cache); got.env != nil || !strings.Contains(got.note, "make deps") {
		t.Errorf("no driver and no lavapipe: %+v, want no env and a note that says run make deps", got)
	}
	write(filepath.Join(cache, "mesa", "lvp_icd.json"))
	write(filepath.Join(system, "lvp_icd.x86_64.json")) // Debian's own, too old for Dawn
	got := findVulkanDriver([]string{system}, cache)
	if got.env["VK_DRIVER_FILES"] != filepath.Join(cache, "mesa", "lvp_icd.json") || len(got.preload) != 2 {
		t.Errorf("only a system lavapipe: %+v, want the project's lavapipe", got)
	}
	write(filepath.Join(system, "nvidia_icd.json"))
	if got := findVulkanDriver([]string{system}, cache); got.env != nil || !strings.Contains(got.note, "nvidia_icd.json") {
		t.Errorf("a GPU driver: %+v, want it, with no env set", got)
	}
	t.Setenv("VK_DRIVER_FILES", "/some/driver.json")
	if got := findVulkanDriver(nil, cache); got.env != nil || !strings.Contains(got.note, "VK_DRIVER_FILES") {
		t.Errorf("the user's VK_DRIVER_FILES: %+v, want it left alone", got)
	}
}

func TestLibraryCandidates(t *testing.T) {
	t.Setenv("LATHE_WEBGPU_LIB", "/opt/dawn/libwebgpu.so")
	got := libraryCandidates()
	if got[0] != "/opt/dawn/libwebgpu.so" || !strings.HasSuffix(got[1], filepath.Join("lathe", "dawn", libraryName)) {
		t.Errorf("candidates %v: want LATHE_WEBGPU_LIB, then the cache dir", got)
	}
}
