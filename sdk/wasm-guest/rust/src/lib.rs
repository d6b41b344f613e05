//! Guest SDK for mcpx WASM plugins, ABI v1 (`sdk/wasm-guest/ABI.md`).
//!
//! A plugin is a `cdylib` crate with one function and one macro call:
//!
//! ```ignore
//! use mcpx_guest::{Request, Response, Rewrite};
//!
//! fn transform(req: &Request) -> Result<Response, String> {
//!     let mut out = Response::new();
//!     for c in req.candidates() {
//!         if c.mime == "application/pdf" {
//!             out.push(Rewrite::artifact(&c.path).target(&c.target).base64());
//!         }
//!     }
//!     Ok(out)
//! }
//!
//! mcpx_guest::plugin!(transform);
//! ```
//!
//! It has no dependencies and builds with Debian's rustc 1.63:
//!
//! ```text
//! rustc --target wasm32-unknown-unknown --crate-type rlib --crate-name mcpx_guest \
//!   --edition 2021 -O -C panic=abort -C target-feature=+bulk-memory src/lib.rs
//! ```

use std::fmt::Write as _;

/// The version of the contract this SDK implements.
pub const ABI_VERSION: i64 = 1;

/// A JSON value. Numbers keep their text, so nothing is lost in a round trip.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

static NULL: Value = Value::Null;

impl Value {
    /// Parses JSON text.
    pub fn parse(text: &[u8]) -> Result<Value, String> {
        let mut p = Parser { b: text, i: 0, depth: 0 };
        p.ws();
        let v = p.value()?;
        p.ws();
        if p.i != p.b.len() {
            return Err(format!("json: trailing data at byte {}", p.i));
        }
        Ok(v)
    }

    /// Reads a dotted path ("payload.items.0.name"); Null when absent.
    pub fn get(&self, path: &str) -> &Value {
        let mut cur = self;
        if path.is_empty() {
            return cur;
        }
        for key in path.split('.') {
            cur = match cur {
                Value::Object(m) => match m.iter().find(|(k, _)| k == key) {
                    Some((_, v)) => v,
                    None => return &NULL,
                },
                Value::Array(a) => match key.parse::<usize>().ok().and_then(|i| a.get(i)) {
                    Some(v) => v,
                    None => return &NULL,
                },
                _ => return &NULL,
            };
        }
        cur
    }

    /// The string, or "" for anything else.
    pub fn as_str(&self) -> &str {
        match self {
            Value::String(s) => s,
            _ => "",
        }
    }

    /// The number as an integer, or 0.
    pub fn as_i64(&self) -> i64 {
        match self {
            Value::Number(n) => n.parse::<f64>().map(|f| f as i64).unwrap_or(0),
            _ => 0,
        }
    }

    /// Whether the value is not Null.
    pub fn exists(&self) -> bool {
        !matches!(self, Value::Null)
    }

    /// A long-string stub of a skeleton: `{"$mcpx":"long_string",...}`.
    pub fn long(&self) -> Option<Candidate> {
        if self.get("$mcpx").as_str() != "long_string" {
            return None;
        }
        Some(Candidate {
            target: String::new(),
            path: String::new(),
            len: self.get("len").as_i64() as usize,
            head: self.get("head").as_str().to_string(),
            mime: self.get("mime").as_str().to_string(),
            encoding: self.get("encoding").as_str().to_string(),
        })
    }

    /// Appends the value's JSON to out.
    pub fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => out.push_str(n),
            Value::String(s) => quote_into(s, out),
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_json(out);
                }
                out.push(']');
            }
            Value::Object(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    quote_into(k, out);
                    out.push(':');
                    v.write_json(out);
                }
                out.push('}');
            }
        }
    }

    /// The value's JSON.
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write_json(&mut s);
        s
    }
}

/// Appends s as a JSON string literal.
pub fn quote_into(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// s as a JSON string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(s, &mut out);
    out
}

