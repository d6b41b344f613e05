package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// cli is the outcome of one run.
type cli struct {
	code           int
	stdout, stderr string
}

// runCLI calls run with args and stdin (nil: empty) and captures its output.
func runCLI(t *testing.T, stdin io.Reader, args ...string) cli {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var stdout, stderr bytes.Buffer
	code := Run(args, stdin, &stdout, &stderr)
	return cli{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// isolate points every default the CLI reads at a fresh temp folder, so a
// test never touches the user's store or inherits their log level.
func isolate(t *testing.T) (home string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("MCPX_HOME", home)
	t.Setenv("MCPX_LOG_LEVEL", "")
	t.Setenv(envConfig, "")
	t.Setenv("TMPDIR", t.TempDir())
	return home
}

// samplePDF is a small PDF-like byte string: a real header, binary bytes
// and enough body that its base64 is well over 1000 characters.
func samplePDF() []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n")
	for i := 0; b.Len() < 1500; i++ {
		fmt.Fprintf(&b, "%% sales row %04d: region %c, revenue %d\n", i, 'A'+rune(i%26), i*7919)
	}
	b.WriteString("trailer\n<< /Root 1 0 R >>\n%%EOF\n")
	return b.Bytes()
}

// tableauResult wraps pdf as Tableau's download_workbook does: a JSON
// object serialized into a text content block.
func tableauResult(t *testing.T, pdf []byte) []byte {
	t.Helper()
	payload, err := json.Marshal(map[string]string{"content": base64.StdEncoding.EncodeToString(pdf), "name": "Sales"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": string(payload)}}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// artifactOf returns the ArtifactRef id that replaced the payload's
// "content" field in a transformed Tableau result.
func artifactOf(t *testing.T, out string) string {
	t.Helper()
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("output is not a one-block CallToolResult (%v): %s", err, out)
	}
	var payload struct {
		Content struct {
			Artifact struct{ ID string } `json:"artifact"`
			Summary  string              `json:"summary"`
		} `json:"content"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].Text), &payload); err != nil {
		t.Fatalf("text block is not the payload with a ref (%v): %s", err, res.Content[0].Text)
	}
	if payload.Content.Artifact.ID == "" || payload.Content.Summary == "" || payload.Name != "Sales" {
		t.Fatalf("payload has no artifact ref and summary, or lost its name: %s", res.Content[0].Text)
	}
	return payload.Content.Artifact.ID
}

// notAFolder returns a path under a regular file, where no store can be.
func notAFolder(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(f, "store")
}

func TestRunDispatch(t *testing.T) {
	isolate(t)
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStderr []string // usage errors: on stderr, nothing on stdout
		wantStdout []string // help asked for: on stdout, nothing on stderr
	}{
		{name: "no args", args: nil, code: exitUsage, wantStderr: []string{"Usage:", "transform", "artifacts ls", "version"}},
		{name: "help flag", args: []string{"--help"}, code: exitOK, wantStdout: []string{"Commands:"}},
		{name: "short help", args: []string{"-h"}, code: exitOK, wantStdout: []string{"Commands:"}},
		{name: "help command", args: []string{"help"}, code: exitOK, wantStdout: []string{"Commands:"}},
		{name: "help of a command", args: []string{"help", "artifacts", "get"}, code: exitOK, wantStdout: []string{"Usage: mcpx artifacts get"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitUsage, wantStderr: []string{`mcpx: unknown command "frobnicate"`}},
		{name: "artifacts alone", args: []string{"artifacts"}, code: exitUsage, wantStderr: []string{"Usage: mcpx artifacts <ls|get|rm|gc|fsck|query|search>"}},
		{name: "artifacts help", args: []string{"artifacts", "--help"}, code: exitOK, wantStdout: []string{"Usage: mcpx artifacts <ls|get|rm|gc|fsck|query|search>"}},
		{name: "artifacts unknown", args: []string{"artifacts", "cp"}, code: exitUsage, wantStderr: []string{`mcpx artifacts: unknown command "cp"`}},
		{name: "plugin alone", args: []string{"plugin"}, code: exitUsage, wantStderr: []string{"Usage: mcpx plugin <test|new>"}},
		{name: "plugin help", args: []string{"plugin", "--help"}, code: exitOK, wantStdout: []string{"Usage: mcpx plugin <test|new>", "new", "test"}},
		{name: "plugin unknown", args: []string{"plugin", "run"}, code: exitUsage, wantStderr: []string{`mcpx plugin: unknown command "run"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, nil, tt.args...)
			if got.code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", got.code, tt.code, got.stderr)
			}
			if tt.wantStdout == nil && got.stdout != "" {
				t.Errorf("stdout %q, want nothing", got.stdout)
			}
			if tt.wantStderr == nil && got.stderr != "" {
				t.Errorf("stderr %q, want nothing", got.stderr)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(got.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, got.stderr)
				}
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(got.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, got.stdout)
				}
			}
		})
	}
}

