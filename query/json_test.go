package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// A document nested past MaxDepth is refused before any gjson call walks
// it (gjson's validator recurses once per level: 8 million levels
// overflowed the stack and killed the process), saying how deep it is,
// the limit and what to ask instead.
func TestRunJSONTooDeep(t *testing.T) {
	st := memstore.New(memstore.Config{})
	const depth = 200_000
	deep := put(t, st, "application/json", []byte(strings.Repeat("[", depth)+strings.Repeat("]", depth)))
	mem := membudget.New(64 << 20)
	_, err := Run(context.Background(), st, deep, Request{JSON: "0.0.0.0"}, Budget{Memory: mem})
	want := fmt.Sprintf("query: over budget: %s nests 200,000 levels deep, past the 10,000 a json path query reads; ask for lines, bytes or grep instead", deep.ID)
	if !errors.Is(err, ErrBudget) || err.Error() != want {
		t.Fatalf("deep json: %v\nwant %s", err, want)
	}
	// It held the document, counted in the process's budget, and gave it back.
	if mem.Peak() < deep.SizeBytes || mem.InUse() != 0 {
		t.Errorf("budget peak %d in use %d, want the %d bytes read and none left", mem.Peak(), mem.InUse(), deep.SizeBytes)
	}
	// A lower limit is the caller's; within it the path is answered.
	shallow := put(t, st, "application/json", []byte(`[[[["x"]]]]`))
	if _, err := Run(context.Background(), st, shallow, Request{JSON: "0.0"}, Budget{MaxDepth: 3}); !errors.Is(err, ErrBudget) ||
		!strings.Contains(err.Error(), "nests 4 levels deep, past the 3 a json path query reads; ask for lines, bytes, grep or jq instead") {
		t.Errorf("depth 4 over 3: %v", err)
	}
	if a, err := Run(context.Background(), st, shallow, Request{JSON: "0.0.0.0"}, Budget{}); err != nil || a.Text != `"x"` {
		t.Errorf("depth 4: %+v %v", a, err)
	}
}

// Modifiers that can grow a value past the artifact's size are refused
// with what to ask instead; the others, and keys that hold an @, work.
func TestRunJSONModifiers(t *testing.T) {
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"items":[{"name":"a"},{"name":"b"}],"user@host":1,"s":"[1]"}`))
	for _, c := range []struct {
		path, text, err string
	}{
		{path: "@keys", text: `["items","user@host","s"]`},
		{path: "items|@this|#.name", text: `["a","b"]`},
		{path: "[items.#.name,items.#]", text: `[["a","b"],2]`},
		{path: `user\@host`, text: `1`},
		{path: `items.#(name%"*@*")#`, text: `[]`},
		{path: "items.@pretty", err: "json path modifier @pretty can use more memory than the artifact holds; ask jq instead"},
		{path: "[items,@reverse]", err: "json path modifier @reverse can use more memory"},
		{path: "s|@fromstr", err: "modifier @fromstr"},
		{path: "@dig:name", err: "modifier @dig"},
		{path: "items.#.name|@tostr|@tostr", err: "modifier @tostr"},
	} {
		a, err := Run(context.Background(), st, js, Request{JSON: c.path}, Budget{})
		if c.err != "" {
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %+v %v, want ErrBadRequest with %q", c.path, a, err, c.err)
			}
			continue
		}
		if err != nil || a.Text != c.text {
			t.Errorf("%s: %+v %v, want %s", c.path, a, err, c.text)
		}
	}
}

// A json path, jq program or grep expression over MaxExprChars is refused
// before anything is read (gjson parses a path by recursion, once per
// nested bracket).
func TestRunExpressionTooLong(t *testing.T) {
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"a":1}`))
	long := strings.Repeat("[", 5000)
	for _, req := range []Request{{JSON: long}, {JQ: long}, {Grep: long}} {
		_, err := Run(context.Background(), st, js, req, Budget{})
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "is 5,000 characters, over the 4,096 a query takes; ask a shorter one") {
			t.Errorf("%d-character %s: %v", len(long), req.exprName(), err)
		}
	}
}

// A path whose parts may each copy the whole artifact reserves a copy per
// part; past the per-query memory it is refused before reading.
func TestRunJSONCopiesOverMemory(t *testing.T) {
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"items":[`+strings.Repeat(`{"name":"abcdefgh"},`, 50_000)+`{}]}`))
	mem := membudget.New(256 << 20)
	a, err := Run(context.Background(), st, js, Request{JSON: "items.#.name"}, Budget{Memory: mem})
	if err != nil || a.Total != 50_000 {
		t.Fatalf("items.#.name: total %d %v", a.Total, err)
	}
	// the document, and five times it for the # query's copy and indexes
	if want := 6 * js.SizeBytes; mem.Peak() != want {
		t.Errorf("reserved %d, want %d", mem.Peak(), want)
	}
	_, err = Run(context.Background(), st, js, Request{JSON: "[items.#.name,items.#.name,items.#.name]"}, Budget{MaxMemory: 8 << 20})
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "the path's 3 parts may each copy the artifact") {
		t.Errorf("three copies over 8 MiB: %v", err)
	}
}
