package inspect

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// Archives are listed without trusting their own counts: the ZIP central
// directory is walked record by record (archive/zip would allocate every
// header of a million-entry directory before the first name), tar headers
// are read one at a time, and nothing is inflated past the byte cap.

var (
	// ErrNotArchive is returned (wrapped) for bytes that are no ZIP, tar
	// or gzip stream this package reads.
	ErrNotArchive = errors.New("inspect: not a readable archive")
	// ErrNoEntry is returned (wrapped) by ArchiveEntry for a name the
	// archive does not hold.
	ErrNoEntry = errors.New("inspect: no such archive entry")
	// ErrEntryTooLarge is returned (wrapped) by ArchiveEntry, with the
	// first maxBytes of the entry, when the entry holds more.
	ErrEntryTooLarge = errors.New("inspect: archive entry larger than the cap")
)

const (
	// summaryNames is how many entry names a Summary keeps.
	summaryNames = 10
	// summarySheets is how many sheet names a Summary keeps.
	summarySheets = 50
	// maxEntryName drops names longer than this (no file system takes them).
	maxEntryName = 4096
)

// archiveKind is the container under an artifact: "zip", "tar", "gzip" or "".
func archiveKind(r io.ReaderAt, size int64, mime string) string {
	var head [512]byte
	n, _ := r.ReadAt(head[:min(int64(len(head)), size)], 0)
	b := head[:n]
	switch {
	case bytes.HasPrefix(b, []byte("PK\x03\x04")), bytes.HasPrefix(b, []byte("PK\x05\x06")):
		return "zip"
	case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
		return "gzip"
	case len(b) >= 262 && string(b[257:262]) == "ustar":
		return "tar"
	case mime == "application/x-tar":
		return "tar"
	}
	return ""
}

// entryVisitor sees one archive member; returning false stops the walk.
type entryVisitor func(name string, size int64, open func() io.Reader) bool

// walkArchive calls visit for each member in order until it returns false,
// the reads hit the guard or the archive ends; it returns the container.
func walkArchive(g *guardedReaderAt, size int64, mime string, maxBytes int64, visit entryVisitor) (string, error) {
	kind := archiveKind(g, size, mime)
	switch kind {
	case "zip":
		return kind, walkZip(g, size, visit)
	case "tar":
		return kind, walkTar(io.NewSectionReader(g, 0, size), visit)
	case "gzip":
		zr, err := gzip.NewReader(bufio.NewReaderSize(io.NewSectionReader(g, 0, size), 64<<10))
		if err != nil {
			return kind, fmt.Errorf("%w: gzip: %w", ErrNotArchive, err)
		}
		zr.Multistream(false)
		body := bufio.NewReaderSize(io.LimitReader(zr, maxBytes), 64<<10)
		if head, _ := body.Peek(262); len(head) == 262 && string(head[257:262]) == "ustar" {
			return "tar.gz", walkTar(body, visit)
		}
		visit(zr.Name, -1, func() io.Reader { return body })
		return kind, nil
	}
	return "", ErrNotArchive
}

// walkTar reads tar headers from r; a seekable r skips member bodies.
func walkTar(r io.Reader, visit entryVisitor) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader || len(h.Name) > maxEntryName {
			continue
		}
		if !visit(h.Name, h.Size, func() io.Reader { return tr }) {
			return nil
		}
	}
}

// zipEntry is one ZIP central directory record.
type zipEntry struct {
	name         string
	method       uint16
	flags        uint16
	csize, usize uint64
	offset       uint64
}

