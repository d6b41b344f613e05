package imageview

// What decoding an image for a view holds, read from its header before
// any pixel is decoded: the caller reserves it from the process's memory
// budget (Plan.Need), so that concurrent images cannot together exhaust
// the machine. The byte counts follow what the standard library's and
// x/image's decoders allocate (image/png, image/jpeg, image/gif,
// x/image/webp); memory_test.go checks each against what making a view
// really allocates.

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"strings"
)

// readerSlack covers the base64 reader's buffers (internal/b64: a chunk
// of 64 KiB when the value is escaped).
const readerSlack = 128 << 10

// decoderSlack covers what a decoder holds besides its pixels: row
// buffers, an inflate window, a bufio reader, Huffman tables.
const decoderSlack = 1 << 20

// encoderSlack covers what the PNG and JPEG encoders hold besides the
// output buffer (a deflate compressor's tables, row buffers).
const encoderSlack = 2 << 20

// maxCostPixels bounds the pixel count the estimates multiply, so that no
// header makes them overflow; such an image is over any budget anyway.
const maxCostPixels = 1 << 50

// imageDecode is what decoding one image holds, read from its header.
type imageDecode struct {
	bytes int64  // the decoder's peak: pixels, planes, workspace
	what  string // how the model reads it: "7000x7000 16-bit PNG"
}

// decodeCost returns what decoding the image whose header image.DecodeConfig
// read as cfg and format holds. open reads the image's bytes from the
// start again (a JPEG's frame header sits after its metadata); encoded is
// their length.
func decodeCost(cfg image.Config, format string, open func() io.Reader, encoded int64) (imageDecode, error) {
	px := min(int64(cfg.Width)*int64(cfg.Height), maxCostPixels)
	d := imageDecode{what: fmt.Sprintf("%dx%d %s", cfg.Width, cfg.Height, strings.ToUpper(format))}
	switch format {
	case "png":
		bpp, depth := pngBytesPerPixel(cfg.ColorModel)
		d.bytes = bpp * px
		if pngInterlaced(open()) {
			// Each of the seven passes is decoded into its own image,
			// then copied into the whole one.
			d.bytes *= 2
		}
		d.what = fmt.Sprintf("%dx%d %s PNG", cfg.Width, cfg.Height, depth)
	case "jpeg":
		f, err := readJPEGFrame(open())
		if err != nil {
			return d, fmt.Errorf("reading the JPEG frame header: %w", err)
		}
		d.bytes = f.cost(cfg.Width, cfg.Height)
		if f.progressive {
			d.what = fmt.Sprintf("%dx%d progressive JPEG", cfg.Width, cfg.Height)
		}
	case "gif":
		// The first frame, one byte a pixel, within the logical screen.
		d.bytes = px
	case "webp":
		d.what = fmt.Sprintf("%dx%d WebP", cfg.Width, cfg.Height)
		switch cfg.ColorModel {
		case color.YCbCrModel:
			// Lossy: 4:2:0 planes padded to 16-pixel macroblocks.
			d.bytes = (px + 32*int64(cfg.Width+cfg.Height) + 256) * 3 / 2
		case color.NYCbCrAModel:
			// Lossy with alpha: the planes, an alpha plane, and the
			// lossless image that alpha is decoded from (below).
			d.bytes = (px+32*int64(cfg.Width+cfg.Height)+256)*3/2 + px + 8*px
		default:
			// Lossless: four bytes a pixel, and as many again when a
			// color-indexing transform unpacks them.
			d.bytes = 8 * px
		}
		// The lossy decoder reads its partitions into memory.
		d.bytes += encoded
	default:
		// A format registered later: assume the widest decode.
		d.bytes = 8 * px
	}
	d.bytes += decoderSlack
	return d, nil
}

// pngBytesPerPixel is what image/png allocates a pixel for the color
// model png.DecodeConfig reports, and the depth as the model reads it.
func pngBytesPerPixel(m color.Model) (int64, string) {
	switch m {
	case color.GrayModel:
		return 1, "8-bit grayscale"
	case color.Gray16Model:
		return 2, "16-bit grayscale"
	case color.RGBAModel, color.NRGBAModel:
		return 4, "8-bit"
	case color.RGBA64Model, color.NRGBA64Model:
		return 8, "16-bit"
	}
	if _, ok := m.(color.Palette); ok {
		return 1, "paletted"
	}
	return 8, "16-bit"
}

// pngInterlaced reads the interlace method of a PNG's IHDR, which follows
// the signature, the chunk's length and type and 12 bytes of fields.
func pngInterlaced(r io.Reader) bool {
	var h [29]byte
	_, err := io.ReadFull(r, h[:])
	return err == nil && h[28] == 1
}

