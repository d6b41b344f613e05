package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestTransformInputs feeds the same Tableau-like result through every way
// transform reads input and checks the base64 is gone and a ref is in its
// place.
func TestTransformInputs(t *testing.T) {
	isolate(t)
	pdf := samplePDF()
	raw := tableauResult(t, pdf)
	b64 := base64.StdEncoding.EncodeToString(pdf)
	if len(b64) <= 1000 {
		t.Fatalf("sample base64 is %d chars, want > 1000", len(b64))
	}
	file := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin func(t *testing.T) *os.File // nil: a bytes.Reader of raw
		args  []string
	}{
		{name: "file argument", args: []string{file}},
		{name: "stdin pipe", args: nil},
		{name: "dash is stdin", args: []string{"-"}},
		{name: "stdin redirected from a file", args: nil, stdin: func(t *testing.T) *os.File {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			storeDir := t.TempDir()
			var in io.Reader = bytes.NewReader(raw)
			if tt.stdin != nil {
				in = tt.stdin(t)
			}
			args := append([]string{"transform", "--store", storeDir, "--server", "tableau", "--tool", "download_workbook"}, tt.args...)
			got := runCLI(t, in, args...)
			if got.code != exitOK {
				t.Fatalf("exit code %d; stderr:\n%s", got.code, got.stderr)
			}
			if got.stderr != "" {
				t.Errorf("stderr %q, want nothing at the default log level", got.stderr)
			}
			if strings.Contains(got.stdout, b64[:64]) || strings.Contains(got.stdout, "JVBERi0") {
				t.Errorf("output still holds the base64:\n%s", got.stdout)
			}
			id := artifactOf(t, got.stdout)
			if !strings.HasPrefix(id, "tableau_") {
				t.Errorf("artifact id %q, want the server's namespace tableau_", id)
			}
			back := runCLI(t, nil, "artifacts", "get", "--store", storeDir, id)
			if back.code != exitOK || !bytes.Equal([]byte(back.stdout), pdf) {
				t.Errorf("artifacts get %s: exit %d, %d bytes, want the %d original bytes; stderr:\n%s", id, back.code, len(back.stdout), len(pdf), back.stderr)
			}
		})
	}
}

// TestTransformInvalidJSON checks that input that is not JSON fails with
// exit code 1, a one-line message giving the offset and nothing on stdout.
func TestTransformInvalidJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "stray comma", in: `{"a": [1, 2,, 3]}`, want: "offset 12"},
		{name: "truncated", in: `{"content": [{"type": "text"`, want: "offset"},
		{name: "not JSON", in: "%PDF-1.4 binary", want: "offset 0"},
		{name: "empty", in: "", want: "invalid JSON"},
		{name: "two values", in: `{} {}`, want: "offset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			got := runCLI(t, strings.NewReader(tt.in), "transform")
			if got.code != exitFail {
				t.Errorf("exit code %d, want %d", got.code, exitFail)
			}
			if got.stdout != "" {
				t.Errorf("stdout %q, want nothing", got.stdout)
			}
			if !strings.HasPrefix(got.stderr, "mcpx transform: ") || !strings.Contains(got.stderr, tt.want) || strings.Count(got.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line \"mcpx transform: ...\" containing %q", got.stderr, tt.want)
			}
		})
	}
}

