package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// RunRetention runs the retention rules against a store that implements
// store.Collector, one subtest per rule: TTL, each byte and count limit,
// lru against fifo order, strategy none (refusing puts over a quota),
// dry runs and DropScope; and that they are per principal: sessions,
// traces and users counted within their owner, a shared artifact
// released by one owner and kept for the other. open must return a new,
// empty store.
func RunRetention(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, st store.Store, c store.Collector)
	}{
		{"TTL", testRetentionTTL},
		{"MaxArtifactBytes", testRetentionMaxArtifactBytes},
		{"PerSessionCount", testRetentionSessionCount},
		{"PerSessionBytes", testRetentionSessionBytes},
		{"PerTraceCountAndBytes", testRetentionTrace},
		{"MaxBytes", testRetentionMaxBytes},
		{"LRUAgainstFIFO", testRetentionOrder},
		{"NoneRefusesPuts", testRetentionNone},
		{"DryRunChangesNothing", testRetentionDryRun},
		{"DropScope", testRetentionDropScope},
		{"EmptyPolicyKeepsAll", testRetentionEmpty},
		{"TraceCountedPerOwner", testRetentionTracePerOwner},
		{"SessionCountedPerOwner", testRetentionSessionPerOwner},
		{"PerUserAcrossSessions", testRetentionPerUser},
		{"SharedArtifactReleased", testRetentionShared},
		{"TTLPerScope", testRetentionTTLPerScope},
		{"NoneRefusesPerOwner", testRetentionNonePerOwner},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			defer st.Close(context.Background())
			c, ok := st.(store.Collector)
			if !ok {
				t.Fatalf("%T does not implement store.Collector", st)
			}
			tc.fn(t, st, c)
		})
	}
}

// putN puts n artifacts of size bytes each under sc, a little apart in
// time so that their order is clear, and returns their ids oldest first.
func putN(t *testing.T, st store.Store, tag string, n, size int, sc store.Scope) []string {
	t.Helper()
	var ids []string
	for i := range n {
		data := bytes.Repeat([]byte{byte(i)}, size)
		data = append(data, fmt.Sprintf("%s-%d", tag, i)...)
		ref, err := st.Put(context.Background(), bytes.NewReader(data), store.PutOptions{Namespace: "ret", Scope: sc})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
		time.Sleep(2 * time.Millisecond)
	}
	return ids
}