/// Puts a name in single quotes for a summary or filename template,
/// turning braces into parentheses so that a name such as "Q{3}" cannot be
/// read as a placeholder (Go's `guest.QuoteName`).
pub fn quote_name(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        out.push(match c {
            '{' => '(',
            '}' => ')',
            c => c,
        });
    }
    out.push('\'');
    out
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("json: {} at byte {}", what, self.i))
    }

    fn value(&mut self) -> Result<Value, String> {
        if self.i >= self.b.len() {
            return self.err("unexpected end");
        }
        match self.b[self.i] {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => Ok(Value::String(self.string()?)),
            b't' => self.word("true", Value::Bool(true)),
            b'f' => self.word("false", Value::Bool(false)),
            b'n' => self.word("null", Value::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.err("unexpected character"),
        }
    }

    fn word(&mut self, w: &str, v: Value) -> Result<Value, String> {
        if self.b[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            self.err("bad literal")
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        while self.i < self.b.len() && matches!(self.b[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
            self.i += 1;
        }
        let s = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
        if s.parse::<f64>().is_err() {
            return self.err("bad number");
        }
        Ok(Value::Number(s.to_string()))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        if self.i + 4 > self.b.len() {
            return self.err("short \\u escape");
        }
        let s = std::str::from_utf8(&self.b[self.i..self.i + 4]).map_err(|_| "json: bad \\u escape".to_string())?;
        let v = u32::from_str_radix(s, 16).map_err(|_| format!("json: bad \\u escape at byte {}", self.i))?;
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1; // opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let start = self.i;
            while self.i < self.b.len() && self.b[self.i] != b'"' && self.b[self.i] != b'\\' {
                if self.b[self.i] < 0x20 {
                    return self.err("control character in string");
                }
                self.i += 1;
            }
            out.extend_from_slice(&self.b[start..self.i]);
            if self.i >= self.b.len() {
                return self.err("unterminated string");
            }
            if self.b[self.i] == b'"' {
                self.i += 1;
                return String::from_utf8(out).map_err(|_| "json: invalid UTF-8 in string".to_string());
            }
            self.i += 1; // backslash
            if self.i >= self.b.len() {
                return self.err("unterminated escape");
            }
            let c = self.b[self.i];
            self.i += 1;
            match c {
                b'"' => out.push(b'"'),
                b'\\' => out.push(b'\\'),
                b'/' => out.push(b'/'),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'u' => {
                    let mut cp = self.hex4()?;
                    if (0xd800..0xdc00).contains(&cp) && self.b[self.i..].starts_with(b"\\u") {
                        self.i += 2;
                        let lo = self.hex4()?;
                        if (0xdc00..0xe000).contains(&lo) {
                            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        } else {
                            cp = 0xfffd;
                        }
                    }
                    let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => return self.err("bad escape"),
            }
        }
    }

    /// Skips one value without building it.
    fn skip(&mut self) -> Result<(), String> {
        let mut depth = 0usize;
        loop {
            self.ws();
            match self.b.get(self.i) {
                None => return self.err("unexpected end"),
                Some(b'"') => {
                    self.i += 1;
                    loop {
                        match self.b.get(self.i) {
                            None => return self.err("unterminated string"),
                            Some(b'\\') => self.i += 2,
                            Some(b'"') => {
                                self.i += 1;
                                break;
                            }
                            Some(_) => self.i += 1,
                        }
                    }
                }
                Some(b'{') | Some(b'[') => {
                    depth += 1;
                    self.i += 1;
                    continue;
                }
                Some(b'}') | Some(b']') => {
                    if depth == 0 {
                        return self.err("unexpected close");
                    }
                    depth -= 1;
                    self.i += 1;
                }
                Some(b',') | Some(b':') => {
                    self.i += 1;
                    continue;
                }
                Some(_) => {
                    while let Some(c) = self.b.get(self.i) {
                        if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b':') {
                            break;
                        }
                        self.i += 1;
                    }
                }
            }
            if depth == 0 {
                return Ok(());
            }
        }
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > 512 {
            return self.err("nesting too deep");
        }
        self.i += 1;
        self.ws();
        Ok(())
    }

    fn array(&mut self) -> Result<Value, String> {
        self.enter()?;
        let mut a = Vec::new();
        if self.i < self.b.len() && self.b[self.i] == b']' {
            self.i += 1;
            self.depth -= 1;
            return Ok(Value::Array(a));
        }
        loop {
            self.ws();
            a.push(self.value()?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(Value::Array(a));
                }
                _ => return self.err("expected , or ]"),
            }
        }
    }

    fn object(&mut self) -> Result<Value, String> {
        self.enter()?;
        let mut m = Vec::new();
        if self.i < self.b.len() && self.b[self.i] == b'}' {
            self.i += 1;
            self.depth -= 1;
            return Ok(Value::Object(m));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return self.err("expected a key");
            }
            let k = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return self.err("expected :");
            }
            self.i += 1;
            self.ws();
            let v = self.value()?;
            m.push((k, v));
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(Value::Object(m));
                }
                _ => return self.err("expected , or }"),
            }
        }
    }
}

