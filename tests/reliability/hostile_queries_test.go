//go:build reliability

package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// queryWorkBytes is the gateway's serve.limits.max_work_bytes in
// TestHostileQueries: room for two jq children (256 MiB each) at once.
const queryWorkBytes = 512 << 20

// queryHeadroom is what the gateway may hold past its idle RSS and its
// budget while it answers the attack: two dozen requests' buffers and
// goroutines, and the sampler's rounding.
const queryHeadroom = 64 << 20

// TestHostileQueries: what took `mcpx serve --listen` down or out of
// memory, all at once against a built gateway with a 512 MiB
// max_work_bytes: json paths over a 16 MB document nested 8 million
// levels (a stack overflow killed the process), jq string and array
// bombs and a self-doubling tostring (eight at once took 3.2 GB), and
// 150,000-word searches (60 s and 482 MB each). Every call is answered
// with a tool error that says what limit it hit; the gateway and the jq
// children it runs together stay within the gateway's idle RSS plus the
// budget (sampled every 10 ms, the children's private memory counted),
// its VmHWM too; and it answers a plain query afterwards.
func TestHostileQueries(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	// Two servers: with one, its tool has no server prefix and
	// startGateway's wait for NAME_blob would not see it.
	cfg := gatewayConfig(t, dir, addr, map[string]map[string]any{"a": nil, "b": nil}, map[string]any{"dir": filepath.Join(dir, "artifacts")})
	b, err := sjson.SetBytes(mustRead(t, cfg), "serve.limits.max_work_bytes", queryWorkBytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, cfg, addr)
	s, err := newSession(g.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()

	// The documents, stored through /transform in the session's scope.
	const depth = 8_000_000
	deep := storeResult(t, g, s, []byte(strings.Repeat("[", depth)+strings.Repeat("]", depth)))
	var items bytes.Buffer
	items.WriteString(`{"items":[`)
	for i := range 3000 {
		if i > 0 {
			items.WriteByte(',')
		}
		fmt.Fprintf(&items, `{"id":%d,"name":"item %d"}`, i, i)
	}
	items.WriteString(`]}`)
	// The guardrail stores the items array whole, and leaves its first
	// items in the result.
	doc := storeResult(t, g, s, items.Bytes())

	idle := rss(t, g.cmd.Process.Pid, "VmRSS:")
	peak := sampleMemory(t, g.cmd.Process.Pid)
	type call struct {
		tool string
		args map[string]any
		want []string // the error says one of these
	}
	// A bomb ends at its child's cap, or waits for the budget, or (two at
	// a time on a busy machine) meets the 5 s deadline first.
	const busy = "the memory budget is in use by other work"
	memory := []string{"it needed more than the 268.4 MB of memory a query may use", busy, "the jq program ran past 5s"}
	var calls []call
	for range 4 {
		calls = append(calls,
			call{"artifacts_query", map[string]any{"id": deep, "json": "0.0.0.0"}, []string{deep + " nests 8,000,000 levels deep, past the 10,000 a json path query reads; ask for lines, bytes or grep instead", busy}},
			call{"artifacts_query", map[string]any{"id": doc, "jq": `"x" * 1e9 | length`}, memory},
			call{"artifacts_query", map[string]any{"id": doc, "jq": "[range(1e8)]"}, memory},
			call{"artifacts_query", map[string]any{"id": doc, "jq": "def f: [., .]; reduce range(40) as $i (.; f) | tostring | length"}, memory},
			call{"artifacts_query", map[string]any{"id": doc, "jq": "tostring | . * 5000 | length"}, memory},
			call{"artifacts_search", map[string]any{"query": strings.Repeat("item ", 150_000)}, []string{"search query too long: it has 750000 characters, over the 1000 a search takes"}},
		)
	}
	start := time.Now()
	answers := make([]string, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			params, _ := json.Marshal(map[string]any{"name": c.tool, "arguments": c.args})
			var res gjson.Result
			if err := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, 1000+i, params), &res); err != nil {
				answers[i] = "no answer: " + err.Error()
				return
			}
			if !res.Get("result.isError").Bool() {
				answers[i] = "not an error: " + tail(res.Raw, 300)
				return
			}
			answers[i] = res.Get("result.content.0.text").String()
		})
	}
	wg.Wait()
	took := time.Since(start)
	memErrors := 0
	for i, c := range calls {
		ok := false
		for _, w := range c.want {
			ok = ok || strings.Contains(answers[i], w)
		}
		if !ok {
			t.Errorf("%s %.80v: %q\nwant one of %q", c.tool, c.args, answers[i], c.want)
		}
		if strings.Contains(answers[i], "needed more than") {
			memErrors++
		}
	}
	if memErrors == 0 {
		t.Errorf("no jq program reached its child's cap: %q", answers)
	}
	top := peak()
	hwm := rss(t, g.cmd.Process.Pid, "VmHWM:")
	t.Logf("%d hostile calls in %v (%d ended at a jq child's cap); gateway idle %d MB, peak with its jq children %d MB, VmHWM %d MB; budget %d MB",
		len(calls), took, memErrors, idle>>20, top>>20, hwm>>20, queryWorkBytes>>20)
	if limit := idle + queryWorkBytes + queryHeadroom; top > limit || hwm > limit {
		t.Errorf("the gateway and its jq children held %d MB (VmHWM %d MB), over idle %d MB + budget %d MB + %d MB", top>>20, hwm>>20, idle>>20, queryWorkBytes>>20, queryHeadroom>>20)
	}

	// Alive, and answering.
	select {
	case <-g.exited:
		t.Fatal("the gateway exited")
	default:
	}
	var res gjson.Result
	if err := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"artifacts_query","arguments":{"id":%q,"jq":".[2999].name"}}}`, doc), &res); err != nil ||
		res.Get("result.content.0.text").String() != `"item 2999"` {
		t.Errorf("a plain query afterwards: %v %s", err, tail(res.Raw, 300))
	}
}

// storeResult posts a tool result to the gateway's /transform in s's
// scope and returns the id of the artifact that holds it whole.
func storeResult(t *testing.T, g *gateway, s *session, result []byte) string {
	t.Helper()
	resp, err := httpClient.Post("http://"+g.addr+"/transform?session="+s.id, "application/json", bytes.NewReader(result))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	m := artifactURI.FindStringSubmatch(out.String())
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("transform: %d %s", resp.StatusCode, tail(out.String(), 300))
	}
	return m[1]
}

// sampleMemory samples, every 10 ms until the test ends, the private
// memory of process pid and of the jq children it runs, and returns a
// function that reports the largest sum seen so far.
func sampleMemory(t *testing.T, pid int) func() int64 {
	var (
		mu  sync.Mutex
		top int64
	)
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			sum := statusBytes(pid, "VmRSS:")
			tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
			for _, f := range tasks {
				b, _ := os.ReadFile(f)
				for _, c := range strings.Fields(string(b)) {
					env, _ := os.ReadFile("/proc/" + c + "/environ")
					if bytes.Contains(env, []byte("MCPX_JQ_CHILD=")) {
						n, _ := strconv.Atoi(c)
						sum += statusBytes(n, "RssAnon:")
					}
				}
			}
			mu.Lock()
			top = max(top, sum)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return top
	}
}

// rss is a field of process pid's /proc status, in bytes; the test fails
// without it.
func rss(t *testing.T, pid int, field string) int64 {
	t.Helper()
	n := statusBytes(pid, field)
	if n == 0 {
		t.Fatalf("no %s for process %d", field, pid)
	}
	return n
}

// statusBytes is a "NAME: N kB" field of process pid's /proc status in
// bytes, 0 when the process or the field is gone.
func statusBytes(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
