import type { IncomingHttpHeaders } from 'node:http';
import { Observable } from 'rxjs';
import type { ChatCompletionChunk, ResponseEvent } from '../dialects/openai/types.js';
import { GatewayError } from '../errors.js';
import type { RequestContext } from '../pipeline/context.js';
import type { Stage, StageDeps, StageFactory } from '../pipeline/stage.js';
import type { ProviderAdapter, StreamDecoder, Target } from '../providers/contract.js';
import { adapterFor } from '../providers/registry.js';
import type { UpstreamCall } from '../providers/transport.js';
import { resolveDirectTarget } from '../routing/resolve-target.js';

function invalidUpstream(target: Target, what: string): GatewayError {
  return new GatewayError({
    status: 502,
    type: 'upstream_error',
    code: 'invalid_upstream_response',
    message: `${target.provider.name}: ${what}`,
    retryable: true,
  });
}

/** What one request's attempts share: whether the client got anything yet, and how to stop the live call. */
interface CallState {
  started: boolean;
  cancelled: boolean;
  live: UpstreamCall | null;
}

/**
 * The innermost stage: invokes the provider adapter for the request's targets and turns the upstream answer
 * into canonical response events. Unsubscribing aborts the upstream request.
 */
class CallStage implements Stage {
  readonly name = 'call';

  constructor(private readonly deps: StageDeps) {}

  run(ctx: RequestContext): Observable<ResponseEvent> {
    return new Observable<ResponseEvent>((subscriber) => {
      const state: CallState = { started: false, cancelled: false, live: null };
      const emit = (event: ResponseEvent): void => {
        state.started = true;
        subscriber.next(event);
      };
      this.call(ctx, emit, state).then(
        () => subscriber.complete(),
        (err: unknown) => {
          if (!state.cancelled) subscriber.error(err);
        },
      );
      return () => {
        // Runs on completion too, when nothing is live any more.
        state.cancelled = true;
        state.live?.abort();
      };
    });
  }

  /**
   * Tries the request's targets in order. A target that fails with a retryable error before anything reached
   * the client hands over to the next (the fallback chain); a non-retryable error (bad request, auth) goes
   * straight back to the client, as does any failure once the answer has started.
   */
  private async call(ctx: RequestContext, emit: (event: ResponseEvent) => void, state: CallState): Promise<void> {
    const targets = ctx.targets ?? [resolveDirectTarget(ctx.config, ctx.request.model, ctx.clientProviderKey)];
    ctx.targets = targets;
    for (let attempt = 0; ; attempt++) {
      const target = targets[attempt] as Target;
      try {
        await this.attempt(ctx, target, attempt + 1, emit, state);
        return;
      } catch (err) {
        const next = targets[attempt + 1];
        if (state.cancelled || state.started || !next || !(err instanceof GatewayError) || !err.retryable) throw err;
        this.deps.bus.emit('fallback.used', {
          requestId: ctx.id,
          from: `${target.provider.name}/${target.model}`,
          to: `${next.provider.name}/${next.model}`,
          reason: err.code ?? String(err.status),
        });
      }
    }
  }

  private attempt(ctx: RequestContext, target: Target, attempt: number, emit: (event: ResponseEvent) => void, state: CallState): Promise<void> {
    const adapter = adapterFor(target.provider.vendor.format);
    if (!adapter) return Promise.reject(GatewayError.internal(`No adapter for wire format '${target.provider.vendor.format}'.`));
    const upstream = { provider: target.provider.name, upstreamModel: target.model, attempts: attempt, status: 0 };
    ctx.upstream = upstream;
    ctx.responseHeaders['x-tollgate-provider'] = target.provider.name;
    ctx.responseHeaders['x-tollgate-model'] = target.model;
    ctx.responseHeaders['x-tollgate-attempts'] = String(attempt);
    const started = performance.now();
    const { bus } = this.deps;
    const attempted = (ok: boolean, errorCode: string | null): void => {
      if (!bus.hasListeners('provider.attempted')) return;
      bus.emit('provider.attempted', {
        requestId: ctx.id,
        provider: target.provider.name,
        model: target.model,
        attempt,
        ok,
        status: upstream.status || null,
        durationMs: performance.now() - started,
        errorCode,
      });
    };

    return new Promise<void>((resolve, reject) => {
      let headers: IncomingHttpHeaders = {};
      let buffered: Buffer[] | null = null;
      let decoder: StreamDecoder | null = null;
      const succeed = (): void => {
        state.live = null;
        attempted(true, null);
        resolve();
      };
      const fail = (error: GatewayError): void => {
        state.live = null;
        attempted(false, state.cancelled ? 'client_cancelled' : error.code);
        reject(error);
      };
      const call = this.deps.transport.dispatch(adapter.buildChatRequest(ctx.request, target), target.provider.timeouts, target.provider.name, {
        onStart(status, responseHeaders) {
          upstream.status = status;
          headers = responseHeaders;
          if (status >= 400 || !ctx.stream) buffered = [];
          else decoder = adapter.createStreamDecoder(target);
        },
        onData(chunk) {
          if (buffered) {
            buffered.push(chunk);
            return;
          }
          relayChunks(ctx, decoder?.push(chunk) ?? [], emit);
          // A slow client pauses the upstream read instead of piling chunks up in memory.
          const ready = ctx.clientReady();
          if (ready) {
            call.pause();
            void ready.then(() => call.resume());
          }
        },
        onEnd() {
          try {
            if (upstream.status >= 400) {
              throw adapter.parseError(upstream.status, headers, Buffer.concat(buffered ?? []).toString('utf8'), target);
            }
            if (buffered) relayCompletion(ctx, adapter, target, Buffer.concat(buffered).toString('utf8'), emit);
            else if (decoder) {
              const tail = decoder.end();
              relayChunks(ctx, tail.chunks, emit);
              if (!tail.complete) throw invalidUpstream(target, 'the upstream stream ended before its end marker; the answer may be incomplete.');
            }
            succeed();
          } catch (err) {
            fail(err instanceof GatewayError ? err : GatewayError.internal());
          }
        },
        onError: fail,
      });
      state.live = call;
    });
  }
}

function relayCompletion(ctx: RequestContext, adapter: ProviderAdapter, target: Target, text: string, emit: (event: ResponseEvent) => void): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidUpstream(target, 'the upstream answered with a body that is not JSON.');
  }
  const completion = adapter.parseChatResponse(parsed, target);
  // Clients see the model name they asked for, whichever upstream model served it.
  completion.model = ctx.request.model;
  ctx.usage = completion.usage ?? null;
  emit({ kind: 'completion', completion });
}

function relayChunks(ctx: RequestContext, chunks: ChatCompletionChunk[], emit: (event: ResponseEvent) => void): void {
  for (const chunk of chunks) {
    chunk.model = ctx.request.model;
    if (chunk.usage) ctx.usage = chunk.usage;
    emit({ kind: 'chunk', chunk });
  }
}

const callStage: StageFactory = {
  name: 'call',
  create: (_config, deps) => new CallStage(deps),
};

export default callStage;
