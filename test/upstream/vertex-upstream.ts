// A scripted Vertex AI: an OAuth token endpoint that verifies the service account's signed JWT assertion,
// and the publisher model endpoints (Gemini's generateContent / streamGenerateContent, Anthropic's rawPredict /
// streamRawPredict) that demand a token it issued. Model answers come from the scripted Gemini and Anthropic
// upstreams behind it, so the bodies are exactly those providers' formats.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importSPKI, jwtVerify } from 'jose';
import { request } from 'undici';
import { startAnthropicUpstream, type AnthropicUpstream } from './anthropic-upstream.js';
import { readBody } from './exchange.js';
import { startGeminiUpstream, type GeminiUpstream } from './gemini-upstream.js';

export interface VertexCall {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export interface VertexUpstream {
  /** The base URL tollgate's `vertex` provider is pointed at (`${url}/v1`). */
  url: string;
  tokenUrl: string;
  /** A service-account key file's JSON for this server's signing key. */
  serviceAccount: string;
  /**
   * A user credential as `gcloud auth application-default login` writes it (`authorized_user`, no token_uri: its
   * token endpoint is Google's, so a provider using it here names this server's as token_url).
   */
  authorizedUser: string;
  tokenRequests: number;
  calls: VertexCall[];
  /** Every request this server received, as `METHOD /raw/url` (the token endpoint and unknown paths included). */
  received: string[];
  gemini: GeminiUpstream;
  anthropic: AnthropicUpstream;
  /** Every token issued so far stops being taken (revoked, the key that got it deleted), though none has expired. */
  revokeTokens(): void;
  /** While set, no token is taken, a newly issued one included (the account lost access). */
  refusingEveryToken: boolean;
  /** Issues a token Vertex takes, as Google does for another source of tokens (the scripted metadata server). */
  issueToken(): string;
  /** IAM Credentials' generateAccessToken URL for a service account of this server (an impersonated credential's). */
  impersonationUrl(email: string): string;
  /** generateAccessToken requests: the account, the bearer token they came with and their body. */
  impersonations: Array<{ email: string; bearer: string | undefined; body: any }>;
  /** Tokens issued by generateAccessToken (the impersonated account's). */
  impersonatedTokens: Set<string>;
  close(): Promise<void>;
}

const CLIENT_EMAIL = 'tollgate-test@demo-project.iam.gserviceaccount.com';
/** The OAuth client and refresh token of the scripted user credential (an ADC file names gcloud's OAuth client). */
const USER = { client_id: '000000000000-scripted.apps.googleusercontent.com', client_secret: 'scripted-client-secret', refresh_token: `1//0g${randomBytes(32).toString('base64url')}` };
/**
 * Beta flags Claude on Vertex AI serves (Google Cloud, Claude models: features); any other in `anthropic-beta` fails
 * the whole request, as Vertex answers Claude Code's first-party flags.
 */
const VERTEX_BETAS = new Set(['computer-use-2025-01-24', 'interleaved-thinking-2025-05-14', 'context-1m-2025-08-07', 'context-management-2025-06-27', 'tool-search-tool-2025-10-19', 'web-search-2025-03-05']);

function unservedBeta(header: string | string[] | undefined): boolean {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '');
  return text.split(',').map((beta) => beta.trim()).some((beta) => beta !== '' && !VERTEX_BETAS.has(beta));
}

const IMPERSONATION_PATH = /^\/v1\/projects\/-\/serviceAccounts\/([^/:]+):generateAccessToken$/;
const MODEL_PATH = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:]+):(generateContent|streamGenerateContent|rawPredict|streamRawPredict)$/;

function googleError(res: ServerResponse, status: number, statusName: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify({ error: { code: status, message, status: statusName } }));
}

