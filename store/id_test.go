package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestSanitizeNamespace(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "tableau", "tableau"},
		{"upper case", "GitHub", "github"},
		{"spaces and punctuation", "My Server!", "my-server"},
		{"runs collapse", "a  __ b", "a-b"},
		{"underscore is not kept", "my_server", "my-server"},
		{"trimmed", "--x--", "x"},
		{"digits and dash", "s3-eu-1", "s3-eu-1"},
		{"non-ascii", "café☕", "caf"},
		{"only symbols", "☕!!", store.DefaultNamespace},
		{"empty", "", store.DefaultNamespace},
		{"cut to 32", strings.Repeat("ab", 40), strings.Repeat("ab", 16)},
		{"cut does not end in dash", strings.Repeat("a", 31) + " bcd", strings.Repeat("a", 31)},
		{"path", "../../etc/passwd", "etc-passwd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := store.SanitizeNamespace(tc.in)
			if got != tc.want {
				t.Errorf("SanitizeNamespace(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !store.ValidID(got + "_0") {
				t.Errorf("SanitizeNamespace(%q) = %q does not make a valid id", tc.in, got)
			}
		})
	}
}

func TestNewID(t *testing.T) {
	s := sum("hello")
	cases := []struct {
		name, ns string
		prefix   int
		want     string
	}{
		{"default", "tableau", store.DefaultIDPrefixLen, "tableau_" + s[:12]},
		{"sanitized namespace", "Tableau Server", 12, "tableau-server_" + s[:12]},
		{"empty namespace", "", 12, "artifact_" + s[:12]},
		{"longer", "x", 16, "x_" + s[:16]},
		{"clamped low", "x", 0, "x_" + s[:1]},
		{"clamped high", "x", 100, "x_" + s},
		{"upper-case digest", "x", 12, "x_" + s[:12]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			digest := s
			if tc.name == "upper-case digest" {
				digest = strings.ToUpper(s)
			}
			got := store.NewID(tc.ns, digest, tc.prefix)
			if got != tc.want {
				t.Errorf("NewID = %q, want %q", got, tc.want)
			}
			if !store.ValidID(got) {
				t.Errorf("NewID = %q is not valid", got)
			}
			if url.PathEscape(got) != got || filepath.Base(got) != got {
				t.Errorf("NewID = %q is not a safe path segment", got)
			}
		})
	}
}

func TestValidID(t *testing.T) {
	cases := []struct {
		id   string
		want bool
	}{
		{"tableau_1a2b3c4d5e6f", true},
		{"a_0", true},
		{"my-server_" + sum("x"), true},
		{strings.Repeat("a", 32) + "_abc", true},
		{strings.Repeat("a", 33) + "_abc", false},
		{"a_" + sum("x") + "0", false},
		{"", false},
		{"_abc", false},
		{"a_", false},
		{"a_ABC", false},
		{"A_abc", false},
		{"a_abg", false},
		{"a__abc", false},
		{"a_b_abc", false},
		{"-a_abc", false},
		{"a-_abc", false},
		{"a.b_abc", false},
		{"a/b_abc", false},
		{"../a_abc", false},
		{"a_abc\n", false},
		{"a_abc%2f", false},
	}
	for _, tc := range cases {
		if got := store.ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
	ns, prefix, ok := store.SplitID("tableau_1a2b")
	if ns != "tableau" || prefix != "1a2b" || !ok {
		t.Errorf("SplitID = %q, %q, %v", ns, prefix, ok)
	}
}

func TestAllocateID(t *testing.T) {
	target := sum("target")
	// owner that holds every prefix of target shorter than n with another
	// digest.
	blockedBelow := func(n int) func(string) (string, bool) {
		return func(id string) (string, bool) {
			_, p, _ := store.SplitID(id)
			if len(p) < n {
				return sum("someone else"), true
			}
			return "", false
		}
	}
	cases := []struct {
		name    string
		prefix  int
		owner   func(string) (string, bool)
		wantLen int
		wantErr bool
	}{
		{"free", 12, blockedBelow(0), 12, false},
		{"default for 0", 0, blockedBelow(0), 12, false},
		{"one clash", 12, blockedBelow(13), 16, false},
		{"three clashes", 12, blockedBelow(21), 24, false},
		{"from prefix 1", 1, blockedBelow(6), 9, false},
		{"up to the full digest", 12, blockedBelow(61), 64, false},
		{"taken by the same digest", 12, func(string) (string, bool) { return target, true }, 12, false},
		{"full digest taken", 12, blockedBelow(65), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := store.AllocateID("ns", target, tc.prefix, tc.owner)
			if tc.wantErr {
				if !errors.Is(err, store.ErrInvalidID) {
					t.Errorf("AllocateID = %q, %v; want ErrInvalidID", id, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "ns_" + target[:tc.wantLen]; id != want {
				t.Errorf("AllocateID = %q, want %q", id, want)
			}
		})
	}
	if _, err := store.AllocateID("ns", "not-a-digest", 12, blockedBelow(0)); !errors.Is(err, store.ErrInvalidID) {
		t.Errorf("AllocateID with a bad digest: %v, want ErrInvalidID", err)
	}
}

func FuzzSanitizeNamespace(f *testing.F) {
	for _, s := range []string{"", "Tableau Server", "☕", strings.Repeat("-a", 40), "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ns := store.SanitizeNamespace(in)
		if !store.ValidID(ns + "_0") {
			t.Fatalf("SanitizeNamespace(%q) = %q: not a valid namespace", in, ns)
		}
		if again := store.SanitizeNamespace(ns); again != ns {
			t.Fatalf("SanitizeNamespace not idempotent: %q then %q", ns, again)
		}
	})
}

func TestQuoteID(t *testing.T) {
	long := strings.Repeat("A", 100_000)
	for _, tc := range []struct{ id, want string }{
		{"tableau_1a2b", "tableau_1a2b"},
		{"../etc/passwd\n", `"../etc/passwd\n"`},
		{"", `""`},
		{long, `"` + strings.Repeat("A", 80) + `"… (100000 bytes)`},
	} {
		if got := store.QuoteID(tc.id); got != tc.want {
			t.Errorf("QuoteID(%.20q) = %.100q, want %.100q", tc.id, got, tc.want)
		}
	}
}

func TestNewRef(t *testing.T) {
	o := store.PutOptions{Namespace: "n", MIMEType: "image/png", Filename: "a.png", MaxBytes: 9,
		Scope: store.Scope{SessionID: "s"}, Source: store.Source{Server: "srv", Tool: "t", Path: "p", Layer: "l"}}
	before := time.Now().UTC()
	r := store.NewRef("n_abc", sum("x"), 42, o)
	if r.ID != "n_abc" || r.SHA256 != sum("x") || r.SizeBytes != 42 || r.MIMEType != o.MIMEType || r.Filename != o.Filename ||
		r.Scope != o.Scope || r.Source != o.Source || r.Truncated || r.Created.Before(before.Add(-time.Second)) || r.Created.Location() != time.UTC {
		t.Errorf("NewRef = %+v", r)
	}
}
