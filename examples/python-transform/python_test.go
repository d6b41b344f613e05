// Package pythontransform tests the Python example against the real
// handler: python3 posts a raw result to POST /transform and prints the
// rewritten one.
package pythontransform

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	_ "github.com/mcpx-dev/mcpx/layers"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
	"github.com/mcpx-dev/mcpx/web"
)

func TestPythonExample(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is not installed: the example's test needs it under CI")
		}
		t.Skip("python3 not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := memstore.New(memstore.Config{})
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	signer, err := web.NewSigner(web.SignerConfig{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	au, err := auth.New(ctx, auth.Options{Config: auth.Config{Tokens: map[string]auth.Identity{"py-token": {User: "agent"}}}, Loopback: true, BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Options{Store: st, Linker: signer})
	if err != nil {
		t.Fatal(err)
	}
	api, err := web.NewAPI(web.APIOptions{Store: st, Signer: signer, Auth: au, Transformer: eng})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = api.Handler()
	srv.Start()
	defer srv.Close()

	cmd := exec.CommandContext(ctx, py, "transform.py", "--server", "files", "--tool", "get_report")
	cmd.Env = append(cmd.Environ(), "MCPX_URL="+base, "MCPX_TOKEN=py-token")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python3 transform.py: %v\n%s", err, stderr.String())
	}
	var out struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Content) < 2 {
		t.Fatalf("output: %v\n%s", err, stdout.String())
	}
	if strings.Contains(stdout.String(), "JVBERi0") || !strings.Contains(stdout.String(), "mcpx://artifacts/files_") || !strings.Contains(stdout.String(), "/artifacts/files_") {
		t.Errorf("the PDF was not replaced by a reference:\n%.1000s", stdout.String())
	}
	refs, _, err := st.List(ctx, store.Scope{UserID: "agent"}, "")
	if err != nil || len(refs) != 1 || refs[0].MIMEType != "application/pdf" {
		t.Errorf("the store holds %v (%v), want the caller's PDF", refs, err)
	}

	// a wrong token is a clear error and exit status 1
	bad := exec.CommandContext(ctx, py, "transform.py")
	bad.Env = append(bad.Environ(), "MCPX_URL="+base, "MCPX_TOKEN=wrong")
	msg, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "mcpx answered 401") {
		t.Errorf("wrong token: %v %s", err, msg)
	}

	// nothing listening: one line that says so and what to do, no traceback
	closed := httptest.NewServer(nil)
	closedURL := closed.URL
	closed.Close()
	down := exec.CommandContext(ctx, py, "transform.py")
	down.Env = append(down.Environ(), "MCPX_URL="+closedURL)
	msg, err = down.CombinedOutput()
	want := "cannot reach mcpx at " + closedURL + ": [Errno 111] Connection refused; start it with `mcpx serve --listen 127.0.0.1:8080` or set MCPX_URL\n"
	if code := down.ProcessState.ExitCode(); err == nil || code != 1 || string(msg) != want {
		t.Errorf("nothing listening: exit %d, %q; want exit 1 and %q", code, msg, want)
	}
}
