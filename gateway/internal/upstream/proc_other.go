//go:build !unix

package upstream

import (
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
)

func configureCmd(*exec.Cmd) {}

func killProcess(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// stopProcess ends an upstream whose stdin has been closed: it has
// stopGrace and killGrace to exit on its own (there is no SIGTERM to
// send here), then it is killed. exited is closed once the process has
// been waited for.
func stopProcess(cmd *exec.Cmd, exited <-chan struct{}, stopGrace, killGrace time.Duration, log hclog.Logger) {
	select {
	case <-exited:
		return
	case <-time.After(stopGrace + killGrace):
	}
	log.Warn("upstream did not exit after its stdin closed; killing it", "after", stopGrace+killGrace)
	_ = killProcess(cmd)
	<-exited
}
