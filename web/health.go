package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// readyTimeout bounds one /readyz check.
const readyTimeout = 5 * time.Second

// serveHealth answers 200 while the process serves: liveness.
func serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}

// serveReady answers 200 when the upstreams are connected and the store
// takes a write (a probe artifact put and deleted), else 503 naming what
// is not ready.
func (a *API) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	w.Header().Set("Cache-Control", "no-store")
	if a.o.Ready != nil {
		if err := a.o.Ready.Ready(ctx); err != nil {
			http.Error(w, "upstreams not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	if err := storeWritable(ctx, a.o.Store); err != nil {
		a.log.Warn("store not writable", "error", err)
		http.Error(w, "store not writable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ready\n"))
}

// storeWritable puts a small unique probe and deletes it.
func storeWritable(ctx context.Context, st store.Store) error {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	ref, err := st.Put(ctx, bytes.NewReader([]byte("mcpx readiness probe "+hex.EncodeToString(nonce[:]))),
		store.PutOptions{Namespace: "readyz", MIMEType: "text/plain"})
	if err != nil {
		return err
	}
	return st.Delete(ctx, ref.ID)
}
