//go:build reliability

package reliability

import (
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
)

// TestReplicaKilledMidUpload: two `mcpx serve` replicas on one bucket,
// clients storing 1-20 MB blobs through each (every fourth a multipart
// upload); one replica is killed with SIGKILL while its puts are in
// flight. Afterwards every artifact a client of either was told about
// reads back byte-exact through the survivor (the URL signed by the dead
// one too: the replicas share the signing key), every listed artifact
// reads back whole, and `mcpx artifacts gc` (orphan_grace 1s, once the
// survivor is idle) leaves one object of each kind per artifact: no
// orphan bytes, records or keys, no open multipart upload. Puts that
// ended on the killed replica before it could answer are whole artifacts
// no client heard of: listed, and read back whole.
func TestReplicaKilledMidUpload(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	st := s3Store(srv.Endpoint, bucket, nil)
	servers := map[string]map[string]any{"blobs": {"instances": "pool", "pool_size": 3}, "spare": nil}
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := startGateway(t, gatewayConfig(t, t.TempDir(), addrA, servers, st), addrA)
	b := startGateway(t, gatewayConfig(t, t.TempDir(), addrB, servers, st), addrB)

	const perReplica, killAfter, afterKill = 4, 10, 3
	var (
		mu        sync.Mutex
		tolds     []told
		toldA     int
		seed      atomic.Int64
		inflightA atomic.Int32
		wg        sync.WaitGroup
		killed    = make(chan struct{})
		killOnce  sync.Once
	)
	// A's clients alternate 1-6 MB and 18-20 MB (a multipart upload,
	// over 16 MiB), B's store 1-6 MB: an open multipart upload is A's.
	size := func(n int64, onA bool) int64 {
		if onA && n%2 == 0 {
			return 18<<20 + n%3<<20
		}
		return 1<<20 + n%6<<20
	}
	client := func(g *gateway, onA bool, i int) {
		defer wg.Done()
		s, err := newSession(g.URL())
		if err != nil {
			t.Errorf("session %d: %v", i, err)
			return
		}
		left := afterKill
		for {
			n := seed.Add(1)
			if onA {
				inflightA.Add(1)
			}
			r, err := s.callBlob("blobs", n, size(n, onA))
			if onA {
				inflightA.Add(-1)
			}
			if err != nil {
				select {
				case <-killed:
					if onA {
						return // the call the kill cut: the client was told nothing
					}
				default:
				}
				t.Errorf("session %d on %s: %v", i, map[bool]string{true: "A", false: "B"}[onA], err)
				return
			}
			if r.ID == "" || r.NotStored != "" {
				t.Errorf("seed %d not stored on a sound store: %s", n, r.Text)
				return
			}
			mu.Lock()
			tolds = append(tolds, r)
			if onA {
				toldA++
			}
			kill := onA && toldA == killAfter
			mu.Unlock()
			if kill {
				go killOnce.Do(func() {
					// Mid-upload: once A has a multipart upload open.
					deadline := time.Now().Add(10 * time.Second)
					for openUploads(t, srv, bucket) == 0 && time.Now().Before(deadline) {
						time.Sleep(5 * time.Millisecond)
					}
					t.Logf("killing replica A with SIGKILL: %d of its calls in flight, %d multipart uploads open", inflightA.Load(), openUploads(t, srv, bucket))
					close(killed)
					a.kill()
				})
			}
			select {
			case <-killed:
				if left--; left < 0 && !onA {
					return
				}
			default:
			}
		}
	}
	start := time.Now()
	for i := range perReplica {
		wg.Add(2)
		go client(a, true, i)
		go client(b, false, perReplica+i)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d artifacts told (%d through A) in %s, %d calls started", len(tolds), toldA, time.Since(start).Round(time.Millisecond), seed.Load())

	// Every URL reads back through the survivor.
	for _, r := range tolds {
		u, err := url.Parse(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = b.addr
		r.URL = u.String()
		if err := readBack(r); err != nil {
			t.Errorf("through the survivor: %v", err)
		}
	}

	gcCfg := gatewayConfig(t, t.TempDir(), freeAddr(t), servers, s3Store(srv.Endpoint, bucket, map[string]any{"orphan_grace": "1s"}))
	time.Sleep(2500 * time.Millisecond) // S3 times are whole seconds: orphans now older than the grace
	before := countParts(t, srv, bucket)
	ups := openUploads(t, srv, bucket)
	out, err := exec.Command(mcpx(t), "artifacts", "gc", "--config", gcCfg).CombinedOutput()
	if err != nil {
		t.Fatalf("artifacts gc: %v\n%s", err, out)
	}
	t.Logf("before gc: objects per part %v, %d multipart uploads open", before, ups)
	listed := checkBucket(t, gcCfg, srv, bucket, tolds)
	// Puts that ended on A just before the kill are whole, listed
	// artifacts no client heard of: the retention policy takes them in
	// time like any other.
	t.Logf("%d artifacts listed, %d told", listed, len(tolds))
	checkNoOrphans(t, srv, bucket, listed)
}

// openUploads counts the multipart uploads open in the bucket.
func openUploads(t *testing.T, srv *s3test.Server, bucket string) int {
	return len(srv.Uploads(t, bucket, "mcpx/"))
}

// countParts counts the objects under each part of the layout.
func countParts(t *testing.T, srv *s3test.Server, bucket string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, key := range srv.Keys(t, bucket, "mcpx/") {
		part, _, _ := strings.Cut(strings.TrimPrefix(key, "mcpx/"), "/")
		counts[part]++
	}
	return counts
}

// checkNoOrphans counts the objects under each part of the layout
// (store/s3store's package doc): n artifacts have one blob, record,
// content key, scope key and pair of order keys each, at most one access
// key and text part, and no delete is left half done.
func checkNoOrphans(t *testing.T, srv *s3test.Server, bucket string, n int) {
	t.Helper()
	counts := countParts(t, srv, bucket)
	t.Logf("after gc, objects per part for %d artifacts: %v", n, counts)
	for _, part := range []string{"blobs", "meta", "hash", "scope", "order", "rorder"} {
		if counts[part] != n {
			t.Errorf("%d objects under %s/ for %d artifacts", counts[part], part, n)
		}
	}
	for _, part := range []string{"access", "text"} {
		if counts[part] > n {
			t.Errorf("%d objects under %s/ for %d artifacts", counts[part], part, n)
		}
	}
	if counts["gone"] != 0 {
		t.Errorf("%d deletes left half done (gone/)", counts["gone"])
	}
}
