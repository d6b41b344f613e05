package b64_test

import (
	"bytes"
	"fmt"
	"io"

	"github.com/mcpx-dev/mcpx/internal/b64"
	"github.com/mcpx-dev/mcpx/internal/magic"
)

// A tool result carries a PDF as base64 wrapped GitHub-style: the line breaks
// are JSON escapes inside the string. The layer filters, sniffs, validates,
// then streams the bytes.
func Example() {
	doc := []byte(`{"content":"JVBERi0xLjcK\nJSVFT0YK\n"}`)
	start := bytes.Index(doc, []byte(`:"`)) + 2
	raw := doc[start : len(doc)-2] // the string's raw bytes, without quotes

	if !b64.Looks(raw, 16) {
		return
	}
	head, err := b64.DecodeHead(raw, magic.HeadSize)
	if err != nil {
		return
	}
	t, ok := magic.Detect(head)
	fmt.Println(t.Kind, t.MIME, ok)

	info, err := b64.Parse(raw)
	fmt.Println(info.DecodedLen, info.Escaped, err)

	r, _ := b64.NewReader(raw)
	var out bytes.Buffer
	n, err := io.Copy(&out, r) // uses r.WriteTo
	fmt.Printf("%d %q %v\n", n, out.String(), err)
	// Output:
	// PDF application/pdf true
	// 15 true <nil>
	// 15 "%PDF-1.7\n%%EOF\n" <nil>
}

// Errors name the offset of the first byte that is not base64.
func ExampleParse_error() {
	_, err := b64.Parse([]byte(`QUJD\"QUJD`))
	fmt.Println(err)
	_, err = b64.Parse([]byte("QUJDQ"))
	fmt.Println(err)
	// Output:
	// b64: invalid character '"' (escaped as \") at offset 4
	// b64: truncated input: final quantum of 1 character at offset 4
}

func ExampleParse_dataURI() {
	info, err := b64.Parse([]byte(`data:application\/pdf;base64,JVBERi0=`))
	fmt.Println(info.DataURIMediaType, info.Offset, info.DecodedLen, err)
	// Output: application/pdf 29 5 <nil>
}
