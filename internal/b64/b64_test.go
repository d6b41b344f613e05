package b64

import (
	"bytes"
	stdbase64 "encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// style says how to write a base64 value the way some encoder would.
type style struct {
	url      bool   // URL-safe alphabet
	raw      bool   // no padding
	wrap     int    // line length, 0 for none
	nl       string // what goes between lines, as JSON text: `\n`, `\r\n`, " "
	finalNL  bool   // a line break after the last line too (GitHub)
	slash    string // replacement for every '/': `\/`, `\u002F`
	plus     string // replacement for every '+': `\u002B`
	pad      string // replacement for every '=': `\u003D`
	prefix   string // a data: URI prefix
	wantType string // the media type Parse reports for prefix
}

// encode writes b in style st.
func (st style) encode(b []byte) []byte {
	enc := stdbase64.StdEncoding
	if st.url {
		enc = stdbase64.URLEncoding
	}
	if st.raw {
		enc = enc.WithPadding(stdbase64.NoPadding)
	}
	s := enc.EncodeToString(b)
	var out strings.Builder
	out.WriteString(st.prefix)
	for i := 0; i < len(s); i++ {
		if st.wrap > 0 && i > 0 && i%st.wrap == 0 {
			out.WriteString(st.nl)
		}
		switch c := s[i]; {
		case c == '/' && st.slash != "":
			out.WriteString(st.slash)
		case c == '+' && st.plus != "":
			out.WriteString(st.plus)
		case c == '=' && st.pad != "":
			out.WriteString(st.pad)
		default:
			out.WriteByte(c)
		}
	}
	if st.finalNL && len(s) > 0 {
		out.WriteString(st.nl)
	}
	return []byte(out.String())
}

var styles = map[string]style{
	"std":             {},
	"std unpadded":    {raw: true},
	"url":             {url: true},
	"url unpadded":    {url: true, raw: true},
	"github":          {wrap: 60, nl: `\n`, finalNL: true},
	"mime 76 crlf":    {wrap: 76, nl: `\r\n`},
	"mime 76 lf":      {wrap: 76, nl: `\n`},
	"literal space":   {wrap: 64, nl: " "},
	"literal tab":     {wrap: 4, nl: "\t"},
	"literal lf":      {wrap: 76, nl: "\n"},
	"escaped tab":     {wrap: 19, nl: `\t`},
	"php slashes":     {slash: `\/`},
	"php github":      {slash: `\/`, wrap: 60, nl: `\n`, finalNL: true},
	"u002F":           {slash: `\u002F`},
	"u002f u002b":     {slash: `\u002f`, plus: `\u002b`},
	"u escapes all":   {slash: `\u002F`, plus: `\u002B`, pad: `\u003D`},
	"escaped padding": {pad: `\u003d`, wrap: 3, nl: `\n`},
	"data uri":        {prefix: "data:application/pdf;base64,", wantType: "application/pdf"},
	"data uri php":    {prefix: `data:application\/pdf;base64,`, slash: `\/`, wantType: "application/pdf"},
	"data uri params": {prefix: "DATA:text/plain;charset=utf-8;BASE64,", wantType: "text/plain;charset=utf-8"},
	"data uri empty":  {prefix: "data:;base64,", url: true, raw: true},
	"data uri wrap":   {prefix: "data:image/png;base64,", wrap: 60, nl: `\r\n`, wantType: "image/png"},
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// readAll decodes raw with a Reader of the given chunk size, reading into
// buffers of readSize bytes.
func readAll(raw []byte, chunk, readSize int) ([]byte, error) {
	return readAllMode(raw, chunk, readSize, false)
}

// readAllPrecise is readAll on the precise path only.
func readAllPrecise(raw []byte, chunk, readSize int) ([]byte, error) {
	return readAllMode(raw, chunk, readSize, true)
}

func readAllMode(raw []byte, chunk, readSize int, precise bool) ([]byte, error) {
	r, err := newReaderSize(raw, chunk)
	if err != nil {
		return nil, err
	}
	if precise {
		r.plain, r.fast = false, false
	}
	var out []byte
	buf := make([]byte, readSize)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// checkDecodes asserts every way of decoding raw yields want.
func checkDecodes(t *testing.T, raw, want []byte, st style) {
	t.Helper()
	info, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse: %v\nraw: %.200q", err, raw)
	}
	if info.DecodedLen != int64(len(want)) {
		t.Errorf("DecodedLen = %d, want %d", info.DecodedLen, len(want))
	}
	if info.Offset != len(st.prefix) || info.DataURIMediaType != st.wantType {
		t.Errorf("Offset, DataURIMediaType = %d, %q, want %d, %q", info.Offset, info.DataURIMediaType, len(st.prefix), st.wantType)
	}
	wantEsc := strings.ContainsAny(string(raw[info.Offset:]), "\\ \t\r\n")
	if info.Escaped != wantEsc {
		t.Errorf("Escaped = %v, want %v", info.Escaped, wantEsc)
	}
	hasURL := bytes.ContainsAny(raw[info.Offset:], "-_")
	if info.URLSafe != hasURL {
		t.Errorf("URLSafe = %v, want %v", info.URLSafe, hasURL)
	}
	for _, rs := range []int{1, 5, 48, 1000, 64 << 10} {
		got, err := readAll(raw, defaultChunk, rs)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Read(buf[%d]): err %v, got %d bytes equal=%v, want %d", rs, err, len(got), bytes.Equal(got, want), len(want))
		}
	}
	r, _ := NewReader(raw)
	var sink bytes.Buffer
	if n, err := r.WriteTo(&sink); err != nil || n != int64(len(want)) || !bytes.Equal(sink.Bytes(), want) {
		t.Fatalf("WriteTo: n=%d err=%v equal=%v", n, err, bytes.Equal(sink.Bytes(), want))
	}
	// A Reader at EOF describes the value as Parse does: the engine
	// streams plain values without a Parse first and checks this after.
	if got := r.Info(); got != info {
		t.Fatalf("Reader.Info() at EOF = %+v, Parse = %+v", got, info)
	}
	small, _ := NewReader(raw)
	if _, err := io.Copy(io.Discard, iotest.OneByteReader(small)); err != nil || small.Info() != info {
		t.Fatalf("Reader.Info() after one-byte reads = %+v (err %v), Parse = %+v", small.Info(), err, info)
	}
	for _, n := range []int{1, 2, 3, 4, 16, 512, 4096} {
		head, err := DecodeHead(raw, n)
		if w := want[:min(n, len(want))]; err != nil || !bytes.Equal(head, w) {
			t.Fatalf("DecodeHead(%d) = %x, %v; want %x", n, head, err, w)
		}
	}
}

func TestDecodeShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 44, 45, 46, 47, 48, 49, 57, 100, 1000, 4095, 4096, 4097, 49152, 49153, 100_000}
	for name, st := range styles {
		t.Run(name, func(t *testing.T) {
			for _, n := range sizes {
				want := randBytes(rng, n)
				checkDecodes(t, st.encode(want), want, st)
			}
		})
	}
}

func TestIOTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	want := randBytes(rng, 200_000)
	for name, st := range styles {
		t.Run(name, func(t *testing.T) {
			r, err := newReaderSize(st.encode(want), 4096)
			if err != nil {
				t.Fatal(err)
			}
			if err := iotest.TestReader(r, want); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestChunkBoundaries shrinks the chunk so that quanta, escapes and padding
// straddle chunk edges at every alignment.
func TestChunkBoundaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for name, st := range styles {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{0, 1, 2, 3, 10, 47, 48, 100, 301} {
				want := randBytes(rng, n)
				raw := st.encode(want)
				for chunk := 4; chunk <= 70; chunk++ {
					for _, rs := range []int{48, 49, 50, 51, 100, 4096} {
						got, err := readAll(raw, chunk, rs)
						if err != nil || !bytes.Equal(got, want) {
							t.Fatalf("n=%d chunk=%d read=%d: err %v, equal=%v\nraw %q", n, chunk, rs, err, bytes.Equal(got, want), raw)
						}
						got, err = readAllPrecise(raw, chunk, rs)
						if err != nil || !bytes.Equal(got, want) {
							t.Fatalf("precise n=%d chunk=%d read=%d: err %v, equal=%v\nraw %q", n, chunk, rs, err, bytes.Equal(got, want), raw)
						}
					}
				}
			}
		})
	}
}

