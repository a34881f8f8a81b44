package testenv

import (
	"os"
	"os/exec"
)

// RunChild runs test, a test of this test binary, again in a child process
// with env added to this process's environment, and returns what the child
// printed, standard output and error together. It is for checks that need
// a process of their own: a variable read once at start, a library opened
// once, a peak of memory. The child finds that it is one by a variable of
// env, and runs the checks; the parent reads their outcome in the output.
func RunChild(test string, env ...string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
