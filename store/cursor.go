package store

import "errors"

// ErrInvalidCursor is returned by List for a cursor it did not hand out.
var ErrInvalidCursor = errors.New("store: invalid list cursor")
