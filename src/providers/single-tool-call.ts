import type { ChatCompletionRequest } from '../core/canonical.js';
import { gatewayError } from '../core/errors.js';

/** Whether the request asks for at most one tool call a turn where a call can come (tools offered, not `none`). */
export function asksSingleToolCall(request: ChatCompletionRequest): boolean {
  const tools = Array.isArray(request.tools) ? (request.tools as unknown[]) : [];
  return request.parallel_tool_calls === false && tools.length > 0 && request.tool_choice !== 'none';
}

/**
 * `parallel_tool_calls: false` for an upstream with no setting for one tool call per turn: its models may answer with
 * several calls, which a client that asked for one at a time may run wrongly. So it is a 400 naming the field, as the
 * client insists on what the upstream cannot do (a route moves on to its other targets), unless no call can come (no
 * tools, or tool_choice none), where it asks nothing; `true` is such an upstream's own behaviour. `message` is the
 * adapter's own, prefixed with its provider, as its other refusals are.
 */
export function refuseSingleToolCall(request: ChatCompletionRequest, message: string): void {
  if (!asksSingleToolCall(request)) return;
  throw gatewayError('unsupported_for_provider', message, { param: 'parallel_tool_calls' });
}
