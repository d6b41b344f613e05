package cli

// The artifact service's UI in a real headless Chromium (chromedp): mcpx serve
// --listen runs as a process (this test binary re-executed as mcpx, see
// TestMain) over a stdio upstream (the test binary again, runUIUpstream)
// whose tool returns an HTML page with a script, a PNG, a PDF and JSON.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/browsertest"
)

// uiUpstreamEnv makes the test binary the UI test's stdio MCP server;
// mcpxMainEnv makes it mcpx itself (run with its arguments).
const (
	uiUpstreamEnv = "MCPX_UI_TEST_UPSTREAM"
	mcpxMainEnv   = "MCPX_TEST_RUN_MAIN"
)

// uiHTML tries every way out of its frame: a script and an event handler
// that mark the parent page and retitle it.
const uiHTML = `<!doctype html><html><head><title>report</title></head><body>
<h1>Quarterly report</h1><p>Rendered in a sandboxed frame: this text shows, its script does not run.</p>
<script>try { window.parent.__pwned = "script"; } catch (e) {} try { parent.document.title = "pwned"; } catch (e) {} document.title = "pwned-inner"; document.body.append("SCRIPT RAN");</script>
<img src="data:," onerror="try { parent.__pwned = 'onerror'; } catch (e) {}">
</body></html>`

// uiJSON is large enough that the rewritten result is smaller than the
// original, so the engine reports what it kept out.
var uiJSON = func() string {
	rows := make([]string, 300)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"region": "r%03d", "revenue": %d, "ok": %t}`, i, i*7919, i%3 == 0)
	}
	return `{"quarter": "Q3", "count": 300, "missing": null, "rows": [` + strings.Join(rows, ", ") + `]}`
}()

// uiPNG is a 64×48 gradient.
func uiPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), 160, 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// uiPDF is a valid one-page PDF with a line of text.
func uiPDF() []byte {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		"", // the content stream, below
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	text := "BT /F1 18 Tf 24 70 Td (mcpx PDF preview) Tj ET"
	objs[3] = fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(text), text)
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// uiToolResult is the tool's result: tool output contract v2 (artifacts
// with names and types, display hints) as structured content and text.
func uiToolResult() []byte {
	b64 := base64.StdEncoding.EncodeToString
	payload, _ := json.Marshal(map[string]any{
		"results": map[string]string{"summary": "Report generated"},
		"artifacts": []map[string]string{
			{"name": "report.html", "b64": b64([]byte(uiHTML)), "mime": "text/html"},
			{"name": "chart.png", "b64": b64(uiPNG()), "mime": "image/png"},
			{"name": "doc.pdf", "b64": b64(uiPDF()), "mime": "application/pdf"},
			{"name": "data.json", "b64": b64([]byte(uiJSON)), "mime": "application/json"},
		},
		"display": map[string]any{"open_canvas": true, "primary_file": "report.html", "mode": "replace", "viewer_hint": "html"},
	})
	res, _ := json.Marshal(map[string]any{
		"content":           []map[string]string{{"type": "text", "text": string(payload)}},
		"structuredContent": json.RawMessage(payload),
	})
	return res
}

// runUIUpstream serves one tool, report, answering uiToolResult.
func runUIUpstream() {
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		id := gjson.GetBytes(line, "id").Raw
		answer := func(res string) { os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":` + res + "}\n") }
		switch gjson.GetBytes(line, "method").String() {
		case "initialize":
			answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"uistub","version":"1"}}`)
		case "tools/list":
			answer(`{"tools":[{"name":"report","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			answer(string(uiToolResult()))
		default:
			if id != "" {
				answer(`{}`)
			}
		}
	}
}

// startServeProcess runs "mcpx serve --listen 127.0.0.1:0" over the
// upstream and returns its base URL and its folder (mcpx.json, the
// config, with no retention section; store, the store); it is stopped
// (SIGTERM) at cleanup.
func startServeProcess(t *testing.T) (base, dir string) {
	t.Helper()
	return startServeConfig(t, map[string]any{"mcpServers": map[string]any{"files": uiUpstream(t)}})
}

// uiUpstream is the config entry of the UI test's stdio upstream.
func uiUpstream(t *testing.T) map[string]any {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{uiUpstreamEnv: "1"}}
}

