package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// TestLoadResolvesPathsFromTheConfigFolder: every relative path of a
// config file is taken from the file's folder, whatever the current folder
// ("cd / && mcpx transform --config …/mcpx.json" failed with
// "stat /plugins").
func TestLoadResolvesPathsFromTheConfigFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "conf", "mcpx.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Dir(file)
	const in = `{
  "store": {"dir": "artifacts"},
  "pipeline": {
    "layers": {"custom": {"dir": "plugins", "plugins": ["a.wasm", {"file": "sub/b.wasm", "config": {"big": 12345678901234567890}}, "/abs/c.wasm"]},
               "sizenet": {"dir": "not-a-path-of-ours"}},
    "servers": {"helpdesk": {"layers": {"custom": {"plugins": ["s.wasm"]}},
                             "tools": {"get_*": {"layers": {"custom": {"dir": "../tool-plugins"}}}}}}
  },
  "mcpServers": {
    "local":  {"command": "./bin/server", "cwd": "work", "mcpx": {"layers": {"custom": {"dir": "up"}},
               "tools": {"t": {"layers": {"custom": {"plugins": [{"file": "t.wasm"}]}}}}}},
    "bare":   {"command": "node", "args": ["server.js"]},
    "nocwd":  {"command": "scripts/run.sh"},
    "remote": {"url": "https://example.com/mcp"}
  }
}`
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir("/")
	f, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	j := func(p ...string) string { return filepath.Join(append([]string{base}, p...)...) }
	custom := gjson.ParseBytes(f.Pipeline.Layers["custom"])
	tool := gjson.ParseBytes(f.Pipeline.Servers["helpdesk"].Tools["get_*"].Layers["custom"])
	checks := []struct{ name, got, want string }{
		{"store.dir", f.Store.Dir, j("artifacts")},
		{"custom.dir", custom.Get("dir").String(), j("plugins")},
		{"custom.plugins.0", custom.Get("plugins.0").String(), j("a.wasm")},
		{"custom.plugins.1.file", custom.Get("plugins.1.file").String(), j("sub", "b.wasm")},
		{"custom.plugins.2 (absolute)", custom.Get("plugins.2").String(), "/abs/c.wasm"},
		{"a large integer of a plugin's config", custom.Get("plugins.1.config.big").Raw, "12345678901234567890"},
		{"another layer's dir is not ours", gjson.GetBytes(f.Pipeline.Layers["sizenet"], "dir").String(), "not-a-path-of-ours"},
		{"servers.helpdesk custom.plugins", gjson.GetBytes(f.Pipeline.Servers["helpdesk"].Layers["custom"], "plugins.0").String(), j("s.wasm")},
		{"servers.helpdesk.tools custom.dir", tool.Get("dir").String(), filepath.Join(dir, "tool-plugins")},
		{"mcpServers.local.cwd", f.MCPServers["local"].Cwd, j("work")},
		{"mcpServers.local.command (from its cwd)", f.MCPServers["local"].Command, j("work", "bin", "server")},
		{"mcpServers.local.mcpx custom.dir", gjson.GetBytes(f.MCPServers["local"].Mcpx.Layers["custom"], "dir").String(), j("up")},
		{"mcpServers.local.mcpx.tools custom.plugins", gjson.GetBytes(f.MCPServers["local"].Mcpx.Tools["t"].Layers["custom"], "plugins.0.file").String(), j("t.wasm")},
		{"mcpServers.bare.command (on PATH)", f.MCPServers["bare"].Command, "node"},
		{"mcpServers.bare.args (opaque)", f.MCPServers["bare"].Args[0], "server.js"},
		{"mcpServers.nocwd.command", f.MCPServers["nocwd"].Command, j("scripts", "run.sh")},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestDecodeKeepsPathsAsWritten: without a file there is no folder to
// resolve from; Decode leaves paths alone.
func TestDecodeKeepsPathsAsWritten(t *testing.T) {
	f, err := Decode([]byte(`{"store": {"dir": "a"}, "pipeline": {"layers": {"custom": {"dir": "p"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Store.Dir != "a" || gjson.GetBytes(f.Pipeline.Layers["custom"], "dir").String() != "p" {
		t.Fatalf("got %q and %s", f.Store.Dir, f.Pipeline.Layers["custom"])
	}
}

// TestLoadLeavesMalformedCustomOptions: options of the wrong shape reach
// the layer, which rejects them with its own message.
func TestLoadLeavesMalformedCustomOptions(t *testing.T) {
	for _, opts := range []string{`[]`, `{"dir": 3}`, `{"plugins": "x.wasm"}`, `{"plugins": [{"file": 1}]}`} {
		file := filepath.Join(t.TempDir(), "c.json")
		if err := os.WriteFile(file, []byte(`{"pipeline": {"layers": {"custom": `+opts+`}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Load(file)
		if err != nil {
			t.Fatalf("%s: %v", opts, err)
		}
		if got := string(f.Pipeline.Layers["custom"]); got != opts {
			t.Errorf("options %s became %s", opts, got)
		}
	}
}
