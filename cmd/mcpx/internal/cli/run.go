// Package cli is mcpx's command line, one file per command; Run is all
// that cmd/mcpx's main calls.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// Exit codes.
const (
	exitOK    = 0 // success, or -h/--help (help goes to stdout)
	exitFail  = 1 // a runtime failure
	exitUsage = 2 // bad flags or arguments (as flag.ExitOnError); usage to stderr
)

// envLogLevel overrides the configured log level.
const envLogLevel = "MCPX_LOG_LEVEL"

// envConfig names the config file of a command run without --config, so
// an MCP client's entry needs no flags: the inspector CLI, for one, takes
// "mcpx serve --config FILE" as a --config of its own. The flag wins.
const envConfig = "MCPX_CONFIG"

// topAbout and topEnvironment frame the command list of "mcpx --help".
const (
	topAbout = `mcpx keeps binary and oversized MCP tool output out of an LLM's context.
It runs a chain of layers over each tool result, moves base64 blobs and
oversized text into an artifact store, and leaves a compact
{"artifact": {...}, "summary": "..."} in their place.

Usage:
  mcpx <command> [flags] [arguments]
`
	topEnvironment = `
Run "mcpx <command> --help" for a command's flags and an example.

Environment:
  MCPX_CONFIG      the config file of a command run without --config
  MCPX_HOME        the default store is $MCPX_HOME/artifacts
  MCPX_LOG_LEVEL   trace, debug, info, warn (default), error or off
`
)

// groupAbout is what "mcpx GROUP --help" says above the list of a group
// of commands of two words (artifacts, plugin); false for any other word.
func groupAbout(group string) (string, bool) {
	switch group {
	case "artifacts":
		return "Artifacts reads, searches and keeps the artifact store that transform,\nserve and wrap write to.", true
	case "plugin":
		return "Plugin writes and tries WASM plugins (README.md#wasm-plugins).", true
	}
	return "", false
}

// entry is one command of the table: its help, the other names of its
// last word ("list" for "artifacts ls"), and what runs it.
type entry struct {
	cmd     command
	aliases []string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// table is every command, in the order "mcpx --help" lists them; run
// dispatches by it, so no command runs that the help does not name.
func (p program) table() []entry {
	noStdin := func(f func([]string, io.Writer, io.Writer) int) func([]string, io.Reader, io.Writer, io.Writer) int {
		return func(args []string, _ io.Reader, stdout, stderr io.Writer) int { return f(args, stdout, stderr) }
	}
	return []entry{
		{cmd: transformCmd, run: p.runTransform},
		{cmd: lsCmd, aliases: []string{"list"}, run: noStdin(p.runArtifactsLs)},
		{cmd: getCmd, run: noStdin(p.runArtifactsGet)},
		{cmd: rmCmd, aliases: []string{"delete"}, run: noStdin(p.runArtifactsRm)},
		{cmd: gcCmd, run: noStdin(p.runArtifactsGc)},
		{cmd: fsckCmd, run: noStdin(p.runArtifactsFsck)},
		{cmd: queryCmd, run: noStdin(p.runArtifactsQuery)},
		{cmd: searchCmd, run: noStdin(p.runArtifactsSearch)},
		{cmd: serveCmd, run: p.runServe},
		{cmd: wrapCmd, run: p.runWrap},
		{cmd: pluginTestCmd, run: runPluginTest},
		{cmd: pluginNewCmd, run: runPluginNew},
		{cmd: versionCmd, run: noStdin(runVersion)},
	}
}

// topUsage is "mcpx --help": every command of the table with its brief.
func (p program) topUsage() string {
	var b strings.Builder
	b.WriteString(topAbout)
	b.WriteString("\nCommands:\n")
	for _, e := range p.table() {
		fmt.Fprintf(&b, "  %-17s %s\n", e.cmd.name, e.cmd.brief)
	}
	b.WriteString(topEnvironment)
	return b.String()
}

// groupUsage is "mcpx GROUP --help": the group's commands by their last
// word.
func (p program) groupUsage(group string) string {
	var names []string
	var list strings.Builder
	for _, e := range p.table() {
		if last, ok := strings.CutPrefix(e.cmd.name, group+" "); ok {
			names = append(names, last)
			fmt.Fprintf(&list, "  %-7s %s\n", last, e.cmd.brief)
		}
	}
	about, _ := groupAbout(group)
	return fmt.Sprintf("Usage: mcpx %s <%s> [flags] [arguments]\n\n%s\n\nCommands:\n%s\nRun \"mcpx %s <command> --help\" for its flags and an example.\n",
		group, strings.Join(names, "|"), about, list.String(), group)
}

// Run is the whole CLI: it runs the subcommand named by args[0] and
// returns the process exit code. A config's store section other than a
// folder opens a backend the binary links (store.DefaultBackends: the
// S3 store registers itself there).
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return program{stores: store.DefaultBackends()}.run(args, stdin, stdout, stderr)
}

