package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/internal/browsertest"
	"github.com/mcpx-dev/mcpx/store"
)

// The page and its assets: served with a CSP that allows this origin
// only and no framing, behind the loopback guard, nothing else under /ui.
func TestUIPageAndAssets(t *testing.T) {
	f := newAPIFixture(t, testTokens, auth.Limits{})
	code, b, h := f.do("GET", "/", "", nil)
	if code != 200 || h.Get("Content-Security-Policy") != uiCSP || h.Get("X-Frame-Options") != "DENY" ||
		!strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %v", code, h)
	}
	if !strings.Contains(string(b), `name="mcpx-preview-bytes" content="`+strconv.Itoa(DefaultPreviewBytes)+`"`) {
		t.Errorf("the page does not carry preview_bytes: %.400s", b)
	}
	if code, b, h := f.do("GET", "/ui/app.js", "", nil); code != 200 || !strings.Contains(h.Get("Content-Type"), "javascript") || !strings.Contains(string(b), "Last-Event-ID") {
		t.Errorf("app.js: %d %s", code, h.Get("Content-Type"))
	}
	for _, p := range []string{"/ui/index.html", "/ui/nothing.js", "/ui/..%2fui.go", "/ui/%2e%2e%2fweb.go"} {
		if code, _, _ := f.do("GET", p, "", nil); code != 404 {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}
	// DNS rebinding: the page is not served to another host name
	if code, _, _ := f.do("GET", "/", "", nil, "Host", "evil.example:80"); code != 403 {
		t.Errorf("GET / with a foreign Host: %d, want 403", code)
	}
	// GET /resources lists the servers, authenticated
	if code, _, _ := f.do("GET", "/resources", "", nil); code != 401 {
		t.Errorf("GET /resources without a token: %d, want 401", code)
	}
	if code, b, _ := f.do("GET", "/resources", "tok-alice", nil); code != 200 || strings.TrimSpace(string(b)) != `{"servers":["docs"]}` {
		t.Errorf("GET /resources: %d %s", code, b)
	}
}

// POST /transform publishes result_rewritten with what the call kept out
// and the tool's display hints, to the caller only.
func TestUIResultRewrittenEvent(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	aliceCh, stopAlice := f.stream("tok-alice", "")
	defer stopAlice()
	time.Sleep(50 * time.Millisecond)
	rows := strings.Repeat(`{"region": "north", "revenue": 12345}, `, 400)
	payload := `{"artifacts": [{"name": "rows.json", "b64": "` + base64.StdEncoding.EncodeToString([]byte(`[`+rows+`{}]`)) +
		`", "mime": "application/json"}], "display": {"open_canvas": true, "primary_file": "rows.json"}}`
	result := `{"content": [{"type": "text", "text": "done"}], "structuredContent": ` + payload + `}`
	code, out, _ := f.do("POST", "/transform?server=files&tool=export", "tok-alice", strings.NewReader(result))
	if code != 200 {
		t.Fatalf("transform: %d %s", code, out)
	}
	var res struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(out, &res)
	var want KeptOut
	if err := json.Unmarshal(res.Meta["mcpx/kept_out"], &want); err != nil || want.Bytes <= 0 {
		t.Fatalf("the result has no kept_out: %s", out)
	}
	for {
		ev := next(t, aliceCh)
		if ev.typ != EventResultRewritten {
			continue
		}
		var got Event
		if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
			t.Fatal(err)
		}
		if got.KeptOut == nil || *got.KeptOut != want || got.Server != "files" || got.Tool != "export" ||
			len(got.Artifacts) != 1 || got.Artifacts[0].Filename != "rows.json" ||
			!jsonEqual(got.Display, `{"open_canvas": true, "primary_file": "rows.json"}`) {
			t.Fatalf("result_rewritten: %s (want kept_out %+v)", ev.data, want)
		}
		return
	}
}