// zipDirectory finds the central directory: its offset, size and the
// entry count the end record claims.
func zipDirectory(r io.ReaderAt, size int64) (off, n, count int64, err error) {
	tail := min(size, 22+65535)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return 0, 0, 0, err
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < 22 {
		return 0, 0, 0, fmt.Errorf("%w: zip: no end of central directory", ErrNotArchive)
	}
	e := buf[i:]
	count = int64(binary.LittleEndian.Uint16(e[10:]))
	n = int64(binary.LittleEndian.Uint32(e[12:]))
	off = int64(binary.LittleEndian.Uint32(e[16:]))
	eocd := size - tail + int64(i)
	if (count == 0xffff || off == 0xffffffff || n == 0xffffffff) && eocd >= 20 {
		var loc [20]byte
		if _, err := r.ReadAt(loc[:], eocd-20); err == nil && string(loc[:4]) == "PK\x06\x07" {
			var z [56]byte
			at := int64(binary.LittleEndian.Uint64(loc[8:]))
			if _, err := r.ReadAt(z[:], at); err == nil && string(z[:4]) == "PK\x06\x06" {
				count = int64(binary.LittleEndian.Uint64(z[32:]))
				n = int64(binary.LittleEndian.Uint64(z[40:]))
				off = int64(binary.LittleEndian.Uint64(z[48:]))
				eocd = at
			}
		}
	}
	if n < 0 || n > eocd {
		return 0, 0, 0, fmt.Errorf("%w: zip: central directory of %d bytes before offset %d", ErrNotArchive, n, eocd)
	}
	// Bytes prepended to the archive (a self-extractor) shift every offset.
	if off != eocd-n {
		off = eocd - n
	}
	return off, n, count, nil
}

// walkZip walks the central directory record by record.
func walkZip(g *guardedReaderAt, size int64, visit entryVisitor) error {
	off, n, _, err := zipDirectory(g, size)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(io.NewSectionReader(g, off, n), 64<<10)
	var h [46]byte
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("zip: central directory: %w", err)
		}
		if string(h[:4]) != "PK\x01\x02" {
			return nil // the directory ends (or a digital signature follows)
		}
		e := zipEntry{
			flags:  binary.LittleEndian.Uint16(h[8:]),
			method: binary.LittleEndian.Uint16(h[10:]),
			csize:  uint64(binary.LittleEndian.Uint32(h[20:])),
			usize:  uint64(binary.LittleEndian.Uint32(h[24:])),
			offset: uint64(binary.LittleEndian.Uint32(h[42:])),
		}
		nameLen := int(binary.LittleEndian.Uint16(h[28:]))
		extraLen := int(binary.LittleEndian.Uint16(h[30:]))
		commentLen := int(binary.LittleEndian.Uint16(h[32:]))
		rest := make([]byte, nameLen+extraLen)
		if _, err := io.ReadFull(br, rest); err != nil {
			return fmt.Errorf("zip: central directory: %w", err)
		}
		if _, err := br.Discard(commentLen); err != nil {
			return fmt.Errorf("zip: central directory: %w", err)
		}
		e.name = string(rest[:nameLen])
		zip64Extra(&e, rest[nameLen:])
		if !visit(e.name, int64(e.usize), func() io.Reader { return zipBody(g, size, e) }) {
			return nil
		}
	}
}

// zip64Extra reads the 64-bit sizes and offset of the zip64 extra field.
func zip64Extra(e *zipEntry, extra []byte) {
	for len(extra) >= 4 {
		tag, n := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		extra = extra[4:]
		if n > len(extra) {
			return
		}
		field := extra[:n]
		extra = extra[n:]
		if tag != 1 {
			continue
		}
		for _, p := range []*uint64{&e.usize, &e.csize, &e.offset} {
			if *p == 0xffffffff && len(field) >= 8 {
				*p = binary.LittleEndian.Uint64(field)
				field = field[8:]
			}
		}
	}
}

