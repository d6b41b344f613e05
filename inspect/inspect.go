// Package inspect says what an artifact's bytes hold: a PDF's pages and
// first text, an image's dimensions, an archive's entries, a recording's
// duration, the shape of text, JSON and CSV. It reads through an
// io.ReaderAt, bounded in bytes read and time: past a cap it returns what it
// found so far with Summary.Partial set, never an error, so that a summary
// can never hold up the call whose result it describes.
//
// The package imports nothing of mcpx's but internal/wasmmem, the guest
// memory its PDF reader shares with the WASM plugins: the engine, the
// query tools and the CLI all use it.
package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Defaults of Limits.
const (
	// DefaultMaxBytes caps the bytes one inspection reads: enough for the
	// line count of a 64 MiB log, little against a 1 GiB video (whose
	// duration sits in its first or last few kB).
	DefaultMaxBytes = 64 << 20
	// DefaultTimeout caps one inspection's time: a summary is computed
	// while the call that stored the artifact waits.
	DefaultTimeout = 250 * time.Millisecond
	// DefaultMaxTextBytes caps the text kept for search, all parts together.
	DefaultMaxTextBytes = 1 << 20
)

const (
	// textChars is how many characters of text Summary.Text keeps.
	textChars = 300
	// maxNames bounds Summary.Names; maxKeys bounds Keys, ItemKeys, Columns
	// and Sheets.
	maxNames = 10
	maxKeys  = 20
	// headSize is how much of the start the dispatcher sniffs.
	headSize = 512
)

// Limits bound one inspection. Zero fields take their defaults.
type Limits struct {
	MaxBytes     int64         // bytes read at most; default DefaultMaxBytes (64 MiB)
	Timeout      time.Duration // default DefaultTimeout (250 ms)
	MaxTextBytes int64         // text kept for search, all parts together; default DefaultMaxTextBytes (1 MiB)
	// Memory is the process's memory budget (a *membudget.Budget): an
	// inspection reserves its Footprint from it before it reads, waiting
	// at most Timeout while other work holds it. Nil reserves nothing.
	Memory Memory
}

// Memory is a memory budget an inspection reserves from
// (membudget.Budget's Reserve): what (a few words) needs n bytes; release
// gives them back.
type Memory interface {
	Reserve(ctx context.Context, n int64, what string) (release func(), err error)
}

// footprintSlack covers what every reader holds besides what its kind
// needs: the head, read buffers, a decoder's tables.
const footprintSlack = 1 << 20

// Footprint is the most memory inspecting size bytes of kind ("pdf",
// "image", ... as Summary.Kind; "" for whichever kind holds most) holds
// under l: a PDF's or an archive's reader keeps what it reads (the
// objects, the directory), twice over for the structures it parses, and
// the text it keeps; text, JSON and CSV are read in chunks and keep their
// text; images and media read their headers only.
func (l Limits) Footprint(kind string, size int64) int64 {
	l = l.WithDefaults()
	switch kind {
	case "image", "audio", "video":
		return footprintSlack
	case "text", "json", "csv":
		return l.MaxTextBytes + footprintSlack
	}
	return 2*min(size, l.MaxBytes) + l.MaxTextBytes + footprintSlack
}

// WithDefaults returns l with its zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = DefaultMaxTextBytes
	}
	return l
}

// Summary is what an artifact's bytes say; zero fields are unknown.
type Summary struct {
	Kind       string   `json:"kind"`             // pdf, image, archive, audio, video, text, json, csv
	Format     string   `json:"format,omitempty"` // png, jpeg, zip, xlsx, docx, mp3, ...
	Pages      int      `json:"pages,omitempty"`
	Title      string   `json:"title,omitempty"`
	Author     string   `json:"author,omitempty"`
	Text       string   `json:"text,omitempty"` // the first ~300 characters of text
	Width      int      `json:"width,omitempty"`
	Height     int      `json:"height,omitempty"`
	Entries    int      `json:"entries,omitempty"`
	Names      []string `json:"names,omitempty"` // first entry names (<= 10)
	Sheets     []string `json:"sheets,omitempty"`
	Words      int      `json:"words,omitempty"`
	DurationMS int64    `json:"duration_ms,omitempty"`
	Lines      int64    `json:"lines,omitempty"`
	Keys       []string `json:"keys,omitempty"`      // JSON object's top-level keys (<= 20)
	Length     int      `json:"length,omitempty"`    // JSON array length
	ItemKeys   []string `json:"item_keys,omitempty"` // keys of a JSON array's first object item
	Columns    []string `json:"columns,omitempty"`   // CSV header
	Rows       int64    `json:"rows,omitempty"`      // CSV data rows
	Partial    string   `json:"partial,omitempty"`   // why a cap stopped inspection (time, bytes)

	// NoTextPages counts the PDF pages read that have no text (scans,
	// drawings): a model must look at them to read them. NoText lists the
	// first of them (<= 10), 1-based.
	NoTextPages int   `json:"no_text_pages,omitempty"`
	NoText      []int `json:"no_text,omitempty"`
}

