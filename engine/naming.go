package engine

// Names and kinds the model reads: file names, human kinds of MIME types.

import (
	"mime"
	"net/url"
	"path"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine/layer"
)

// clip shortens a template value to 200 runes.
func clip(s string) string {
	const max = 200
	if len(s) > max {
		return prefixRunes([]byte(s), max) + "…"
	}
	return s
}

// uriBase is the last segment of a URI, a file name for its artifact.
func uriBase(uri string) string {
	if i := strings.LastIndexAny(uri, "/:"); i >= 0 && i+1 < len(uri) {
		return uri[i+1:]
	}
	return ""
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// kindOf names the content for summaries: "PDF", "PNG image", "Text".
func kindOf(mimeType string, enc layer.Encoding) string {
	switch {
	case strings.HasPrefix(mimeType, "application/json"):
		return "JSON"
	case strings.HasPrefix(mimeType, "text/"), enc == layer.EncodingText:
		return "Text"
	case strings.HasPrefix(mimeType, "image/"):
		return strings.ToUpper(strings.TrimPrefix(subtype(mimeType), "x-")) + " image"
	case strings.HasPrefix(mimeType, "audio/"):
		return strings.ToUpper(subtype(mimeType)) + " audio"
	case strings.HasPrefix(mimeType, "video/"):
		return strings.ToUpper(subtype(mimeType)) + " video"
	case mimeType == "application/pdf":
		return "PDF"
	}
	return "Binary content"
}

// subtype is the part of a media type after the slash.
func subtype(m string) string {
	m, _, _ = strings.Cut(m, ";")
	_, s, _ := strings.Cut(m, "/")
	return s
}

// extOf is the file extension of a media type.
func extOf(mimeType string) string {
	base, _, _ := strings.Cut(mimeType, ";")
	switch base {
	case "text/plain":
		return ".txt"
	case "application/json":
		return ".json"
	case "application/octet-stream", "":
		return ".bin"
	}
	if exts, _ := mime.ExtensionsByType(base); len(exts) > 0 {
		return exts[0]
	}
	return ".bin"
}

// defaultFilename names an artifact after its tool and key.
func defaultFilename(tool, key, ext string) string {
	name := tool
	if key != "" && key != tool {
		if name != "" {
			name += "-"
		}
		name += key
	}
	if name == "" {
		name = "artifact"
	}
	return sanitizeFilename(name) + ext
}

// safeFilename makes a rendered name a plain file name: its last path
// segment (either slash), without control characters, at most 255 bytes;
// "", "." and ".." give "".
func safeFilename(s string) string {
	s = strings.ReplaceAll(s, "\\", "/")
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(sanitizeFilename(s))
	if s == "." || s == ".." {
		return ""
	}
	if len(s) > 255 {
		s = prefixRunes([]byte(s), 200)
	}
	return s
}

// sanitizeFilename drops path separators and control characters.
func sanitizeFilename(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r < 0x20 || r == 0x7f:
			return '_'
		}
		return r
	}, s)
}

// argNameKeys are the call arguments that name what a tool returns, most
// specific first.
var argNameKeys = []string{"filename", "path", "uri", "url", "name"}

// argFilename names an artifact after the call's arguments when the result
// carries no name: read_media_file {"path": "/photos/photo.png"} stores
// photo.png. The base name of the first string argument of argNameKeys is
// used, without a URL's query or fragment; when the bytes are of a known
// binary type whose extension the name lacks, the name's extension gives
// way to the detected one (report.pdf rendered as a PNG is report.png).
func argFilename(args []byte, mimeType, ext string) string {
	if len(args) == 0 {
		return ""
	}
	for _, k := range argNameKeys {
		v := gjson.GetBytes(args, k)
		if v.Type != gjson.String {
			continue
		}
		s := v.String()
		if i := strings.IndexAny(s, "?#"); i >= 0 && strings.Contains(s, "://") {
			s = s[:i]
		}
		s = strings.TrimRight(s, "/\\")
		if i := strings.LastIndexAny(s, "/\\:"); i >= 0 {
			s = s[i+1:]
		}
		if u, err := url.PathUnescape(s); err == nil {
			s = u
		}
		s = strings.TrimSpace(sanitizeFilename(s))
		if s == "" || s == "." || s == ".." {
			continue
		}
		return withExt(s, mimeType, ext)
	}
	return ""
}

// withExt gives name the extension ext when name has none, or when the
// bytes are binary of a known type that name's extension does not denote.
func withExt(name, mimeType, ext string) string {
	have := path.Ext(name)
	if have == "" {
		if ext == ".bin" {
			return name
		}
		return name + ext
	}
	base, _, _ := strings.Cut(mimeType, ";")
	if ext == ".bin" || ext == "" || strings.HasPrefix(base, "text/") || base == "application/json" {
		return name
	}
	if t, _, _ := strings.Cut(mime.TypeByExtension(have), ";"); t == base {
		return name
	}
	return strings.TrimSuffix(name, have) + ext
}
