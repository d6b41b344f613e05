package jsonstr

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
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

// TestReaderFillsBuffer: each Read fills p (short only at the end), so a
// store writes once per buffer, however dense the escapes; every buffer
// size, down to one byte, splits multi-byte escapes exactly.
func TestReaderFillsBuffer(t *testing.T) {
	in := []byte(strings.Repeat(`- link \"Sign in\" [ref=e4]\n\u00e9\ud83d\ude00\ud83d!\\`, 500) + `tail`)
	want, err := Unescape(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 2, 3, 4, 5, 7, 64, 4096, 1 << 20} {
		r, p := NewReader(in), make([]byte, size)
		var got []byte
		reads := 0
		for {
			n, err := r.Read(p)
			got = append(got, p[:n]...)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			reads++
			if n != size && len(got) != len(want) {
				t.Fatalf("size %d: read %d bytes at %d of %d", size, n, len(got), len(want))
			}
		}
		if string(got) != string(want) {
			t.Fatalf("size %d: decoded %d bytes differ from Unescape's %d", size, len(got), len(want))
		}
		if wantReads := (len(want) + size - 1) / size; reads != wantReads {
			t.Errorf("size %d: %d reads, want %d", size, reads, wantReads)
		}
	}
}

// TestReaderErrorAfterData: the bytes before a bad escape come first, then
// the error, on every later Read too.
func TestReaderErrorAfterData(t *testing.T) {
	r := NewReader([]byte(`ok\n\q rest`))
	p := make([]byte, 64)
	n, err := r.Read(p)
	if err != nil || string(p[:n]) != "ok\n" {
		t.Fatalf("first read %q, %v", p[:n], err)
	}
	for range 2 {
		if n, err := r.Read(p); n != 0 || !errors.Is(err, ErrSyntax) {
			t.Fatalf("then %d, %v; want ErrSyntax", n, err)
		}
	}
	if n, err := NewReader([]byte(`abc\`)).Read(p); n != 3 || err != nil {
		t.Fatalf("lone backslash at end: %d, %v before the error", n, err)
	}
}

// TestReaderScansOnce: a long string without escapes, read in small
// buffers, is scanned about once (the search for '\\' stops at p's room),
// not once per Read from the read position to the end.
func TestReaderScansOnce(t *testing.T) {
	in := []byte(strings.Repeat("x", 32<<20))
	r, p := NewReader(in), make([]byte, 256)
	start := time.Now()
	n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, p)
	if err != nil || n != int64(len(in)) {
		t.Fatalf("%d, %v", n, err)
	}
	// Quadratic scanning of 32 MiB in 256-byte reads is 2 TB of memchr:
	// minutes. Linear is milliseconds.
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("reading 32 MiB in 256-byte reads took %v", d)
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
		checkRuns(t, lit[1:len(lit)-1], back)
		if off, end := LongestVerbatim(lit[1 : len(lit)-1]); bytes.IndexByte(lit[1+off:1+end], '\\') >= 0 || !bytes.Contains(back, lit[1+off:1+end]) {
			t.Fatalf("LongestVerbatim(%s) = %q: not a verbatim run", lit, lit[1+off:1+end])
		}
	})
}

// checkRuns: UnescapeRuns decodes body as Unescape does (want), and its
// runs are in order, at least minRun long, and hold no quote, backslash or
// control character (body is a valid literal's).
func checkRuns(t *testing.T, body, want []byte) {
	t.Helper()
	for _, minRun := range []int{1, 4} {
		got, runs, err := UnescapeRuns([]byte("pre"), body, minRun)
		if err != nil || string(got) != "pre"+string(want) {
			t.Fatalf("UnescapeRuns(%q) = %q, %v; want %q", body, got, err, want)
		}
		last := 0
		for _, r := range runs {
			if r.Off < last || r.End-r.Off < minRun || r.End > len(got) {
				t.Fatalf("UnescapeRuns(%q, %d): run %+v after %d in %d bytes", body, minRun, r, last, len(got))
			}
			for _, c := range got[r.Off:r.End] {
				if c == '"' || c == '\\' || c < 0x20 {
					t.Fatalf("UnescapeRuns(%q, %d): run %+v holds %q", body, minRun, r, c)
				}
			}
			last = r.End
		}
	}
}

func TestUnescapeRuns(t *testing.T) {
	body := []byte(`{\"content\":\"` + strings.Repeat("QUJD", 300) + `\",\"n\":1}`)
	got, runs, err := UnescapeRuns(nil, body, 1000)
	if err != nil || len(runs) != 1 {
		t.Fatalf("UnescapeRuns: %v, runs %+v", err, runs)
	}
	if r := runs[0]; string(got[r.Off:r.End]) != strings.Repeat("QUJD", 300) {
		t.Errorf("run %+v is %q", r, got[r.Off:r.End])
	}
	if _, runs, _ := UnescapeRuns(nil, []byte("no escape at all"), 1); len(runs) != 1 || runs[0] != (Run{0, 16}) {
		t.Errorf("a body without escapes: runs %+v, want one of all of it", runs)
	}
	checkRuns(t, body, got)
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

// FuzzReader: over any body, valid or not, and any buffer size, the Reader
// yields what Unescape does and fails where it fails.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`a\"b\n\u00e9\ud83d\ude00\ud83d`), uint8(3))
	f.Add([]byte(`ok\q`), uint8(1))
	f.Add([]byte(`x\`), uint8(2))
	f.Fuzz(func(t *testing.T, body []byte, size uint8) {
		want, werr := Unescape(nil, body)
		r, p := NewReader(body), make([]byte, int(size)+1)
		var got []byte
		var err error
		for {
			var n int
			n, err = r.Read(p)
			got = append(got, p[:n]...)
			if err != nil {
				break
			}
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
		if (err == nil) != (werr == nil) || string(got) != string(want) {
			t.Fatalf("reader %q, %v; Unescape %q, %v", got, err, want, werr)
		}
	})
}

// TestIndexBackslash: the inline search finds the first backslash at every
// position of every length, among bytes that differ from it by one bit or
// a borrow (0x5b, 0x5d, 0xdc, 0x00).
func TestIndexBackslash(t *testing.T) {
	for n := 0; n <= 80; n++ {
		b := []byte(strings.Repeat("[]\xdc\x00", n/4+1)[:n])
		if got := indexBackslash(b); got != n {
			t.Fatalf("len %d without backslash: %d", n, got)
		}
		for at := 0; at < n; at++ {
			c := append([]byte(nil), b...)
			c[at] = '\\'
			if at+1 < n {
				c[n-1] = '\\'
			}
			if got := indexBackslash(c); got != at {
				t.Fatalf("len %d, backslash at %d: %d", n, at, got)
			}
		}
	}
}

func TestLongestVerbatim(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{``, ``},
		{`plain`, `plain`},
		{`{\"content\":\"QUJDRA==\",\"n\":1}`, `QUJDRA==`},
		{`ab\u00e9abc\ud83d\ude00x`, `abc`},
		{`\n\t\"`, ``},
		{`abc\qdefghij`, `abc`},
	} {
		off, end := LongestVerbatim([]byte(tc.in))
		if got := tc.in[off:end]; got != tc.want {
			t.Errorf("LongestVerbatim(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
