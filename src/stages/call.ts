import { Observable, type Subscriber } from 'rxjs';
import type { ChatCompletionChunk, ResponseEvent } from '../dialects/openai/types.js';
import { GatewayError } from '../errors.js';
import type { RequestContext } from '../pipeline/context.js';
import type { Stage, StageDeps, StageFactory } from '../pipeline/stage.js';
import type { ProviderAdapter, Target } from '../providers/contract.js';
import { adapterFor } from '../providers/registry.js';
import type { UpstreamExchange } from '../providers/transport.js';
import { resolveDirectTarget } from '../routing/resolve-target.js';

class ClientGone extends Error {}

function invalidUpstream(target: Target, what: string): GatewayError {
  return new GatewayError({
    status: 502,
    type: 'upstream_error',
    code: 'invalid_upstream_response',
    message: `${target.provider.name}: ${what}`,
    retryable: true,
  });
}

/**
 * The innermost stage: invokes the provider adapter for the request's target and turns the upstream answer
 * into canonical response events. Unsubscribing aborts the upstream request.
 */
class CallStage implements Stage {
  readonly name = 'call';

  constructor(private readonly deps: StageDeps) {}

  run(ctx: RequestContext): Observable<ResponseEvent> {
    return new Observable<ResponseEvent>((subscriber) => {
      const controller = new AbortController();
      this.call(ctx, subscriber, controller.signal).catch((err: unknown) => {
        if (!controller.signal.aborted) subscriber.error(err);
      });
      return () => controller.abort(new ClientGone('client closed the request'));
    });
  }

  /**
   * Tries the request's targets in order. A target that fails with a retryable error before anything reached
   * the client hands over to the next (the fallback chain); a non-retryable error (bad request, auth) goes
   * straight back to the client, as does any failure once the answer has started.
   */
  private async call(ctx: RequestContext, subscriber: Subscriber<ResponseEvent>, signal: AbortSignal): Promise<void> {
    const targets = ctx.targets ?? [resolveDirectTarget(ctx.config, ctx.request.model, ctx.clientProviderKey)];
    ctx.targets = targets;
    const progress = { started: false };
    for (let attempt = 0; ; attempt++) {
      const target = targets[attempt] as Target;
      try {
        await this.attempt(ctx, target, attempt + 1, subscriber, signal, progress);
        subscriber.complete();
        return;
      } catch (err) {
        const next = targets[attempt + 1];
        if (signal.aborted || progress.started || !next || !(err instanceof GatewayError) || !err.retryable) throw err;
        this.deps.bus.emit('fallback.used', {
          requestId: ctx.id,
          from: `${target.provider.name}/${target.model}`,
          to: `${next.provider.name}/${next.model}`,
          reason: err.code ?? String(err.status),
        });
      }
    }
  }

  private async attempt(
    ctx: RequestContext,
    target: Target,
    attempt: number,
    subscriber: Subscriber<ResponseEvent>,
    signal: AbortSignal,
    progress: { started: boolean },
  ): Promise<void> {
    const adapter = adapterFor(target.provider.vendor.format);
    if (!adapter) throw GatewayError.internal(`No adapter for wire format '${target.provider.vendor.format}'.`);
    ctx.upstream = { provider: target.provider.name, upstreamModel: target.model, attempts: attempt, status: 0 };
    ctx.responseHeaders['x-tollgate-provider'] = target.provider.name;
    ctx.responseHeaders['x-tollgate-model'] = target.model;
    ctx.responseHeaders['x-tollgate-attempts'] = String(attempt);

    const started = performance.now();
    const attempted = (ok: boolean, status: number | null, errorCode: string | null): void => {
      this.deps.bus.emit('provider.attempted', {
        requestId: ctx.id,
        provider: target.provider.name,
        model: target.model,
        attempt,
        ok,
        status,
        durationMs: performance.now() - started,
        errorCode,
      });
    };

    let exchange: UpstreamExchange;
    try {
      exchange = await this.deps.transport.send(
        adapter.buildChatRequest(ctx.request, target),
        target.provider.timeouts,
        signal,
        target.provider.name,
      );
    } catch (err) {
      const failure = err as GatewayError;
      attempted(false, null, signal.aborted ? 'client_cancelled' : failure.code);
      throw failure;
    }
    const { statusCode } = exchange.response;
    ctx.upstream.status = statusCode;
    // Once an event is forwarded the client has (part of) an answer: no other target may take over.
    const emit = (event: ResponseEvent): void => {
      progress.started = true;
      subscriber.next(event);
    };
    try {
      if (statusCode >= 400) {
        const text = await exchange.response.body.text();
        throw adapter.parseError(statusCode, exchange.response.headers, text, target);
      }
      if (ctx.stream) await this.relayStream(ctx, adapter, target, exchange, emit);
      else await this.relayCompletion(ctx, adapter, target, exchange, emit);
      attempted(true, statusCode, null);
    } catch (err) {
      const failure = err instanceof GatewayError ? err : exchange.failure(err);
      attempted(false, statusCode, signal.aborted ? 'client_cancelled' : failure.code);
      throw failure;
    } finally {
      exchange.finish();
    }
  }

  private async relayCompletion(
    ctx: RequestContext,
    adapter: ProviderAdapter,
    target: Target,
    exchange: UpstreamExchange,
    emit: (event: ResponseEvent) => void,
  ): Promise<void> {
    const text = await exchange.response.body.text();
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

  private async relayStream(
    ctx: RequestContext,
    adapter: ProviderAdapter,
    target: Target,
    exchange: UpstreamExchange,
    emit: (event: ResponseEvent) => void,
  ): Promise<void> {
    const decoder = adapter.createStreamDecoder(target);
    const forward = (chunks: ChatCompletionChunk[]): void => {
      for (const chunk of chunks) {
        chunk.model = ctx.request.model;
        if (chunk.usage) ctx.usage = chunk.usage;
        emit({ kind: 'chunk', chunk });
      }
    };
    for await (const bytes of exchange.response.body) {
      forward(decoder.push(bytes as Buffer));
      const ready = ctx.clientReady();
      if (ready) await ready;
    }
    const tail = decoder.end();
    forward(tail.chunks);
    if (!tail.complete) throw invalidUpstream(target, 'the upstream stream ended before its end marker; the answer may be incomplete.');
  }
}

const callStage: StageFactory = {
  name: 'call',
  create: (_config, deps) => new CallStage(deps),
};

export default callStage;
