// Package jq compiles jq programs for query's JQ mode with gojq. It lives
// apart from package query because gojq's package initialisation runs in
// every process that links it: cmd/mcpx, run once per result, leaves it
// out (internal/cli/parts).
package jq

import (
	"context"
	"errors"

	"github.com/itchyny/gojq"
)

// Compile parses and compiles program; the function it returns runs it
// over one JSON value (as encoding/json decodes into any), handing each
// output's JSON encoding to each until each returns false. It returns
// the program's first error, or nil once the program halts without a
// value. It has the type of query.JQ.
func Compile(program string) (func(ctx context.Context, v any, each func([]byte) bool) error, error) {
	q, err := gojq.Parse(program)
	if err != nil {
		return nil, err
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, v any, each func([]byte) bool) error {
		iter := code.RunWithContext(ctx, v)
		for {
			r, ok := iter.Next()
			if !ok {
				return nil
			}
			if err, isErr := r.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					return nil
				}
				return err
			}
			enc, _ := gojq.Marshal(r)
			if !each(enc) {
				return nil
			}
		}
	}, nil
}
