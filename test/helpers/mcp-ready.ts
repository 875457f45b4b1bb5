/**
 * Waits (up to `timeoutMs`) until a gateway's MCP hub, which connects in the background, lists `server` as ready with
 * at least `tools` tools (GET /api/mcp). Returns whether it did.
 */
export async function waitForMcpTools(gatewayUrl: string, server: string, tools = 1, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const health = (await (await fetch(`${gatewayUrl}/api/mcp`)).json()) as { servers: Array<{ name: string; state: string; tools: number }> };
    if (health.servers.some((listed) => listed.name === server && listed.state === 'ready' && listed.tools >= tools)) return true;
    await new Promise((done) => setTimeout(done, 50));
  }
  return false;
}
