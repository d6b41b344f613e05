package gateway

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Settings of the stubs the start-up and stop tests run (TestMain reads
// them before the other stubs start).
const (
	// stubSleepEnv is a duration the stub sleeps before it serves, as a
	// cold "go run" compiles first.
	stubSleepEnv = "MCPX_GATEWAY_TEST_STUB_SLEEP"
	// stubSleepOnceEnv names a file: the stub sleeps only when it does
	// not exist yet, and creates it (a first start is slow, a restart
	// is not).
	stubSleepOnceEnv = "MCPX_GATEWAY_TEST_STUB_SLEEP_ONCE"

	// stubFamily (a stubEnv mode) starts a child process (stubChild),
	// then serves tools as "1" does and exits when its stdin ends; the
	// child does not read stdin, as a browser a server started does not.
	stubFamily = "family"
	stubChild  = "child"
	// stubDirEnv is where the child writes child.pid when it is ready
	// and child.term when it gets SIGTERM.
	stubDirEnv = "MCPX_GATEWAY_TEST_STUB_DIR"
	// stubChildTermEnv is "exit" (the child exits on SIGTERM) or
	// "ignore" (it notes SIGTERM and stays).
	stubChildTermEnv = "MCPX_GATEWAY_TEST_STUB_CHILD_TERM"
	// stubChildStdioEnv is "inherit" (the child holds its parent's
	// stdin and stderr open) or "none" (its stdio is /dev/null).
	stubChildStdioEnv = "MCPX_GATEWAY_TEST_STUB_CHILD_STDIO"
)

// sleepFirst sleeps as stubSleepEnv and stubSleepOnceEnv say.
func sleepFirst() {
	d, err := time.ParseDuration(os.Getenv(stubSleepEnv))
	if err != nil || d <= 0 {
		return
	}
	if once := os.Getenv(stubSleepOnceEnv); once != "" {
		f, err := os.OpenFile(once, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return // slept before
		}
		f.Close()
	}
	time.Sleep(d)
}

// startFamilyChild starts the family stub's child in the stub's process
// group.
func startFamilyChild() {
	exe, err := os.Executable()
	if err != nil {
		os.Exit(5)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), stubEnv+"="+stubChild)
	if os.Getenv(stubChildStdioEnv) == "inherit" {
		cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		os.Exit(6)
	}
}

// runChildStub waits for SIGTERM, notes it in child.term, and exits or
// not as stubChildTermEnv says.
func runChildStub() {
	dir := os.Getenv(stubDirEnv)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	tmp := filepath.Join(dir, "child.pid.tmp")
	_ = os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o600)
	_ = os.Rename(tmp, filepath.Join(dir, "child.pid"))
	<-sig
	_ = os.WriteFile(filepath.Join(dir, "child.term"), []byte("SIGTERM"), 0o600)
	if os.Getenv(stubChildTermEnv) == "ignore" {
		select {}
	}
}
