/**
 * Which configured values are credentials by their name: a header (`authorization`, `x-api-key`,
 * `cf-aig-authorization`, `Ocp-Apim-Subscription-Key`) or a URL's query parameter (`?api_key=`, `?token=`, `?sig=`).
 * The API masks them (config/present.ts), and an upstream error that quotes them has them taken out
 * (providers/upstream-error.ts).
 */

const SENSITIVE_HEADER = /key|token|secret|auth|password|cookie/i;

/** Query parameter names whose values may be credentials. */
export const SENSITIVE_QUERY = /key|token|secret|auth|password|sig|credential|code/i;

/** Headers whose values may be credentials: masked when shown, sealed when stored. */
export function isSensitiveHeader(name: string): boolean {
  return SENSITIVE_HEADER.test(name);
}

/** The credentials a URL holds (a user and password, the values of query parameters named like credentials), raw and decoded. */
export function urlCredentials(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const found = [parsed.username, parsed.password];
  for (const pair of parsed.search.slice(1).split('&')) {
    const equals = pair.indexOf('=');
    if (equals !== -1 && SENSITIVE_QUERY.test(pair.slice(0, equals))) found.push(pair.slice(equals + 1));
  }
  const decoded = found.map((value) => {
    try {
      return decodeURIComponent(value.replaceAll('+', ' '));
    } catch {
      return value;
    }
  });
  return [...new Set([...found, ...decoded])].filter((value) => value !== '');
}
