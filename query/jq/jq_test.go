package jq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/query"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func put(t testing.TB, st store.Store, mime string, data []byte) store.Ref {
	t.Helper()
	ref, err := st.Put(context.Background(), bytes.NewReader(data), store.PutOptions{Namespace: "test", MIMEType: mime})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// runJQ is query.Run of a jq program with this package's runner, as
// "mcpx artifacts query --jq" and the gateway run it.
func runJQ(st store.Store, ref store.Ref, program string, b query.Budget) (query.Answer, error) {
	b.JQ = Run
	return query.Run(context.Background(), st, ref, query.Request{JQ: program}, b)
}

func TestRunAnswers(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"items":[{"name":"a","n":1},{"name":"b","n":2}],"total":2}`))
	lines := put(t, st, "application/x-ndjson", []byte("{\"n\":1}\n{\"n\":2}\n"))
	for _, c := range []struct {
		name, program string
		ref           store.Ref
		b             query.Budget
		want          query.Answer
	}{
		{"select", ".items[] | select(.n > 1) | .name", js, query.Budget{}, query.Answer{Text: `"b"`, Total: 1}},
		{"each value", ".n * 10", lines, query.Budget{}, query.Answer{Text: "10\n20", Total: 2}},
		{"over budget", "repeat(.total)", js, query.Budget{MaxChars: 10}, query.Answer{Text: strings.Repeat("2\n", 99) + "2",
			Cut: "output cut at result 101, over the 400-character budget; narrow the program (first, limit(n; …), .[a:b])"}},
		// 200 bytes of text: "[", 39 of `"é",` (5 bytes) and `"é"`; the
		// next byte would be a comma.
		{"first output cut", `[range(1000)] | map("é")`, js, query.Budget{MaxChars: 10}, query.Answer{Text: "[" + strings.Repeat(`"é",`, 39) + `"é"`,
			Cut: "output cut at result 1, over the 400-character budget; narrow the program (first, limit(n; …), .[a:b])"}},
		{"halt", "1, halt, 2", js, query.Budget{}, query.Answer{Text: "1", Total: 1}},
	} {
		a, err := runJQ(st, c.ref, c.program, c.b)
		if err != nil || fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("%s: %+v %v\nwant %+v", c.name, a, err, c.want)
		}
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"a":[1,2,3]}`))
	text := put(t, st, "text/plain", []byte("line 1\nline 2\n"))
	bin := put(t, st, "application/octet-stream", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	for _, c := range []struct {
		name, program string
		ref           store.Ref
		want          error
		msg           string
	}{
		{"invalid", ".a |||", js, query.ErrBadProgram, "query: invalid jq program: unexpected token"},
		{"unknown function", "nosuch(1)", js, query.ErrBadProgram, "function not defined: nosuch/1"},
		{"runtime error", ".a.b", js, query.ErrBadProgram, "expected an object but got: array"},
		{"not json", ".", text, query.ErrBadRequest, fmt.Sprintf("query: bad request: %s is not JSON (invalid character 'l' looking for beginning of value); ask for lines or grep", text.ID)},
		{"binary", ".", bin, query.ErrNotText, "bytes A-B for a hex dump"},
	} {
		_, err := runJQ(st, c.ref, c.program, query.Budget{})
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.msg) {
			t.Errorf("%s: %v, want %v with %q", c.name, err, c.want, c.msg)
		}
	}
}

