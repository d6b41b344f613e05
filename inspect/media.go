package inspect

// Audio and video: the duration, where the container states it in a few
// bytes. Supported: WAV (fmt byte rate and data size), MP3 (Xing/Info or
// VBRI frame count, else the CBR size arithmetic of the first frame's
// bitrate), MP4/M4A/MOV (the movie header, mvhd), Ogg Vorbis and Opus (the
// last page's granule position), FLAC (STREAMINFO). Anything else keeps
// its kind and format without a duration.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
)

// errMalformed is what a reader returns for bytes that do not hold what
// their signature promised; Inspect keeps the kind and drops the error.
var errMalformed = errors.New("inspect: malformed content")

// mp4Kind says whether an ISO BMFF file (ftyp at offset 4) is audio or
// video by its major brand.
func mp4Kind(h []byte) (kind, format string) {
	if len(h) < 12 {
		return "video", "mp4"
	}
	switch string(h[8:12]) {
	case "M4A ", "M4B ", "M4P ", "F4A ":
		return "audio", "m4a"
	case "qt  ":
		return "video", "mov"
	}
	if bytes.HasPrefix(h[8:12], []byte("3g")) {
		return "video", "3gp"
	}
	return "video", "mp4"
}

// inspectMedia reads the duration of a recording in format (sniffed from
// head).
func inspectMedia(r io.ReaderAt, size int64, head []byte, format, kind string) (Summary, error) {
	s := Summary{Kind: kind, Format: format}
	var ms int64
	var err error
	switch format {
	case "wav":
		ms, err = wavDuration(r, size)
	case "mp3":
		ms, err = mp3Duration(r, size, head)
	case "mp4", "m4a", "mov", "3gp":
		ms, err = mp4Duration(r, size)
	case "ogg":
		var codec string
		codec, ms, err = oggDuration(r, size, head)
		if codec != "" {
			s.Format = codec
		}
	case "flac":
		ms, err = flacDuration(head)
	}
	s.DurationMS = ms
	return s, err
}

// readAt reads exactly len(p) bytes at off.
func readAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return errMalformed
	}
	return err
}

// wavDuration walks a RIFF WAVE file's chunks for fmt's byte rate and
// data's size.
func wavDuration(r io.ReaderAt, size int64) (int64, error) {
	var byteRate uint32
	var h [16]byte
	for off, n := int64(12), 0; off+8 <= size && n < 64; n++ {
		if err := readAt(r, h[:8], off); err != nil {
			return 0, err
		}
		id, body := string(h[:4]), int64(binary.LittleEndian.Uint32(h[4:8]))
		switch id {
		case "fmt ":
			if err := readAt(r, h[:16], off+8); err != nil {
				return 0, err
			}
			byteRate = binary.LittleEndian.Uint32(h[8:12])
		case "data":
			if byteRate == 0 {
				return 0, errMalformed
			}
			// A streamed WAV says 0 or 0xFFFFFFFF: the rest of the file.
			if body == 0 || body == 0xFFFFFFFF || off+8+body > size {
				body = size - off - 8
			}
			return body * 1000 / int64(byteRate), nil
		}
		off += 8 + body + body&1
	}
	return 0, errMalformed
}

// mpegFrame is an MPEG audio frame header.
type mpegFrame struct {
	version     int // 1, 2, 25 (2.5)
	layer       int
	bitrateKbps int
	sampleRate  int
	mono        bool
}

