package store

import (
	"fmt"
	"strconv"
	"strings"
)

// Id scheme constants.
const (
	// DefaultIDPrefixLen is how many hex characters of the sha256 an id
	// carries when nothing clashes (12: 48 bits; docs/design.md, "ArtifactRef").
	DefaultIDPrefixLen = 12
	// IDPrefixStep is how many hex characters an id grows by on each clash.
	IDPrefixStep = 4
	// MaxNamespaceLen is the longest namespace an id keeps.
	MaxNamespaceLen = 32
	// DefaultNamespace replaces an empty namespace.
	DefaultNamespace = "artifact"

	sha256HexLen = 64
)

// SanitizeNamespace returns the namespace an id carries for ns: ns in lower
// case, every rune outside [a-z0-9-] replaced by '-', runs of '-' collapsed,
// leading and trailing '-' trimmed, cut to MaxNamespaceLen. An empty result
// becomes DefaultNamespace.
//
//	SanitizeNamespace("My Server!") // "my-server"
func SanitizeNamespace(ns string) string {
	var b strings.Builder
	b.Grow(min(len(ns), MaxNamespaceLen))
	dash := false
	for _, r := range strings.ToLower(ns) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				if b.Len()+1 >= MaxNamespaceLen {
					break
				}
				b.WriteByte('-')
			}
			dash = false
			if b.Len() >= MaxNamespaceLen {
				break
			}
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return DefaultNamespace
	}
	return b.String()
}

// NewID returns the id "{namespace}_{prefix}" where namespace is
// SanitizeNamespace(namespace) and prefix is the first prefixLen characters
// of sha256hex in lower case. prefixLen is clamped to [1, len(sha256hex)].
// NewID does not check for clashes: see AllocateID.
//
//	NewID("tableau", "1a2b3c4d5e6f7a8b…", 12) // "tableau_1a2b3c4d5e6f"
func NewID(namespace, sha256hex string, prefixLen int) string {
	prefixLen = max(1, min(prefixLen, len(sha256hex)))
	return SanitizeNamespace(namespace) + "_" + strings.ToLower(sha256hex[:prefixLen])
}

// ValidID reports whether id has the form NewID produces: a namespace of 1 to
// MaxNamespaceLen characters of [a-z0-9-] that neither starts nor ends with
// '-', one '_', and 1 to 64 lower-case hex characters. Such ids are safe as
// file names and URL path segments.
func ValidID(id string) bool {
	_, _, ok := SplitID(id)
	return ok
}

// SplitID splits a valid id into its namespace and its sha256 prefix. ok is
// false when id is not valid (see ValidID).
func SplitID(id string) (namespace, prefix string, ok bool) {
	ns, hex, found := strings.Cut(id, "_")
	if !found || len(ns) == 0 || len(ns) > MaxNamespaceLen ||
		len(hex) == 0 || len(hex) > sha256HexLen ||
		ns[0] == '-' || ns[len(ns)-1] == '-' {
		return "", "", false
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return "", "", false
		}
	}
	if !isLowerHex(hex) {
		return "", "", false
	}
	return ns, hex, true
}

// ValidSHA256 reports whether s is a sha256 digest in lower-case hex.
func ValidSHA256(s string) bool {
	return len(s) == sha256HexLen && isLowerHex(s)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// AllocateID returns the id for content with digest sha256hex in namespace:
// NewID with prefixLen (DefaultIDPrefixLen when prefixLen < 1), lengthened by
// IDPrefixStep characters (up to all 64) while owner reports the id taken by
// a different digest. owner returns the digest stored under an id and
// whether the id is taken.
//
// Callers look up (namespace, digest) in their own index first: once a
// content got a lengthened id, it keeps it even when the shorter id is freed
// later, which AllocateID alone cannot know.
//
// # Errors
//
// ErrInvalidID wrapped when sha256hex is not a lower-case hex sha256 digest,
// or (which takes a broken owner) when even the full digest is taken.
func AllocateID(namespace, sha256hex string, prefixLen int, owner func(id string) (sha256hex string, taken bool)) (string, error) {
	if !ValidSHA256(sha256hex) {
		return "", fmt.Errorf("store: sha256[%s]: not a lower-case hex sha256: %w", sha256hex, ErrInvalidID)
	}
	if prefixLen < 1 {
		prefixLen = DefaultIDPrefixLen
	}
	for n := min(prefixLen, sha256HexLen); ; n = min(n+IDPrefixStep, sha256HexLen) {
		id := NewID(namespace, sha256hex, n)
		other, taken := owner(id)
		if !taken || other == sha256hex {
			return id, nil
		}
		if n == sha256HexLen {
			return "", fmt.Errorf("store: artifact[%s]: id taken by sha256 %s: %w", id, other, ErrInvalidID)
		}
	}
}

// maxQuotedID is how much of an invalid id QuoteID keeps.
const maxQuotedID = 80

// QuoteID returns id for an error message or a log line: a valid id as it
// is, anything else Go-quoted and cut to its first 80 bytes with its full
// length, so that an id a client or a user typed cannot flood a log or a
// terminal, nor carry control characters into it.
//
//	QuoteID("tableau_1a2b")          // tableau_1a2b
//	QuoteID("../etc/passwd\n")      // "../etc/passwd\n"
func QuoteID(id string) string {
	if ValidID(id) {
		return id
	}
	if len(id) <= maxQuotedID {
		return strconv.Quote(id)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(strings.ToValidUTF8(id[:maxQuotedID], "")), len(id))
}
