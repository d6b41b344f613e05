// Package magic identifies a file type from the first bytes of its content.
//
// Detect reports a type only when the bytes carry that format's signature at
// the offset its specification puts it, checked further where a short
// signature alone would be weak (BMP's header fields, MPEG audio frames, a
// ZIP's local file headers, a tar header's checksum). It never guesses from
// statistics or file names: an unknown head is reported as unknown. Its
// answers agree with github.com/gabriel-vasile/mimetype on a corpus of real
// files (testdata); reference_test.go lists the few deliberate differences
// and why.
package magic

import (
	"bytes"
	"encoding/binary"
)

// HeadSize is how many leading bytes Detect wants to see. Most signatures
// sit in the first 16 bytes; the exceptions set the size. A tar header ends
// at byte 512. An OOXML file (docx, xlsx, pptx) is told from a plain ZIP by
// the names of its first entries: Office writes [Content_Types].xml and
// _rels/.rels first, each a few hundred bytes compressed, and the first
// word/, xl/ or ppt/ entry starts within the first 2 KiB; 4096 doubles that
// margin and keeps a sniff at about 5.5 KB of base64 per candidate. A shorter
// head still works for every other type.
const HeadSize = 4096

// Type names a detected file type.
type Type struct {
	MIME string // media type, e.g. "application/pdf"
	Ext  string // usual file name extension with its dot, e.g. ".pdf"
	Kind string // a human word for summaries, e.g. "PDF", "PNG image"
}