// TextPart is searchable text and where it is: "page 3", "line 120",
// "entry docs/a.txt".
type TextPart struct {
	Place string `json:"place"`
	Text  string `json:"text"`
}

// Sentinel errors of the caps. Inspect turns them into Summary.Partial;
// the kind-specific readers return them (wrapped or not) from reads.
var (
	// ErrByteCap is returned by a read past Limits.MaxBytes.
	ErrByteCap = errors.New("inspect: byte cap reached")
	// ErrTimeCap is returned by a read after Limits.Timeout.
	ErrTimeCap = errors.New("inspect: time cap reached")
	// ErrMemory is returned (wrapping Limits.Memory's refusal) when the
	// memory budget could not hold an inspection's Footprint within
	// Limits.Timeout: nothing was read past the head, and the Summary
	// says the kind alone, Partial PartialMemory.
	ErrMemory = errors.New("inspect: the memory budget could not hold the inspection")
)

// Partial reasons.
const (
	PartialBytes  = "bytes"
	PartialTime   = "time"
	PartialMemory = "memory"
)

// Inspect reads what r's size bytes hold, choosing the reader by the MIME
// type and the bytes' signature (the signature wins where they disagree,
// except that a text type is trusted for text). Unknown kinds return a zero
// Summary and no error. A cap reached returns the summary found so far with
// Partial set; an error is a read error of r itself, or ErrMemory with the
// kind alone when lim.Memory refused the Footprint.
func Inspect(ctx context.Context, r io.ReaderAt, size int64, mimeType string, lim Limits) (Summary, []TextPart, error) {
	lim = lim.WithDefaults()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	br := &boundedReader{r: r, ctx: ctx, max: lim.MaxBytes}
	head := make([]byte, min(size, headSize))
	if _, err := br.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		s := Summary{Kind: kindOfMIME(mimeType)}
		if reason := partialReason(err); reason != "" {
			s.Partial = reason
			return s, nil, nil
		}
		return s, nil, err
	}
	kind, format := sniff(head, mimeType)
	if kind != "" && lim.Memory != nil {
		release, err := lim.Memory.Reserve(ctx, lim.Footprint(kind, size), fmt.Sprintf("inspecting a %d-byte %s", size, kind))
		if err != nil {
			return Summary{Kind: kind, Format: format, Partial: PartialMemory}, nil, fmt.Errorf("%w: %w", ErrMemory, err)
		}
		defer release()
	}
	var (
		s     Summary
		parts []TextPart
		err   error
	)
	switch kind {
	case "image":
		s, err = inspectImage(br, size)
	case "pdf":
		// The PDF reader starts once per process, on the first PDF; the
		// document's time starts after it (see pdfRuntime.ready).
		if err = mayBePDF(br, size); err != nil {
			break
		}
		if _, err = pdfReader.ready(parent); err != nil {
			break
		}
		pctx, pcancel := context.WithTimeout(parent, lim.Timeout)
		defer pcancel()
		br.ctx = pctx // no read is in flight: the probes are done
		s, parts, err = inspectPDF(pctx, br, size, lim)
	case "archive":
		s, parts, err = inspectArchive(ctx, br, size, mimeType, lim)
	case "audio", "video":
		s, err = inspectMedia(br, size, head, format, kind)
	case "text", "json", "csv":
		// A table is recognised by its shape in text that says no more
		// than that it is text.
		mt, _, _ := mime.ParseMediaType(mimeType)
		s, parts, err = inspectText(br, size, kind, format, mt == "" || mt == "text/plain", lim)
	default:
		return Summary{}, nil, nil
	}
	if s.Kind == "" {
		s.Kind = kind
	}
	if s.Format == "" {
		s.Format = format
	}
	reason := partialReason(err)
	if reason == "" {
		// A decoder that hides the cap's error behind its own (an
		// unexpected EOF) still read only part.
		reason = br.reason()
	}
	if reason != "" {
		if s.Partial == "" {
			s.Partial = reason
		}
		err = nil
	}
	if err != nil && !br.readErr.Load() {
		// Malformed content: the kind is known, the rest is not.
		err = nil
	}
	return s, parts, err
}

// partialReason says which cap err is, "" for none.
func partialReason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTimeCap), errors.Is(err, context.DeadlineExceeded):
		return PartialTime
	case errors.Is(err, ErrByteCap):
		return PartialBytes
	}
	return ""
}

// boundedReader counts the bytes read through it and fails reads past
// max or after ctx is done.
type boundedReader struct {
	r      io.ReaderAt
	ctx    context.Context
	max    int64
	n      atomic.Int64
	capped atomic.Int32 // 1 bytes, 2 time
	// readErr is set when r itself failed: only that error is the caller's
	// business; any other error is the content's (malformed) and reads as
	// an unknown summary.
	readErr atomic.Bool
}

