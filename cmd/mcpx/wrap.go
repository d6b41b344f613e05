package main

import (
	"errors"
	"io"
	"path/filepath"
	"strings"

	"github.com/mcpx-dev/mcpx/gateway"
)

var wrapCmd = command{
	name:     "wrap",
	synopsis: "[--config FILE] [--store DIR] [--preset NAME]... [--plugin FILE.wasm]... [--plugins DIR] -- COMMAND [ARGS...]",
	about: `
Wrap serves one stdio MCP server over stdio, with mcpx's defaults: the
one-liner for an existing Claude Desktop entry. Put "mcpx wrap --" in front
of the entry's command and arguments; its tools keep their names, and every
result passes through the layer chain (base64 blobs and oversized text
become artifacts in the default store).

The server's name (artifact id prefix, per-server config) is the command's
base name. It gets mcpx's whole environment (the client's "env" for the
entry is meant for it). --config adds a config file's store, pipeline, log
and serve.limits sections; its mcpServers are ignored.

--preset runs a built-in WASM preset on every result of the server (presets
already run for servers whose names contain theirs: a server named
tableau-mcp gets the tableau preset without it); --plugin and --plugins add
WASM custom transformers. A --plugins folder is watched: NAME.wasm serves
the server NAME (here the command's base name) unless a NAME.json beside it
names the servers and tools, and a new or changed file is swapped in
without a restart. Plugins, folders and sidecars are documented in
README.md#wasm-plugins; "mcpx plugin new --server NAME" writes a plugin
project with its NAME.json.`,
	example: `
mcpx wrap -- npx -y @modelcontextprotocol/server-everything
mcpx wrap --store /tmp/artifacts -- node server.js --stdio
mcpx wrap --preset tableau -- ./bi-server --stdio

In Claude Desktop's config:
  "tableau": {"command": "mcpx", "args": ["wrap", "--", "tableau-mcp"]}`,
}

// runWrap is "mcpx wrap".
func runWrap(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := wrapCmd
	fs := newFlagSet(c)
	var (
		o    common
		plug pluginFlags
	)
	o.register(fs)
	plug.register(fs)
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		return usageError(stderr, c, errors.New("want the upstream's command after --"))
	}
	cfg, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	stderr = maskSecrets(cfg, log, stderr)
	if code := plug.applyOr(c, &cfg.Pipeline, stderr); code >= 0 {
		return code
	}
	cfg.MCPServers = map[string]gateway.ServerConfig{
		// The environment mcpx got was made for this one server (the
		// client's "env" for its entry): pass it on whole.
		wrapName(pos[0]): {Command: pos[0], Args: pos[1:], InheritEnv: true},
	}
	return serveGateway(c, cfg, o, "", log, stdin, stdout, stderr)
}

// wrapName derives a server name from a command: its base name without
// extension, reduced to the characters server names allow.
func wrapName(command string) string {
	base := strings.TrimSuffix(filepath.Base(command), filepath.Ext(command))
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "upstream"
	}
	return b.String()
}
