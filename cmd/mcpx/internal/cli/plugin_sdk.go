package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// mcpxModule is the module path of mcpx, whose sdk/wasm-guest/go package a
// Go plugin imports.
const mcpxModule = "github.com/mcpx-dev/mcpx"

// errNoSDK is returned when "plugin new --lang go" finds neither an mcpx
// checkout nor a published module version to build against.
var errNoSDK = errors.New("no mcpx checkout or module version to build against")

// goSDK is what a Go plugin's go.mod points at: a module version to
// require and, for a local checkout, the folder of a replace directive.
type goSDK struct {
	version string // required version (a placeholder when dir is set and none is known)
	dir     string // absolute folder of a local mcpx checkout, or ""
	from    string // how it was found, for plugin new's output
}

// sdkHints are where plugin new looks for the SDK, gathered once so that
// tests can stand in for the binary's own facts.
type sdkHints struct {
	sourceFile string           // this file as the compiler saw it (absolute unless built with -trimpath)
	executable string           // the running binary
	cwd        string           // the current folder
	build      *debug.BuildInfo // nil when the binary has none
}

// currentSDKHints are the running binary's hints.
func currentSDKHints() sdkHints {
	var h sdkHints
	_, h.sourceFile, _, _ = runtime.Caller(0)
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		h.executable = exe
	}
	h.cwd, _ = os.Getwd()
	h.build, _ = debug.ReadBuildInfo()
	return h
}

// findGoSDK decides what a Go plugin builds against, in order:
//
//  1. --sdk DIR, which must be an mcpx checkout;
//  2. a release version of mcpx in the build info of a clean build (a
//     tagged version, built from a clean tree): required as is;
//  3. the checkout the binary was built from: the folder of its own source
//     files (recorded unless built with -trimpath), else the first mcpx
//     checkout above the executable (go build -o ./mcpx in a clone), else
//     above the current folder (go run ./cmd/mcpx);
//  4. any other module version in the build info (a pseudo-version of a
//     commit, which the Go proxy resolves once the commit is public).
//
// Module caches (.../pkg/mod/...) do not count as checkouts.
func findGoSDK(flagDir string, h sdkHints) (goSDK, error) {
	version := buildVersion(h.build)
	placeholder := version
	if placeholder == "" {
		placeholder = "v0.0.0-00010101000000-000000000000"
	}
	if flagDir != "" {
		abs, err := filepath.Abs(flagDir)
		if err != nil {
			return goSDK{}, fmt.Errorf("--sdk %s: %w", flagDir, err)
		}
		if !isCheckout(abs) {
			return goSDK{}, fmt.Errorf("--sdk %s: not an mcpx checkout (want a go.mod of module %s and sdk/wasm-guest/go)", flagDir, mcpxModule)
		}
		return goSDK{version: placeholder, dir: abs, from: "--sdk"}, nil
	}
	if isRelease(version) && !dirtyBuild(h.build) {
		return goSDK{version: version, from: "this binary's module version"}, nil
	}
	for _, c := range []struct{ start, from string }{
		{sourceDir(h.sourceFile), "the checkout this mcpx was built from"},
		{h.executable, "the checkout holding this mcpx binary"},
		{h.cwd, "the checkout around the current folder"},
	} {
		if dir, ok := checkoutAbove(c.start); ok {
			return goSDK{version: placeholder, dir: dir, from: c.from}, nil
		}
	}
	if version != "" {
		return goSDK{version: version, from: "this binary's module version (a commit: go mod tidy fetches it once it is public)"}, nil
	}
	return goSDK{}, fmt.Errorf("%w: pass --sdk with the folder of your mcpx clone", errNoSDK)
}

// sourceDir is the folder of an absolute source file path, or "" for a
// -trimpath build's module-relative one.
func sourceDir(file string) string {
	if file == "" || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(file)
}

// buildVersion is the version of the mcpx module in bi: the main module's
// when mcpx is the main module, else the dependency's; "" for none or a
// development build. A "+dirty" suffix (a build from a modified tree) is
// dropped: go.mod cannot require it.
func buildVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return ""
	}
	v := ""
	if bi.Main.Path == mcpxModule {
		v = bi.Main.Version
	} else {
		for _, d := range bi.Deps {
			if d.Path == mcpxModule {
				v = d.Version
				if d.Replace != nil {
					v = "" // replaced by a folder: no version to fetch
				}
			}
		}
	}
	v = strings.TrimSuffix(v, "+dirty")
	if v == "(devel)" || !semver.IsValid(v) {
		return ""
	}
	return v
}

// dirtyBuild reports whether bi records a build from a modified tree:
// its source is not what the version names.
func dirtyBuild(bi *debug.BuildInfo) bool {
	if bi == nil {
		return false
	}
	if strings.HasSuffix(bi.Main.Version, "+dirty") {
		return true
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.modified" && s.Value == "true" {
			return true
		}
	}
	return false
}

// isRelease reports whether v is a tagged version (not a pseudo-version).
func isRelease(v string) bool {
	return v != "" && !module.IsPseudoVersion(v)
}

// checkoutAbove returns the first folder at or above start that is an mcpx
// checkout.
func checkoutAbove(start string) (string, bool) {
	if start == "" {
		return "", false
	}
	dir := filepath.Clean(start)
	for {
		if isCheckout(dir) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// isCheckout reports whether dir holds the mcpx module's go.mod and the Go
// guest SDK, outside a module cache.
func isCheckout(dir string) bool {
	if strings.Contains(filepath.ToSlash(dir), "/pkg/mod/") {
		return false
	}
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || modfile.ModulePath(data) != mcpxModule {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "sdk", "wasm-guest", "go", "guest.go"))
	return err == nil
}
