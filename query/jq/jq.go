// Package jq runs jq programs for query's JQ mode with gojq, each in a
// child process whose memory the kernel caps.
//
// gojq compiles jq's operators and builtins to functions a caller cannot
// wrap, so nothing can check the size of a string or array before
// "x" * 1e9 or [range(1e8)] allocates it, and a program's allocations
// can only be stopped from outside it: a heap watch in the same process
// let eight such programs at once take 3.2 GB and kill it. The child is
// this same binary run again (Run), selected by an environment variable
// in this package's init, so any binary or test binary that links
// package jq serves as its own child; it caps its memory before it reads
// any input (on Linux a heap reserved up front and RLIMIT_AS over it:
// see capMemory).
//
// The package lives apart from package query so that a host that runs
// no jq programs links neither gojq nor its package initialisation.
package jq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/query"
)

// envChild selects the child: a process started with it set to the
// memory cap in bytes runs one program and exits, before main.
const envChild = "MCPX_JQ_CHILD"

// childProcs is the child's GOMAXPROCS: gojq runs on one goroutine, and
// each OS thread's stack counts in the child's capped memory.
const childProcs = "2"

// exitSetup is the child's exit code when it could not serve at all (why
// on stderr).
const exitSetup = 3

// stderrKept is how much of a child's stderr is kept: the runtime's
// "fatal error" line comes first.
const stderrKept = 4 << 10

// request is the first line of the child's stdin; the input follows.
type request struct {
	Program string `json:"program"`
	// TimeoutMS is the caller's time left: the child stops itself then,
	// should it outlive its parent's kill.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	MaxOutput int   `json:"max_output"`
}

// response is the child's stdout: the answer, or the error and its kind.
type response struct {
	query.JQAnswer
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// The kinds of a child's error.
const (
	kindProgram = "program" // the program does not compile, or fails
	kindInput   = "input"   // the input is not JSON
	kindTimeout = "timeout" // the child's own deadline passed
)

// Run runs program over each JSON value of input in a child process (this
// binary again) whose memory is capped at lim.MaxMemory, killed when ctx
// ends. It has the type of query.JQ.
func Run(ctx context.Context, program string, input io.Reader, lim query.JQLimits) (query.JQAnswer, error) {
	req := request{Program: program, MaxOutput: lim.MaxOutput}
	if d, ok := ctx.Deadline(); ok {
		req.TimeoutMS = max(1, time.Until(d).Milliseconds())
	}
	head, err := json.Marshal(req)
	if err != nil {
		return query.JQAnswer{}, fmt.Errorf("jq: %w", err)
	}
	cmd := exec.CommandContext(ctx, selfPath())
	// Only what the child needs: its cap, and a runtime that stays small
	// and prints the fatal error without every goroutine's stack.
	cmd.Env = []string{envChild + "=" + strconv.FormatInt(lim.MaxMemory, 10), "GOMAXPROCS=" + childProcs, "GOTRACEBACK=none"}
	cmd.SysProcAttr = childAttr()
	cmd.Stdin = io.MultiReader(bytes.NewReader(append(head, '\n')), input)
	// JSON may escape each byte of the text in 6 ("\u0000").
	stdout := &keepFirst{max: 6*lim.MaxOutput + 4096}
	stderr := &keepFirst{max: stderrKept}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	var resp response
	if err := json.Unmarshal(stdout.buf.Bytes(), &resp); err == nil && runErr == nil && !stdout.over {
		switch resp.Kind {
		case "":
			return resp.JQAnswer, nil
		case kindProgram:
			return resp.JQAnswer, fmt.Errorf("%w: %s", query.ErrBadProgram, resp.Error)
		case kindInput:
			return resp.JQAnswer, fmt.Errorf("%w (%s)", query.ErrNotJSON, resp.Error)
		case kindTimeout:
			return resp.JQAnswer, context.DeadlineExceeded
		}
	}
	if err := ctx.Err(); err != nil {
		return query.JQAnswer{}, err
	}
	var exit *exec.ExitError
	if !errors.As(runErr, &exit) || exit.ExitCode() == exitSetup {
		return query.JQAnswer{}, fmt.Errorf("jq: the evaluator (%s) could not run: %w: %s", selfPath(), runErr, firstLine(stderr.buf.String()))
	}
	// The runtime ends a process that cannot map more memory with a fatal
	// error, or a signal when the failed mapping was its own or a
	// thread's (which one varies with where the cap was hit); a stack
	// past its limit says so; a panic is gojq's.
	why := firstLine(stderr.buf.String())
	switch {
	case strings.HasPrefix(why, "panic:"):
		return query.JQAnswer{}, fmt.Errorf("%w: the jq evaluator failed (%s)", query.ErrBadProgram, why)
	case strings.Contains(why, "stack overflow"):
		return query.JQAnswer{}, fmt.Errorf("%w: the jq program was stopped: it nested deeper than a query's stack allows; narrow it (first, limit(n; …), .[a:b])",
			query.ErrBudget)
	}
	return query.JQAnswer{}, fmt.Errorf("%w: the jq program was stopped: it needed more than the %s of memory a query may use (the evaluator ended with %q); narrow it (first, limit(n; …), .[a:b])",
		query.ErrBudget, humanize.Bytes(lim.MaxMemory), why)
}

// firstLine is the line of a child's stderr that says why it ended: the
// runtime's out-of-memory line, fatal error or signal, else the first
// line.
func firstLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, prefix := range []string{"runtime: out of memory", "fatal error:", "SIG", "panic:"} {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return strings.TrimSpace(l)
			}
		}
	}
	if lines[0] == "" {
		return "no message"
	}
	return strings.TrimSpace(lines[0])
}

// keepFirst keeps the first max bytes written to it and drops the rest,
// so that a child that writes more never blocks on its pipe.
type keepFirst struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (k *keepFirst) Write(p []byte) (int, error) {
	room := k.max - k.buf.Len()
	if len(p) > room {
		k.over = true
		k.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	k.buf.Write(p)
	return len(p), nil
}

// compile parses and compiles program.
func compile(program string) (*gojq.Code, error) {
	q, err := gojq.Parse(program)
	if err != nil {
		return nil, err
	}
	return gojq.Compile(q)
}
