package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestUnknownKeyStructural: unknown keys are found by walking the document
// against File's fields, matchable with errors.As, and
// the first problem in the file is the one reported.
func TestUnknownKeyStructural(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"deep under maps", `{"mcpServers": {"x": {"command": "a", "mcpx": {"tools": {"t": {"arguments": {"mod": "url"}}}}}}}`,
			`line 1, column 78 (offset 77): mcpServers.x.mcpx.tools.t.arguments.mod: unknown field "mod"`},
		{"under serve limits", `{"serve": {"limits": {"max_mesage_bytes": 1}}}`,
			`line 1, column 23 (offset 22): serve.limits.max_mesage_bytes: unknown field "max_mesage_bytes"`},
		{"before a wrong type", `{"store": {"bucket": 1}, "log": {"level": 3}}`,
			`store.bucket: unknown field "bucket"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			var uk *UnknownKeyError
			if !errors.As(err, &uk) {
				t.Fatalf("error %v is not an *UnknownKeyError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
		})
	}
	// a wrong type before the unknown key is reported first
	_, err := Decode([]byte(`{"log": {"level": 3}, "store": {"bucket": 1}}`))
	var uk *UnknownKeyError
	if err == nil || errors.As(err, &uk) || !strings.Contains(err.Error(), "log.level") {
		t.Errorf("error %v, want the type error at log.level", err)
	}
	// layer options are free-form: any key is the layer's to check
	if _, err := Decode([]byte(`{"pipeline": {"layers": {"sizenet": {"anything": {"goes": 1}}}}}`)); err != nil {
		t.Errorf("layer options: %v", err)
	}
	// keys match fields case-insensitively, as encoding/json does
	if _, err := Decode([]byte(`{"Store": {"DIR": "/x"}}`)); err != nil {
		t.Errorf("case-insensitive keys: %v", err)
	}
}

// TestUnknownKeyEmbedded: fields of an embedded struct are known, as
// encoding/json promotes them.
func TestUnknownKeyEmbedded(t *testing.T) {
	type Inner struct {
		A int `json:"a"`
	}
	type Outer struct {
		Inner
		B int `json:"b"`
	}
	if u, ok := unknownKey([]byte(`{"a": 1, "b": 2}`), reflect.TypeFor[Outer]()); ok {
		t.Errorf("unknown %+v in a known document", u)
	}
	u, ok := unknownKey([]byte(`{"a": 1, "c": 2}`), reflect.TypeFor[Outer]())
	if !ok || u.path != "c" || u.off != 9 {
		t.Errorf("got %+v, %v; want c at 9", u, ok)
	}
}
