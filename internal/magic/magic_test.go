package magic

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// entry is one file in a test archive.
type entry struct{ name, body string }

// zipArchive writes entries with archive/zip. Streamed entries (Create) carry
// their sizes in data descriptors after the data, as Go and many streaming
// writers do; raw entries (CreateRaw) carry them in the local header, as
// Office does.
func zipArchive(t testing.TB, streamed bool, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		if streamed {
			w, err := zw.Create(e.name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		method, data := zip.Deflate, deflate(t, e.body)
		if e.name == "mimetype" {
			method, data = zip.Store, []byte(e.body)
		}
		w, err := zw.CreateRaw(&zip.FileHeader{
			Name:               e.name,
			Method:             method,
			CRC32:              crc32.ChecksumIEEE([]byte(e.body)),
			CompressedSize64:   uint64(len(data)),
			UncompressedSize64: uint64(len(e.body)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	// Read it back: the archive must be real.
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(zr.File) != len(entries) {
		t.Fatalf("archive/zip cannot read the test archive: %v", err)
	}
	return buf.Bytes()
}

func deflate(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, flate.BestCompression)
	if _, err := fw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// incompressible returns n bytes that deflate cannot shrink, so entries take
// predictable room.
func incompressible(n int) string {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}

const contentTypes = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`

const rels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`

// ooxml writes a package in Office's order: content types, package
// relationships, then the main part under dir.
func ooxml(t testing.TB, streamed bool, dir, part string) []byte {
	return zipArchive(t, streamed,
		entry{"[Content_Types].xml", contentTypes},
		entry{"_rels/.rels", rels},
		entry{dir + "_rels/" + part + ".rels", rels},
		entry{dir + part, `<?xml version="1.0"?><document/>`},
	)
}

func encodeImage(t testing.TB, enc func(*bytes.Buffer, image.Image) error) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{200, 10, 10, 255})
	var buf bytes.Buffer
	if err := enc(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func le16(v int) []byte          { return binary.LittleEndian.AppendUint16(nil, uint16(v)) }
func le32(v int) []byte          { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
func be32(v int) []byte          { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// bmp writes a 2x1 24-bit bitmap: BITMAPFILEHEADER, BITMAPINFOHEADER, one
// padded row.
func bmp() []byte {
	pixels := []byte{0, 0, 255, 0, 255, 0, 0, 0}
	return cat([]byte("BM"), le32(14+40+len(pixels)), le32(0), le32(14+40),
		le32(40), le32(2), le32(1), le16(1), le16(24), le32(0), le32(len(pixels)),
		le32(2835), le32(2835), le32(0), le32(0), pixels)
}

// tiff writes a 1x1 8-bit grey image with byte order o.
func tiff(o binary.AppendByteOrder) []byte {
	var b []byte
	if o == binary.LittleEndian {
		b = append(b, "II"...)
	} else {
		b = append(b, "MM"...)
	}
	b = o.AppendUint16(b, 42)
	b = o.AppendUint32(b, 8)
	tags := [][2]uint32{{256, 1}, {257, 1}, {258, 8}, {259, 1}, {262, 1}, {273, 8 + 2 + 8*12 + 4}, {278, 1}, {279, 1}}
	b = o.AppendUint16(b, uint16(len(tags)))
	for _, tg := range tags {
		b = o.AppendUint16(b, uint16(tg[0]))
		b = o.AppendUint16(b, 4) // LONG
		b = o.AppendUint32(b, 1)
		b = o.AppendUint32(b, tg[1])
	}
	b = o.AppendUint32(b, 0) // no next IFD
	return append(b, 0x80)   // the pixel
}

// riff wraps chunks in a RIFF form.
func riff(form string, chunks ...[]byte) []byte {
	body := cat(chunks...)
	return cat([]byte("RIFF"), le32(4+len(body)), []byte(form), body)
}

func chunk(id string, data []byte) []byte {
	c := cat([]byte(id), le32(len(data)), data)
	if len(data)%2 == 1 {
		c = append(c, 0)
	}
	return c
}

func wav() []byte {
	fmtChunk := cat(le16(1), le16(1), le32(8000), le32(16000), le16(2), le16(16))
	return riff("WAVE", chunk("fmt ", fmtChunk), chunk("data", make([]byte, 16)))
}

// webp is a lossless 1x1 WebP (VP8L).
func webp() []byte {
	return riff("WEBP", chunk("VP8L", unhex("2f 00 00 00 10 07 10 11 11 88 88 fe 07 00")))
}

func avi() []byte {
	return riff("AVI ", chunk("LIST", append([]byte("hdrl"), chunk("avih", make([]byte, 56))...)))
}

// mpegFrames writes n MPEG audio frames with header h and zero payload.
func mpegFrames(h []byte, length, n int) []byte {
	var b []byte
	for range n {
		f := make([]byte, length)
		copy(f, h)
		b = append(b, f...)
	}
	return b
}

// MPEG-1 layer III, 128 kbit/s, 44.1 kHz, no padding: 417-byte frames.
var mp3Header = []byte{0xff, 0xfb, 0x90, 0x64}

// adts writes n AAC ADTS frames (MPEG-4, no CRC, 44.1 kHz, stereo).
func adts(n int) []byte {
	const length = 20
	h := []byte{0xff, 0xf1, 0x50, 0x80 | length>>11, byte(length >> 3 & 0xff), byte(length&7)<<5 | 0x1f, 0xfc}
	return mpegFrames(h, length, n)
}

// id3 writes an ID3v2.4 tag with one TIT2 frame.
func id3() []byte {
	title := append([]byte{3}, "Title"...)
	frame := cat([]byte("TIT2"), be32(len(title)), []byte{0, 0}, title)
	size := len(frame)
	return cat([]byte("ID3\x04\x00\x00"), []byte{byte(size >> 21 & 0x7f), byte(size >> 14 & 0x7f), byte(size >> 7 & 0x7f), byte(size & 0x7f)}, frame)
}

// oggCRC is the Ogg page checksum: CRC-32, polynomial 0x04c11db7, not
// reflected, initial 0.
func oggCRC(b []byte) uint32 {
	var crc uint32
	for _, c := range b {
		crc ^= uint32(c) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04c11db7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// oggPage writes a beginning-of-stream page holding one packet.
func oggPage(packet []byte) []byte {
	p := cat([]byte("OggS"), []byte{0, 0x02}, make([]byte, 8), le32(0x1234), le32(0), le32(0), []byte{1, byte(len(packet))}, packet)
	binary.LittleEndian.PutUint32(p[22:], oggCRC(p))
	return p
}

func opusHead() []byte {
	return cat([]byte("OpusHead"), []byte{1, 2}, le16(312), le32(48000), le16(0), []byte{0})
}

func vorbisID() []byte {
	return cat([]byte("\x01vorbis"), le32(0), []byte{2}, le32(44100), le32(0), le32(128000), le32(0), []byte{0xb8, 1})
}

func flacFile() []byte {
	streaminfo := cat([]byte{0x10, 0x00, 0x10, 0x00}, make([]byte, 6), []byte{0x0a, 0xc4, 0x42, 0xf0}, make([]byte, 4+16))
	return cat([]byte("fLaC"), []byte{0x80, 0, 0, 34}, streaminfo)
}

// ftyp writes an ftyp box with major brand and compatible brands, then an
// empty mdat box.
func ftyp(major string, compat ...string) []byte {
	body := cat([]byte(major), be32(0x200), []byte(strings.Join(compat, "")))
	return cat(be32(8+len(body)), []byte("ftyp"), body, be32(8), []byte("mdat"))
}

// ebml writes an EBML header with doc type doc.
func ebml(doc string) []byte {
	body := cat(unhex("4286 81 01 42f7 81 01 42f2 81 04 42f3 81 08"), []byte{0x42, 0x82, 0x80 | byte(len(doc))}, []byte(doc), unhex("4287 81 04 4285 81 02"))
	return cat(unhex("1a45dfa3"), []byte{0x80 | byte(len(body))}, body, unhex("18538067 01ffffffffffffff"))
}

func tarArchive(t testing.TB) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("hello\n")
	if err := tw.WriteHeader(&tar.Header{Name: "BM-hello.txt", Mode: 0o644, Size: int64(len(body)), Format: tar.FormatUSTAR}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipFile(t testing.TB) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Name = "hello.txt"
	if _, err := zw.Write([]byte("hello, world\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sevenZip is an empty 7z archive: the signature header with a CRC over an
// empty next header.
func sevenZip() []byte {
	start := make([]byte, 20)
	return cat([]byte("7z\xbc\xaf\x27\x1c\x00\x04"), le32(int(crc32.ChecksumIEEE(start))), start)
}

// Outputs of `xz`, `zstd` and `bzip2` on "hello\n", and the first 100 bytes
// of a database made by `sqlite3 t.db 'create table t(x);'`.
var (
	xzHello    = unhex("fd377a585a000004e6d6b4460200210116000000742fe5a301000568656c6c6f0a000000a56097f194f6fde000011e06c12fa41d1fb6f37d010000000004595a")
	zstdHello  = unhex("28b52ffd240631000068656c6c6f0a5388bd91")
	bzip2Hello = unhex("425a6839314159265359c1c080e2000001410000100244a00030cd00c3462997177245385090c1c080e2")
	sqliteHead = unhex("53514c69746520666f726d61742033001000010100402020000000010000000200000000000000000000000100000004000000000000000000000001000000000000000000000000000000000000000000000000000000000000000000000001002e6301")
)

// testFiles are real minimal files of every detected type.
func testFiles(t testing.TB) []struct {
	name string
	file []byte
	want Type
} {
	big := incompressible(6000)
	return []struct {
		name string
		file []byte
		want Type
	}{
		{"pdf", []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"), typePDF},
		{"png", encodeImage(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }), typePNG},
		{"jpeg", encodeImage(t, func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) }), typeJPEG},
		{"gif", encodeImage(t, func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, m, nil) }), typeGIF},
		{"gif87a", append([]byte("GIF87a"), 1, 0, 1, 0, 0, 0, 0, ';'), typeGIF},
		{"webp", webp(), typeWebP},
		{"bmp", bmp(), typeBMP},
		{"tiff le", tiff(binary.LittleEndian), typeTIFF},
		{"tiff be", tiff(binary.BigEndian), typeTIFF},
		{"heic", ftyp("heic", "mif1", "heic"), typeHEIC},
		{"heif", ftyp("mif1", "mif1"), typeHEIF},
		{"heif l-hevc", ftyp("heis", "mif1", "heic"), typeHEIF},
		{"heif avc", ftyp("avic", "mif1"), typeHEIF},
		{"heic sequence", ftyp("hevc", "msf1", "hevc"), typeHEICS},
		{"heif sequence", ftyp("msf1", "msf1", "iso8"), typeHEIFS},
		{"avif", ftyp("avif", "avif", "mif1", "miaf"), typeAVIF},
		{"zip streamed", zipArchive(t, true, entry{"a.txt", "hello"}, entry{"b/c.txt", "world"}), typeZIP},
		{"zip raw", zipArchive(t, false, entry{"a.txt", "hello"}), typeZIP},
		{"zip empty", zipArchive(t, false), typeZIP},
		{"zip with content types only", zipArchive(t, false, entry{"[Content_Types].xml", contentTypes}, entry{"data/x.xml", "<x/>"}), typeZIP},
		{"zip with a word dir after another entry", zipArchive(t, false, entry{"a.txt", "hello"}, entry{"word/document.xml", "<x/>"}), typeZIP},
		{"docx main part first, markers past the head", zipArchive(t, false,
			entry{"word/document.xml", "<x/>"}, entry{"word/media/big.bin", big}, entry{"[Content_Types].xml", contentTypes}), typeDOCX},
		{"xlsx docProps first, markers past the head", zipArchive(t, false,
			entry{"docProps/app.xml", "<x/>"}, entry{"xl/workbook.xml", "<x/>"}, entry{"xl/media/big.bin", big},
			entry{"[Content_Types].xml", contentTypes}), typeXLSX},
		{"docx office order", ooxml(t, false, "word/", "document.xml"), typeDOCX},
		{"docx streamed", ooxml(t, true, "word/", "document.xml"), typeDOCX},
		{"xlsx", ooxml(t, false, "xl/", "workbook.xml"), typeXLSX},
		{"xlsx streamed", ooxml(t, true, "xl/", "workbook.xml"), typeXLSX},
		{"pptx", ooxml(t, false, "ppt/", "presentation.xml"), typePPTX},
		{"docx rels first, content types last", zipArchive(t, false,
			entry{"_rels/.rels", rels}, entry{"docProps/core.xml", "<x/>"}, entry{"word/document.xml", "<x/>"},
			entry{"[Content_Types].xml", contentTypes}), typeDOCX},
		{"docx with a big entry first", zipArchive(t, false,
			entry{"[Content_Types].xml", contentTypes}, entry{"docProps/thumbnail.jpeg", incompressible(2500)},
			entry{"word/document.xml", "<x/>"}), typeDOCX},
		{"docx whose main part is past the head", zipArchive(t, false,
			entry{"[Content_Types].xml", contentTypes}, entry{"docProps/thumbnail.jpeg", big},
			entry{"word/document.xml", "<x/>"}), typeZIP},
		{"odt", zipArchive(t, false, entry{"mimetype", typeODT.MIME}, entry{"content.xml", "<x/>"}), typeODT},
		{"ods", zipArchive(t, false, entry{"mimetype", typeODS.MIME}), typeODS},
		{"odp", zipArchive(t, false, entry{"mimetype", typeODP.MIME}), typeODP},
		{"epub", zipArchive(t, false, entry{"mimetype", typeEPUB.MIME}, entry{"META-INF/container.xml", "<x/>"}), typeEPUB},
		{"gzip", gzipFile(t), typeGZIP},
		{"7z", sevenZip(), type7Z},
		{"rar5", unhex("526172211a0701003392b5e50a01050600050101808000"), typeRAR},
		{"rar4", unhex("526172211a0700cf907300000d00000000000000"), typeRAR},
		{"bzip2", bzip2Hello, typeBZ2},
		{"xz", xzHello, typeXZ},
		{"zstd", zstdHello, typeZSTD},
		{"tar", tarArchive(t), typeTAR},
		{"mp3 frames", mpegFrames(mp3Header, 417, 3), typeMP3},
		{"mp3 id3", append(id3(), mpegFrames(mp3Header, 417, 2)...), typeMP3},
		{"mp3 id3 only", id3(), typeMP3},
		{"mp3 one frame in a short head", mp3Header, typeMP3},
		{"mp3 mpeg2", mpegFrames([]byte{0xff, 0xf3, 0x80, 0xc4}, 72*64000/22050, 3), typeMP3},
		{"mp2", mpegFrames([]byte{0xff, 0xfd, 0x94, 0x04}, 144*160000/48000, 3), typeMPGA},
		{"aac adts", adts(3), typeAAC},
		{"aac id3", append(id3(), adts(2)...), typeAAC},
		{"flac id3", append(id3(), flacFile()...), typeFLAC},
		{"wav", wav(), typeWAV},
		{"ogg opus", oggPage(opusHead()), typeOpus},
		{"ogg vorbis", oggPage(vorbisID()), typeVorb},
		{"ogg flac", oggPage([]byte("\x7fFLAC\x01\x00\x00\x01fLaC")), typeOFLC},
		{"ogg speex", oggPage([]byte("Speex   1.2.0\x00")), typeSpx},
		{"ogg theora", oggPage([]byte("\x80theora\x03\x02\x01")), typeOGV},
		{"ogg skeleton", oggPage(cat([]byte("fishead\x00"), le16(3), le16(0), make([]byte, 52))), typeOGV},
		{"ogm video", oggPage(cat([]byte("\x01video\x00\x00\x00"), []byte("DIVX"), make([]byte, 44))), typeOGV},
		{"ogg other", oggPage([]byte("\x01unknown")), typeOgg},
		{"flac", flacFile(), typeFLAC},
		{"mp4", ftyp("isom", "isom", "iso2", "avc1", "mp41"), typeMP4},
		{"mp4 mp42", ftyp("mp42", "mp42", "isom"), typeMP4},
		{"m4a", ftyp("M4A ", "M4A ", "mp42", "isom"), typeM4A},
		{"m4a nero", ftyp("NDAS", "NDAS", "mp42", "isom"), typeM4A},
		{"m4a flash", ftyp("F4B ", "F4B ", "mp42"), typeM4A},
		{"mp4 unlisted brand", ftyp("iso9", "iso9", "cmfc"), typeMP4},
		{"mj2", ftyp("mjp2", "mjp2"), typeMJ2},
		{"m4v", ftyp("M4V ", "M4V ", "mp42"), typeM4V},
		{"mov", ftyp("qt  ", "qt  "), typeMOV},
		{"mov classic, moov first", cat(be32(16), []byte("moov"), be32(8), []byte("mvhd")), typeMOV},
		{"mov classic, wide then mdat", cat(be32(8), []byte("wide"), be32(16), []byte("mdat"), make([]byte, 8)), typeMOV},
		{"3gp", ftyp("3gp4", "3gp4", "isom"), type3GP},
		{"3g2", ftyp("3g2a", "3g2a"), type3G2},
		{"3gp release 1", ftyp("3gp1", "3gp1"), type3GP},
		{"3g2 kddi", ftyp("KDDI", "3g2a"), type3G2},
		{"avi", avi(), typeAVI},
		{"webm", ebml("webm"), typeWebM},
		{"mkv", ebml("matroska"), typeMKV},
		{"sqlite", sqliteHead, typeSQLite},
		{"wasm", []byte("\x00asm\x01\x00\x00\x00"), typeWasm},
	}
}

func TestDetect(t *testing.T) {
	for _, tt := range testFiles(t) {
		t.Run(tt.name, func(t *testing.T) {
			head := tt.file[:min(len(tt.file), HeadSize)]
			got, ok := Detect(head)
			if !ok || got != tt.want {
				t.Fatalf("Detect = %+v, %v; want %+v", got, ok, tt.want)
			}
			if !signed(got, head) {
				t.Fatalf("the signature check of the tests rejects %+v", got)
			}
		})
	}
}

// TestDetectCoversTypes checks that every type in Types has a test file and
// a signature check.
func TestDetectCoversTypes(t *testing.T) {
	seen := map[Type]bool{}
	for _, tt := range testFiles(t) {
		seen[tt.want] = true
	}
	for _, ty := range Types() {
		if !seen[ty] {
			t.Errorf("no test file for %+v", ty)
		}
		if _, ok := signatures[ty.Kind]; !ok {
			t.Errorf("no signature check for %+v", ty)
		}
		if ty.MIME == "" || ty.Kind == "" || !strings.HasPrefix(ty.Ext, ".") {
			t.Errorf("incomplete %+v", ty)
		}
	}
	types := Types()
	types[0].MIME = "changed"
	if Types()[0].MIME == "changed" {
		t.Error("Types returns the package's own slice")
	}
}

func TestDetectNegative(t *testing.T) {
	zeros, _ := base64.StdEncoding.DecodeString(strings.Repeat("A", 5460))
	docx := ooxml(t, false, "word/", "document.xml")
	mp3 := mpegFrames(mp3Header, 417, 3)
	badBMP := bmp()
	badBMP[6] = 1 // reserved
	shortBMP := bmp()
	binary.LittleEndian.PutUint32(shortBMP[2:], 20) // file smaller than its header
	tests := []struct {
		name string
		head []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"one byte", []byte{0xff}},
		{"base64 zeros", zeros},
		{"text", []byte("Hello, world. This is a plain text file, not a PDF.")},
		{"json", []byte(`{"content":[{"type":"text","text":"hi"}]}`)},
		{"pdf without dash", []byte("%PDF1.7\n")},
		{"pdf truncated", []byte("%PDF")},
		{"png 7 bytes", []byte("\x89PNG\r\n\x1a")},
		{"png bad", []byte("\x89PNG\r\n\x1b\n")},
		{"gif88a", []byte("GIF88a\x01\x00\x01\x00")},
		{"riff other form", riff("ABCD", chunk("data", []byte{1, 2, 3}))},
		{"riff truncated", []byte("RIFF\x10\x00\x00\x00WEB")},
		{"bmp text", []byte("BMW is a car maker, not a bitmap header at all.")},
		{"bmp reserved set", badBMP},
		{"bmp size too small", shortBMP},
		{"tiff offset < 8", []byte("II*\x00\x04\x00\x00\x00")},
		{"zip truncated header", docx[:20]},
		{"zip header without its name", docx[:31]},
		{"zip header zero name", cat([]byte("PK\x03\x04"), make([]byte, 26))},
		{"empty zip truncated", []byte("PK\x05\x06\x00\x00")},
		{"empty zip with entries", cat([]byte("PK\x05\x06"), make([]byte, 4), le16(1), le16(1), make([]byte, 10))},
		{"gzip reserved flags", []byte("\x1f\x8b\x08\xe0\x00\x00\x00\x00\x00\x03")},
		{"gzip other method", []byte("\x1f\x8b\x07\x00\x00\x00\x00\x00\x00\x03")},
		{"7z truncated", []byte("7z\xbc\xaf\x27")},
		{"bzip2 bad block", []byte("BZh91AY&SX\x00\x00")},
		{"bzip2 bad level", []byte("BZh01AY&SY\x00\x00")},
		{"zstd reserved bit", []byte("\x28\xb5\x2f\xfd\x08\x00")},
		{"id3 bad version", []byte("ID3\x05\x00\x00\x00\x00\x00\x00")},
		{"id3 bad size", []byte("ID3\x04\x00\x00\x00\x80\x00\x00")},
		{"id3 word", []byte("ID3 is a tag format")},
		{"ogg version 1", []byte("OggS\x01\x02" + strings.Repeat("\x00", 30))},
		{"ogg truncated", oggPage(opusHead())[:26]},
		{"ogg not first page", func() []byte { p := oggPage(opusHead()); p[5] = 0; return p }()},
		{"flac without streaminfo", []byte("fLaC\x84\x00\x00\x22")},
		{"ebml unknown doc type", ebml("mpeg")},
		{"ftyp size not a multiple of 4", cat(be32(18), []byte("ftypisom"), make([]byte, 10))},
		{"quicktime atom without a child", cat(be32(16), []byte("moov"), []byte{1}, make([]byte, 7))},
		{"quicktime atom too small", cat(be32(4), []byte("moov"), make([]byte, 8))},
		{"quicktime other atom", cat(be32(16), []byte("junk"), make([]byte, 8))},
		{"id3 revision 1", []byte("ID3\x04\x01\x00\x00\x00\x00\x10")},
		{"id3 empty tag", []byte("ID3\x04\x00\x00\x00\x00\x00\x00")},
		{"ftyp bad size", cat(be32(7), []byte("ftypisom"), make([]byte, 8))},
		{"mpeg free bitrate", []byte{0xff, 0xfb, 0x00, 0x00}},
		{"mpeg bad bitrate", []byte{0xff, 0xfb, 0xf0, 0x00}},
		{"mpeg reserved version", []byte{0xff, 0xeb, 0x90, 0x00}},
		{"mpeg reserved layer", []byte{0xff, 0xf9, 0x90, 0x00}},
		{"mpeg reserved rate", []byte{0xff, 0xfb, 0x9c, 0x00}},
		{"mpeg reserved emphasis", []byte{0xff, 0xfb, 0x90, 0x02}},
		{"mpeg second frame missing", append(slices.Clone(mp3[:417]), make([]byte, 417)...)},
		{"mpeg second frame other rate", append(slices.Clone(mp3[:417]), 0xff, 0xfb, 0x94, 0x64)},
		{"adts bad rate", []byte{0xff, 0xf1, 0x7c, 0x80, 0x02, 0x9f, 0xfc}},
		{"adts short length", []byte{0xff, 0xf1, 0x50, 0x80, 0x00, 0x1f, 0xfc}},
		{"tar bad checksum", func() []byte { b := tarArchive(t); b[0] ^= 1; return b }()},
		{"wasm version 2", []byte("\x00asm\x02\x00\x00\x00")},
	}
	r := rand.New(rand.NewPCG(42, 42))
	for i := range 20 {
		b := make([]byte, HeadSize)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		tests = append(tests, struct {
			name string
			head []byte
		}{"random " + string(rune('a'+i)), b})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := Detect(tt.head); ok || got != (Type{}) {
				t.Fatalf("Detect = %+v, %v; want nothing", got, ok)
			}
		})
	}
}

// TestDetectTruncatedHeads cuts every test file at every length up to 600
// bytes: Detect must not panic, and what it reports must be signed.
func TestDetectTruncatedHeads(t *testing.T) {
	for _, tt := range testFiles(t) {
		for n := range min(len(tt.file), 600) + 1 {
			head := tt.file[:n]
			if got, ok := Detect(head); ok && !signed(got, head) {
				t.Fatalf("%s[:%d]: Detect = %+v without its signature", tt.name, n, got)
			}
		}
	}
}

func prefix(s string) func([]byte) bool {
	return func(h []byte) bool { return bytes.HasPrefix(h, []byte(s)) }
}

func at(off int, s string) func([]byte) bool {
	return func(h []byte) bool { return len(h) >= off+len(s) && string(h[off:off+len(s)]) == s }
}

func anyOf(fs ...func([]byte) bool) func([]byte) bool {
	return func(h []byte) bool {
		for _, f := range fs {
			if f(h) {
				return true
			}
		}
		return false
	}
}

func allOf(fs ...func([]byte) bool) func([]byte) bool {
	return func(h []byte) bool {
		for _, f := range fs {
			if !f(h) {
				return false
			}
		}
		return true
	}
}

func contains(s string) func([]byte) bool {
	return func(h []byte) bool { return bytes.Contains(h, []byte(s)) }
}

// frameSync: an MPEG audio or ADTS sync word at offset 0.
func frameSync(h []byte) bool { return len(h) >= 2 && h[0] == 0xff && h[1]&0xe0 == 0xe0 }

func ftypBrand(brands ...string) func([]byte) bool {
	fs := make([]func([]byte) bool, len(brands))
	for i, b := range brands {
		fs[i] = at(8, b)
	}
	return allOf(at(4, "ftyp"), anyOf(fs...))
}

func oggCodec(codec string) func([]byte) bool {
	return allOf(prefix("OggS"), contains(codec))
}

var opc = anyOf(contains("[Content_Types].xml"), contains("_rels/.rels"))

// opcOrFirst: an OPC marker, or a first entry an Office package starts with.
var opcOrFirst = anyOf(opc, at(30, "_rels/"), at(30, "docProps/"), at(30, "customXml/"), at(30, "word/"), at(30, "xl/"), at(30, "ppt/"))

// signatures restates, independently of the code under test, the bytes each
// type's signature puts at a fixed place: the fuzz target holds every
// detection to them.
var signatures = map[string]func([]byte) bool{
	"PDF":                       prefix("%PDF-"),
	"PNG image":                 prefix("\x89PNG\r\n\x1a\n"),
	"JPEG image":                prefix("\xff\xd8\xff"),
	"GIF image":                 anyOf(prefix("GIF87a"), prefix("GIF89a")),
	"WebP image":                allOf(prefix("RIFF"), at(8, "WEBP")),
	"BMP image":                 allOf(prefix("BM"), at(6, "\x00\x00\x00\x00")),
	"TIFF image":                anyOf(prefix("II*\x00"), prefix("MM\x00*")),
	"HEIC image":                ftypBrand("heic", "heix"),
	"HEIF image":                ftypBrand("mif1", "heim", "heis", "avic"),
	"HEIC image sequence":       ftypBrand("hevc", "hevx"),
	"HEIF image sequence":       ftypBrand("msf1", "hevm", "hevs", "avcs"),
	"AVIF image":                ftypBrand("avif", "avis"),
	"ZIP archive":               anyOf(prefix("PK\x03\x04"), prefix("PK\x05\x06")),
	"Word document":             allOf(prefix("PK\x03\x04"), opcOrFirst, contains("word/")),
	"Excel workbook":            allOf(prefix("PK\x03\x04"), opcOrFirst, contains("xl/")),
	"PowerPoint presentation":   allOf(prefix("PK\x03\x04"), opcOrFirst, contains("ppt/")),
	"OpenDocument text":         allOf(prefix("PK\x03\x04"), at(30, "mimetypeapplication/vnd.oasis.opendocument.text")),
	"OpenDocument spreadsheet":  allOf(prefix("PK\x03\x04"), at(30, "mimetypeapplication/vnd.oasis.opendocument.spreadsheet")),
	"OpenDocument presentation": allOf(prefix("PK\x03\x04"), at(30, "mimetypeapplication/vnd.oasis.opendocument.presentation")),
	"EPUB book":                 allOf(prefix("PK\x03\x04"), at(30, "mimetypeapplication/epub+zip")),
	"gzip archive":              prefix("\x1f\x8b\x08"),
	"7z archive":                prefix("7z\xbc\xaf\x27\x1c"),
	"RAR archive":               prefix("Rar!\x1a\x07"),
	"bzip2 archive":             prefix("BZh"),
	"xz archive":                prefix("\xfd7zXZ\x00"),
	"Zstandard archive":         prefix("\x28\xb5\x2f\xfd"),
	"tar archive":               at(257, "ustar"),
	"MP3 audio":                 anyOf(prefix("ID3"), allOf(frameSync, func(h []byte) bool { return h[1]>>1&3 == 1 })),
	"MPEG audio":                allOf(frameSync, func(h []byte) bool { return h[1]>>1&3 >= 2 }),
	"AAC audio":                 anyOf(allOf(prefix("ID3"), contains("\xff")), allOf(frameSync, func(h []byte) bool { return h[1]&6 == 0 })),
	"WAV audio":                 allOf(prefix("RIFF"), at(8, "WAVE")),
	"FLAC audio":                anyOf(prefix("fLaC"), allOf(prefix("ID3"), contains("fLaC"))),
	"Ogg media":                 prefix("OggS"),
	"Ogg Vorbis audio":          oggCodec("\x01vorbis"),
	"Opus audio":                oggCodec("OpusHead"),
	"Ogg FLAC audio":            oggCodec("\x7fFLAC"),
	"Speex audio":               oggCodec("Speex   "),
	"Ogg video":                 anyOf(oggCodec("\x80theora"), oggCodec("fishead\x00"), oggCodec("\x01video\x00\x00\x00")),
	"M4A audio":                 ftypBrand("M4A ", "M4B ", "M4P ", "F4A ", "F4B ", "MSNV", "NDAS"),
	"MP4 video":                 at(4, "ftyp"),
	"M4V video":                 ftypBrand("M4V ", "M4VH", "M4VP"),
	"QuickTime video": anyOf(ftypBrand("qt  ", "mqt "), prefix("\x00\x00\x00\x08wide"),
		at(4, "moov"), at(4, "mdat"), at(4, "free"), at(4, "skip"), at(4, "pnot")),
	"3GP video":              ftypBrand("3gp1", "3gp2", "3gp3", "3gp4", "3gp5", "3gp6", "3gp7", "3gs7", "3ge6", "3ge7", "3gg6"),
	"3G2 video":              ftypBrand("3g24", "3g25", "3g26", "3g2a", "3g2b", "3g2c", "KDDI"),
	"Motion JPEG 2000 video": ftypBrand("mj2s", "mjp2", "MFSM", "MGSV"),
	"AVI video":              allOf(prefix("RIFF"), at(8, "AVI ")),
	"WebM video":             allOf(prefix("\x1a\x45\xdf\xa3"), contains("\x42\x82\x84webm")),
	"Matroska video":         allOf(prefix("\x1a\x45\xdf\xa3"), contains("\x42\x82\x88matroska")),
	"SQLite database":        prefix("SQLite format 3\x00"),
	"WebAssembly module":     prefix("\x00asm\x01\x00\x00\x00"),
}

// signed reports whether head carries ty's signature per the table above.
func signed(ty Type, head []byte) bool {
	f, ok := signatures[ty.Kind]
	return ok && f(head) && slices.Contains(allTypes, ty)
}

// FuzzDetect: Detect never panics, and reports only listed types whose
// signature bytes are present where they belong.
func FuzzDetect(f *testing.F) {
	for _, tt := range testFiles(f) {
		f.Add(tt.file[:min(len(tt.file), HeadSize)])
	}
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, head []byte) {
		ty, ok := Detect(head)
		if !ok {
			if ty != (Type{}) {
				t.Fatalf("Detect = %+v, false", ty)
			}
			return
		}
		if !signed(ty, head) {
			t.Fatalf("Detect(%q) = %+v without its signature", head, ty)
		}
	})
}

func TestDetectDoesNotAllocate(t *testing.T) {
	for _, tt := range testFiles(t) {
		head := tt.file[:min(len(tt.file), HeadSize)]
		if n := testing.AllocsPerRun(10, func() { Detect(head) }); n != 0 {
			t.Errorf("%s: Detect allocates %v times", tt.name, n)
		}
	}
}

func BenchmarkDetect(b *testing.B) {
	files := testFiles(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, tt := range files {
			Detect(tt.file[:min(len(tt.file), HeadSize)])
		}
	}
}
