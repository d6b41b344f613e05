package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
)

// TestStartedCallCancelled: a tools/call sent by the stdio reader itself
// (call_start.go) ends at once when the client cancels it, as one served
// on a goroutine of its own does, and the session goes on.
func TestStartedCallCancelled(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	id, hang := c.start("tools/call", toolCall("hang", ""))
	waitFor(t, "the hang call reaches the upstream", func() bool {
		return strings.Contains(stderrTail(g, "stub"), "stub: hanging")
	})
	c.notify("notifications/cancelled", `{"requestId":`+id+`,"reason":"changed my mind"}`)
	select {
	case r := <-hang:
		if !gjson.GetBytes(r, "error").Exists() {
			t.Fatalf("the cancelled call: %s", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call was not answered")
	}
	if v := c.result("tools/call", toolCall("echo", `{"v":"next"}`)).Get("structuredContent.v").String(); v != "next" {
		t.Fatalf("after the cancel: %q", v)
	}
}

// TestStdioReaderGoesOnWhileUpstreamReadsNothing: while the upstream
// reads nothing (the stub sleeps between two progress steps), calls
// queued for it beyond what its stdin pipe holds do not hold up the
// reader of the client's messages: a ping is answered meanwhile, and
// every call is answered, each with its own result, once the upstream
// reads again.
func TestStdioReaderGoesOnWhileUpstreamReadsNothing(t *testing.T) {
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	const sleep = 2 * time.Second
	_, slow := c.start("tools/call", fmt.Sprintf(`{"name":"progress","arguments":{"steps":1,"delay_ms":%d},"_meta":{"progressToken":"p"}}`, sleep.Milliseconds()))
	select { // the stub sleeps from its first step on
	case <-c.notes:
	case <-time.After(20 * time.Second):
		t.Fatal("no progress notification")
	}
	pad := strings.Repeat("p", 16<<10)
	echoes := make([]chan []byte, 64) // 1 MiB in all
	for i := range echoes {
		_, ch := c.start("tools/call", toolCall("echo", fmt.Sprintf(`{"v":"%d","pad":"%s"}`, i, pad)))
		echoes[i] = make(chan []byte, 1)
		go func() { echoes[i] <- <-ch }()
	}
	began := time.Now()
	c.result("ping", "")
	if took := time.Since(began); took > sleep/2 {
		t.Fatalf("a ping took %s while the upstream read nothing: the reader waited for it", took)
	}
	for i, ch := range echoes {
		select {
		case r := <-ch:
			if v := gjson.GetBytes(r, "result.structuredContent.v").String(); v != fmt.Sprint(i) {
				t.Fatalf("echo %d: %.200s", i, r)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("echo %d was not answered", i)
		}
	}
	if r := <-slow; !gjson.GetBytes(r, "result").Exists() {
		t.Fatalf("the slow call: %.200s", r)
	}
}

// TestStartedCallCancelledEndsItsServerRequest: a started call has no
// context of its own until a server request relayed for it needs one;
// cancelling the call then ends that request too: the client is told
// that the elicitation it was asked for has ended, and the call is
// answered with an error.
func TestStartedCallCancelledEndsItsServerRequest(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"asker": askerStub(t)}, engine.Options{})
	c := connectWith(t, g, `{"elicitation":{}}`)
	callID, call := c.start("tools/call", toolCall("ask", `{"method":"elicitation/create","params":{"message":"Your name?"}}`))
	askID, _ := c.waitRequest("elicitation/create", 30*time.Second)
	c.notify("notifications/cancelled", `{"requestId":`+callID+`,"reason":"changed my mind"}`)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case n := <-c.notes:
			if gjson.GetBytes(n, "method").String() != "notifications/cancelled" {
				continue
			}
			if got := gjson.GetBytes(n, "params.requestId").Raw; got != askID {
				t.Fatalf("cancelled %s, want the elicitation %s", got, askID)
			}
			select {
			case r := <-call:
				// The gateway's own error, or the upstream's answer when the
				// elicitation's end reached it first: either says the call
				// ended for the client's cancellation.
				if !gjson.GetBytes(r, "error").Exists() && !strings.Contains(gjson.GetBytes(r, "result.content.0.text").String(), "cancelled by the client: changed my mind") {
					t.Fatalf("the cancelled call: %s", r)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the cancelled call was not answered")
			}
			return
		case <-deadline:
			t.Fatal("the client was not told that the elicitation ended")
		}
	}
}
