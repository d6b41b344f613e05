// Command github is the mcpx preset for GitHub MCP servers, a WASM guest
// built with sdk/wasm-guest/go (see README.md for the tools it covers and
// ../presets.go for the build commands).
package main

import (
	"strings"

	"github.com/tidwall/gjson"

	guest "github.com/mcpx-dev/mcpx/sdk/wasm-guest/go"
)

func init() { guest.Register(transform) }

func main() {}

// Defaults of the preset's config.
const (
	// defaultTextOver: text (files, diffs, logs) longer than this many
	// bytes becomes a text artifact with a preview.
	defaultTextOver = 8192
	// defaultPreview is how many characters of such text stay inline.
	defaultPreview = 1500
)

// kind is what a tool returns, as far as this preset cares.
type kind int

const (
	other   kind = iota // left alone
	file                // get_file_contents: a file's content
	diff                // a pull request's or commit's diff / patches
	logs                // workflow job logs
	release             // releases and their assets, attachments, artifacts
)

func classify(tool string) kind {
	t := strings.ReplaceAll(strings.ToLower(tool), "-", "_")
	switch {
	case strings.Contains(t, "file_contents"), t == "get_file", strings.Contains(t, "get_file_content"):
		return file
	case strings.Contains(t, "diff"), t == "get_commit", strings.Contains(t, "pull_request_files"), strings.Contains(t, "compare"):
		return diff
	case strings.Contains(t, "log"):
		return logs
	case strings.Contains(t, "release"), strings.Contains(t, "asset"), strings.Contains(t, "artifact"), strings.Contains(t, "attachment"):
		return release
	}
	return other
}

func transform(req *guest.Request) (*guest.Response, error) {
	var out guest.Response
	k := classify(req.Tool())
	if k == other {
		return &out, nil
	}
	textOver := int(req.Config().Get("text_over").Int())
	if textOver <= 0 {
		textOver = defaultTextOver
	}
	preview := int(req.Config().Get("preview").Int())
	if preview <= 0 {
		preview = defaultPreview
	}
	repo := repoName(req)
	for _, c := range req.Candidates() {
		where := locate(req, c, repo)
		switch {
		case c.IsBinary():
			out.Add(binaryRewrite(req, c, k, where))
		case c.IsBase64() && c.Len > textOver*4/3:
			// The REST API's {"encoding":"base64","content":...} of a
			// text file: store the decoded text.
			rw := binaryRewrite(req, c, k, where)
			rw.MIME = "text/plain"
			out.Add(rw)
		case c.MIME == "text/plain" && c.Len > textOver && k != release:
			out.Add(textRewrite(req, c, k, where, preview))
		}
	}
	return &out, nil
}

// place is what a summary names: the repository and a path or name in it.
type place struct {
	repo, path string
}

func (p place) String() string {
	switch {
	case p.repo != "" && p.path != "":
		return p.repo + ":" + p.path
	case p.repo != "":
		return p.repo
	case p.path != "":
		return p.path
	}
	return "GitHub"
}

// repoName is owner/repo from the arguments, else from the payload.
func repoName(req *guest.Request) string {
	a := req.Arguments()
	owner, repo := a.Get("owner").String(), a.Get("repo").String()
	if owner != "" && repo != "" {
		return owner + "/" + repo
	}
	if fn := req.Payload().Get("repository.full_name").String(); fn != "" {
		return fn
	}
	return repo
}

