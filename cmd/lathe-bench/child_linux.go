package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent has Linux kill cmd's process (SIGKILL, which a stopped
// process takes too) when this one dies: a child left stopped by freeze
// would otherwise stay stopped, holding its memory, after lathe-bench was
// killed between two samples. The signal follows the death of the thread
// that started the child, which Go ends only under a goroutine that locked
// it and returned without unlocking it; nothing in lathe-bench does.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
