//! An example mcpx custom transformer in Rust: for a search server it
//! replaces the payload with a compact digest (the query, the total and the
//! top results' titles and URLs); the host stores the full original as an
//! artifact, so nothing is lost. The number of results kept is the
//! plugin's config "keep" (default 3).
//!
//! Build (Debian's rustc 1.63; the SDK first, then this crate):
//!
//! ```text
//! R="/usr/bin/rustc --target wasm32-unknown-unknown --edition 2021 -O -C panic=abort -C target-feature=+bulk-memory -C strip=debuginfo"
//! $R --crate-type rlib --crate-name mcpx_guest sdk/wasm-guest/rust/src/lib.rs -o /tmp/libmcpx_guest.rlib
//! $R --crate-type cdylib --extern mcpx_guest=/tmp/libmcpx_guest.rlib examples/wasm-rust/src/lib.rs -o search.wasm
//! ```

use mcpx_guest::{log, quote, Request, Response, Value, DEBUG};

fn transform(req: &Request) -> Result<Response, String> {
    if req.mode() != "custom" || !req.tool().starts_with("search") {
        return Ok(Response::new());
    }
    let p = req.payload();
    let results = match p.get("results") {
        Value::Array(a) => a,
        _ => return Ok(Response::new()), // not a shape we know: leave it
    };
    let keep = match req.config().get("keep") {
        Value::Number(_) => req.config().get("keep").as_i64().max(0) as usize,
        _ => 3,
    };
    let mut top = String::from("[");
    for (i, r) in results.iter().take(keep).enumerate() {
        if i > 0 {
            top.push(',');
        }
        top.push_str("{\"title\":");
        top.push_str(&quote(r.get("title").as_str()));
        top.push_str(",\"url\":");
        top.push_str(&quote(r.get("url").as_str()));
        top.push('}');
    }
    top.push(']');
    let total = match p.get("total") {
        Value::Number(n) => n.clone(),
        _ => results.len().to_string(),
    };
    let digest = format!(
        "{{\"query\":{},\"total\":{},\"top\":{},\"note\":{}}}",
        quote(p.get("query").as_str()),
        total,
        top,
        quote("The full results are stored as an artifact of this call.")
    );
    log(DEBUG, "search digest built");
    Ok(Response::replace_payload(&digest))
}

mcpx_guest::plugin!(transform);