// With tokens, the page asks for one, keeps it in sessionStorage (never
// in the URL), and then shows the caller's artifacts only; the resource
// browser lists and reads on demand.
func TestUIBrowserTokenAndResources(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	// after the fixture: cleanups run last first, so the browser (and its
	// open event stream) goes before the server closes
	ctx := browsertest.Start(t, 45*time.Second)
	f.put(`{"mine": true}`, "application/json", "alice.json", store.Scope{TenantID: "acme", UserID: "alice"})
	f.put("bob's", "text/plain", "bob.txt", store.Scope{TenantID: "acme", UserID: "bob"})
	run, poll := pageActions(t, ctx)
	run("open", chromedp.Navigate(f.srv.URL+"/"))
	poll("the token request", `!document.querySelector('#notice').hidden && document.querySelector('#notice').textContent.includes('token')`)
	run("enter the token", chromedp.SendKeys(chromedp.CSS("#token"), "tok-alice"), chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)))
	poll("the live stream", `document.querySelector('#live.on') !== null`)
	poll("alice's artifact", `[...document.querySelectorAll('#artifacts li.card .name')].map(e => e.textContent).join(",") === "alice.json"`)
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem('mcpx-token') + "|" + location.href`)); err != nil || got != "tok-alice|"+f.srv.URL+"/" {
		t.Fatalf("token kept as %q (%v), want in sessionStorage only", got, err)
	}
	// a live event for alice appears; bob's does not
	f.do("POST", "/transform?server=files&tool=get", "tok-bob", strings.NewReader(fmt.Sprintf(`{"content":[{"type":"resource","resource":{"uri":"file:///b.pdf","mimeType":"application/pdf","blob":%q}}]}`,
		base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n"+strings.Repeat("bob ", 3000))))))
	f.do("POST", "/transform?server=files&tool=get", "tok-alice", strings.NewReader(fmt.Sprintf(`{"content":[{"type":"resource","resource":{"uri":"file:///a.pdf","mimeType":"application/pdf","blob":%q}}]}`,
		base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n"+strings.Repeat("alice ", 3000))))))
	poll("alice's live artifact", `document.querySelectorAll('#artifacts li.card').length === 2 && document.querySelector('#artifacts li.card[data-viewer=pdf]') !== null`)
	// resources: the server list, a listing, a read
	poll("the server list", `document.querySelector('#res-server').value === 'docs'`)
	run("list resources", chromedp.Click(chromedp.CSS(`#res-form button`)))
	poll("the listing", `document.querySelector('#resources li.resource button') !== null`)
	run("read one", chromedp.Click(chromedp.CSS(`#resources li.resource button`)))
	poll("the contents", `(document.querySelector('#resource-view pre') || {}).textContent === 'hello acme/alice'`)
	browsertest.Screenshot(t, ctx, "token-and-resources")
}

// pageActions are run and poll on ctx's page for t: an action that fails,
// or an expression not true within 10 s, keeps a screenshot and fails t.
func pageActions(t *testing.T, ctx context.Context) (run func(what string, actions ...chromedp.Action[chromedp.Void]), poll func(what, js string)) {
	return func(what string, actions ...chromedp.Action[chromedp.Void]) {
			t.Helper()
			browsertest.Do(t, ctx, what, actions...)
		}, func(what, js string) {
			t.Helper()
			browsertest.Poll(t, ctx, what, js, 10*time.Second)
		}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// The Calls pane shows, on load, the caller's recent calls from the
// event buffer (GET /calls), never another principal's, and a call made
// while the page is open goes on top of them.
func TestUIBrowserRecentCallsOnLoad(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	ctx := browsertest.Start(t, 45*time.Second)
	pdf := func(who string) string {
		return fmt.Sprintf(`{"content":[{"type":"resource","resource":{"uri":"file:///%s.pdf","mimeType":"application/pdf","blob":%q}}]}`,
			who, base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n"+strings.Repeat(who+" ", 3000))))
	}
	for _, c := range []struct{ tok, tool string }{{"tok-alice", "export"}, {"tok-bob", "bobs-export"}} {
		if code, out, _ := f.do("POST", "/transform?server=files&tool="+c.tool, c.tok, strings.NewReader(pdf(c.tool))); code != 200 {
			t.Fatalf("transform: %d %s", code, out)
		}
	}
	run, poll := pageActions(t, ctx)
	calls := `[...document.querySelectorAll('#calls li.call')].map(li => li.querySelector('.tool').textContent + ': ' + li.querySelector('.kept').textContent.replace(/~?\d[\d.,]*/g, 'N')).join(' | ')`
	run("open", chromedp.Navigate(f.srv.URL+"/"))
	run("enter the token", chromedp.SendKeys(chromedp.CSS("#token"), "tok-alice"), chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)))
	poll("the live stream", `document.querySelector('#live.on') !== null`)
	poll("alice's call made before the page opened", `document.querySelectorAll('#calls li.call').length > 0`)
	time.Sleep(300 * time.Millisecond) // anything else would have come by now
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](calls))
	if want := "files / export: kept out N KB (N tokens), N artifact"; err != nil || got != want {
		t.Fatalf("calls on load = %q (%v), want %q", got, err, want)
	}
	if code, out, _ := f.do("POST", "/transform?server=files&tool=live", "tok-alice", strings.NewReader(pdf("live"))); code != 200 {
		t.Fatalf("transform: %d %s", code, out)
	}
	poll("the live call", `document.querySelectorAll('#calls li.call').length === 2`)
	got, _ = chromedp.Run(ctx, chromedp.Evaluate[string](calls))
	if want := "files / live: kept out N KB (N tokens), N artifact | files / export: kept out N KB (N tokens), N artifact"; got != want {
		t.Fatalf("calls = %q, want %q", got, want)
	}
	browsertest.Screenshot(t, ctx, "recent-calls")
}

