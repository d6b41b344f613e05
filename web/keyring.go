package web

// Signing keys that outlive the process: a key ring kept with the store
// (a 0600 file in an fsstore folder, an object of an s3store) so that the
// URLs clients were given keep working after a restart, and rotation
// that never breaks a URL before it expires.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// KeyFileName is the key ring's file in an fsstore folder.
const KeyFileName = "url-signing-keys.json"

// Key is one HMAC key of the ring.
type Key struct {
	// ID is named in the URLs the key signs ("kid").
	ID string `json:"kid"`
	// Secret is the HMAC key (base64 in JSON).
	Secret []byte `json:"secret"`
	// Created is when the key was made; Retired, when a newer key took
	// over signing (zero for the current key).
	Created time.Time `json:"created"`
	Retired time.Time `json:"retired,omitzero"`
}

// KeyRing is the persisted ring: Keys[0] signs, every key verifies.
type KeyRing struct {
	Keys []Key `json:"keys"`
}

// KeyKeeper persists the key ring. Read returns an error matching
// fs.ErrNotExist when nothing is kept yet; Write with create writes only
// when nothing is (two replicas starting at once agree on one ring) and
// reports whether it wrote. *s3store.Store implements it; KeyFile keeps
// a file.
type KeyKeeper interface {
	ReadKeys(ctx context.Context) ([]byte, error)
	WriteKeys(ctx context.Context, b []byte, create bool) (bool, error)
}

// KeyFile keeps the ring in a file readable by its owner only (0600),
// written atomically (a temporary file renamed over it).
type KeyFile string

// ReadKeys reads the file.
func (f KeyFile) ReadKeys(context.Context) ([]byte, error) { return os.ReadFile(string(f)) }

// WriteKeys writes the file; with create, only when it does not exist.
func (f KeyFile) WriteKeys(_ context.Context, b []byte, create bool) (bool, error) {
	path := string(f)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".url-keys-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return false, err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if create {
		// link fails when path exists: the first writer wins
		if err := os.Link(tmp.Name(), path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return false, nil
			}
			return false, err
		}
		return true, nil
	}
	return true, os.Rename(tmp.Name(), path)
}

// ErrKeyRing is returned for a kept ring that cannot be used.
var ErrKeyRing = errors.New("web: key ring")

func readRing(ctx context.Context, k KeyKeeper) (KeyRing, error) {
	b, err := k.ReadKeys(ctx)
	if err != nil {
		return KeyRing{}, err
	}
	var ring KeyRing
	if err := json.Unmarshal(b, &ring); err != nil {
		return KeyRing{}, fmt.Errorf("%w: %w", ErrKeyRing, err)
	}
	if len(ring.Keys) == 0 {
		return KeyRing{}, fmt.Errorf("%w: no keys", ErrKeyRing)
	}
	for _, key := range ring.Keys {
		if len(key.Secret) < 16 || key.ID == "" {
			return KeyRing{}, fmt.Errorf("%w: key %q is too short or has no id", ErrKeyRing, key.ID)
		}
	}
	return ring, nil
}

func newKey(now time.Time) (Key, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, err
	}
	id := make([]byte, 4)
	if _, err := rand.Read(id); err != nil {
		return Key{}, err
	}
	return Key{ID: hex.EncodeToString(id), Secret: secret, Created: now.UTC().Round(0)}, nil
}

// LoadKeys returns the ring k keeps, making and keeping a new one when
// there is none.
func LoadKeys(ctx context.Context, k KeyKeeper) ([]Key, error) {
	ring, err := readRing(ctx, k)
	if err == nil {
		return ring.Keys, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	key, err := newKey(time.Now())
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(KeyRing{Keys: []Key{key}})
	created, err := k.WriteKeys(ctx, b, true)
	if err != nil {
		return nil, fmt.Errorf("%w: keeping a new ring: %w", ErrKeyRing, err)
	}
	if !created { // another process made one first
		ring, err := readRing(ctx, k)
		return ring.Keys, err
	}
	return []Key{key}, nil
}

// RotateKeys puts a new key first in k's ring (it signs from now on),
// retires the one before, and drops keys retired more than ttl (the
// longest a URL they signed stays valid) ago. It returns the new ring.
func RotateKeys(ctx context.Context, k KeyKeeper, ttl time.Duration, now time.Time) ([]Key, error) {
	old, err := LoadKeys(ctx, k)
	if err != nil {
		return nil, err
	}
	key, err := newKey(now)
	if err != nil {
		return nil, err
	}
	keys := []Key{key}
	for i, o := range old {
		if i == 0 && o.Retired.IsZero() {
			o.Retired = now.UTC().Round(0)
		}
		if now.Sub(o.Retired) <= ttl {
			keys = append(keys, o)
		}
	}
	b, _ := json.Marshal(KeyRing{Keys: keys})
	if _, err := k.WriteKeys(ctx, b, false); err != nil {
		return nil, fmt.Errorf("%w: keeping the rotated ring: %w", ErrKeyRing, err)
	}
	return keys, nil
}

// RotateDue reports whether the ring's signing key is older than every
// (0: never).
func RotateDue(keys []Key, every time.Duration, now time.Time) bool {
	return every > 0 && len(keys) > 0 && now.Sub(keys[0].Created) >= every
}
