//! ticket_plugin, after its edit (examples/newcomer/README.md): an mcpx
//! custom transformer for a helpdesk server's get_ticket. It moves each
//! attachment into the artifact store under the attachment's own file name,
//! and cuts the ticket's history to its last 5 entries (mcpx stores the
//! full history it replaces).
//!
//! It replaces the src/lib.rs that "mcpx plugin new --lang rust" writes;
//! build it with the scaffold's ./build.sh. Its first test reads
//! testdata/request.json, the exact request mcpx sends for a get_ticket
//! result:
//!
//! mcpx plugin test --dump-request --server helpdesk --tool get_ticket testdata/ticket.json > testdata/request.json

use mcpx_guest::{quote_name, Request, Response, Rewrite, Value};

/// How many history entries stay in the result.
const KEEP_HISTORY: usize = 5;

fn transform(req: &Request) -> Result<Response, String> {
    let mut out = Response::new();
    if req.tool() != "get_ticket" {
        return Ok(out); // leave every other tool alone
    }
    let payload = req.payload();
    for c in req.candidates() {
        // attachments.<n>.data: base64 of a file.
        let n = match attachment_index(&c.path) {
            Some(n) if c.target == "payload" && c.encoding == "base64" => n,
            _ => continue,
        };
        let at = format!("attachments.{}", n);
        let name = payload.get(&format!("{}.name", at)).as_str().to_string();
        let mime = payload.get(&format!("{}.mime_type", at)).as_str().to_string();
        out.push(
            Rewrite::artifact(&c.path)
                .base64()
                .mime(&mime)
                .filename(&name)
                .summary(&format!("Attachment {}", quote_name(&name))),
        );
    }
    // The history's entries are short, so the skeleton holds them whole.
    if let Value::Array(h) = payload.get("history") {
        if h.len() > KEEP_HISTORY {
            let last = Value::Array(h[h.len() - KEEP_HISTORY..].to_vec());
            out.push(Rewrite::replace("history", &last.to_json()));
        }
    }
    Ok(out)
}

/// Parses "attachments.N.data".
fn attachment_index(path: &str) -> Option<usize> {
    let rest = path.strip_prefix("attachments.")?;
    rest.strip_suffix(".data")?.parse().ok()
}

mcpx_guest::plugin!(transform);

#[cfg(test)]
mod tests {
    use mcpx_guest::{Candidate, RequestBuilder, Value};

    #[test]
    fn names_attachments_and_cuts_history() {
        let out = mcpx_guest::handle(include_bytes!("../testdata/request.json"), super::transform).unwrap();
        let v = Value::parse(out.as_bytes()).unwrap();
        assert_eq!(v.get("rewrites.0.filename").as_str(), "invoice-march.pdf", "{}", out);
        assert_eq!(v.get("rewrites.0.summary").as_str(), "Attachment 'invoice-march.pdf'");
        assert_eq!(v.get("rewrites.1.filename").as_str(), "test-page.png", "{}", out);
        assert_eq!(v.get("rewrites.2.action").as_str(), "replace", "{}", out);
        match v.get("rewrites.2.value") {
            Value::Array(a) => assert_eq!(a.len(), 5),
            other => panic!("history value {:?}", other),
        }
    }

    #[test]
    fn other_tools_are_left_alone() {
        let pdf = Candidate::new("payload", "attachments.0.data", 2000, "JVBERi0x", "application/pdf", "base64");
        let req = RequestBuilder::new("helpdesk", "list_tickets")
            .payload(&format!(r#"{{"attachments":[{{"name":"a.pdf","data":{}}}]}}"#, pdf.stub()))
            .candidate(pdf)
            .build();
        assert_eq!(mcpx_guest::handle(req.as_bytes(), super::transform).unwrap(), r#"{"rewrites":[]}"#);
    }

    #[test]
    fn a_name_with_braces_is_no_placeholder() {
        let pdf = Candidate::new("payload", "attachments.0.data", 2000, "JVBERi0x", "application/pdf", "base64");
        let req = RequestBuilder::new("helpdesk", "get_ticket")
            .payload(&format!(r#"{{"attachments":[{{"name":"Q{{3}}.pdf","data":{}}}]}}"#, pdf.stub()))
            .candidate(pdf)
            .build();
        let out = mcpx_guest::handle(req.as_bytes(), super::transform).unwrap();
        assert!(out.contains(r#""summary":"Attachment 'Q(3).pdf'""#), "{}", out);
    }
}
