package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/cli/parts"
)

// ServerBinary is the binary with every part (cmd/mcpx-server), which
// cmd/mcpx hands serve, wrap, jq and S3-store commands to.
const ServerBinary = "mcpx-server"

// envServerBinary names the server binary's path, overriding the search
// beside this executable and on PATH.
const envServerBinary = "MCPX_SERVER_BINARY"

// errNoS3 is a store.s3 configuration in a binary without the S3 store.
var errNoS3 = errors.New("this binary has no S3 store (store.s3 is served by " + ServerBinary + ")")

// needsServer says why args need a part ps lacks, or "" when they do not:
// serve and wrap need the gateway; "artifacts query --jq" needs jq; a store command whose
// config names store.s3 (and no --store) needs the S3 store. The config
// file is only looked at, not validated: the binary that runs the
// command does that.
func needsServer(args []string, ps parts.Set) string {
	if len(args) == 0 {
		return ""
	}
	switch args[0] {
	case "serve", "wrap":
		if ps.Serve == nil || ps.Check == nil {
			return "the gateway"
		}
		if ps.OpenS3 != nil {
			return ""
		}
	case "transform", "artifacts":
		if ps.JQ == nil && len(args) > 1 && args[1] == "query" && hasFlag(args[2:], "jq") {
			return "jq"
		}
		if ps.OpenS3 != nil {
			return ""
		}
	default:
		return ""
	}
	configPath, storeDir := storeFlags(args[1:])
	if configPath == "" || storeDir {
		return ""
	}
	b, err := os.ReadFile(configPath)
	if err != nil || !gjson.GetBytes(b, "store.s3").IsObject() {
		return ""
	}
	return "the S3 store of " + configPath
}

// hasFlag reports whether args set flag name (-name, --name, --name=V),
// before "--".
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && n == name {
			return true
		}
	}
	return false
}

// storeFlags finds --config's value and whether --store is given in a
// command's arguments, before "--".
func storeFlags(args []string) (configPath string, storeDir bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		switch name {
		case "config":
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			configPath = value
		case "store":
			storeDir = true
		}
	}
	return configPath, storeDir
}

// delegate replaces this process with the server binary running args:
// found by $MCPX_SERVER_BINARY, else beside this executable, else on
// PATH. It returns only when it cannot.
func delegate(args []string, why string, stderr io.Writer) int {
	bin, err := serverBinary()
	if err != nil {
		fmt.Fprintf(stderr, "mcpx %s: %s is in %s, which was not found (%v): install it beside mcpx with\n  go install github.com/mcpx-dev/mcpx/cmd/mcpx-server@latest\n", args[0], why, ServerBinary, err)
		return exitFail
	}
	err = syscall.Exec(bin, append([]string{bin}, args...), os.Environ())
	fmt.Fprintf(stderr, "mcpx %s: run %s: %v\n", args[0], bin, err)
	return exitFail
}

// serverBinary finds the server binary.
func serverBinary() (string, error) {
	if p := os.Getenv(envServerBinary); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), ServerBinary)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(ServerBinary)
	if err != nil {
		return "", fmt.Errorf("not beside this executable nor on PATH: %w", err)
	}
	return p, nil
}
