// Where an IAM role's temporary credentials come from, scripted on loopback: the container credentials endpoint
// (ECS task roles, EKS Pod Identity: `GET` with the `Authorization` token, answering
// `{AccessKeyId, SecretAccessKey, Token, Expiration}`) and STS's AssumeRoleWithWebIdentity (EKS IRSA) and AssumeRole (a
// profile's role_arn with a source_profile): a form-encoded AWS Query `POST`, answering XML; and IAM Identity Center's
// GetRoleCredentials (an SSO profile after `aws sso login`). Each set it issues is numbered and kept, so the scripted Bedrock upstream takes a
// signature made with it (with its session token, until it expires) and nothing else.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IssuedCredentials } from './bedrock-upstream.js';
import { readBody } from './exchange.js';
import { ScriptedServer } from './scripted-server.js';

export type CredentialsMode =
  | { kind: 'ok'; expiresInMs?: number }
  | { kind: 'error'; status: number }
  /** Answers after `delayMs` (or never, when the client gives up first). */
  | { kind: 'slow'; delayMs: number }
  /** Closes the connection without an answer, as an agent that crashed mid-request. */
  | { kind: 'drop' };

export interface CredentialsCall {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  form: Record<string, string>;
}

export interface CredentialsEndpointOptions {
  /** The container endpoint's authorization token (AWS_CONTAINER_AUTHORIZATION_TOKEN). */
  authorizationToken?: string;
  /** The web identity token STS takes now (the projected service-account token, which rotates). */
  webIdentityToken?: () => string;
  roleArn?: string;
  /** The access token IAM Identity Center's GetRoleCredentials takes (what `aws sso login` cached), for `ssoRole`. */
  ssoAccessToken?: string;
  ssoRole?: { accountId: string; roleName: string };
  /** The access key id whose signature STS AssumeRole takes (a source profile's long-term key). */
  sourceKeyId?: string;
  /** Serves HTTPS with this key and certificate (one a test CA signed, for the host name a test has it stand for). */
  tls?: { key: Buffer | string; cert: Buffer | string };
}

/** Numbered across endpoints: two sources never issue the same access key id. */
let issuedCount = 0;

export class ScriptedAwsCredentials extends ScriptedServer<CredentialsMode, CredentialsCall> {
  private readonly issuedByKey = new Map<string, IssuedCredentials & { accessKeyId: string }>();
  /** Sets AWS no longer takes though they have not expired (the role's sessions revoked, the role deleted). */
  private readonly revoked = new Set<string>();

  constructor(private readonly opts: CredentialsEndpointOptions) {
    super({ kind: 'ok' }, opts.tls);
  }

  /** What the endpoint issued under this access key id, for the Bedrock upstream to check a signature against. */
  readonly issued = (accessKeyId: string): IssuedCredentials | undefined => (this.revoked.has(accessKeyId) ? undefined : this.issuedByKey.get(accessKeyId));

  /** AWS stops taking this set (Bedrock: UnrecognizedClientException), while the expiry it was issued with is still ahead. */
  revoke(accessKeyId: string): void {
    this.revoked.add(accessKeyId);
  }

  /** AWS takes this set as expired now (Bedrock: ExpiredTokenException), though the expiry it was issued with is ahead. */
  expireNow(accessKeyId: string): void {
    const issued = this.issuedByKey.get(accessKeyId);
    if (issued) issued.expiration = new Date(Date.now() - 1);
  }

  /** Every value it issued that authenticates (secrets and session tokens), to check none leaks. */
  secrets(): string[] {
    return [...this.issuedByKey.values()].flatMap((c) => [c.secretAccessKey, c.sessionToken]);
  }

  /** The access key ids issued, in order. */
  keyIds(): string[] {
    return [...this.issuedByKey.keys()];
  }

  protected internalError(res: ServerResponse): void {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end('internal error');
  }

