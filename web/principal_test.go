package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
)

// pdfResult is a tool result holding a PDF of about size bytes that
// the engine stores; tag makes its bytes unique.
func pdfResult(tag string, size int) (result, pdf string) {
	pdf = "%PDF-1.4\n" + tag + "\n" + strings.Repeat("x", size)
	return `{"content":[{"type":"resource","resource":{"uri":"file:///r.pdf","mimeType":"application/pdf","blob":"` +
		base64.StdEncoding.EncodeToString([]byte(pdf)) + `"}}]}`, pdf
}

// transform posts a result and returns the first ref of its _meta.
func (f *apiFixture) transform(token, query, result string) engine.ArtifactRef {
	f.t.Helper()
	code, out, _ := f.do("POST", "/transform?server=files&tool=get"+query, token, strings.NewReader(result))
	if code != 200 {
		f.t.Fatalf("transform: %d %.300s", code, out)
	}
	var res struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var refs []struct {
		Artifact engine.ArtifactRef `json:"artifact"`
	}
	err := json.Unmarshal(out, &res)
	if err == nil {
		err = json.Unmarshal(res.Meta[engine.MetaArtifactsKey], &refs)
	}
	if err != nil || len(refs) != 1 {
		f.t.Fatalf("transform result: %v %.500s", err, out)
	}
	return refs[0].Artifact
}

// A tenant-less user reads what it put, never what a tenant's user of the
// same name put, whoever put the bytes first (here a third, tenant-less,
// user): on /artifacts/{id}, /meta and the listing.
func TestAPIOwnedScopeDecidesAccess(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	data := "the same bytes, put by three"
	carol := f.put(data, "text/plain", "c.txt", store.Scope{UserID: "carol", SessionID: "sc"})
	f.put(data, "text/plain", "a.txt", store.Scope{TenantID: "acme", UserID: "alice", SessionID: "sa"})
	mine := f.put("bare alice's own", "text/plain", "", store.Scope{UserID: "alice"})
	// Another tenant's alice put first, bare alice later: she sees it.
	shared := f.put("globex first, bare alice next", "text/plain", "", store.Scope{TenantID: "globex", UserID: "alice"})
	f.put("globex first, bare alice next", "text/plain", "", store.Scope{UserID: "alice", SessionID: "sb"})

	for _, path := range []string{"/artifacts/" + carol.ID, "/artifacts/" + carol.ID + "/meta"} {
		if code, b, _ := f.do("GET", path, "tok-bare-alice", nil); code != 404 {
			t.Errorf("bare alice GET %s: %d %.200s, want 404 (acme's alice and carol put it, not she)", path, code, b)
		}
	}
	if code, b, _ := f.do("GET", "/artifacts/"+carol.ID, "tok-bare-carol", nil); code != 200 || string(b) != data {
		t.Errorf("carol reads what she put: %d %q", code, b)
	}
	if code, b, _ := f.do("GET", "/artifacts/"+shared.ID+"/meta", "tok-bare-alice", nil); code != 200 || !strings.Contains(string(b), `"session_id":"sb"`) {
		t.Errorf("bare alice's meta of what she put after globex's alice: %d %s", code, b)
	}
	if got, want := ids(f.list("tok-bare-alice", "")), []string{shared.ID, mine.ID}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("bare alice lists %v, want %v (newest first)", got, want)
	}
}

