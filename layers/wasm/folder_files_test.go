package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// openFolderGuarded opens a folder, failing the test (rather than hanging
// it) when that does not return.
func openFolderGuarded(t *testing.T, h *wasm.Host, dir string, o wasm.FolderOptions) *wasm.Folder {
	t.Helper()
	type opened struct {
		f   *wasm.Folder
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := wasm.OpenFolderWith(context.Background(), h, dir, o)
		done <- opened{f, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		t.Cleanup(func() { _ = r.f.Close(context.Background()) })
		return r.f
	case <-time.After(2 * time.Minute):
		t.Fatal("opening the folder hangs")
		return nil
	}
}

// TestFolderReadsRegularFilesOnly: a FIFO named
// aaa.wasm hung the first call forever (and, through the engine's lock,
// every server), /dev/zero linked as zero.wasm ran the process out of
// memory, and a 300 MB sparse file was read whole. Now only regular files
// (or symlinks to one) load, each under a size cap; the rest fail to load
// with a log line that says why, and the good plugins serve.
func TestFolderReadsRegularFilesOnly(t *testing.T) {
	t.Parallel()
	noop := watGuest(t, "noop.wat", nil)
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "good.wasm"), noop)
	elsewhere := filepath.Join(t.TempDir(), "build-output.wasm")
	writeAtomic(t, elsewhere, noop)
	must(t, os.Symlink(elsewhere, filepath.Join(dir, "linked.wasm")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "aaa.wasm"), 0o644))
	must(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.wasm")))
	must(t, os.Mkdir(filepath.Join(dir, "folder.wasm"), 0o755))
	sparse, err := os.Create(filepath.Join(dir, "sparse.wasm"))
	must(t, err)
	must(t, sparse.Truncate(300<<20))
	must(t, sparse.Close())
	// A sidecar that is a FIFO must not hang either.
	writeAtomic(t, filepath.Join(dir, "pipeside.wasm"), noop)
	must(t, syscall.Mkfifo(filepath.Join(dir, "pipeside.json"), 0o644))

	var logs syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	h := newHost(t, log)
	f := openFolderGuarded(t, h, dir, wasm.FolderOptions{Log: log})
	if got, want := f.Names(), []string{"good", "linked"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %v, want %v", got, want)
	}
	out := logs.String()
	for name, why := range map[string]string{"aaa": "not a regular file (a FIFO)", "zero": "not a regular file (a device)", "folder": "not a regular file (a folder)", "sparse": "over the size cap", "pipeside": "not a regular file (a FIFO)"} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "plugin="+name) && strings.Contains(l, why) {
				found = true
			}
		}
		if !found {
			t.Errorf("no log line says %s failed to load because it is %s:\n%s", name, why, out)
		}
	}

	// A listed plugin file that is a FIFO fails the layer at once.
	eng := newEngineWithHost(t, h, engine.Config{Chain: []string{"custom"}, Layers: map[string]json.RawMessage{
		"custom": rawJSON(t, wasm.CustomOptions{Plugins: []wasm.PluginFile{{File: filepath.Join(dir, "aaa.wasm")}}}),
	}}, nil)
	if err := eng.Validate("s", "t"); !errors.Is(err, wasm.ErrNotRegularFile) {
		t.Fatalf("Validate = %v, want ErrNotRegularFile", err)
	}
}

// TestFolderFileSizeCap: the cap is configurable, and a module of exactly
// the cap loads.
func TestFolderFileSizeCap(t *testing.T) {
	t.Parallel()
	noop := watGuest(t, "noop.wat", nil)
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "p.wasm"), noop)
	h := newHost(t, nil)
	if got := openFolderGuarded(t, h, dir, wasm.FolderOptions{MaxFileBytes: int64(len(noop)) - 1}).Names(); len(got) != 0 {
		t.Fatalf("loaded %v over the cap", got)
	}
	if got := openFolderGuarded(t, h, dir, wasm.FolderOptions{MaxFileBytes: int64(len(noop))}).Names(); len(got) != 1 {
		t.Fatalf("loaded %v, want [p] at the cap", got)
	}
}

