// A stdio MCP server, speaking JSON-RPC by hand, that misbehaves on purpose: it
// writes stray lines to stdout, lists tools whose inputSchema is not an object,
// answers with 20 MiB, exits in the middle of a call, or never answers initialize
// (argument "hang"); its tool ask sends the client a sampling, elicitation or
// roots request and returns the answer; it logs each notifications/cancelled it gets to stderr.
import { createInterface } from "node:readline";

const hang = process.argv[2] === "hang";
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const rl = createInterface({ input: process.stdin });
rl.on("close", () => process.exit(0));
console.error("misbehaving server up");
process.stdout.write("this banner is not JSON-RPC\n");
const asking = new Map(); // our request id -> the tools/call it answers
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === undefined && asking.has(m.id)) { // the client's answer to our request
    const callID = asking.get(m.id);
    asking.delete(m.id);
    return send({ jsonrpc: "2.0", id: callID, result: { content: [{ type: "text", text: JSON.stringify(m.error ?? m.result) }] } });
  }
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
        { name: "ask", description: "sends the client the request named by method", inputSchema: { type: "object", properties: { method: { type: "string" } } }, annotations: { readOnlyHint: true } },
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
      if (m.params.name === "ask") {
        const id = "ask-" + m.id;
        asking.set(id, m.id);
        const params = {
          "sampling/createMessage": { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 },
          "elicitation/create": { mode: "form", message: "name?", requestedSchema: { type: "object", properties: {} } },
          "roots/list": {},
        }[m.params.arguments.method];
        return send({ jsonrpc: "2.0", id, method: m.params.arguments.method, params });
      }
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32602, message: "no such tool" } });
    default:
      return send({ jsonrpc: "2.0", id: m.id, result: {} });
  }
});