var mpegBitrates = [2][3][16]int{
	{ // MPEG-1, layers I, II, III
		{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
		{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
	},
	{ // MPEG-2 and 2.5
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
	},
}

// parseMPEGFrame parses a frame header at b; ok is false for anything
// that is not a valid one.
func parseMPEGFrame(b []byte) (f mpegFrame, ok bool) {
	if len(b) < 4 || b[0] != 0xff || b[1]&0xe0 != 0xe0 {
		return f, false
	}
	ver, layer := (b[1]>>3)&3, (b[1]>>1)&3
	bi, si := int(b[2]>>4), int((b[2]>>2)&3)
	if ver == 1 || layer == 0 || bi == 0 || bi == 15 || si == 3 {
		return f, false
	}
	f.version = map[byte]int{0: 25, 2: 2, 3: 1}[ver]
	f.layer = 4 - int(layer)
	t := 0
	if f.version != 1 {
		t = 1
	}
	l := f.layer - 1
	if t == 1 && f.layer == 3 {
		l = 2
	}
	f.bitrateKbps = mpegBitrates[t][l][bi]
	f.sampleRate = [3]int{44100, 48000, 32000}[si]
	switch f.version {
	case 2:
		f.sampleRate /= 2
	case 25:
		f.sampleRate /= 4
	}
	f.mono = b[3]>>6 == 3
	return f, true
}

// samplesPerFrame is the samples one frame holds.
func (f mpegFrame) samplesPerFrame() int {
	switch {
	case f.layer == 1:
		return 384
	case f.layer == 2 || f.version == 1:
		return 1152
	}
	return 576
}

// mp3Duration skips an ID3v2 tag, finds the first frame and reads its
// Xing/Info or VBRI frame count; without one, the stream is taken as
// constant bitrate.
func mp3Duration(r io.ReaderAt, size int64, head []byte) (int64, error) {
	var start int64
	if len(head) >= 10 && string(head[:3]) == "ID3" {
		tag := int64(head[6]&0x7f)<<21 | int64(head[7]&0x7f)<<14 | int64(head[8]&0x7f)<<7 | int64(head[9]&0x7f)
		start = 10 + tag
		if head[5]&0x10 != 0 {
			start += 10
		}
	}
	buf := make([]byte, min(8<<10, max(size-start, 0)))
	n, err := r.ReadAt(buf, start)
	if n < 4 {
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		return 0, errMalformed
	}
	buf = buf[:n]
	for i := 0; i+4 <= len(buf); i++ {
		f, ok := parseMPEGFrame(buf[i:])
		if !ok {
			continue
		}
		frame := buf[i:]
		side := 32
		switch {
		case f.version == 1 && f.mono:
			side = 17
		case f.version != 1 && f.mono:
			side = 9
		case f.version != 1:
			side = 17
		}
		if x := 4 + side; len(frame) >= x+12 && (string(frame[x:x+4]) == "Xing" || string(frame[x:x+4]) == "Info") {
			if binary.BigEndian.Uint32(frame[x+4:x+8])&1 != 0 {
				frames := int64(binary.BigEndian.Uint32(frame[x+8 : x+12]))
				return frames * int64(f.samplesPerFrame()) * 1000 / int64(f.sampleRate), nil
			}
		}
		if v := 4 + 32; len(frame) >= v+18 && string(frame[v:v+4]) == "VBRI" {
			frames := int64(binary.BigEndian.Uint32(frame[v+14 : v+18]))
			return frames * int64(f.samplesPerFrame()) * 1000 / int64(f.sampleRate), nil
		}
		audio := size - start - int64(i)
		var tag [3]byte
		if size >= 128 && readAt(r, tag[:], size-128) == nil && string(tag[:]) == "TAG" {
			audio -= 128
		}
		return audio * 8 / int64(f.bitrateKbps), nil
	}
	return 0, errMalformed
}

// mp4Duration finds moov/mvhd among the top-level boxes and reads its
// timescale and duration.
func mp4Duration(r io.ReaderAt, size int64) (int64, error) {
	box := func(off, end int64) (typ string, body, next int64, err error) {
		var h [16]byte
		if err := readAt(r, h[:8], off); err != nil {
			return "", 0, 0, err
		}
		n, typ := int64(binary.BigEndian.Uint32(h[:4])), string(h[4:8])
		body = off + 8
		switch n {
		case 0:
			n = end - off
		case 1:
			if err := readAt(r, h[8:16], off+8); err != nil {
				return "", 0, 0, err
			}
			n, body = int64(binary.BigEndian.Uint64(h[8:16])), off+16
		}
		if n < body-off || off+n > end || n < 0 {
			return "", 0, 0, errMalformed
		}
		return typ, body, off + n, nil
	}
	find := func(typ string, off, end int64) (int64, int64, error) {
		for i := 0; off+8 <= end && i < 1024; i++ {
			t, body, next, err := box(off, end)
			if err != nil {
				return 0, 0, err
			}
			if t == typ {
				return body, next, nil
			}
			off = next
		}
		return 0, 0, errMalformed
	}
	moov, moovEnd, err := find("moov", 0, size)
	if err != nil {
		return 0, err
	}
	mvhd, _, err := find("mvhd", moov, moovEnd)
	if err != nil {
		return 0, err
	}
	var b [32]byte
	if err := readAt(r, b[:28], mvhd); err != nil {
		return 0, err
	}
	var scale, dur uint64
	if b[0] == 1 {
		if err := readAt(r, b[:32], mvhd); err != nil {
			return 0, err
		}
		scale, dur = uint64(binary.BigEndian.Uint32(b[20:24])), binary.BigEndian.Uint64(b[24:32])
	} else {
		scale, dur = uint64(binary.BigEndian.Uint32(b[12:16])), uint64(binary.BigEndian.Uint32(b[16:20]))
	}
	if scale == 0 || dur == 1<<64-1 || dur == 1<<32-1 {
		return 0, errMalformed
	}
	return int64(dur * 1000 / scale), nil
}

// oggDuration reads the codec from the first page and the granule
// position of the last page (within its last 64 kB).
func oggDuration(r io.ReaderAt, size int64, head []byte) (codec string, ms int64, err error) {
	if len(head) < 28 {
		return "", 0, errMalformed
	}
	pkt := head[27+int(head[26]):]
	var rate, preSkip int64
	switch {
	case len(pkt) >= 16 && string(pkt[:7]) == "\x01vorbis":
		codec, rate = "vorbis", int64(binary.LittleEndian.Uint32(pkt[12:16]))
	case len(pkt) >= 12 && string(pkt[:8]) == "OpusHead":
		codec, rate, preSkip = "opus", 48000, int64(binary.LittleEndian.Uint16(pkt[10:12]))
	default:
		return "", 0, nil // another codec: no duration
	}
	n := min(size, 64<<10)
	tail := make([]byte, n)
	if err := readAt(r, tail, size-n); err != nil {
		return codec, 0, err
	}
	i := bytes.LastIndex(tail, []byte("OggS"))
	if i < 0 || i+14 > len(tail) || rate == 0 {
		return codec, 0, errMalformed
	}
	granule := int64(binary.LittleEndian.Uint64(tail[i+6 : i+14]))
	if granule < preSkip {
		return codec, 0, errMalformed
	}
	return codec, (granule - preSkip) * 1000 / rate, nil
}

// flacDuration reads STREAMINFO, which must be the first metadata block.
func flacDuration(head []byte) (int64, error) {
	if len(head) < 8+18 || head[4]&0x7f != 0 {
		return 0, errMalformed
	}
	si := head[8:]
	rate := int64(si[10])<<12 | int64(si[11])<<4 | int64(si[12])>>4
	total := int64(si[13]&0x0f)<<32 | int64(binary.BigEndian.Uint32(si[14:18]))
	if rate == 0 {
		return 0, errMalformed
	}
	return total * 1000 / rate, nil
}
