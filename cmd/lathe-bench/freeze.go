package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// freeze stops the child (SIGSTOP) and waits until every thread of it
// has stopped, so that none of them runs beside the sample that follows
// (side.go says why). A child that has ended, or a machine without
// /proc, only gets the signal.
func (c *child) freeze() {
	if c.frozen || c.dead != nil {
		return
	}
	pid := c.cmd.Process.Pid
	if syscall.Kill(pid, syscall.SIGSTOP) != nil {
		return
	}
	c.frozen = true
	for deadline := time.Now().Add(time.Second); !allStopped(pid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Microsecond)
	}
}

// thaw resumes a frozen child (SIGCONT).
func (c *child) thaw() {
	if c.frozen {
		syscall.Kill(c.cmd.Process.Pid, syscall.SIGCONT)
		c.frozen = false
	}
}

// allStopped says whether every thread of process pid is stopped, as
// /proc/pid/task/*/stat report their states; true where it cannot tell.
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return true
	}
	for _, t := range tasks {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", t.Name(), "stat"))
		if err != nil {
			continue // the thread has ended
		}
		// The state is the field after the command's closing parenthesis
		// (the command may itself hold spaces and parentheses).
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 || i+2 >= len(stat) {
			continue
		}
		switch stat[i+2] {
		case 'T', 't', 'Z', 'X': // stopped, or ended
		default:
			return false
		}
	}
	return true
}