var (
	typePDF   = Type{"application/pdf", ".pdf", "PDF"}
	typePNG   = Type{"image/png", ".png", "PNG image"}
	typeJPEG  = Type{"image/jpeg", ".jpg", "JPEG image"}
	typeGIF   = Type{"image/gif", ".gif", "GIF image"}
	typeWebP  = Type{"image/webp", ".webp", "WebP image"}
	typeBMP   = Type{"image/bmp", ".bmp", "BMP image"}
	typeTIFF  = Type{"image/tiff", ".tif", "TIFF image"}
	typeHEIC  = Type{"image/heic", ".heic", "HEIC image"}
	typeHEIF  = Type{"image/heif", ".heif", "HEIF image"}
	typeHEICS = Type{"image/heic-sequence", ".heics", "HEIC image sequence"}
	typeHEIFS = Type{"image/heif-sequence", ".heifs", "HEIF image sequence"}
	typeAVIF  = Type{"image/avif", ".avif", "AVIF image"}

	typeZIP  = Type{"application/zip", ".zip", "ZIP archive"}
	typeDOCX = Type{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", ".docx", "Word document"}
	typeXLSX = Type{"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", ".xlsx", "Excel workbook"}
	typePPTX = Type{"application/vnd.openxmlformats-officedocument.presentationml.presentation", ".pptx", "PowerPoint presentation"}
	typeODT  = Type{"application/vnd.oasis.opendocument.text", ".odt", "OpenDocument text"}
	typeODS  = Type{"application/vnd.oasis.opendocument.spreadsheet", ".ods", "OpenDocument spreadsheet"}
	typeODP  = Type{"application/vnd.oasis.opendocument.presentation", ".odp", "OpenDocument presentation"}
	typeEPUB = Type{"application/epub+zip", ".epub", "EPUB book"}
	typeGZIP = Type{"application/gzip", ".gz", "gzip archive"}
	type7Z   = Type{"application/x-7z-compressed", ".7z", "7z archive"}
	typeRAR  = Type{"application/vnd.rar", ".rar", "RAR archive"}
	typeBZ2  = Type{"application/x-bzip2", ".bz2", "bzip2 archive"}
	typeXZ   = Type{"application/x-xz", ".xz", "xz archive"}
	typeZSTD = Type{"application/zstd", ".zst", "Zstandard archive"}
	typeTAR  = Type{"application/x-tar", ".tar", "tar archive"}

	typeMP3  = Type{"audio/mpeg", ".mp3", "MP3 audio"}
	typeMPGA = Type{"audio/mpeg", ".mpga", "MPEG audio"} // layers I and II
	typeAAC  = Type{"audio/aac", ".aac", "AAC audio"}
	typeWAV  = Type{"audio/wav", ".wav", "WAV audio"}
	typeFLAC = Type{"audio/flac", ".flac", "FLAC audio"}
	typeOgg  = Type{"application/ogg", ".ogg", "Ogg media"} // RFC 5334: codec unknown
	typeVorb = Type{"audio/ogg", ".ogg", "Ogg Vorbis audio"}
	typeOpus = Type{"audio/ogg", ".opus", "Opus audio"}
	typeOFLC = Type{"audio/ogg", ".oga", "Ogg FLAC audio"}
	typeSpx  = Type{"audio/ogg", ".spx", "Speex audio"}
	typeOGV  = Type{"video/ogg", ".ogv", "Ogg video"}
	typeM4A  = Type{"audio/mp4", ".m4a", "M4A audio"}
	typeMP4  = Type{"video/mp4", ".mp4", "MP4 video"}
	typeM4V  = Type{"video/x-m4v", ".m4v", "M4V video"}
	typeMOV  = Type{"video/quicktime", ".mov", "QuickTime video"}
	type3GP  = Type{"video/3gpp", ".3gp", "3GP video"}
	type3G2  = Type{"video/3gpp2", ".3g2", "3G2 video"}
	typeAVI  = Type{"video/x-msvideo", ".avi", "AVI video"}
	typeWebM = Type{"video/webm", ".webm", "WebM video"}
	typeMKV  = Type{"video/x-matroska", ".mkv", "Matroska video"}
	typeMJ2  = Type{"video/mj2", ".mj2", "Motion JPEG 2000 video"}

	typeSQLite = Type{"application/vnd.sqlite3", ".sqlite", "SQLite database"}
	typeWasm   = Type{"application/wasm", ".wasm", "WebAssembly module"}
)

var allTypes = []Type{
	typePDF, typePNG, typeJPEG, typeGIF, typeWebP, typeBMP, typeTIFF, typeHEIC, typeHEIF, typeHEICS, typeHEIFS, typeAVIF,
	typeZIP, typeDOCX, typeXLSX, typePPTX, typeODT, typeODS, typeODP, typeEPUB,
	typeGZIP, type7Z, typeRAR, typeBZ2, typeXZ, typeZSTD, typeTAR,
	typeMP3, typeMPGA, typeAAC, typeWAV, typeFLAC, typeOgg, typeVorb, typeOpus, typeOFLC, typeSpx, typeOGV,
	typeM4A, typeMP4, typeM4V, typeMOV, type3GP, type3G2, typeMJ2, typeAVI, typeWebM, typeMKV,
	typeSQLite, typeWasm,
}

// Types returns every type Detect can report, for documentation. The slice
// is a copy.
func Types() []Type {
	return append([]Type(nil), allTypes...)
}

// Detect identifies the type of the content that starts with head, ideally
// HeadSize bytes or all of a shorter content. It reports false when no known
// signature is present.
func Detect(head []byte) (Type, bool) {
	h := head
	if isTar(h) { // first: a tar header starts with a member's name
		return typeTAR, true
	}
	switch {
	case hasPrefix(h, "%PDF-"):
		return typePDF, true
	case hasPrefix(h, "\x89PNG\r\n\x1a\n"):
		return typePNG, true
	case hasPrefix(h, "\xff\xd8\xff"):
		return typeJPEG, true
	case hasPrefix(h, "GIF87a"), hasPrefix(h, "GIF89a"):
		return typeGIF, true
	case hasPrefix(h, "RIFF") && len(h) >= 12:
		switch string(h[8:12]) {
		case "WEBP":
			return typeWebP, true
		case "WAVE":
			return typeWAV, true
		case "AVI ":
			return typeAVI, true
		}
	case hasPrefix(h, "BM"):
		return only(typeBMP, isBMP(h))
	case hasPrefix(h, "II*\x00") && len(h) >= 8:
		return only(typeTIFF, binary.LittleEndian.Uint32(h[4:]) >= 8)
	case hasPrefix(h, "MM\x00*") && len(h) >= 8:
		return only(typeTIFF, binary.BigEndian.Uint32(h[4:]) >= 8)
	case hasPrefix(h, "PK\x03\x04"):
		return detectZIP(h)
	case hasPrefix(h, "PK\x05\x06"):
		// An empty archive: the end of central directory record alone,
		// with no disks, entries or directory.
		return only(typeZIP, len(h) >= 22 && allZero(h[4:20]))
	case hasPrefix(h, "\x1f\x8b\x08") && len(h) >= 10:
		return only(typeGZIP, h[3]&0xe0 == 0) // reserved flag bits clear
	case hasPrefix(h, "7z\xbc\xaf\x27\x1c"):
		return type7Z, true
	case hasPrefix(h, "Rar!\x1a\x07\x00"), hasPrefix(h, "Rar!\x1a\x07\x01\x00"):
		return typeRAR, true
	case hasPrefix(h, "BZh") && len(h) >= 10:
		// Block size '1'..'9', then a block (pi) or end-of-stream (sqrt pi)
		// magic.
		return only(typeBZ2, '1' <= h[3] && h[3] <= '9' &&
			(string(h[4:10]) == "\x31\x41\x59\x26\x53\x59" || string(h[4:10]) == "\x17\x72\x45\x38\x50\x90"))
	case hasPrefix(h, "\xfd7zXZ\x00"):
		return typeXZ, true
	case hasPrefix(h, "\x28\xb5\x2f\xfd") && len(h) >= 5:
		return only(typeZSTD, h[4]&0x08 == 0) // frame header's reserved bit
	case hasPrefix(h, "ID3"):
		return detectID3(h)
	case hasPrefix(h, "OggS"):
		return detectOgg(h)
	case hasPrefix(h, "fLaC"):
		return only(typeFLAC, isFLAC(h))
	case hasPrefix(h, "\x1a\x45\xdf\xa3"):
		return detectEBML(h)
	case hasPrefix(h, "SQLite format 3\x00"):
		return typeSQLite, true
	case hasPrefix(h, "\x00asm\x01\x00\x00\x00"):
		return typeWasm, true
	case len(h) >= 16 && string(h[4:8]) == "ftyp":
		return detectFtyp(h)
	case isQuickTimeAtom(h):
		return typeMOV, true
	case len(h) >= 2 && h[0] == 0xff && h[1]&0xe0 == 0xe0:
		return detectMPEGAudio(h)
	}
	return Type{}, false
}

// only returns t when ok holds.
func only(t Type, ok bool) (Type, bool) {
	if !ok {
		return Type{}, false
	}
	return t, true
}

func hasPrefix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[:len(s)]) == s
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// isBMP checks a BITMAPFILEHEADER: a file size that holds the pixel data,
// reserved fields zero, pixel data after a DIB header of a known size.
func isBMP(h []byte) bool {
	if len(h) < 18 {
		return false
	}
	size := binary.LittleEndian.Uint32(h[2:])
	reserved := binary.LittleEndian.Uint32(h[6:])
	pixels := binary.LittleEndian.Uint32(h[10:])
	dib := binary.LittleEndian.Uint32(h[14:])
	switch dib {
	case 12, 16, 40, 52, 56, 64, 108, 124:
	default:
		return false
	}
	return reserved == 0 && pixels >= 14+dib && size >= pixels
}