// zipBody is the inflated body of e, read from its local header on.
func zipBody(r io.ReaderAt, size int64, e zipEntry) io.Reader {
	var h [30]byte
	if _, err := r.ReadAt(h[:], int64(e.offset)); err != nil {
		return errReader{fmt.Errorf("zip: entry %q: %w", e.name, err)}
	}
	if string(h[:4]) != "PK\x03\x04" {
		return errReader{fmt.Errorf("%w: zip: entry %q: no local header", ErrNotArchive, e.name)}
	}
	if e.flags&1 != 0 {
		return errReader{fmt.Errorf("zip: entry %q is encrypted", e.name)}
	}
	start := int64(e.offset) + 30 + int64(binary.LittleEndian.Uint16(h[26:])) + int64(binary.LittleEndian.Uint16(h[28:]))
	if start > size {
		return errReader{fmt.Errorf("%w: zip: entry %q past the end", ErrNotArchive, e.name)}
	}
	body := io.NewSectionReader(r, start, min(int64(e.csize), size-start))
	switch e.method {
	case 0:
		return body
	case 8:
		return flate.NewReader(bufio.NewReaderSize(body, 64<<10))
	}
	return errReader{fmt.Errorf("zip: entry %q: compression method %d is not supported", e.name, e.method)}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// inspectArchive counts a ZIP, OOXML, ODF, tar or gzip archive's entries,
// keeps the first names, xlsx/ods sheet names and docx/odt word counts,
// and gives each entry name as a text part ("entry NAME").
func inspectArchive(ctx context.Context, r io.ReaderAt, size int64, mime string, lim Limits) (Summary, []TextPart, error) {
	lim = limitsOrDefault(lim)
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	g := newGuardedReaderAt(ctx, r, lim.MaxBytes)
	type result struct {
		s     Summary
		parts []TextPart
	}
	res, err := runGuarded(ctx, func() (result, error) {
		s := Summary{Kind: "archive"}
		var parts []TextPart
		var kept int64
		var docXML, docName string // the entry holding an office document's text
		var sheetsXML string
		names := map[string]bool{}
		isZip := archiveKind(g, size, mime) == "zip"
		stopped := false // a ZIP walk stopped once the text parts were full
		kind, err := walkArchive(g, size, mime, lim.MaxBytes, func(name string, _ int64, open func() io.Reader) bool {
			s.Entries++
			if len(s.Names) < summaryNames {
				s.Names = append(s.Names, name)
			}
			if len(names) < 64 {
				names[name] = true
			}
			if add := int64(len("entry ") + 2*len(name)); kept+add <= lim.MaxTextBytes {
				kept += add
				parts = append(parts, TextPart{Place: "entry " + name, Text: name})
			} else if isZip {
				// The end record has the count; walking a million
				// records for it would only spend the time cap.
				stopped = true
				return false
			}
			if s.Entries == 1 && name == "mimetype" {
				if b, _ := io.ReadAll(io.LimitReader(open(), 128)); bytes.HasPrefix(b, []byte("application/vnd.oasis.opendocument.")) {
					s.Format = odfFormats[string(b)]
				}
			}
			return ctx.Err() == nil
		})
		if s.Format == "" {
			s.Format = kind
		}
		if stopped {
			if _, _, count, err := zipDirectory(g, size); err == nil && count > int64(s.Entries) {
				s.Entries = int(min(count, 1<<31-1))
			}
		}
		if err != nil && s.Entries == 0 {
			return result{}, err
		}
		if why := g.exhausted(); why != "" {
			s.Partial = why
		} else if err != nil {
			s.Partial = "malformed"
		}
		if kind == "zip" {
			switch {
			case names["xl/workbook.xml"]:
				s.Format, sheetsXML = "xlsx", "xl/workbook.xml"
			case names["word/document.xml"]:
				s.Format, docXML = "docx", "word/document.xml"
			case names["ppt/presentation.xml"]:
				s.Format = "pptx"
			}
			switch s.Format {
			case "ods":
				sheetsXML = "content.xml"
			case "odt":
				docXML = "content.xml"
			}
			docName = docXML
		}
		if sheetsXML != "" && s.Partial == "" {
			s.Sheets = officeSheets(g, size, sheetsXML, lim.MaxBytes)
		}
		if docXML != "" && s.Partial == "" {
			words, text := officeText(g, size, docName, lim.MaxBytes, lim.MaxTextBytes-kept)
			s.Words = words
			if text != "" {
				parts = append(parts, TextPart{Place: "entry " + docName, Text: text})
			}
			s.Text = cleanLine(text, summaryTextChars)
		}
		if why := g.exhausted(); why != "" && s.Partial == "" {
			s.Partial = why
		}
		return result{s, parts}, nil
	})
	return res.s, res.parts, err
}

var odfFormats = map[string]string{
	"application/vnd.oasis.opendocument.text":         "odt",
	"application/vnd.oasis.opendocument.spreadsheet":  "ods",
	"application/vnd.oasis.opendocument.presentation": "odp",
}

// openEntry returns the body of the ZIP entry name, or nil.
func openEntry(g *guardedReaderAt, size int64, name string) io.Reader {
	var body io.Reader
	walkZip(g, size, func(n string, _ int64, open func() io.Reader) bool {
		if n == name {
			body = open()
			return false
		}
		return true
	})
	return body
}

// officeSheets reads the sheet names of an xlsx workbook.xml or an ods
// content.xml.
func officeSheets(g *guardedReaderAt, size int64, name string, maxBytes int64) []string {
	body := openEntry(g, size, name)
	if body == nil {
		return nil
	}
	var sheets []string
	d := xml.NewDecoder(io.LimitReader(body, maxBytes))
	for len(sheets) < summarySheets {
		tok, err := d.RawToken()
		if err != nil {
			break
		}
		el, ok := tok.(xml.StartElement)
		if !ok || (el.Name.Local != "sheet" && el.Name.Local != "table") {
			continue
		}
		for _, a := range el.Attr {
			if a.Name.Local == "name" {
				sheets = append(sheets, a.Value)
			}
		}
	}
	return sheets
}

// officeText counts the words of a docx document.xml or odt content.xml
// and keeps up to maxText bytes of their text, a line per paragraph.
func officeText(g *guardedReaderAt, size int64, name string, maxBytes, maxText int64) (int, string) {
	body := openEntry(g, size, name)
	if body == nil {
		return 0, ""
	}
	var text strings.Builder
	words := 0
	inWord := false
	d := xml.NewDecoder(io.LimitReader(body, maxBytes))
	for {
		tok, err := d.RawToken()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.CharData:
			for _, c := range t {
				space := c == ' ' || c == '\t' || c == '\n' || c == '\r'
				if !space && !inWord {
					words++
				}
				inWord = !space
			}
			if int64(text.Len()+len(t)) <= maxText {
				text.Write(t)
			}
		case xml.EndElement:
			if t.Name.Local == "p" || t.Name.Local == "h" {
				inWord = false
				if int64(text.Len()) < maxText {
					text.WriteByte('\n')
				}
			}
		}
	}
	return words, strings.TrimSpace(text.String())
}