// TestUnopenableStore checks every store-using command against a store
// folder under a regular file: exit 1, a message naming the store, nothing
// on stdout.
func TestUnopenableStore(t *testing.T) {
	isolate(t)
	bad := notAFolder(t)
	cfgFile := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfgFile, []byte(`{"store": {"dir": "`+bad+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	raw := tableauResult(t, samplePDF())
	tests := []struct {
		name string
		args []string
	}{
		{name: "transform --store", args: []string{"transform", "--store", bad}},
		{name: "transform config store.dir", args: []string{"transform", "--config", cfgFile}},
		{name: "ls", args: []string{"artifacts", "ls", "--store", bad}},
		{name: "ls --json", args: []string{"artifacts", "ls", "--json", "--store", bad}},
		{name: "get", args: []string{"artifacts", "get", "--store", bad, "local_0123456789ab"}},
		{name: "rm", args: []string{"artifacts", "rm", "--store", bad, "local_0123456789ab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, bytes.NewReader(raw), tt.args...)
			if got.code != exitFail {
				t.Errorf("exit code %d, want %d", got.code, exitFail)
			}
			if got.stdout != "" {
				t.Errorf("stdout %q, want nothing", got.stdout)
			}
			if !strings.Contains(got.stderr, "open artifact store") || !strings.Contains(got.stderr, bad) || !strings.Contains(got.stderr, "not a directory") {
				t.Errorf("stderr %q, want the store folder and why it cannot be opened", got.stderr)
			}
		})
	}
}

// TestTransformLayerFailure checks that a failing layer is reported as a
// warning at the default level while the pass-through output is written and
// the exit code is 0.
func TestTransformLayerFailure(t *testing.T) {
	isolate(t)
	in := `{"results": "x", "returned_file_names": ["a.bin"], "returned_file_contents": ["not base64 at all!!"]}`
	got := runCLI(t, strings.NewReader(in), "transform", "--store", t.TempDir())
	if got.code != exitOK {
		t.Fatalf("exit code %d, want 0; stderr:\n%s", got.code, got.stderr)
	}
	if got.stdout != in {
		t.Errorf("output %s, want the input passed through", got.stdout)
	}
	if !strings.Contains(got.stderr, "[WARN]") || !strings.Contains(got.stderr, "layer[contract]") {
		t.Errorf("stderr %q, want a warning naming the failed layer", got.stderr)
	}
}

func TestTransformStats(t *testing.T) {
	isolate(t)
	raw := tableauResult(t, samplePDF())
	got := runCLI(t, bytes.NewReader(raw), "transform", "--stats", "--store", t.TempDir())
	if got.code != exitOK {
		t.Fatalf("exit code %d; stderr:\n%s", got.code, got.stderr)
	}
	re := regexp.MustCompile(`^mcpx transform: (\d+) → (\d+) bytes, 1 artifact stored, 0 failed steps, [0-9.]+ ms\n$`)
	m := re.FindStringSubmatch(got.stderr)
	if m == nil {
		t.Fatalf("stats line %q does not match %s", got.stderr, re)
	}
	if want := len(raw); m[1] != strconv.Itoa(want) {
		t.Errorf("bytes in %s, want %d", m[1], want)
	}
	if want := len(got.stdout); m[2] != strconv.Itoa(want) {
		t.Errorf("bytes out %s, want %d", m[2], want)
	}
}

// TestTransformDefaultStore checks where artifacts go without --store:
// $MCPX_HOME/artifacts, and with no HOME at all a private temp folder whose
// reason is logged at info level only.
func TestTransformDefaultStore(t *testing.T) {
	raw := tableauResult(t, samplePDF())
	t.Run("MCPX_HOME", func(t *testing.T) {
		home := isolate(t)
		got := runCLI(t, bytes.NewReader(raw), "transform")
		if got.code != exitOK || got.stderr != "" {
			t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
		}
		id := artifactOf(t, got.stdout)
		ls := runCLI(t, nil, "artifacts", "ls", "--json", "--store", filepath.Join(home, "artifacts"))
		if !strings.Contains(ls.stdout, `"id":"`+id+`"`) {
			t.Errorf("$MCPX_HOME/artifacts does not list %s:\n%s", id, ls.stdout)
		}
	})
	for _, level := range []string{"", "info"} {
		t.Run("no HOME, level "+level, func(t *testing.T) {
			isolate(t)
			t.Setenv("MCPX_HOME", "")
			t.Setenv("XDG_DATA_HOME", "")
			t.Setenv("HOME", "")
			t.Setenv("MCPX_LOG_LEVEL", level)
			got := runCLI(t, bytes.NewReader(raw), "transform")
			if got.code != exitOK {
				t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
			}
			id := artifactOf(t, got.stdout)
			logged := strings.Contains(got.stderr, "[INFO]") && strings.Contains(got.stderr, "HOME is not set")
			if logged != (level == "info") {
				t.Errorf("stderr %q: want the fallback's reason at info level only", got.stderr)
			}
			ls := runCLI(t, nil, "artifacts", "ls")
			if !strings.Contains(ls.stdout, id) {
				t.Errorf("the fallback store does not list %s:\n%s", id, ls.stdout)
			}
		})
	}
}

// TestTransformConfig checks --config: the pipeline section reaches the
// engine per server, store.dir places the store, log.level and
// MCPX_LOG_LEVEL set the level, and bad files fail with the file's name.
func TestTransformConfig(t *testing.T) {
	raw := tableauResult(t, samplePDF())
	b64 := base64.StdEncoding.EncodeToString(samplePDF())
	write := func(t *testing.T, body string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "mcpx.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noMagic := `{"pipeline": {"servers": {"tableau": {"layers": {"magicbytes": {"enabled": false}}}}}}`
	tests := []struct {
		name       string
		config     string
		env        string // MCPX_LOG_LEVEL
		args       []string
		code       int
		keepsB64   bool
		wantStderr []string
		noStderr   []string
	}{
		{name: "per-server switch off, other server", config: noMagic, args: []string{"--server", "github"}, code: exitOK},
		{name: "per-server switch off, that server", config: noMagic, args: []string{"--server", "tableau"}, code: exitOK, keepsB64: true},
		{name: "log level from file", config: `{"log": {"level": "debug"}}`, code: exitOK, wantStderr: []string{"[DEBUG]"}},
		{name: "env overrides file", config: `{"log": {"level": "debug"}}`, env: "error", code: exitOK, noStderr: []string{"[DEBUG]"}},
		{name: "bad env level", config: `{}`, env: "loud", code: exitFail, wantStderr: []string{"MCPX_LOG_LEVEL", `"loud" is not a log level`}},
		{name: "unknown key", config: "{\n  \"pipeline\": {\"layer\": {}}\n}", code: exitFail, wantStderr: []string{"mcpx.json", "line 2, column 16", "pipeline.layer", `unknown field "layer"`}},
		{name: "unknown layer", config: `{"pipeline": {"layers": {"magic": {}}}}`, code: exitFail, wantStderr: []string{`unknown layer "magic"`}},
		{name: "bad layer option", config: `{"pipeline": {"layers": {"sizenet": {"max_inline": 5}}}}`, code: exitFail, wantStderr: []string{"sizenet", "max_inline"}},
		{name: "wrong type", config: `{"log": {"level": 3}}`, code: exitFail, wantStderr: []string{"mcpx.json", "log.level"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			t.Setenv("MCPX_LOG_LEVEL", tt.env)
			args := append([]string{"transform", "--store", t.TempDir(), "--config", write(t, tt.config)}, tt.args...)
			got := runCLI(t, bytes.NewReader(raw), args...)
			if got.code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", got.code, tt.code, got.stderr)
			}
			if tt.code != exitOK {
				if got.stdout != "" {
					t.Errorf("stdout %q, want nothing", got.stdout)
				}
			} else if kept := strings.Contains(got.stdout, b64); kept != tt.keepsB64 {
				t.Errorf("base64 kept = %v, want %v:\n%s", kept, tt.keepsB64, got.stdout)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(got.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, got.stderr)
				}
			}
			for _, w := range tt.noStderr {
				if strings.Contains(got.stderr, w) {
					t.Errorf("stderr has %q:\n%s", w, got.stderr)
				}
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		isolate(t)
		got := runCLI(t, bytes.NewReader(raw), "transform", "--config", filepath.Join(t.TempDir(), "nope.json"))
		if got.code != exitFail || !strings.Contains(got.stderr, "nope.json") {
			t.Errorf("exit code %d, stderr %q; want 1 naming the file", got.code, got.stderr)
		}
	})
	t.Run("relative store.dir", func(t *testing.T) {
		isolate(t)
		p := write(t, `{"store": {"dir": "artifacts-here"}}`)
		got := runCLI(t, bytes.NewReader(raw), "transform", "--config", p)
		if got.code != exitOK {
			t.Fatalf("exit code %d; stderr:\n%s", got.code, got.stderr)
		}
		id := artifactOf(t, got.stdout)
		ls := runCLI(t, nil, "artifacts", "ls", "--store", filepath.Join(filepath.Dir(p), "artifacts-here"))
		if !strings.Contains(ls.stdout, id) {
			t.Errorf("store.dir relative to the config file does not list %s:\n%s", id, ls.stdout)
		}
	})
}

// TestExampleConfig keeps examples/config/pipeline.json valid: it loads,
// every layer option it sets builds, and its tableau rule applies.
func TestExampleConfig(t *testing.T) {
	isolate(t)
	const path = "../../../../examples/config/pipeline.json"
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Pipeline.Servers) == 0 {
		t.Fatal("the example sets no per-server options")
	}
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Config: cfg.Pipeline})
	if err != nil {
		t.Fatal(err)
	}
	tools := 0
	for server, sc := range cfg.Pipeline.Servers {
		if err := eng.Validate(server, "any_tool"); err != nil {
			t.Errorf("server %q: %v", server, err)
		}
		for tool := range sc.Tools {
			tools++
			if err := eng.Validate(server, tool); err != nil {
				t.Errorf("server %q tool %q: %v", server, tool, err)
			}
		}
	}
	if tools == 0 {
		t.Error("the example sets no per-tool options")
	}

	got := runCLI(t, nil, "transform", "--config", path, "--store", t.TempDir(),
		"--server", "tableau", "--tool", "download_workbook", "../../../../examples/quickstart/tableau_download_workbook.json")
	if got.code != exitOK {
		t.Fatalf("exit code %d; stderr:\n%s", got.code, got.stderr)
	}
	if !strings.Contains(got.stdout, `Downloaded workbook 'Sales Dashboard' as PDF`) {
		t.Errorf("the download_workbook rule's summary is missing:\n%s", got.stdout)
	}
}