// TestHelp checks that each command's --help (and -h) exits 0 with its
// usage, its flags and an example on stdout (asked for, help is the
// output), and nothing on stderr.
func TestHelp(t *testing.T) {
	isolate(t)
	tests := []struct {
		name  string
		args  []string
		flags []string
	}{
		{name: "transform", args: []string{"transform"}, flags: []string{"--config FILE", "--store DIR", "--server NAME", "--tool NAME", "--stats", `(default "local")`}},
		{name: "artifacts ls", args: []string{"artifacts", "ls"}, flags: []string{"--store DIR", "--json"}},
		{name: "artifacts get", args: []string{"artifacts", "get"}, flags: []string{"--store DIR", "-o FILE"}},
		{name: "artifacts rm", args: []string{"artifacts", "rm"}, flags: []string{"--store DIR"}},
		{name: "version", args: []string{"version"}},
		{name: "transform", args: []string{"transform"}, flags: []string{"--plugin FILE.wasm", "--plugins DIR", "--preset NAME", "docs/plugins.md", "NAME.json"}},
		{name: "wrap", args: []string{"wrap"}, flags: []string{"--plugin FILE.wasm", "--plugins DIR", "--preset NAME", "docs/plugins.md", "NAME.json", "--name NAME", "--timeout DURATION", "mcpServers entry named NAME"}},
		{name: "serve", args: []string{"serve"}, flags: []string{"--plugins DIR", "--listen ADDR", "docs/plugins.md"}},
		{name: "plugin new", args: []string{"plugin", "new"}, flags: []string{"--lang", "--server NAME", "--sdk DIR"}},
		{name: "plugin test", args: []string{"plugin", "test"}, flags: []string{"--server NAME", "--dump-request"}},
	}
	for _, tt := range tests {
		for _, h := range []string{"--help", "-h"} {
			t.Run(tt.name+" "+h, func(t *testing.T) {
				got := runCLI(t, nil, append(tt.args, h)...)
				if got.code != exitOK || got.stderr != "" {
					t.Fatalf("exit code %d, stderr %q; want 0 and nothing; stdout:\n%s", got.code, got.stderr, got.stdout)
				}
				for _, w := range append([]string{"Usage: mcpx " + tt.name, "Example:\n  mcpx " + tt.name}, tt.flags...) {
					if !strings.Contains(got.stdout, w) {
						t.Errorf("help lacks %q:\n%s", w, got.stdout)
					}
				}
			})
		}
	}
}

// TestHelpListsEveryCommand walks the command table: "mcpx --help"
// names every command with its brief (it once left out artifacts query,
// search, gc and fsck, what the README sells as what the model can still
// do), its group's help names it, and the command answers --help.
func TestHelpListsEveryCommand(t *testing.T) {
	isolate(t)
	top := runCLI(t, nil, "--help")
	for _, e := range (program{}).table() {
		name := e.cmd.name
		if e.cmd.brief == "" {
			t.Errorf("%s has no brief for the help", name)
		}
		if !regexp.MustCompile(`\n  ` + regexp.QuoteMeta(name) + ` +` + regexp.QuoteMeta(e.cmd.brief) + `\n`).MatchString(top.stdout) {
			t.Errorf("mcpx --help lacks %s (%s):\n%s", name, e.cmd.brief, top.stdout)
		}
		if group, last, ok := strings.Cut(name, " "); ok {
			if got := runCLI(t, nil, group, "--help"); !strings.Contains(got.stdout, "  "+last+" ") {
				t.Errorf("mcpx %s --help lacks %s:\n%s", group, last, got.stdout)
			}
		}
		got := runCLI(t, nil, append(strings.Fields(name), "--help")...)
		if got.code != exitOK || !strings.HasPrefix(got.stdout, "Usage: mcpx "+name) {
			t.Errorf("mcpx %s --help: exit code %d, stdout %q", name, got.code, got.stdout)
		}
	}
}

