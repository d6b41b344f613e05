package upstream

// Bridging the other way: a 2026-07-28 upstream's input_required result
// for a 2025-11-25 (session) client. Only an upstream served statelessly
// (stateless_only.go) answers so: an initialized one asks with
// requests itself, so the session path never looks for input_required
// (it would scan every tool result on the hot path). A session client knows no
// input_required; it is asked with server-to-client requests instead. The
// gateway asks the client each of the result's inputRequests as a request
// of the call (on its stream, as an upstream's own request would be, and
// only when the client declared the capability), then retries the request
// upstream with the answers as inputResponses and the upstream's
// requestState, until the upstream's result is complete.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// maxInputRounds bounds the rounds of one call's input_required exchange.
const maxInputRounds = 16

// inputRequired reports whether res is an input_required result.
func inputRequired(res json.RawMessage) bool {
	return gjson.GetBytes(res, "resultType").String() == "input_required"
}

// fulfilForSession answers res's inputRequests through the session
// caller in ctx (asked as the shared process's requests are) and
// retries the request with again until it completes.
func (l *lanes) fulfilForSession(ctx context.Context, method string, params, res json.RawMessage, again func(json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	for round := 0; inputRequired(res); round++ {
		if round == maxInputRounds {
			return nil, fmt.Errorf("upstream[%s]: %s still asks for input after %d rounds", l.name, method, maxInputRounds)
		}
		responses := []byte(`{}`)
		var err error
		gjson.GetBytes(res, "inputRequests").ForEach(func(k, v gjson.Result) bool {
			params := json.RawMessage(v.Get("params").Raw)
			if len(params) == 0 {
				params = json.RawMessage(`{}`)
			}
			var answer json.RawMessage
			answer, err = l.h.request(ctx, v.Get("method").String(), params)
			if err != nil {
				err = fmt.Errorf("input request %q: %w", k.String(), err)
				return false
			}
			responses, _ = sjson.SetRawBytes(responses, escapePath(k.String()), answer)
			return true
		})
		if err != nil {
			return nil, err
		}
		retry, _ := sjson.SetRawBytes(append([]byte(nil), params...), "inputResponses", responses)
		if st := gjson.GetBytes(res, "requestState"); st.Exists() {
			retry, _ = sjson.SetRawBytes(retry, "requestState", []byte(st.Raw))
		} else {
			retry, _ = sjson.DeleteBytes(retry, "requestState")
		}
		if res, err = again(retry); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// escapePath makes a map key one sjson/gjson path element.
func escapePath(k string) string {
	out := make([]byte, 0, len(k))
	for i := 0; i < len(k); i++ {
		switch k[i] {
		case '.', '*', '?', '#', '|', '@', '\\', ':':
			out = append(out, '\\')
		}
		out = append(out, k[i])
	}
	return string(out)
}