// /meta and the listing show the caller its own scope, creation and a
// link signed for its own session: never the owner that put the bytes
// first.
func TestAPIMetaShowsOnlyTheCallersScope(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	data := "a report both stored"
	a := store.Scope{TenantID: "acme", UserID: "alice", SessionID: "alice-session", TraceID: "alice-trace"}
	b := store.Scope{TenantID: "globex", UserID: "alice", SessionID: "other-session"}
	first := f.put(data, "text/plain", "r.txt", a)
	time.Sleep(5 * time.Millisecond)
	before := time.Now()
	f.put(data, "text/plain", "globex.txt", b)

	code, body, _ := f.do("GET", "/artifacts/"+first.ID+"/meta", "tok-other-alice", nil)
	var info ArtifactInfo
	if err := json.Unmarshal(body, &info); code != 200 || err != nil {
		t.Fatalf("meta: %d %s %v", code, body, err)
	}
	for _, leak := range []string{"acme", "alice-session", "alice-trace"} {
		if strings.Contains(string(body), leak) {
			t.Errorf("meta tells globex's alice %q: %s", leak, body)
		}
	}
	if info.Artifact.Filename != "globex.txt" {
		t.Errorf("meta filename %q, want the caller's own globex.txt", info.Artifact.Filename)
	}
	if info.Artifact.Scope == nil || *info.Artifact.Scope != b {
		t.Errorf("meta scope %+v, want the caller's %+v", info.Artifact.Scope, b)
	}
	if info.Created.Before(before) {
		t.Errorf("meta created_at %v, want the caller's own put (after %v), not %v", info.Created, before, first.Created)
	}
	u, err := url.Parse(info.Artifact.URL)
	if err != nil || u.Query().Get(paramSession) != b.SessionID {
		t.Errorf("meta url %q: want a link signed for the caller's session %q", info.Artifact.URL, b.SessionID)
	}
	page := f.list("tok-other-alice", "")
	if len(page.Artifacts) != 1 || page.Artifacts[0].Artifact.Scope == nil || *page.Artifacts[0].Artifact.Scope != b || page.Artifacts[0].Created.Before(before) {
		t.Errorf("listing: %+v, want the caller's scope and creation", page.Artifacts)
	}
	// The first owner still sees its own.
	code, body, _ = f.do("GET", "/artifacts/"+first.ID+"/meta", "tok-alice", nil)
	if code != 200 || !strings.Contains(string(body), "alice-session") || strings.Contains(string(body), "other-session") || strings.Contains(string(body), "globex") {
		t.Errorf("the first owner's meta tells of the other owner: %d %s", code, body)
	}
}

