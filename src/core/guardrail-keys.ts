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

/**
 * On an internal call made for a client's request (a guardrail's moderation of it): the virtual key and team it is
 * charged to. The spend stage reserves its cost on their budgets and charges it to them (not as a request of
 * their own), so a key cannot spend the operator's money on classifiers once its budget is gone.
 */
export const CHARGE_TO = contextKey<{ keyId: string; teamId: string | null }>('tollgate.charge-to');