/// A long string of the result: where it is and what it looks like.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Candidate {
    /// "payload" or "result"; `path` is relative to it.
    pub target: String,
    /// gjson path of the string.
    pub path: String,
    /// Length in bytes as it sits in the JSON.
    pub len: usize,
    /// The start of its text (64 bytes at most).
    pub head: String,
    /// Detected type: a file type for base64 with a known signature,
    /// text/plain for base64 of text, application/octet-stream for other
    /// base64; application/json or text/plain for plain text.
    pub mime: String,
    /// "base64" when the string decodes as base64, else "text".
    pub encoding: String,
}

impl Candidate {
    /// A candidate, as the host lists it (for tests with `RequestBuilder`).
    pub fn new(target: &str, path: &str, len: usize, head: &str, mime: &str, encoding: &str) -> Candidate {
        Candidate {
            target: target.to_string(),
            path: path.to_string(),
            len,
            head: head.to_string(),
            mime: mime.to_string(),
            encoding: encoding.to_string(),
        }
    }

    /// The stub that stands for this string in a skeleton:
    /// `{"$mcpx":"long_string","len":...,"head":...,"mime":...,"encoding":...}`.
    pub fn stub(&self) -> String {
        let mut out = String::from("{\"$mcpx\":\"long_string\",\"len\":");
        let _ = write!(out, "{}", self.len);
        out.push_str(",\"head\":");
        quote_into(&self.head, &mut out);
        out.push_str(",\"mime\":");
        quote_into(&self.mime, &mut out);
        out.push_str(",\"encoding\":");
        quote_into(&self.encoding, &mut out);
        out.push('}');
        out
    }

    /// Appends the candidate's JSON (as in a request's "candidates").
    pub fn write_json(&self, out: &mut String) {
        out.push_str("{\"target\":");
        quote_into(&self.target, out);
        out.push_str(",\"path\":");
        quote_into(&self.path, out);
        let _ = write!(out, ",\"len\":{}", self.len);
        out.push_str(",\"head\":");
        quote_into(&self.head, out);
        out.push_str(",\"mime\":");
        quote_into(&self.mime, out);
        out.push_str(",\"encoding\":");
        quote_into(&self.encoding, out);
        out.push('}');
    }

    /// Whether the string is base64 of something other than text.
    pub fn is_binary(&self) -> bool {
        self.encoding == "base64" && self.mime != "text/plain"
    }
}

/// The members of a request other than the two skeletons.
const HEAD_KEYS: [&str; 7] = ["abi", "mode", "server", "tool", "arguments", "candidates", "config"];

/// What the host sends: the call and a skeleton of its result. Parsing is
/// lazy: the small members (which the host sends first) are parsed up
/// front, the payload and result skeletons only when asked for. That
/// matters because each loop iteration of a guest costs a check by the
/// host's deadline watch.
pub struct Request {
    raw: Vec<u8>,
    head: Value,
}

impl Request {
    /// Parses a request's JSON.
    pub fn parse(json: &[u8]) -> Result<Request, String> {
        let mut head = Vec::new();
        let mut p = Parser { b: json, i: 0, depth: 0 };
        p.ws();
        if p.b.get(p.i) != Some(&b'{') {
            return p.err("a request must be an object");
        }
        p.i += 1;
        loop {
            p.ws();
            match p.b.get(p.i) {
                Some(b'}') => break,
                Some(b'"') => {}
                _ => return p.err("expected a key"),
            }
            let k = p.string()?;
            p.ws();
            if p.b.get(p.i) != Some(&b':') {
                return p.err("expected :");
            }
            p.i += 1;
            p.ws();
            if HEAD_KEYS.contains(&k.as_str()) {
                let v = p.value()?;
                head.push((k, v));
                if head.len() == HEAD_KEYS.len() {
                    break; // the skeletons follow: parsed on demand
                }
            } else {
                p.skip()?;
            }
            p.ws();
            match p.b.get(p.i) {
                Some(b',') => p.i += 1,
                Some(b'}') => break,
                _ => return p.err("expected , or }"),
            }
        }
        Ok(Request { raw: json.to_vec(), head: Value::Object(head) })
    }

