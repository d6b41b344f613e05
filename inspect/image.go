package inspect

// Images: format and pixel dimensions from the header, never the pixels.

import (
	"image"
	_ "image/gif"  // registers GIF for DecodeConfig
	_ "image/jpeg" // registers JPEG
	_ "image/png"  // registers PNG
	"io"

	_ "golang.org/x/image/bmp"  // registers BMP
	_ "golang.org/x/image/tiff" // registers TIFF
	_ "golang.org/x/image/webp" // registers WebP
)

// inspectImage reads an image's format and dimensions with
// image.DecodeConfig, which reads the header only (a JPEG's up to its
// frame header, a TIFF's IFD).
func inspectImage(r io.ReaderAt, size int64) (Summary, error) {
	s := Summary{Kind: "image"}
	cfg, format, err := image.DecodeConfig(io.NewSectionReader(r, 0, size))
	if err != nil {
		return s, err
	}
	s.Format, s.Width, s.Height = format, cfg.Width, cfg.Height
	return s, nil
}
