import type { RequestContext } from '../core/context.js';
import type { CandidateGroup } from '../core/plan.js';
import type { Target } from '../core/provider.js';
import { modelLimits, type ModelLimits } from '../catalog/output-limits.js';
import { adapterFor } from '../providers/registry.js';

/**
 * Output tokens reserved for a request that sets no limit, sent to a model whose output limit neither the catalogue
 * nor the gateway's adapter knows (a local server's, a router's, a deployment's own name): its real cost is then
 * unbounded, and this stands for it.
 */
export const UNKNOWN_MODEL_OUTPUT_TOKENS = 4096;

/** The client's own output limit (`max_completion_tokens`, else `max_tokens`), or null when it sets none. Checked numbers only. */
export function clientOutputLimit(ctx: RequestContext): number | null {
  if (ctx.operation !== 'chat') return null;
  const { max_completion_tokens: completion, max_tokens: legacy } = ctx.request;
  if (typeof completion === 'number') return completion;
  return typeof legacy === 'number' ? legacy : null;
}

function choicesOf(ctx: RequestContext): number {
  return ctx.operation === 'chat' && typeof ctx.request.n === 'number' && ctx.request.n > 1 ? ctx.request.n : 1;
}

/** Every target a plan's groups can send the request to. */
export function targetsOf(groups: readonly CandidateGroup[]): Target[] {
  return groups.flatMap((group) => group.candidates.map((candidate) => candidate.target));
}

/**
 * Catalogue limits already looked up, by vendor id and model. The lookup waits on the catalogue (loaded lazily) and,
 * for a model it does not list, scans the vendor's whole table: a budgeted request without a limit of its own pays
 * for that once per model, then reads it here synchronously. Bounded, as a client can name any model: past
 * MAX_REMEMBERED models, new ones are looked up each time.
 */
const remembered = new Map<string, Map<string, ModelLimits | null>>();
const MAX_REMEMBERED = 1_000;
let rememberedCount = 0;

function rememberedLimits(target: Target): ModelLimits | null | undefined {
  return remembered.get(target.provider.vendor.id)?.get(target.model);
}

async function lookUpLimits(target: Target): Promise<ModelLimits | null> {
  const known = await modelLimits(target.provider.vendor.id, target.model).catch(() => null);
  if (rememberedCount < MAX_REMEMBERED && rememberedLimits(target) === undefined) {
    let models = remembered.get(target.provider.vendor.id);
    if (!models) remembered.set(target.provider.vendor.id, (models = new Map()));
    models.set(target.model, known);
    rememberedCount++;
  }
  return known;
}

/**
 * The most output tokens one answer from `target` can take when the client sets no limit, given the model's
 * catalogue limits (`known`). The gateway never sends more than the model's catalogue limit, nor less than its
 * adapter's own default (Anthropic's Messages requires `max_tokens`: see withOutputLimit), and a target that gets no
 * limit at all (OpenAI, Gemini: the request reaches them unchanged) may answer up to the model's limit. Only a model
 * with no known limit falls back to UNKNOWN_MODEL_OUTPUT_TOKENS (or to the adapter's default, which is then what is
 * sent).
 */
function targetOutputBound(ctx: RequestContext, target: Target, known: ModelLimits | null): number {
  const adapterDefault = ctx.operation === 'chat' ? (adapterFor(target.provider.vendor.format)?.defaultOutputLimit?.(target, ctx.request) ?? null) : null;
  if (known !== null) return Math.max(known.output, adapterDefault ?? 0);
  return adapterDefault ?? UNKNOWN_MODEL_OUTPUT_TOKENS;
}

/**
 * Output tokens a request can really cost, for the budget's reservation and the tokens-per-minute hold: its own
 * limit (the gateway only ever lowers it) times its choices when it sets one, else the largest bound among the
 * targets it can reach (see targetOutputBound). A number at once when nothing needs the catalogue (which loads lazily)
 * or every target's limits were looked up before (see remembered).
 */
export function reservedOutputTokens(ctx: RequestContext, targets: readonly Target[]): number | Promise<number> {
  if (ctx.operation !== 'chat') return 0;
  const own = clientOutputLimit(ctx);
  const choices = choicesOf(ctx);
  if (own !== null) return own * choices;
  if (targets.length === 0) return UNKNOWN_MODEL_OUTPUT_TOKENS * choices;
  let most = 0;
  for (const target of targets) {
    const known = rememberedLimits(target);
    // A model not looked up yet: all of them are, once, asynchronously.
    if (known === undefined) return Promise.all(targets.map(async (each) => targetOutputBound(ctx, each, await lookUpLimits(each)))).then((bounds) => Math.max(...bounds) * choices);
    most = Math.max(most, targetOutputBound(ctx, target, known));
  }
  return most * choices;
}
