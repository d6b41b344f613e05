package gateway

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store"
)

// TestStopSendsSIGTERMBeforeSIGKILL stops an upstream whose child process
// ignores the end of stdin, as a browser puppeteer started does: the
// process group gets SIGTERM after the stop grace and SIGKILL only after
// the kill grace, and nothing of the group is left running (before, the
// group got SIGKILL at once, and a child that had let go of the pipes was
// not signalled at all).
func TestStopSendsSIGTERMBeforeSIGKILL(t *testing.T) {
	const stopGrace, killGrace = 300 * time.Millisecond, 800 * time.Millisecond
	for _, tc := range []struct {
		name, term, stdio string
		min, max          time.Duration // of Close
	}{
		{"child holds the pipes and exits on SIGTERM", "exit", "inherit", stopGrace, stopGrace + killGrace},
		{"child holds no pipe and exits on SIGTERM", "exit", "none", 0, killGrace},
		{"child ignores SIGTERM", "ignore", "inherit", stopGrace + killGrace, stopGrace + killGrace + 2*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := stubServer(t)
			cfg.Env = map[string]string{stubEnv: stubFamily, stubDirEnv: dir, stubChildTermEnv: tc.term, stubChildStdioEnv: tc.stdio,
				"GORACE": "atexit_sleep_ms=0"} // a -race binary otherwise waits 1 s on exit
			g := newGatewayWith(t, Options{
				Servers: map[string]config.ServerConfig{"fam": cfg},
				Limits:  config.Limits{StopGrace: store.Duration(stopGrace), KillGrace: store.Duration(killGrace)},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			g.WaitReady(ctx)
			u := g.rooms.Ups.Named("fam")
			pgid := u.PID()
			if pgid == 0 {
				t.Fatalf("upstream not ready: %+v", u.Status())
			}
			child := waitChildPID(t, dir)
			if got := members(pgid); len(got) != 2 {
				t.Fatalf("process group %d holds %v, want the stub and its child", pgid, got)
			}
			start := time.Now()
			_ = g.Close(ctx)
			took := time.Since(start)
			// SIGKILL is delivered asynchronously: a loaded machine may
			// show the child running for a moment after the signal.
			left := members(pgid)
			for wait := time.Now().Add(2 * time.Second); len(left) > 0 && time.Now().Before(wait); left = members(pgid) {
				time.Sleep(20 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Fatalf("after Close, processes %v of the group are still running (child %d)", left, child)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "child.term")); err != nil || string(b) != "SIGTERM" {
				t.Errorf("the child got no SIGTERM before it ended (child.term: %q, %v)", b, err)
			}
			if took < tc.min || took > tc.max {
				t.Errorf("Close took %s, want %s to %s", took, tc.min, tc.max)
			}
		})
	}
}

// waitChildPID returns the family stub's child's pid once it is ready.
func waitChildPID(t *testing.T, dir string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, "child.pid")); err == nil {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the stub's child did not start")
	return 0
}

// members lists the running processes of process group pgid (zombies
// are not running: whether PID 1 reaps them is not the gateway's doing).
func members(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}