// A tenant naming another tenant's trace id on POST /transform counts
// against its own trace: the collector removes its own artifacts past
// the limit, never the other tenant's.
func TestAPITraceIDOfAnotherTenant(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	res, pdf := pdfResult("victim", 2000)
	victim := f.transform("tok-alice", "&trace=shared-trace", res)
	var attacker []string
	for i := range 4 {
		res, _ := pdfResult(fmt.Sprint("attacker", i), 2000)
		attacker = append(attacker, f.transform("tok-other-alice", "&trace=shared-trace", res).ID)
		time.Sleep(2 * time.Millisecond)
	}
	c := f.st.(store.Collector)
	rep, err := c.Collect(context.Background(), store.Retention{MaxArtifactsPerTrace: 3}, store.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 1 || rep.Removed[0].ID != attacker[0] || !strings.HasPrefix(rep.Removed[0].Why, "max_artifacts_per_trace") {
		t.Errorf("collect removed %+v, want only the other tenant's oldest %s", rep.Removed, attacker[0])
	}
	if code, b, _ := f.do("GET", "/artifacts/"+victim.ID, "tok-alice", nil); code != 200 || string(b) != pdf {
		t.Errorf("the victim's artifact after the other tenant's puts in its trace: %d", code)
	}
}

// Sessions the caller names (?session=) do not lift max_session_bytes:
// max_user_bytes counts the user across them, and a put past it is
// refused with a not_stored note that names the limit.
func TestAPISessionRotationMeetsUserQuota(t *testing.T) {
	t.Parallel()
	var policy store.Retention
	if err := json.Unmarshal([]byte(`{"max_session_bytes": 1000000, "max_user_bytes": 1000000, "strategy": "none"}`), &policy); err != nil {
		t.Fatal(err)
	}
	f := newAPIFixture(t, testTokens, auth.Limits{}, func(o *engine.Options) { o.Quota = policy.PutQuota() })
	var refused []engine.ArtifactRef
	for i := range 12 {
		res, _ := pdfResult(fmt.Sprint("rotating", i), 300_000)
		if ref := f.transform("tok-alice", fmt.Sprintf("&session=s%d", i), res); ref.NotStored != nil {
			refused = append(refused, ref)
		}
	}
	if len(refused) != 9 {
		t.Fatalf("%d of 12 puts of 300 KB in 12 sessions refused, want 9 (max_user_bytes 1 MB)", len(refused))
	}
	ns := refused[0].NotStored
	if want := "it would take this user's artifacts to 1.2 MB, past the store's limit max_user_bytes (1.0 MB)"; ns.Limit != "max_user_bytes" || ns.Max != 1000000 || ns.Reason != want {
		t.Errorf("not_stored %+v, want max_user_bytes of 1 MB: %q", ns, want)
	}
	// Another user of the tenant is not held to alice's usage.
	res, _ := pdfResult("bob", 300_000)
	if ref := f.transform("tok-bob", "&session=s0", res); ref.NotStored != nil {
		t.Errorf("bob's put refused: %+v", ref.NotStored)
	}
}

// evictions subscribes to the artifact_evicted events p would be sent.
func evictions(t *testing.T, bus *EventBus, p auth.Principal) <-chan Event {
	ch, cancel := bus.SubscribeNow(func(ev Event) bool { return ev.Type == EventArtifactEvicted && p.Owns(ev.Scope) })
	t.Cleanup(cancel)
	return ch
}

// sharedByTwoTenants stores one artifact through /transform as acme's
// and globex's alice, in sessions sa and sb, and returns the bus and the
// evictions each would be sent.
func sharedByTwoTenants(t *testing.T) (bus *EventBus, acme, globex <-chan Event, ref engine.ArtifactRef) {
	f := newAPIFixture(t, testTokens, auth.Limits{})
	bus = f.api.Events()
	acme = evictions(t, bus, auth.Principal{Tenant: "acme", User: "alice"})
	globex = evictions(t, bus, auth.Principal{Tenant: "globex", User: "alice"})
	res, _ := pdfResult("both", 2000)
	ref = f.transform("tok-alice", "&session=sa", res)
	if other := f.transform("tok-other-alice", "&session=sb", res); other.ID != ref.ID {
		t.Fatalf("ids %s, %s: want one artifact", ref.ID, other.ID)
	}
	return bus, acme, globex, ref
}

// An artifact two tenants stored is evicted for both: each hears of it,
// with the scope it stored the artifact under.
func TestAPIEvictionReachesEveryOwner(t *testing.T) {
	t.Parallel()
	bus, acme, globex, ref := sharedByTwoTenants(t)
	bus.Evicted(store.Removal{ID: ref.ID, Bytes: ref.SizeBytes, Why: "ttl"})
	for who, ch := range map[string]<-chan Event{"sa": acme, "sb": globex} {
		if ev := receive(t, ch); ev.Artifact == nil || ev.Artifact.ID != ref.ID || ev.Scope.SessionID != who {
			t.Errorf("the owner of session %s hears %+v, want the eviction under its own scope", who, ev)
		}
	}
}

// A release (one owner's limit let the artifact go, another keeps it)
// reaches the owner that lost it only.
func TestAPIReleaseReachesItsOwnerOnly(t *testing.T) {
	t.Parallel()
	bus, acme, globex, ref := sharedByTwoTenants(t)
	released := store.Scope{TenantID: "globex", UserID: "alice", SessionID: "sb"}
	bus.Evicted(store.Removal{ID: ref.ID, Why: "max_user_bytes tenant=globex user=alice", Released: []store.Scope{released}})
	if ev := receive(t, globex); ev.Why != "max_user_bytes tenant=globex user=alice" || ev.Scope != released {
		t.Errorf("globex hears %+v, want its release", ev)
	}
	bus.Evicted(store.Removal{ID: ref.ID, Bytes: ref.SizeBytes, Why: "ttl"})
	if ev := receive(t, acme); ev.Why != "ttl" {
		t.Errorf("acme's first eviction event is %+v, want the removal (not globex's release)", ev)
	}
	select {
	case ev := <-globex:
		t.Errorf("globex hears of an artifact it let go already: %+v", ev)
	case <-time.After(50 * time.Millisecond):
	}
}
