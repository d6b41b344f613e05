package storetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Tree returns every path under dir with what it is: "dir", "link:" and a
// symbolic link's target, or "file:" and a file's bytes. Tests take it
// before and after an operation to show the operation touched nothing
// (WantSameTree).
func Tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			out[rel] = "link:" + target
			return err
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(path)
			out[rel] = "file:" + string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// WantSameTree fails t where after (a Tree) differs from before: a path
// changed, removed or created by what.
func WantSameTree(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if w, ok := after[p]; !ok {
			t.Errorf("%s removed %s", what, p)
		} else if w != v {
			t.Errorf("%s changed %s: was %.40q, now %.40q", what, p, v, w)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s created %s", what, p)
		}
	}
}
