package jsonwalk

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/jsonstr"
)

func TestWalkPathsAndSpans(t *testing.T) {
	raw := []byte(` {"a": [1, "two", {"b\"c": null}], "d": {"e": true}, "x.y": -1.5e3} `)
	type seen struct {
		path, raw string
		leave     bool
	}
	var got []seen
	err := Walk(raw, func(v *Visit) Step {
		if v.End < 0 {
			got = append(got, seen{v.PathString(), "", false})
			return Descend
		}
		got = append(got, seen{v.PathString(), string(raw[v.Off:v.End]), v.Leave})
		return Descend
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []seen{
		{"", "", false},
		{"a", "", false},
		{"a.0", "1", false},
		{"a.1", `"two"`, false},
		{"a.2", "", false},
		{`a.2.b\"c`, "null", false},
		{"a.2", `{"b\"c": null}`, true},
		{"a", `[1, "two", {"b\"c": null}]`, true},
		{"d", "", false},
		{"d.e", "true", false},
		{"d", `{"e": true}`, true},
		{`x\.y`, "-1.5e3", false},
		{"", strings.TrimSpace(string(raw)), true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d visits %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("visit %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// Every rendered path must resolve with gjson to the same value.
	_ = Walk(raw, func(v *Visit) Step {
		if v.End >= 0 && len(v.Path) > 0 {
			if r := gjson.GetBytes(raw, v.PathString()); r.Raw != string(raw[v.Off:v.End]) {
				t.Errorf("gjson %q = %q, walk saw %q", v.PathString(), r.Raw, raw[v.Off:v.End])
			}
		}
		return Descend
	})
}

func TestWalkSkipAndStop(t *testing.T) {
	raw := []byte(`{"skip": {"deep": [1,2,{"x":"}"}]}, "after": 1, "stop": 2, "never": 3}`)
	var keys []string
	err := Walk(raw, func(v *Visit) Step {
		if v.Leave || len(v.Path) != 1 {
			return Descend
		}
		k := v.Path[0].KeyString()
		keys = append(keys, k)
		switch k {
		case "skip":
			return SkipValue
		case "stop":
			return Stop
		}
		return Descend
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "skip,after,stop" {
		t.Fatalf("keys %v", keys)
	}
}

func TestWalkErrors(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1 2]`, `"abc`, `tru`, `{} x`, `{"a":1}}`, `[`, `@`} {
		err := Walk([]byte(in), func(*Visit) Step { return Descend })
		if !errors.Is(err, ErrBadJSON) {
			t.Errorf("%q: got %v, want ErrBadJSON", in, err)
		}
	}
}

func TestWalkDeepNesting(t *testing.T) {
	const depth = 10000
	raw := []byte(strings.Repeat("[", depth) + `"x"` + strings.Repeat("]", depth))
	maxDepth := 0
	err := Walk(raw, func(v *Visit) Step {
		maxDepth = max(maxDepth, len(v.Path))
		return Descend
	})
	if err != nil {
		t.Fatal(err)
	}
	if maxDepth != depth {
		t.Fatalf("max depth %d, want %d", maxDepth, depth)
	}
}

func TestMaxDepth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`1`, 0},
		{`[]`, 1},
		{`{"a":[{"b":"[[[["}],[1]]}`, 3},
		{`["\"[[["]`, 1},
		{`[["unterminated`, 2},
		{strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000), 1_000_000},
	} {
		if got := MaxDepth([]byte(tc.in)); got != tc.want {
			t.Errorf("%.20s: depth %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestStringEnd(t *testing.T) {
	for _, tc := range []struct {
		in  string
		end int
		ok  bool
	}{
		{`"abc"`, 5, true},
		{`"a\"b"`, 6, true},
		{`"a\\"b`, 5, true},
		{`"a\\\"b"`, 8, true},
		{`"abc`, 0, false},
	} {
		end, ok := StringEnd([]byte(tc.in), 0)
		if end != tc.end || ok != tc.ok {
			t.Errorf("%s: got %d,%v want %d,%v", tc.in, end, ok, tc.end, tc.ok)
		}
	}
}

func TestParsePathAndMatch(t *testing.T) {
	p, err := ParsePath(`artifacts.#.b64`)
	if err != nil {
		t.Fatal(err)
	}
	var matched []string
	raw := []byte(`{"artifacts":[{"b64":"AA=="},{"name":"x"},{"b64":"AQ=="}],"b64":"no"}`)
	_ = Walk(raw, func(v *Visit) Step {
		if !v.Leave && p.Match(v.Path) {
			matched = append(matched, v.PathString())
		}
		return Descend
	})
	if strings.Join(matched, " ") != "artifacts.0.b64 artifacts.2.b64" {
		t.Fatalf("matched %v", matched)
	}
	for _, bad := range []string{"a|b", "@this", "a..b"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
	esc, err := ParsePath(`x\.y.#`)
	if err != nil || esc.Len() != 2 || !esc.HasWildcard() {
		t.Fatalf("escaped path: %v %v", esc, err)
	}
}

// scanStringByBytes is scanString's reference: one byte at a time.
func scanStringByBytes(raw []byte, off int) (end, bad int) {
	bad = -1
	for i := off + 1; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			return i + 1, bad
		case c == '\\':
			if bad < 0 && jsonstr.EscapeLen(raw[i:]) == 0 {
				bad = i
			}
			i++ // the escaped byte, whatever it is
		case c < 0x20 && bad < 0:
			bad = i
		}
	}
	return 0, -1
}

// FuzzScanString: the eight-bytes-at-a-time scan agrees with the reference
// on where every string ends and on its first invalid byte.
func FuzzScanString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b"`, `"\\"`, `"\u00e9\uZZZZ"`, "\"ctl\x01\"", `"unterminated`, `"` + strings.Repeat("QUJD", 20) + `\n"`, "\"\xff\xfe\x7f\x80\""} {
		f.Add([]byte(s))
	}
	// Long enough for the blocks of printable ASCII: clean, then a quote,
	// a control character, a byte above ASCII or an escape past a block.
	long := strings.Repeat("QUJD", 3000)
	for _, tail := range []string{`"`, "\x01\"", "é\"", `\"x"`, `\u00e9"`, ""} {
		f.Add([]byte(`"` + long + tail))
		f.Add([]byte(`"` + long[:4500] + tail + long))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) == 0 || raw[0] != '"' {
			raw = append([]byte{'"'}, raw...)
		}
		end, bad := scanString(raw, 0)
		wantEnd, wantBad := scanStringByBytes(raw, 0)
		if end != wantEnd || bad != wantBad {
			t.Fatalf("scanString(%q) = %d, %d; want %d, %d", raw, end, bad, wantEnd, wantBad)
		}
		if e, ok := StringEnd(raw, 0); ok != (end > 0) || ok && e != end {
			t.Fatalf("StringEnd(%q) = %d, %v; scanString %d", raw, e, ok, end)
		}
	})
}

