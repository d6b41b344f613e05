//go:build unix

package upstream

import (
	"errors"
	"os/exec"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// configureCmd puts the upstream in its own process group, so a signal
// reaches the children it started (npx, shells, browsers) too.
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcess(cmd *exec.Cmd) error {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return cmd.Process.Kill()
	}
	return nil
}

// groupPoll is how often stopProcess looks whether a signalled process
// group has emptied.
const groupPoll = 25 * time.Millisecond

// killSettle bounds the wait for a SIGKILLed group to be gone.
const killSettle = time.Second

// stopProcess ends an upstream whose stdin has been closed, as MCP clients
// end a stdio server: it has stopGrace to exit on its own; then its
// process group gets SIGTERM, which lets a server close what it started
// (puppeteer closes its browser, which lives in a group of its own), and
// killGrace more; then the group gets SIGKILL. exited is closed once the
// process has been waited for and its pipes are closed. The group is
// signalled even when the process left on its own: a child it started
// may still hold on.
func stopProcess(cmd *exec.Cmd, exited <-chan struct{}, stopGrace, killGrace time.Duration, log hclog.Logger) {
	pgid := cmd.Process.Pid
	select {
	case <-exited:
		if !groupAlive(pgid) {
			return
		}
	case <-time.After(stopGrace):
	}
	log.Debug("upstream process group still running after its stdin closed; sending SIGTERM", "pgid", pgid, "after", stopGrace)
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(killGrace)
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			if !groupAlive(pgid) {
				return
			}
		default:
		}
		select {
		case <-deadline:
			log.Warn("upstream did not exit after SIGTERM; sending SIGKILL", "pgid", pgid, "after", killGrace)
			_ = killProcess(cmd)
			<-exited
			// SIGKILL lands asynchronously: wait, briefly, until the
			// group's other members are gone too, so that a stop ends
			// with nothing of the upstream running.
			for end := time.Now().Add(killSettle); groupAlive(pgid) && time.Now().Before(end); {
				time.Sleep(groupPoll)
			}
			return
		case <-tick.C:
		}
	}
}
