// An MCP server on the official TypeScript SDK whose tool list changes: calling
// "grow" registers the tool "grown", and the SDK sends notifications/tools/list_changed.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "changing", version: "1.0.0" });
let grown = false;
server.registerTool("grow", { description: "Adds the tool grown", annotations: { readOnlyHint: true } }, async () => {
  if (!grown) {
    grown = true;
    server.registerTool("grown", { description: "Appeared later", annotations: { readOnlyHint: true } },
      async () => ({ content: [{ type: "text", text: "grown here" }] }));
  }
  return { content: [{ type: "text", text: "grew" }] };
});
await server.connect(new StdioServerTransport());
