package magic_test

import (
	"fmt"

	"github.com/mcpx-dev/mcpx/internal/magic"
)

func ExampleDetect() {
	t, ok := magic.Detect([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	fmt.Println(t.Kind, t.MIME, t.Ext, ok)
	_, ok = magic.Detect([]byte("%PDF without its dash"))
	fmt.Println(ok)
	// Output:
	// PNG image image/png .png true
	// false
}
