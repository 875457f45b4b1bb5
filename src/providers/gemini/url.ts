import { pathSegment, unsafeModelName, urlPathProblem } from '../../path-segment.js';
import { quoteInput } from '../../core/quote-input.js';
import { gatewayError } from '../../core/errors.js';

/** The collections a Gemini API model name may name: base models and the caller's tuned models. */
const COLLECTIONS = new Set(['models', 'tunedModels']);

/**
 * A Gemini model name split into its collection and id: `<id>` is `models/<id>`; `models/<id>` and
 * `tunedModels/<id>` name theirs. Anything else (more slashes, another collection, a `..`, `?`, `#`, `%` ...)
 * is refused with a 400: the name goes into the upstream URL, where it must not reach another path.
 */
function splitModel(model: string): { collection: string; id: string } {
  const slash = model.indexOf('/');
  const collection = slash === -1 ? 'models' : model.slice(0, slash);
  const id = slash === -1 ? model : model.slice(slash + 1);
  const problem = urlPathProblem(model);
  if (problem !== null) throw unsafeModelName(model, problem, 'the Gemini API');
  if (!COLLECTIONS.has(collection) || id === '' || id.includes('/')) {
    throw gatewayError('invalid_model_name', `Invalid 'model': Gemini model names are '<id>', 'models/<id>' or 'tunedModels/<id>'; got '${quoteInput(model, 100)}'.`, { param: 'model' });
  }
  return { collection, id };
}

/** `models/<id>` unless the model already names its collection (`tunedModels/x`, `models/x`), as request bodies name it. */
export function modelPath(model: string): string {
  const { collection, id } = splitModel(model);
  return `${collection}/${id}`;
}

/** The model's resource path as it goes into a URL: the id is one escaped segment. */
export function modelUrlPath(model: string): string {
  const { collection, id } = splitModel(model);
  return `${collection}/${pathSegment(id, 'the Gemini API')}`;
}

/** The generateContent URL under a base URL; streams ask for SSE framing (`alt=sse`) instead of a JSON array. */
export function generateContentUrl(baseUrl: string, model: string, stream: boolean): string {
  const base = baseUrl.endsWith('/') ? baseUrl.slice(0, -1) : baseUrl;
  return `${base}/${modelUrlPath(model)}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
}

/** A Gemini API version as the last segment of a base URL (`.../v1beta`, `.../v1`, `.../v1alpha`). */
const VERSION_SEGMENT = /\/v1(?:alpha|beta)?\/?$/;

/**
 * The base URL on the API version a client's own body was written for (native pass-through): Gemini's versions
 * take different fields (per-part `mediaResolution` was only in v1alpha, https://ai.google.dev/gemini-api/docs/media-resolution),
 * so the body goes to the version it was written for. A base URL that names no Gemini version (a proxy's own path)
 * is kept as it is.
 */
export function baseUrlForVersion(baseUrl: string, version: string | undefined): string {
  if (version === undefined || !/^v1(?:alpha|beta)?$/.test(version) || !VERSION_SEGMENT.test(baseUrl)) return baseUrl;
  return baseUrl.replace(VERSION_SEGMENT, `/${version}`);
}
