//go:build !linux

package tollgate_test

import "os/exec"

// dieWithTestBinary does nothing where the kernel has no parent-death signal: there, only the normal
// shutdown in TestMain stops the gateway.
func dieWithTestBinary(cmd *exec.Cmd) {}
