package artifacts

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/internal/humanize"
)

// RewriteArgs rewrites a call's arguments on the way in (docs/design.md,
// "Arguments on the way in") by the tool's options o: every string that
// is an mcpx://artifacts/{id} URI, and each value of the configured
// fields (filename, file_names) that names one of rd's artifacts by id or
// file name, becomes a capability URL or the inlined bytes; with inject
// (the tool's schema declares "username" and rd is authenticated)
// "username" is overwritten with rd's user.
func (s *Service) RewriteArgs(ctx context.Context, rd Reader, o config.ArgumentOptions, inject bool, args json.RawMessage) (json.RawMessage, error) {
	if !RewritesArgs(o, inject, args) {
		return args, nil // nothing to do: the common case stays allocation-free
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if len(bytes.TrimSpace(args)) == 0 {
		v = map[string]any{}
	} else if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: arguments are not a JSON object: %w", jsonrpc.ErrBadParams, err)
	}
	if o.Mode != config.ArgsOff {
		rw := argRewriter{s: s, rd: rd, ctx: ctx, o: o}
		for k, val := range v {
			field := slices.Contains(o.Fields, k)
			nv, err := rw.value(val, field)
			if err != nil {
				return nil, fmt.Errorf("argument %q: %w", k, err)
			}
			v[k] = nv
		}
	}
	if inject {
		v["username"] = rd.User
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("re-encode arguments: %w", err)
	}
	return out, nil
}

// RewritesArgs reports whether RewriteArgs has work to do on args: it
// then decodes them, and may read the artifacts they name.
func RewritesArgs(o config.ArgumentOptions, inject bool, args json.RawMessage) bool {
	if o.Mode == config.ArgsOff && !inject {
		return false
	}
	return inject || bytes.Contains(args, []byte(engine.URIScheme)) || mentionsField(args, o.Fields)
}

func mentionsField(args json.RawMessage, fields []string) bool {
	for _, f := range fields {
		if bytes.Contains(args, []byte(`"`+f+`"`)) {
			return true
		}
	}
	return false
}

type argRewriter struct {
	s   *Service
	rd  Reader
	ctx context.Context
	o   config.ArgumentOptions
}

// value rewrites v; field says v is the value of a configured field, whose
// strings may name artifacts by id or file name too.
func (rw argRewriter) value(v any, field bool) (any, error) {
	switch t := v.(type) {
	case string:
		return rw.str(t, field)
	case []any:
		for i, e := range t {
			nv, err := rw.value(e, field)
			if err != nil {
				return nil, err
			}
			t[i] = nv
		}
		return t, nil
	case map[string]any:
		for k, e := range t {
			nv, err := rw.value(e, false)
			if err != nil {
				return nil, err
			}
			t[k] = nv
		}
		return t, nil
	}
	return v, nil
}

func (rw argRewriter) str(sv string, field bool) (any, error) {
	if id, ok := ID(sv); ok {
		return rw.resolve(id, sv)
	}
	if !field {
		return sv, nil
	}
	if id := rw.s.find(rw.ctx, rw.rd, sv); id != "" {
		return rw.resolve(id, sv)
	}
	return sv, nil
}

// resolve renders artifact id per the tool's mode.
func (rw argRewriter) resolve(id, as string) (any, error) {
	// The caller's own scope of it: the link is signed for its session.
	held, ok, err := rw.s.holding(rw.ctx, rw.rd, id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", as, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w", as, jsonrpc.ErrForbidden)
	}
	rw.rd.Shown.Add(id)
	st := rw.s.st
	mode := rw.o.Mode
	if mode == config.ArgsURL {
		if rw.s.linker == nil {
			mode = config.ArgsBase64 // no HTTP surface to fetch from: hand over the bytes
		} else {
			u := rw.s.linker.ArtifactURL(engine.RefFromStore(held))
			if u == "" {
				return nil, fmt.Errorf("%s: no download URL could be made", as)
			}
			return u, nil
		}
	}
	rc, ref, err := st.Get(rw.ctx, id, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", as, err)
	}
	defer rc.Close()
	if ref.SizeBytes > rw.o.MaxInlineBytes {
		return nil, fmt.Errorf("%s: %s is over the %s inline limit (mcpx.tools.<tool>.arguments.max_inline_bytes)", as, humanize.Bytes(ref.SizeBytes), humanize.Bytes(rw.o.MaxInlineBytes))
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(rc, rw.o.MaxInlineBytes+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", as, err)
	}
	enc := base64.StdEncoding.EncodeToString(buf.Bytes())
	if mode == config.ArgsDataURI {
		mime := ref.MIMEType
		if mime == "" {
			mime = "application/octet-stream"
		}
		return "data:" + mime + ";base64," + enc, nil
	}
	return enc, nil
}

// find returns the id of rd's artifact whose id or file name is name, or
// "".
func (s *Service) find(ctx context.Context, rd Reader, name string) string {
	if name == "" || strings.ContainsAny(name, "\n") {
		return ""
	}
	if rd.Shown.Has(name) {
		return name
	}
	cursor := ""
	for range upstream.MaxPages {
		refs, next, err := s.list(ctx, rd, cursor)
		if err != nil {
			return ""
		}
		for _, r := range refs {
			if r.ID == name || r.Filename == name {
				return r.ID
			}
		}
		if next == "" {
			return ""
		}
		cursor = next
	}
	return ""
}