// detectZIP walks the local file headers in h. An archive with a word/, xl/
// or ppt/ part is OOXML when its entries also name an OPC marker
// ([Content_Types].xml or _rels/.rels) or when its first entry is one an
// Office package starts with (the markers, docProps/, customXml/ or the
// main part itself, as mimetype accepts: some writers put the parts
// first and the markers past the head). One whose first entry is a stored
// "mimetype" is OpenDocument or EPUB by its content; any other is a ZIP
// archive.
func detectZIP(h []byte) (Type, bool) {
	var opc bool
	var main Type
	off, entries := 0, 0
	for first := true; off+30 <= len(h) && hasPrefix(h[off:], "PK\x03\x04"); first = false {
		flags := binary.LittleEndian.Uint16(h[off+6:])
		method := binary.LittleEndian.Uint16(h[off+8:])
		csize := int64(binary.LittleEndian.Uint32(h[off+18:]))
		nameLen := int(binary.LittleEndian.Uint16(h[off+26:]))
		extraLen := int(binary.LittleEndian.Uint16(h[off+28:]))
		nameEnd := off + 30 + nameLen
		if nameLen == 0 || nameEnd > len(h) {
			break
		}
		entries++
		name := h[off+30 : nameEnd]
		data := nameEnd + extraLen
		if first {
			// Stands in for the markers, as mimetype has it.
			opc = isOOXMLFirstEntry(name)
		}
		switch {
		case string(name) == "[Content_Types].xml", string(name) == "_rels/.rels":
			opc = true
		case main != (Type{}):
		case hasPrefix(name, "word/"):
			main = typeDOCX
		case hasPrefix(name, "xl/"):
			main = typeXLSX
		case hasPrefix(name, "ppt/"):
			main = typePPTX
		}
		if first && string(name) == "mimetype" && method == 0 && flags&0x08 == 0 && int64(data)+csize <= int64(len(h)) {
			mt := h[data : data+int(csize)]
			for _, t := range []Type{typeODT, typeODS, typeODP, typeEPUB} {
				if string(mt) == t.MIME {
					return t, true
				}
			}
		}
		if opc && main != (Type{}) {
			return main, true
		}
		switch {
		case csize == 0xffffffff:
			// ZIP64 sizes live in the extra field; the names seen so far
			// are all there is to go on.
			off = len(h)
		case flags&0x08 != 0 && csize == 0:
			// Streamed entry: the sizes follow the data in a descriptor.
			off = skipDescriptor(h, data)
		case int64(data)+csize > int64(len(h)):
			off = len(h) // the next header lies past the head
		default:
			off = data + int(csize)
		}
	}
	// Not even one whole local header: unverified.
	return only(typeZIP, entries > 0)
}