func (b *boundedReader) ReadAt(p []byte, off int64) (int, error) {
	if b.ctx.Err() != nil {
		b.capped.Store(2)
		return 0, ErrTimeCap
	}
	left := b.max - b.n.Load()
	if left <= 0 {
		b.capped.Store(1)
		return 0, ErrByteCap
	}
	short := false
	if int64(len(p)) > left {
		p, short = p[:left], true
	}
	n, err := b.r.ReadAt(p, off)
	b.n.Add(int64(n))
	if err != nil && !errors.Is(err, io.EOF) {
		b.readErr.Store(true)
		return n, err
	}
	if short && err == nil {
		b.capped.Store(1)
		return n, ErrByteCap
	}
	return n, err
}

// reason is the cap that stopped a read, "" when none did.
func (b *boundedReader) reason() string {
	switch b.capped.Load() {
	case 1:
		return PartialBytes
	case 2:
		return PartialTime
	}
	return ""
}

// sniff returns the kind and format of the bytes that start with head,
// declared as mimeType.
func sniff(head []byte, mimeType string) (kind, format string) {
	mt, _, _ := mime.ParseMediaType(mimeType)
	if k, f := sniffMagic(head); k != "" {
		if k == "video" && strings.HasPrefix(mt, "audio/") {
			k = "audio" // audio/mp4 with a generic brand
		}
		return k, f
	}
	switch {
	case mt == "application/pdf":
		return "pdf", "pdf"
	case mt == "text/csv":
		return "csv", "csv"
	case mt == "text/tab-separated-values":
		return "csv", "tsv"
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return "json", "json"
	case isArchiveMIME(mt):
		return "archive", ""
	case strings.HasPrefix(mt, "image/"):
		return "image", ""
	case strings.HasPrefix(mt, "audio/"):
		return "audio", ""
	case strings.HasPrefix(mt, "video/"):
		return "video", ""
	case strings.HasPrefix(mt, "text/") || mt == "application/x-ndjson" || mt == "application/xml" || strings.HasSuffix(mt, "+xml"):
		if looksJSON(head) && mt == "text/plain" {
			return "json", "json"
		}
		return "text", ""
	}
	if looksText(head) {
		if looksJSON(head) {
			return "json", "json"
		}
		return "text", ""
	}
	return "", ""
}

// kindOfMIME is the kind a MIME type alone says, for a summary whose bytes
// could not be read.
func kindOfMIME(mimeType string) string {
	k, _ := sniff(nil, mimeType)
	return k
}

// sniffMagic recognises the signatures of the formats this package reads.
func sniffMagic(h []byte) (kind, format string) {
	has := func(off int, sig string) bool {
		return len(h) >= off+len(sig) && string(h[off:off+len(sig)]) == sig
	}
	switch {
	case has(0, "\x89PNG\r\n\x1a\n"):
		return "image", "png"
	case has(0, "\xff\xd8\xff"):
		return "image", "jpeg"
	case has(0, "GIF87a"), has(0, "GIF89a"):
		return "image", "gif"
	case has(0, "RIFF") && has(8, "WEBP"):
		return "image", "webp"
	case has(0, "BM") && len(h) >= 26 && h[14] >= 12 && h[15] == 0:
		return "image", "bmp"
	case has(0, "II*\x00"), has(0, "MM\x00*"):
		return "image", "tiff"
	case has(0, "%PDF-"):
		return "pdf", "pdf"
	case has(0, "PK\x03\x04"), has(0, "PK\x05\x06"):
		return "archive", "zip"
	case has(0, "\x1f\x8b"):
		return "archive", "gzip"
	case has(257, "ustar"):
		return "archive", "tar"
	case has(0, "RIFF") && has(8, "WAVE"):
		return "audio", "wav"
	case has(0, "fLaC"):
		return "audio", "flac"
	case has(0, "OggS"):
		return "audio", "ogg"
	case has(0, "ID3"), len(h) >= 2 && h[0] == 0xff && h[1]&0xe0 == 0xe0 && h[1]&0x06 != 0:
		return "audio", "mp3"
	case has(4, "ftyp"):
		return mp4Kind(h)
	}
	return "", ""
}

func isArchiveMIME(mt string) bool {
	switch mt {
	case "application/zip", "application/x-zip-compressed", "application/gzip", "application/x-gzip",
		"application/x-tar", "application/java-archive", "application/epub+zip":
		return true
	}
	return strings.HasPrefix(mt, "application/vnd.openxmlformats-officedocument.") ||
		strings.HasPrefix(mt, "application/vnd.oasis.opendocument.")
}

// looksText reports whether head reads as UTF-8 text (a cut rune at its
// end allowed) without NULs.
func looksText(head []byte) bool {
	if len(head) == 0 || bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 {
			return len(head)-i < utf8.UTFMax && !utf8.FullRune(head[i:])
		}
		i += n
	}
	return true
}

// looksJSON reports whether head starts (after white space) an object or
// an array.
func looksJSON(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}
