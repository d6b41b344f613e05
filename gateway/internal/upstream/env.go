package upstream

import (
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

// InheritedEnv are the variables a stdio upstream gets from mcpx's own
// environment unless its entry sets "inherit_env": true: what a program
// needs to run (PATH, HOME, the user, the shell, the terminal, locale,
// time zone, temp folder), the POSIX and Windows sets that Claude Desktop
// passes (the MCP TypeScript SDK's getDefaultEnvironment), and nothing
// else: one server does not see another's keys or mcpx's own tokens.
// LC_* variables are passed too (see Inherits).
var InheritedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "TMPDIR",
	// Windows, as the TypeScript SDK passes them
	"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PROCESSOR_ARCHITECTURE",
	"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "PROGRAMFILES",
}

// upstreamEnv is the environment of a stdio upstream: the allowlisted
// part of environ (all of it with inherit_env) and then the entry's own
// "env", which wins.
func upstreamEnv(cfg config.ServerConfig, environ []string) []string {
	out := make([]string, 0, len(InheritedEnv)+len(cfg.Env))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, own := cfg.Env[k]; own {
			continue
		}
		if cfg.InheritEnv || Inherits(k) {
			// a value that starts with "()" is a shell function
			// (Shellshock); the TypeScript SDK skips those too
			if !cfg.InheritEnv && strings.HasPrefix(v, "()") {
				continue
			}
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		out = append(out, k+"="+cfg.Env[k])
	}
	return out
}

// Inherits reports whether variable k is on the allowlist. Names are
// compared without case on Windows, where the environment ignores it.
func Inherits(k string) bool {
	if strings.HasPrefix(k, "LC_") {
		return true
	}
	for _, a := range InheritedEnv {
		if k == a || envFoldCase && strings.EqualFold(k, a) {
			return true
		}
	}
	return false
}

// envFoldCase: Windows environment names ignore case.
const envFoldCase = runtime.GOOS == "windows"