// isOOXMLFirstEntry reports whether name is an entry an Office package
// starts with.
func isOOXMLFirstEntry(name []byte) bool {
	for _, p := range [...]string{"[Content_Types].xml", "_rels/", "docProps/", "customXml/", "word/", "xl/", "ppt/"} {
		if hasPrefix(name, p) {
			return true
		}
	}
	return false
}

// skipDescriptor finds the data descriptor of a streamed entry whose data
// starts at h[data:], and returns the offset after it, or len(h). A candidate
// counts only when its compressed size equals its distance from the data, so
// bytes inside compressed data cannot pass for it.
func skipDescriptor(h []byte, data int) int {
	for p := data; p+16 <= len(h); p++ {
		i := bytes.Index(h[p:], []byte("PK\x07\x08"))
		if i < 0 || p+i+16 > len(h) {
			break
		}
		p += i
		if int64(binary.LittleEndian.Uint32(h[p+8:])) == int64(p-data) {
			return p + 16
		}
	}
	return len(h)
}

// detectID3 checks an ID3v2 tag header and looks past the tag, when the head
// reaches that far, for the audio it labels.
func detectID3(h []byte) (Type, bool) {
	// Every published ID3v2 version has revision 0, and a tag holds at
	// least one frame, so its size is never 0.
	if len(h) < 10 || h[3] < 2 || h[3] > 4 || h[4] != 0 || h[5]&0x0f != 0 {
		return Type{}, false
	}
	size := 0
	for _, c := range h[6:10] {
		if c >= 0x80 {
			return Type{}, false // sizes are synchsafe: 7 bits a byte
		}
		size = size<<7 | int(c)
	}
	if size == 0 {
		return Type{}, false
	}
	end := 10 + size
	if h[5]&0x10 != 0 {
		end += 10 // footer
	}
	if end < len(h) {
		rest := h[end:]
		if hasPrefix(rest, "fLaC") {
			return typeFLAC, true
		}
		if _, ok := adtsFrame(rest); ok {
			return typeAAC, true
		}
	}
	return typeMP3, true
}