// locate names the value at c: for an embedded resource its repo:// URI
// (repo://owner/repo/.../contents/path), for a payload value a sibling
// path or name (a file, an asset), else the call's path argument.
func locate(req *guest.Request, c guest.Candidate, repo string) place {
	p := place{repo: repo}
	if c.Target == guest.Result {
		parts := strings.SplitN(c.Path, ".", 3)
		if len(parts) == 3 {
			uri := req.Result().Get(parts[0] + "." + parts[1] + ".resource.uri").String()
			if r, path, ok := parseRepoURI(uri); ok {
				if p.repo == "" {
					p.repo = r
				}
				p.path = path
				return p
			}
		}
	} else {
		parent := ""
		if i := strings.LastIndexByte(c.Path, '.'); i > 0 {
			parent = c.Path[:i] + "."
		}
		pl := req.Payload()
		for _, key := range []string{"path", "name", "filename"} {
			if v := pl.Get(parent + key); v.Type == gjson.String && v.Str != "" {
				p.path = v.Str
				return p
			}
		}
	}
	a := req.Arguments()
	for _, key := range []string{"path", "filename", "name"} {
		if v := a.Get(key).String(); v != "" {
			p.path = v
			return p
		}
	}
	if n := a.Get("pullNumber").String(); n != "" {
		p.path = "#" + n
	} else if n := a.Get("pull_number").String(); n != "" {
		p.path = "#" + n
	} else if n := a.Get("job_id").String(); n != "" {
		p.path = "job " + n
	} else if n := a.Get("sha").String(); n != "" {
		p.path = n
	}
	return p
}

// parseRepoURI splits repo://owner/repo/<ref...>/contents/<path>.
func parseRepoURI(uri string) (repo, path string, ok bool) {
	rest, found := strings.CutPrefix(uri, "repo://")
	if !found {
		return "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 {
		return "", "", false
	}
	repo = parts[0] + "/" + parts[1]
	if i := strings.Index(parts[2], "contents/"); i >= 0 {
		return repo, parts[2][i+len("contents/"):], true
	}
	return repo, "", true
}

func binaryRewrite(req *guest.Request, c guest.Candidate, k kind, where place) guest.Rewrite {
	rw := guest.Rewrite{
		Path:     c.Path,
		Target:   c.Target,
		Action:   guest.Artifact,
		Encoding: guest.Base64,
		MIME:     c.MIME,
		Filename: baseName(where.path),
		Summary:  "File " + guest.QuoteName(where.String()),
		Meta:     map[string]string{"preset": "github", "repo": where.repo, "path": where.path},
	}
	if k == release {
		rw.Summary = "Release asset " + guest.QuoteName(where.String())
	}
	if c.MIME == "application/octet-stream" {
		// The bytes have no known signature: trust the server's type.
		rw.MIME = siblingType(req, c)
	}
	if c.Target == guest.Result {
		rw.InBlock()
	}
	return rw
}

// siblingType is a content_type or mimeType beside the value (a release
// asset, an embedded resource), or "".
func siblingType(req *guest.Request, c guest.Candidate) string {
	parent := ""
	if i := strings.LastIndexByte(c.Path, '.'); i > 0 {
		parent = c.Path[:i] + "."
	}
	doc := req.Payload()
	if c.Target == guest.Result {
		doc = req.Result()
	}
	for _, key := range []string{"content_type", "contentType", "mimeType", "mime_type"} {
		if v := doc.Get(parent + key).String(); v != "" && v != "application/octet-stream" {
			return v
		}
	}
	return ""
}

func textRewrite(req *guest.Request, c guest.Candidate, k kind, where place, preview int) guest.Rewrite {
	rw := guest.Rewrite{
		Path:     c.Path,
		Target:   c.Target,
		Action:   guest.Artifact,
		Encoding: guest.Text,
		MIME:     "text/plain",
		Filename: baseName(where.path),
		Keep:     preview,
		Summary:  "File " + guest.QuoteName(where.String()) + ", its first lines in the preview",
		Meta:     map[string]string{"preset": "github", "repo": where.repo, "path": where.path},
	}
	switch k {
	case diff:
		rw.MIME = "text/x-diff"
		rw.Summary = "Diff of " + guest.QuoteName(where.String()) + ", its start in the preview"
		if rw.Filename == "" || !strings.Contains(where.path, ".") {
			rw.Filename = "changes.diff"
		}
	case logs:
		rw.Summary = "Logs of " + guest.QuoteName(where.String()) + ", their start in the preview"
		if rw.Filename == "" {
			rw.Filename = "job.log"
		}
	}
	if c.Target == guest.Result {
		rw.InBlock()
	}
	return rw
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return strings.NewReplacer("{", "_", "}", "_", "\\", "_").Replace(p)
}
