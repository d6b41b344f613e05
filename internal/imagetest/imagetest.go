// Package imagetest writes large images for tests without holding their
// pixels: a PNG of any size whose pixels are all zero, its compressed
// stream written directly, so a test can hand the engine a 7000x7000
// 16-bit image (392 MB decoded) that takes 3 MB to hold and milliseconds
// to make, as an attacker's upstream would send it.
package imagetest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
)

// PNG color types (the PNG specification, IHDR).
const (
	Gray      = 0
	RGB       = 2
	Paletted  = 3
	GrayAlpha = 4
	RGBA      = 6
)

// PNG returns a w×h PNG of the given color type and bit depth (8 or 16;
// 8 for Paletted) whose every pixel is zero: black, transparent where
// there is alpha, the first palette entry.
func PNG(w, h, colorType, depth int) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = byte(depth), byte(colorType)
	chunk(&b, "IHDR", ihdr[:])
	if colorType == Paletted {
		chunk(&b, "PLTE", []byte{0x20, 0x40, 0x80})
	}
	// Each row is its filter byte (0, none) and its pixels, all zero.
	chunk(&b, "IDAT", zlibZeros(int64(h)*int64(1+w*channels(colorType)*depth/8)))
	chunk(&b, "IEND", nil)
	return b.Bytes()
}

// zlibZeros is a zlib stream of n zero bytes. compress/zlib takes 3 s to
// deflate 392 MB (97 s under the race detector); the stream of zeros is
// one block of fixed Huffman codes (RFC 1951, 3.2.6) written here
// directly: a literal zero, then copies of 258 bytes at distance 1, then
// the zeros left as literals. The Adler-32 of zeros is 1 and n mod 65521
// (RFC 1950, 8.2).
func zlibZeros(n int64) []byte {
	adler := uint32(n%65521)<<16 | 1
	var w bitWriter
	w.buf = append(w.buf, 0x78, 0x01) // deflate, 32 KiB window; no preset dictionary
	w.bits(1, 1)                      // the final block
	w.bits(1, 2)                      // fixed Huffman codes
	const (
		literalZero = 0x30 // literals 0-143: 8 bits, 00110000 + value
		length258   = 0xc5 // length code 285: 8 bits, 11000000 + 5
		endOfBlock  = 0    // code 256: 7 bits, 0000000
	)
	if n > 0 {
		w.code(literalZero, 8)
		n--
	}
	for ; n >= 258; n -= 258 {
		w.code(length258, 8)
		w.code(0, 5) // distance code 0: distance 1
	}
	for ; n > 0; n-- {
		w.code(literalZero, 8)
	}
	w.code(endOfBlock, 7)
	w.flush()
	return binary.BigEndian.AppendUint32(w.buf, adler)
}

// bitWriter packs deflate's bit stream: fields from the least
// significant bit up, Huffman codes from their most significant bit.
type bitWriter struct {
	buf   []byte
	acc   uint64
	nbits uint
}

// bits writes the low n bits of v, least significant first.
func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

// code writes an n-bit Huffman code, most significant bit first.
func (w *bitWriter) code(c uint64, n uint) {
	var r uint64
	for i := range n {
		r |= (c >> i & 1) << (n - 1 - i)
	}
	w.bits(r, n)
}

// flush writes the last partial byte.
func (w *bitWriter) flush() {
	if w.nbits > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.nbits = 0, 0
	}
}

// channels is the samples per pixel of a PNG color type.
func channels(colorType int) int {
	switch colorType {
	case RGB:
		return 3
	case GrayAlpha:
		return 2
	case RGBA:
		return 4
	}
	return 1
}

// chunk writes one PNG chunk: length, type, data, CRC of type and data.
func chunk(w io.Writer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	_, _ = w.Write(n[:])
	c := crc32.NewIEEE()
	_, _ = io.WriteString(c, typ)
	_, _ = c.Write(data)
	_, _ = io.WriteString(w, typ)
	_, _ = w.Write(data)
	binary.BigEndian.PutUint32(n[:], c.Sum32())
	_, _ = w.Write(n[:])
}
