import { createHmac } from 'node:crypto';
import type { WebhookChannelRuntime } from '../../../core/config.js';

/**
 * The generic webhook: the notification's JSON exactly as queued, with tollgate's headers (the attempt, the
 * timestamp, and the signature when the channel has a secret).
 */

/** Signs a delivery: hex HMAC-SHA256 of `timestamp + "." + body` with the channel's secret. */
export function signature(secret: string, timestamp: string, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** The headers of one webhook attempt over the channel's own (content type and user agent are the caller's). */
export function webhookHeaders(channel: WebhookChannelRuntime, body: string, attempt: number, now: number): Record<string, string> {
  const timestamp = String(Math.floor(now / 1000));
  const headers: Record<string, string> = { 'x-tollgate-timestamp': timestamp, 'x-tollgate-attempt': String(attempt) };
  if (channel.secret !== null) headers['x-tollgate-signature'] = `v1=${signature(channel.secret, timestamp, body)}`;
  return headers;
}
