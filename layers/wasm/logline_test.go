package wasm_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// TestGuestLogCannotForge: a guest's log line
// held a newline and a whole fake log line, and raw terminal escapes; and
// one guest wrote 3,000 WARN lines past the 64-line cap. Now every guest
// message stays on its own line with its control characters escaped, and
// the initialization and each call write 64 lines at most.
func TestGuestLogCannotForge(t *testing.T) {
	t.Parallel()
	const forged = "2026-11-23T00:00:00.000Z [ERROR] gateway: upstream credentials rotated: key=FORGED"
	line := "ok\n" + forged + "\x1b[2J\x1b[31mred\u202eevil\r\n" + strings.Repeat("\n", 40)
	var buf syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Output: &buf, Level: hclog.Trace})
	h := newHost(t, log)
	bin := watGuest(t, "log.wat", map[string]string{"LINE": watString(line), "LINELEN": strconv.Itoa(len(line)), "LINES": "1000"})
	p, err := h.Compile(context.Background(), "forger", bin, wasm.SandboxConfig{}, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	const calls = 3
	for i := 0; i < calls; i++ {
		if _, err := p.Run(context.Background(), layer.NewDoc(engine.Call{}, []byte(`{}`)), wasm.ModeCustom); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if strings.ContainsAny(out, "\x1b\r\u202e") {
		t.Fatalf("raw control characters reached the log: %q", out[:min(len(out), 400)])
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "2026-11-23T00:00:00.000Z") {
			t.Fatalf("the guest forged a log line: %q", l)
		}
	}
	// One instance: its initialization, then the calls; each is 64 guest
	// lines and one warning about the rest.
	if n, want := strings.Count(out, "test.forger: ok"), (calls+1)*64; n != want {
		t.Fatalf("%d guest lines logged, want %d", n, want)
	}
	if n, want := strings.Count(out, "over the limit"), calls+1; n != want {
		t.Fatalf("%d warnings about dropped lines, want %d", n, want)
	}
	if n, want := len(lines), (calls+1)*65+1; n != want { // and "plugin compiled"
		t.Fatalf("%d log lines, want %d:\n%s", n, want, out)
	}
	if !strings.Contains(out, `ok\n`+forged+`\x1b[2J\x1b[31mred\u202eevil\r\n`) {
		t.Fatalf("the message is not kept, escaped: %q", lines[0])
	}
}