// startServeConfig is startServeProcess with the config config.
func startServeConfig(t *testing.T, config map[string]any) (base, dir string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	cfg, _ := json.Marshal(config)
	cfgPath := filepath.Join(dir, "mcpx.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "serve", "--config", cfgPath, "--store", filepath.Join(dir, "store"), "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), mcpxMainEnv+"=1", uiUpstreamEnv+"=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	addr := make(chan string, 1)
	var log bytes.Buffer
	go func() {
		re := regexp.MustCompile(`MCP at http://([^/\s]+)/mcp`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a, dir
	case <-time.After(20 * time.Second):
		t.Fatalf("mcpx serve did not listen in 20s")
	}
	return "", ""
}

// mcpClient is a minimal streamable-HTTP MCP client of /mcp.
type mcpClient struct {
	t       *testing.T
	url     string
	session string
	next    int
}

func (c *mcpClient) call(method, params string) gjson.Result {
	c.t.Helper()
	c.next++
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.next, method, params)
	res := c.post(body)
	for _, line := range strings.Split(res, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data:")
		if r := gjson.Parse(line); r.Get("id").Int() == int64(c.next) {
			return r
		}
	}
	c.t.Fatalf("%s: no response in %q", method, res)
	return gjson.Result{}
}

func (c *mcpClient) post(body string) string {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		c.t.Fatalf("POST /mcp: %s: %s", resp.Status, b)
	}
	return string(b)
}

// A tool call through the gateway makes its
// artifacts appear in the open page without a reload; a download yields
// the exact bytes; an image preview renders; an HTML artifact cannot run
// script or reach the parent page. Screenshots go to testdata/out (or
// $MCPX_TEST_ARTIFACTS) for review.
func TestUIBrowserLiveArtifacts(t *testing.T) {
	ctx := browsertest.Start(t, 60*time.Second)
	isolate(t)
	base, _ := startServeProcess(t)
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			browsertest.Screenshot(t, ctx, "failed")
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	poll := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			browsertest.Screenshot(t, ctx, "failed")
			t.Fatalf("waiting for %s (%s): %v", what, js, err)
		}
	}

	do("open the page", chromedp.Navigate(base+"/"))
	poll("the live event stream", `document.querySelector('#live.on') !== null`)
	// a reload or navigation would lose this
	eval(`window.__sameDocument = "yes"; ""`)

	// a tool call through the gateway
	c := &mcpClient{t: t, url: base + "/mcp"}
	c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ui-test","version":"1"}}`)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	res := c.call("tools/call", `{"name":"report","arguments":{}}`)
	if res.Get("error").Exists() || strings.Contains(res.Raw, `"b64":"`) {
		t.Fatalf("tools/call: %s", res.Raw)
	}
	poll("four artifact cards", `document.querySelectorAll('#artifacts li.card').length === 4`)
	if got := eval(`window.__sameDocument || "reloaded"`); got != "yes" {
		t.Fatalf("the page reloaded: %q", got)
	}
	names := eval(`[...document.querySelectorAll('#artifacts li.card .name')].map(e => e.textContent).sort().join(",")`)
	if names != "chart.png,data.json,doc.pdf,report.html" {
		t.Fatalf("cards: %s", names)
	}
	// the image preview renders
	poll("the image thumbnail", `(() => { const i = document.querySelector('li.card[data-viewer=image] img.thumb'); return i && i.complete && i.naturalWidth === 64 && i.naturalHeight === 48; })()`)
	// the calls panel shows the call and what it kept out of the context
	// (the gateway publishes result_rewritten for each tools/call)
	poll("the call's entry", `[...document.querySelectorAll('#calls li.call')].some(li => li.textContent.includes('files') && li.textContent.includes('kept out') && li.textContent.includes('4 artifacts'))`)
	browsertest.Screenshot(t, ctx, "1-live-artifacts")

	// a download yields the exact bytes
	downloads := t.TempDir()
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: downloads, EventsEnabled: new(true),
	}); err != nil {
		t.Fatal(err)
	}
	progress := chromedp.BrowserEvents(ctx, browser.DownloadProgress)
	do("click Download", chromedp.Click(chromedp.CSS(`li.card[data-viewer=pdf] a.download`)))
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("download: %v", err)
		}
		if ev.State == browser.DownloadProgressStateCanceled {
			t.Fatal("download canceled")
		}
		if ev.State != browser.DownloadProgressStateCompleted {
			continue
		}
		got, err := os.ReadFile(filepath.Join(downloads, ev.GUID))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, uiPDF()) {
			t.Fatalf("downloaded %d bytes, want the PDF's %d exactly", len(got), len(uiPDF()))
		}
		break
	}

	// JSON: pretty-printed and highlighted
	do("preview data.json", chromedp.Click(chromedp.CSS(`li.card[data-viewer=json] button.preview`)))
	poll("highlighted JSON", `document.querySelectorAll('#viewer pre.preview-json span.j-key').length >= 5`)
	// PDF: the browser's viewer on the signed URL
	do("preview doc.pdf", chromedp.Click(chromedp.CSS(`li.card[data-viewer=pdf] button.preview`)))
	poll("the PDF frame", `document.querySelector('#viewer iframe.preview-pdf') !== null`)
	time.Sleep(1500 * time.Millisecond) // let the viewer draw, for the screenshot
	browsertest.Screenshot(t, ctx, "2-pdf-preview")

	// The same result through POST /transform: its result_rewritten event
	// carries kept_out and the display hints, which open the canvas on
	// report.html.
	resp, err := http.Post(base+"/transform?server=local&tool=report", "application/json", bytes.NewReader(uiToolResult()))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !gjson.GetBytes(out, `_meta.mcpx/kept_out`).Exists() {
		t.Fatalf("transform: %s %s", resp.Status, out)
	}
	keptBytes := gjson.GetBytes(out, `_meta.mcpx/kept_out.bytes`).String()
	poll("the call's kept_out", `[...document.querySelectorAll('#calls li.call')].some(li => li.dataset.keptBytes === "`+keptBytes+`")`)
	poll("the canvas on report.html", `(() => { const f = document.querySelector('#viewer[data-viewer=html] iframe.preview-html'); return f && f.title === 'report.html' && f.srcdoc.includes('Quarterly'); })()`)
	time.Sleep(700 * time.Millisecond) // give a script that could run time to run
	if got := eval(`String(window.__pwned)`); got != "undefined" {
		t.Errorf("the HTML artifact reached the parent page: __pwned = %s", got)
	}
	if got := eval(`document.title`); got != "mcpx artifacts" {
		t.Errorf("the HTML artifact retitled the page: %q", got)
	}
	// sandboxed without allow-same-origin: the page cannot read into the
	// frame either, and the frame has no scripts
	if got := eval(`(() => { const f = document.querySelector('iframe.preview-html'); return f.getAttribute('sandbox') + '|' + (f.contentDocument === null); })()`); got != "|true" {
		t.Errorf("frame sandbox|opaque = %q, want \"|true\"", got)
	}
	if got := eval(`window.__sameDocument || "reloaded"`); got != "yes" {
		t.Fatalf("the page navigated: %q", got)
	}
	browsertest.Screenshot(t, ctx, "3-html-canvas")

	// opened directly, the HTML download is an attachment under CSP
	// sandbox: a browser neither renders it on this origin nor runs it
	id := eval(`document.querySelector('#viewer').dataset.id`)
	meta, err := http.Get(base + "/artifacts/" + id + "/meta")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(meta.Body)
	meta.Body.Close()
	dl, err := http.Get(gjson.GetBytes(mb, "artifact.url").String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(dl.Body)
	dl.Body.Close()
	if dl.StatusCode != 200 || string(body) != uiHTML || !strings.HasPrefix(dl.Header.Get("Content-Security-Policy"), "sandbox") ||
		!strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("HTML download: %s CSP %q disposition %q", dl.Status, dl.Header.Get("Content-Security-Policy"), dl.Header.Get("Content-Disposition"))
	}
}

