package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

var versionCmd = command{
	name:     "version",
	brief:    "print the version",
	synopsis: "",
	about: `
Version prints mcpx's module version, the VCS revision it was built from
(when the build recorded one), and the Go version and platform.`,
	example: `mcpx version`,
}

// runVersion is "mcpx version".
func runVersion(args []string, stdout, stderr io.Writer) int {
	c := versionCmd
	fs := newFlagSet(c)
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, c, fmt.Errorf("unexpected argument %q", pos[0]))
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(info))
	return exitOK
}

// versionLine renders build info as one line:
//
//	mcpx v0.3.0 (commit 1a2b3c4d5e6f, modified, 2026-01-02T03:04:05Z) go1.26.0 linux/amd64
func versionLine(info *debug.BuildInfo) string {
	version, goVersion := "(devel)", runtime.Version()
	var vcs []string
	if info != nil {
		if v := info.Main.Version; v != "" {
			version = v
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		var rev, when string
		modified := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			vcs = append(vcs, "commit "+rev)
			if modified {
				vcs = append(vcs, "modified")
			}
			if when != "" {
				vcs = append(vcs, when)
			}
		}
	}
	line := "mcpx " + version
	if len(vcs) > 0 {
		line += " (" + strings.Join(vcs, ", ") + ")"
	}
	return line + " " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}
