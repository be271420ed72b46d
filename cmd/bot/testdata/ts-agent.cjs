// An agent written with the official TypeScript MCP SDK (what Claude Code
// uses): it calls hitlbot's request_approval as Claude Code's
// --permission-prompt-tool does and prints the tool's result as JSON.
//
//   NODE_PATH=<node_modules> AGENT_TOKEN=… node ts-agent.cjs URL TOOL_NAME INPUT_JSON TOOL_USE_ID
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function main() {
  const [url, toolName, input, toolUseId] = process.argv.slice(2);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: "Bearer " + process.env.AGENT_TOKEN } },
  });
  const client = new Client({ name: "ts-agent", version: "1.0.0" });
  await client.connect(transport);
  const result = await client.callTool(
    { name: "request_approval", arguments: { tool_name: toolName, input: JSON.parse(input), tool_use_id: toolUseId } },
    undefined,
    { timeout: 120000, resetTimeoutOnProgress: true, onprogress: () => {} },
  );
  process.stdout.write(JSON.stringify(result) + "\n");
  await client.close();
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + "\n");
  process.exit(1);
});
