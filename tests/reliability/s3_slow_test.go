//go:build reliability

package reliability

import (
	"crypto/sha256"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
)

// s3Store is the "store" section of a gateway on bucket at endpoint,
// with extra keys of store.s3 (put_timeout, orphan_grace …).
func s3Store(endpoint, bucket string, extra map[string]any) map[string]any {
	s3 := map[string]any{"endpoint": endpoint, "bucket": bucket, "prefix": "mcpx", "path_style": true,
		"access_key": s3test.AccessKey, "secret_key": s3test.SecretKey}
	for k, v := range extra {
		s3[k] = v
	}
	return map[string]any{"s3": s3}
}

// TestS3SlowedMidPut: the object store slows to a trickle mid-put (a
// throttling proxy between mcpx and versitygw). A put that still ends
// within store.s3.put_timeout is stored and reads back byte-exact; one
// that cannot (a 20 MB multipart upload at 64 KiB/s) fails within the
// timeout, and the model gets a preview and a note that says the store
// did not take the value in time, never the bytes. Nothing of the cut
// put is listed or left in the bucket, no multipart upload stays open,
// and the gateway stores again at full speed.
func TestS3SlowedMidPut(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	proxy := startSlowProxy(t, strings.TrimPrefix(srv.Endpoint, "http://"))
	dir := t.TempDir()
	addr := freeAddr(t)
	const putTimeout = 4 * time.Second
	cfg := gatewayConfig(t, dir, addr, map[string]map[string]any{"blobs": nil, "spare": nil},
		s3Store("http://"+proxy.Addr(), bucket, map[string]any{"put_timeout": putTimeout.String()}))
	g := startGateway(t, cfg, addr)
	s, err := newSession(g.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()

	// Slowed to 8 MB/s after 1 MB: 6 MB take about 0.6 s, within the timeout.
	proxy.slowAfter(1<<20, 8<<20)
	start := time.Now()
	slow, err := s.callBlob("blobs", 1, 6<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("6 MB slowed to 8 MB/s after 1 MB: %s, %d bytes trickled", time.Since(start).Round(time.Millisecond), proxy.trickle.Load())
	if slow.ID == "" || slow.NotStored != "" {
		t.Fatalf("a slowed put within the timeout was not stored: %s", slow.Text)
	}

	// A trickle: 64 KiB/s after 2 MB; 20 MB would take five minutes.
	proxy.slowAfter(2<<20, 64<<10)
	start = time.Now()
	cut, err := s.callBlob("blobs", 2, 20<<20)
	took := time.Since(start)
	proxy.fast()
	if err != nil {
		t.Fatalf("the call whose put trickled: %v", err)
	}
	t.Logf("20 MB at 64 KiB/s after 2 MB: answered in %s (put_timeout %s)", took.Round(time.Millisecond), putTimeout)
	if cut.NotStored == "" {
		t.Fatalf("a put past the timeout: want a note that the value was not stored, got %s", cut.Text)
	}
	t.Logf("the model read: %s", noteOf(cut.NotStored))
	if !strings.Contains(cut.NotStored, "NOT stored: the artifact store failed (the object store did not take the bytes within the put timeout of 4s)") {
		t.Errorf("the note does not say the store was too slow: %s", noteOf(cut.NotStored))
	}
	if took > putTimeout+20*time.Second {
		t.Errorf("answered %s after the call, far past the %s put timeout", took, putTimeout)
	}

	// At full speed again: stored.
	fresh, err := s.callBlob("blobs", 3, 3<<20)
	if err != nil || fresh.ID == "" || fresh.NotStored != "" {
		t.Fatalf("a put once the store is fast again: %v %s", err, fresh.Text)
	}
	for _, r := range []told{slow, fresh} {
		if err := readBack(r); err != nil {
			t.Error(err)
		}
	}
	checkBucket(t, cfg, srv, bucket, []told{slow, fresh})
}

// checkBucket checks what the store holds after a fault: every artifact
// `mcpx artifacts ls` lists reads back whole (its sha256), and each of
// tolds is among them; the bucket holds one blob per listed artifact and
// no open multipart upload. It returns how many are listed.
func checkBucket(t *testing.T, cfg string, srv *s3test.Server, bucket string, tolds []told) int {
	t.Helper()
	bin := mcpx(t)
	out, err := exec.Command(bin, "artifacts", "ls", "--json", "--config", cfg).Output()
	if err != nil {
		t.Fatalf("artifacts ls: %v", err)
	}
	listed := map[string]gjson.Result{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			r := gjson.Parse(l)
			listed[r.Get("id").String()] = r
		}
	}
	for _, r := range tolds {
		if _, ok := listed[r.ID]; !ok {
			t.Errorf("artifact %s, told to a client, is not listed", r.ID)
		}
	}
	for id, r := range listed {
		b, err := exec.Command(bin, "artifacts", "get", "--config", cfg, id).Output()
		if err != nil {
			t.Errorf("listed artifact %s: get: %v", id, err)
			continue
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != r.Get("sha256").String() || int64(len(b)) != r.Get("size_bytes").Int() {
			t.Errorf("listed artifact %s reads back %d bytes that are not its %d", id, len(b), r.Get("size_bytes").Int())
		}
	}
	if blobs := srv.Keys(t, bucket, "mcpx/blobs/"); len(blobs) != len(listed) {
		t.Errorf("%d blobs in the bucket for %d listed artifacts: %v", len(blobs), len(listed), blobs)
	}
	for _, key := range srv.Uploads(t, bucket, "mcpx/") {
		t.Errorf("multipart upload of %s is still open", key)
	}
	return len(listed)
}