export async function startVertexUpstream(): Promise<VertexUpstream> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const verifyKey = await importSPKI(publicPem, 'RS256');
  const gemini = await startGeminiUpstream({ apiKey: 'gemini-behind-vertex' });
  const anthropic = await startAnthropicUpstream({ apiKey: 'anthropic-behind-vertex' });
  const issued = new Set<string>();
  /** Tokens issued to the user credential: Google's APIs take them only with a quota project named. */
  const userTokens = new Set<string>();
  const servers: Server[] = [];
  const state = {
    url: '',
    tokenUrl: '',
    serviceAccount: '',
    authorizedUser: '',
    tokenRequests: 0,
    calls: [] as VertexCall[],
    received: [] as string[],
    gemini,
    anthropic,
    revokeTokens() {
      issued.clear();
      userTokens.clear();
    },
    refusingEveryToken: false,
    issueToken() {
      const issuedToken = `ya29.c.${randomBytes(24).toString('base64url')}`;
      issued.add(issuedToken);
      return issuedToken;
    },
    impersonationUrl(email: string) {
      return `${state.url}/projects/-/serviceAccounts/${email}:generateAccessToken`;
    },
    impersonations: [] as Array<{ email: string; bearer: string | undefined; body: any }>,
    impersonatedTokens: new Set<string>(),
    async close() {
      for (const server of servers) {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      }
      await gemini.close();
      await anthropic.close();
    },
  };

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    state.tokenRequests++;
    const form = new URLSearchParams((await readBody(req)).toString('utf8'));
    const refuse = (description: string) => {
      res.writeHead(400, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ error: 'invalid_grant', error_description: description }));
    };
    if (form.get('grant_type') === 'refresh_token') {
      // A user credential's refresh (RFC 6749 section 6): the OAuth client and its refresh token.
      if (form.get('client_id') !== USER.client_id || form.get('client_secret') !== USER.client_secret) {
        res.writeHead(401, { 'content-type': 'application/json; charset=utf-8' });
        return void res.end(JSON.stringify({ error: 'invalid_client', error_description: 'The OAuth client was not found.' }));
      }
      if (form.get('refresh_token') !== USER.refresh_token) return refuse('Token has been expired or revoked.');
      const userToken = `ya29.a0${randomBytes(24).toString('base64url')}`;
      issued.add(userToken);
      userTokens.add(userToken);
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      return void res.end(JSON.stringify({ access_token: userToken, expires_in: 3599, scope: 'https://www.googleapis.com/auth/cloud-platform openid', token_type: 'Bearer' }));
    }
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return refuse('Invalid grant_type.');
    try {
      const { payload } = await jwtVerify(form.get('assertion') ?? '', verifyKey, { issuer: CLIENT_EMAIL, audience: state.tokenUrl });
      if (payload.scope !== 'https://www.googleapis.com/auth/cloud-platform') return refuse('Invalid scope.');
    } catch {
      return refuse('Invalid JWT Signature.');
    }
    const accessToken = `ya29.${randomBytes(24).toString('base64url')}`;
    issued.add(accessToken);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ access_token: accessToken, expires_in: 3599, token_type: 'Bearer' }));
  }

  /**
   * IAM Credentials' generateAccessToken: the caller's token (the source credential's) must be one this server issued;
   * the answer is a token for the named account, in IAM's shape (`accessToken`, `expireTime`).
   */
  async function impersonate(req: IncomingMessage, res: ServerResponse, email: string): Promise<void> {
    const raw = (await readBody(req)).toString('utf8');
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    state.impersonations.push({ email: decodeURIComponent(email), bearer, body });
    if (!bearer || !issued.has(bearer)) return googleError(res, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.');
    if (!Array.isArray(body?.scope) || body.scope.length === 0) return googleError(res, 400, 'INVALID_ARGUMENT', 'Scope required.');
    const impersonated = `ya29.impersonated.${randomBytes(24).toString('base64url')}`;
    issued.add(impersonated);
    state.impersonatedTokens.add(impersonated);
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    res.end(JSON.stringify({ accessToken: impersonated, expireTime: new Date(Date.now() + 3600_000).toISOString() }));
  }

  /** Passes the request on to the scripted provider behind and streams its answer back unchanged. */
  async function forward(res: ServerResponse, url: string, headers: Record<string, string>, body: string): Promise<void> {
    const answer = await request(url, { method: 'POST', headers, body });
    const passed: Record<string, string> = {};
    for (const name of ['content-type', 'retry-after']) {
      const value = answer.headers[name];
      if (typeof value === 'string') passed[name] = value;
    }
    res.writeHead(answer.statusCode, passed);
    for await (const chunk of answer.body) res.write(chunk);
    res.end();
  }

  async function model(req: IncomingMessage, res: ServerResponse, path: string, query: string): Promise<void> {
    const raw = (await readBody(req)).toString('utf8');
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    state.calls.push({ path, headers: req.headers, body });
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!bearer || !issued.has(bearer) || state.refusingEveryToken) {
      return googleError(res, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.');
    }
    if (userTokens.has(bearer) && req.headers['x-goog-user-project'] === undefined) {
      return googleError(res, 403, 'PERMISSION_DENIED', 'Your application is authenticating by using local Application Default Credentials. The aiplatform.googleapis.com API requires a quota project, which is not set by default. To learn how to set your quota project, see https://cloud.google.com/docs/authentication/adc-troubleshooting/user-creds .');
    }
    const [, , , publisher, name, method] = MODEL_PATH.exec(path) as RegExpExecArray;
    if (publisher === 'google') {
      if ((method === 'streamGenerateContent') !== query.includes('alt=sse') && method === 'streamGenerateContent') {
        return googleError(res, 400, 'INVALID_ARGUMENT', 'This test server streams only with alt=sse.');
      }
      if (method === 'rawPredict' || method === 'streamRawPredict') return googleError(res, 400, 'FAILED_PRECONDITION', 'Use generateContent for Gemini models.');
      const suffix = method === 'streamGenerateContent' ? ':streamGenerateContent?alt=sse' : ':generateContent';
      return forward(res, `${gemini.url}/v1beta/models/${name}${suffix}`, { 'content-type': 'application/json', 'x-goog-api-key': 'gemini-behind-vertex' }, raw);
    }
    if (method !== 'rawPredict' && method !== 'streamRawPredict') return googleError(res, 400, 'FAILED_PRECONDITION', 'Claude models are served by rawPredict.');
    // Claude on Vertex names the model in the URL and the API version in the body, refusing the other ways round.
    const refusal = body?.anthropic_version === undefined ? 'anthropic_version: Field required'
      : body.anthropic_version !== 'vertex-2023-10-16' ? `anthropic_version: Input should be 'vertex-2023-10-16'`
        : 'model' in body ? 'model: Extra inputs are not permitted'
          : unservedBeta(req.headers['anthropic-beta']) ? 'invalid beta flag' : null;
    if (refusal !== null) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: refusal } }));
      return;
    }
    const { anthropic_version: _version, ...rest } = body;
    const forwarded = JSON.stringify({ ...rest, model: name, ...(method === 'streamRawPredict' ? { stream: true } : {}) });
    // Vertex takes Anthropic's beta opt-ins in the anthropic-beta header, as the Messages API does.
    const beta = req.headers['anthropic-beta'];
    const betaHeader: Record<string, string> = typeof beta === 'string' ? { 'anthropic-beta': beta } : {};
    return forward(res, `${anthropic.url}/v1/messages`, { 'content-type': 'application/json', 'x-api-key': 'anthropic-behind-vertex', 'anthropic-version': '2023-06-01', ...betaHeader }, forwarded);
  }

  const server = createServer((req, res) => {
    state.received.push(`${req.method ?? 'GET'} ${req.url ?? '/'}`);
    const [path = '/', query = ''] = (req.url ?? '/').split('?');
    const impersonation = req.method === 'POST' ? IMPERSONATION_PATH.exec(path) : null;
    const work = req.method === 'POST' && path === '/token' ? token(req, res)
      : impersonation ? impersonate(req, res, impersonation[1] as string)
        : req.method === 'POST' && MODEL_PATH.test(path) ? model(req, res, path, query) : Promise.resolve(googleError(res, 404, 'NOT_FOUND', `${path} not found`));
    work.catch(() => res.destroy());
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.url = `${base}/v1`;
  state.tokenUrl = `${base}/token`;
  state.serviceAccount = JSON.stringify({
    type: 'service_account',
    project_id: 'demo-project',
    private_key_id: 'test-key-1',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: CLIENT_EMAIL,
    token_uri: state.tokenUrl,
  });
  state.authorizedUser = JSON.stringify({ account: '', ...USER, quota_project_id: 'demo-project', type: 'authorized_user', universe_domain: 'googleapis.com' });
  return state;
}
