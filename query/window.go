package query

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
)

// readBuffer is the read size of the streaming modes (lines, grep).
const readBuffer = 1 << 20

// runLines shows lines rg.From-rg.To (1-based, inclusive) and counts them
// all in one pass.
func runLines(ctx context.Context, st store.Store, ref store.Ref, rg Range, b Budget) (Answer, error) {
	if hasExtractedText(ref.MIMEType) {
		return linesExtracted(ctx, st, ref, rg, b)
	}
	// the reader's buffer, and the count's
	release, err := b.reserve(ctx, 2*readBuffer, "a lines query")
	if err != nil {
		return Answer{}, err
	}
	defer release()
	rc, _, err := st.Get(ctx, ref.ID, nil)
	if err != nil {
		return Answer{}, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, readBuffer)
	if head, _ := br.Peek(8 << 10); !looksText(head) || binaryMIME(ref.MIMEType) {
		return Answer{}, notText(ref)
	}
	limit := b.textLimit()
	var (
		out       bytes.Buffer
		nl        int64 // newlines read so far
		off       int64 // bytes read so far
		last      byte
		inLine    bool
		shownTo   int64 // the last line shown whole
		lineStart int64 // the offset of the line being read
		cutLine   int64 // the first line, over the budget, shown cut
		done      bool
	)
	for !done {
		frag, err := br.ReadSlice('\n')
		if len(frag) > 0 {
			line := nl + 1
			if !inLine {
				lineStart = off
			}
			if !inLine && line > rg.From && rg.To != 0 && line > rg.To {
				done = true
			}
			if !done && line >= rg.From && cutLine == 0 {
				if out.Len()+len(frag) <= limit {
					out.Write(frag)
					if frag[len(frag)-1] == '\n' {
						shownTo = line
					}
				} else if line == rg.From {
					// The first line alone is over the budget: show its start.
					out.Write(cutUTF8(frag, limit-out.Len()))
					cutLine = line
					done = true
				} else {
					done = true
				}
			}
			if bytes.IndexByte(frag, '\n') >= 0 {
				nl++
			}
			last = frag[len(frag)-1]
			off += int64(len(frag))
			inLine = last != '\n'
		}
		if err == io.EOF {
			if inLine && cutLine == 0 && nl+1 >= rg.From && (rg.To == 0 || nl+1 <= rg.To) && !done {
				shownTo = nl + 1
			}
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return Answer{}, err
		}
		if err := ctx.Err(); err != nil {
			return Answer{}, err
		}
	}
	// Count the rest fast.
	buf := make([]byte, readBuffer)
	for done {
		n, err := br.Read(buf)
		nl += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if n > 0 {
			last = buf[n-1]
			off += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return Answer{}, err
		}
	}
	total := nl
	if off > 0 && last != '\n' {
		total++
	}
	if rg.From > total {
		return Answer{}, fmt.Errorf("%w: line %d: %s has %s lines", ErrOutOfRange, rg.From, ref.ID, humanize.Count(total))
	}
	a := Answer{Text: strings.TrimSuffix(out.String(), "\n"), Total: total}
	switch {
	case cutLine != 0:
		a.Text = out.String()
		next := lineStart + int64(out.Len())
		a.Cut = fmt.Sprintf("line %s is longer than the budget: its first %s bytes shown; ask for bytes %d-%d",
			humanize.Count(cutLine), humanize.Count(int64(out.Len())), next, next+int64(limit))
	case (rg.To == 0 || rg.To > shownTo) && shownTo < total:
		n := shownTo - rg.From + 1
		a.Cut = fmt.Sprintf("lines %d-%d of %s shown; ask for lines %d-%d", rg.From, shownTo, humanize.Count(total), shownTo+1, min(total, shownTo+n))
	}
	return a, nil
}

// runBytes shows bytes [rg.From, rg.To): as text when they are text, else
// as a hex dump.
func runBytes(ctx context.Context, st store.Store, ref store.Ref, rg Range, b Budget) (Answer, error) {
	size := ref.SizeBytes
	if rg.From >= size && !(size == 0 && rg.From == 0) {
		return Answer{}, fmt.Errorf("%w: byte %d: %s has %s bytes", ErrOutOfRange, rg.From, ref.ID, humanize.Count(size))
	}
	limit := int64(b.textLimit())
	// the bytes read, the text or hex dump of them, and the answer's copy
	release, err := b.reserve(ctx, 3*limit, "a bytes query")
	if err != nil {
		return Answer{}, err
	}
	defer release()
	to := rg.To
	if to == 0 || to > size {
		to = size
	}
	to = min(to, rg.From+limit)
	rc, _, err := st.Get(ctx, ref.ID, &store.Range{Offset: rg.From, Length: to - rg.From})
	if err != nil {
		return Answer{}, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Total: size}
	if looksText(data) && !binaryMIME(ref.MIMEType) {
		a.Text = string(data)
	} else {
		// A hex dump line shows 16 bytes in 68 characters.
		data = data[:min(int64(len(data)), limit/68*16)]
		a.Text = hexDump(data, rg.From)
	}
	shown := rg.From + int64(len(data))
	want := rg.To
	if want == 0 || want > size {
		want = size
	}
	if shown < want {
		a.Cut = fmt.Sprintf("bytes %d-%d of %s shown; ask for bytes %d-%d", rg.From, shown, humanize.Count(size), shown, min(size, shown+(shown-rg.From)))
	}
	return a, nil
}

// hexDump writes data as xxd does, offsets starting at base.
func hexDump(data []byte, base int64) string {
	var s strings.Builder
	for i := 0; i < len(data); i += 16 {
		row := data[i:min(i+16, len(data))]
		fmt.Fprintf(&s, "%08x: ", base+int64(i))
		for j := range 16 {
			if j < len(row) {
				fmt.Fprintf(&s, "%02x", row[j])
			} else {
				s.WriteString("  ")
			}
			if j%2 == 1 {
				s.WriteByte(' ')
			}
		}
		s.WriteByte(' ')
		for _, c := range row {
			if c < 0x20 || c > 0x7e {
				c = '.'
			}
			s.WriteByte(c)
		}
		s.WriteByte('\n')
	}
	return s.String()
}
