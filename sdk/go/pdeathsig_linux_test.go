package tollgate_test

import (
	"os/exec"
	"syscall"
)

// dieWithTestBinary has the kernel SIGKILL the child when the thread that started it ends.
func dieWithTestBinary(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