func collect(t *testing.T, c store.Collector, p store.Retention, o store.CollectOptions) map[string]string {
	t.Helper()
	rep, err := c.Collect(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var bytes int64
	for _, r := range rep.Removed {
		got[r.ID] = r.Why
		bytes += r.Bytes
	}
	if rep.Count != len(rep.Removed) || rep.Bytes != bytes {
		t.Errorf("report totals %d, %d bytes; it lists %d, %d bytes", rep.Count, rep.Bytes, len(rep.Removed), bytes)
	}
	return got
}

func wantRemoved(t *testing.T, st store.Store, got map[string]string, removed []string, why string, kept []string) {
	t.Helper()
	for _, id := range removed {
		w, ok := got[id]
		if !ok {
			t.Errorf("%s not removed (removed: %v)", id, got)
			continue
		}
		if !bytes.HasPrefix([]byte(w), []byte(why)) {
			t.Errorf("%s removed for %q, want %q", id, w, why)
		}
		if ok, _ := st.Exists(context.Background(), id); ok {
			t.Errorf("%s reported removed but still stored", id)
		}
	}
	for _, id := range kept {
		if _, ok := got[id]; ok {
			t.Errorf("%s removed (%s), want kept", id, got[id])
		}
		if ok, err := st.Exists(context.Background(), id); !ok {
			t.Errorf("%s not stored any more: %v", id, err)
		}
	}
	if len(got) != len(removed) {
		t.Errorf("removed %d artifacts, want %d: %v", len(got), len(removed), got)
	}
}

func testRetentionTTL(t *testing.T, st store.Store, c store.Collector) {
	old := putN(t, st, "ttl-old", 3, 10, store.Scope{})
	time.Sleep(20 * time.Millisecond)
	cut := time.Now()
	fresh := putN(t, st, "ttl-new", 2, 10, store.Scope{})
	p := store.Retention{TTL: store.Duration(time.Hour), Strategy: store.StrategyFIFO}
	got := collect(t, c, p, store.CollectOptions{Now: cut.Add(time.Hour)})
	wantRemoved(t, st, got, old, "ttl", fresh)
}

func testRetentionMaxArtifactBytes(t *testing.T, st store.Store, c store.Collector) {
	big := putN(t, st, "big", 1, 1000, store.Scope{})
	small := putN(t, st, "small", 2, 10, store.Scope{})
	got := collect(t, c, store.Retention{MaxArtifactBytes: 500}, store.CollectOptions{})
	wantRemoved(t, st, got, big, "max_artifact_bytes", small)
}

func testRetentionSessionCount(t *testing.T, st store.Store, c store.Collector) {
	a := putN(t, st, "a", 5, 10, store.Scope{SessionID: "a"})
	b := putN(t, st, "b", 2, 10, store.Scope{SessionID: "b"})
	got := collect(t, c, store.Retention{MaxArtifactsPerSession: 3}, store.CollectOptions{})
	wantRemoved(t, st, got, a[:2], "max_artifacts_per_session session=a", append(a[2:], b...))
}

func testRetentionSessionBytes(t *testing.T, st store.Store, c store.Collector) {
	a := putN(t, st, "a", 4, 100, store.Scope{SessionID: "a"}) // 103-104 bytes each
	got := collect(t, c, store.Retention{MaxSessionBytes: 250}, store.CollectOptions{})
	wantRemoved(t, st, got, a[:2], "max_session_bytes session=a", a[2:])
}

func testRetentionTrace(t *testing.T, st store.Store, c store.Collector) {
	x := putN(t, st, "x", 4, 10, store.Scope{SessionID: "s", TraceID: "x"})
	y := putN(t, st, "y", 3, 100, store.Scope{SessionID: "s", TraceID: "y"})
	got := collect(t, c, store.Retention{MaxArtifactsPerTrace: 3, MaxTraceBytes: 250}, store.CollectOptions{})
	want := map[string]string{x[0]: "max_artifacts_per_trace trace=x", y[0]: "max_trace_bytes trace=y"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("removed %v, want %v", got, want)
	}
	wantRemoved(t, st, map[string]string{}, nil, "", append(x[1:], y[1:]...))
}

func testRetentionMaxBytes(t *testing.T, st store.Store, c store.Collector) {
	ids := putN(t, st, "m", 5, 100, store.Scope{})
	got := collect(t, c, store.Retention{MaxBytes: 320}, store.CollectOptions{})
	wantRemoved(t, st, got, ids[:2], "max_bytes", ids[2:])
}

func testRetentionOrder(t *testing.T, st store.Store, c store.Collector) {
	ids := putN(t, st, "o", 4, 10, store.Scope{SessionID: "o"})
	// Reading the oldest makes it the most recently used.
	rc, _, err := st.Get(context.Background(), ids[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	p := store.Retention{MaxArtifactsPerSession: 3, Strategy: store.StrategyFIFO}
	got := collect(t, c, p, store.CollectOptions{DryRun: true})
	if _, ok := got[ids[0]]; !ok || len(got) != 1 {
		t.Errorf("fifo would remove %v, want the oldest %s", got, ids[0])
	}
	p.Strategy = store.StrategyLRU
	got = collect(t, c, p, store.CollectOptions{})
	wantRemoved(t, st, got, ids[1:2], "max_artifacts_per_session", []string{ids[0], ids[2], ids[3]})
}

func testRetentionNone(t *testing.T, st store.Store, c store.Collector) {
	p := store.Retention{MaxArtifactsPerSession: 2, MaxTraceBytes: 150, Strategy: store.StrategyNone}
	ids := putN(t, st, "n", 2, 10, store.Scope{SessionID: "n"})
	ctx := context.Background()
	_, err := st.Put(ctx, bytes.NewReader([]byte("third")), store.PutOptions{Scope: store.Scope{SessionID: "n"}, Quota: p.PutQuota()})
	var le *store.LimitError
	if !errors.Is(err, store.ErrQuotaExceeded) || !errors.As(err, &le) || le.Limit != "max_artifacts_per_session" || le.Max != 2 {
		t.Fatalf("third put in the session: %v, want a max_artifacts_per_session LimitError", err)
	}
	// The same bytes again in the same session add nothing: allowed.
	data := append(bytes.Repeat([]byte{0}, 10), "n-0"...)
	if ref, err := st.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "ret", Scope: store.Scope{SessionID: "n"}, Quota: p.PutQuota()}); err != nil || ref.ID != ids[0] {
		t.Errorf("re-put: %v, %v", ref.ID, err)
	}
	if _, err := st.Put(ctx, bytes.NewReader(make([]byte, 100)), store.PutOptions{Scope: store.Scope{TraceID: "t"}, Quota: p.PutQuota()}); err != nil {
		t.Fatal(err)
	}
	_, err = st.Put(ctx, bytes.NewReader(make([]byte, 60)), store.PutOptions{Scope: store.Scope{TraceID: "t"}, Quota: p.PutQuota()})
	if !errors.As(err, &le) || le.Limit != "max_trace_bytes" || le.Used != 160 {
		t.Errorf("trace over its bytes: %v", err)
	}
	// A refused put leaves nothing: the session still holds two.
	if n := countScope(t, st, store.Scope{SessionID: "n"}); n != 2 {
		t.Errorf("session holds %d artifacts, want 2", n)
	}
	// gc under none evicts nothing to meet the limits.
	got := collect(t, c, store.Retention{MaxArtifactsPerSession: 1, MaxBytes: 1, Strategy: store.StrategyNone}, store.CollectOptions{})
	if len(got) != 0 {
		t.Errorf("none removed %v", got)
	}
}

func testRetentionDryRun(t *testing.T, st store.Store, c store.Collector) {
	ids := putN(t, st, "d", 3, 10, store.Scope{SessionID: "d"})
	p := store.Retention{MaxArtifactsPerSession: 1, TTL: store.Duration(time.Minute)}
	rep, err := c.Collect(context.Background(), p, store.CollectOptions{DryRun: true, Now: time.Now().Add(time.Hour)})
	if err != nil || rep.Count != 3 || !rep.DryRun {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	for _, id := range ids {
		if ok, _ := st.Exists(context.Background(), id); !ok {
			t.Errorf("dry run removed %s", id)
		}
	}
	var each []string
	rep, err = c.Collect(context.Background(), p, store.CollectOptions{Each: func(r store.Removal) { each = append(each, r.ID) }})
	if err != nil || rep.Count != 2 || len(rep.Removed) != 0 || !slices.Equal(each, ids[:2]) {
		t.Errorf("collect with Each: %+v %v, %v", rep, each, err)
	}
}

func testRetentionDropScope(t *testing.T, st store.Store, c store.Collector) {
	a := putN(t, st, "s", 2, 10, store.Scope{SessionID: "gone"})
	keep := putN(t, st, "k", 1, 10, store.Scope{SessionID: "other"})
	// The same bytes in both sessions stay for the other one.
	shared := append(bytes.Repeat([]byte{0}, 10), "s-0"...)
	if _, err := st.Put(context.Background(), bytes.NewReader(shared), store.PutOptions{Namespace: "ret", Scope: store.Scope{SessionID: "other"}}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.DropScope(context.Background(), store.Scope{SessionID: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rep.Removed {
		got[r.ID] = r.Why
	}
	wantRemoved(t, st, got, a[1:], "drop_on_session_end", append(keep, a[0]))
	if in, err := st.InScope(context.Background(), a[0], store.Scope{SessionID: "gone"}); in || err != nil {
		t.Errorf("%s still in the dropped session: %v %v", a[0], in, err)
	}
	if _, err := c.DropScope(context.Background(), store.Scope{}); err == nil {
		t.Error("DropScope of the empty scope succeeded")
	}
}

func testRetentionEmpty(t *testing.T, st store.Store, c store.Collector) {
	ids := putN(t, st, "e", 3, 10, store.Scope{SessionID: "e"})
	got := collect(t, c, store.Retention{}, store.CollectOptions{Now: time.Now().Add(1000 * time.Hour)})
	wantRemoved(t, st, got, nil, "", ids)
}

// countScope counts the artifacts List shows under sc.
func countScope(t *testing.T, st store.Store, sc store.Scope) int {
	t.Helper()
	n := 0
	for cursor := ""; ; {
		refs, next, err := st.List(context.Background(), sc, cursor)
		if err != nil {
			t.Fatal(err)
		}
		n += len(refs)
		if next == "" {
			return n
		}
		cursor = next
	}
}

// owned returns the scopes owner holds id under (nil when the artifact
// is gone).
func owned(t *testing.T, st store.Store, id string, owner store.Owner) []store.Scope {
	t.Helper()
	refs, err := st.Owned(context.Background(), id, owner)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Scope
	for _, r := range refs {
		out = append(out, r.Scope)
	}
	return out
}

// testRetentionTracePerOwner: another tenant naming a trace id it does
// not own counts against its own trace, never evicting the owner's.
func testRetentionTracePerOwner(t *testing.T, st store.Store, c store.Collector) {
	victim := putN(t, st, "victim", 1, 10, store.Scope{TenantID: "a", UserID: "alice", TraceID: "x"})
	attacker := putN(t, st, "attacker", 4, 10, store.Scope{TenantID: "b", UserID: "mallory", TraceID: "x"})
	got := collect(t, c, store.Retention{MaxArtifactsPerTrace: 3}, store.CollectOptions{})
	wantRemoved(t, st, got, attacker[:1], "max_artifacts_per_trace tenant=b user=mallory trace=x", append(victim, attacker[1:]...))
}

// testRetentionSessionPerOwner: the same session id under two owners is
// two sessions.
func testRetentionSessionPerOwner(t *testing.T, st store.Store, c store.Collector) {
	a := putN(t, st, "a", 2, 100, store.Scope{UserID: "alice", SessionID: "s"})
	b := putN(t, st, "b", 3, 100, store.Scope{UserID: "bob", SessionID: "s"})
	got := collect(t, c, store.Retention{MaxSessionBytes: 250}, store.CollectOptions{})
	wantRemoved(t, st, got, b[:1], "max_session_bytes user=bob session=s", append(a, b[1:]...))
}

// testRetentionPerUser: a user that opens a session per put holds no
// more than max_user_bytes and max_artifacts_per_user together, and
// another user's artifacts stay.
func testRetentionPerUser(t *testing.T, st store.Store, c store.Collector) {
	var rotating []string
	for i := range 6 {
		rotating = append(rotating, putN(t, st, fmt.Sprintf("r%d", i), 1, 100, store.Scope{TenantID: "t", UserID: "u", SessionID: fmt.Sprint("s", i)})...)
	}
	other := putN(t, st, "o", 2, 100, store.Scope{TenantID: "t", UserID: "v", SessionID: "s0"})
	p := store.Retention{MaxSessionBytes: 250, MaxUserBytes: 350}
	got := collect(t, c, p, store.CollectOptions{})
	wantRemoved(t, st, got, rotating[:3], "max_user_bytes tenant=t user=u", append(rotating[3:], other...))
	p = store.Retention{MaxArtifactsPerUser: 2, Strategy: store.StrategyFIFO}
	got = collect(t, c, p, store.CollectOptions{})
	wantRemoved(t, st, got, rotating[3:4], "max_artifacts_per_user tenant=t user=u", append(rotating[4:], other...))
}

// testRetentionShared: an artifact two owners put is counted for each;
// the owner past its limit lets go of it (a release: its scopes go, the
// bytes stay for the other), and it goes when its last owner lets go.
func testRetentionShared(t *testing.T, st store.Store, c store.Collector) {
	ctx := context.Background()
	alice := store.Scope{TenantID: "a", UserID: "alice", SessionID: "s"}
	bob := store.Scope{TenantID: "b", UserID: "bob", SessionID: "s"}
	shared := putN(t, st, "shared", 1, 10, alice)[0]
	data := append(bytes.Repeat([]byte{0}, 10), "shared-0"...)
	if _, err := st.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "ret", Scope: bob}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	bobs := putN(t, st, "bob", 2, 10, bob)
	rep, err := c.Collect(ctx, store.Retention{MaxArtifactsPerUser: 2}, store.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Removal{{ID: shared, Why: "max_artifacts_per_user tenant=b user=bob", Released: []store.Scope{bob}}}
	if fmt.Sprint(rep.Removed) != fmt.Sprint(want) || rep.Count != 1 || rep.Bytes != 0 {
		t.Fatalf("collect = %+v, want only the release %+v", rep, want)
	}
	if got := owned(t, st, shared, alice.Owner()); !slices.Equal(got, []store.Scope{alice}) {
		t.Errorf("alice holds %s under %+v after bob's release, want her scope", shared, got)
	}
	if got := owned(t, st, shared, bob.Owner()); got != nil {
		t.Errorf("bob still holds %s under %+v", shared, got)
	}
	if n := countScope(t, st, store.Scope{TenantID: "b"}); n != 2 {
		t.Errorf("bob lists %d artifacts, want his 2 (%v)", n, bobs)
	}
	// Alice's own limit: now the artifact has no owner left, and goes.
	alices := putN(t, st, "alice", 1, 10, alice)
	got := collect(t, c, store.Retention{MaxArtifactsPerSession: 1}, store.CollectOptions{})
	wantRemoved(t, st, got, []string{shared, bobs[0]}, "max_artifacts_per_session", append(alices, bobs[1]))
}

// testRetentionTTLPerScope: under fifo each scope's TTL counts from its
// own put, so an owner that put the bytes later keeps them after the
// first owner's time is up.
func testRetentionTTLPerScope(t *testing.T, st store.Store, c store.Collector) {
	ctx := context.Background()
	first := store.Scope{UserID: "alice"}
	id := putN(t, st, "ttl", 1, 10, first)[0]
	time.Sleep(20 * time.Millisecond)
	data := append(bytes.Repeat([]byte{0}, 10), "ttl-0"...)
	later, err := st.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "ret", Scope: store.Scope{UserID: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	p := store.Retention{TTL: store.Duration(time.Hour), Strategy: store.StrategyFIFO}
	rep, err := c.Collect(ctx, p, store.CollectOptions{Now: later.Created.Add(time.Hour - time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Removal{{ID: id, Why: "ttl", Released: []store.Scope{first}}}
	if fmt.Sprint(rep.Removed) != fmt.Sprint(want) {
		t.Fatalf("collect = %+v, want %+v", rep.Removed, want)
	}
	if got := owned(t, st, id, store.Owner{UserID: "bob"}); len(got) != 1 {
		t.Errorf("bob holds %v after alice's TTL, want his scope", got)
	}
	got := collect(t, c, p, store.CollectOptions{Now: later.Created.Add(time.Hour + time.Millisecond)})
	wantRemoved(t, st, got, []string{id}, "ttl", nil)
}

// testRetentionNonePerOwner: under strategy none a put is refused by its
// own owner's limits only, and session rotation does not lift them.
func testRetentionNonePerOwner(t *testing.T, st store.Store, c store.Collector) {
	ctx := context.Background()
	p := store.Retention{MaxArtifactsPerTrace: 2, MaxSessionBytes: 250, MaxUserBytes: 300, Strategy: store.StrategyNone}
	putQ := func(size int, tag string, sc store.Scope) error {
		data := append(bytes.Repeat([]byte{1}, size), tag...)
		_, err := st.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "ret", Scope: sc, Quota: p.PutQuota()})
		return err
	}
	for i := range 2 {
		if err := putQ(10, fmt.Sprint("victim", i), store.Scope{TenantID: "a", UserID: "alice", TraceID: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	// Another tenant's third put in "trace x" is its own first.
	if err := putQ(10, "other", store.Scope{TenantID: "b", UserID: "alice", TraceID: "x"}); err != nil {
		t.Errorf("another owner's put in the same trace id: %v", err)
	}
	var le *store.LimitError
	if err := putQ(10, "victim2", store.Scope{TenantID: "a", UserID: "alice", TraceID: "x"}); !errors.As(err, &le) || le.Limit != "max_artifacts_per_trace" {
		t.Errorf("the owner's third put in its trace: %v, want max_artifacts_per_trace", err)
	}
	// Rotating sessions: each session is under max_session_bytes, the
	// user is not under max_user_bytes for long.
	for i := range 2 {
		if err := putQ(100, fmt.Sprint("rot", i), store.Scope{UserID: "u", SessionID: fmt.Sprint("s", i)}); err != nil {
			t.Fatalf("put in session %d: %v", i, err)
		}
	}
	err := putQ(100, "rot2", store.Scope{UserID: "u", SessionID: "s2"})
	if !errors.As(err, &le) || le.Limit != "max_user_bytes" || le.Max != 300 || le.Used != 3*(100+4) {
		t.Errorf("the third session's put: %v, want max_user_bytes is 300, this artifact would take it to 312", err)
	}
	if got := collect(t, c, p, store.CollectOptions{}); len(got) != 0 {
		t.Errorf("none removed %v", got)
	}
}