// TestChunkSizeAround decodes values around the real chunk size.
func TestChunkSizeAround(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, chars := range []int{defaultChunk - 4, defaultChunk, defaultChunk + 4, 2*defaultChunk + 8} {
		want := randBytes(rng, chars/4*3-1)
		for _, name := range []string{"std", "github", "php slashes", "literal space"} {
			st := styles[name]
			checkDecodes(t, st.encode(want), want, st)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string // the exact error
	}{
		{"invalid char", "QUJD!UJD", `b64: invalid character '!' at offset 4`},
		{"invalid char late", strings.Repeat("A", 1234) + "x" + "y.", `b64: invalid character '.' at offset 1236`},
		{"non-ascii", "QUJDé", `b64: invalid character '\xc3' at offset 4`},
		{"quote escape", `QUJD\"QUJD`, `b64: invalid character '"' (escaped as \") at offset 4`},
		{"backslash escape", `QU\\JD`, `b64: invalid character '\\' (escaped as \\) at offset 2`},
		{"escaped backspace", `QUJD\b`, `b64: invalid character '\b' (escaped as \b) at offset 4`},
		{"unknown escape", `QUJD\x41`, `b64: invalid escape "\\x" at offset 4`},
		{"bad u escape", `QUJD\u00G1`, `b64: invalid escape "\\u00G1" at offset 4`},
		{"non-ascii u escape", `QUJD\u00e9QU`, `b64: invalid character 'é' (escaped as \u00e9) at offset 4`},
		{"escaped backslash as u", `QUJD\u005C`, `b64: invalid character '\\' (escaped as \u005C) at offset 4`},
		{"lone backslash at end", `QUJD\`, `b64: truncated escape at offset 4`},
		{"truncated u escape", `QUJD\u00`, `b64: truncated escape at offset 4`},
		{"truncated quantum", "QUJDQ", `b64: truncated input: final quantum of 1 character at offset 4`},
		{"truncated quantum escaped", `QUJD\nQ\n`, `b64: truncated input: final quantum of 1 character at offset 6`},
		{"truncated with padding", "QUJDQ===", `b64: truncated input: final quantum of 1 character at offset 4`},
		{"padding in the middle", "QQ==QUJD", `b64: padding in the middle of the data at offset 2`},
		{"padding in the middle long", strings.Repeat("QUJD", 300) + "QQ==QUJD", `b64: padding in the middle of the data at offset 1202`},
		{"padding then escape char", `QQ==\"`, `b64: invalid character '"' (escaped as \") at offset 4`},
		{"padding then junk", `QQ==!`, `b64: invalid character '!' at offset 4`},
		{"too much padding", "QQ===", `b64: invalid padding: 3 '=' after a final quantum of 2 characters at offset 2`},
		{"padding after full quantum", "QUJD=", `b64: invalid padding: 1 '=' after a final quantum of 0 characters at offset 4`},
		{"short padding", "QQ=", `b64: invalid padding: 1 '=' after a final quantum of 2 characters at offset 2`},
		{"four padding", "====", `b64: invalid padding: 4 '=' after a final quantum of 0 characters at offset 0`},
		{"full quantum then four padding", "QUJD====", `b64: invalid padding: 4 '=' after a final quantum of 0 characters at offset 4`},
		{"only padding", "==", `b64: invalid padding: 2 '=' after a final quantum of 0 characters at offset 0`},
		{"mixed alphabets", "ab+cde-f", `b64: invalid character '-' in standard-alphabet data at offset 6`},
		{"mixed alphabets escaped", `ab_cde\/f`, `b64: invalid character '/' (escaped as \/) in URL-safe data at offset 6`},
		{"mixed far apart", strings.Repeat("A+", 5000) + strings.Repeat("B", 5000) + "_", `b64: invalid character '_' in standard-alphabet data at offset 15000`},
		{"data uri not base64", "data:text/plain,hello", `b64: data URI is not ;base64 at offset 15`},
		{"data uri no comma", "data:text/plain;base64" + strings.Repeat("A", 600), `b64: data URI without ',' in its first 512 bytes at offset 0`},
		{"data uri bad media type", `data:text/pl"ain;base64,QUJD`, `b64: data URI media type has invalid character '"' at offset 12`},
		{"data uri bad escape", `data:text\"plain;base64,QUJD`, `b64: data URI media type has invalid character '"' (escaped as \") at offset 9`},
		{"data uri invalid body", "data:image/png;base64,QUJD*", `b64: invalid character '*' at offset 26`},
		{"control char", "QUJD\x00", `b64: invalid character '\x00' at offset 4`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			_, err := Parse(raw)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Parse error = %v\nwant %s", err, tt.want)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error %T is not a *SyntaxError", err)
			}
			for _, chunk := range []int{4, 5, 7, 8, 16, defaultChunk} {
				for _, rs := range []int{1, 48, 4096} {
					if _, err := readAll(raw, chunk, rs); err == nil || err.Error() != tt.want {
						t.Fatalf("Reader(chunk %d, read %d) error = %v\nwant %s", chunk, rs, err, tt.want)
					}
					if _, err := readAllPrecise(raw, chunk, rs); err == nil || err.Error() != tt.want {
						t.Fatalf("precise Reader(chunk %d, read %d) error = %v\nwant %s", chunk, rs, err, tt.want)
					}
				}
			}
			r, _ := NewReader(raw)
			if r != nil {
				if _, err := r.WriteTo(io.Discard); err == nil || err.Error() != tt.want {
					t.Fatalf("WriteTo error = %v\nwant %s", err, tt.want)
				}
			}
			// DecodeHead sees every error that lies within the head.
			if _, err := DecodeHead(raw, len(raw)); err == nil || err.Error() != tt.want {
				t.Fatalf("DecodeHead error = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestReaderStopsAtError checks the bytes before an error are right and the
// error sticks.
func TestReaderStopsAtError(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	want := randBytes(rng, 3*50_000)
	raw := append(styles["github"].encode(want), `\"`...)
	r, err := newReaderSize(raw, 1024)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != len(raw)-2 {
		t.Fatalf("err = %v, want a SyntaxError at offset %d", err, len(raw)-2)
	}
	if !bytes.Equal(got, want[:len(got)]) {
		t.Fatal("bytes before the error differ")
	}
	if n, err2 := r.Read(make([]byte, 100)); n != 0 || !errors.Is(err2, err) {
		t.Fatalf("Read after error = %d, %v; want 0, %v", n, err2, err)
	}
}

func TestDecodeHeadIsCheap(t *testing.T) {
	// An error far past the head is not seen.
	raw := []byte(strings.Repeat("QUJD", 10_000) + "!")
	head, err := DecodeHead(raw, 6)
	if err != nil || string(head) != "ABCABC" {
		t.Fatalf("DecodeHead = %q, %v", head, err)
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = DecodeHead(raw, 4096) })
	if allocs > 1 {
		t.Errorf("DecodeHead allocates %v times, want 1", allocs)
	}
	if h, err := DecodeHead(raw, 0); h != nil || err != nil {
		t.Errorf("DecodeHead(raw, 0) = %q, %v", h, err)
	}
}

func TestLooks(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	long := randBytes(rng, 30_000)
	tests := []struct {
		name string
		raw  string
		min  int
		want bool
	}{
		{"std", string(styles["std"].encode(long)), 1000, true},
		{"github", string(styles["github"].encode(long)), 1000, true},
		{"mime crlf", string(styles["mime 76 crlf"].encode(long)), 1000, true},
		{"php", string(styles["php github"].encode(long)), 1000, true},
		{"url", string(styles["url unpadded"].encode(long)), 1000, true},
		{"data uri", string(styles["data uri"].encode(long)), 1000, true},
		{"short value", "QUJD", 1000, false},
		{"short ok", "QUJD", 4, true},
		{"empty", "", 0, false},
		{"prose", strings.Repeat("the quick brown fox jumps over the lazy dog ", 100), 1000, false},
		{"prose no punctuation at the end", strings.Repeat("AAAA", 500) + strings.Repeat("a b ", 100), 1000, false},
		{"json text", strings.Repeat(`{\"a\": 1}`, 200), 1000, false},
		{"quote escape in head", `QUJD\"` + strings.Repeat("QUJD", 500), 1000, false},
		{"padding in head", "QQ==" + strings.Repeat("QUJD", 500), 1000, false},
		{"invalid in the middle", strings.Repeat("QUJD", 500) + "!" + strings.Repeat("QUJD", 500), 1000, true},
		{"bad data uri", "data:text/plain," + strings.Repeat("QUJD", 500), 1000, false},
		{"only line breaks", strings.Repeat(`\n`, 1000), 1000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Looks([]byte(tt.raw), tt.min); got != tt.want {
				t.Fatalf("Looks = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReset(t *testing.T) {
	var r Reader // the zero Reader is ready for Reset
	for i, s := range []string{`QUJD\nRA==`, "data:x/y;base64,QUJD", "QQ"} {
		if err := r.Reset([]byte(s)); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(&r)
		if want := []string{"ABCD", "ABC", "A"}[i]; err != nil || string(got) != want {
			t.Fatalf("%q: got %q, %v; want %q", s, got, err, want)
		}
	}
	if err := r.Reset([]byte("data:x")); err == nil {
		t.Fatal("Reset accepted a malformed data URI")
	}
	if _, err := NewReader([]byte("data:x")); err == nil {
		t.Fatal("NewReader accepted a malformed data URI")
	}
}

// refDecode is a slow, obviously correct decoder of the accepted language,
// used to check the fast paths.
func refDecode(raw []byte) ([]byte, bool) {
	s := string(raw)
	if len(s) >= 5 && strings.EqualFold(s[:5], "data:") {
		comma := strings.IndexByte(s, ',')
		if comma < 0 || comma >= maxDataURIPrefix || !strings.HasSuffix(strings.ToLower(s[:comma]), ";base64") {
			return nil, false
		}
		var mt string
		if err := json.Unmarshal([]byte(`"`+s[5:comma-7]+`"`), &mt); err != nil {
			return nil, false
		}
		if strings.ContainsAny(mt, "\\\" ,") || strings.IndexFunc(mt, func(r rune) bool { return r < ' ' || r >= 0x7f }) >= 0 {
			return nil, false
		}
		s = s[comma+1:]
	}
	var chars []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			if i+1 >= len(s) {
				return nil, false
			}
			i++
			switch s[i] {
			case 'n', 'r', 't':
				continue
			case '/':
				c = '/'
			case 'u':
				if i+5 > len(s) {
					return nil, false
				}
				v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
				if err != nil {
					return nil, false
				}
				i += 4
				if v == ' ' || v == '\t' || v == '\r' || v == '\n' {
					continue
				}
				if v >= 0x80 {
					return nil, false
				}
				c = byte(v)
			default:
				return nil, false
			}
		} else if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			continue
		}
		chars = append(chars, c)
	}
	str := string(chars)
	std, url := strings.ContainsAny(str, "+/"), strings.ContainsAny(str, "-_")
	if std && url {
		return nil, false
	}
	enc := stdbase64.StdEncoding
	if url {
		enc = stdbase64.URLEncoding
	}
	if !strings.HasSuffix(str, "=") {
		enc = enc.WithPadding(stdbase64.NoPadding)
	}
	if strings.ContainsAny(str, "\r\n") {
		return nil, false // encoding/base64 would skip these
	}
	out, err := enc.DecodeString(str)
	return out, err == nil
}

// FuzzReader round-trips random bytes through every style at random chunk
// and read sizes.
func FuzzReader(f *testing.F) {
	f.Add([]byte("hello, world"), uint8(0), uint16(0), uint16(0))
	f.Add([]byte{0xfb, 0xff, 0xbf}, uint8(4), uint16(5), uint16(1))
	f.Add(bytes.Repeat([]byte{0xfb, 0xef}, 200), uint8(12), uint16(13), uint16(49))
	names := make([]string, 0, len(styles))
	for name := range styles {
		names = append(names, name)
	}
	slices.Sort(names)
	f.Fuzz(func(t *testing.T, b []byte, si uint8, chunk, readSize uint16) {
		st := styles[names[int(si)%len(names)]]
		// Add a line wrap derived from the inputs to styles that have none.
		if st.wrap == 0 && si >= 128 {
			st.wrap, st.nl = 1+int(chunk%97), `\n`
		}
		raw := st.encode(b)
		got, err := readAll(raw, 4+int(chunk%300), 1+int(readSize))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("style %+v chunk %d read %d: err %v\nraw %q\ngot  %x\nwant %x", st, 4+int(chunk%300), 1+int(readSize), err, raw, got, b)
		}
		info, err := Parse(raw)
		if err != nil || info.DecodedLen != int64(len(b)) {
			t.Fatalf("Parse = %+v, %v", info, err)
		}
	})
}

// FuzzParse feeds arbitrary input: Parse, the Reader, DecodeHead and a slow
// reference decoder must agree, and nothing may panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "QUJD", `QQ==\n`, `QU\/J`, "data:a/b;base64,QQ", `ab\u002Bc`, "QQ=A", `\"`, "a-b+", "QUJD\\"} {
		f.Add([]byte(s), uint16(0))
	}
	f.Fuzz(func(t *testing.T, raw []byte, chunk uint16) {
		checkAgree(t, raw, chunk)
		// Again behind a long valid run, so that the SIMD decoder, which
		// only takes 45 characters or more, meets the fuzzed bytes.
		if !bytes.HasPrefix(bytes.ToLower(raw), []byte("data:")) {
			checkAgree(t, append(bytes.Repeat([]byte("QUJD"), 16), raw...), chunk)
		}
	})
}

// checkAgree asserts Parse, the Reader on all paths, DecodeHead and the
// reference decoder agree on raw.
func checkAgree(t *testing.T, raw []byte, chunk uint16) {
	t.Helper()
	info, perr := Parse(raw)
	got, rerr := readAll(raw, 4+int(chunk%100), 48+int(chunk%7))
	pgot, prerr := readAllPrecise(raw, 4+int(chunk%100), 48+int(chunk%7))
	want, ok := refDecode(raw)
	if (perr == nil) != (rerr == nil) || (perr == nil) != ok || (perr == nil) != (prerr == nil) {
		t.Fatalf("disagree on %q: Parse %v, Reader %v, precise %v, reference ok=%v", raw, perr, rerr, prerr, ok)
	}
	if perr != nil {
		if perr.Error() != rerr.Error() || perr.Error() != prerr.Error() {
			t.Fatalf("errors differ on %q: Parse %v, Reader %v, precise %v", raw, perr, rerr, prerr)
		}
		return
	}
	if !bytes.Equal(got, want) || !bytes.Equal(pgot, want) || info.DecodedLen != int64(len(got)) {
		t.Fatalf("%q: Reader %x, reference %x, DecodedLen %d", raw, got, want, info.DecodedLen)
	}
	head, err := DecodeHead(raw, 1+int(chunk%64))
	if err != nil || !bytes.Equal(head, got[:min(len(got), 1+int(chunk%64))]) {
		t.Fatalf("DecodeHead = %x, %v; want %x", head, err, got)
	}
}

// TestEveryByte puts each byte value at several places in long values of both
// alphabets, so that the SIMD decoder's validation is checked against the
// scanner's for every character.
func TestEveryByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	data := randBytes(rng, 300)
	for _, name := range []string{"std", "url unpadded", "github", "php github", "url"} {
		base := styles[name].encode(data)
		for _, pos := range []int{0, 1, 31, 32, 33, 100, 200, 398} {
			for c := range 256 {
				raw := slices.Clone(base)
				raw[pos] = byte(c)
				_, perr := Parse(raw)
				for _, chunk := range []int{defaultChunk, 64} {
					got, rerr := readAll(raw, chunk, 4096)
					_, prerr := readAllPrecise(raw, chunk, 4096)
					if (perr == nil) != (rerr == nil) || fmt.Sprint(perr) != fmt.Sprint(prerr) {
						t.Fatalf("%s: byte %q at %d: Parse %v, Reader %v, precise %v", name, rune(c), pos, perr, rerr, prerr)
					}
					want, ok := refDecode(raw)
					if ok != (perr == nil) || ok && !bytes.Equal(got, want) {
						t.Fatalf("%s: byte %q at %d: reference ok=%v, Parse %v", name, rune(c), pos, ok, perr)
					}
				}
			}
		}
	}
}

// Reader.Info tells an escape or the URL-safe alphabet after the first
// chunk that holds one, long before the end of a large value: the engine
// stops streaming such a value early to decode it with its shape.
func TestReaderInfoEarly(t *testing.T) {
	want := randBytes(rand.New(rand.NewPCG(7, 8)), 1<<20)
	for _, tc := range []struct {
		name             string
		st               style
		escaped, urlSafe bool
	}{
		{"std", styles["std"], false, false},
		{"github", styles["github"], true, false},
		{"url", styles["url"], false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(tc.st.encode(want))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Read(make([]byte, 48<<10)); err != nil {
				t.Fatal(err)
			}
			got := r.Info()
			if got.Escaped != tc.escaped || got.URLSafe != tc.urlSafe {
				t.Fatalf("after one chunk: Escaped, URLSafe = %v, %v; want %v, %v", got.Escaped, got.URLSafe, tc.escaped, tc.urlSafe)
			}
			if got.DecodedLen <= 0 || got.DecodedLen >= int64(len(want)) {
				t.Fatalf("after one chunk: DecodedLen = %d, want the bytes decoded so far", got.DecodedLen)
			}
		})
	}
}
