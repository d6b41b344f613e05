package auth

import (
	"crypto/sha256"
	"crypto/subtle"
)

// tokenTable finds the identity of a static token in time that does not
// depend on which token (or how much of it) matched: every entry is
// compared, by its SHA-256 so lengths do not leak either.
type tokenTable struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum [sha256.Size]byte
	id  Identity
}

func newTokenTable(m map[string]Identity) *tokenTable {
	t := &tokenTable{}
	for tok, id := range m {
		t.entries = append(t.entries, tokenEntry{sha256.Sum256([]byte(tok)), id})
	}
	return t
}

func (t *tokenTable) lookup(tok string) (Identity, bool) {
	sum := sha256.Sum256([]byte(tok))
	var found Identity
	ok := 0
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			found, ok = e.id, 1
		}
	}
	return found, ok == 1
}
