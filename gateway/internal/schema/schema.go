// Package schema validates rewritten structuredContent against a tool's
// outputSchema before it leaves the gateway: clients built on the
// TypeScript SDK reject a whole result whose structuredContent its schema
// does not accept. A Validator is the engine's SchemaValidator; it owns
// its cache of compiled schemas and knows nothing else of the gateway.
//
// google/jsonschema-go validates drafts 2020-12 and 07 (what MCP servers
// declare), is already linked through mcp-go's mcp package, and its package
// init costs about 1 ms (GODEBUG=inittrace=1), where
// santhosh-tekuri/jsonschema/v6 compiles its metaschemas in init (~10 ms on
// every process start).
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
)

// Validator is the engine's SchemaValidator: it compiles each
// distinct outputSchema once and keeps it for the gateway's life (the tool
// lists bound how many there are).
type Validator struct {
	log    hclog.Logger
	limits config.Limits // MaxSchemaNodes, MaxSchemaWork, MaxSchemaDepth; zero means the defaults
	cache  sync.Map      // schema text → *compiledSchema
}

// NewValidator returns a Validator that logs to log and bounds its work
// by limits' MaxSchemaNodes, MaxSchemaWork and MaxSchemaDepth (zero: the
// defaults).
func NewValidator(log hclog.Logger, limits config.Limits) *Validator {
	return &Validator{log: log, limits: limits}
}

type compiledSchema struct {
	once    sync.Once
	rs      *jsonschema.Resolved // nil when the schema cannot be used
	cost    *schemaCost
	refused error // the schema is past the limits or never ends: not validated
}

// Validate checks instance against schema. A schema the library cannot
// use (not JSON, an unsupported draft, an unresolvable $ref) is logged once
// and accepts everything: the engine's type-keeping pass still ran. A
// schema or a result the validator would not be done with in bounded
// stack and work (cost.go), and a panic in the library, give an
// error wrapping engine.ErrSchemaNotChecked: the engine then applies its
// schema fallback.
func (v *Validator) Validate(schema, instance json.RawMessage) (err error) {
	defer func() {
		if p := recover(); p != nil {
			v.log.Error("the schema validator panicked; the result takes the schema fallback", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: the validator panicked: %v", engine.ErrSchemaNotChecked, p)
		}
	}()
	e, _ := v.cache.LoadOrStore(string(schema), &compiledSchema{})
	cs := e.(*compiledSchema)
	cs.once.Do(func() { v.compile(schema, cs) })
	if cs.refused != nil {
		return fmt.Errorf("%w: %w", engine.ErrSchemaNotChecked, cs.refused)
	}
	if cs.rs == nil {
		return nil
	}
	if err := cs.cost.checkWork(gjson.ParseBytes(instance)); err != nil {
		return fmt.Errorf("%w: %w", engine.ErrSchemaNotChecked, err)
	}
	var inst any
	if err := json.Unmarshal(instance, &inst); err != nil {
		return err
	}
	return cs.rs.Validate(inst)
}

// compile fills cs. The library may panic on a schema it did not expect:
// that schema is refused.
func (v *Validator) compile(schema json.RawMessage, cs *compiledSchema) {
	defer func() {
		if p := recover(); p != nil {
			v.log.Error("compiling an outputSchema panicked; results of its tool take the schema fallback", "panic", p, "stack", string(debug.Stack()))
			cs.rs, cs.refused = nil, fmt.Errorf("compiling the schema panicked: %v", p)
		}
	}()
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		v.log.Warn("outputSchema does not parse; rewritten results of its tool are not validated", "error", err)
		return
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		v.log.Warn("outputSchema does not resolve; rewritten results of its tool are not validated", "error", err)
		return
	}
	if !supportedDraft(s.Schema) {
		v.log.Warn("outputSchema declares a draft the validator does not support; rewritten results of its tool are not validated", "schema", s.Schema)
		return
	}
	cost, err := analyseSchema(rs.Schema(), v.limits.WithDefaults())
	switch {
	case errors.Is(err, errSchemaRef):
		v.log.Warn("outputSchema has a reference the gateway cannot bound; rewritten results of its tool are not validated", "error", err)
		return
	case err != nil:
		v.log.Warn("outputSchema is not validated: rewritten results of its tool take the schema fallback", "error", err)
		cs.refused = err
		return
	}
	cs.rs, cs.cost = rs, cost
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

// Output returns a copy of a tool definition's outputSchema, or nil.
func Output(def json.RawMessage) json.RawMessage {
	if o := gjson.GetBytes(def, "outputSchema"); o.IsObject() {
		return json.RawMessage(o.Raw)
	}
	return nil
}
