import { z } from 'zod';
import { definePlugin } from '../../src/index.js';

/**
 * Request side: puts a system message in front of the conversation, chosen by the caller's team.
 * `prompts` is keyed by team name or team id (the name is tried first); `default` covers callers without a
 * team or with a team not listed. Without a prompt for the caller the request goes on unchanged.
 */
const options = z.strictObject({
  prompts: z.record(z.string(), z.string().min(1)).default({}),
  default: z.string().min(1).optional(),
});

export default definePlugin({
  name: 'team-system-prompt',
  options,
  // Identity is known after auth; right after it, the prompt counts in rate limits and budget estimates too.
  placement: { after: 'auth' },
  create({ prompts, default: fallback }) {
    // Nothing configured: no stage at all, so this plugin costs nothing per request.
    if (Object.keys(prompts).length === 0 && fallback === undefined) return null;
    const byTeam = new Map(Object.entries(prompts));
    return {
      name: 'team-system-prompt',
      run(ctx, next) {
        // A system prompt means something to chat only.
        if (ctx.operation !== 'chat') return next();
        const team = ctx.identity?.team ?? null;
        const prompt = (team ? (byTeam.get(team.name) ?? byTeam.get(team.id)) : undefined) ?? fallback;
        if (prompt === undefined) return next();
        // A new array rather than unshift: the client's parsed body stays as it came (the request log reads it).
        ctx.request.messages = [{ role: 'system', content: prompt }, ...ctx.request.messages];
        prependNativeSystem(ctx.native, prompt);
        return next();
      },
    };
  },
});

/**
 * The Anthropic route keeps the client's own body and sends it as is to an Anthropic upstream (native
 * pass-through); there the system prompt is the top-level `system` field, so it is prepended there too.
 */
function prependNativeSystem(native: { format: string; body: Record<string, unknown> } | null, prompt: string): void {
  if (native?.format !== 'anthropic') return;
  const system = native.body.system;
  if (typeof system === 'string' && system.length > 0) native.body.system = `${prompt}\n\n${system}`;
  else if (Array.isArray(system)) native.body.system = [{ type: 'text', text: prompt }, ...(system as unknown[])];
  else native.body.system = prompt;
}
