package inspect

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

func inspectBytes(t *testing.T, b []byte, mime string, lim Limits) (Summary, []TextPart) {
	t.Helper()
	s, parts, err := Inspect(context.Background(), bytes.NewReader(b), int64(len(b)), mime, lim)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	return s, parts
}

func encodeImage(t *testing.T, w, h int, enc func(io.Writer, image.Image) error) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i)
	}
	var b bytes.Buffer
	if err := enc(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInspectImages is the golden test of image dimensions: each format
// encoded here (PNG, JPEG, GIF by the standard library, BMP and TIFF by
// x/image) or shipped in testdata (WebP, lossy and lossless, from x/image's
// own test files).
func TestInspectImages(t *testing.T) {
	for _, tc := range []struct {
		name, mime string
		data       []byte
		want       Summary
	}{
		{"png", "image/png", encodeImage(t, 1280, 720, png.Encode), Summary{Kind: "image", Format: "png", Width: 1280, Height: 720}},
		{"jpeg", "", encodeImage(t, 320, 200, func(w io.Writer, m image.Image) error { return jpeg.Encode(w, m, nil) }), Summary{Kind: "image", Format: "jpeg", Width: 320, Height: 200}},
		{"gif", "application/octet-stream", encodeImage(t, 17, 9, func(w io.Writer, m image.Image) error { return gif.Encode(w, m, nil) }), Summary{Kind: "image", Format: "gif", Width: 17, Height: 9}},
		{"bmp", "image/bmp", encodeImage(t, 33, 21, bmp.Encode), Summary{Kind: "image", Format: "bmp", Width: 33, Height: 21}},
		{"tiff", "image/tiff", encodeImage(t, 40, 30, func(w io.Writer, m image.Image) error { return tiff.Encode(w, m, nil) }), Summary{Kind: "image", Format: "tiff", Width: 40, Height: 30}},
		{"webp lossy", "image/webp", readTestdata(t, "blue-purple-pink.lossy.webp"), Summary{Kind: "image", Format: "webp", Width: 150, Height: 100}},
		{"webp lossless", "image/webp", readTestdata(t, "gopher-doc.1bpp.lossless.webp"), Summary{Kind: "image", Format: "webp", Width: 75, Height: 100}},
		// A PNG cut inside its header: the kind and format, no dimensions,
		// no error.
		{"malformed png", "image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00"), Summary{Kind: "image", Format: "png"}},
		// A declared image that is not one: the type says image.
		{"not an image", "image/png", []byte{0, 1, 2, 3, 4}, Summary{Kind: "image"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, parts := inspectBytes(t, tc.data, tc.mime, Limits{})
			if !reflect.DeepEqual(got, tc.want) || parts != nil {
				t.Errorf("got %+v (%d parts), want %+v", got, len(parts), tc.want)
			}
		})
	}
}

func TestInspectText(t *testing.T) {
	var log strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&log, "2024-05-01T10:00:%02d INFO request %d served\n", i%60, i)
	}
	got, parts := inspectBytes(t, []byte(log.String()), "text/plain; charset=utf-8", Limits{})
	if got.Kind != "text" || got.Lines != 1000 || got.Partial != "" {
		t.Errorf("log: %+v", got)
	}
	if want := log.String()[:textChars]; got.Text != want {
		t.Errorf("log text = %q, want %q", got.Text, want)
	}
	// Parts hold all the text, each starting at a line it names.
	var all strings.Builder
	lines := strings.Split(log.String(), "\n")
	for _, p := range parts {
		var n int
		if _, err := fmt.Sscanf(p.Place, "line %d", &n); err != nil {
			t.Fatalf("place %q: %v", p.Place, err)
		}
		if !strings.HasPrefix(p.Text, lines[n-1]) {
			t.Errorf("part at %s starts %q, want line %q", p.Place, p.Text[:40], lines[n-1])
		}
		all.WriteString(p.Text)
	}
	if len(parts) < 2 || all.String() != log.String() {
		t.Errorf("%d parts holding %d bytes, want all %d", len(parts), all.Len(), log.Len())
	}

	// No final newline: the last line counts; characters, not bytes.
	got, _ = inspectBytes(t, []byte(strings.Repeat("é", 400)+"\nend"), "", Limits{})
	if got.Kind != "text" || got.Lines != 2 || got.Text != strings.Repeat("é", 300) {
		t.Errorf("unterminated: %+v", got)
	}

	// MaxTextBytes caps the parts, a line longer than a part is cut at a
	// character boundary.
	long := strings.Repeat("ü", 10000)
	_, parts = inspectBytes(t, []byte(long), "text/plain", Limits{MaxTextBytes: 9000})
	total := 0
	for _, p := range parts {
		total += len(p.Text)
		if p.Place != "line 1" || strings.ContainsRune(p.Text, '\uFFFD') {
			t.Errorf("part %q: %d bytes, cut inside a character?", p.Place, len(p.Text))
		}
	}
	if total > 9000 || total < 8000 {
		t.Errorf("parts hold %d bytes, want at most 9000", total)
	}
}

func TestInspectJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in, mime string
		want           Summary
	}{
		{"object", `{"a":1,"b":"x\"y}","c":[1,{"z":2}],"d":{"e":1},"k\u00e9":null}`, "application/json",
			Summary{Kind: "json", Format: "json", Keys: []string{"a", "b", "c", "d", "ké"}}},
		{"array of objects", "[\n {\"id\":1,\"name\":\"a\",\"tags\":[\"x\",\"y\"]},\n {\"id\":2}\n]", "",
			Summary{Kind: "json", Format: "json", Length: 2, ItemKeys: []string{"id", "name", "tags"}}},
		{"array of arrays", `[[1,"a"],[2,"b"],[3]]`, "application/json", Summary{Kind: "json", Format: "json", Length: 3}},
		{"empty array", `[ ]`, "application/json", Summary{Kind: "json", Format: "json"}},
		{"empty object", `{}`, "application/json", Summary{Kind: "json", Format: "json", Keys: []string{}}},
		{"scalar", `"just a string"`, "application/json", Summary{Kind: "json", Format: "json"}},
		{"vendor type", `{"x":1}`, "application/vnd.api+json", Summary{Kind: "json", Format: "json", Keys: []string{"x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := inspectBytes(t, []byte(tc.in), tc.mime, Limits{})
			tc.want.Lines = int64(strings.Count(tc.in, "\n") + 1)
			tc.want.Text = tc.in
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestJSONShapeChunks feeds a document in every chunk size from one byte:
// strings with escaped quotes and backslashes that straddle chunk
// boundaries must not change the shape.
func TestJSONShapeChunks(t *testing.T) {
	doc := []byte(`{"a\\":"\\\"}{[","b":[{"q":"\\\\"}],"c\"d":{"x":"]"},"e":"\\"}`)
	want := []string{`a\`, "b", `c"d`, "e"}
	for size := 1; size <= len(doc); size++ {
		var j jsonShape
		for off := 0; off < len(doc); off += size {
			j.feed(doc[off:min(off+size, len(doc))])
		}
		if !reflect.DeepEqual(j.keys, want) || j.depth != 0 {
			t.Fatalf("chunks of %d: keys %q depth %d, want %q", size, j.keys, j.depth, want)
		}
	}
	// An array root: the strings of items after the first, which feed
	// skips whole when they end in the chunk, hold escaped quotes,
	// backslashes and brackets.
	arr := []byte(`[{"k":"v"},{"s":"\\\"],[{","t":["\\"]},"]\"[",{"u":{"w":"\"}\\"}}, 3]`)
	var items []json.RawMessage
	if err := json.Unmarshal(arr, &items); err != nil || len(items) != 5 {
		t.Fatalf("the array is not 5 items of JSON: %d, %v", len(items), err)
	}
	for size := 1; size <= len(arr); size++ {
		var j jsonShape
		for off := 0; off < len(arr); off += size {
			j.feed(arr[off:min(off+size, len(arr))])
		}
		if j.length() != 5 || !reflect.DeepEqual(j.itemKeys, []string{"k"}) || j.depth != 0 {
			t.Fatalf("array in chunks of %d: length %d, item keys %q, depth %d; want 5, [k], 0", size, j.length(), j.itemKeys, j.depth)
		}
	}
}

func TestInspectCSV(t *testing.T) {
	in := "id,name,note\n1,Ada,\"first\nprogrammer\"\n2,\"Grace, Admiral\",\"said \"\"hi\"\"\"\n3,Linus,\n"
	got, _ := inspectBytes(t, []byte(in), "text/csv", Limits{})
	want := Summary{Kind: "csv", Format: "csv", Lines: 5, Rows: 3, Columns: []string{"id", "name", "note"}, Text: in}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	got, _ = inspectBytes(t, []byte("a\tb\n1\t2"), "text/tab-separated-values", Limits{})
	if got.Format != "tsv" || got.Rows != 1 || !reflect.DeepEqual(got.Columns, []string{"a", "b"}) {
		t.Errorf("tsv: %+v", got)
	}
}

// wav returns a PCM WAV of the given length.
func wav(rate, channels, bits int, ms int) []byte {
	byteRate := rate * channels * bits / 8
	data := make([]byte, byteRate*ms/1000)
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + len(data)))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1))
	le(uint16(channels))
	le(uint32(rate))
	le(uint32(byteRate))
	le(uint16(channels * bits / 8))
	le(uint16(bits))
	b.WriteString("LIST")
	le(uint32(3))
	b.WriteString("abc\x00") // odd chunk, padded
	b.WriteString("data")
	le(uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}

// mp3 returns an ID3v2 tag and frames of MPEG-1 layer III, 128 kbps,
// 44.1 kHz, stereo; with xing > 0, the first frame is a Xing header
// counting that many frames.
func mp3(frames, xing int) []byte {
	var b bytes.Buffer
	b.WriteString("ID3\x04\x00\x00\x00\x00\x01\x00") // 128 bytes of tag
	b.Write(make([]byte, 128))
	frame := make([]byte, 417) // 144 * 128000 / 44100
	copy(frame, "\xff\xfb\x90\x00")
	for i := 0; i < frames; i++ {
		f := append([]byte(nil), frame...)
		if i == 0 && xing > 0 {
			copy(f[36:], "Xing\x00\x00\x00\x01")
			binary.BigEndian.PutUint32(f[44:], uint32(xing))
		}
		b.Write(f)
	}
	return b.Bytes()
}

// mp4 returns ftyp and moov boxes with a movie header of the given
// version.
func mp4(brand string, version byte, scale uint32, dur uint64) []byte {
	box := func(typ string, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
		return append(append(b, typ...), body...)
	}
	var mvhd []byte
	if version == 1 {
		mvhd = append([]byte{1, 0, 0, 0}, make([]byte, 16)...)
		mvhd = binary.BigEndian.AppendUint32(mvhd, scale)
		mvhd = binary.BigEndian.AppendUint64(mvhd, dur)
	} else {
		mvhd = append([]byte{0, 0, 0, 0}, make([]byte, 8)...)
		mvhd = binary.BigEndian.AppendUint32(mvhd, scale)
		mvhd = binary.BigEndian.AppendUint32(mvhd, uint32(dur))
	}
	mvhd = append(mvhd, make([]byte, 80)...)
	out := box("ftyp", []byte(brand+"\x00\x00\x02\x00isom"))
	out = append(out, box("free", make([]byte, 100))...)
	return append(out, box("moov", append(box("mvhd", mvhd), box("trak", nil)...))...)
}

// oggPage returns an Ogg page holding one packet.
func oggPage(granule uint64, packet []byte) []byte {
	b := []byte("OggS\x00\x02")
	b = binary.LittleEndian.AppendUint64(b, granule)
	b = append(b, make([]byte, 12)...) // serial, sequence, checksum
	b = append(b, 1, byte(len(packet)))
	return append(b, packet...)
}

func opus(ms int) []byte {
	head := []byte("OpusHead\x01\x02")
	head = binary.LittleEndian.AppendUint16(head, 312)
	head = binary.LittleEndian.AppendUint32(head, 48000)
	head = append(head, 0, 0, 0)
	out := oggPage(0, head)
	out = append(out, oggPage(0, []byte("OpusTags"))...)
	return append(out, oggPage(uint64(48*ms+312), make([]byte, 50))...)
}

func flac(rate, seconds int) []byte {
	b := []byte("fLaC\x80\x00\x00\x22")
	si := make([]byte, 34)
	total := uint64(rate * seconds)
	si[10], si[11] = byte(rate>>12), byte(rate>>4)
	si[12] = byte(rate<<4) | 1<<1 // 2 channels
	si[13] = 15<<4 | byte(total>>32)
	binary.BigEndian.PutUint32(si[14:], uint32(total))
	return append(b, si...)
}

// TestInspectMedia is the golden test of durations, on recordings whose
// headers this test writes.
func TestInspectMedia(t *testing.T) {
	for _, tc := range []struct {
		name, mime string
		data       []byte
		want       Summary
	}{
		{"wav", "audio/wav", wav(8000, 1, 16, 1500), Summary{Kind: "audio", Format: "wav", DurationMS: 1500}},
		{"wav stereo", "", wav(44100, 2, 16, 250), Summary{Kind: "audio", Format: "wav", DurationMS: 250}},
		// 20 frames of 417 bytes at 128 kbps: 8340 * 8 / 128 = 521 ms.
		{"mp3 cbr", "audio/mpeg", mp3(20, 0), Summary{Kind: "audio", Format: "mp3", DurationMS: 521}},
		// A Xing header counting 1000 frames of 1152 samples at 44.1 kHz.
		{"mp3 xing", "audio/mpeg", mp3(3, 1000), Summary{Kind: "audio", Format: "mp3", DurationMS: 26122}},
		{"mp4 v0", "video/mp4", mp4("isom", 0, 1000, 5000), Summary{Kind: "video", Format: "mp4", DurationMS: 5000}},
		{"mp4 v1", "", mp4("mp42", 1, 90000, 90000*61), Summary{Kind: "video", Format: "mp4", DurationMS: 61000}},
		{"m4a", "", mp4("M4A ", 0, 44100, 44100*3), Summary{Kind: "audio", Format: "m4a", DurationMS: 3000}},
		{"audio/mp4", "audio/mp4", mp4("isom", 0, 600, 1200), Summary{Kind: "audio", Format: "mp4", DurationMS: 2000}},
		{"opus", "audio/ogg", opus(3250), Summary{Kind: "audio", Format: "opus", DurationMS: 3250}},
		{"flac", "audio/flac", flac(44100, 2), Summary{Kind: "audio", Format: "flac", DurationMS: 2000}},
		// Truncated: the kind, no duration, no error.
		{"mp4 without moov", "video/mp4", mp4("isom", 0, 1000, 5000)[:40], Summary{Kind: "video", Format: "mp4"}},
		{"wav without data", "audio/wav", wav(8000, 1, 16, 100)[:44], Summary{Kind: "audio", Format: "wav"}},
		{"unknown audio", "audio/x-unknown", []byte{9, 9, 9, 9}, Summary{Kind: "audio"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := inspectBytes(t, tc.data, tc.mime, Limits{})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestInspectUnknownBinary(t *testing.T) {
	got, parts := inspectBytes(t, []byte{0, 1, 2, 0xfe, 0xff, 0}, "application/octet-stream", Limits{})
	if !reflect.DeepEqual(got, Summary{}) || parts != nil {
		t.Errorf("got %+v, %v", got, parts)
	}
}

// slowReader sleeps on every read.
type slowReader struct {
	r     io.ReaderAt
	delay time.Duration
}

func (s slowReader) ReadAt(p []byte, off int64) (int, error) {
	time.Sleep(s.delay)
	return s.r.ReadAt(p, off)
}

type failingReader struct{}

var errDisk = errors.New("disk on fire")

func (failingReader) ReadAt([]byte, int64) (int, error) { return 0, errDisk }

// TestInspectCaps: past the byte cap or the time cap, the summary so far
// comes back marked partial, without an error and within the time cap.
func TestInspectCaps(t *testing.T) {
	text := bytes.Repeat([]byte("0123456789abcdef\n"), 64<<10) // 1.1 MB
	got, _ := inspectBytes(t, text, "text/plain", Limits{MaxBytes: 100 << 10})
	if got.Partial != PartialBytes || got.Kind != "text" || got.Lines == 0 || got.Lines > 100<<10/17+1 {
		t.Errorf("byte cap: %+v", got)
	}

	// On synctest's clock, which moves only while the reader sleeps: the
	// cap ends the inspection within the read it fell in, however loaded
	// the machine.
	synctest.Test(t, func(t *testing.T) {
		const delay, timeout = 30 * time.Millisecond, 50 * time.Millisecond
		start := time.Now()
		s, _, err := Inspect(context.Background(), slowReader{bytes.NewReader(text), delay}, int64(len(text)), "text/plain", Limits{Timeout: timeout})
		if took := time.Since(start); err != nil || s.Partial != PartialTime || s.Kind != "text" || took > timeout+delay {
			t.Errorf("time cap: %+v, %v, took %v, want at most %v", s, err, took, timeout+delay)
		}
	})

	// A deadline already passed: the kind from the type alone.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, _, err := Inspect(ctx, bytes.NewReader(text), int64(len(text)), "text/csv", Limits{})
	if err != nil || s.Partial != PartialTime || s.Kind != "csv" {
		t.Errorf("canceled: %+v, %v", s, err)
	}

	// A read error of the source is the caller's.
	if _, _, err := Inspect(context.Background(), failingReader{}, 100, "text/plain", Limits{}); !errors.Is(err, errDisk) {
		t.Errorf("read error: %v, want %v", err, errDisk)
	}
}

// TestSummaryJSON pins the field names the store keeps and templates read.
func TestSummaryJSON(t *testing.T) {
	b, _ := json.Marshal(Summary{Kind: "image", Format: "png", Width: 2, Height: 3, Partial: "time"})
	if string(b) != `{"kind":"image","format":"png","width":2,"height":3,"partial":"time"}` {
		t.Errorf("got %s", b)
	}
}

// Make sure an image with a palette (GIF) decodes config only, never the
// pixels: a 30000x30000 GIF header costs nothing.
func TestInspectHugeImageHeader(t *testing.T) {
	var b bytes.Buffer
	img := image.NewPaletted(image.Rect(0, 0, 1, 1), color.Palette{color.Black, color.White})
	gif.Encode(&b, img, nil)
	g := b.Bytes()
	binary.LittleEndian.PutUint16(g[6:], 30000)
	binary.LittleEndian.PutUint16(g[8:], 30000)
	got, _ := inspectBytes(t, g, "image/gif", Limits{})
	if got.Width != 30000 || got.Height != 30000 {
		t.Errorf("got %+v", got)
	}
}
