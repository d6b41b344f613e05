package mergepatch_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/mergepatch"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestApplyRFC7396 runs the examples of RFC 7396 appendix A that have an
// object on both sides.
func TestApplyRFC7396(t *testing.T) {
	cases := []struct{ doc, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, c := range cases {
		doc := decode(t, c.doc)
		mergepatch.Apply(doc, decode(t, c.patch))
		if want := decode(t, c.want); !reflect.DeepEqual(doc, want) {
			t.Errorf("Apply(%s, %s) = %v, want %v", c.doc, c.patch, doc, want)
		}
	}
}

// TestComposeIsSequential checks that applying Compose(p1, p2) equals
// applying p1 then p2, on documents with and without the patched members.
func TestComposeIsSequential(t *testing.T) {
	docs := []string{`{}`, `{"a":1,"b":{"x":1,"y":2},"c":[1]}`, `{"b":{"y":{"deep":true}}}`}
	patches := [][2]string{
		{`{"b":{"x":5}}`, `{"b":{"y":null}}`},
		{`{"a":2}`, `{"a":null}`},
		{`{"a":null}`, `{"c":7}`},
		{`{"b":{"x":null}}`, `{"b":{"x":3}}`},
		{`{"b":{"y":{"deep":false}}}`, `{"b":{"y":{"more":1}}}`},
		{`{"c":[2]}`, `{"c":[3,4]}`},
	}
	for _, d := range docs {
		for _, p := range patches {
			seq := decode(t, d)
			mergepatch.Apply(seq, decode(t, p[0]))
			mergepatch.Apply(seq, decode(t, p[1]))
			composed, err := mergepatch.Compose(json.RawMessage(p[0]), json.RawMessage(p[1]))
			if err != nil {
				t.Fatal(err)
			}
			one := decode(t, d)
			mergepatch.Apply(one, decode(t, string(composed)))
			if !reflect.DeepEqual(seq, one) {
				t.Errorf("doc %s, patches %s then %s: sequential %v, composed %s gives %v", d, p[0], p[1], seq, composed, one)
			}
		}
	}
}

func TestComposeKeepsOneSideAndDigits(t *testing.T) {
	big := json.RawMessage(`{"max":12345678901234567890}`)
	if got, _ := mergepatch.Compose(big, nil); string(got) != string(big) {
		t.Errorf("Compose(x, nil) = %s", got)
	}
	if got, _ := mergepatch.Compose(nil, big); string(got) != string(big) {
		t.Errorf("Compose(nil, x) = %s", got)
	}
	got, err := mergepatch.Compose(big, json.RawMessage(`{"min":1}`))
	if err != nil || string(got) != `{"max":12345678901234567890,"min":1}` {
		t.Errorf("Compose = %s, %v", got, err)
	}
}

func TestComposeRejectsNonObjects(t *testing.T) {
	for _, c := range [][2]string{{`[1]`, `{}`}, {`{}`, `"x"`}, {`{}`, `null`}} {
		_, err := mergepatch.Compose(json.RawMessage(c[0]), json.RawMessage(c[1]))
		if !errors.Is(err, mergepatch.ErrNotObject) {
			t.Errorf("Compose(%s, %s): err = %v, want ErrNotObject", c[0], c[1], err)
		}
	}
	if _, err := mergepatch.Compose(json.RawMessage(`{`), json.RawMessage(`{}`)); err == nil {
		t.Error("Compose of invalid JSON: no error")
	}
}
