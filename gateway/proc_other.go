//go:build !unix

package gateway

import "os/exec"

func configureCmd(*exec.Cmd) {}

func killProcess(cmd *exec.Cmd) error { return cmd.Process.Kill() }