// Preview on a card far down the list shows the preview where the user
// is looking, not at the top of the page scrolled out of view.
func TestUIBrowserPreviewComesIntoView(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, nil, auth.Limits{})
	ctx := browsertest.Start(t, 45*time.Second)
	for i := range 30 {
		f.put(fmt.Sprintf("notes number %d\n", i), "text/plain", fmt.Sprintf("notes-%02d.txt", i), store.Scope{})
	}
	run, poll := pageActions(t, ctx)
	run("open", chromedp.Navigate(f.srv.URL+"/"))
	poll("thirty cards", `document.querySelectorAll('#artifacts li.card').length === 30`)
	// the oldest card is the last: scroll to it and preview it
	scrolled, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
		const b = [...document.querySelectorAll('#artifacts li.card')].pop();
		b.scrollIntoView({block: 'end'});
		b.querySelector('button.preview').click();
		return window.scrollY; })()`))
	if err != nil || scrolled < 500 {
		t.Fatalf("scrolled to %v (%v): the list should be longer than the window", scrolled, err)
	}
	poll("the preview", `(document.querySelector('#viewer pre.preview-text') || {}).textContent === 'notes number 0\n'`)
	time.Sleep(500 * time.Millisecond) // a smooth scroll ends
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const r = document.querySelector('#viewer pre.preview-text').getBoundingClientRect();
		return r.top >= 0 && r.bottom <= innerHeight ? 'in view' : 'top ' + Math.round(r.top) + ', bottom ' + Math.round(r.bottom) + ' of a ' + innerHeight + 'px window'; })()`))
	if err != nil || got != "in view" {
		browsertest.Screenshot(t, ctx, "failed")
		t.Fatalf("the preview is not in view after Preview: %s (%v)", got, err)
	}
	browsertest.Screenshot(t, ctx, "preview-in-view")
}

// The token field is wide enough for its whole placeholder: the text's
// rendered width fits inside the field's padding, in a wide window and a
// narrow one.
func TestUIBrowserTokenPlaceholderFits(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	ctx := browsertest.Start(t, 45*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	const measure = `(() => {
		const i = document.querySelector('#token'), cs = getComputedStyle(i);
		const c = document.createElement('canvas').getContext('2d');
		c.font = cs.font;
		const text = c.measureText(i.placeholder).width;
		const room = i.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
		return text <= room ? 'fits' : 'the placeholder is ' + text.toFixed(1) + 'px wide, the field has room for ' + room.toFixed(1) + 'px'; })()`
	for _, width := range []int64{1400, 900} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 800)); err != nil {
			t.Fatal(err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](measure))
		browsertest.Screenshot(t, ctx, fmt.Sprintf("token-field-%d", width))
		if err != nil || got != "fits" {
			t.Errorf("at %d px: %s (%v)", width, got, err)
		}
	}
}
