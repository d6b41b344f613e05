//go:build unix

package gateway

import (
	"os/exec"
	"syscall"
)

// configureCmd puts the upstream in its own process group, so a kill
// reaches the children it started (npx, shells) too.
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcess(cmd *exec.Cmd) error {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return cmd.Process.Kill()
	}
	return nil
}
