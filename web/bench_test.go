package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// benchAPI serves an API over an fsstore in dir on loopback.
func benchAPI(b *testing.B, dir string) (*httptest.Server, *fsstore.Store, *Signer) {
	b.Helper()
	ctx := context.Background()
	st, err := fsstore.Open(ctx, dir, fsstore.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close(ctx) })
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	signer, _ := NewSigner(SignerConfig{BaseURL: base, Secret: []byte("bench-secret-0123456789")})
	au, _ := auth.New(ctx, auth.Options{Config: auth.Config{Limits: auth.Limits{RequestsPerSecond: -1, ToolCallsPerSecond: -1}}, Loopback: true, BaseURL: base})
	eng, err := engine.New(engine.Options{Store: st, Linker: signer})
	if err != nil {
		b.Fatal(err)
	}
	api, err := NewAPI(APIOptions{Store: st, Signer: signer, Auth: au, Transformer: eng})
	if err != nil {
		b.Fatal(err)
	}
	srv.Config.Handler = api.Handler()
	srv.Start()
	b.Cleanup(srv.Close)
	return srv, st, signer
}

func fetch(b *testing.B, c *http.Client, u string) int64 {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("%s: %d %v", u, resp.StatusCode, err)
	}
	return n
}

const bigArtifact = 100 << 20

// BenchmarkDownload100MB fetches a 100 MB artifact through a signed URL
// of the API; /servefile is http.ServeFile on the artifact's own blob
// file, the floor (the API's download is to reach at least 0.8x its
// throughput).
func BenchmarkDownload100MB(b *testing.B) {
	dir := b.TempDir()
	_, st, signer := benchAPI(b, dir)
	data := make([]byte, bigArtifact)
	_, _ = rand.Read(data)
	ref, err := st.Put(context.Background(), bytes.NewReader(data), store.PutOptions{Namespace: "bench", MIMEType: "application/octet-stream"})
	if err != nil {
		b.Fatal(err)
	}
	var blob string
	_ = filepath.WalkDir(filepath.Join(dir, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, ref.SHA256[:8]) {
			blob = p
		}
		return nil
	})
	if blob == "" {
		b.Fatal("blob file not found")
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, blob) }))
	defer plain.Close()
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	signed := signer.URL(ref.ID, "")
	b.Run("api", func(b *testing.B) {
		b.SetBytes(bigArtifact)
		for b.Loop() {
			fetch(b, c, signed)
		}
	})
	b.Run("servefile", func(b *testing.B) {
		b.SetBytes(bigArtifact)
		for b.Loop() {
			fetch(b, c, plain.URL)
		}
	})
}

// BenchmarkConcurrentSignedDownloads runs 1,000 small signed downloads at
// once per iteration and reports their latency percentiles; any error
// fails it.
func BenchmarkConcurrentSignedDownloads(b *testing.B) {
	srv, st, signer := benchAPI(b, b.TempDir())
	_ = srv
	var urls []string
	for i := range 100 {
		ref, err := st.Put(context.Background(), strings.NewReader(strings.Repeat("x", 1000)+string(rune('a'+i%26))+strings.Repeat("y", i)), store.PutOptions{Namespace: "bench", MIMEType: "text/plain", Scope: store.Scope{SessionID: "s"}})
		if err != nil {
			b.Fatal(err)
		}
		urls = append(urls, signer.URL(ref.ID, "s"))
	}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}}
	const n = 1000
	var all []time.Duration
	for b.Loop() {
		lat := make([]time.Duration, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				resp, err := c.Get(urls[i%len(urls)])
				if err != nil {
					errs <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- &url.Error{Op: resp.Status, URL: urls[i%len(urls)]}
					return
				}
				lat[i] = time.Since(start)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		all = append(all, lat...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkTransformSmall posts a small tool result to POST /transform
// over loopback, one at a time, and reports the median round trip.
func BenchmarkTransformSmall(b *testing.B) {
	srv, _, _ := benchAPI(b, b.TempDir())
	body := []byte(`{"content":[{"type":"text","text":"{\"rows\":[{\"id\":1,\"name\":\"alpha\"},{\"id\":2,\"name\":\"beta\"}],\"total\":2}"}]}`)
	c := &http.Client{Transport: &http.Transport{}}
	u := srv.URL + "/transform?server=db&tool=query"
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		resp, err := c.Post(u, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
