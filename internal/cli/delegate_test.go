package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/cli/parts"
)

func TestNeedsServer(t *testing.T) {
	dir := t.TempDir()
	s3cfg := filepath.Join(dir, "s3.json")
	fscfg := filepath.Join(dir, "fs.json")
	os.WriteFile(s3cfg, []byte(`{"store":{"s3":{"bucket":"b"}}}`), 0o600)
	os.WriteFile(fscfg, []byte(`{"store":{"dir":"x"}}`), 0o600)
	for _, tc := range []struct {
		args []string
		ps   parts.Set
		want string // a part of the reason; "" for none
	}{
		{[]string{"serve", "--config", fscfg}, parts.Set{}, "gateway"},
		{[]string{"wrap", "--", "server"}, parts.Set{}, "gateway"},
		{[]string{"artifacts", "query", "--jq", ".a", "ID"}, parts.Set{}, "jq"},
		{[]string{"artifacts", "query", "--grep", "x", "ID"}, parts.Set{}, ""},
		{[]string{"artifacts", "query", "--", "--jq"}, parts.Set{}, ""},
		{[]string{"transform", "--config", s3cfg}, parts.Set{}, "S3 store of " + s3cfg},
		{[]string{"artifacts", "ls", "--config=" + s3cfg}, parts.Set{}, "S3 store"},
		{[]string{"artifacts", "ls", "-config", s3cfg}, parts.Set{}, "S3 store"},
		{[]string{"transform", "--config", s3cfg, "--store", dir}, parts.Set{}, ""},
		{[]string{"transform", "--config", fscfg}, parts.Set{}, ""},
		{[]string{"transform", "--", "--config", s3cfg}, parts.Set{}, ""},
		{[]string{"transform"}, parts.Set{}, ""},
		{[]string{"version"}, parts.Set{}, ""},
		{[]string{"plugin", "test", "--config", s3cfg}, parts.Set{}, ""},
	} {
		got := needsServer(tc.args, tc.ps)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("needsServer(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestLeanBinaryHandsOverToServer runs cmd/mcpx as built: serve and a
// command on an S3 store run in the server binary with the same
// arguments, and without one the user is told what to install; a
// transform on the file-system store runs in mcpx itself.
func TestLeanBinaryHandsOverToServer(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcpx")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/mcpx").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A stand-in server binary that records how it was run.
	record := filepath.Join(dir, "args")
	fake := filepath.Join(dir, "fake-server")
	os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+record+"\nexit 7\n"), 0o755)
	s3cfg := filepath.Join(dir, "s3.json")
	os.WriteFile(s3cfg, []byte(`{"store":{"s3":{"bucket":"b"}}}`), 0o600)
	for _, args := range [][]string{
		{"serve", "--listen", "127.0.0.1:0"},
		{"transform", "--config", s3cfg, "result.json"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), envServerBinary+"="+fake)
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
			t.Fatalf("mcpx %q: %v, want the server binary's exit code 7", args, err)
		}
		b, _ := os.ReadFile(record)
		if got := strings.Fields(string(b)); strings.Join(got, " ") != strings.Join(args, " ") {
			t.Errorf("the server binary ran with %q, want %q", got, args)
		}
	}

	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "PATH="+dir, envServerBinary+"=")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFail || !strings.Contains(string(out), "go install github.com/mcpx-dev/mcpx/cmd/mcpx-server") {
		t.Errorf("serve without mcpx-server: %v\n%s", err, out)
	}

	in := filepath.Join(dir, "result.json")
	os.WriteFile(in, []byte(`{"content":[{"type":"text","text":"hello"}]}`), 0o600)
	cmd = exec.Command(bin, "transform", "--store", filepath.Join(dir, "store"), in)
	cmd.Env = append(os.Environ(), envServerBinary+"="+fake)
	out, err = cmd.Output()
	if err != nil || !strings.Contains(string(out), `"hello"`) {
		t.Errorf("transform in mcpx: %v\n%s", err, out)
	}
}
