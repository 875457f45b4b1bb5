/**
 * MCP tools over HTTP: `POST /v1/mcp/tools/call` (one call, OpenAI-style errors, authenticated like a chat request)
 * and `/mcp`, tollgate itself as an MCP server over the streamable HTTP transport (stateless: one SDK server per
 * POST), serving the union of the tools a virtual key may use. Both call tools through the hub under the key's
 * allow-lists and tool-call rate limit.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Settings } from '../core/config.js';
import type { Identity } from '../core/context.js';
import { GatewayError, gatewayError, toGatewayError } from '../core/errors.js';
import { isRecord } from '../core/is-record.js';
import { anonymousRule, checkVirtualKey, type AnonymousRule } from '../governance/key-check.js';
import type { McpHubCallResult } from '../mcp/mcp-hub.js';
import { callerOf, findTool, takeToolCall, toolRefusal } from '../mcp/mcp-policy.js';
import { toolResultGuard } from '../mcp/result-guard.js';
import { isRemoteClient } from './client-address.js';
import type { HttpDeps } from './deps.js';
import { fromFrameworkError, jsonRpcErrorBody, renderJsonRpcError } from './render-error.js';
import { bearerToken, headerString } from './request-headers.js';

/** The virtual key a request presents (`Authorization: Bearer` or `x-api-key`), checked; null for an anonymous caller the rule lets in. */
function authenticate(deps: HttpDeps, request: FastifyRequest, rule: AnonymousRule): Identity | null {
  const credential = bearerToken(request) ?? headerString(request, 'x-api-key');
  // Tools call no model: the key's model list does not apply (its `mcp` policy does).
  const check = checkVirtualKey(deps.governance, rule, credential, null);
  if (!check.ok) {
    deps.bus.emit('auth.rejected', { requestId: request.id, reason: check.reason, keyId: check.keyId });
    throw check.error;
  }
  if (!check.key) return null;
  return { key: check.key, team: check.key.team ? (deps.governance.getTeamRecord(check.key.team) ?? null) : null };
}

/**
 * `/mcp` serves MCP clients (IDEs, agents) that stay connected and may call any tool they see: they need a virtual
 * key unless the operator opened anonymous access to every client (`settings.anonymous_access: any`, without
 * `require_virtual_key`). A loopback client without a key, let through on the model APIs, is refused here.
 */
export function mcpAnonymousRule(settings: Pick<Settings, 'requireVirtualKey' | 'anonymousAccess'>): AnonymousRule {
  return !settings.requireVirtualKey && settings.anonymousAccess === 'any' ? 'allow' : 'refuse';
}

/** An AbortSignal that fires when the client goes away before its answer was sent. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('the client closed the connection'));
  });
  return controller.signal;
}

/** The body of `POST /v1/mcp/tools/call`: `{ name, arguments? }`. */
function readToolCall(body: unknown): { name: string; args: Record<string, unknown> } {
  if (!isRecord(body)) throw gatewayError('invalid_body', 'The request body must be a JSON object: { "name": "<server>__<tool>", "arguments": { ... } }.');
  if (body.name === undefined) throw gatewayError('missing_required_parameter', "Missing required parameter: 'name' (the tool, as <server>__<tool>).", { param: 'name' });
  if (typeof body.name !== 'string' || body.name === '') throw gatewayError('invalid_type', "Invalid 'name': expected a non-empty string.", { param: 'name' });
  const args = body.arguments ?? {};
  if (!isRecord(args)) throw gatewayError('invalid_type', "Invalid 'arguments': expected an object.", { param: 'arguments' });
  return { name: body.name, args };
}

/** The answer of `POST /v1/mcp/tools/call` for a call that ran (the tool may still report `is_error`). */
function toolCallAnswer(name: string, result: McpHubCallResult): Record<string, unknown> {
  return {
    name,
    status: result.status,
    is_error: result.isError,
    content: result.content,
    ...(result.structuredContent ? { structured_content: result.structuredContent } : {}),
    text: result.text,
    duration_ms: result.durationMs,
    truncated: result.truncated,
  };
}

function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string, headers: Record<string, string> = {}): FastifyReply {
  return reply
    .code(status)
    .headers({ 'content-type': 'application/json; charset=utf-8', ...headers })
    .send(jsonRpcErrorBody(code, message));
}

export function registerMcpRoutes(app: FastifyInstance, deps: HttpDeps): void {
  app.post('/v1/mcp/tools/call', async (request, reply) => {
    const config = deps.config.current();
    const identity = authenticate(deps, request, anonymousRule(config.settings, isRemoteClient(request, config.settings)));
    const { name, args } = readToolCall(request.body);
    const refusal = toolRefusal(deps.mcp, identity, name);
    if (refusal) throw refusal;
    const limited = takeToolCall(deps.limiter, identity);
    if (limited) throw limited;
    // A model in client mode names a tool as it saw it (see modelToolName): the hub calls it by its own name.
    const tool = findTool(deps.mcp, name)?.name ?? name;
    // Its result goes to the client as an answer does: the output guardrails check it (see toolResultGuard).
    const guard = toolResultGuard(config, deps.bus, identity, request.id, name);
    const result = await deps.mcp.callTool(tool, args, callerOf(request.id, identity, 'api'), { signal: clientGone(reply), guard });
    if (result.blocked) throw gatewayError('guardrail_blocked', result.blocked, { param: null });
    if (result.status === 'error') {
      const message = `MCP tool '${name}' failed: ${result.error ?? 'unknown error'}`;
      throw gatewayError(result.failure === 'timeout' ? 'mcp_tool_timeout' : 'mcp_tool_failed', message, { param: 'name' });
    }
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(toolCallAnswer(name, result)));
  });

  // A scope of its own, so that what fastify refuses before the handler (a body that is not JSON, another content
  // type, a body too large) is answered in JSON-RPC, as every answer of an MCP endpoint is.
  app.register(async (scope) => {
    scope.setErrorHandler((err, _request, reply) => {
      const error = fromFrameworkError(err, deps.config.current().settings.maxBodyBytes);
      if (error.status >= 500 && !(err instanceof GatewayError)) deps.log.error({ err }, 'unhandled error in the /mcp route');
      const rendered = renderJsonRpcError(error);
      return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
    });

    scope.post('/mcp', async (request, reply) => {
      let identity: Identity | null;
      try {
        identity = authenticate(deps, request, mcpAnonymousRule(deps.config.current().settings));
      } catch (err) {
        const error = toGatewayError(err);
        return jsonRpcError(reply, error.status, -32001, error.message, error.status === 401 ? { 'www-authenticate': 'Bearer' } : {});
      }
      // The MCP SDK's server side loads with the first `/mcp` request, not at start (most gateways never get one).
      const { serveMcpRequest } = await import('./mcp-server.js');
      await serveMcpRequest(deps, identity, request, reply, clientGone(reply));
    });

    // Stateless: there is no session to stream server messages on (GET) or to end (DELETE).
    const notAllowed = async (_request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> =>
      jsonRpcError(reply, 405, -32000, 'Method not allowed: this MCP endpoint is stateless; send JSON-RPC requests with POST.', { allow: 'POST' });
    scope.get('/mcp', notAllowed);
    scope.delete('/mcp', notAllowed);
  });
}
