package store

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckSearchQuery(t *testing.T) {
	for _, c := range []struct {
		q    string
		want string
	}{
		{"submit order", ""},
		{`"submit the order" button`, ""},
		{strings.Repeat("w ", 33), "store: search query too long: it has 33 words and phrases, over the 32 a search takes; search with fewer, rarer words"},
		{strings.Repeat("x", 1001), "store: search query too long: it has 1001 characters, over the 1000 a search takes; search with fewer, rarer words"},
		// what is not a word does not count
		{strings.Repeat("- ", 100) + "word", ""},
	} {
		err := CheckSearchQuery(c.q, 1000, 32)
		if c.want == "" && err != nil || c.want != "" && (!errors.Is(err, ErrQueryTooLong) || err.Error() != c.want) {
			t.Errorf("%.20q: %v, want %q", c.q, err, c.want)
		}
	}
	if err := CheckSearchQuery(strings.Repeat("w ", 5000), 0, 0); err != nil {
		t.Errorf("no caps: %v", err)
	}
}
