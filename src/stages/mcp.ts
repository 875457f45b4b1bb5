import { defer, Observable } from 'rxjs';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage, CompletionUsage, NativeStreamEvent, ResponseEvent } from '../core/canonical.js';
import type { McpPolicyConfig } from '../core/config.js';
import type { ChatContext, RequestContext, Spent } from '../core/context.js';
import { gatewayError } from '../core/errors.js';
import { INTERNAL_CALL } from '../core/guardrail-keys.js';
import type { McpHub, McpToolInfo } from '../core/mcp.js';
import { definePlugin } from '../core/plugin.js';
import type { Next, Stage } from '../core/stage.js';
import type { SlidingWindowLimiter } from '../governance/rate-limiter.js';
import { mayAskFor, mayUse, modeOf, modelToolName, takeToolCall, toolsFor } from '../mcp/mcp-policy.js';
import { LIMITER, MCP } from '../services.js';
import { limitedMap } from '../mcp/limited-map.js';
import { isRecord } from '../core/is-record.js';
import { nativeNextTurn } from '../mcp/native-turn.js';
import { NativeRunStream } from '../mcp/native-run-stream.js';
import { addCounts, nativeTurnUsage, withEarlierUsage } from '../mcp/run-usage.js';
import { modelToolSchema } from '../mcp/model-schema.js';
import { noAnthropicToolChoice, noGeminiToolCall, noToolChoice, unforcedToolChoice } from '../mcp/tool-choice.js';
import { COMPACT_FORMAT, RESPONSES_FORMAT } from '../wire/openai-responses/format.js';
import { COMPLETIONS_FORMAT } from '../wire/openai-completions/format.js';
import { NativeKeeper } from '../cache/native-keeper.js';
import { subscribeGuarded } from '../core/subscribe-guarded.js';

const SERVERS_HEADER = 'x-tollgate-mcp';
/** What a turn's native events ride on before it had a chunk of its own. */
const EMPTY_CHUNK: ChatCompletionChunk = { id: '', object: 'chat.completion.chunk', model: '', choices: [] };
const MODE_HEADER = 'x-tollgate-mcp-mode';
/** An agent turn's MCP tool calls running at once (see limitedMap); the rest wait for a free slot, within the time budget. */
const PARALLEL_TOOL_CALLS = 8;

/** One tool call a turn ended with, assembled from its deltas (streams) or read from the message. */
interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}


function header(ctx: RequestContext, name: string): string | undefined {
  const value = ctx.clientHeaders[name];
  return typeof value === 'string' ? value.trim() : undefined;
}

/** The MCP settings of a request's route, team and key, in that order. */
function policyLayers(ctx: RequestContext): Array<McpPolicyConfig | null | undefined> {
  const route = ctx.plan?.route ? (ctx.config.routes.get(ctx.plan.route)?.mcp ?? null) : null;
  return [route, ctx.identity?.team?.mcp, ctx.identity?.key.mcp];
}

/** The request's route's `mcp.allow`: it narrows the tools of the route's requests as a key's list does. */
function routeAllow(ctx: RequestContext): readonly string[] | undefined {
  return policyLayers(ctx)[0]?.allow;
}

function hasServers(layer: McpPolicyConfig | null | undefined): boolean {
  return (layer?.servers?.length ?? 0) > 0;
}

/**
 * The server names a request asks for: its header's, then its route's, team's and key's `servers` (layers as
 * {@link policyLayers} gives them). A team's or key's list is checked against the config when written through the
 * admin API; a server the config has dropped since is skipped, as a dropped plugin is, so the key keeps working
 * without that server's tools (it was a 400 on every chat call). A name in the header or a route's list is still
 * checked at each request.
 */
function requestedServers(ctx: RequestContext, layers: ReadonlyArray<McpPolicyConfig | null | undefined>): string[] {
  const named = new Set<string>();
  const fromHeader = header(ctx, SERVERS_HEADER);
  if (fromHeader) for (const name of fromHeader.split(',')) if (name.trim()) named.add(name.trim());
  const [route, ...governed] = layers;
  for (const name of route?.servers ?? []) named.add(name);
  for (const layer of governed) for (const name of layer?.servers ?? []) if (ctx.config.mcp.servers.has(name)) named.add(name);
  return [...named];
}

