package layer

import "errors"

// The errors a rewrite can fail with, matchable with errors.Is; they reach
// listeners inside a layer_failed event and callers inside an
// engine.RewriteError.
var (
	// ErrLimit is wrapped by the error of a rewrite that exceeds a bound.
	ErrLimit = errors.New("rewrite exceeds a limit")
	// ErrNoPath is wrapped by the error of a replace whose path cannot be
	// created: it runs through a string, a number or past an array's end.
	ErrNoPath = errors.New("path cannot be created")
	// ErrNoSignature: a verified base64 rewrite decoded to bytes with no
	// known file signature.
	ErrNoSignature = errors.New("no known file signature in decoded bytes")
	// ErrNotString: a base64 or text rewrite met a value that is not a string.
	ErrNotString = errors.New("value is not a string")
	// ErrBadRewrite: the rewrite itself is malformed.
	ErrBadRewrite = errors.New("malformed rewrite")
)
