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

  private async call(ctx: RequestContext, subscriber: Subscriber<ResponseEvent>, signal: AbortSignal): Promise<void> {
    const target = ctx.targets?.[0] ?? resolveDirectTarget(ctx.config, ctx.request.model, ctx.clientProviderKey);
    ctx.targets ??= [target];
    const adapter = adapterFor(target.provider.vendor.format);
    if (!adapter) throw GatewayError.internal(`No adapter for wire format '${target.provider.vendor.format}'.`);
    ctx.upstream = { provider: target.provider.name, upstreamModel: target.model, attempts: 1, status: 0 };
    ctx.responseHeaders['x-tollgate-provider'] = target.provider.name;
    ctx.responseHeaders['x-tollgate-model'] = target.model;

    const started = performance.now();
    const attempted = (ok: boolean, status: number | null, errorCode: string | null): void => {
      this.deps.bus.emit('provider.attempted', {
        requestId: ctx.id,
        provider: target.provider.name,
        model: target.model,
        attempt: 1,
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
    try {
      if (statusCode >= 400) {
        const text = await exchange.response.body.text();
        throw adapter.parseError(statusCode, exchange.response.headers, text, target);
      }
      if (ctx.stream) await this.relayStream(ctx, adapter, target, exchange, subscriber);
      else await this.relayCompletion(ctx, adapter, target, exchange, subscriber);
      attempted(true, statusCode, null);
      subscriber.complete();
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
    subscriber: Subscriber<ResponseEvent>,
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
    subscriber.next({ kind: 'completion', completion });
  }

  private async relayStream(
    ctx: RequestContext,
    adapter: ProviderAdapter,
    target: Target,
    exchange: UpstreamExchange,
    subscriber: Subscriber<ResponseEvent>,
  ): Promise<void> {
    const decoder = adapter.createStreamDecoder(target);
    const forward = (chunks: ChatCompletionChunk[]): void => {
      for (const chunk of chunks) {
        chunk.model = ctx.request.model;
        if (chunk.usage) ctx.usage = chunk.usage;
        subscriber.next({ kind: 'chunk', chunk });
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
