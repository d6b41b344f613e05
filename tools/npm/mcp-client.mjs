// A line-driven MCP client on the TypeScript SDK (@modelcontextprotocol/client
// 2.x) for mcpx's compatibility matrix (tests/compat): the Go test writes
// one JSON request per line on stdin and reads one JSON answer per line on
// stdout.
//
//   {"op":"connect","command":"mcpx","args":[...],"env":{...},"revision":"2025-11-25"}
//   {"op":"connect","url":"http://127.0.0.1:PORT/mcp","revision":"2026-07-28","headers":{...}}
//   {"op":"listTools"} {"op":"callTool","name":"x","arguments":{...}}
//   {"op":"listResources"} {"op":"readResource","uri":"..."} {"op":"close"}
//
// Answers: {"ok":true,"result":...} or {"ok":false,"error":"..."}. callTool
// goes through the SDK's Client.callTool, which validates structuredContent
// against the tool's outputSchema: a result the SDK rejects is an error here.
import { createInterface } from "node:readline";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

let client;

async function handle(req) {
  switch (req.op) {
    case "connect": {
      const opts = {};
      if (req.revision && req.revision !== "2025-11-25") {
        opts.versionNegotiation = { mode: { pin: req.revision } };
      }
      client = new Client({ name: "mcpx-compat", version: "1.0.0" }, opts);
      const transport = req.url
        ? new StreamableHTTPClientTransport(new URL(req.url), { requestInit: { headers: req.headers || {} } })
        : new StdioClientTransport({ command: req.command, args: req.args || [], env: { ...process.env, ...(req.env || {}) }, cwd: req.cwd, stderr: "ignore" });
      await client.connect(transport, { timeout: 60000 });
      return { server: client.getServerVersion() };
    }
    case "listTools": {
      const tools = [];
      let cursor;
      do {
        const page = await client.listTools(cursor ? { cursor } : {});
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return { tools };
    }
    case "callTool":
      return await client.callTool({ name: req.name, arguments: req.arguments || {} }, { timeout: 120000 });
    case "listResources":
      return await client.listResources();
    case "readResource":
      return await client.readResource({ uri: req.uri });
    case "close":
      await client?.close();
      return {};
    default:
      throw new Error(`unknown op ${req.op}`);
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  let out;
  try {
    out = { ok: true, result: await handle(JSON.parse(line)) };
  } catch (e) {
    out = { ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
  if (JSON.parse(line).op === "close") break;
}
process.exit(0);