/**
 * The MCP tools as OpenAI function tools, and as Anthropic or Gemini tools for the client's own body (native
 * pass-through), each under the name the model sees (`name`, see modelToolName) and with a schema model APIs take
 * (see modelToolSchema).
 */
function openAITool(name: string, tool: McpToolInfo): Record<string, unknown> {
  return { type: 'function', function: { name, description: tool.description, parameters: modelToolSchema(tool.inputSchema) } };
}
function anthropicTool(name: string, tool: McpToolInfo): Record<string, unknown> {
  return { name, description: tool.description, input_schema: modelToolSchema(tool.inputSchema) };
}
/** An MCP tool as a Responses API function tool (flat, for a Responses client's own body to OpenAI). */
function responsesTool(name: string, tool: McpToolInfo): Record<string, unknown> {
  return { type: 'function', name, description: tool.description, parameters: tool.inputSchema, strict: false };
}

/** An MCP tool as a Gemini function declaration (its JSON Schema as `parametersJsonSchema`; none when it takes nothing). */
function geminiDeclaration(name: string, tool: McpToolInfo): Record<string, unknown> {
  const declaration: Record<string, unknown> = { name, description: tool.description };
  const schema = modelToolSchema(tool.inputSchema) as { type?: unknown; properties?: unknown } | undefined;
  const empty = schema?.type === 'object' && !(isRecord(schema.properties) && Object.keys(schema.properties).length > 0);
  if (schema && !empty) declaration.parametersJsonSchema = schema;
  return declaration;
}

function toolNames(tools: unknown): Set<string> {
  const names = new Set<string>();
  if (!Array.isArray(tools)) return names;
  for (const tool of tools) {
    if (!isRecord(tool)) continue;
    if (isRecord(tool.function) && typeof tool.function.name === 'string') names.add(tool.function.name);
    else if (typeof tool.name === 'string') names.add(tool.name);
  }
  return names;
}

/** The tool calls of a whole answer's first choice. */
function completionCalls(completion: ChatCompletion): ToolCall[] {
  const choice = completion.choices[0];
  if (!isRecord(choice) || !isRecord(choice.message) || !Array.isArray(choice.message.tool_calls)) return [];
  return choice.message.tool_calls.flatMap((call) =>
    isRecord(call) && isRecord(call.function) && typeof call.function.name === 'string'
      ? [{ id: typeof call.id === 'string' ? call.id : '', name: call.function.name, arguments: typeof call.function.arguments === 'string' ? call.function.arguments : '' }]
      : [],
  );
}

function completionText(completion: ChatCompletion): string | null {
  const choice = completion.choices[0];
  return isRecord(choice) && isRecord(choice.message) && typeof choice.message.content === 'string' ? choice.message.content : null;
}

function addUsage(total: CompletionUsage | null, usage: CompletionUsage | null | undefined): CompletionUsage | null {
  if (!usage) return total;
  if (!total) return { ...usage };
  return addCounts(total as Record<string, unknown>, usage as Record<string, unknown>) as CompletionUsage;
}

function addSpent(total: Spent | null, spent: Spent | null): Spent | null {
  if (!spent) return total;
  if (!total) return { ...spent, usage: { ...spent.usage } };
  const usage = { ...total.usage };
  for (const [field, value] of Object.entries(spent.usage)) {
    if (typeof value === 'number') (usage as Record<string, number>)[field] = ((usage as Record<string, number | undefined>)[field] ?? 0) + value;
  }
  return { usage, usd: total.usd + spent.usd, priced: total.priced && spent.priced, estimated: total.estimated || spent.estimated };
}

/** Puts `request` back as it was when `given` (a shallow copy) was taken: fields set since are taken off. */
function restoreRequest(request: ChatCompletionRequest, given: ChatCompletionRequest): void {
  for (const field of Object.keys(request)) if (!Object.hasOwn(given, field)) delete (request as unknown as Record<string, unknown>)[field];
  Object.assign(request, given);
}