// The resource pane over "mcpx serve" whose one server ("files")
// declares tools only: the page's GET /resources answers (no 404 in the
// console) and lists the server, and listing it says it offers no
// resources, with a 200, rather than "unknown server".
func TestUIBrowserServerWithoutResources(t *testing.T) {
	ctx := browsertest.Start(t, 60*time.Second)
	isolate(t)
	base, _ := startServeProcess(t)
	console := browsertest.Console(t, ctx)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("console: %q", console())
		}
	})
	browsertest.Do(t, ctx, "open the page", chromedp.Navigate(base+"/"))
	browsertest.Poll(t, ctx, "the live event stream", `document.querySelector('#live.on') !== null`, 15*time.Second)
	browsertest.Poll(t, ctx, "the server list", `document.querySelector('#res-server').value === 'files'`, 15*time.Second)
	browsertest.Do(t, ctx, "list its resources", chromedp.Click(chromedp.CSS(`#res-form button`)))
	const note = `server "files" offers no resources (it does not declare MCP's resources capability)`
	browsertest.Poll(t, ctx, "the note", `(document.querySelector('#resources li.note') || {}).textContent === `+fmt.Sprintf("%q", note), 15*time.Second)
	browsertest.Screenshot(t, ctx, "server-without-resources")
	for _, line := range console() {
		if strings.Contains(line, "status of 4") || strings.Contains(line, "404") {
			t.Errorf("console: %s", line)
		}
	}
	// the API itself: 200 and the note; a name nothing has is still 404
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"/resources", `{"servers":["files"]}`, 200},
		{"/resources/files", `{"resources":[],"note":` + fmt.Sprintf("%q", note) + `}`, 200},
		{"/resources/nothing", "", 404},
	} {
		resp, err := http.Get(base + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || (c.want != "" && strings.TrimSpace(string(b)) != c.want) {
			t.Errorf("GET %s: %d %s, want %d %s", c.path, resp.StatusCode, b, c.code, c.want)
		}
	}
}