// ArchiveEntry returns the bytes of the member name and their MIME type
// (sniffed). A member over maxBytes returns its first maxBytes with
// ErrEntryTooLarge; a missing one ErrNoEntry. For a plain gzip stream the
// one member is its header's name (any name when the header has none).
// Reads stop at ctx's deadline, after pageTextTimeout when it has none.
func ArchiveEntry(ctx context.Context, r io.ReaderAt, size int64, mime, name string, maxBytes int64) ([]byte, string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pageTextTimeout)
		defer cancel()
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	g := newGuardedReaderAt(ctx, r, max(DefaultMaxBytes, 2*maxBytes))
	type result struct {
		data []byte
		mime string
	}
	res, err := runGuarded(ctx, func() (result, error) {
		var (
			data  []byte
			found bool
			rerr  error
		)
		plainGzip := archiveKind(g, size, mime) == "gzip"
		_, err := walkArchive(g, size, mime, max(DefaultMaxBytes, 2*maxBytes), func(n string, _ int64, open func() io.Reader) bool {
			if n != name && !(n == "" && plainGzip) {
				return ctx.Err() == nil
			}
			found = true
			data, rerr = io.ReadAll(io.LimitReader(open(), maxBytes+1))
			return false
		})
		if !found {
			if err != nil {
				return result{}, err
			}
			if why := g.exhausted(); why != "" {
				return result{}, fmt.Errorf("inspect: looking for entry %q: %s cap reached", name, why)
			}
			return result{}, fmt.Errorf("%w: %q", ErrNoEntry, name)
		}
		if rerr != nil {
			return result{}, fmt.Errorf("inspect: entry %q: %w", name, rerr)
		}
		m := mimetype.Detect(data).String()
		if int64(len(data)) > maxBytes {
			return result{data[:maxBytes], m}, fmt.Errorf("%w: %q holds more than %d bytes", ErrEntryTooLarge, name, maxBytes)
		}
		return result{data, m}, nil
	})
	return res.data, res.mime, err
}

// ArchiveNames lists up to max member names in archive order.
func ArchiveNames(ctx context.Context, r io.ReaderAt, size int64, mime string, max int) ([]string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pageTextTimeout)
		defer cancel()
	}
	g := newGuardedReaderAt(ctx, r, DefaultMaxBytes)
	return runGuarded(ctx, func() ([]string, error) {
		var names []string
		_, err := walkArchive(g, size, mime, DefaultMaxBytes, func(n string, _ int64, _ func() io.Reader) bool {
			names = append(names, n)
			return len(names) < max && ctx.Err() == nil
		})
		if err != nil && len(names) == 0 {
			return nil, err
		}
		return names, nil
	})
}