// Programs that allocate without bound end in their child at its memory
// cap, and those that loop at the deadline, each with an error that says
// which; the process that asked holds none of it. The allocating ones
// have a deadline no loaded machine reaches before the cap (filling it
// took over a minute under -race at a load of 24 on two cores); the
// looping ones never end on their own, so an answer that names the
// deadline is the deadline's doing; it comes within a second and four
// times what a small query takes here, measured first, of the deadline.
func TestRunRunaways(t *testing.T) {
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"a":1,"items":[`+strings.Repeat(`"`+strings.Repeat("i", 1000)+`",`, 1000)+`"last"]}`))
	const mem = "query: over budget: the jq program was stopped: it needed more than the 201.3 MB of memory a query may use"
	const capFirst = 30 * time.Minute
	start := time.Now()
	if _, err := runJQ(st, js, ".a", query.Budget{}); err != nil {
		t.Fatal(err)
	}
	small := time.Since(start)
	for _, c := range []struct {
		program string
		b       query.Budget
		want    string
	}{
		{`"x" * 1e9 | length`, query.Budget{MaxMemory: 192 << 20, Timeout: capFirst}, mem},
		{`"x" * 3e8 | length`, query.Budget{MaxMemory: 192 << 20, Timeout: capFirst}, mem},
		{"[.items[]] | tostring | . * 300 | length", query.Budget{MaxMemory: 192 << 20, Timeout: capFirst}, mem},
		{"def f: [., .]; reduce range(40) as $i (.items; f) | tostring | length", query.Budget{MaxMemory: 192 << 20, Timeout: capFirst}, mem},
		// arrays of small or shared values grow by 16 bytes an element:
		// slow to fill a large cap under -race on a loaded machine, so a
		// small one
		{"[range(1e9)]", query.Budget{MaxMemory: 48 << 20, Timeout: capFirst}, "query: over budget: the jq program was stopped: it needed more than the 50.3 MB of memory a query may use"},
		{"[repeat(.)]", query.Budget{MaxMemory: 48 << 20, Timeout: capFirst}, "query: over budget: the jq program was stopped: it needed more than the 50.3 MB of memory a query may use"},
		{"def f: f; f", query.Budget{Timeout: 300 * time.Millisecond}, "query: over budget: the jq program ran past 300ms"},
		{"last(range(1e12))", query.Budget{Timeout: 300 * time.Millisecond}, "query: over budget: the jq program ran past 300ms"},
	} {
		start := time.Now()
		_, err := runJQ(st, js, c.program, c.b)
		took := time.Since(start)
		if !errors.Is(err, query.ErrBudget) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.program, err, c.want)
		}
		if c.b.Timeout < capFirst && took > c.b.Timeout+time.Second+4*small {
			t.Errorf("%s: took %v, past its %v deadline by more than a second and four times a small query's %v", c.program, took, c.b.Timeout, small)
		}
	}
}

// String bombs at once: each waits for its share of the process's memory
// budget, ends in its child at its cap, and answers a clear error; the
// asking process's own peak memory does not grow by what they asked for.
func TestRunBombsAtOnce(t *testing.T) {
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"a":1}`))
	budget := membudget.New(384 << 20)
	before := peakRSS(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = runJQ(st, js, `"x" * 3e8 | length`, query.Budget{MaxMemory: 192 << 20, Memory: budget, Timeout: 20 * time.Second})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, query.ErrBudget) || !strings.Contains(err.Error(), "it needed more than the 201.3 MB of memory a query may use") {
			t.Errorf("bomb %d: %v", i, err)
		}
	}
	if budget.Peak() != 384<<20 || budget.InUse() != 0 {
		t.Errorf("budget peak %d in use %d: want two 192 MiB children at a time, then none", budget.Peak(), budget.InUse())
	}
	// The same cap runs what fits.
	if a, err := runJQ(st, js, `"x" * 2e7 | length`, query.Budget{MaxMemory: 192 << 20, Memory: budget}); err != nil || a.Text != "20000000" {
		t.Errorf("a 20 MB string under the same cap: %+v %v", a, err)
	}
	// Six 300 MB strings in this process would have raised it by 1.8 GB.
	if grew := peakRSS(t) - before; grew > 100<<20 {
		t.Errorf("this process's peak RSS grew by %d bytes", grew)
	}
}

// A caller that leaves stops its program at once: the child is killed,
// not left to burn a CPU.
func TestRunCallerLeaves(t *testing.T) {
	st := memstore.New(memstore.Config{})
	js := put(t, st, "application/json", []byte(`{"a":1}`))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := query.Run(ctx, st, js, query.Request{JQ: "last(range(1e12))"}, query.Budget{JQ: Run, Timeout: time.Minute})
	if took := time.Since(start); !errors.Is(err, context.Canceled) || took > time.Second {
		t.Fatalf("after 200ms the caller left: %v after %v", err, took)
	}
	if kids := children(t); kids != "" {
		t.Errorf("children left running: %s", kids)
	}
}

// peakRSS is this process's peak resident memory (VmHWM).
func peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var kb int64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
		}
	}
	return kb << 10
}

// children lists this process's child processes (the jq children still
// running).
func children(t *testing.T) string {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var all []string
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		all = append(all, strings.Fields(string(b))...)
	}
	return strings.Join(all, " ")
}
