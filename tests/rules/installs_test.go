package rules

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/gosrc"
)

// ownModule is this module's path: it is not published to a module
// proxy, so nothing installs it by path; a clone does (README, Install).
const ownModule = "github.com/mcpx-dev/mcpx"

// goInstall matches a "go install" command line and its first argument.
var goInstall = regexp.MustCompile(`\bgo install\s+(?:-\S+\s+)*(\S+)`)

// TestInstallsWorkFromAClone: no message, doc or comment suggests an
// install that cannot work: nothing "@" + "latest" (what it installs
// changes under the reader: pin what the tests run), no "go install" of
// this module by path (it is not published: install from a clone,
// "go install ./cmd/mcpx"), and no "go install" of another module
// without a version (outside a module that fails).
func TestInstallsWorkFromAClone(t *testing.T) {
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := filepath.Abs("installs_test.go")
	latest := "@" + "latest"
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "target":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".sh", ".rs", ".json", ".toml", ".yml", ".yaml":
		default:
			return nil
		}
		if path == self {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		rel, _ := filepath.Rel(root, path)
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.Contains(line, latest) {
				t.Errorf("%s:%d: %s installs whatever is newest: pin the version the tests run\n\t%s", rel, n, latest, strings.TrimSpace(line))
			}
			for _, m := range goInstall.FindAllStringSubmatch(line, -1) {
				arg := strings.Trim(m[1], "`\"'")
				switch {
				case strings.HasPrefix(arg, "."):
				case strings.HasPrefix(arg, ownModule):
					t.Errorf("%s:%d: go install %s: this module is not published; install from a clone (go install ./cmd/mcpx)\n\t%s", rel, n, arg, strings.TrimSpace(line))
				case !strings.Contains(arg, "@") && strings.Contains(arg, "."):
					t.Errorf("%s:%d: go install %s: a module outside this one needs a version\n\t%s", rel, n, arg, strings.TrimSpace(line))
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
