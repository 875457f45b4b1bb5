/**
 * Tollgate as an MCP server for one `/mcp` POST (stateless: a server and a transport per request, closed with it),
 * bound to its caller: the tools the key may use, called under its limits. Loaded by the `/mcp` route on first use,
 * so the MCP SDK's server side costs nothing at start.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Identity } from '../core/context.js';
import { callerOf, findTool, takeToolCall, toolRefusal, toolsFor } from '../mcp/mcp-policy.js';
import { toolResultGuard } from '../mcp/result-guard.js';
import type { HttpDeps } from './deps.js';

/** One MCP server for one `/mcp` request, bound to its caller: the tools the key may use, called under its limits. */
function serverFor(deps: HttpDeps, identity: Identity | null, requestId: string, signal: AbortSignal): Server {
  const server = new Server({ name: 'tollgate', version: deps.version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: toolsFor(deps.mcp, identity).map(
      (tool): Tool => ({
        name: tool.name,
        ...(tool.title !== undefined ? { title: tool.title } : {}),
        description: tool.description,
        inputSchema: tool.inputSchema as Tool['inputSchema'],
        ...(tool.outputSchema ? { outputSchema: tool.outputSchema as Tool['outputSchema'] } : {}),
        ...(tool.annotations ? { annotations: tool.annotations as Tool['annotations'] } : {}),
      }),
    ),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name } = request.params;
    const refusal = toolRefusal(deps.mcp, identity, name);
    if (refusal) throw new McpError(ErrorCode.InvalidParams, refusal.message);
    // Over the key's tool-call rate: a tool error the client (or its model) can read, with when to try again.
    const limited = takeToolCall(deps.limiter, identity);
    if (limited) return { content: [{ type: 'text', text: limited.message }], isError: true };
    // Tools are listed by their own names; a name as a model saw it (see modelToolName) is taken too.
    const tool = findTool(deps.mcp, name)?.name ?? name;
    // Its result goes to the client as an answer does: the output guardrails check it; a blocked one is an
    // `isError` result naming the rule (the hub gives it so), never the matched text.
    const guard = toolResultGuard(deps.config.current(), deps.bus, identity, requestId, name);
    const result = await deps.mcp.callTool(tool, request.params.arguments ?? {}, callerOf(requestId, identity, 'mcp'), { signal: AbortSignal.any([signal, extra.signal]), guard });
    if (result.blocked) return { content: [{ type: 'text', text: result.blocked }], isError: true };
    // A tool listed with an output schema must give its structured result (the SDK client refuses an answer without):
    // one cut at max_result_bytes that lost it is an error the client can read, with the text that was kept.
    if (!result.isError && !result.structuredContent && findTool(deps.mcp, name)?.outputSchema) {
      return { content: [{ type: 'text', text: `The structured result of '${name}' did not fit in max_result_bytes.\n${result.text}` }], isError: true };
    }
    return {
      content: result.content as CallToolResult['content'],
      ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
      isError: result.isError,
    };
  });
  return server;
}

/** Answers one `/mcp` request (already authenticated) through a fresh SDK server and transport. */
export async function serveMcpRequest(deps: HttpDeps, identity: Identity | null, request: FastifyRequest, reply: FastifyReply, signal: AbortSignal): Promise<void> {
  const server = serverFor(deps, identity, request.id, signal);
  // Stateless: no session id, a server and a transport per request, closed with it; answers are plain JSON.
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  reply.hijack();
  // The MCP SDK writes the answer itself; a hijacked reply leaves out the reply headers (the request id among them).
  reply.raw.setHeader('x-request-id', request.id);
  reply.raw.once('close', () => {
    void transport.close().catch(() => undefined);
    void server.close().catch(() => undefined);
  });
  try {
    await server.connect(transport);
    // The body was read (within max_body_bytes) and parsed by the app's JSON parser.
    await transport.handleRequest(request.raw, reply.raw, request.body);
  } catch (err) {
    deps.log.error({ err, requestId: request.id }, 'mcp endpoint failed');
    if (!reply.raw.headersSent) {
      reply.raw.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
      reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: ErrorCode.InternalError, message: 'Internal gateway error.' }, id: null }));
    }
  }
}
