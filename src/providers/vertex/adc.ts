import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gatewayError } from '../../core/errors.js';
import { vertexCredential, type VertexCredential } from './credentials.js';
import { metadataBaseUrl } from './metadata-server.js';

/**
 * Application Default Credentials for a `vertex` provider with no key, in google-auth-library's order. The first,
 * GOOGLE_APPLICATION_CREDENTIALS (and tollgate's own VERTEX_CREDENTIALS), is the provider's key already (the config
 * reads it as it reads any vendor's key variable); what is left is looked at here, on the provider's first call (never
 * at start: a gateway that does not call Vertex reads no file and asks no metadata server):
 *   1. gcloud's well-known file, `application_default_credentials.json` under CLOUDSDK_CONFIG, else
 *      `~/.config/gcloud` (`%APPDATA%\gcloud` on Windows): a user credential, a service account or an impersonated one;
 *   2. the Google Cloud metadata server (GCE_METADATA_HOST, else metadata.google.internal).
 * What was found is kept, as google-auth-library keeps it: a later `gcloud auth application-default login` is seen
 * after a restart.
 */

/** gcloud's Application Default Credentials file, or null when no configuration directory is known. */
export function gcloudAdcFile(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string | null {
  const dir = env.CLOUDSDK_CONFIG || (platform === 'win32' ? env.APPDATA && join(env.APPDATA, 'gcloud') : env.HOME && join(env.HOME, '.config', 'gcloud'));
  return dir ? join(dir, 'application_default_credentials.json') : null;
}

const found = new Map<string, VertexCredential>();
const looking = new Map<string, Promise<VertexCredential>>();

async function lookUp(adcFile: string | null, baseUrl: string): Promise<VertexCredential> {
  if (adcFile) {
    let text: string | null = null;
    try {
      text = await readFile(adcFile, 'utf8');
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT' && (err as { code?: string }).code !== 'ENOTDIR') {
        throw gatewayError('invalid_provider_credentials', `vertex: cannot read the gcloud Application Default Credentials file '${adcFile}'.`);
      }
    }
    if (text !== null) {
      // Parsed as the JSON it must hold: text that is not would otherwise be taken for an access token or a path.
      if (!text.trim().startsWith('{')) throw gatewayError('invalid_provider_credentials', `vertex: the gcloud Application Default Credentials file '${adcFile}' is not JSON.`);
      return vertexCredential(text);
    }
  }
  return { kind: 'metadata-server', baseUrl, adcFile };
}

/** Where the environment says to look, as the key the lookup is kept under. */
function placesOf(env: NodeJS.ProcessEnv): { adcFile: string | null; baseUrl: string; key: string } {
  const adcFile = gcloudAdcFile(env);
  const baseUrl = metadataBaseUrl(env);
  return { adcFile, baseUrl, key: `${adcFile ?? ''}\0${baseUrl}` };
}

/** The credential of a provider without a key: gcloud's file when there is one, else the metadata server. */
export async function defaultCredential(env: NodeJS.ProcessEnv = process.env): Promise<VertexCredential> {
  const { adcFile, baseUrl, key } = placesOf(env);
  const known = found.get(key);
  if (known) return known;
  let inFlight = looking.get(key);
  if (!inFlight) {
    inFlight = lookUp(adcFile, baseUrl).finally(() => looking.delete(key));
    looking.set(key, inFlight);
  }
  const credential = await inFlight;
  found.set(key, credential);
  return credential;
}

/** The credential {@link defaultCredential} found, if it has run (to drop its token when Vertex refuses it). */
export function knownDefaultCredential(env: NodeJS.ProcessEnv = process.env): VertexCredential | undefined {
  return found.get(placesOf(env).key);
}
