package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/schema/schematest"
)

// treeSchema is recursion that descends: each level is a member's item.
const treeSchema = `{"$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"}`

// validateWithin runs Validate and fails the test when it takes long.
func validateWithin(t *testing.T, v *Validator, schema, instance string) error {
	t.Helper()
	start := time.Now()
	err := v.Validate(json.RawMessage(schema), json.RawMessage(instance))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Validate took %v", d)
	}
	return err
}

// A $ref cycle that does not descend into the value recursed
// until the stack overflowed. Every such loop is refused when compiled,
// through each in-place keyword and each way of naming the target.
func TestSchemaCycleRefused(t *testing.T) {
	for name, schema := range map[string]string{
		"$defs via anyOf": `{"$ref":"#/$defs/a","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"object"}]}}}`,
		"root":            `{"$ref":"#"}`,
		"allOf":           `{"allOf":[{"$ref":"#"}]}`,
		"not":             `{"not":{"$ref":"#"}}`,
		"if then else":    `{"if":{"type":"string"},"then":{},"else":{"$ref":"#"}}`,
		"oneOf":           `{"type":"object","oneOf":[{"type":"null"},{"$ref":"#"}]}`,
		"two defs":        `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
		"anchor":          `{"$defs":{"a":{"$anchor":"x","anyOf":[{"$ref":"#x"}]}},"$ref":"#x"}`,
		"by $id":          `{"$id":"https://example.com/s","$defs":{"a":{"$id":"a","allOf":[{"$ref":"https://example.com/a"}]}},"$ref":"a"}`,
		"dependent":       `{"dependentSchemas":{"k":{"$ref":"#"}}}`,
		"draft-07":        `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"anyOf":[{"$ref":"#/definitions/a"}]}},"properties":{"p":{"$ref":"#/definitions/a"}}}`,
		"unused def":      `{"type":"object","$defs":{"a":{"not":{"$ref":"#/$defs/a"}}}}`,
		"escaped pointer": `{"$defs":{"a/b":{"anyOf":[{"$ref":"#/$defs/a~1b"}]}},"$ref":"#/$defs/a~1b"}`,
	} {
		v := &Validator{log: hclog.NewNullLogger()}
		err := validateWithin(t, v, schema, `{"p":{"q":1}}`)
		if !errors.Is(err, ErrCycle) || !errors.Is(err, engine.ErrSchemaNotChecked) {
			t.Errorf("%s: Validate = %v, want ErrSchemaCycle wrapped in engine.ErrSchemaNotChecked", name, err)
		}
	}
}

// Recursion that descends (into properties, items, additionalProperties)
// is no cycle: it is bounded by the value, and validated as before.
func TestSchemaDescendingRecursionValidates(t *testing.T) {
	list := `{"type":"object","required":["v"],"properties":{"v":{"type":"integer"},"next":{"$ref":"#"}}}`
	dict := `{"type":"object","additionalProperties":{"anyOf":[{"type":"string"},{"$ref":"#"}]}}`
	for _, tc := range []struct {
		name, schema, instance string
		ok                     bool
	}{
		{"tree", treeSchema, `{"kids":[{"kids":[]},{"kids":[{"kids":[{}]}]}]}`, true},
		{"tree, a kid not an object", treeSchema, `{"kids":[{"kids":[]},{"kids":[{"kids":[7]}]}]}`, false},
		{"tree, kids not an array", treeSchema, `{"kids":[{"kids":{}}]}`, false},
		{"list", list, `{"v":1,"next":{"v":2,"next":{"v":3}}}`, true},
		{"list, missing v", list, `{"v":1,"next":{"next":{"v":3}}}`, false},
		{"dict", dict, `{"a":"x","b":{"c":{"d":"y"}}}`, true},
		{"dict, a number", dict, `{"a":"x","b":{"c":{"d":5}}}`, false},
	} {
		v := &Validator{log: hclog.NewNullLogger()}
		err := validateWithin(t, v, tc.schema, tc.instance)
		if errors.Is(err, engine.ErrSchemaNotChecked) || (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// Eight levels of five anyOf branches took 45 s and 7 GB. The
// count of subschemas one value meets, with multiplicity, is known when
// the schema compiles; past limits.max_schema_nodes it is refused.
func TestSchemaFanOutRefused(t *testing.T) {
	v := &Validator{log: hclog.NewNullLogger()}
	for _, branches := range []int{5, 6} {
		err := validateWithin(t, v, schematest.FanOut(branches), `{}`)
		if !errors.Is(err, ErrTooCostly) || !errors.Is(err, engine.ErrSchemaNotChecked) || !strings.Contains(err.Error(), "max_schema_nodes") {
			t.Errorf("%d branches: Validate = %v, want ErrSchemaTooCostly (max_schema_nodes)", branches, err)
		}
	}
	// Two branches: 1022 subschemas counted, under the default: validated.
	if err := validateWithin(t, v, schematest.FanOut(2), `{}`); err != nil {
		t.Errorf("two branches: Validate = %v, want nil", err)
	}
	if err := validateWithin(t, v, schematest.FanOut(2), `[]`); err == nil || errors.Is(err, engine.ErrSchemaNotChecked) {
		t.Errorf("two branches, an array: Validate = %v, want a mismatch", err)
	}
	// The count, exactly: a8 is 1, each level's anyOf 1 + 2*(1 + the
	// next level's), so a0 is 1021, and the root's $ref adds 1.
	c := compiledCost(t, schematest.FanOut(2), config.Limits{})
	if n := c.nodes[c.root]; n != 1022 {
		t.Errorf("nodes(root) = %d, want 1022", n)
	}
	small := &Validator{log: hclog.NewNullLogger(), limits: config.Limits{MaxSchemaNodes: 1000}}
	if err := validateWithin(t, small, schematest.FanOut(2), `{}`); !errors.Is(err, ErrTooCostly) {
		t.Errorf("two branches, max_schema_nodes 1000: Validate = %v, want ErrSchemaTooCostly", err)
	}
}

// compiledCost compiles schema with limits l and returns its cost model.
func compiledCost(t *testing.T, schema string, l config.Limits) *schemaCost {
	t.Helper()
	v := &Validator{log: hclog.NewNullLogger(), limits: l}
	if err := v.Validate(json.RawMessage(schema), json.RawMessage(`null`)); errors.Is(err, engine.ErrSchemaNotChecked) {
		t.Fatalf("compile: %v", err)
	}
	e, _ := v.cache.Load(schema)
	cs := e.(*compiledSchema)
	if cs.cost == nil {
		t.Fatalf("%s did not compile", schema)
	}
	return cs.cost
}

// The work of one result is counted over its value before the library
// runs: a schema that doubles at each level of the value is refused on a
// deep one, and so is a large value past the budget, while ordinary
// results validate.
func TestSchemaWorkBudget(t *testing.T) {
	doubling := `{"$defs":{"n":{"allOf":[{"properties":{"a":{"$ref":"#/$defs/n"}}},{"properties":{"a":{"$ref":"#/$defs/n"}}}]}},"$ref":"#/$defs/n"}`
	deep := strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40)
	v := &Validator{log: hclog.NewNullLogger()}
	if err := validateWithin(t, v, doubling, deep); !errors.Is(err, ErrTooCostly) || !strings.Contains(err.Error(), "max_schema_work") {
		t.Errorf("doubling schema on 40 levels: Validate = %v, want ErrSchemaTooCostly (max_schema_work)", err)
	}
	if err := validateWithin(t, v, doubling, strings.Repeat(`{"a":`, 8)+`1`+strings.Repeat(`}`, 8)); err != nil {
		t.Errorf("doubling schema on 8 levels: Validate = %v, want nil", err)
	}
	items := `{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}}}}`
	many := "[" + strings.Repeat(`{"n":1},`, 2000) + `{"n":2}]`
	if err := validateWithin(t, v, items, many); err != nil {
		t.Errorf("2001 items: Validate = %v, want nil", err)
	}
	small := &Validator{log: hclog.NewNullLogger(), limits: config.Limits{MaxSchemaWork: 5000}}
	if err := validateWithin(t, small, items, many); !errors.Is(err, ErrTooCostly) {
		t.Errorf("2001 items, max_schema_work 5000: Validate = %v, want ErrSchemaTooCostly", err)
	}
	// A failing check formats the value into its error: large values
	// weigh more.
	c := compiledCost(t, `{"anyOf":[{"type":"string"},{"type":"number"}]}`, config.Limits{})
	w := &schemaWalk{cost: c}
	if err := w.value(gjsonParse(`[`+strings.Repeat(`1,`, 799)+`1]`), rootApplied(c), 0); err != nil || w.work != 3*(1+1600/schemaWorkBytes) {
		t.Errorf("work = %d, %v; want 3 checks of 1600 bytes", w.work, err)
	}
}

// The validator's recursion is bounded: limits.max_schema_depth caps the
// nested checks, the value's depth times the subschemas in place.
func TestSchemaDepthBudget(t *testing.T) {
	nested := strings.Repeat(`{"kids":[`, 30) + strings.Repeat(`]}`, 30)
	v := &Validator{log: hclog.NewNullLogger(), limits: config.Limits{MaxSchemaDepth: 50}}
	if err := validateWithin(t, v, treeSchema, nested); !errors.Is(err, ErrTooCostly) || !strings.Contains(err.Error(), "max_schema_depth") {
		t.Errorf("60 levels under max_schema_depth 50: Validate = %v, want ErrSchemaTooCostly (max_schema_depth)", err)
	}
	chain := `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"allOf":[{"$ref":"#/$defs/c"}]},"c":{"type":"object"}},"$ref":"#/$defs/a"}`
	if c := compiledCost(t, chain, config.Limits{}); c.chain[c.root] != 6 {
		t.Errorf("chain(root) = %d, want 6 (root, a, allOf/0, b, allOf/0, c)", c.chain[c.root])
	}
	if err := validateWithin(t, &Validator{log: hclog.NewNullLogger(), limits: config.Limits{MaxSchemaDepth: 4}}, chain, `{}`); !errors.Is(err, ErrTooCostly) {
		t.Errorf("a chain of 6 under max_schema_depth 4: Validate = %v, want ErrSchemaTooCostly", err)
	}
	if err := validateWithin(t, &Validator{log: hclog.NewNullLogger()}, treeSchema, nested); err != nil {
		t.Errorf("60 levels under the default: Validate = %v, want nil", err)
	}
}

// A reference the analysis cannot follow is reported as errSchemaRef
// (Validate then leaves the schema unjudged, as one the library cannot
// resolve).
func TestSchemaRefNotFollowed(t *testing.T) {
	for _, ref := range []string{"#/$defs/missing", "https://example.com/other", "#nowhere", "#/properties/a/7"} {
		root := &jsonschema.Schema{Ref: ref, Properties: map[string]*jsonschema.Schema{"a": {}}}
		if _, err := analyseSchema(root, config.Limits{}.WithDefaults()); !errors.Is(err, errSchemaRef) {
			t.Errorf("%s: analyseSchema = %v, want errSchemaRef", ref, err)
		}
	}
}

func gjsonParse(s string) gjson.Result { return gjson.Parse(s) }

func rootApplied(c *schemaCost) map[*jsonschema.Schema]int64 {
	return map[*jsonschema.Schema]int64{c.root: 1}
}

// FuzzSchemaValidate: for any schema and value, Validate returns (no
// stack overflow, no panic out of it) within the limits' time, and a
// library panic it recovers is reported.
func FuzzSchemaValidate(f *testing.F) {
	for _, s := range []string{treeSchema, schematest.FanOut(3), `{"$ref":"#"}`, `{"anyOf":[{"$ref":"#"},{"type":"object"}]}`,
		`{"$defs":{"a":{"$anchor":"x","allOf":[{"$ref":"#x"}]}},"properties":{"p":{"$ref":"#x"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}],"additionalItems":{"$ref":"#"}}`,
		`{"$dynamicAnchor":"n","properties":{"k":{"$dynamicRef":"#n"}},"patternProperties":{"^a":{"$ref":"#"}}}`,
		`{"$id":"https://example.com/r","$defs":{"x":{"$id":"x","not":{"type":"null"}}},"oneOf":[{"$ref":"x"},{"$ref":"https://example.com/x"}]}`} {
		f.Add(s, `{"kids":[{"kids":[]}],"k":{"k":1},"p":[1,"a"],"ab":{}}`)
	}
	f.Fuzz(func(t *testing.T, schema, instance string) {
		if !json.Valid([]byte(instance)) {
			return
		}
		v := &Validator{log: hclog.NewNullLogger(), limits: config.Limits{MaxSchemaNodes: 200, MaxSchemaWork: 20000, MaxSchemaDepth: 500}}
		start := time.Now()
		err := v.Validate(json.RawMessage(schema), json.RawMessage(instance))
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Validate took %v", d)
		}
		if err != nil && strings.Contains(err.Error(), "panicked") {
			t.Fatalf("Validate: %v", err)
		}
	})
}

// Each enum value a value is compared with counts: a long enum on every
// item of a long array is past the budget.
func TestSchemaWorkCountsEnums(t *testing.T) {
	enum := `{"type":"array","items":{"enum":[` + strings.Repeat(`"x",`, 999) + `"y"]}}`
	c := compiledCost(t, enum, config.Limits{})
	w := &schemaWalk{cost: c}
	if err := w.value(gjsonParse(`["y","y"]`), rootApplied(c), 0); err != nil || w.work != 1+9/schemaWorkBytes+2*(1+1000) {
		t.Errorf("work = %d, %v; want the root plus 2 items of 1000 enum values", w.work, err)
	}
	v := &Validator{log: hclog.NewNullLogger(), limits: config.Limits{MaxSchemaWork: 100000}}
	if err := validateWithin(t, v, enum, "["+strings.Repeat(`"y",`, 199)+`"y"]`); !errors.Is(err, ErrTooCostly) {
		t.Errorf("200 items of a 1000-value enum under max_schema_work 100000: Validate = %v, want ErrSchemaTooCostly", err)
	}
}
