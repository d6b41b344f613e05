package rules

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/gosrc"
)

// citation matches what points a reader outside the repository instead of
// giving the reason: an issue's number ("issue N", "issues N and M",
// "Issue #N", a name such as issueN), a tracker's shorthand (owner/repo#N)
// or link, a document kept beside the repository (in ../shared), and a
// section of a design document the repository does not hold ("RFC N.N";
// an IETF RFC has a number of three digits or more, and stays).
var citation = regexp.MustCompile(`(?i)\bissues? #?[0-9]+|\bissue[-_]?[0-9]+|\b[a-z0-9_.-]+/[a-z0-9_.-]+#[0-9]+\b|github\.com/[^\s)]+/(?:issues|pull)/[0-9]+|\bshared/[a-z0-9_]+\.md\b|\bRFC [0-9]{1,2}\.[0-9]|\bthe RFC's\b`)

// citedFiles are the files whose citations stay for now, with why. A file
// in the table that cites nothing fails the test until it leaves it.
var citedFiles = map[string]string{}

// citedExts are the kinds of file whose text a reader takes as the
// repository's word: code, scripts, docs and configuration.
var citedExts = map[string]bool{".go": true, ".sh": true, ".md": true, ".rs": true, ".yml": true, ".yaml": true, ".toml": true, ".wat": true}

// TestNoTrackerCitations: comments, scripts and docs give the reason
// itself, never a tracker's number or a document outside the repository
// (a reader of the repository has neither); and no file is named after
// an issue rather than what it holds. Test data (testdata/) holds what
// servers send, issues of a GitHub server included, and is not read.
func TestNoTrackerCitations(t *testing.T) {
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	seen := map[string]bool{}
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "target" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !citedExts[filepath.Ext(p)] {
			return nil
		}
		files++
		if m := citation.FindString(d.Name()); m != "" {
			found = append(found, rel+": named after "+m)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			m := citation.FindString(line)
			if m == "" {
				continue
			}
			if _, ok := citedFiles[rel]; ok {
				seen[rel] = true
				continue
			}
			found = append(found, rel+":"+strconv.Itoa(i+1)+": "+m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 500 {
		t.Fatalf("read only %d files below %s", files, root)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Errorf("%s: give the reason itself, not where it was asked for", f)
	}
	for rel := range citedFiles {
		if !seen[rel] {
			t.Errorf("%s cites nothing now: take it out of citedFiles", rel)
		}
	}
}
