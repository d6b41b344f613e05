package jq

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/itchyny/gojq"
)

// init turns a process that Run started into the child, before any other
// work of the binary it is part of (main, or a test binary's TestMain).
func init() {
	if limit, ok := os.LookupEnv(envChild); ok {
		os.Exit(serveChild(limit, os.Stdin, os.Stdout, os.Stderr))
	}
}

// serveChild caps this process's memory at limit bytes, then reads a
// request and the input from in, runs the program and writes the response
// to out. It returns the exit code: 0 whenever out holds a response, and
// exitSetup when it could not serve (the reason on errOut).
func serveChild(limit string, in io.Reader, out, errOut io.Writer) int {
	n, err := strconv.ParseInt(limit, 10, 64)
	if err != nil || n <= 0 {
		fmt.Fprintf(errOut, "%s=%q: want the memory cap in bytes\n", envChild, limit)
		return exitSetup
	}
	if err := capMemory(n); err != nil {
		fmt.Fprintln(errOut, err)
		return exitSetup
	}
	br := bufio.NewReaderSize(in, 64<<10)
	line, err := br.ReadBytes('\n')
	var req request
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err != nil {
		fmt.Fprintf(errOut, "read the request: %v\n", err)
		return exitSetup
	}
	ctx := context.Background()
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	if err := json.NewEncoder(out).Encode(evaluate(ctx, req, br)); err != nil {
		fmt.Fprintf(errOut, "write the response: %v\n", err)
		return exitSetup
	}
	return 0
}

// evaluate runs req.Program over each JSON value of in, in turn, keeping
// its outputs while they fit req.MaxOutput.
func evaluate(ctx context.Context, req request, in io.Reader) response {
	code, err := compile(req.Program)
	if err != nil {
		return response{Error: err.Error(), Kind: kindProgram}
	}
	var (
		out  bytes.Buffer
		resp response
	)
	dec := json.NewDecoder(in)
	for !resp.Full {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			break
		} else if err != nil {
			resp.Error, resp.Kind = err.Error(), kindInput
			break
		}
		if err := run(ctx, code, v, &out, &resp, req.MaxOutput); err != nil {
			resp.Error, resp.Kind = err.Error(), kindProgram
			if ctx.Err() != nil {
				resp.Kind = kindTimeout
			}
			break
		}
	}
	resp.Text = out.String()
	return resp
}

// run runs code over v, adding each output's JSON and a newline to out
// until one does not fit limit (only the first output is shown cut).
func run(ctx context.Context, code *gojq.Code, v any, out *bytes.Buffer, resp *response, limit int) error {
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
		enc, err := gojq.Marshal(r)
		if err != nil {
			return err
		}
		resp.Results++
		if out.Len()+len(enc)+1 > limit {
			if out.Len() == 0 {
				n := min(limit, len(enc))
				for n > 0 && n < len(enc) && !utf8.RuneStart(enc[n]) {
					n--
				}
				out.Write(enc[:n])
			}
			resp.Full = true
			return nil
		}
		out.Write(enc)
		out.WriteByte('\n')
	}
}
