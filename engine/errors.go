package engine

import (
	"errors"

	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

// Errors the engine returns or reports, matchable with errors.Is.
var (
	// ErrBadJSON is wrapped by Transform's error for input that is not
	// JSON; the message names the byte offset.
	ErrBadJSON = jsonwalk.ErrBadJSON
	// ErrTooDeep is wrapped by a Doc's Err when the document nests deeper
	// than the engine's MaxDepth (Config.MaxDepth, DefaultMaxDepth).
	ErrTooDeep = jsonwalk.ErrTooDeep
	// ErrClosed is returned by Transform after Close.
	ErrClosed = errors.New("engine: closed")
	// ErrSchemaMismatch is wrapped by the *RewriteError (step "schema")
	// that Result.Failures carries for a rewritten value the tool's
	// outputSchema does not accept.
	ErrSchemaMismatch = errors.New("rewritten value does not match the tool's outputSchema")
	// ErrFailuresElided is wrapped by the one failure that counts the
	// failures of a step past the first few.
	ErrFailuresElided = errors.New("failures elided")

	// The errors below a rewrite can fail with; they reach listeners inside
	// a layer_failed event and callers inside a *RewriteError.

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
