package layer

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

// TestValidateReplaceValueWrapsTheParser: a replace whose value is not
// one JSON value is refused with the parser's error wrapped, so a caller
// can tell bad JSON from a value over a limit.
func TestValidateReplaceValueWrapsTheParser(t *testing.T) {
	for _, v := range []string{"", `{"a":`, `1 2`} {
		err := (&Rewrite{Action: ActionReplace, Path: "a", Value: json.RawMessage(v)}).Validate()
		if !errors.Is(err, jsonwalk.ErrBadJSON) {
			t.Errorf("replace with value %q: %v, want jsonwalk.ErrBadJSON wrapped", v, err)
		}
	}
}
