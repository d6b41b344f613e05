package query

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/store"
)

// heapSample is how often a running jq program's heap growth is checked.
const heapSample = 2 * time.Millisecond

// readAll reads the whole artifact, at most b.maxInput() bytes.
func readAll(ctx context.Context, st store.Store, ref store.Ref, b Budget, mode string) ([]byte, error) {
	if ref.SizeBytes > b.maxInput() {
		return nil, fmt.Errorf("%w: %s holds %s bytes, over the %s a %s query reads; ask for grep or lines instead",
			ErrBudget, ref.ID, commas(ref.SizeBytes), commas(b.maxInput()), mode)
	}
	rc, _, err := st.Get(ctx, ref.ID, nil)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, b.maxInput()+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > b.maxInput() {
		return nil, fmt.Errorf("%w: %s holds more than the %s bytes a %s query reads", ErrBudget, ref.ID, commas(b.maxInput()), mode)
	}
	return data, nil
}

// runJSON answers a gjson path.
func runJSON(ctx context.Context, st store.Store, ref store.Ref, path string, b Budget) (Answer, error) {
	data, err := readAll(ctx, st, ref, b, "json")
	if err != nil {
		return Answer{}, err
	}
	if !gjson.ValidBytes(data) {
		if !looksText(data[:min(len(data), 8<<10)]) {
			return Answer{}, notText(ref)
		}
		return Answer{}, fmt.Errorf("%w: %s is not JSON; ask for lines or grep", ErrBadRequest, ref.ID)
	}
	res := gjson.GetBytes(data, path)
	if !res.Exists() {
		hint := ""
		if keys := gjson.GetBytes(data, "@keys"); keys.IsArray() && len(keys.Array()) > 0 {
			hint = "; the top-level keys are " + cutString(keys.Raw, 200)
		} else if root := gjson.ParseBytes(data); root.IsArray() {
			hint = fmt.Sprintf("; the top level is an array of %d (try 0 or #.KEY)", len(root.Array()))
		}
		return Answer{}, fmt.Errorf("%w: path %q matches nothing in %s%s", ErrOutOfRange, path, ref.ID, hint)
	}
	a := Answer{Text: res.Raw}
	switch {
	case res.IsArray():
		a.Total = int64(len(res.Array()))
	case res.IsObject():
		a.Total = int64(len(res.Map()))
	}
	if limit := b.textLimit(); len(a.Text) > limit {
		a.Text = string(cutUTF8([]byte(a.Text), limit))
		p := cutString(path, 40)
		a.Cut = fmt.Sprintf("the first %s of %s characters of the value shown; ask a narrower path (%s.0, %s.#, %s.@keys)",
			commas(int64(len(a.Text))), commas(int64(len(res.Raw))), p, p, p)
	}
	return a, nil
}

func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return string(cutUTF8([]byte(s), n)) + "…"
}

// runJQ runs a jq program over each JSON value in the artifact, stopping
// it at the deadline, once its output passes the budget, or once the heap
// grew by b.MaxMemory while it ran.
func runJQ(ctx context.Context, st store.Store, ref store.Ref, program string, b Budget) (Answer, error) {
	if b.JQ == nil {
		return Answer{}, fmt.Errorf("%w: this binary runs no jq programs (mcpx-server does)", ErrBadRequest)
	}
	run, err := b.JQ(program)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrBadProgram, err)
	}
	data, err := readAll(ctx, st, ref, b, "jq")
	if err != nil {
		return Answer{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := watchHeap(ctx, cancel, b.MaxMemory)
	defer stop()

	limit := b.textLimit()
	var out bytes.Buffer
	var results int64
	full := false
	dec := json.NewDecoder(bytes.NewReader(data))
	for !full {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			break
		} else if err != nil {
			if results == 0 && !looksText(data[:min(len(data), 8<<10)]) {
				return Answer{}, notText(ref)
			}
			return Answer{}, fmt.Errorf("%w: %s is not JSON (%v); ask for lines or grep", ErrBadRequest, ref.ID, err)
		}
		err := run(ctx, v, func(enc []byte) bool {
			results++
			if out.Len()+len(enc)+1 > limit {
				if out.Len() == 0 {
					out.Write(cutUTF8(enc, limit))
				}
				full = true
				return false
			}
			out.Write(enc)
			out.WriteByte('\n')
			return true
		})
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				if errors.Is(cause, ErrBudget) {
					return Answer{}, cause
				}
				return Answer{}, fmt.Errorf("%w: the jq program ran past %v", ErrBudget, b.Timeout)
			}
			return Answer{}, fmt.Errorf("%w: %w", ErrBadProgram, err)
		}
	}
	a := Answer{Text: strings.TrimSuffix(out.String(), "\n")}
	if full {
		a.Cut = fmt.Sprintf("output cut at result %s, over the %s-character budget; narrow the program (first, limit(n; …), .[a:b])",
			commas(results), commas(int64(b.MaxChars)))
	} else {
		a.Total = results
	}
	return a, nil
}

// watchHeap cancels ctx with ErrBudget once the heap holds max bytes more
// than when it was called. The heap is the process's: work beside the
// query counts too, which errs on the side of stopping.
func watchHeap(ctx context.Context, cancel context.CancelCauseFunc, max int64) (stop func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := int64(sample[0].Value.Uint64())
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heapSample)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				metrics.Read(sample)
				if grown := int64(sample[0].Value.Uint64()) - base; grown > max {
					cancel(fmt.Errorf("%w: the jq program grew the heap by over %s bytes", ErrBudget, commas(max)))
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
