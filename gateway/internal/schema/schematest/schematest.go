// Package schematest makes the outputSchemas the schema package's tests
// and the gateway's end-to-end tests of hostile schemas share.
package schematest

import (
	"fmt"
	"strings"
)

// FanOut is $defs a0…a7, each anyOf of branches $refs to the next, the
// last {"type":"object"}: branches^8 subschemas for one value.
func FanOut(branches int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/a0","$defs":{`)
	for i := range 8 {
		fmt.Fprintf(&b, `"a%d":{"anyOf":[`, i)
		for j := range branches {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"$ref":"#/$defs/a%d"}`, i+1)
		}
		b.WriteString(`]},`)
	}
	b.WriteString(`"a8":{"type":"object"}}}`)
	return b.String()
}