// TestQuickstartExample runs the README's first command on the committed
// example and checks the PDF comes back byte for byte.
func TestQuickstartExample(t *testing.T) {
	isolate(t)
	const path = "../../../../examples/quickstart/tableau_download_workbook.json"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	var payload struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("example is not a one-block result: %v", err)
	}
	if err := json.Unmarshal([]byte(res.Content[0].Text), &payload); err != nil {
		t.Fatal(err)
	}
	pdf, err := base64.StdEncoding.DecodeString(payload.Content)
	if err != nil || !bytes.HasPrefix(pdf, []byte("%PDF-1.4")) || !bytes.HasSuffix(pdf, []byte("%%EOF\n")) {
		t.Fatalf("example payload is not a base64 PDF (%v)", err)
	}

	got := runCLI(t, nil, "transform", "--server", "tableau", "--tool", "download_workbook", path)
	if got.code != exitOK || got.stderr != "" {
		t.Fatalf("exit code %d; stderr:\n%s", got.code, got.stderr)
	}
	if strings.Contains(got.stdout, payload.Content[:100]) {
		t.Errorf("output still holds the base64")
	}
	var out struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &out); err != nil || len(out.Content) != 1 {
		t.Fatalf("output is not a one-block result (%v): %s", err, got.stdout)
	}
	var ref struct {
		Content struct {
			Artifact engine.ArtifactRef `json:"artifact"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(out.Content[0].Text), &ref); err != nil {
		t.Fatal(err)
	}
	a := ref.Content.Artifact
	// The model reads a compact ref; the name is in the full ref in _meta.
	name := gjson.Get(got.stdout, `_meta.mcpx/artifacts.0.artifact.filename`).String()
	if a.MIMEType != "application/pdf" || a.SizeBytes != int64(len(pdf)) || name != "Sales Dashboard.pdf" {
		t.Errorf("ref %+v named %q, want the %d-byte PDF 'Sales Dashboard.pdf'", a, name, len(pdf))
	}
	back := runCLI(t, nil, "artifacts", "get", a.ID)
	if back.code != exitOK || back.stdout != string(pdf) {
		t.Errorf("artifacts get %s: exit %d, %d bytes; want the %d PDF bytes", a.ID, back.code, len(back.stdout), len(pdf))
	}
}

// TestReadAll checks that a regular file is read into a buffer sized from
// Stat (one allocation, no growth), from its current offset, and that pipes
// and other readers are read whole.
func TestReadAll(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16+3) // 1 MiB + 48 bytes
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("regular file", func(t *testing.T) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got, err := readAll(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, want the file's %d", len(got), len(data))
		}
		if cap(got) != len(data)+1 {
			t.Errorf("cap %d, want %d: the buffer grew instead of being sized from Stat", cap(got), len(data)+1)
		}
		allocs := testing.AllocsPerRun(5, func() {
			if _, err := f.Seek(0, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := readAll(f); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 2 { // the buffer, and os.File.Stat's FileInfo
			t.Errorf("%.0f allocations per read, want at most 2", allocs)
		}
	})
	t.Run("file at an offset", func(t *testing.T) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Seek(100, 0); err != nil {
			t.Fatal(err)
		}
		got, err := readAll(f)
		if err != nil || !bytes.Equal(got, data[100:]) {
			t.Fatalf("read %d bytes (%v), want the %d after offset 100", len(got), err, len(data)-100)
		}
	})
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			w.Write(data)
			w.Close()
		}()
		defer r.Close()
		got, err := readAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(data))
		}
	})
	t.Run("reader", func(t *testing.T) {
		got, err := readAll(bytes.NewReader(data))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(data))
		}
	})
}

// TestTransformRetention: mcpx transform follows store.retention's
// put-time rule: a value over max_artifact_bytes is not stored, and the
// result names the limit instead of dropping it silently.
func TestTransformRetention(t *testing.T) {
	isolate(t)
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"store": {"retention": {"max_artifact_bytes": 1000}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := `{"content":[{"type":"text","text":"` + strings.Repeat("0123456789", 3000) + `"}]}`
	got := runCLI(t, strings.NewReader(in), "transform", "--store", dir, "--config", cfg)
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	if !strings.Contains(got.stdout, "not_stored") || !strings.Contains(got.stdout, "1000") || strings.Contains(got.stdout, strings.Repeat("0123456789", 100)) {
		t.Errorf("the refused value is not named with its limit, or kept whole:\n%.600s", got.stdout)
	}
	ls := runCLI(t, nil, "artifacts", "ls", "--store", dir, "--json")
	if strings.TrimSpace(ls.stdout) != "" {
		t.Errorf("an artifact over max_artifact_bytes was stored: %s", ls.stdout)
	}
}

// TestTransformSharedInput: a result of more than sharedReadMin bytes, read
// from a file (argument or stdin) into a memfd whose pages its JSON-in-text
// payload shares, transforms as the same bytes from a pipe do, and stores
// the file byte-exact.
func TestTransformSharedInput(t *testing.T) {
	isolate(t)
	pdf := bytes.Repeat(samplePDF(), sharedReadMin/1000)
	raw := tableauResult(t, pdf)
	if len(raw) <= sharedReadMin {
		t.Fatalf("result of %d bytes, want over %d", len(raw), sharedReadMin)
	}
	file := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// The PDF's content summary must not reach its time cap (250 ms by
	// default) in one run and not another on a loaded machine: the runs
	// would differ by "partial": "time".
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"pipeline": {"inspect": {"timeout_ms": 600000}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, tc := range []struct {
		name string
		in   func(t *testing.T) io.Reader
		args []string
	}{
		{"pipe", func(*testing.T) io.Reader { return bytes.NewReader(raw) }, nil},
		{"file argument", func(*testing.T) io.Reader { return nil }, []string{file}},
		{"stdin redirected from a file", func(t *testing.T) io.Reader {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}, nil},
	} {
		storeDir := t.TempDir()
		args := append([]string{"transform", "--config", cfg, "--store", storeDir, "--server", "tableau", "--tool", "download_workbook"}, tc.args...)
		got := runCLI(t, tc.in(t), args...)
		if got.code != exitOK || got.stderr != "" {
			t.Fatalf("%s: exit code %d; stderr:\n%s", tc.name, got.code, got.stderr)
		}
		id := artifactOf(t, got.stdout)
		back := runCLI(t, nil, "artifacts", "get", "--store", storeDir, id)
		if back.code != exitOK || !bytes.Equal([]byte(back.stdout), pdf) {
			t.Fatalf("%s: artifacts get %s: exit %d, %d bytes, want the %d original bytes", tc.name, id, back.code, len(back.stdout), len(pdf))
		}
		outs = append(outs, got.stdout)
	}
	for i, o := range outs[1:] {
		if o != outs[0] {
			t.Errorf("output %d differs from the pipe's:\n%s\n%s", i+1, o, outs[0])
		}
	}
}
