#!/usr/bin/env python3
"""Post a raw MCP tool result to mcpx's POST /transform and print the
rewritten one: the engine as a service for an agent not written in Go.
Standard library only.

    MCPX_URL=http://127.0.0.1:8080 MCPX_TOKEN=... \
        python3 transform.py --server files --tool get_report result.json

Without a file it posts a sample result holding a base64 PDF; the answer
holds an artifact reference in its place, and the bytes stay in the store
(download them from the reference's "url").
"""

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


def sample_result():
    pdf = b"%PDF-1.4\n" + b"quarterly numbers " * 2000 + b"\n%%EOF\n"
    return {
        "content": [
            {"type": "text", "text": "Here is the report."},
            {
                "type": "resource",
                "resource": {
                    "uri": "file:///reports/q3.pdf",
                    "mimeType": "application/pdf",
                    "blob": base64.b64encode(pdf).decode("ascii"),
                },
            },
        ]
    }


def transform(base_url, result_bytes, server, tool, token=None, session=None, timeout=30):
    """Return the rewritten result (bytes) for one raw result (bytes)."""
    query = {"server": server, "tool": tool}
    if session:
        query["session"] = session
    url = base_url.rstrip("/") + "/transform?" + urllib.parse.urlencode(query)
    req = urllib.request.Request(url, data=result_bytes, method="POST")
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:
        retry = e.headers.get("Retry-After")
        detail = e.read().decode("utf-8", "replace").strip()
        hint = f" (retry after {retry}s)" if retry else ""
        raise SystemExit(f"mcpx answered {e.code}{hint}: {detail}")
    except urllib.error.URLError as e:
        # HTTPError is a URLError too, caught above: what is left never
        # reached mcpx (refused, unknown host, TLS), and says so in a line.
        raise SystemExit(
            f"cannot reach mcpx at {base_url}: {e.reason}; start it with "
            f"`mcpx serve --listen 127.0.0.1:8080` or set MCPX_URL"
        )
    except (TimeoutError, OSError) as e:
        raise SystemExit(f"no answer from mcpx at {base_url} within {timeout}s: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", help="a tool result as JSON (default: a sample with a PDF)")
    ap.add_argument("--url", default=os.environ.get("MCPX_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--server", default="local")
    ap.add_argument("--tool", default="")
    ap.add_argument("--session", default=None)
    args = ap.parse_args()
    if args.file:
        with open(args.file, "rb") as f:
            raw = f.read()
    else:
        raw = json.dumps(sample_result()).encode("utf-8")
    out = transform(args.url, raw, args.server, args.tool, os.environ.get("MCPX_TOKEN"), args.session)
    try:
        rewritten = json.loads(out)
    except ValueError as e:
        raise SystemExit(f"mcpx at {args.url} answered something that is not JSON ({e}): {out[:200]!r}")
    json.dump(rewritten, sys.stdout, indent=2)
    sys.stdout.write("\n")
    print(f"{len(raw)} bytes in, {len(out)} bytes out", file=sys.stderr)


if __name__ == "__main__":
    main()
