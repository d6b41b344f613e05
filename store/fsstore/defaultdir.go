package fsstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrRelativePath is returned by DefaultDir when MCPX_HOME is not an
// absolute path.
var ErrRelativePath = errors.New("fsstore: not an absolute path")

// DefaultDir returns the folder the store uses when none is configured:
//
//   - $MCPX_HOME/artifacts when MCPX_HOME is set; it must be an absolute
//     path;
//   - else $XDG_DATA_HOME/mcpx/artifacts when XDG_DATA_HOME is an absolute
//     path (the XDG spec ignores relative ones);
//   - else $HOME/.local/share/mcpx/artifacts when HOME is an absolute path;
//   - else <os.TempDir()>/mcpx-<uid>/artifacts: MCP clients often start
//     servers with a minimal environment that has no HOME. DefaultDir then
//     creates <os.TempDir()>/mcpx-<uid> (mode 0700) and checks that it is a
//     folder, not a link, owned by this user and closed to others, since
//     anyone can create names in a shared temp folder.
//
// why is "" when the folder came from MCPX_HOME, XDG_DATA_HOME or HOME as
// set; otherwise it says which variable was missing or ignored and where the
// folder went, for the caller to log.
//
// # Errors
//
// ErrRelativePath (wrapped) when MCPX_HOME is set to a relative path; an
// error when the temp fallback folder cannot be created or is not private.
func DefaultDir() (dir, why string, err error) {
	if h := os.Getenv("MCPX_HOME"); h != "" {
		if !filepath.IsAbs(h) {
			// Resolving it would follow the working folder of whichever
			// process starts mcpx (an MCP client, an IDE): artifacts would
			// scatter, and a store could land in a project folder.
			return "", "", fmt.Errorf("fsstore: MCPX_HOME %q: %w", h, ErrRelativePath)
		}
		return filepath.Join(h, "artifacts"), "", nil
	}
	var notes []string
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		if filepath.IsAbs(x) {
			return filepath.Join(x, "mcpx", "artifacts"), "", nil
		}
		notes = append(notes, fmt.Sprintf("XDG_DATA_HOME %q is not an absolute path and was ignored", x))
	}
	switch h := os.Getenv("HOME"); {
	case h != "" && filepath.IsAbs(h):
		return filepath.Join(h, ".local", "share", "mcpx", "artifacts"), strings.Join(notes, "; "), nil
	case h != "":
		notes = append(notes, fmt.Sprintf("HOME %q is not an absolute path", h))
	default:
		notes = append(notes, "HOME is not set")
	}
	base := filepath.Join(os.TempDir(), fmt.Sprintf("mcpx-%d", os.Getuid()))
	if err := os.Mkdir(base, 0o700); err != nil && !os.IsExist(err) {
		return "", "", fmt.Errorf("fsstore: dir[%s]: %w", base, err)
	}
	if err := checkPrivateDir(base); err != nil {
		return "", "", fmt.Errorf("fsstore: dir[%s]: not safe for artifacts: %w", base, err)
	}
	dir = filepath.Join(base, "artifacts")
	notes = append(notes, fmt.Sprintf("using %s, which the system may clean up", dir))
	return dir, strings.Join(notes, "; "), nil
}
