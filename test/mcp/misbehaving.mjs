// A stdio MCP server, speaking JSON-RPC by hand, that misbehaves on purpose: it
// writes stray lines to stdout, lists tools whose inputSchema is not an object,
// answers with 20 MiB, exits in the middle of a call, or never answers initialize
// (argument "hang"); it logs each notifications/cancelled it gets to stderr.
import { createInterface } from "node:readline";

const hang = process.argv[2] === "hang";
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const rl = createInterface({ input: process.stdin });
rl.on("close", () => process.exit(0));
console.error("misbehaving server up");
process.stdout.write("this banner is not JSON-RPC\n");
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "notifications/cancelled") console.error("cancelled request " + m.params.requestId);
  if (m.id === undefined) return;
  if (hang) return;
  process.stdout.write("garbage before the answer to " + m.method + "\n");
  switch (m.method) {
    case "initialize":
      return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "misbehaving", version: "1" } } });
    case "tools/list":
      return send({ jsonrpc: "2.0", id: m.id, result: { tools: [
        { name: "big", description: "20 MiB of text", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
        { name: "exit3", description: "exits with status 3", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
        { name: "slow", description: "never answers", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
        { name: "stringschema", inputSchema: "not an object" },
        { name: "arrayschema", inputSchema: { type: "array" } },
      ] } });
    case "tools/call":
      if (m.params.name === "big") {
        return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "x".repeat(20 << 20) }] } });
      }
      if (m.params.name === "exit3") process.exit(3);
      if (m.params.name === "slow") return;
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32602, message: "no such tool" } });
    default:
      return send({ jsonrpc: "2.0", id: m.id, result: {} });
  }
});
