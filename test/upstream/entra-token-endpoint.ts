// A scripted Microsoft Entra ID token endpoint: the v2.0 client-credentials grant
// (`POST /{tenant}/oauth2/v2.0/token`, form-encoded, with a client secret or a federated client assertion) and
// App Service's managed-identity endpoint (`GET /msi/token?api-version=2019-08-01&resource=` with
// `X-IDENTITY-HEADER`). It answers as Entra does (`{token_type, expires_in, access_token}`, or
// `{error, error_description, error_codes}`), issues numbered tokens, and says which are still valid.
import { createHash, constants, verify, X509Certificate } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody } from './exchange.js';
import { ScriptedServer } from './scripted-server.js';

export type EntraMode =
  | { kind: 'ok'; expiresIn?: number; refreshIn?: number }
  | { kind: 'error'; status: number; error?: string; description?: string }
  | { kind: 'slow'; delayMs: number };

export interface EntraCall {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  form: Record<string, string>;
}

export interface EntraEndpointOptions {
  tenantId?: string;
  clientId?: string;
  clientSecret?: string;
  /** The federated assertion the workload identity must present now (re-read: it rotates). */
  assertion?: () => string;
  /** App Service's IDENTITY_HEADER. */
  identityHeader?: string;
  /** The resource the cloud's Azure OpenAI tokens are for: Azure Government's and China's are their own. */
  resource?: string;
  /** The certificate (PEM) registered on the app: a client assertion signed with its key is taken, as Entra checks it. */
  certificate?: string;
}


export class ScriptedEntra extends ScriptedServer<EntraMode, EntraCall> {
  private issued = 0;
  private readonly valid = new Set<string>();
  private readonly opts: Required<Omit<EntraEndpointOptions, 'assertion' | 'certificate'>> & Pick<EntraEndpointOptions, 'assertion' | 'certificate'>;

  constructor(options: EntraEndpointOptions) {
    super({ kind: 'ok' });
    this.opts = { tenantId: 'tenant-1', clientId: 'client-1', clientSecret: 'entra-client-secret-value-xyz', identityHeader: 'identity-header-1', resource: 'https://cognitiveservices.azure.com', ...options };
  }

  /** Whether Azure should take this token: issued here and not revoked. */
  accepts(token: string): boolean {
    return this.valid.has(token);
  }

  /** Every token issued so far stops working (a rotated or revoked credential). */
  revokeAll(): void {
    this.valid.clear();
  }