// detectOgg checks the first page header and names the codec from the first
// packet.
func detectOgg(h []byte) (Type, bool) {
	if len(h) < 27 || h[4] != 0 || h[5]&0x02 == 0 { // version 0, beginning of stream
		return Type{}, false
	}
	start := 27 + int(h[26])
	if start > len(h) {
		return Type{}, false
	}
	p := h[start:]
	switch {
	case hasPrefix(p, "\x01vorbis"):
		return typeVorb, true
	case hasPrefix(p, "OpusHead"):
		return typeOpus, true
	case hasPrefix(p, "\x7fFLAC"):
		return typeOFLC, true
	case hasPrefix(p, "Speex   "):
		return typeSpx, true
	case hasPrefix(p, "\x80theora"),
		hasPrefix(p, "fishead\x00"),           // Ogg Skeleton: leads a video's streams
		hasPrefix(p, "\x01video\x00\x00\x00"): // OGM video
		return typeOGV, true
	}
	return typeOgg, true
}

// isFLAC checks that a STREAMINFO block of 34 bytes comes first.
func isFLAC(h []byte) bool {
	return len(h) >= 8 && h[4]&0x7f == 0 && h[5] == 0 && h[6] == 0 && h[7] == 34
}

// detectEBML reads the DocType of an EBML header: WebM or Matroska.
func detectEBML(h []byte) (Type, bool) {
	hdr := h[4:min(len(h), 64)]
	i := bytes.Index(hdr, []byte{0x42, 0x82})
	if i < 0 || i+3 > len(hdr) || hdr[i+2]&0x80 == 0 {
		return Type{}, false
	}
	n := int(hdr[i+2] & 0x7f) // one-byte size
	doc := hdr[i+3:]
	if n > len(doc) {
		return Type{}, false
	}
	switch string(doc[:n]) {
	case "webm":
		return typeWebM, true
	case "matroska":
		return typeMKV, true
	}
	return Type{}, false
}

// detectFtyp reads the major brand of an ISO base media file's ftyp box.
// The brands and their types follow the registry at mp4ra.org as libmagic
// and gabriel-vasile/mimetype name them. Every ISO base media file is an
// MP4 file first: a well-formed ftyp box whose major brand is not listed
// (there are hundreds, and new ones keep being registered) is MP4 video.
func detectFtyp(h []byte) (Type, bool) {
	size := binary.BigEndian.Uint32(h)
	if size < 16 || size > 4096 || size%4 != 0 {
		return Type{}, false
	}
	switch string(h[8:12]) {
	case "M4A ", "M4B ", "M4P ", "F4A ", "F4B ", "MSNV", "NDAS":
		return typeM4A, true
	case "M4V ", "M4VH", "M4VP":
		return typeM4V, true
	case "qt  ", "mqt ":
		return typeMOV, true
	case "3gp1", "3gp2", "3gp3", "3gp4", "3gp5", "3gp6", "3gp7", "3gs7", "3ge6", "3ge7", "3gg6":
		return type3GP, true
	case "3g24", "3g25", "3g26", "3g2a", "3g2b", "3g2c", "KDDI":
		return type3G2, true
	case "heic", "heix":
		return typeHEIC, true
	case "hevc", "hevx":
		return typeHEICS, true
	case "mif1", "heim", "heis", "avic":
		return typeHEIF, true
	case "msf1", "hevm", "hevs", "avcs":
		return typeHEIFS, true
	case "avif", "avis":
		return typeAVIF, true
	case "mj2s", "mjp2", "MFSM", "MGSV":
		return typeMJ2, true
	}
	return typeMP4, true
}

// quickTimeAtoms are the top-level atoms a QuickTime movie from before the
// ftyp box (QuickTime 6 and older) starts with.
var quickTimeAtoms = [...]string{"moov", "mdat", "free", "skip", "pnot"}

// isQuickTimeAtom checks for a classic QuickTime movie: a top-level atom of
// a known type and a plausible size at the start, or the 8-byte "wide" atom
// that reserves room for a 64-bit mdat size.
func isQuickTimeAtom(h []byte) bool {
	if hasPrefix(h, "\x00\x00\x00\x08wide") {
		return true
	}
	// The atom's first child (or, for mdat, its data) follows; its size's
	// high byte is 0, as in libmagic's and mimetype's check.
	if len(h) < 16 || h[8] != 0 || binary.BigEndian.Uint32(h) < 8 {
		return false
	}
	for _, a := range quickTimeAtoms {
		if string(h[4:8]) == a {
			return true
		}
	}
	return false
}