// jpegFrame is what a JPEG's frame header (SOFn) says about the planes
// image/jpeg decodes it into.
type jpegFrame struct {
	progressive bool
	// sampling holds each component's horizontal and vertical sampling
	// factors.
	sampling [][2]int
	// converted: a CMYK, YCbCrK or RGB image (four components, an Adobe
	// APP14 marker, or components named R, G, B) is converted into a
	// four-byte-a-pixel image after its planes are decoded.
	converted bool
}

// errNoFrame: the markers ended before a frame header.
var errNoFrame = errors.New("no frame header before the image data")

// readJPEGFrame walks a JPEG's markers to its frame header, skipping
// segments unread (metadata may take megabytes before it).
func readJPEGFrame(r io.Reader) (jpegFrame, error) {
	var f jpegFrame
	br := bufio.NewReaderSize(r, 4096)
	var soi [2]byte
	if _, err := io.ReadFull(br, soi[:]); err != nil || soi != [2]byte{0xff, 0xd8} {
		return f, errors.New("no start of image")
	}
	for {
		c, err := br.ReadByte()
		if err != nil {
			return f, errNoFrame
		}
		if c != 0xff {
			continue // stray bytes between segments, which image/jpeg skips too
		}
		code, err := br.ReadByte()
		for err == nil && code == 0xff {
			code, err = br.ReadByte()
		}
		if err != nil {
			return f, errNoFrame
		}
		if code == 0x00 || code == 0x01 || code >= 0xd0 && code <= 0xd8 {
			continue // no length: a stuffed byte, TEM, RSTn, SOI
		}
		if code == 0xd9 || code == 0xda {
			return f, errNoFrame // EOI, SOS
		}
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return f, errNoFrame
		}
		n := int(l[0])<<8 | int(l[1]) - 2
		if n < 0 {
			return f, errors.New("a segment with a bad length")
		}
		isSOF := code >= 0xc0 && code <= 0xcf && code != 0xc4 && code != 0xc8 && code != 0xcc
		if !isSOF {
			if code == 0xee {
				f.converted = true // Adobe APP14: may say RGB or YCbCrK
			}
			if _, err := br.Discard(n); err != nil {
				return f, errNoFrame
			}
			continue
		}
		seg := make([]byte, n)
		if _, err := io.ReadFull(br, seg); err != nil || n < 6 {
			return f, errors.New("a short frame header")
		}
		nComp := int(seg[5])
		if nComp == 0 || n < 6+3*nComp {
			return f, errors.New("a short frame header")
		}
		f.progressive = code == 0xc2 || code == 0xc6 || code == 0xca || code == 0xce
		ids := ""
		for i := range nComp {
			c := seg[6+3*i:]
			ids += string(rune(c[0]))
			f.sampling = append(f.sampling, [2]int{max(int(c[1]>>4), 1), max(int(c[1]&15), 1)})
		}
		if nComp == 1 {
			f.sampling[0] = [2]int{1, 1} // image/jpeg decodes one component unsampled
		}
		f.converted = f.converted || nComp == 4 || ids == "RGB"
		return f, nil
	}
}

// cost is what image/jpeg holds decoding a w×h image of frame f: each
// component's plane, padded to whole MCUs; for a progressive image, the
// coefficients of every block (256 bytes a block of 64 pixels) kept until
// the last scan; for a converted one, the four-byte-a-pixel image.
func (f jpegFrame) cost(w, h int) int64 {
	if len(f.sampling) == 0 {
		return 0
	}
	h0, v0 := f.sampling[0][0], f.sampling[0][1] // image/jpeg sizes MCUs by the first component
	mcus := int64((w+8*h0-1)/(8*h0)) * int64((h+8*v0-1)/(8*v0))
	mcus = min(mcus, maxCostPixels/64/16)
	var planes int64
	for _, s := range f.sampling {
		planes += 64 * mcus * int64(s[0]*s[1])
	}
	n := planes
	if f.progressive {
		n += 4 * planes
	}
	if f.converted {
		n += 4 * min(int64(w)*int64(h), maxCostPixels)
	}
	return n
}

// scaleCost is what scale holds making a w×h copy of an image sh pixels
// high: its intermediate (w × sh), its copy, and the band buffers of its
// two passes (a full band and the last one each, which their scalers'
// pools keep until a garbage collection or two has run).
func scaleCost(w, h, sh int) int64 {
	rows, cols := scaleBands(w, sh)
	return 4*int64(w)*int64(sh) + 4*int64(w)*int64(h) + 2*32*int64(rows*w+cols*sh) + decoderSlack
}

// cropCost is what a w×h region copied out of a decoded image holds: four
// bytes a pixel.
func cropCost(w, h int) int64 { return 4 * int64(w) * int64(h) }
