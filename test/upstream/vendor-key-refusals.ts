// How a vendor of the OpenAI format refuses a wrong API key, where it does not answer as OpenAI does (a 401
// invalid_api_key, openai-errors.ts authError).
import type { Vendor } from './vendor-refusals.js';
import type { Refusal } from './vendor-refusals.js';

/**
 * xAI answers a wrong key with 400 Bad Request ("An incorrect API key is supplied", docs.x.ai/developers/debugging), in
 * its own body: `{"code": "Client specified an invalid argument", "error": "Incorrect API key provided: xa***ey. ..."}`,
 * the key shown by its first and last two characters (as its answers quoted in client issues show it). A missing key is
 * its 401. Null: the vendor refuses a wrong key as OpenAI does.
 */
export function vendorKeyRefusal(vendor: Vendor | null, presented: string | null): Refusal | null {
  if (vendor !== 'xai' || presented === null) return null;
  const shown = `${presented.slice(0, 2)}***${presented.slice(-2)}`;
  const body = { code: 'Client specified an invalid argument', error: `Incorrect API key provided: ${shown}. You can obtain an API key from https://console.x.ai.` };
  return { status: 400, body: JSON.stringify(body) };
}
