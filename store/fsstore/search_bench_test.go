//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// BenchmarkSearch10k measures Search over 10,000 indexed artifacts of 40
// lines each (400,000 indexed lines), in 100 sessions: the index rows are
// written in one transaction (Put's fsync per artifact is not what is
// measured). It reports p50 and p99 per query kind.
//
//	go test -run '^$' -bench BenchmarkSearch10k -benchtime 200x ./store/fsstore/
func BenchmarkSearch10k(b *testing.B) {
	ctx := context.Background()
	s := openT(b, b.TempDir(), Config{})
	db, err := s.idx.db(ctx)
	if err != nil {
		b.Fatal(err)
	}
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu order submit button link")
	rng := rand.New(rand.NewPCG(1, 2))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	s.idx.wmu.Lock()
	for i := range 10000 {
		var t strings.Builder
		for l := range 40 {
			fmt.Fprintf(&t, "- %s %q [ref=e%d]\n", words[rng.IntN(len(words))], words[rng.IntN(len(words))]+" "+words[rng.IntN(len(words))], i*40+l)
		}
		sum := fmt.Sprintf("%064x", i)
		ref := store.Ref{ID: fmt.Sprintf("bench_%012x", i), SHA256: sum, SizeBytes: int64(t.Len()), Created: time.Now().UTC(),
			Scope: store.Scope{SessionID: fmt.Sprintf("s%d", i%100)}}
		seq, err := insertArtifact(ctx, tx, "bench", ref)
		if err != nil {
			b.Fatal(err)
		}
		if err := indexParts(ctx, tx, seq, []store.TextPart{{Text: t.String()}}); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	s.idx.wmu.Unlock()
	queries := []struct {
		name, q string
		scope   store.Scope
	}{
		{"rare_all", "e123457", store.Scope{}},          // one line in all
		{"phrase_all", `"submit order"`, store.Scope{}}, // ~1 in 900 lines
		{"common_all", "alpha", store.Scope{}},          // ~1 in 15 lines
		{"common_session", "alpha", store.Scope{SessionID: "s7"}},
		{"two_words_session", "order submit", store.Scope{SessionID: "s7"}},
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				hits, err := s.Search(ctx, q.scope, q.q, 10)
				lat = append(lat, time.Since(t0))
				if err != nil || len(hits) == 0 {
					b.Fatalf("Search(%q) = %d hits, %v", q.q, len(hits), err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
		})
	}
}