    /// A top-level member parsed from the raw request.
    fn member(&self, key: &str) -> Value {
        let mut p = Parser { b: &self.raw, i: 0, depth: 0 };
        p.ws();
        p.i += 1;
        loop {
            p.ws();
            if p.b.get(p.i) != Some(&b'"') {
                return Value::Null;
            }
            let k = match p.string() {
                Ok(k) => k,
                Err(_) => return Value::Null,
            };
            p.ws();
            p.i += 1; // ':'
            p.ws();
            if k == key {
                return p.value().unwrap_or(Value::Null);
            }
            if p.skip().is_err() {
                return Value::Null;
            }
            p.ws();
            if p.b.get(p.i) != Some(&b',') {
                return Value::Null;
            }
            p.i += 1;
        }
    }

    /// The request's members other than the skeletons.
    pub fn head(&self) -> &Value {
        &self.head
    }
    /// The upstream server's name.
    pub fn server(&self) -> &str {
        self.head.get("server").as_str()
    }
    /// The tool's name.
    pub fn tool(&self) -> &str {
        self.head.get("tool").as_str()
    }
    /// "rewrites" (presets) or "custom" (may replace the payload).
    pub fn mode(&self) -> &str {
        self.head.get("mode").as_str()
    }
    /// The call's arguments.
    pub fn arguments(&self) -> &Value {
        self.head.get("arguments")
    }
    /// The plugin's configuration.
    pub fn config(&self) -> &Value {
        self.head.get("config")
    }
    /// The skeleton of the payload, parsed now.
    pub fn payload(&self) -> Value {
        self.member("payload")
    }
    /// The skeleton of the whole CallToolResult (Null for non-MCP
    /// results), parsed now.
    pub fn result(&self) -> Value {
        self.member("result")
    }
    /// The long strings, in document order.
    pub fn candidates(&self) -> Vec<Candidate> {
        let mut out = Vec::new();
        if let Value::Array(a) = self.head.get("candidates") {
            for c in a {
                out.push(Candidate {
                    target: c.get("target").as_str().to_string(),
                    path: c.get("path").as_str().to_string(),
                    len: c.get("len").as_i64() as usize,
                    head: c.get("head").as_str().to_string(),
                    mime: c.get("mime").as_str().to_string(),
                    encoding: c.get("encoding").as_str().to_string(),
                });
            }
        }
        out
    }
}

/// Builds a request's JSON for native tests, in the order and shape the
/// host sends (ABI.md). The skeletons are given as JSON text: put
/// `Candidate::stub()` where a long string sits, and list the candidate
/// with `candidate`. For the exact request of a real result, use
/// `mcpx plugin test --dump-request` and `include_bytes!` its output.
///
/// ```ignore
/// let pdf = Candidate::new("payload", "file.data", 24000, "JVBERi0x", "application/pdf", "base64");
/// let req = RequestBuilder::new("reports", "export")
///     .arguments(r#"{"id":7}"#)
///     .payload(&format!(r#"{{"file":{{"name":"q3.pdf","data":{}}}}}"#, pdf.stub()))
///     .candidate(pdf)
///     .build();
/// let out = mcpx_guest::handle(req.as_bytes(), transform).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RequestBuilder {
    mode: String,
    server: String,
    tool: String,
    arguments: String,
    candidates: Vec<Candidate>,
    config: String,
    payload: String,
    result: String,
}