// TestFolderNamesAreNotGlobs: x*.wasm without a
// sidecar served every server whose name starts with x. A file name is a
// name: it serves the server of that exact name.
func TestFolderNamesAreNotGlobs(t *testing.T) {
	t.Parallel()
	noop := watGuest(t, "noop.wat", nil)
	dir := t.TempDir()
	for _, n := range []string{"x*", "y?", "[z]", `w\`} {
		writeAtomic(t, filepath.Join(dir, n+".wasm"), noop)
	}
	h := newHost(t, nil)
	f := openFolderGuarded(t, h, dir, wasm.FolderOptions{})
	if len(f.Names()) != 4 {
		t.Fatalf("loaded %v", f.Names())
	}
	for server, want := range map[string][]string{
		"xylophone": nil, "x": nil, "x*": {"x*"},
		"yo": nil, "y?": {"y?"},
		"z": nil, "[z]": {"[z]"},
		`w\`: {`w\`},
	} {
		if got := f.Match(server, "tool"); !reflect.DeepEqual(got, want) {
			t.Errorf("server %q runs %v, want %v", server, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFolderWarnsUnmatchedPlugin: a plugin whose
// name matches no server (the scaffold named it after its folder) served
// nothing and said nothing at the default log level. With the servers
// known (Host.SetServers, as the gateway and the CLI call it), each such
// plugin is a warning, once per loaded version.
func TestFolderWarnsUnmatchedPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "my-plugin.wasm"), watGuest(t, "noop.wat", nil))
	writeAtomic(t, filepath.Join(dir, "helpdesk.wasm"), watGuest(t, "noop.wat", nil))
	var logs syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	h := newHost(t, log)
	h.SetServers([]string{"helpdesk", "github"})
	f := openFolderGuarded(t, h, dir, wasm.FolderOptions{Log: log})
	warnings := func(name string) int {
		n := 0
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "[WARN]") && strings.Contains(l, "matches no configured server") && strings.Contains(l, "plugin="+name) {
				n++
			}
		}
		return n
	}
	if warnings("my-plugin") != 1 || warnings("helpdesk") != 0 {
		t.Fatalf("want one warning, about my-plugin:\n%s", logs.String())
	}
	f.Reload(context.Background())
	h.SetServers([]string{"helpdesk", "github"})
	if warnings("my-plugin") != 1 {
		t.Fatalf("warned again without a change:\n%s", logs.String())
	}
	// A new version is a new load: warned again.
	writeAtomic(t, filepath.Join(dir, "my-plugin.wasm"), watGuest(t, "keep.wat", nil))
	f.Reload(context.Background())
	if warnings("my-plugin") != 2 {
		t.Fatalf("no warning about the new version:\n%s", logs.String())
	}
	// Servers learnt after the load are checked at once.
	writeAtomic(t, filepath.Join(dir, "other.wasm"), watGuest(t, "noop.wat", nil))
	h2 := newHost(t, log)
	openFolderGuarded(t, h2, dir, wasm.FolderOptions{Log: log})
	if warnings("other") != 0 {
		t.Fatalf("warned before the servers were known:\n%s", logs.String())
	}
	h2.SetServers([]string{"helpdesk"})
	if warnings("other") != 1 {
		t.Fatalf("no warning once the servers were known:\n%s", logs.String())
	}
}

// TestFolderLoadFailureFailsTheCall: a sidecar
// with an unknown field was logged at ERROR while every call went on with
// no failure reported ("0 failed steps"). Now each call the plugin would
// serve (the servers its sidecar names) fails the custom layer with
// ErrNotLoaded; other servers' calls are untouched, and once the sidecar is
// fixed the plugin loads and the calls succeed.
func TestFolderLoadFailureFailsTheCall(t *testing.T) {
	t.Parallel()
	noop := watGuest(t, "noop.wat", nil)
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "helper.wasm"), noop)
	writeAtomic(t, filepath.Join(dir, "helper.json"), []byte(`{"servers":["helpdesk"],"tool":"x"}`))
	h := newHost(t, nil)
	eng := newEngineWithHost(t, h, engine.Config{Chain: []string{"custom"}, Layers: map[string]json.RawMessage{
		"custom": rawJSON(t, wasm.CustomOptions{Dir: dir}),
	}}, nil)
	ctx := context.Background()
	res, err := eng.Transform(ctx, engine.Call{Server: "helpdesk", Tool: "t"}, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) != 1 || !errors.Is(res.Failures[0], wasm.ErrNotLoaded) || !strings.Contains(res.Failures[0].Error(), `unknown field "tool"`) {
		t.Fatalf("Failures = %v, want one ErrNotLoaded naming the unknown field", res.Failures)
	}
	if res, err := eng.Transform(ctx, engine.Call{Server: "other", Tool: "t"}, []byte(`{"a":1}`)); err != nil || len(res.Failures) != 0 {
		t.Fatalf("another server's call: %v %v", res.Failures, err)
	}
	writeAtomic(t, filepath.Join(dir, "helper.json"), []byte(`{"servers":["helpdesk"],"tools":["x"]}`))
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := eng.Transform(ctx, engine.Call{Server: "helpdesk", Tool: "t"}, []byte(`{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Failures) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fixed sidecar still fails the call: %v", res.Failures)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
