package gateway

// Validating rewritten structuredContent against a tool's outputSchema
// before it leaves: clients built on the TypeScript SDK reject a whole
// result whose structuredContent its schema does not accept.
//
// google/jsonschema-go validates drafts 2020-12 and 07 (what MCP servers
// declare), is already linked through mcp-go's mcp package, and its package
// init costs about 1 ms (GODEBUG=inittrace=1), where
// santhosh-tekuri/jsonschema/v6 compiles its metaschemas in init (~10 ms on
// every process start).

import (
	"encoding/json"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"
)

// schemaValidator is the engine's SchemaValidator: it compiles each
// distinct outputSchema once and keeps it for the gateway's life (the tool
// lists bound how many there are).
type schemaValidator struct {
	log   hclog.Logger
	cache sync.Map // schema text → *compiledSchema
}

type compiledSchema struct {
	once sync.Once
	rs   *jsonschema.Resolved // nil when the schema cannot be used
}

// Validate checks instance against schema. A schema the library cannot
// use (not JSON, an unsupported draft, an unresolvable $ref) is logged once
// and accepts everything: the engine's type-keeping pass still ran.
func (v *schemaValidator) Validate(schema, instance json.RawMessage) error {
	e, _ := v.cache.LoadOrStore(string(schema), &compiledSchema{})
	cs := e.(*compiledSchema)
	cs.once.Do(func() { cs.rs = v.compile(schema) })
	if cs.rs == nil {
		return nil
	}
	var inst any
	if err := json.Unmarshal(instance, &inst); err != nil {
		return err
	}
	return cs.rs.Validate(inst)
}

func (v *schemaValidator) compile(schema json.RawMessage) *jsonschema.Resolved {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		v.log.Warn("outputSchema does not parse; rewritten results of its tool are not validated", "error", err)
		return nil
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		v.log.Warn("outputSchema does not resolve; rewritten results of its tool are not validated", "error", err)
		return nil
	}
	if !supportedDraft(s.Schema) {
		v.log.Warn("outputSchema declares a draft the validator does not support; rewritten results of its tool are not validated", "schema", s.Schema)
		return nil
	}
	return rs
}

// supportedDraft reports whether jsonschema-go validates the draft that
// $schema names (none means 2020-12, as MCP says).
func supportedDraft(id string) bool {
	switch id {
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema":
		return true
	}
	return false
}

// outputSchema returns a copy of a tool definition's outputSchema, or nil.
func outputSchema(def json.RawMessage) json.RawMessage {
	if o := gjson.GetBytes(def, "outputSchema"); o.IsObject() {
		return json.RawMessage(o.Raw)
	}
	return nil
}