impl RequestBuilder {
    /// A custom-mode request for a server's tool, with no arguments, an
    /// empty config, and null skeletons.
    pub fn new(server: &str, tool: &str) -> RequestBuilder {
        RequestBuilder {
            mode: "custom".to_string(),
            server: server.to_string(),
            tool: tool.to_string(),
            arguments: "null".to_string(),
            candidates: Vec::new(),
            config: "{}".to_string(),
            payload: "null".to_string(),
            result: "null".to_string(),
        }
    }
    /// Sets the mode ("custom", or "rewrites" as presets run).
    pub fn mode(mut self, m: &str) -> RequestBuilder {
        self.mode = m.to_string();
        self
    }
    /// Sets the call's arguments (JSON text).
    pub fn arguments(mut self, json: &str) -> RequestBuilder {
        self.arguments = json.to_string();
        self
    }
    /// Sets the plugin's config (JSON text).
    pub fn config(mut self, json: &str) -> RequestBuilder {
        self.config = json.to_string();
        self
    }
    /// Sets the payload skeleton (JSON text).
    pub fn payload(mut self, json: &str) -> RequestBuilder {
        self.payload = json.to_string();
        self
    }
    /// Sets the result skeleton (JSON text; `{"$mcpx":"payload"}` marks
    /// where the payload sits).
    pub fn result(mut self, json: &str) -> RequestBuilder {
        self.result = json.to_string();
        self
    }
    /// Adds a long string to "candidates".
    pub fn candidate(mut self, c: Candidate) -> RequestBuilder {
        self.candidates.push(c);
        self
    }
    /// The request's JSON.
    pub fn build(&self) -> String {
        let mut out = String::with_capacity(256 + self.payload.len() + self.result.len());
        let _ = write!(out, "{{\"abi\":{},\"mode\":", ABI_VERSION);
        quote_into(&self.mode, &mut out);
        out.push_str(",\"server\":");
        quote_into(&self.server, &mut out);
        out.push_str(",\"tool\":");
        quote_into(&self.tool, &mut out);
        out.push_str(",\"arguments\":");
        out.push_str(&self.arguments);
        out.push_str(",\"candidates\":[");
        for (i, c) in self.candidates.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            c.write_json(&mut out);
        }
        out.push_str("],\"config\":");
        out.push_str(&self.config);
        out.push_str(",\"payload\":");
        out.push_str(&self.payload);
        out.push_str(",\"result\":");
        out.push_str(&self.result);
        out.push('}');
        out
    }
    /// The request, parsed as the plugin would get it.
    pub fn parse(&self) -> Result<Request, String> {
        Request::parse(self.build().as_bytes())
    }
}

/// One instruction of the engine's rewrite language (ABI.md lists the
/// fields). Empty fields are left out of the JSON.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rewrite {
    pub path: String,
    pub target: String,
    pub action: String,
    pub encoding: String,
    pub verify: bool,
    pub mime: String,
    pub filename: String,
    pub summary: String,
    pub keep: i64,
    /// With "truncate": also keep the last `keep_last` characters/items.
    pub keep_last: i64,
    pub form: String,
    /// JSON text for "replace".
    pub value: Option<String>,
    pub splat: bool,
    pub min_size: i64,
    pub meta: Vec<(String, String)>,
}

impl Rewrite {
    /// A rewrite with an action at a path.
    pub fn new(action: &str, path: &str) -> Rewrite {
        Rewrite { action: action.to_string(), path: path.to_string(), ..Rewrite::default() }
    }
    /// Store the value as an artifact and put a ref in its place.
    pub fn artifact(path: &str) -> Rewrite {
        Rewrite::new("artifact", path)
    }
    /// Store the value and keep `keep` characters/items in place.
    pub fn truncate(path: &str, keep: i64) -> Rewrite {
        Rewrite { keep, ..Rewrite::new("truncate", path) }
    }
    /// Put the JSON `value` in place.
    pub fn replace(path: &str, value: &str) -> Rewrite {
        Rewrite { value: Some(value.to_string()), ..Rewrite::new("replace", path) }
    }
    /// Remove the value (the host stores it first when large).
    pub fn drop(path: &str) -> Rewrite {
        Rewrite::new("drop", path)
    }
    /// Sets the target ("payload" or "result").
    pub fn target(mut self, t: &str) -> Rewrite {
        self.target = t.to_string();
        self
    }
    /// Decodes the value as base64.
    pub fn base64(mut self) -> Rewrite {
        self.encoding = "base64".to_string();
        self
    }
    /// Sets the encoding ("auto", "base64", "text", "json").
    pub fn encoding(mut self, e: &str) -> Rewrite {
        self.encoding = e.to_string();
        self
    }
    /// Sets the artifact's media type.
    pub fn mime(mut self, m: &str) -> Rewrite {
        self.mime = m.to_string();
        self
    }
    /// Sets the file name template.
    pub fn filename(mut self, f: &str) -> Rewrite {
        self.filename = f.to_string();
        self
    }
    /// Sets the summary template ({size}, {id}, {kind}, {.field}, ...).
    pub fn summary(mut self, s: &str) -> Rewrite {
        self.summary = s.to_string();
        self
    }
    /// Sets keep (truncate) or the preview length (text artifacts).
    pub fn keep(mut self, n: i64) -> Rewrite {
        self.keep = n;
        self
    }
    /// Sets keep_last (truncate): also keep the last n characters/items,
    /// e.g. the newest entries of a history.
    pub fn keep_last(mut self, n: i64) -> Rewrite {
        self.keep_last = n;
        self
    }
    /// Sets the form ("value", "text", "block").
    pub fn form(mut self, f: &str) -> Rewrite {
        self.form = f.to_string();
        self
    }
    /// Adds a meta key.
    pub fn meta(mut self, k: &str, v: &str) -> Rewrite {
        self.meta.push((k.to_string(), v.to_string()));
        self
    }
    /// Asks the host to check the decoded bytes against the detected type
    /// before storing them.
    pub fn verify(mut self) -> Rewrite {
        self.verify = true;
        self
    }
    /// Applies the rewrite to every element the path's `#` matches.
    pub fn splat(mut self) -> Rewrite {
        self.splat = true;
        self
    }
    /// Applies the rewrite only to values of at least n bytes.
    pub fn min_size(mut self, n: i64) -> Rewrite {
        self.min_size = n;
        self
    }
    /// Turns a rewrite of a content block's field (content.N.data,
    /// content.N.text, content.N.resource.blob) into one of the block
    /// itself in block form, so the block becomes a text block with the
    /// summary plus a resource_link to the artifact (Go's
    /// `Rewrite.InBlock`). Other paths are left as they are.
    pub fn in_block(mut self) -> Rewrite {
        let mut parts = self.path.splitn(3, '.');
        if let (Some(a), Some(b), Some(_)) = (parts.next(), parts.next(), parts.next()) {
            self.path = format!("{}.{}", a, b);
            self.form = "block".to_string();
        }
        self
    }

