//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing where the system cannot tie a child's life to
// its parent's (Linux's PR_SET_PDEATHSIG).
func dieWithParent(*exec.Cmd) {}
