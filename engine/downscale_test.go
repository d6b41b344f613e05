package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/png"
	"testing"

	"github.com/mcpx-dev/mcpx/imageview"
	"github.com/mcpx-dev/mcpx/internal/imagetest"
)

// TestDownscaleReadsBase64: the engine's view reads the image as it sits
// in the result (here a data: URI) and refuses, before decoding, what its
// header says is too large.
func TestDownscaleReadsBase64(t *testing.T) {
	t.Parallel()
	var small bytes.Buffer
	if err := png.Encode(&small, image.NewGray(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	v, err := downscale(context.Background(), nil, []byte("data:image/png;base64,"+base64.StdEncoding.EncodeToString(small.Bytes())), imageview.Limits{})
	if err != nil || !bytes.Equal(v.Data, small.Bytes()) || v.Width != 40 || v.MIMEType != "image/png" {
		t.Fatalf("got %+v, %v", v, err)
	}
	huge := imagetest.PNG(30000, 30000, imagetest.RGBA, 8)
	if _, err := downscale(context.Background(), nil, []byte(base64.StdEncoding.EncodeToString(huge)), imageview.Limits{}); !errors.Is(err, ErrImageTooLarge) {
		t.Fatalf("a 30000x30000 header: got %v, want ErrImageTooLarge", err)
	}
}