    /// Appends the rewrite's JSON to out.
    pub fn write_json(&self, out: &mut String) {
        out.push_str("{\"path\":");
        quote_into(&self.path, out);
        out.push_str(",\"action\":");
        quote_into(&self.action, out);
        let mut s = |k: &str, v: &str| {
            if !v.is_empty() {
                out.push_str(",\"");
                out.push_str(k);
                out.push_str("\":");
                quote_into(v, out);
            }
        };
        s("target", &self.target);
        s("encoding", &self.encoding);
        s("mime", &self.mime);
        s("filename", &self.filename);
        s("summary", &self.summary);
        s("form", &self.form);
        if self.verify {
            out.push_str(",\"verify\":true");
        }
        if self.keep != 0 {
            let _ = write!(out, ",\"keep\":{}", self.keep);
        }
        if self.keep_last != 0 {
            let _ = write!(out, ",\"keep_last\":{}", self.keep_last);
        }
        if let Some(v) = &self.value {
            out.push_str(",\"value\":");
            out.push_str(v);
        }
        if self.splat {
            out.push_str(",\"splat\":true");
        }
        if self.min_size != 0 {
            let _ = write!(out, ",\"min_size\":{}", self.min_size);
        }
        if !self.meta.is_empty() {
            out.push_str(",\"meta\":{");
            for (i, (k, v)) in self.meta.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                quote_into(k, out);
                out.push(':');
                quote_into(v, out);
            }
            out.push('}');
        }
        out.push('}');
    }
}

/// A plugin's answer: rewrites, or in custom mode a replacement payload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Response {
    pub rewrites: Vec<Rewrite>,
    /// JSON text that replaces the whole payload (custom mode only).
    pub payload: Option<String>,
}

impl Response {
    /// An empty response: leave the result alone.
    pub fn new() -> Response {
        Response::default()
    }
    /// A response that replaces the payload with JSON text.
    pub fn replace_payload(json: &str) -> Response {
        Response { rewrites: Vec::new(), payload: Some(json.to_string()) }
    }
    /// Appends a rewrite.
    pub fn push(&mut self, rw: Rewrite) {
        self.rewrites.push(rw);
    }
    /// The response's JSON.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(64 + 128 * self.rewrites.len());
        if let Some(p) = &self.payload {
            out.push_str("{\"payload\":");
            out.push_str(p);
            out.push('}');
            return out;
        }
        out.push_str("{\"rewrites\":[");
        for (i, rw) in self.rewrites.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            rw.write_json(&mut out);
        }
        out.push_str("]}");
        out
    }
}