/** The request of a run's last turn, in the canonical form and the client's own body: no tool may be called. */
function withoutToolCalls(ctx: ChatContext): void {
  Object.assign(ctx.request, noToolChoice());
  const native = ctx.native;
  if (native?.format === 'anthropic') (ctx as { native: typeof native }).native = { ...native, body: { ...native.body, ...noAnthropicToolChoice() } };
  else if (native?.format === 'gemini') (ctx as { native: typeof native }).native = { ...native, body: { ...native.body, ...noGeminiToolCall(native.body) } };
  // The Responses API takes OpenAI's own `tool_choice: "none"`.
  else if (native?.format === RESPONSES_FORMAT) (ctx as { native: typeof native }).native = { ...native, body: { ...native.body, ...noToolChoice() } };
}

/**
 * MCP tools for models. A request opts in with `x-tollgate-mcp: <server>[,<server>]`, or its route, team or key
 * attaches servers; the tools the caller may use are added to the request's `tools` as `<server>__<tool>`.
 * In `client` mode (the default) the model's tool calls go back to the client as they are (it may run them with
 * `POST /v1/mcp/tools/call`). In `auto` mode (config, or `x-tollgate-mcp-mode: auto`) tollgate runs the MCP tool
 * calls itself, appends their results and calls the model again (each turn through the inner stages: guardrails,
 * cache, spend and the call, so every turn is checked, cached, charged and logged) until an answer needs no MCP
 * tool, the step limit or the time budget; the client gets the final turn, streamed when it streams.
 */
class McpStage implements Stage {
  readonly name = 'mcp';

  constructor(
    private readonly hub: McpHub,
    private readonly limiter: SlidingWindowLimiter,
  ) {}

