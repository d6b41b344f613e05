package rules

import (
	"bufio"
	"go/build/constraint"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/gosrc"
)

// goTags are the build tags the go command sets itself, besides the
// operating systems and architectures `go tool dist list` names.
var goTags = map[string]bool{"unix": true, "race": true, "cgo": true, "gc": true, "gccgo": true, "ignore": true}

// lintTag is one item of .golangci.yml's run.build-tags list.
var lintTag = regexp.MustCompile(`^\s+- ([A-Za-z0-9_.]+)\s*$`)

// TestLintCoversEveryBuildTag: golangci-lint reads a file only under the
// tags it is run with, so a tag of the module's own that .golangci.yml's
// run.build-tags lacks hides its files from the linter.
func TestLintCoversEveryBuildTag(t *testing.T) {
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	dist, err := exec.Command("go", "tool", "dist", "list").Output()
	if err != nil {
		t.Fatalf("go tool dist list: %v", err)
	}
	known := map[string]bool{}
	for k := range goTags {
		known[k] = true
	}
	for _, pair := range strings.Fields(string(dist)) {
		goos, goarch, _ := strings.Cut(pair, "/")
		known[goos], known[goarch] = true, true
	}

	used := map[string]string{} // tag -> a file that uses it
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "target" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(p) != ".go" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "package ") {
				break
			}
			if !constraint.IsGoBuild(line) {
				continue
			}
			expr, err := constraint.Parse(line)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				break
			}
			for _, tag := range tags(expr) {
				if !known[tag] && !strings.HasPrefix(tag, "go1.") && !strings.HasPrefix(tag, "goexperiment.") {
					rel, _ := filepath.Rel(root, p)
					used[tag] = filepath.ToSlash(rel)
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) == 0 {
		t.Fatal("no build tag of the module's own found; the walk is broken")
	}

	cfg, err := os.ReadFile(filepath.Join(root, ".golangci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	linted := map[string]bool{}
	in := false
	for _, line := range strings.Split(string(cfg), "\n") {
		switch trimmed := strings.TrimSpace(line); {
		case trimmed == "build-tags:":
			in = true
		case !in || trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case lintTag.MatchString(line):
			linted[lintTag.FindStringSubmatch(line)[1]] = true
		default:
			in = false
		}
	}
	var missing []string
	for tag, file := range used {
		if !linted[tag] {
			missing = append(missing, tag+" (in "+file+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf(".golangci.yml's run.build-tags lacks %s: golangci-lint never reads its files", m)
	}
}

// tags lists every tag of x (Eval would skip those past a decided && or ||).
func tags(x constraint.Expr) []string {
	switch x := x.(type) {
	case *constraint.TagExpr:
		return []string{x.Tag}
	case *constraint.NotExpr:
		return tags(x.X)
	case *constraint.AndExpr:
		return append(tags(x.X), tags(x.Y)...)
	case *constraint.OrExpr:
		return append(tags(x.X), tags(x.Y)...)
	}
	return nil
}