  protected internalError(res: ServerResponse): void {
    this.send(res, 500, { error: 'server_error', error_description: 'AADSTS90033: A transient error has occurred. Please try again.' });
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)) });
    res.end(text);
  }

  private refuse(res: ServerResponse, status: number, error: string, description: string): void {
    const code = Number(/AADSTS(\d+)/.exec(description)?.[1] ?? 0);
    this.send(res, status, { error, error_description: description, error_codes: [code], timestamp: new Date().toISOString(), trace_id: 'trace', correlation_id: 'corr' });
  }

  private issue(): string {
    const token = `eyJ0eXAiOiJKV1QifQ.entra-token-${++this.issued}.sig`;
    this.valid.add(token);
    return token;
  }

  /**
   * Whether `assertion` is the app's certificate credential as Microsoft documents it: a JWT with alg PS256 and the
   * certificate's SHA-256 thumbprint (x5t#S256), for this token endpoint (aud), issued by and about the client
   * (iss, sub), with a jti, not expired, and signed with the certificate's key (RSA-PSS).
   */
  private signedByCertificate(assertion: string, audience: string): boolean {
    if (!this.opts.certificate) return false;
    const [header, claims, signature] = assertion.split('.');
    if (!header || !claims || !signature) return false;
    const cert = new X509Certificate(this.opts.certificate);
    const head = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as Record<string, unknown>;
    const body = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as Record<string, unknown>;
    const thumbprint = createHash('sha256').update(cert.raw).digest('base64url');
    const now = Date.now() / 1000;
    const fields = head.alg === 'PS256' && head.typ === 'JWT' && head['x5t#S256'] === thumbprint && body.aud === audience && body.iss === this.opts.clientId && body.sub === this.opts.clientId;
    const timely = typeof body.exp === 'number' && body.exp > now && typeof body.nbf === 'number' && body.nbf <= now + 60 && typeof body.jti === 'string' && body.jti !== '';
    const signed = verify('sha256', Buffer.from(`${header}.${claims}`), { key: cert.publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, Buffer.from(signature, 'base64url'));
    return fields && timely && signed;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readBody(req)).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://entra');
    const form = Object.fromEntries(new URLSearchParams(raw));
    this.calls.push({ method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, form });
    const mode = this.nextMode();
    if (mode.kind === 'slow') await new Promise((resolve) => setTimeout(resolve, mode.delayMs));
    if (res.destroyed) return;
    if (mode.kind === 'error') return this.refuse(res, mode.status, mode.error ?? 'server_error', mode.description ?? 'AADSTS50000: There was an error issuing a token.');
    const expiresIn = mode.kind === 'ok' ? (mode.expiresIn ?? 3599) : 3599;
    // Entra adds refresh_in (seconds) to a long-lived token: when to renew it, well before it expires.
    const refreshIn = mode.kind === 'ok' && mode.refreshIn !== undefined ? { refresh_in: mode.refreshIn } : {};

    const resource = this.opts.resource;
    if (url.pathname === '/msi/token') {
      if (req.method !== 'GET' || req.headers['x-identity-header'] !== this.opts.identityHeader) return this.send(res, 401, { statusCode: 401, message: 'Unauthorized' });
      if (url.searchParams.get('api-version') !== '2019-08-01' || url.searchParams.get('resource') !== resource) return this.send(res, 400, { statusCode: 400, message: 'bad request' });
      const expiresOn = Math.floor(Date.now() / 1000) + expiresIn;
      return this.send(res, 200, { access_token: this.issue(), expires_on: String(expiresOn), resource, token_type: 'Bearer', client_id: url.searchParams.get('client_id') ?? 'system' });
    }

    if (req.method !== 'POST' || url.pathname !== `/${this.opts.tenantId}/oauth2/v2.0/token`) {
      return this.refuse(res, 400, 'invalid_tenant', `AADSTS90002: Tenant '${url.pathname.split('/')[1]}' not found.`);
    }
    if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) return this.refuse(res, 400, 'invalid_request', 'AADSTS900144: The request body must contain the following parameter: grant_type.');
    if (form.grant_type !== 'client_credentials') return this.refuse(res, 400, 'unsupported_grant_type', 'AADSTS70003: The app requested an unsupported grant type.');
    if (form.scope !== `${resource}/.default`) return this.refuse(res, 400, 'invalid_resource', `AADSTS500011: The resource principal named ${form.scope?.replace(/\/\.default$/, '') ?? ''} was not found in the tenant named tenant-1.`);
    if (form.client_id !== this.opts.clientId) return this.refuse(res, 400, 'unauthorized_client', `AADSTS700016: Application with identifier '${form.client_id ?? ''}' was not found in the directory.`);
    if (form.client_assertion !== undefined) {
      const jwtBearer = form.client_assertion_type === 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
      const ok = jwtBearer && (form.client_assertion === this.opts.assertion?.() || this.signedByCertificate(form.client_assertion, `${this.url}${url.pathname}`));
      if (!ok) return this.refuse(res, 401, 'invalid_client', 'AADSTS700027: The certificate with identifier used to sign the client assertion is not registered on application.');
    } else if (form.client_secret !== this.opts.clientSecret) {
      return this.refuse(res, 401, 'invalid_client', 'AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.');
    }
    return this.send(res, 200, { token_type: 'Bearer', expires_in: expiresIn, ext_expires_in: expiresIn, ...refreshIn, access_token: this.issue() });
  }
}

export async function startEntraEndpoint(options: EntraEndpointOptions = {}): Promise<ScriptedEntra> {
  const endpoint = new ScriptedEntra(options);
  await endpoint.listen();
  return endpoint;
}