  /** Chat requests that name MCP servers (the header) or whose route, team or key attaches some. */
  appliesTo(ctx: RequestContext): boolean {
    // A compaction (POST /v1/responses/compact) takes no tools: there is no turn for a tool to run in.
    if (ctx.operation !== 'chat' || ctx.extensions.has(INTERNAL_CALL) || ctx.native?.format === COMPACT_FORMAT || ctx.native?.format === COMPLETIONS_FORMAT) return false;
    return Boolean(header(ctx, SERVERS_HEADER)) || policyLayers(ctx).some(hasServers);
  }

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    if (ctx.operation !== 'chat' || ctx.extensions.has(INTERNAL_CALL) || ctx.native?.format === COMPACT_FORMAT || ctx.native?.format === COMPLETIONS_FORMAT) return next();
    const layers = policyLayers(ctx);
    const servers = requestedServers(ctx, layers);
    if (servers.length === 0) return next();
    return defer(() => {
      const mode = this.modeHeader(ctx);
      for (const name of servers) {
        if (!ctx.config.mcp.servers.has(name)) throw gatewayError('invalid_value', `Unknown MCP server '${name}' in ${SERVERS_HEADER} or the MCP config.`, { param: SERVERS_HEADER });
        if (!mayAskFor(ctx.identity, name)) {
          throw gatewayError('mcp_tool_not_allowed', `This key may not use the MCP server '${name}'.`, { param: SERVERS_HEADER });
        }
        if (!mayAskFor(ctx.identity, name, routeAllow(ctx))) {
          throw gatewayError('mcp_tool_not_allowed', `The route '${ctx.plan?.route ?? ''}' does not allow the MCP server '${name}' (its mcp.allow).`, { param: SERVERS_HEADER });
        }
      }
      const own = toolNames(ctx.request.tools);
      const tools = this.addTools(ctx, toolsFor(this.hub, ctx.identity, servers, routeAllow(ctx)));
      if (tools.size === 0 || modeOf(mode, layers) !== 'auto') return next();
      return this.agent(ctx, next, tools, own);
    });
  }

  /**
   * The mode the request's header asks for (`auto` or `client`, in any case), if it has one. Another value is a 400: a
   * client that wrote `agent` or `on` asked for tollgate to run the tools, and in client mode would get the calls.
   */
  private modeHeader(ctx: RequestContext): string | undefined {
    const value = header(ctx, MODE_HEADER);
    if (value === undefined || value === '') return undefined;
    const mode = value.toLowerCase();
    if (mode === 'auto' || mode === 'client') return mode;
    throw gatewayError('invalid_value', `Invalid ${MODE_HEADER}: expected 'auto' (tollgate runs the MCP tool calls) or 'client'.`, { param: MODE_HEADER });
  }

  /**
   * Adds the tools to the request (and the client's own body, when it goes upstream as it is); returns them by the
   * name the model sees them under.
   */
  private addTools(ctx: ChatContext, tools: McpToolInfo[]): Map<string, McpToolInfo> {
    // A client's own tool of the same name wins: it asked for that one.
    const taken = toolNames(ctx.request.tools);
    const added = new Map<string, McpToolInfo>();
    for (const tool of tools) {
      const name = modelToolName(tool.name);
      if (!taken.has(name)) added.set(name, tool);
    }
    if (added.size === 0) return added;
    const each = <T>(render: (name: string, tool: McpToolInfo) => T): T[] => [...added].map(([name, tool]) => render(name, tool));
    ctx.request.tools = [...(Array.isArray(ctx.request.tools) ? ctx.request.tools : []), ...each(openAITool)];
    const native = ctx.native;
    if (native?.format === 'anthropic') {
      const body = native.body;
      (ctx as { native: typeof native }).native = { ...native, body: { ...body, tools: [...(Array.isArray(body.tools) ? body.tools : []), ...each(anthropicTool)] } };
    } else if (native?.format === 'gemini') {
      const body = native.body;
      const declarations = { functionDeclarations: each(geminiDeclaration) };
      (ctx as { native: typeof native }).native = { ...native, body: { ...body, tools: [...(Array.isArray(body.tools) ? body.tools : []), declarations] } };
    } else if (native?.format === 'openai-responses') {
      const body = native.body;
      (ctx as { native: typeof native }).native = { ...native, body: { ...body, tools: [...(Array.isArray(body.tools) ? body.tools : []), ...each(responsesTool)] } };
    }
    return added;
  }

  // ---- agent mode -----------------------------------------------------------------------------------

  /**
   * `own` are the client's own tools: a turn calling one ends the run (the client runs it). Any other call is
   * tollgate's: an MCP tool offered to the request is run, a name offered to nobody (the model made it up, or it
   * names a tool outside the key's allow-list) is answered with a tool error the model can correct.
   */
  private agent(ctx: ChatContext, next: Next, mcpTools: ReadonlyMap<string, McpToolInfo>, own: ReadonlySet<string>): Observable<ResponseEvent> {
    const { maxSteps, timeBudgetMs } = ctx.config.mcp;
    const deadline = performance.now() + timeBudgetMs;
    return new Observable<ResponseEvent>((subscriber) => {
      const controller = new AbortController();
      let current: { unsubscribe(): void } | null = null;
      let spent: Spent | null = null;
      let usage: CompletionUsage | null = null;
      let stopped = false;
      let ended = false;
      // A model turn is running (its charge not yet added to `spent`), not the tools between turns.
      let turnOpen = false;
      // The client's own format, when its body goes upstream as it is (native pass-through): the answering turn then
      // reaches it as the upstream wrote it, with the usage of every turn in that format's shape (see run-usage.ts).
      const format = ctx.native?.format === 'anthropic' || ctx.native?.format === 'gemini' ? ctx.native.format : null;
      const nativeStream = ctx.stream && format ? new NativeRunStream(format) : null;
      /** The earlier turns' usage as their upstream gave it; null once a turn was not the upstream's own. */
      let nativeUsage: Record<string, unknown> | null = {};
      /**
       * What the run cost so far, for the request log: the turns done and the one running (its charge is on
       * ctx.spent once its spend stage settled it). The charges themselves went to the key turn by turn.
       */
      const total = (): Spent | null => (turnOpen ? addSpent(spent, ctx.spent) : spent);

      /** One model turn; `final` when no further turn may follow (the last step, or the budget spent). */
      const turn = (step: number): void => {
        const final = step >= maxSteps || performance.now() >= deadline;
        // The last turn after tools ran answers: a call it made would go to a client that never offered the tool.
        if (final && step > 1) withoutToolCalls(ctx);
        const held: ResponseEvent[] = [];
        const calls = new Map<number, ToolCall>();
        let text = '';
        let passing = false;
        let completion: ChatCompletion | null = null;
        let completionEvent: ResponseEvent | null = null;
        let turnUsage: CompletionUsage | null = null;
        // The upstream's own answer of this turn (native pass-through), for the next turn's body (see nativeNextTurn).
        const kept = new NativeKeeper(ctx.native?.format ?? null);
        // Whether this turn streams the upstream's own events (its first chunk tells, as for the dialects).
        let nativeTurn: boolean | null = null;
        let lastChunk: ChatCompletionChunk = EMPTY_CHUNK;
        const earlierUsage = step > 1 ? nativeUsage : null;
        nativeStream?.startTurn(earlierUsage, final);
        // The upstream's usage is the turn's own: the spend stage charges it when set, so one left from the turn
        // before would be charged again for a turn that failed or was cut off before its upstream reported any.
        ctx.usage = null;
        ctx.usageSoFar = null;
        // Each turn's spend stage leaves its own charge here: a turn that ends uncharged (answered before the
        // spend stage) must not count the turn before it again.
        ctx.spent = null;
        turnOpen = true;
        const emit = (event: ResponseEvent): void => {
          if (stopped) return;
          subscriber.next(event);
        };
        const emitNative = (chunk: ChatCompletionChunk, events: NativeStreamEvent[]): void => {
          if (events.length > 0 && nativeStream) emit({ kind: 'chunk', chunk: { id: chunk.id, object: 'chat.completion.chunk', model: chunk.model, choices: [] }, native: { format: nativeStream.format, events } });
        };
        // The request (and the client's own body) as this stage hands it to the turn. The stages inside (a plugin placed
        // before `call`, guardrails' redaction) change it for this turn and run again on the next one, which is built
        // from this: built from what they left, a plugin's system prompt went upstream twice on the second turn, three
        // times on the third. (A plugin may set a field of the body in place, as team-system-prompt sets `system`.)
        const given = { ...ctx.request };
        const givenNative = ctx.native ? { ...ctx.native, body: { ...ctx.native.body } } : null;
        current = subscribeGuarded(next(), {
          next: (received) => {
            kept.add(received);
            if (received.kind === 'completion') {
              completion = received.completion;
              completionEvent = received;
              return;
            }
            if (received.kind !== 'chunk') return emit(received);
            const native = received.native;
            lastChunk = received.chunk;
            if (nativeTurn === null) {
              nativeTurn = nativeStream !== null && (step === 1 || nativeUsage !== null) && native?.format === nativeStream.format && Array.isArray(native.events);
              // A turn another format's provider answered (a fallback) cannot go on in the upstream's own stream the
              // client has: say so rather than end it short.
              if (!nativeTurn && nativeStream?.begun) {
                throw gatewayError('upstream_stream_error', 'A later turn of this MCP agent run was answered in another format than the one already streamed to the client; it cannot continue that stream.');
              }
            }
            // The upstream's events go to the client on chunks of their own, those of a tool call tollgate runs never.
            if (nativeTurn && nativeStream && native?.events) emitNative(received.chunk, nativeStream.push(native.events));
            // The chunks themselves go on without the upstream's events (which would carry a held call out with the
            // text of the same read): rendered for a client of another format, read by the stages for a native one.
            const event: ResponseEvent = received.native ? { kind: 'chunk', chunk: received.chunk } : received;
            const chunk = event.chunk;
            if (chunk.usage) turnUsage = chunk.usage;
            const choice = chunk.choices[0];
            const delta = isRecord(choice) && isRecord(choice.delta) ? choice.delta : null;
            if (Array.isArray(delta?.tool_calls)) {
              for (const part of delta.tool_calls) {
                if (!isRecord(part)) continue;
                const index = typeof part.index === 'number' ? part.index : 0;
                const call = calls.get(index) ?? { id: '', name: '', arguments: '' };
                if (typeof part.id === 'string') call.id = part.id;
                const fn = isRecord(part.function) ? part.function : {};
                // Whole in whichever delta has it: some providers repeat it in every delta of a call (OpenAI's SDK replaces too).
                if (typeof fn.name === 'string' && fn.name !== '') call.name = fn.name;
                if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
                calls.set(index, call);
              }
            }
            if (typeof delta?.content === 'string') text += delta.content;
            // Text before any tool call streams live (a final answer should not wait); tool calls are held until
            // the turn ends, when it is known whether tollgate runs them or hands them to the client.
            if (!passing && calls.size === 0 && typeof delta?.content === 'string' && delta.content !== '') {
              passing = true;
              for (const earlier of held.splice(0)) emit(earlier);
            }
            const carriesCalls = Array.isArray(delta?.tool_calls) || (isRecord(choice) && choice.finish_reason === 'tool_calls');
            if (passing && !carriesCalls && !chunk.usage) emit(event);
            else held.push(event);
          },
          error: (err: unknown) => {
            // A failed turn (its charge settled before the error came) ends the run: the log counts every turn.
            ctx.spent = total();
            turnOpen = false;
            ended = true;
            subscriber.error(err);
          },
          complete: () => {
            if (stopped) return;
            spent = addSpent(spent, ctx.spent);
            turnOpen = false;
            const done = completion as ChatCompletion | null;
            const toolCalls = done ? completionCalls(done) : [...calls.values()];
            const runnable = toolCalls.length > 0 && toolCalls.every((call) => !own.has(call.name));
            if (!runnable || final) {
              ctx.spent = spent;
              ended = true;
              if (done) {
                // The answer as it came, with the upstream's own body (native pass-through) that keeps what the
                // canonical form cannot (Anthropic's thinking signatures, server tool blocks, Gemini's thought
                // signatures), which the client must hand back to go on; after more turns, with their usage added.
                const event = completionEvent as ResponseEvent;
                if (step === 1) emit(event);
                else {
                  const own = event.native?.format === format && event.native?.body && nativeUsage ? event.native : null;
                  const completion = { ...done, usage: addUsage(usage, done.usage) ?? done.usage ?? null };
                  emit({ kind: 'completion', completion, ...(own?.body ? { native: { format: own.format, body: withEarlierUsage(own.format, own.body, nativeUsage) } } : {}) });
                }
              } else {
                if (nativeTurn && nativeStream) emitNative(lastChunk, nativeStream.finish(true));
                for (const event of held) {
                  if (event.kind === 'chunk' && event.chunk.usage && step > 1) emit({ kind: 'chunk', chunk: { ...event.chunk, usage: addUsage(usage, event.chunk.usage) } });
                  else emit(event);
                }
              }
              subscriber.complete();
              return;
            }
            usage = addUsage(usage, done ? done.usage : turnUsage);
            nativeStream?.finish(false);
            const turnNative = kept.kept();
            nativeUsage = nativeUsage && turnNative ? addCounts(nativeUsage, nativeTurnUsage(turnNative) ?? {}) : null;
            // The time budget bounds the tools too, not only whether another turn starts: a tool slower than what is
            // left of it (call_timeout_ms may be far longer) is given up, the model reads an error and answers.
            const budget = new AbortController();
            const abortTools = (): void => budget.abort(controller.signal.reason);
            controller.signal.addEventListener('abort', abortTools, { once: true });
            const timer = setTimeout(() => budget.abort(new Error('the agent time budget ran out')), Math.max(0, deadline - performance.now()));
            const settled = (): void => {
              clearTimeout(timer);
              controller.signal.removeEventListener('abort', abortTools);
            };
            this.runTools(ctx, toolCalls, mcpTools, budget.signal).then((results) => {
              settled();
              if (stopped) return;
              const assistant: ChatMessage = {
                role: 'assistant',
                content: (done ? completionText(done) : text) || null,
                tool_calls: toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
              };
              restoreRequest(ctx.request, given);
              ctx.request.messages = [...given.messages, assistant, ...results];
              // A forced tool choice forced this turn only: the model answers from the results or calls again.
              Object.assign(ctx.request, unforcedToolChoice(ctx.request.tool_choice));
              // A client's own body goes on with the upstream's own turn and the results in its format; when it
              // cannot, the conversation is tollgate's and later turns go upstream from the canonical request.
              if (givenNative) {
                const turns = toolCalls.map((call, i) => {
                  const result = typeof results[i]?.content === 'string' ? (results[i]?.content as string) : '';
                  return { name: call.name, result, isError: result.startsWith('Error:') };
                });
                const body = nativeNextTurn(givenNative, kept.kept(), turns);
                (ctx as { native: RequestContext['native'] }).native = body ? { ...givenNative, body } : null;
              }
              turn(step + 1);
            }, (err: unknown) => {
              settled();
              ctx.spent = total();
              ended = true;
              subscriber.error(err);
            });
          },
        });
      };

      turn(1);
      return () => {
        stopped = true;
        controller.abort(new Error('the client went away'));
        current?.unsubscribe();
        if (ended) return;
        // The client went away mid-run. The turn cut off settles its charge after the unsubscribe above (in
        // ctx.pending, which the runner awaits before the request's terminal event): the log then gets every turn's.
        const settling = [...ctx.pending];
        ctx.pending.push(
          Promise.allSettled(settling).then(() => {
            ctx.spent = total();
          }),
        );
      };
    });
  }

  /**
   * Runs a turn's tool calls, PARALLEL_TOOL_CALLS at a time; each gives a tool message, an error one when it failed or
   * was refused.
   */
  private async runTools(ctx: ChatContext, calls: readonly ToolCall[], tools: ReadonlyMap<string, McpToolInfo>, signal: AbortSignal): Promise<ChatMessage[]> {
    const caller = { requestId: ctx.id, keyId: ctx.identity?.key.id ?? null, teamId: ctx.identity?.team?.id ?? null, via: 'agent' as const };
    return limitedMap(
      calls,
      PARALLEL_TOOL_CALLS,
      async (call): Promise<ChatMessage> => {
        const message = (content: string): ChatMessage => ({ role: 'tool', tool_call_id: call.id, content });
        // The model names a tool as it saw it. A name it was not offered is refused alike whether a server has such
        // a tool outside the key's allow-list or none does (the key cannot probe which exist).
        const tool = tools.get(call.name);
        if (!tool) return message(`Error: there is no tool '${call.name}' available to you; use one of the tools you were given.`);
        if (!mayUse(ctx.identity, tool, routeAllow(ctx))) return message(`Error: this key may not use the tool '${call.name}'.`);
        const limited = takeToolCall(this.limiter, ctx.identity);
        if (limited) return message(`Error: ${limited.message}`);
        let args: unknown;
        try {
          args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
        } catch {
          return message(`Error: the arguments of '${call.name}' are not valid JSON.`);
        }
        if (!isRecord(args)) return message(`Error: the arguments of '${call.name}' must be a JSON object.`);
        const result = await this.hub.callTool(tool.name, args, caller, { signal });
        // Cut short by the time budget (a client that went away reads nothing): say so, not just "cancelled".
        if (result.status === 'error' && signal.aborted) return message(`Error: the tool '${call.name}' did not answer within the request's time budget (mcp.agent.time_budget_ms).`);
        // A tool that reported its own failure (isError: arguments its schema refused, a failure of its own) is an
        // error to the model too, so it can correct its call rather than take the text for an answer.
        if (result.isError && !result.text.startsWith('Error:')) return message(`Error: ${result.text || `the tool '${call.name}' failed`}`);
        return message(result.text);
      },
    );
  }
}

export default definePlugin({
  name: 'mcp',
  requires: [MCP, LIMITER],
  // No MCP server configured: no stage at all, so requests pay nothing for MCP.
  create: (_options, config, services) => (config.mcp.servers.size > 0 && services.has(MCP) ? new McpStage(services.get(MCP), services.get(LIMITER)) : null),
});