// detectMPEGAudio checks an MPEG audio or ADTS frame header at h[0], and the
// next frame's header when the head reaches it.
func detectMPEGAudio(h []byte) (Type, bool) {
	if f, ok := mpegFrame(h); ok {
		if f.length+4 <= len(h) {
			g, ok := mpegFrame(h[f.length:])
			if !ok || g.version != f.version || g.layer != f.layer || g.rate != f.rate {
				return Type{}, false
			}
		}
		if f.layer == 3 {
			return typeMP3, true
		}
		return typeMPGA, true
	}
	if f, ok := adtsFrame(h); ok {
		if f.length+7 <= len(h) {
			g, ok := adtsFrame(h[f.length:])
			if !ok || g.rate != f.rate {
				return Type{}, false
			}
		}
		return typeAAC, true
	}
	return Type{}, false
}

type frame struct {
	version int // MPEG: 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5
	layer   int // MPEG: 1, 2 or 3
	rate    int // sample rate index
	length  int // bytes in the frame, header included
}

var (
	bitratesV1 = [3][15]int{ // kbit/s by layer I, II, III and index
		{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
		{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
	}
	bitratesV2 = [3][15]int{ // MPEG-2 and 2.5
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
	}
	sampleRates = [4][3]int{ // by version bits and index
		{11025, 12000, 8000},  // MPEG-2.5
		{},                    // reserved
		{22050, 24000, 16000}, // MPEG-2
		{44100, 48000, 32000}, // MPEG-1
	}
)

// mpegFrame parses an MPEG-1/2/2.5 audio frame header (ISO 11172-3, 13818-3):
// sync, a defined version and layer, a bitrate that is neither free nor bad,
// a defined sample rate and emphasis.
func mpegFrame(h []byte) (frame, bool) {
	if len(h) < 4 || h[0] != 0xff || h[1]&0xe0 != 0xe0 {
		return frame{}, false
	}
	version := int(h[1]>>3) & 3
	layer := 4 - int(h[1]>>1)&3
	bitrate := int(h[2] >> 4)
	rate := int(h[2]>>2) & 3
	pad := int(h[2]>>1) & 1
	if version == 1 || layer == 4 || bitrate == 0 || bitrate == 15 || rate == 3 || h[3]&3 == 2 {
		return frame{}, false
	}
	kbps := bitratesV2[layer-1][bitrate]
	if version == 3 {
		kbps = bitratesV1[layer-1][bitrate]
	}
	hz := sampleRates[version][rate]
	var n int
	switch {
	case layer == 1:
		n = (12*kbps*1000/hz + pad) * 4
	case layer == 3 && version != 3:
		n = 72*kbps*1000/hz + pad
	default:
		n = 144*kbps*1000/hz + pad
	}
	return frame{version: version, layer: layer, rate: rate, length: n}, true
}

// adtsFrame parses an AAC ADTS frame header (ISO 14496-3): sync, layer 0, a
// defined sampling frequency index, a frame length that holds the header.
func adtsFrame(h []byte) (frame, bool) {
	if len(h) < 7 || h[0] != 0xff || h[1]&0xf6 != 0xf0 {
		return frame{}, false
	}
	rate := int(h[2]>>2) & 0xf
	n := int(h[3]&3)<<11 | int(h[4])<<3 | int(h[5])>>5
	hdr := 7
	if h[1]&1 == 0 {
		hdr = 9 // with CRC
	}
	if rate > 12 || n < hdr {
		return frame{}, false
	}
	return frame{rate: rate, length: n}, true
}

// isTar checks a ustar header: the magic at 257 and the header checksum.
func isTar(h []byte) bool {
	if len(h) < 512 || (string(h[257:263]) != "ustar\x00" && string(h[257:265]) != "ustar  \x00") {
		return false
	}
	var sum, want int64
	for i, c := range h[:512] {
		if 148 <= i && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	field := bytes.Trim(h[148:156], " \x00")
	if len(field) == 0 {
		return false
	}
	for _, c := range field {
		if c < '0' || c > '7' {
			return false
		}
		want = want<<3 | int64(c-'0')
	}
	return sum == want
}
