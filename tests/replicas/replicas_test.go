package replicas

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestMain(m *testing.M) {
	if os.Getenv(upstreamEnv) == "1" {
		serveBlobs(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var (
	artifactURI = regexp.MustCompile(`mcpx://artifacts/([A-Za-z0-9_.-]+)`)
	signedURL   = regexp.MustCompile(`http://[^"\\\s]+/artifacts/[^"\\\s]+`)
)

// TestReplicas: a 2026-07-28 client alternating between two replicas on
// one bucket stores an artifact through one and lists, reads (resource
// and signed URL), queries and collects it through the other; another
// principal gets "not found" on both; a 2025-11-25 session sticks to its
// replica; a subscription on one replica hears of an update made through
// the other (the upstream being shared).
func TestReplicas(t *testing.T) {
	c := startCluster(t)
	alice := newClient(t, c.URL, "tok-alice")
	bob := newClient(t, c.URL, "tok-bob")

	// Consecutive requests alternate replicas.
	for range 4 {
		alice.do("tools/list", `{}`)
	}
	for i := 1; i < len(alice.Trail); i++ {
		if alice.Trail[i] == alice.Trail[i-1] || alice.Trail[i] == "" {
			t.Fatalf("consecutive requests did not alternate replicas: %v", alice.Trail)
		}
	}

	const seed = 42
	want := report(seed)
	maker, res := alice.do("tools/call", `{"name":"blobs_report","arguments":{"seed":42}}`)
	raw := res.Get("result").Raw
	m := artifactURI.FindStringSubmatch(raw)
	u := signedURL.FindString(raw)
	if m == nil || u == "" || res.Get("result.isError").Bool() {
		t.Fatalf("blobs_report via %s: no artifact id or url in %s", maker, res.Raw)
	}
	id, taker := m[1], other(maker)
	t.Logf("artifact %s stored through %s; reading through %s", id, maker, taker)

	// Listed, read, fetched and queried through the other replica.
	if l := listAll(alice, taker); !strings.Contains(l, "mcpx://artifacts/"+id) {
		t.Errorf("resources/list via %s does not list %s: %s", taker, id, l)
	}
	rd := alice.on(taker, "resources/read", `{"uri":"mcpx://artifacts/`+id+`"}`)
	if got := rd.Get("result.contents.0.text").String(); got != string(want) {
		t.Errorf("resources/read via %s: %.300s", taker, rd.Raw)
	}
	if st, body := alice.get(taker, u); st != http.StatusOK || !bytes.Equal(body, want) {
		t.Errorf("signed URL via %s: HTTP %d, %d bytes, want the %d stored", taker, st, len(body), len(want))
	}
	q := alice.on(taker, "tools/call", `{"name":"artifacts_query","arguments":{"id":"`+id+`","json":"items.1234.name"}}`)
	if !strings.Contains(q.Get("result.content.0.text").String(), "item-42-1234") {
		t.Errorf("artifacts_query via %s: %s", taker, q.Raw)
	}

	// Scope holds on either replica: bob learns nothing of alice's artifact.
	for _, r := range []string{maker, taker} {
		if rd := bob.on(r, "resources/read", `{"uri":"mcpx://artifacts/`+id+`"}`); rd.Get("result").Exists() {
			t.Errorf("bob read alice's artifact via %s: %.300s", r, rd.Raw)
		}
		if q := bob.on(r, "tools/call", `{"name":"artifacts_query","arguments":{"id":"`+id+`","lines":"1"}}`); strings.Contains(q.Raw, "item-42") || !strings.Contains(q.Raw, "not found") {
			t.Errorf("bob's artifacts_query via %s: %.300s", r, q.Raw)
		}
		if l := listAll(bob, r); strings.Contains(l, id) {
			t.Errorf("bob's resources/list via %s lists alice's artifact", r)
		}
	}

	sessionSticks(t, c)
	subscriptionCrossesReplicas(t, c)

	// Collected from outside either replica; gone on both.
	gc, err := exec.Command(mcpx(t), "artifacts", "gc", "--config", c.GCConfig).CombinedOutput()
	if err != nil || !strings.Contains(string(gc), id) {
		t.Fatalf("artifacts gc: %v\n%s", err, gc)
	}
	for _, r := range []string{maker, taker} {
		if rd := alice.on(r, "resources/read", `{"uri":"mcpx://artifacts/`+id+`"}`); rd.Get("result").Exists() {
			t.Errorf("read via %s after gc: %.300s", r, rd.Raw)
		}
		if st, _ := alice.get(r, u); st != http.StatusNotFound {
			t.Errorf("signed URL via %s after gc: HTTP %d, want 404", r, st)
		}
	}

	// Both replicas served; haproxy's stats count them too.
	seen := map[string]int{}
	for _, r := range append(alice.Trail, bob.Trail...) {
		seen[r]++
	}
	if seen["r1"] == 0 || seen["r2"] == 0 {
		t.Errorf("requests per replica: %v", seen)
	}
	if n := served(t, c); n["r1"] == 0 || n["r2"] == 0 {
		t.Errorf("haproxy stats, sessions per server: %v", n)
	}
}

// listAll follows resources/list's pages on replica r and returns them.
func listAll(c *client, r string) string {
	var all strings.Builder
	cursor := ""
	for range 10 {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		page := c.on(r, "resources/list", params)
		all.WriteString(page.Get("result.resources").Raw)
		if cursor = page.Get("result.nextCursor").String(); cursor == "" {
			break
		}
	}
	return all.String()
}

// served reads haproxy's CSV stats: total sessions per server.
func served(t *testing.T, c *cluster) map[string]int64 {
	resp, err := http.Get(c.Stats + ";csv")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n := map[string]int64{}
	sc := bufio.NewScanner(resp.Body)
	stot := -1
	for sc.Scan() {
		f := strings.Split(strings.TrimPrefix(sc.Text(), "# "), ",")
		if stot < 0 {
			for i, name := range f {
				if name == "stot" {
					stot = i
				}
			}
			continue
		}
		if len(f) > stot && f[0] == "mcpx" && (f[1] == "r1" || f[1] == "r2") {
			n[f[1]] = gjson.Parse(f[stot]).Int()
		}
	}
	return n
}

// sessionSticks: a 2025-11-25 session through haproxy stays on the
// replica that answered its initialize (the stick table), where its
// session lives; every request of it succeeds.
func sessionSticks(t *testing.T, c *cluster) {
	t.Helper()
	post := func(sid, body string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, c.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer tok-alice")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		return resp, b.String()
	}
	resp, body := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sticky","version":"1"}}}`)
	sid, home := resp.Header.Get("Mcp-Session-Id"), resp.Header.Get("X-Mcpx-Replica")
	if sid == "" || resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: HTTP %d, no session: %s", resp.StatusCode, body)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := range 4 {
		resp, body := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if r := resp.Header.Get("X-Mcpx-Replica"); resp.StatusCode != http.StatusOK || r != home || !strings.Contains(body, "blobs_report") {
			t.Fatalf("session request %d: HTTP %d on %s, the session lives on %s: %.300s", i, resp.StatusCode, r, home, body)
		}
	}
}

// subscriptionCrossesReplicas: a subscriptions/listen stream on one
// replica hears of an update made through a tool call on the other. Each
// replica subscribed to the shared upstream, which tells every
// subscriber; nothing passes between the replicas themselves.
func subscriptionCrossesReplicas(t *testing.T, c *cluster) {
	t.Helper()
	alice := newClient(t, c.URL, "tok-alice")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := alice.request("subscriptions/listen", `{"notifications":{"resourceSubscriptions":["`+boardURI+`"]}}`).WithContext(ctx)
	resp, err := alice.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	listener := resp.Header.Get("X-Mcpx-Replica")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("subscriptions/listen: HTTP %d", resp.StatusCode)
	}
	events := make(chan gjson.Result, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- gjson.Parse(d)
			}
		}
	}()
	next := func() (gjson.Result, bool) {
		select {
		case e, ok := <-events:
			return e, ok
		case <-time.After(15 * time.Second):
			return gjson.Result{}, false
		}
	}
	if e, ok := next(); !ok || e.Get("method").String() != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first event on the stream (on %s): %s", listener, e.Raw)
	}
	toucher := newClient(t, c.URL, "tok-alice")
	for range 4 {
		r, res := toucher.do("tools/call", `{"name":"shared_touch","arguments":{}}`)
		if res.Get("result.isError").Bool() || !res.Get("result").Exists() {
			t.Fatalf("shared_touch via %s: %s", r, res.Raw)
		}
		e, ok := next()
		if !ok || e.Get("method").String() != "notifications/resources/updated" || e.Get("params.uri").String() != boardURI {
			t.Fatalf("after shared_touch via %s, the stream on %s got %s (ok %v)", r, listener, e.Raw, ok)
		}
		if r != listener {
			return // told of an update seen by the other replica
		}
	}
	t.Fatalf("shared_touch never reached the replica other than %s: %v", listener, toucher.Trail)
}
