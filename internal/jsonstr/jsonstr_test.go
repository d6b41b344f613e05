package jsonstr

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func TestUnescape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, ``},
		{`plain`, `plain`},
		{`a\"b\\c\/d`, `a"b\c/d`},
		{`\b\f\n\r\t`, "\b\f\n\r\t"},
		{`\u00e9\u20AC`, "é€"},
		{`\ud83d\ude00`, "😀"},
		{`\ud83d`, "\uFFFD"},
		{`\ud83dx`, "\uFFFDx"},
	} {
		got, err := Unescape(nil, []byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`\`, `\x`, `\u12`, `\u12zz`} {
		if _, err := Unescape(nil, []byte(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: got %v, want ErrSyntax", bad, err)
		}
	}
}

func TestAppend(t *testing.T) {
	for in, want := range map[string]string{
		``:            `""`,
		`say "hi"\`:   `"say \"hi\"\\"`,
		"a\nb\tc\x01": `"a\nb\tc\u0001"`,
		"é€/<>":       `"é€/<>"`,
	} {
		if got := string(AppendString(nil, in)); got != want {
			t.Errorf("%q: got %s want %s", in, got, want)
		}
	}
}

func TestReader(t *testing.T) {
	in := []byte(strings.Repeat(`abc\n\"\u00e9`, 1000))
	want, _ := Unescape(nil, in)
	if err := iotest.TestReader(NewReader(in), want); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(NewReader([]byte(`ok\q`))); !errors.Is(err, ErrSyntax) {
		t.Fatalf("bad escape: %v", err)
	}
}

// FuzzRoundTrip: Append then Unescape gives the bytes back, encoding/json
// reads what Append writes, and the Reader agrees with Unescape.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" backslash \\ nl \n", "\x00\x1f\x7f", "é€😀", "\xff\xfe"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		lit := Append(nil, s)
		back, err := Unescape(nil, lit[1:len(lit)-1])
		if err != nil || string(back) != string(s) {
			t.Fatalf("round trip of %q: %q, %v", s, back, err)
		}
		if utf8.Valid(s) {
			var viaJSON string
			if err := json.Unmarshal(lit, &viaJSON); err != nil || viaJSON != string(s) {
				t.Fatalf("encoding/json read %s as %q, %v", lit, viaJSON, err)
			}
		}
		streamed, err := io.ReadAll(NewReader(lit[1 : len(lit)-1]))
		if err != nil || string(streamed) != string(s) {
			t.Fatalf("reader: %q, %v", streamed, err)
		}
	})
}

func TestHasLoneSurrogate(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`plain`, false},
		{`\ud800`, true},                   // a high half alone
		{`x\udc00y`, true},                 // a low half first
		{`\ud83d\ude00`, false},            // a pair (U+1F600)
		{`\ud83d\u0041`, true},             // a high half followed by no low half
		{`\\ud800`, false},                 // an escaped backslash, then text
		{`\u00e9 and \ud83d\ude00`, false}, // ordinary escapes
		{`\ud83d`, true},                   // cut short
	} {
		if got := HasLoneSurrogate([]byte(tc.body)); got != tc.want {
			t.Errorf("HasLoneSurrogate(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}
