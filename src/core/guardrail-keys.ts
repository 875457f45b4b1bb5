import { contextKey } from './extensions.js';

/**
 * What guardrails did to one request, as `<side>:<rule>:<action>` (`input:cards:redacted`): the guardrails stage
 * appends, the runner copies it into the terminal event, so the request log and metrics show it.
 */
export const GUARDRAIL_ACTIONS = contextKey<string[]>('tollgate.guardrails.actions');

/**
 * Set on a request the gateway makes for itself (a guardrail's moderation call): the guardrails stage lets it
 * through unchecked, so a moderation model is never asked to moderate its own prompt.
 */
export const INTERNAL_CALL = contextKey<string>('tollgate.internal-call');
