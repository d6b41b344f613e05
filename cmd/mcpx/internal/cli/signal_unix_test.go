//go:build unix

package cli

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/internal/syncbuf"
)

// TestWrapSignalsWhileClosing: SIGTERMs that keep coming while mcpx wrap
// shuts down (a client that closed stdin sends SIGTERM when the process
// takes a while) do not kill it before it has closed its store; it exits
// 0, or a signal ends it once the store is closed (the moments between
// that and the exit). A SIGTERM that landed after the gateway returned
// used to kill mcpx in the middle of the store's close.
func TestWrapSignalsWhileClosing(t *testing.T) {
	isolate(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		// The upstream is the test binary as runWrapStub, not as mcpx.
		cmd := exec.Command(exe, "wrap", "--store", t.TempDir(), "--", "env", "-u", mcpxMainEnv, exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), mcpxMainEnv+"=1", wrapStubEnv+"=1", "MCPX_LOG_LEVEL=debug")
		var stderr syncbuf.Buffer
		cmd.Stderr = &stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
		if _, err := bufio.NewReader(out).ReadBytes('\n'); err != nil {
			t.Fatalf("round %d: no answer to initialize: %v", round, err)
		}
		in.Close()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var werr error
	signals:
		for deadline := time.After(30 * time.Second); ; {
			select {
			case werr = <-exited:
				break signals
			case <-deadline:
				cmd.Process.Kill()
				t.Fatalf("round %d: mcpx wrap did not exit within 30 s of its stdin's end", round)
			case <-time.After(200 * time.Microsecond):
				cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				if strings.Contains(stderr.String(), "closed the artifact store") {
					continue
				}
				t.Fatalf("round %d: a SIGTERM killed mcpx wrap before it closed its store (%v); stderr:\n%s", round, werr, stderr.String())
			}
		}
		if werr != nil {
			t.Fatalf("round %d: mcpx wrap: %v", round, werr)
		}
	}
}
