package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/auth"
)

// GET /calls answers the caller's recent calls from the event buffer,
// newest first, never another user's or tenant's, and the id a stream
// goes on from.
func TestAPIRecentCallsAreTheCallersOwn(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	big := strings.Repeat("x", 30000) // the size net stores it
	for _, c := range []struct{ tok, tool string }{{"tok-alice", "first"}, {"tok-bob", "bobs"}, {"tok-alice", "second"}} {
		if code, out, _ := f.do("POST", "/transform?server=files&tool="+c.tool, c.tok, strings.NewReader(fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, big))); code != 200 {
			t.Fatalf("transform: %d %s", code, out)
		}
	}
	if code, _, _ := f.do("GET", "/calls", "", nil); code != 401 {
		t.Errorf("GET /calls without a token: %d, want 401", code)
	}
	_, last := f.api.Events().Buffered(func(Event) bool { return false })
	for _, c := range []struct{ tok, want string }{
		{"tok-alice", "result_rewritten files/second, result_rewritten files/first"},
		{"tok-bob", "result_rewritten files/bobs"},
		{"tok-other-alice", ""},
	} {
		code, b, _ := f.do("GET", "/calls", c.tok, nil)
		var page RecentCalls
		if err := json.Unmarshal(b, &page); code != 200 || err != nil || page.Calls == nil {
			t.Fatalf("GET /calls as %s: %d %s", c.tok, code, b)
		}
		var got []string
		for _, ev := range page.Calls {
			got = append(got, ev.Type+" "+ev.Server+"/"+ev.Tool)
		}
		if strings.Join(got, ", ") != c.want || page.LastEventID != last {
			t.Errorf("GET /calls as %s = %q, last_event_id %d; want %q, %d", c.tok, got, page.LastEventID, c.want, last)
		}
	}
}
