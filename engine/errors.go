package engine

import (
	"errors"

	"github.com/mcpx-dev/mcpx/imageview"

	"github.com/mcpx-dev/mcpx/engine/layer"
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
	// ErrStoreWrite is wrapped by a step's failure when the store could
	// not keep a value (a full disk, an object store that is down): the
	// result holds a preview and a not_stored note in its place, as for a
	// value over a store limit, so that the result is still held to its
	// budget, and the model is told why.
	ErrStoreWrite = errors.New("engine: the artifact store could not keep a value")
	// ErrSchemaMismatch is wrapped by the *RewriteError (step "schema")
	// that Result.Failures carries for a rewritten value the tool's
	// outputSchema does not accept.
	ErrSchemaMismatch = errors.New("rewritten value does not match the tool's outputSchema")
	// ErrFailuresElided is wrapped by the one failure that counts the
	// failures of a step past the first few.
	ErrFailuresElided = errors.New("failures elided")

	// ErrSchemaNotChecked is wrapped by a SchemaValidator's error when it did
	// not check the instance because that would cost too much (a schema whose
	// references loop or fan out, a result past the validator's work or depth
	// limits) or because it failed. The engine applies Config.SchemaFallback
	// to every rewritten value, as for a mismatch, without validating again.
	ErrSchemaNotChecked = errors.New("structuredContent not checked against the outputSchema")
	// ErrImageTooLarge is wrapped by the failure of a downscaled view for
	// an original whose header declares more pixels than
	// imageview.Limits.MaxSourcePixels, or more bytes than MaxSourceBytes (it is
	// not decoded), or of which no copy fits imageview.Limits.MaxBytes.
	ErrImageTooLarge = imageview.ErrTooLarge

	// The errors below a rewrite can fail with (package layer's, named
	// here too); they reach listeners inside a layer_failed event and
	// callers inside a *RewriteError.
	ErrLimit       = layer.ErrLimit
	ErrNoPath      = layer.ErrNoPath
	ErrNoSignature = layer.ErrNoSignature
	ErrNotString   = layer.ErrNotString
	ErrBadRewrite  = layer.ErrBadRewrite
)
