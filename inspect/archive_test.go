package inspect

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// buildZip writes a ZIP of name/content pairs, deflated.
func buildZip(t testing.TB, files ...string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for i := 0; i+1 < len(files); i += 2 {
		f, err := w.Create(files[i])
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(files[i+1]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func buildTar(t testing.TB, files ...string) []byte {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for i := 0; i+1 < len(files); i += 2 {
		w.WriteHeader(&tar.Header{Name: files[i], Mode: 0o644, Size: int64(len(files[i+1])), Typeflag: tar.TypeReg})
		w.Write([]byte(files[i+1]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gz(name string, data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Name = name
	w.Write(data)
	w.Close()
	return b.Bytes()
}

const workbookXML = `<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="Revenue" sheetId="1"/><sheet name="Costs" sheetId="2"/></sheets></workbook>`

const documentXML = `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Quarterly revenue</w:t></w:r><w:r><w:t xml:space="preserve"> grew fast.</w:t></w:r></w:p><w:p><w:r><w:t>Second paragraph here.</w:t></w:r></w:p></w:body></w:document>`

func TestInspectArchiveGolden(t *testing.T) {
	plain := buildZip(t, "docs/a.txt", "alpha\n", "docs/b.md", "# beta\n", "img/c.png", "\x89PNG\r\n\x1a\n....")
	xlsx := buildZip(t, "[Content_Types].xml", "<Types/>", "xl/workbook.xml", workbookXML, "xl/worksheets/sheet1.xml", "<worksheet/>")
	docx := buildZip(t, "[Content_Types].xml", "<Types/>", "word/document.xml", documentXML)
	odt := buildZip(t, "mimetype", "application/vnd.oasis.opendocument.text", "content.xml",
		`<office:document-content xmlns:office="o" xmlns:text="t"><office:body><office:text><text:p>One two three</text:p></office:text></office:body></office:document-content>`)
	tarball := buildTar(t, "src/main.go", "package main\n", "README", "read me\n")
	cases := []struct {
		name, mime string
		data       []byte
		want       Summary
		parts      int
	}{
		{"zip", "application/zip", plain, Summary{Kind: "archive", Format: "zip", Entries: 3, Names: []string{"docs/a.txt", "docs/b.md", "img/c.png"}}, 3},
		{"xlsx", "", xlsx, Summary{Kind: "archive", Format: "xlsx", Entries: 3, Names: []string{"[Content_Types].xml", "xl/workbook.xml", "xl/worksheets/sheet1.xml"}, Sheets: []string{"Revenue", "Costs"}}, 3},
		{"docx", "", docx, Summary{Kind: "archive", Format: "docx", Entries: 2, Names: []string{"[Content_Types].xml", "word/document.xml"}, Words: 7,
			Text: "Quarterly revenue grew fast. Second paragraph here."}, 3},
		{"odt", "", odt, Summary{Kind: "archive", Format: "odt", Entries: 2, Names: []string{"mimetype", "content.xml"}, Words: 3, Text: "One two three"}, 3},
		{"tar", "application/x-tar", tarball, Summary{Kind: "archive", Format: "tar", Entries: 2, Names: []string{"src/main.go", "README"}}, 2},
		{"tar.gz", "application/gzip", gz("", tarball), Summary{Kind: "archive", Format: "tar.gz", Entries: 2, Names: []string{"src/main.go", "README"}}, 2},
		{"gzip", "application/gzip", gz("notes.txt", []byte("hello\n")), Summary{Kind: "archive", Format: "gzip", Entries: 1, Names: []string{"notes.txt"}}, 1},
	}
	for _, c := range cases {
		s, parts, err := inspectArchive(context.Background(), bytes.NewReader(c.data), int64(len(c.data)), c.mime, Limits{})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if fmt.Sprintf("%+v", s) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, s, c.want)
		}
		if len(parts) != c.parts || parts[0].Place != "entry "+c.want.Names[0] {
			t.Errorf("%s: parts %q", c.name, parts)
		}
	}
	// A docx's text is a part for search.
	_, parts, _ := inspectArchive(context.Background(), bytes.NewReader(docx), int64(len(docx)), "", Limits{})
	if last := parts[len(parts)-1]; last.Place != "entry word/document.xml" || last.Text != "Quarterly revenue grew fast.\nSecond paragraph here." {
		t.Errorf("docx text part %q", last)
	}
}

func TestArchiveEntryAndNames(t *testing.T) {
	plain := buildZip(t, "docs/a.txt", "alpha\n", "img/c.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	tarball := buildTar(t, "src/main.go", "package main\n", "README", "read me\n")
	ctx := context.Background()
	for _, c := range []struct {
		data             []byte
		name, want, mime string
	}{
		{plain, "docs/a.txt", "alpha\n", "text/plain; charset=utf-8"},
		{plain, "img/c.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"},
		{tarball, "README", "read me\n", "text/plain; charset=utf-8"},
		{gz("", tarball), "src/main.go", "package main\n", "text/plain; charset=utf-8"},
		{gz("n.txt", []byte("hi\n")), "n.txt", "hi\n", "text/plain; charset=utf-8"},
	} {
		data, m, err := ArchiveEntry(ctx, bytes.NewReader(c.data), int64(len(c.data)), "", c.name, 1<<20)
		if err != nil || string(data) != c.want || m != c.mime {
			t.Errorf("%s: %q %q %v", c.name, data, m, err)
		}
	}
	if _, _, err := ArchiveEntry(ctx, bytes.NewReader(plain), int64(len(plain)), "", "nope", 1<<20); !errors.Is(err, ErrNoEntry) {
		t.Errorf("missing entry: %v", err)
	}
	if _, _, err := ArchiveEntry(ctx, strings.NewReader("plain text"), 10, "", "x", 1<<20); !errors.Is(err, ErrNotArchive) {
		t.Errorf("not an archive: %v", err)
	}
	names, err := ArchiveNames(ctx, bytes.NewReader(tarball), int64(len(tarball)), "", 1)
	if err != nil || fmt.Sprint(names) != "[src/main.go]" {
		t.Errorf("names %q %v", names, err)
	}
}

// TestArchiveBomb: a 16 MiB run of zeros in a small ZIP is inflated no
// further than the cap.
func TestArchiveBomb(t *testing.T) {
	bomb := buildZip(t, "zeros.bin", strings.Repeat("\x00", 16<<20))
	if len(bomb) > 64<<10 {
		t.Fatalf("bomb is %d bytes", len(bomb))
	}
	start := time.Now()
	data, _, err := ArchiveEntry(context.Background(), bytes.NewReader(bomb), int64(len(bomb)), "", "zeros.bin", 1<<20)
	if !errors.Is(err, ErrEntryTooLarge) || len(data) != 1<<20 {
		t.Errorf("bomb: %d bytes, %v", len(data), err)
	}
	t.Logf("bomb entry: %v", time.Since(start))
}

// TestArchiveManyEntries: a directory of 60,000 records is counted from
// the end record; the walk stops when the text parts are full.
func TestArchiveManyEntries(t *testing.T) {
	const n = 60000
	var b, dir bytes.Buffer
	for i := range n {
		name := fmt.Sprintf("f%05d", i)
		off := b.Len()
		var lh [30]byte
		copy(lh[:], "PK\x03\x04")
		binary.LittleEndian.PutUint16(lh[26:], uint16(len(name)))
		b.Write(lh[:])
		b.WriteString(name)
		var ch [46]byte
		copy(ch[:], "PK\x01\x02")
		binary.LittleEndian.PutUint16(ch[28:], uint16(len(name)))
		binary.LittleEndian.PutUint32(ch[42:], uint32(off))
		dir.Write(ch[:])
		dir.WriteString(name)
	}
	cd := b.Len()
	b.Write(dir.Bytes())
	var end [22]byte
	copy(end[:], "PK\x05\x06")
	binary.LittleEndian.PutUint16(end[8:], n)
	binary.LittleEndian.PutUint16(end[10:], n)
	binary.LittleEndian.PutUint32(end[12:], uint32(dir.Len()))
	binary.LittleEndian.PutUint32(end[16:], uint32(cd))
	b.Write(end[:])
	data := b.Bytes()
	s, parts, err := inspectArchive(context.Background(), bytes.NewReader(data), int64(len(data)), "", Limits{MaxTextBytes: 4096})
	if err != nil || s.Entries != n || len(s.Names) != 10 || s.Names[9] != "f00009" || len(parts) == 0 || len(parts) > 4096/18 {
		t.Errorf("%+v %d parts %v", s, len(parts), err)
	}
	data[cd+5] ^= 0xff // a damaged record ends nothing worse than the listing
	if _, _, err := inspectArchive(context.Background(), bytes.NewReader(data), int64(len(data)), "", Limits{}); err != nil {
		t.Logf("damaged: %v", err)
	}
}

func TestInspectArchiveMalformed(t *testing.T) {
	good := buildZip(t, "a.txt", "alpha")
	for name, data := range map[string][]byte{
		"truncated zip": good[:len(good)-10],
		"no directory":  good[:20],
		"bad gzip":      {0x1f, 0x8b, 0, 0},
		"garbage":       []byte("hello world"),
	} {
		s, _, err := inspectArchive(context.Background(), bytes.NewReader(data), int64(len(data)), "", Limits{})
		if err == nil && s.Entries == 0 {
			t.Errorf("%s: no error and no entries: %+v", name, s)
		}
		t.Logf("%s: %+v %v", name, s, err)
	}
}
