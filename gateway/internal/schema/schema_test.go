package schema

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestSchemaValidator(t *testing.T) {
	v := &Validator{log: hclog.NewNullLogger()}
	// server-filesystem's read_text_file, as zod emits it (draft-07).
	text := json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"content":{"type":"string"}},"required":["content"],"additionalProperties":false}`)
	for _, tc := range []struct {
		name     string
		schema   json.RawMessage
		instance string
		ok       bool
	}{
		{"string kept", text, `{"content":"Text (2 MB) stored as artifact fs_1; mcpx://artifacts/fs_1"}`, true},
		{"object where a string belongs", text, `{"content":{"artifact":{"id":"fs_1"},"summary":"s"}}`, false},
		{"missing required", text, `{}`, false},
		{"2020-12 by default", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"prefixItems":[]}`), `{"n":1.5}`, false},
		{"unsupported draft is not judged", json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"integer"}}}`), `{"n":"x"}`, true},
		{"broken schema is not judged", json.RawMessage(`{"type":"object","properties":{"n":{"$ref":"#/$defs/missing"}}}`), `{"n":"x"}`, true},
	} {
		err := v.Validate(tc.schema, json.RawMessage(tc.instance))
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	n := 0
	v.cache.Range(func(_, _ any) bool { n++; return true })
	if n != 4 {
		t.Errorf("%d compiled schemas cached, want 4 (one per distinct schema)", n)
	}
}

func TestOutputSchemaOfDefinition(t *testing.T) {
	if got := Output(json.RawMessage(`{"name":"t","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}`)); string(got) != `{"type":"object"}` {
		t.Fatalf("outputSchema = %s", got)
	}
	if got := Output(json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`)); got != nil {
		t.Fatalf("outputSchema of a tool without one = %s, want nil", got)
	}
}
