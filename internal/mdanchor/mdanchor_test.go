package mdanchor

import (
	"reflect"
	"testing"
)

func TestAnchors(t *testing.T) {
	md := []byte("# mcpx\n\n## The HTTP API's limits\n\n### `serve.limits.max_sessions`\n\n" +
		"```sh\n# not a heading\n```\n\n## Install\n\n## Install\n\n#hashtag\n\n## `mcpServers.<name>.mcpx`\n")
	want := map[string]bool{
		"mcpx":                    true,
		"the-http-apis-limits":    true,
		"servelimitsmax_sessions": true,
		"install":                 true,
		"install-1":               true,
		"mcpserversnamemcpx":      true,
	}
	if got := Anchors(md); !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors = %v, want %v", got, want)
	}
}
