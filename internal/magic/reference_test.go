package magic

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gabriel-vasile/mimetype"
)

// realFiles are the files in testdata, made by real encoders and archivers
// (testdata/make.sh, testdata/README.md), with the type each must get.
var realFiles = map[string]Type{
	"image.bmp":           typeBMP,
	"image.tiff":          typeTIFF,
	"image-lossy.webp":    typeWebP,
	"image-lossless.webp": typeWebP,
	"image.heic":          typeHEIC,
	"image.avif":          typeAVIF,
	"audio-frames.mp3":    typeMP3,
	"audio-id3.mp3":       typeMP3,
	"audio-mpeg2.mp3":     typeMP3,
	"audio.mp2":           typeMPGA,
	"audio.aac":           typeAAC,
	"audio.wav":           typeWAV,
	"audio.flac":          typeFLAC,
	"audio-vorbis.ogg":    typeVorb,
	"audio.opus":          typeOpus,
	"audio-flac.oga":      typeOFLC,
	"audio.spx":           typeSpx,
	"audio.m4a":           typeM4A,
	"video.mp4":           typeMP4,
	"video.mov":           typeMOV,
	"video.m4v":           typeM4V,
	"video.3gp":           type3GP,
	"video.3g2":           type3G2,
	"video.avi":           typeAVI,
	"video.webm":          typeWebM,
	"video.mkv":           typeMKV,
	"video.ogv":           typeOGV,
	"archive.zip":         typeZIP,
	"archive.7z":          type7Z,
	"archive.xz":          typeXZ,
	"archive.zst":         typeZSTD,
	"archive.bz2":         typeBZ2,
	"archive.gz":          typeGZIP,
	"archive-gnu.tar":     typeTAR,
	"archive-pax.tar":     typeTAR,
	"doc.docx":            typeDOCX,
	"book.xlsx":           typeXLSX,
	"slides.pptx":         typePPTX,
	"doc.odt":             typeODT,
	"book.ods":            typeODS,
	"slides.odp":          typeODP,
	"book.epub":           typeEPUB,
	"db.sqlite":           typeSQLite,
	"module.wasm":         typeWasm,
}

// readRealFiles reads every file of realFiles, and fails on a file in
// testdata that the table does not list.
func readRealFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch name := e.Name(); {
		case name == "README.md", name == "make.sh":
		case realFiles[name] == (Type{}):
			t.Errorf("testdata/%s is not in realFiles", name)
		default:
			b, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			if len(b) >= 8<<10 {
				t.Errorf("testdata/%s has %d bytes; the corpus keeps files under 8 KB", name, len(b))
			}
			files[name] = b
		}
	}
	for name := range realFiles {
		if files[name] == nil {
			t.Errorf("testdata/%s is missing", name)
		}
	}
	return files
}

func TestDetectRealFiles(t *testing.T) {
	for name, b := range readRealFiles(t) {
		t.Run(name, func(t *testing.T) {
			head := b[:min(len(b), HeadSize)]
			if got, ok := Detect(head); !ok || got != realFiles[name] {
				t.Fatalf("Detect = %+v, %v; want %+v", got, ok, realFiles[name])
			}
		})
	}
}

// referenceNames are the other names the reference gives a format that
// Detect names by its registered media type.
var referenceNames = map[string][]string{
	// Apple's name for the M4A brand; audio/mp4 is RFC 4337's, and what
	// mimetype itself says for the other MPEG-4 audio brands.
	"audio/mp4": {"audio/x-m4a"},
}

// deviations are the test files on which Detect knowingly disagrees with
// mimetype: what mimetype says, and why Detect is right.
var deviations = map[string]struct{ reference, why string }{
	"aac id3": {"audio/mpeg", "mimetype reports every ID3v2-tagged file as MP3 (as WHATWG mimesniff does); " +
		"Detect reads past the tag, where ADTS frames follow"},
	"flac id3": {"audio/mpeg", "the same: after the tag comes fLaC"},
	"flac": {"application/octet-stream", "mimetype wants a metadata block after STREAMINFO; " +
		"the FLAC format lets STREAMINFO be the only one (flac --no-padding on untagged input)"},
}

// TestDetectAgreesWithReference holds Detect to github.com/gabriel-vasile/mimetype,
// the field's reference, on every real file and every test file: both must
// name the same type (mimetype's aliases count), except for the documented
// deviations, where mimetype must still say what they record.
func TestDetectAgreesWithReference(t *testing.T) {
	type file struct {
		name string
		b    []byte
	}
	var files []file
	for name, b := range readRealFiles(t) {
		files = append(files, file{"testdata/" + name, b})
	}
	for _, tt := range testFiles(t) {
		files = append(files, file{tt.name, tt.file})
	}
	checked := map[Type]bool{}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			got, ok := Detect(f.b[:min(len(f.b), HeadSize)])
			if !ok {
				t.Fatalf("Detect found nothing")
			}
			ref := mimetype.Detect(f.b)
			if d, ok := deviations[f.name]; ok {
				if ref.String() != d.reference {
					t.Fatalf("mimetype now says %s, not %s: review the deviation (%s)", ref, d.reference, d.why)
				}
				return
			}
			if !ref.Is(got.MIME) && !slices.Contains(referenceNames[got.MIME], ref.String()) {
				t.Fatalf("Detect = %s (%s); mimetype = %s (%s)", got.MIME, got.Kind, ref, ref.Extension())
			}
			checked[got] = true
		})
	}
	for _, ty := range Types() {
		if !checked[ty] {
			t.Errorf("no file of %+v was checked against the reference", ty)
		}
	}
}
