package layers_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A reference with punctuation right after it ("URL.",
// "mcpx://artifacts/ID.") is taken literally by readers and models: a 403,
// an unknown resource. No golden result of any layer has one. The
// goldens hold JSON whose strings hold JSON, so a reference ends at white
// space, a quote or a backslash.
var (
	goldenRefToken  = regexp.MustCompile(`(https?|mcpx)://[^\s"\\]+`)
	goldenIDTouched = regexp.MustCompile(`artifact [a-z0-9-]+_[0-9a-f]{12,}[.,)'\];:]`)
)

func TestGoldenReferencesAreBare(t *testing.T) {
	files, err := filepath.Glob("testdata/*/*.golden.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	refs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range goldenRefToken.FindAllString(string(b), -1) {
			refs++
			if strings.ContainsAny(tok[len(tok)-1:], ".,)'];:") {
				t.Errorf("%s: punctuation touches %q", f, tok)
			}
		}
		for _, m := range goldenIDTouched.FindAllString(string(b), -1) {
			t.Errorf("%s: punctuation touches the id in %q", f, m)
		}
	}
	if refs == 0 {
		t.Fatal("no references found: the check checks nothing")
	}
}