/// Runs a transform on a request's JSON: the response's JSON, or an error
/// message. The `plugin!` exports call it; tests may too.
pub fn handle(input: &[u8], f: fn(&Request) -> Result<Response, String>) -> Result<String, String> {
    let req = Request::parse(input)?;
    let v = req.head.get("abi").as_i64();
    if v != ABI_VERSION {
        return Err(format!("guest: request ABI version {}, this SDK speaks {}", v, ABI_VERSION));
    }
    let resp = f(&req)?;
    if let Some(p) = &resp.payload {
        Value::parse(p.as_bytes()).map_err(|e| format!("guest: Response.payload is not JSON: {}", e))?;
    }
    Ok(resp.to_json())
}

/// Log levels of `log`.
pub const TRACE: u32 = 0;
pub const DEBUG: u32 = 1;
pub const INFO: u32 = 2;
pub const WARN: u32 = 3;
pub const ERROR: u32 = 4;

#[cfg(target_arch = "wasm32")]
#[link(wasm_import_module = "host")]
extern "C" {
    #[link_name = "log"]
    fn host_log(level: u32, ptr: *const u8, len: u32);
    #[link_name = "get_config"]
    fn host_get_config(kptr: *const u8, klen: u32, bptr: *mut u8, bcap: u32) -> i64;
    #[link_name = "get_value"]
    fn host_get_value(pptr: *const u8, plen: u32, bptr: *mut u8, bcap: u32) -> i64;
}

/// Writes a line into the host's log under the plugin's name.
pub fn log(level: u32, msg: &str) {
    #[cfg(target_arch = "wasm32")]
    unsafe {
        host_log(level, msg.as_ptr(), msg.len() as u32)
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, msg);
}

#[cfg(target_arch = "wasm32")]
fn fetch(value: bool, key: &str) -> Option<Vec<u8>> {
    let mut buf: Vec<u8> = vec![0; 4096];
    loop {
        let n = unsafe {
            if value {
                host_get_value(key.as_ptr(), key.len() as u32, buf.as_mut_ptr(), buf.len() as u32)
            } else {
                host_get_config(key.as_ptr(), key.len() as u32, buf.as_mut_ptr(), buf.len() as u32)
            }
        };
        if n < 0 {
            return None;
        }
        if n as usize <= buf.len() {
            buf.truncate(n as usize);
            return Some(buf);
        }
        buf = vec![0; n as usize];
    }
}

/// The full JSON of a payload value ("result:" + path for the result);
/// None when missing or over the call's budget.
pub fn get_value(path: &str) -> Option<Vec<u8>> {
    #[cfg(target_arch = "wasm32")]
    return fetch(true, path);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = path;
        None
    }
}

/// The JSON of a path in the plugin's config ("" for all of it).
pub fn get_config(key: &str) -> Option<Vec<u8>> {
    #[cfg(target_arch = "wasm32")]
    return fetch(false, key);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = key;
        None
    }
}

/// ABI plumbing for `plugin!`; not for direct use.
#[doc(hidden)]
pub mod abi {
    /// Marks an error message in the returned length.
    pub const ERR_FLAG: u64 = 1 << 31;

    pub fn alloc(size: u32) -> u32 {
        let mut v: Vec<u8> = Vec::with_capacity(size.max(1) as usize);
        let p = v.as_mut_ptr();
        std::mem::forget(v);
        p as u32
    }

    pub fn free(ptr: u32, size: u32) {
        if ptr == 0 {
            return;
        }
        unsafe { drop(Vec::from_raw_parts(ptr as *mut u8, 0, size.max(1) as usize)) }
    }

    fn leak(s: String) -> u64 {
        let b = s.into_bytes().into_boxed_slice();
        let n = b.len() as u64;
        if n == 0 {
            return 0;
        }
        let p = Box::into_raw(b) as *mut u8 as u32 as u64;
        p << 32 | n
    }

    pub fn transform(ptr: u32, len: u32, f: fn(&super::Request) -> Result<super::Response, String>) -> u64 {
        let input = unsafe { std::slice::from_raw_parts(ptr as *const u8, len as usize) };
        match super::handle(input, f) {
            Ok(out) => leak(out),
            Err(msg) => leak(msg) | ERR_FLAG,
        }
    }
}