// TestUsageErrors checks that bad flags and arguments exit 2 with one
// error line and a pointer to --help.
func TestUsageErrors(t *testing.T) {
	isolate(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "transform unknown flag", args: []string{"transform", "--bogus"}, want: "mcpx transform: flag provided but not defined: -bogus"},
		{name: "transform flag without value", args: []string{"transform", "--server"}, want: "mcpx transform: flag needs an argument: -server"},
		{name: "transform two files", args: []string{"transform", "a.json", "b.json"}, want: "want at most one FILE"},
		{name: "transform empty server", args: []string{"transform", "--server", ""}, want: "--server must not be empty"},
		{name: "ls unknown flag", args: []string{"artifacts", "ls", "-x"}, want: "mcpx artifacts ls: flag provided but not defined: -x"},
		{name: "ls argument", args: []string{"artifacts", "ls", "extra"}, want: `unexpected argument "extra"`},
		{name: "get without id", args: []string{"artifacts", "get"}, want: "want one artifact ID, got 0"},
		{name: "get two ids", args: []string{"artifacts", "get", "a_1", "b_2"}, want: "want one artifact ID, got 2"},
		{name: "get -o without value", args: []string{"artifacts", "get", "a_1", "-o"}, want: "flag needs an argument: -o"},
		{name: "rm without id", args: []string{"artifacts", "rm"}, want: "want at least one artifact ID"},
		{name: "rm unknown flag", args: []string{"artifacts", "rm", "--force", "a_1"}, want: "flag provided but not defined: -force"},
		{name: "version argument", args: []string{"version", "now"}, want: `unexpected argument "now"`},
		{name: "version flag", args: []string{"version", "--json"}, want: "flag provided but not defined: -json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, nil, tt.args...)
			if got.code != exitUsage {
				t.Errorf("exit code %d, want %d; stderr:\n%s", got.code, exitUsage, got.stderr)
			}
			if got.stdout != "" {
				t.Errorf("stdout %q, want nothing", got.stdout)
			}
			if !strings.Contains(got.stderr, tt.want) || !strings.Contains(got.stderr, "--help' for usage") {
				t.Errorf("stderr lacks %q and the --help hint:\n%s", tt.want, got.stderr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	got := runCLI(t, nil, "version")
	if got.code != exitOK || got.stderr != "" {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if !strings.HasPrefix(got.stdout, "mcpx ") || !strings.Contains(got.stdout, " go1.") || strings.Count(got.stdout, "\n") != 1 {
		t.Errorf("version line %q, want one line \"mcpx <version> ... go1.N os/arch\"", got.stdout)
	}
}

func TestVersionLine(t *testing.T) {
	t.Parallel()
	tail := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{name: "no build info", info: nil, want: "mcpx (devel)" + tail},
		{name: "devel", info: &debug.BuildInfo{GoVersion: runtime.Version(), Main: debug.Module{Version: "(devel)"}}, want: "mcpx (devel)" + tail},
		{
			name: "release with vcs",
			info: &debug.BuildInfo{GoVersion: runtime.Version(), Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "1a2b3c4d"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
			}},
			want: "mcpx v0.3.0 (commit 1a2b3c4d, modified, 2026-01-02T03:04:05Z)" + tail,
		},
		{
			name: "clean tree",
			info: &debug.BuildInfo{GoVersion: runtime.Version(), Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "1a2b3c4d"}, {Key: "vcs.modified", Value: "false"},
			}},
			want: "mcpx v0.3.0 (commit 1a2b3c4d)" + tail,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionLine(tt.info); got != tt.want {
				t.Errorf("versionLine = %q, want %q", got, tt.want)
			}
		})
	}
}