// program is the CLI with the store backends it opens.
type program struct{ stores *store.Backends }

// run runs the command args name: one word, or a group's two.
func (p program) run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, p.topUsage())
		return exitUsage
	}
	word, rest := args[0], args[1:]
	switch word {
	case "help":
		if len(rest) > 0 {
			return p.run(append(rest[:len(rest):len(rest)], "--help"), stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, p.topUsage())
		return exitOK
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, p.topUsage())
		return exitOK
	}
	if _, ok := groupAbout(word); ok {
		return p.runGroup(word, rest, stdin, stdout, stderr)
	}
	for _, e := range p.table() {
		if e.cmd.name == word {
			return e.run(rest, stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "mcpx: unknown command %q\nRun 'mcpx --help' for the commands.\n", word)
	return exitUsage
}

// runGroup runs the command of group (artifacts, plugin) args[0] names.
func (p program) runGroup(group string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, p.groupUsage(group))
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, p.groupUsage(group))
		return exitOK
	}
	for _, e := range p.table() {
		if last, ok := strings.CutPrefix(e.cmd.name, group+" "); ok && (last == args[0] || slices.Contains(e.aliases, args[0])) {
			return e.run(args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "mcpx %s: unknown command %q\nRun 'mcpx %s --help' for the commands.\n", group, args[0], group)
	return exitUsage
}

// command describes a subcommand for its --help text.
type command struct {
	name     string // "transform", "artifacts get"
	brief    string // one line in "mcpx --help"
	synopsis string // the arguments after the name
	about    string // what it does; may span lines
	example  string // one or more command lines
}

// newFlagSet returns a FlagSet for c whose errors and usage are printed by
// parse, never by the flag package itself.
func newFlagSet(c command) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpx "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args with fs, letting flags and positional arguments mix
// ("get ID -o FILE"); "--" ends the flags. On -h/--help it prints c's help
// to stdout (asked for, it is the command's output: "mcpx transform --help
// | less" works) and returns exitOK; on a bad flag it prints one error line
// to stderr and returns exitUsage; otherwise it returns the positional
// arguments and -1.
func parse(c command, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) ([]string, int) {
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			printHelp(stdout, c, fs)
			return nil, exitOK
		}
		if err != nil {
			return nil, usageError(stderr, c, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, -1
		}
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
			return append(pos, rest...), -1
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError prints a usage error and returns exitUsage.
func usageError(stderr io.Writer, c command, err error) int {
	fmt.Fprintf(stderr, "mcpx %s: %v\nRun 'mcpx %s --help' for usage.\n", c.name, err, c.name)
	return exitUsage
}

// fail prints a runtime failure as one line and returns exitFail.
func fail(stderr io.Writer, c command, err error) int {
	fmt.Fprintf(stderr, "mcpx %s: %v\n", c.name, oneLine(err.Error()))
	return exitFail
}

// oneLine keeps an error message on one line (a panic's stack, an error
// joined with errors.Join).
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", "")), " ")
}

// printHelp writes c's help: usage line, description, flags, example.
func printHelp(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", strings.TrimSpace("mcpx "+c.name+" "+c.synopsis), strings.TrimSpace(c.about))
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprint(w, "\nFlags:\n")
			first = false
		}
		arg, usage := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		fmt.Fprintf(w, "  %s%s%s\n", dash, f.Name, arg)
		for _, line := range strings.Split(usage, "\n") {
			fmt.Fprintf(w, "        %s\n", line)
		}
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(w, "        (default %q)\n", f.DefValue)
		}
	})
	if c.example != "" {
		fmt.Fprintf(w, "\nExample:\n")
		for _, line := range strings.Split(strings.TrimSpace(c.example), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

// common are the flags every store-using subcommand takes.
type common struct {
	configPath string
	// configFrom is where configPath came from: "--config", envConfig,
	// or "" before resolveConfig, or for none.
	configFrom string
	storeDir   string
	// readOnly opens the store with fsstore's Config.ReadOnly (ls, get).
	readOnly bool
	// stores are the backends a config's store section may name.
	stores *store.Backends
}

func (o *common) register(fs *flag.FlagSet, stores *store.Backends) {
	o.stores = stores
	fs.StringVar(&o.configPath, "config", "", "read the JSON configuration `FILE` (store, pipeline, log sections);\nits relative paths are taken from FILE's folder\n(default: $"+envConfig+", when set)")
	fs.StringVar(&o.storeDir, "store", "", "keep artifacts in the folder `DIR`\n(default: the config's store.dir, else $MCPX_HOME/artifacts,\nelse $XDG_DATA_HOME/mcpx/artifacts, else ~/.local/share/mcpx/artifacts)")
}

// resolveConfig takes the config file from $MCPX_CONFIG when --config
// was not given, and records where it came from.
func (o *common) resolveConfig() {
	switch {
	case o.configFrom != "":
	case o.configPath != "":
		o.configFrom = "--config"
	case os.Getenv(envConfig) != "":
		o.configPath, o.configFrom = os.Getenv(envConfig), "$"+envConfig
	}
}

// setup loads the configuration (--config, else $MCPX_CONFIG, else
// config.Default) and makes the logger, which writes to stderr at the
// level of MCPX_LOG_LEVEL, else of the file, else config.DefaultLogLevel.
func (o *common) setup(stderr io.Writer) (config.File, hclog.Logger, error) {
	o.resolveConfig()
	cfg := config.Default()
	var moved []string // layer options moved to their home (server_layers.go)
	if o.configPath != "" {
		var err error
		if cfg, err = config.Load(o.configPath); err != nil {
			return config.File{}, nil, err
		}
		if moved, err = cfg.MoveServerLayers(); err != nil {
			return config.File{}, nil, fmt.Errorf("config %s: %w", o.configPath, err)
		}
	}
	level := cfg.Log.Level
	if env := os.Getenv(envLogLevel); env != "" {
		if err := config.CheckLevel(env); err != nil {
			return config.File{}, nil, fmt.Errorf("%s: %w", envLogLevel, err)
		}
		level = env
	}
	log := hclog.New(&hclog.LoggerOptions{
		Name:        "mcpx",
		Level:       hclog.LevelFromString(level),
		Output:      stderr,
		DisableTime: true,
	})
	for _, w := range moved {
		log.Warn("config " + o.configPath + ": " + w)
	}
	return cfg, log, nil
}

// artifactStore is what the commands need of an artifact store; the
// file-system store and the S3 store are both one.
type artifactStore interface {
	store.Store
	store.Annotator
	store.Searcher
	store.Collector
	store.AccessLister
}

// openStore opens the store: the file-system store in the folder given by
// --store; else the backend of the config file's store section (store.s3);
// else the file-system store in the config file's store.dir, else in
// fsstore.DefaultDir.
func (o *common) openStore(ctx context.Context, cfg config.File, log hclog.Logger) (artifactStore, error) {
	if o.storeDir == "" {
		kind, section, err := cfg.Store.Backend()
		if err != nil {
			return nil, fmt.Errorf("open artifact store: %w", err)
		}
		if kind != "" {
			return o.openBackend(ctx, kind, section, log.Named("store"))
		}
	}
	dir, err := o.resolveStoreDir(cfg, log)
	if err != nil {
		return nil, err
	}
	st, err := fsstore.Open(ctx, dir, fsstore.Config{Logger: log.Named("store"), ReadOnly: o.readOnly, Text: engine.SearchText(cfg.Pipeline.Inspect)})
	if err != nil {
		return nil, fmt.Errorf("open artifact store: %w", err)
	}
	return st, nil
}

// openBackend opens the store of the config's store.KIND section with
// the backend registered for KIND.
func (o *common) openBackend(ctx context.Context, kind string, section json.RawMessage, log hclog.Logger) (artifactStore, error) {
	b, ok := o.stores.Lookup(kind)
	if !ok {
		return nil, fmt.Errorf("open artifact store: store.%s: %w (this binary has: %s)", kind, errNoBackend, strings.Join(append([]string{"dir"}, o.stores.Kinds()...), ", "))
	}
	st, err := b.Open(ctx, section, store.OpenOptions{Getenv: os.Getenv, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("open artifact store: %w", err)
	}
	as, ok := st.(artifactStore)
	if !ok {
		_ = st.Close(ctx)
		return nil, fmt.Errorf("open artifact store: store.%s: %T lacks annotations, search, retention or access listing", kind, st)
	}
	return as, nil
}

// errNoBackend is a config's store section of a kind no backend this
// binary links registered.
var errNoBackend = errors.New("no store backend of this kind is linked")

// storeWhere names st for messages: its folder, or s3://bucket/prefix.
func storeWhere(st artifactStore) string {
	switch st := st.(type) {
	case *fsstore.Store:
		return st.Dir()
	case interface{ Where() string }:
		return st.Where()
	}
	return fmt.Sprintf("%T", st)
}

// resolveStoreDir returns the store's folder: --store, else the config
// file's store.dir, else fsstore.DefaultDir.
func (o *common) resolveStoreDir(cfg config.File, log hclog.Logger) (string, error) {
	if o.storeDir != "" {
		return o.storeDir, nil
	}
	if cfg.Store.Dir != "" {
		return cfg.Store.Dir, nil
	}
	d, why, err := fsstore.DefaultDir()
	if err != nil {
		return "", fmt.Errorf("default artifact store: %w", err)
	}
	if why != "" {
		log.Info("default artifact store: "+why, "dir", d)
	}
	return d, nil
}

// closeStore closes st, logging a failure: by then the command's output is
// written and the store's data is already durable.
func closeStore(ctx context.Context, st artifactStore, log hclog.Logger) {
	if err := st.Close(ctx); err != nil {
		log.Warn("closing the artifact store", "error", err)
		return
	}
	log.Debug("closed the artifact store")
}
