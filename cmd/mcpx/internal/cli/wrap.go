package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	gatewayconfig "github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store"
)

var wrapCmd = command{
	name:     "wrap",
	brief:    "serve one stdio MCP server through mcpx: wrap -- COMMAND",
	synopsis: "[--name NAME] [--timeout DURATION] [--config FILE] [--store DIR] [--preset NAME]... [--plugin FILE.wasm]... [--plugins DIR] -- COMMAND [ARGS...]",
	about: `
Wrap serves one stdio MCP server over stdio, with mcpx's defaults: the
one-liner for an existing Claude Desktop entry. Put "mcpx wrap --" in front
of the entry's command and arguments; its tools keep their names, and every
result passes through the layer chain (base64 blobs and oversized text
become artifacts in the default store).

--name names the server: the prefix of its artifact ids, the key of its
per-server settings (pipeline.servers.NAME, presets, plugins). It defaults
to the command's base name (node, npx, ...), so give one for servers run
by an interpreter or a launcher. The server gets mcpx's whole environment
(the client's "env" for the entry is meant for it).

--timeout bounds each request to the server (a Go duration: "90s",
"5m"); a tool that takes longer fails with a timeout error. It defaults to
the config entry's "timeout" (below), else 60s.

--config adds a config file's store, pipeline, log and serve.limits
sections, and its mcpServers entry named NAME, if any: that entry's "env"
(added to mcpx's environment), "cwd", "timeout" and "mcpx" section (layers,
tools, startup_timeout, roots, ...) apply to the wrapped command. Its
"command", "args", "url", "type", "inherit_env" and "disabled" do not:
COMMAND runs instead, with mcpx's whole environment. The entry must be
valid as serve reads it (a "command" or a "url"). Other entries are
ignored.

--preset runs a built-in WASM preset on every result of the server (presets
already run for servers whose names contain theirs: a server named
tableau-mcp gets the tableau preset without it); --plugin and --plugins add
WASM custom transformers. A --plugins folder is watched: NAME.wasm serves
the server NAME unless a NAME.json beside it names the servers and tools,
and a new or changed file is swapped in without a restart. Plugins, folders
and sidecars are documented in docs/plugins.md; "mcpx plugin new
--server NAME" writes a plugin project with its NAME.json.`,
	example: `
mcpx wrap -- npx -y @modelcontextprotocol/server-everything
mcpx wrap --name files --timeout 3m -- npx -y @modelcontextprotocol/server-filesystem@2026.8.31 ~/reports
mcpx wrap --store /tmp/artifacts -- node server.js --stdio
mcpx wrap --name bi --config mcpx.json -- ./bi-server --stdio
mcpx wrap --preset tableau -- ./bi-server --stdio

In Claude Desktop's config:
  "tableau": {"command": "mcpx", "args": ["wrap", "--name", "tableau", "--", "tableau-mcp"]}`,
}

// runWrap is "mcpx wrap".
func (p program) runWrap(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := wrapCmd
	fs := newFlagSet(c)
	var (
		o       common
		plug    pluginFlags
		name    string
		timeout durationFlag
	)
	o.register(fs, p.stores)
	plug.register(fs)
	fs.StringVar(&name, "name", "", "call the server `NAME`: its artifact ids' prefix and the key of its\nsettings (default: the command's base name)")
	fs.Var(&timeout, "timeout", "bound each request to the server by `DURATION` (\"90s\", \"5m\", or seconds)\n(default: the --config entry's \"timeout\", else 60s)")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		return usageError(stderr, c, errors.New("want the upstream's command after --"))
	}
	if name == "" {
		name = wrapName(pos[0])
	} else if err := (gatewayconfig.ServerConfig{Command: pos[0]}).Validate(name); err != nil {
		return usageError(stderr, c, fmt.Errorf("--name %q: %w", name, err))
	}
	cfg, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	stderr = maskSecrets(cfg, log, stderr)
	if code := plug.applyOr(c, &cfg.Pipeline, stderr); code >= 0 {
		return code
	}
	srv, found := wrapServer(name, pos, cfg.MCPServers, time.Duration(timeout))
	if !found && len(cfg.MCPServers) > 0 {
		log.Warn("the config's mcpServers has no entry for the wrapped server; its entries are ignored", "name", name, "config", o.configPath)
	}
	cfg.MCPServers = map[string]gatewayconfig.ServerConfig{name: srv}
	return p.gateway(c, cfg, o, "", false, log, stdin, stdout, stderr)
}

// wrapServer is the server wrap runs: command (with its arguments) named
// name, with what the entry of that name in entries sets besides how to
// start it (env, cwd, timeout, the mcpx section), and timeout when it is
// set. found says whether entries had one.
func wrapServer(name string, command []string, entries map[string]gatewayconfig.ServerConfig, timeout time.Duration) (s gatewayconfig.ServerConfig, found bool) {
	e, found := entries[name]
	if found {
		s = gatewayconfig.ServerConfig{Env: e.Env, Cwd: e.Cwd, Timeout: e.Timeout, Mcpx: e.Mcpx}
	}
	s.Command, s.Args = command[0], command[1:]
	// The environment mcpx got was made for this one server (the
	// client's "env" for its entry): pass it on whole.
	s.InheritEnv = true
	if timeout > 0 {
		s.Timeout = store.Duration(timeout)
	}
	return s, found
}

// durationFlag is a positive duration flag, unset by default: "90s", or
// a number of seconds as the config's "timeout" takes.
type durationFlag time.Duration

func (d *durationFlag) String() string {
	if d == nil || *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}

func (d *durationFlag) Set(s string) error {
	var v store.Duration
	q := s
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		q = strconv.Quote(s)
	}
	if err := v.UnmarshalJSON([]byte(q)); err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("want a positive duration, got %q", s)
	}
	*d = durationFlag(v)
	return nil
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
