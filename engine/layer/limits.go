package layer

// The bounds of the rewrite language: every number and size a layer (a
// WASM plugin above all) sends is checked before any rewrite of its answer
// applies, so no field can overflow arithmetic or buy unbounded work.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

// The defaults of a Doc, and the bounds of one Rewrite's fields.
const (
	// DefaultMaxDepth is the deepest nesting a Doc accepts unless
	// the engine's Config.MaxDepth says otherwise: Go's encoding/json accepts as much,
	// and every pass over a document stays linear below it.
	DefaultMaxDepth = 10000
	// IndexMinString is the shortest string a Doc indexes; Strings with a
	// smaller minimum walks the document again.
	IndexMinString = 256

	// MaxKeep bounds Keep and KeepLast (characters, items or members).
	MaxKeep = 1 << 24
	// MaxMinSize bounds MinSize (bytes of JSON text).
	MaxMinSize = 1 << 40
	// MaxPathComponents bounds a rewrite path's components: no document
	// the engine accepts nests deeper than DefaultMaxDepth.
	MaxPathComponents = DefaultMaxDepth
	// MaxCreatedLevels bounds the levels a replace may create under the
	// deepest existing member of its path.
	MaxCreatedLevels = 32
	// MaxValueDepth bounds the nesting of a replace's Value, so that a
	// rewrite cannot produce JSON that common parsers (Python's json stops
	// near 1,000 levels) refuse.
	MaxValueDepth = 512
	// MaxTemplateBytes bounds Summary and Filename templates.
	MaxTemplateBytes = 4096
	// MaxMIMEBytes bounds MIME.
	MaxMIMEBytes = 255
	// MaxMetaEntries bounds Meta's entries (and MaxTemplateBytes each).
	MaxMetaEntries = 32
)

// Validate checks a rewrite on its own: known action, encoding, form and
// target, a plain path, and every field within its bound. The engine runs
// it on every rewrite of a step before any of them applies.
func (rw *Rewrite) Validate() error {
	p, err := jsonwalk.ParsePath(rw.Path)
	if err != nil {
		return err
	}
	if p.Len() > MaxPathComponents {
		return fmt.Errorf("%w: path has %d components (at most %d)", ErrLimit, p.Len(), MaxPathComponents)
	}
	switch rw.Target {
	case "", TargetPayload, TargetResult:
	default:
		return fmt.Errorf("unknown target %q", rw.Target)
	}
	switch rw.Action {
	case ActionArtifact, ActionTruncate, ActionDrop:
		if rw.Splat || len(rw.Value) > 0 {
			return fmt.Errorf("value and splat belong to replace, not %s", rw.Action)
		}
	case ActionReplace:
		if err := validValue(rw.Value); err != nil {
			return err
		}
		if rw.Splat && !isArrayValue(rw.Value) {
			return errors.New("splat needs an array value")
		}
	case "":
		return errors.New("action is required")
	default:
		return fmt.Errorf("unknown action %q", rw.Action)
	}
	switch rw.Encoding {
	case "", EncodingAuto, EncodingBase64, EncodingText, EncodingJSON:
	default:
		return fmt.Errorf("unknown encoding %q", rw.Encoding)
	}
	switch rw.Form {
	case "", FormValue, FormText, FormBlock:
	default:
		return fmt.Errorf("unknown form %q", rw.Form)
	}
	if rw.Path == "" && (rw.Action == ActionDrop || rw.Form == FormBlock) {
		return errors.New("cannot drop the root or treat it as a block")
	}
	if rw.KeepLast > 0 && rw.Action != ActionTruncate {
		return errors.New("keep_last belongs to truncate")
	}
	switch {
	case rw.Keep < 0 || rw.Keep > MaxKeep:
		return fmt.Errorf("%w: keep %d (0 to %d)", ErrLimit, rw.Keep, MaxKeep)
	case rw.KeepLast < 0 || rw.KeepLast > MaxKeep:
		return fmt.Errorf("%w: keep_last %d (0 to %d)", ErrLimit, rw.KeepLast, MaxKeep)
	case rw.MinSize < 0 || rw.MinSize > MaxMinSize:
		return fmt.Errorf("%w: min_size %d (0 to %d)", ErrLimit, rw.MinSize, int64(MaxMinSize))
	case len(rw.Summary) > MaxTemplateBytes || len(rw.Filename) > MaxTemplateBytes:
		return fmt.Errorf("%w: summary and filename templates hold at most %d bytes", ErrLimit, MaxTemplateBytes)
	case len(rw.MIME) > MaxMIMEBytes || strings.ContainsAny(rw.MIME, "\r\n"):
		return fmt.Errorf("%w: mime is at most %d bytes on one line", ErrLimit, MaxMIMEBytes)
	case len(rw.Meta) > MaxMetaEntries:
		return fmt.Errorf("%w: meta holds at most %d entries", ErrLimit, MaxMetaEntries)
	}
	for k, v := range rw.Meta {
		if len(k)+len(v) > MaxTemplateBytes {
			return fmt.Errorf("%w: meta entry %q over %d bytes", ErrLimit, k, MaxTemplateBytes)
		}
	}
	return nil
}

// validValue checks a replace's value: one JSON value, nested at most
// MaxValueDepth levels.
func validValue(v []byte) error {
	depth := 0
	err := jsonwalk.Walk(v, func(vis *jsonwalk.Visit) jsonwalk.Step {
		if len(vis.Path) > depth {
			depth = len(vis.Path)
		}
		if depth > MaxValueDepth {
			return jsonwalk.Stop
		}
		return jsonwalk.Descend
	})
	if err != nil {
		return fmt.Errorf("replace needs one valid JSON value: %w", err)
	}
	if len(v) == 0 {
		return errors.New("replace needs one valid JSON value: it is empty")
	}
	if depth > MaxValueDepth {
		return fmt.Errorf("%w: replace value nests more than %d levels", ErrLimit, MaxValueDepth)
	}
	return nil
}

func isArrayValue(v []byte) bool {
	s := strings.TrimLeft(string(v), " \t\r\n")
	return strings.HasPrefix(s, "[")
}
