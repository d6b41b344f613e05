package web

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Every URL a client was given answered 403 after a restart
// (the key was random per process). The ring kept with the store makes
// a restarted signer accept them; rotation keeps unexpired URLs working.
func TestKeyRingSurvivesRestartAndRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), KeyFileName)
	kf := KeyFile(path)
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	newSigner := func() *Signer {
		keys, err := LoadKeys(ctx, kf)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSigner(SignerConfig{BaseURL: "http://127.0.0.1:1", Keys: keys, Keeper: kf, TTL: time.Hour, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	verify := func(s *Signer, raw string) error {
		u, _ := url.Parse(raw)
		_, err := s.Verify("t_0123456789ab", u.Query())
		return err
	}
	first := newSigner()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi.Mode(), err)
	}
	old := first.URL("t_0123456789ab", "s1")
	if u, _ := url.Parse(old); u.Query().Get("kid") == "" {
		t.Fatalf("no kid in %s", old)
	}
	// restart
	if err := verify(newSigner(), old); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	// rotate: the new key signs, the old still verifies until its URLs expire
	now = now.Add(10 * time.Minute)
	keys, err := RotateKeys(ctx, kf, time.Hour, now)
	if err != nil || len(keys) != 2 {
		t.Fatalf("rotate: %d keys, %v", len(keys), err)
	}
	rotated := newSigner()
	fresh := rotated.URL("t_0123456789ab", "s1")
	if qf, _ := url.ParseQuery(fresh[len("http://127.0.0.1:1/artifacts/t_0123456789ab?"):]); qf.Get("kid") != keys[0].ID {
		t.Errorf("new URL's kid %q, want %q", qf.Get("kid"), keys[0].ID)
	}
	if err := verify(rotated, old); err != nil {
		t.Errorf("old URL after rotation: %v", err)
	}
	// a replica that has not reloaded learns the new key on first sight
	if err := verify(first, fresh); err != nil {
		t.Errorf("a replica with the old ring: %v", err)
	}
	// an hour after retirement the old key is dropped at the next rotation
	now = now.Add(61 * time.Minute)
	keys, _ = RotateKeys(ctx, kf, time.Hour, now)
	if len(keys) != 2 {
		t.Errorf("after two rotations: %d keys, want 2 (the first dropped)", len(keys))
	}
	if !RotateDue(keys, time.Hour, now.Add(time.Hour)) || RotateDue(keys, 0, now.Add(1000*time.Hour)) {
		t.Error("RotateDue")
	}
	// a corrupt ring is an error, not a silent new key
	_ = os.WriteFile(path, []byte("{"), 0o600)
	if _, err := LoadKeys(ctx, kf); !errors.Is(err, ErrKeyRing) {
		t.Errorf("corrupt ring: %v", err)
	}
}

// Replicas starting at once agree on one ring.
func TestKeyRingCreateRace(t *testing.T) {
	t.Parallel()
	kf := KeyFile(filepath.Join(t.TempDir(), KeyFileName))
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys, err := LoadKeys(context.Background(), kf)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = keys[0].ID
		}()
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] {
			t.Fatalf("replicas disagree: %v", got)
		}
	}
}