  private issue(expiresInMs: number): IssuedCredentials & { accessKeyId: string } {
    const n = ++issuedCount;
    const issued = {
      accessKeyId: `ASIAROLE${String(n).padStart(12, '0')}`,
      secretAccessKey: `role-secret-${n}-${randomUUID()}`,
      sessionToken: `IQoJb3JpZ2luX2VjE-session-${n}-${randomUUID()}`,
      expiration: new Date(Date.now() + expiresInMs),
    };
    this.issuedByKey.set(issued.accessKeyId, issued);
    return issued;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readBody(req)).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://creds');
    const form = Object.fromEntries(new URLSearchParams(raw));
    this.calls.push({ method: req.method ?? 'GET', path: url.pathname, headers: req.headers, form });
    const mode = this.nextMode();
    if (mode.kind === 'drop') return void req.socket.destroy();
    if (mode.kind === 'slow') await new Promise((resolve) => setTimeout(resolve, mode.delayMs));
    if (res.destroyed) return;
    if (mode.kind === 'error') {
      res.writeHead(mode.status, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ Code: 'ServiceUnavailable', Message: 'the agent is not ready' }));
    }
    const expiresInMs = mode.kind === 'ok' ? (mode.expiresInMs ?? 3_600_000) : 3_600_000;
    if (req.method === 'GET' && url.pathname === '/creds') return this.container(req, res, expiresInMs);
    if (req.method === 'GET' && url.pathname === '/federation/credentials') return this.sso(req, res, url, expiresInMs);
    if (req.method === 'POST' && url.pathname === '/') return this.sts(res, form, req.headers.authorization, expiresInMs);
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  }

  private container(req: IncomingMessage, res: ServerResponse, expiresInMs: number): void {
    if (this.opts.authorizationToken !== undefined && req.headers.authorization !== this.opts.authorizationToken) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ Code: 'AccessDenied', Message: 'Invalid authorization token' }));
    }
    const c = this.issue(expiresInMs);
    const body = JSON.stringify({ AccessKeyId: c.accessKeyId, SecretAccessKey: c.secretAccessKey, Token: c.sessionToken, Expiration: c.expiration.toISOString(), RoleArn: 'arn:aws:iam::123456789012:role/tollgate' });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  }

  /** STS AssumeRoleWithWebIdentity (or AssumeRole), AWS Query protocol: the form in, XML out (AWS's STS API reference). */
  private sts(res: ServerResponse, form: Record<string, string>, authorization: string | undefined, expiresInMs: number): void {
    const refuse = (code: string, message: string): void => {
      res.writeHead(400, { 'content-type': 'text/xml' });
      res.end(`<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`);
    };
    if ((form.Action !== 'AssumeRoleWithWebIdentity' && form.Action !== 'AssumeRole') || form.Version !== '2011-06-15') return refuse('InvalidAction', 'Could not find operation');
    if (form.RoleArn !== this.opts.roleArn) return refuse('AccessDenied', `Not authorized to perform sts:${form.Action}`);
    if (!form.RoleSessionName) return refuse('ValidationError', 'RoleSessionName is required');
    if (form.Action === 'AssumeRole') return this.assumeRole(res, form, authorization, expiresInMs, refuse);
    if (form.WebIdentityToken !== this.opts.webIdentityToken?.()) return refuse('InvalidIdentityToken', 'Couldn\'t retrieve verification key from your identity provider');
    const c = this.issue(expiresInMs);
    const xml =
      '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>' +
      `<SubjectFromWebIdentityToken>system:serviceaccount:ai:tollgate</SubjectFromWebIdentityToken><Audience>sts.amazonaws.com</Audience>` +
      `<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/tollgate/${form.RoleSessionName}</Arn><AssumedRoleId>AROAEXAMPLE:${form.RoleSessionName}</AssumedRoleId></AssumedRoleUser>` +
      `<Credentials><SessionToken>${c.sessionToken}</SessionToken><SecretAccessKey>${c.secretAccessKey}</SecretAccessKey><Expiration>${c.expiration.toISOString()}</Expiration><AccessKeyId>${c.accessKeyId}</AccessKeyId></Credentials>` +
      `<Provider>arn:aws:iam::123456789012:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/EXAMPLE</Provider>` +
      `</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`;
    res.writeHead(200, { 'content-type': 'text/xml', 'content-length': String(Buffer.byteLength(xml)) });
    res.end(xml);
  }

  /** STS AssumeRole (a profile's role_arn with a source_profile): a SigV4-signed form; the caller's key must be `sourceKeyId`. */
  private assumeRole(res: ServerResponse, form: Record<string, string>, authorization: string | undefined, expiresInMs: number, refuse: (code: string, message: string) => void): void {
    const signedWith = /Credential=([^/]+)\//.exec(authorization ?? '')?.[1];
    if (this.opts.sourceKeyId === undefined || signedWith !== this.opts.sourceKeyId) return refuse('InvalidClientTokenId', 'The security token included in the request is invalid.');
    const c = this.issue(expiresInMs);
    const xml =
      '<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>' +
      `<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/tollgate/${form.RoleSessionName}</Arn><AssumedRoleId>AROAEXAMPLE:${form.RoleSessionName}</AssumedRoleId></AssumedRoleUser>` +
      `<Credentials><SessionToken>${c.sessionToken}</SessionToken><SecretAccessKey>${c.secretAccessKey}</SecretAccessKey><Expiration>${c.expiration.toISOString()}</Expiration><AccessKeyId>${c.accessKeyId}</AccessKeyId></Credentials>` +
      `</AssumeRoleResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></AssumeRoleResponse>`;
    res.writeHead(200, { 'content-type': 'text/xml', 'content-length': String(Buffer.byteLength(xml)) });
    res.end(xml);
  }

  /** IAM Identity Center (SSO) GetRoleCredentials: REST, the token in `x-amz-sso_bearer_token`, JSON out (expiration in ms). */
  private sso(req: IncomingMessage, res: ServerResponse, url: URL, expiresInMs: number): void {
    const role = this.opts.ssoRole;
    const known = role !== undefined && url.searchParams.get('account_id') === role.accountId && url.searchParams.get('role_name') === role.roleName;
    if (req.headers['x-amz-sso_bearer_token'] !== this.opts.ssoAccessToken || !known) {
      res.writeHead(401, { 'content-type': 'application/json', 'x-amzn-errortype': 'UnauthorizedException' });
      return void res.end(JSON.stringify({ message: 'Session token not found or invalid' }));
    }
    const c = this.issue(expiresInMs);
    const body = JSON.stringify({ roleCredentials: { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, sessionToken: c.sessionToken, expiration: c.expiration.getTime() } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  }
}

export async function startAwsCredentialsEndpoint(options: CredentialsEndpointOptions = {}): Promise<ScriptedAwsCredentials> {
  const endpoint = new ScriptedAwsCredentials(options);
  await endpoint.listen();
  return endpoint;
}
