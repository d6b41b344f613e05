package compat_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// fixtures are the files the servers read, generated per run.
type fixtures struct {
	dir, png, log, pdf string
}

func makeFixtures(t *testing.T) *fixtures {
	t.Helper()
	dir := t.TempDir()
	fx := &fixtures{dir: dir, png: filepath.Join(dir, "photo.png"), log: filepath.Join(dir, "server.log"), pdf: filepath.Join(dir, "report.pdf")}
	rng := rand.New(rand.NewPCG(1, 2))

	// A 1.4 MB PNG: noise does not compress.
	img := image.NewNRGBA(image.Rect(0, 0, 600, 590))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
	}
	img.Set(0, 0, color.NRGBA{255, 0, 0, 255})
	var pb bytes.Buffer
	if err := png.Encode(&pb, img); err != nil {
		t.Fatal(err)
	}
	write(t, fx.png, pb.Bytes())

	// A 2 MB log.
	var lb bytes.Buffer
	for i := 0; lb.Len() < 2<<20; i++ {
		fmt.Fprintf(&lb, "2026-11-23T18:%02d:%02d.%03dZ INFO request id=%d method=GET path=/api/v1/items/%d status=200 dur_ms=%d\n", i/60000%60, i/1000%60, i%1000, i, rng.IntN(100000), rng.IntN(900))
	}
	write(t, fx.log, lb.Bytes())

	write(t, fx.pdf, makePDF(300<<10, rng))
	return fx
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// makePDF returns a valid one-page PDF of about size bytes: a page whose
// content stream draws text, padded with comment lines.
func makePDF(size int, rng *rand.Rand) []byte {
	var content bytes.Buffer
	content.WriteString("BT /F1 24 Tf 72 720 Td (mcpx compatibility matrix) Tj ET\n")
	for content.Len() < size {
		fmt.Fprintf(&content, "%% padding %016x%016x\n", rng.Uint64(), rng.Uint64())
	}
	var b bytes.Buffer
	var offs []int
	obj := func(body string) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offs), body)
	}
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>")
	obj(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", content.Len(), content.Bytes()))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}
