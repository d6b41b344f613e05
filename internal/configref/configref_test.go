package configref_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/configref"
	"github.com/mcpx-dev/mcpx/internal/gosrc"
)

// TestReferenceIsCurrent keeps docs/config.md what the config types'
// doc comments say: a changed comment, key or default fails here until
// the reference is remade.
func TestReferenceIsCurrent(t *testing.T) {
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	want, err := configref.Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, configref.Output))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run\n\tgo generate ./internal/configref\nand commit it; first difference at line %d", configref.Output, firstDiffLine(got, want))
	}
}

// TestEveryKeyStatesItsDefault keeps each setting documented where it is
// declared: a doc comment that says what the key does and, for a value,
// what it is when absent ("Defaults to ...", or "Required").
func TestEveryKeyStatesItsDefault(t *testing.T) {
	if missing := loadReference(t).Undocumented(); len(missing) > 0 {
		t.Errorf("these keys' doc comments do not say what they default to (write \"Defaults to DefaultX.\" naming the constant, or the value in words, or \"Required.\"):\n\t%s", strings.Join(missing, "\n\t"))
	}
}

// loadReference reads mcpx's configuration tree from the repository.
func loadReference(t *testing.T) configref.Reference {
	t.Helper()
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := configref.Load(root, configref.RootPackage, configref.RootType)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func firstDiffLine(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// TestKeysReadFromTheCode pins what Load reads for keys of each kind: a
// default from a named constant (exact, in binary units for bytes; a
// duration as written), a default in words, a required key, a map of
// objects and a deprecated key.
func TestKeysReadFromTheCode(t *testing.T) {
	keys := map[string]configref.Key{}
	for _, s := range loadReference(t).Sections {
		for _, k := range s.Keys {
			keys[k.Path] = k
		}
	}
	for _, tc := range []struct {
		path, typ, def, section string
		deprecated              bool
	}{
		{path: "serve.limits.max_message_bytes", typ: "integer", def: "67108864 (64 MiB)"},
		{path: "serve.url_ttl", typ: `duration ("30s", or seconds)`, def: "15m"},
		{path: "log.level", typ: "string", def: `"warn"`},
		{path: "store.s3.bucket", typ: "string", def: "required"},
		{path: "serve.base_url", typ: "string", def: "http://{listen}"},
		{path: "mcpServers", typ: "map of names to object", section: "mcpServers.<name>"},
		{path: "mcpServers.<name>.mcpx.layers", typ: "map of names to JSON value", deprecated: true},
	} {
		k, ok := keys[tc.path]
		if !ok {
			t.Errorf("%s: not in the reference", tc.path)
			continue
		}
		if k.Type != tc.typ || k.Default != tc.def || k.Section != tc.section || k.Deprecated != tc.deprecated {
			t.Errorf("%s: got type %q default %q section %q deprecated %v, want %q %q %q %v",
				tc.path, k.Type, k.Default, k.Section, k.Deprecated, tc.typ, tc.def, tc.section, tc.deprecated)
		}
	}
}
