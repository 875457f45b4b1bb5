import type { FastifyRequest } from 'fastify';
import type { GovernanceStore } from '../governance/governance-store.js';
import { presentedCredential as anthropicCredential } from '../dialects/anthropic/routes/headers.js';
import { genAICredential } from '../dialects/gemini/routes/register.js';
import { liteLLMCredential } from '../dialects/litellm/routes/register.js';
import { presentedCredential as openAICredential } from '../dialects/openai/routes/register.js';

/** Where each mount's clients present their virtual key (the routes' own readers). */
const CREDENTIAL_OF: Record<string, (request: FastifyRequest) => string | null> = {
  openai: openAICredential,
  anthropic: anthropicCredential,
  gemini: genAICredential,
  litellm: liteLLMCredential,
};

/**
 * The virtual key (and team) a call refused before the pipeline presents, read as its route reads it: a known key's
 * refused calls (a body that is not JSON, an invalid request) then show in its log and usage like its other refusals.
 * Only a secret that names a key counts; anything else is an anonymous refusal.
 */
export function refusedCallKey(governance: GovernanceStore): (request: FastifyRequest, dialect: string) => { keyId: string; teamId: string | null } | null {
  return (request, dialect) => {
    const secret = (CREDENTIAL_OF[dialect] ?? openAICredential)(request);
    if (!secret) return null;
    const key = governance.findKeyBySecret(secret);
    return key ? { keyId: key.id, teamId: key.team ?? null } : null;
  };
}
