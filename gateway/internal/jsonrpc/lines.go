package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
)

// LineHeadBytes is how much of an over-long line ReadLine keeps: enough
// for the id of a message that starts {"jsonrpc":"2.0","id":...}.
const LineHeadBytes = 4 << 10

// ReadLine reads one line (with its '\n') into a new slice, as
// bufio.Reader.ReadBytes does, but holds at most limit bytes: a longer
// line is read to its end and dropped, and ReadLine returns its first
// LineHeadBytes bytes with over set. err is the reader's (io.EOF after a
// last line without newline).
func ReadLine(br *bufio.Reader, limit int64) (line []byte, over bool, err error) {
	frag, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		// the common case: the whole line was in the reader's buffer
		if int64(len(frag)) > limit {
			return bytes.Clone(frag[:min(len(frag), LineHeadBytes)]), true, err
		}
		return bytes.Clone(frag), false, err
	}
	full := append([]byte(nil), frag...)
	for {
		frag, err = br.ReadSlice('\n')
		if int64(len(full)+len(frag)) > limit {
			head := bytes.Clone(full[:min(len(full), LineHeadBytes)])
			full = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			return head, true, err
		}
		full = AppendCapped(full, frag, limit)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return full, false, err
		}
	}
}

// minGrow is the least capacity GrowCapped gives a buffer.
const minGrow = 512

// GrowCapped returns b with room for need bytes (need <= limit), its
// contents kept, for a message read under a cap. Capacities are limit
// halved k times, so the buffer doubles up to exactly limit: the last
// growth holds half the cap and the whole cap at once, 1.5 times the cap.
// append and bytes.Buffer grow past the cap instead and hold the old
// buffer beside the new one: reading a gzip body that inflates past a
// 32 MiB cap peaked at 3.5 times the cap (upstreamhttp's
// TestGzipBodyPeak).
func GrowCapped(b []byte, need int, limit int64) []byte {
	if need <= cap(b) {
		return b
	}
	c := limit
	for c/2 >= int64(need) && c/2 >= minGrow {
		c /= 2
	}
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// AppendCapped appends p to b, growing b with GrowCapped toward limit;
// the caller has checked that the result fits limit.
func AppendCapped(b, p []byte, limit int64) []byte {
	return append(GrowCapped(b, len(b)+len(p), limit), p...)
}

// TooLargeError describes a message over limit.
func TooLargeError(limit int64, setting string) error {
	return fmt.Errorf("a message of more than %d bytes (%s): %w", limit, setting, ErrMessageTooLarge)
}
