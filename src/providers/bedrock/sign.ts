import { NodeSha256 } from './node-sha256.js';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Dispatcher } from 'undici';
import type { Target, UpstreamRequest } from '../../core/provider.js';
import { bedrockCredential, type AwsKeyPair } from './credentials.js';
import { CHAIN_TIMEOUT_MS, chainCredentials, forgetChainCredentials } from './aws-chain.js';
import type { GatewayError } from '../../core/errors.js';
import { withFields } from '../../core/with-fields.js';

export const DEFAULT_REGION = 'us-east-1';

/**
 * The region requests are signed for: the configured one, else the one in a `bedrock-runtime.<region>.` host, AWS's own
 * (`bedrock-runtime.eu-west-1.amazonaws.com`) or a PrivateLink endpoint's (`vpce-….bedrock-runtime.eu-west-1.vpce.amazonaws.com`).
 */
export function regionOf(target: Target, hostname: string): string {
  return target.provider.options.region ?? /(?:^|\.)bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\./.exec(hostname)?.[1] ?? DEFAULT_REGION;
}

function queryOf(url: URL): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of url.searchParams) {
    const seen = query[name];
    query[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return query;
}

/**
 * SigV4 over the request exactly as the transport will send it: method, host, the already-encoded path
 * (SigV4 encodes it once more, as AWS's own SDKs do for model ids like `...-v1:0`), query, headers and body.
 */
export async function signRequest(request: UpstreamRequest, credentials: AwsKeyPair, region: string, signingDate?: Date): Promise<UpstreamRequest> {
  const url = new URL(request.url);
  const signer = new SignatureV4({ service: 'bedrock', region, credentials, sha256: NodeSha256 });
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: url.pathname,
      query: queryOf(url),
      headers: withFields(request.headers, { host: url.host }),
      body: request.body,
    },
    signingDate ? { signingDate } : {},
  );
  return { ...request, headers: signed.headers };
}

/**
 * The adapter's `authorize` hook: SigV4-signs the request, or adds the Bedrock API key as a bearer token. A provider
 * without a key whose config chose AWS's default credential chain signs with what the chain finds (see aws-chain.ts), its
 * STS and SSO requests made through `dispatcher`, the gateway's outbound one;
 * a key (the client's own included, unless the chain was configured by name) is used as it always was.
 */
export async function authorizeBedrock(request: UpstreamRequest, target: Target, dispatcher?: Dispatcher): Promise<UpstreamRequest> {
  const chain = target.provider.options.aws;
  if (chain && !target.apiKey) {
    const credentials = await chainCredentials(chain, target.provider.name, Math.min(CHAIN_TIMEOUT_MS, target.provider.timeouts.firstByteMs), dispatcher);
    return signRequest(request, credentials, regionOf(target, new URL(request.url).hostname));
  }
  const credential = bedrockCredential(target.apiKey, target.provider.name);
  if (credential.kind === 'bearer') return { ...request, headers: withFields(request.headers, { authorization: `Bearer ${credential.token}` }) };
  return signRequest(request, credential.credentials, regionOf(target, new URL(request.url).hostname));
}

/**
 * AWS's answers (403, its common errors) that the signing credentials are not, or no longer, good: expired, or not
 * on its records (a role's sessions revoked, the set rotated). A new set may be taken. Signature errors and
 * AccessDeniedException are not among them: a new set signs the same way and has the same role's permissions.
 */
const STALE_CREDENTIALS = new Set(['ExpiredTokenException', 'UnrecognizedClientException', 'InvalidClientTokenId']);
const STALE_MESSAGE = /security token included in the request is (?:expired|invalid)/i;

/**
 * The adapter's `forgetCredential` hook: Bedrock refused credentials of AWS's default chain (an IAM role's) as stale, so
 * the chain fetches a new set for the call made again. A key of the config or the client, or a long-term key pair the
 * chain found, is not fetched again: false.
 */
export function forgetBedrockCredential(request: UpstreamRequest, target: Target, error: GatewayError): boolean {
  const chain = target.provider.options.aws;
  if (!chain || target.apiKey) return false;
  const stale = error.upstreamStatus === 401 || (error.upstreamStatus === 403 && (STALE_CREDENTIALS.has(error.code ?? '') || (error.code === null && STALE_MESSAGE.test(error.message))));
  const accessKeyId = /Credential=([^/]+)\//.exec(request.headers.authorization ?? '')?.[1];
  return stale && accessKeyId !== undefined && forgetChainCredentials(chain, target.provider.name, accessKeyId);
}