/// Exports the ABI v1 functions for a transform
/// `fn(&Request) -> Result<Response, String>`. Use it once, in the plugin
/// crate.
#[macro_export]
macro_rules! plugin {
    ($f:path) => {
        #[no_mangle]
        pub extern "C" fn plugin_abi_v1() {}

        #[no_mangle]
        pub extern "C" fn plugin_alloc(size: u32) -> u32 {
            $crate::abi::alloc(size)
        }

        #[no_mangle]
        pub extern "C" fn plugin_free(ptr: u32, size: u32) {
            $crate::abi::free(ptr, size)
        }

        #[no_mangle]
        pub extern "C" fn plugin_transform(ptr: u32, len: u32) -> u64 {
            $crate::abi::transform(ptr, len, $f)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let src = r#"{"a":[1,2.5,-3e2,true,false,null],"b":{"c":"x\"\\\n\u00e9\ud83d\ude00"}}"#;
        let v = Value::parse(src.as_bytes()).unwrap();
        assert_eq!(v.get("b.c").as_str(), "x\"\\\né😀");
        assert_eq!(v.get("a.1"), &Value::Number("2.5".into()));
        let again = Value::parse(v.to_json().as_bytes()).unwrap();
        assert_eq!(v, again);
    }

    #[test]
    fn lazy_request() {
        let src = br#"{"abi":1,"mode":"custom","server":"s","tool":"t","arguments":{"a":[1,{"b":"}"}]},"candidates":[{"target":"payload","path":"x","len":300,"head":"JVBE","mime":"application/pdf","encoding":"base64"}],"config":{"k":2},"payload":{"x":{"$mcpx":"long_string","len":300},"y":"a\"]}"},"result":null}"#;
        let r = Request::parse(src).unwrap();
        assert_eq!(r.tool(), "t");
        assert_eq!(r.config().get("k").as_i64(), 2);
        assert_eq!(r.candidates()[0].mime, "application/pdf");
        assert_eq!(r.payload().get("y").as_str(), "a\"]}");
        assert_eq!(r.payload().get("x").long().unwrap().len, 300);
        assert_eq!(r.result(), Value::Null);
        // Another order works too.
        let r = Request::parse(br#"{"payload":{"q":1},"abi":1,"tool":"z"}"#).unwrap();
        assert_eq!(r.tool(), "z");
        assert_eq!(r.payload().get("q").as_i64(), 1);
    }

    #[test]
    fn quote_name_keeps_placeholders_out() {
        assert_eq!(quote_name("Q{3} report"), "'Q(3) report'");
        assert_eq!(quote_name(""), "''");
    }

    #[test]
    fn request_builder_round_trips() {
        let pdf = Candidate::new("payload", "file.data", 24000, "JVBERi0x", "application/pdf", "base64");
        let req = RequestBuilder::new("reports", "export")
            .arguments(r#"{"id":7}"#)
            .config(r#"{"keep":2}"#)
            .payload(&format!(r#"{{"file":{{"name":"q\"3.pdf","data":{}}}}}"#, pdf.stub()))
            .candidate(pdf.clone())
            .parse()
            .unwrap();
        assert_eq!(req.server(), "reports");
        assert_eq!(req.tool(), "export");
        assert_eq!(req.mode(), "custom");
        assert_eq!(req.arguments().get("id").as_i64(), 7);
        assert_eq!(req.config().get("keep").as_i64(), 2);
        assert_eq!(req.candidates(), vec![pdf]);
        assert_eq!(req.payload().get("file.name").as_str(), "q\"3.pdf");
        assert_eq!(req.payload().get("file.data").long().unwrap().len, 24000);
        assert_eq!(req.result(), Value::Null);
    }

    #[test]
    fn rewrite_builders() {
        let rw = Rewrite::artifact("content.2.data").base64().mime("image/png").filename("a.png").verify().in_block();
        assert_eq!(rw.path, "content.2");
        let mut out = String::new();
        rw.write_json(&mut out);
        assert_eq!(out, r#"{"path":"content.2","action":"artifact","encoding":"base64","mime":"image/png","filename":"a.png","form":"block","verify":true}"#);
        let rw = Rewrite::drop("rows.#.blob").splat().min_size(1024);
        let mut out = String::new();
        rw.write_json(&mut out);
        assert_eq!(out, r#"{"path":"rows.#.blob","action":"drop","splat":true,"min_size":1024}"#);
        let rw = Rewrite::truncate("history", 0).keep_last(5);
        let mut out = String::new();
        rw.write_json(&mut out);
        assert_eq!(out, r#"{"path":"history","action":"truncate","keep_last":5}"#);
    }

    #[test]
    fn rejects_bad_json() {
        for bad in ["{", "[1,]", "\"abc", "{\"a\" 1}", "01x", "[1] x"] {
            assert!(Value::parse(bad.as_bytes()).is_err(), "{}", bad);
        }
    }
}
