package configref_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/configref"
	"github.com/mcpx-dev/mcpx/internal/gosrc"
)

// TestKeysReadFromTheCode pins what Load reads for keys of each kind: a
// default from a named constant (exact, in binary units for bytes; a
// duration as written), a default in words, a required key, a map of
// objects and a deprecated key. (cmd/mcpx/internal/configdoc checks the
// whole reference, the layers' options included.)
func TestKeysReadFromTheCode(t *testing.T) {
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := configref.Load(root, configref.RootPackage, configref.RootType, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]configref.Key{}
	for _, s := range ref.Sections {
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

// TestEmbeddedStructRefused: a config struct that embeds another (whose
// keys encoding/json lifts into it) is an error naming it, not a
// reference that lists the embedded type as one key.
func TestEmbeddedStructRefused(t *testing.T) {
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	_, err = configref.Load(root, "github.com/mcpx-dev/mcpx/internal/configref/testdata/embedded", "Root", nil)
	if !errors.Is(err, configref.ErrEmbedded) || !strings.Contains(err.Error(), "embedded.Root embeds Base") {
		t.Fatalf("Load = %v, want ErrEmbedded naming embedded.Root and Base", err)
	}
}
