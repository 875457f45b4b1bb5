// Error bodies in the exact shape the OpenAI API uses:
// {"error":{"message","type","param","code"}}, where param and code are null when they do not apply.

export interface OpenAIError {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

/** A field-level problem with a request, reported as a 400 invalid_request_error. */
export interface RequestProblem {
  message: string;
  param: string | null;
  code: string | null;
}

export function errorJson(error: OpenAIError): string {
  return JSON.stringify({ error });
}

export const INVALID_JSON_MESSAGE =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. " +
  'The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, ' +
  'please contact us through our help center at help.openai.com.)';

export function invalidRequest(problem: RequestProblem): OpenAIError {
  return { type: 'invalid_request_error', ...problem };
}

/** Unknown route or method: OpenAI answers 404 "Invalid URL (METHOD /path)". */
export function invalidUrl(method: string, path: string): OpenAIError {
  return { message: `Invalid URL (${method} ${path})`, type: 'invalid_request_error', param: null, code: null };
}

/** 401 for a missing or wrong bearer token. Both carry code invalid_api_key so callers can classify on it. */
export function authError(presentedKey: string | null): OpenAIError {
  const message =
    presentedKey === null
      ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
      : `Incorrect API key provided: ${maskKey(presentedKey)}. You can find your API key at https://platform.openai.com/account/api-keys.`;
  return { message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' };
}

/** OpenAI echoes only the ends of a rejected key. */
function maskKey(key: string): string {
  if (key.length <= 8) return '*'.repeat(key.length);
  return `${key.slice(0, 3)}${'*'.repeat(key.length - 7)}${key.slice(-4)}`;
}

/** The type/code/message OpenAI typically sends for a status, used when a scripted error mode leaves them out. */
export function defaultErrorFor(status: number, model: string): OpenAIError {
  const base = { param: null };
  switch (status) {
    case 400:
      return { ...base, type: 'invalid_request_error', code: null, message: 'The scripted upstream rejected this request.' };
    case 401:
      return authError('sk-scripted-upstream-key');
    case 403:
      return { ...base, type: 'invalid_request_error', code: 'unsupported_country_region_territory', message: 'Country, region, or territory not supported' };
    case 404:
      return { ...base, type: 'invalid_request_error', code: 'model_not_found', message: `The model \`${model}\` does not exist or you do not have access to it.` };
    case 429:
      // Request-rate limits use type "requests" (token limits use "tokens") with code rate_limit_exceeded.
      return {
        ...base,
        type: 'requests',
        code: 'rate_limit_exceeded',
        message:
          `Rate limit reached for ${model} in organization org-tollgate on requests per min (RPM): Limit 10000, Used 10000, Requested 1. ` +
          'Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more.',
      };
    case 503:
      return { ...base, type: 'service_unavailable_error', code: 'server_is_overloaded', message: 'The server is overloaded or not ready yet.' };
    default:
      if (status >= 500) {
        return { ...base, type: 'server_error', code: null, message: 'The server had an error while processing your request. Sorry about that!' };
      }
      return { ...base, type: 'invalid_request_error', code: null, message: `The scripted upstream answered ${status}.` };
  }
}