// FuzzWalkFilteredClean: over a JSON-in-text payload, a walk that skips
// the verbatim runs UnescapeRuns reports visits what a scanning walk
// visits and fails where it fails.
func FuzzWalkFilteredClean(f *testing.F) {
	for _, s := range []string{
		`{"content":"` + strings.Repeat("QUJD", 100) + `","name":"x"}`,
		`["a\"b", "` + strings.Repeat("é", 40) + `\u0001", {"k": "` + strings.Repeat("z", 70) + "\x01" + `"}]`,
		`{"bad":"` + strings.Repeat("x", 64) + `\q"}`,
		`{"open":"` + strings.Repeat("x", 64),
	} {
		f.Add([]byte(s), uint8(1))
		f.Add([]byte(s), uint8(16))
	}
	f.Fuzz(func(t *testing.T, text []byte, minRun uint8) {
		lit := jsonstr.Append(nil, text)
		payload, runs, err := jsonstr.UnescapeRuns(nil, lit[1:len(lit)-1], int(minRun))
		if err != nil || string(payload) != string(text) {
			t.Fatalf("round trip of %q: %q, %v", text, payload, err)
		}
		visits := func(clean []jsonstr.Run) (string, error) {
			var b strings.Builder
			err := WalkFilteredClean(payload, clean, 2, 8, 0, func(v *Visit) Step {
				fmt.Fprintf(&b, "%s %d %d %d %v|", v.PathString(), v.Kind, v.Off, v.End, v.Leave)
				return Descend
			})
			return b.String(), err
		}
		want, wantErr := visits(nil)
		got, gotErr := visits(runs)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("payload %q, runs %+v:\nskipping %s, %v\nscanning %s, %v", payload, runs, got, gotErr, want, wantErr)
		}
	})
}

func TestDepthWithin(t *testing.T) {
	deep := strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000)
	for _, tc := range []struct {
		in   string
		max  int
		want bool
	}{
		{`{"a":[1,2]}`, 2, true},
		{`{"a":[1,2]}`, 1, false},
		// many brackets, shallow: the count says nothing, the walk decides
		{"[" + strings.Repeat("[],", 1000) + "[]]", 2, true},
		{"[" + strings.Repeat("[],", 1000) + "[[]]]", 2, false},
		// brackets inside strings do not nest
		{`["` + strings.Repeat("[", 5000) + `"]`, 1, true},
		{deep, 199_999, false},
		{deep, 200_000, true},
	} {
		if got := DepthWithin([]byte(tc.in), tc.max); got != tc.want {
			t.Errorf("%.20s… within %d: %v, want %v", tc.in, tc.max, got, tc.want)
		}
		if got := StringDepthWithin(tc.in, tc.max); got != tc.want {
			t.Errorf("string %.20s… within %d: %v, want %v", tc.in, tc.max, got, tc.want)
		}
	}
}
