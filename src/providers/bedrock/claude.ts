import type { NativeRequest } from '../../core/canonical.js';
import type { Target } from '../../core/provider.js';
import { platformBetas } from '../platform-betas.js';
import { withoutUnservedBetaFields } from '../beta-fields.js';

/** Claude on Bedrock: a base model id, a cross-region inference profile (`us.anthropic.claude-…`) or an ARN naming one. */
const CLAUDE = /(^|[.:/])anthropic\.claude-/;

export function isClaude(model: string): boolean {
  return CLAUDE.test(model);
}

/**
 * Whether the target's model is Claude: its id names it, or the operator declared it (`claude_models`), as an
 * application inference profile's or a provisioned model's ARN never names the model behind it.
 */
export function isClaudeTarget(target: Target): boolean {
  return isClaude(target.model) || target.provider.options.claudeModels?.includes(target.model) === true;
}

/** The Messages API version Claude on Bedrock takes in the body (instead of the anthropic-version header). */
export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/**
 * An Anthropic client's own Messages body for Claude's InvokeModel, as Anthropic's Bedrock SDK sends it: without
 * `model` (the URL names it) and `stream` (the operation says it), both of which Bedrock refuses in the body; with
 * `anthropic_version` (the client's own if it wrote one) and the client's beta opt-ins as `anthropic_beta`, as
 * Bedrock takes no anthropic-beta header (unless the body has its own): those Bedrock serves, as it names them,
 * since one it does not know fails the whole request (platform-betas.ts). Everything else (thinking blocks with their
 * signatures, redacted thinking, top_k, metadata, cache_control, fields Anthropic adds later) goes as the client
 * wrote it, so Bedrock judges the request, not tollgate, but for what only a beta Bedrock does not serve allows
 * (beta-fields.ts).
 */
export function invokeBody(native: NativeRequest): Record<string, unknown> {
  const { model: _model, stream: _stream, ...body } = withoutUnservedBetaFields('bedrock', native.body);
  const betas = platformBetas('bedrock', native.betas ?? []);
  return {
    ...body,
    anthropic_version: body.anthropic_version ?? BEDROCK_ANTHROPIC_VERSION,
    ...(betas.length > 0 && body.anthropic_beta === undefined ? { anthropic_beta: betas } : {}),
  };
}
