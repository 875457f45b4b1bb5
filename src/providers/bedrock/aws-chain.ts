import type { Dispatcher } from 'undici';
import type { AwsChainSettings } from '../../core/provider.js';
import { gatewayError, type GatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';
import type { AwsKeyPair } from './credentials.js';
import { DispatcherHttpHandler } from './aws-http-handler.js';

/**
 * AWS credentials from AWS's own default chain (@aws-sdk/credential-provider-node): environment, SSO, ~/.aws config and
 * credentials, credential_process, web identity (EKS IRSA), the container endpoint (ECS task role, EKS Pod Identity),
 * EC2 instance metadata. The SDK's provider caches what it found, refreshes temporary credentials five minutes before
 * they expire (in the background while they still work), and runs one lookup at a time for all callers.
 */

/** Longest a request waits for the chain: the provider's own first-byte bound when shorter. */
export const CHAIN_TIMEOUT_MS = 10_000;
/**
 * A failed lookup is the answer for this long: a request's retries (and the next requests) fail at once rather than
 * each waiting on an instance metadata service that is not there; after it, the chain is asked again.
 */
const FAILURE_HOLD_MS = 1_000;

type Provider = (options?: { forceRefresh?: boolean }) => Promise<AwsKeyPair & { expiration?: Date }>;

interface Chain {
  provider: Promise<Provider> | null;
  failed: { message: string; until: number } | null;
  /** The access key id of the set last handed out, to tell a refusal of it from one of a set already replaced. */
  current: string | null;
  /** Whether that set is temporary (it came with an expiry: a role's), so that a new one may be fetched. */
  temporary: boolean;
  /** AWS refused the current set: the next lookup asks the chain's source again instead of its cache. */
  stale: boolean;
  /** That lookup while it runs: every request refused meanwhile waits for it rather than starting its own. */
  refreshing: Promise<AwsKeyPair & { expiration?: Date }> | null;
  /** The gateway's outbound dispatcher as of the last call: what the chain's STS and SSO requests go out through. */
  dispatcher: Dispatcher | undefined;
}

/** One chain per provider name and profile, made on its first call: what it found survives config changes. */
const chains = new Map<string, Chain>();

/**
 * The SDK is loaded only when a call needs it, so a gateway that never calls Bedrock this way neither loads it nor
 * touches the network. Its own requests are bounded: 1 s per container or instance-metadata request, one attempt, and
 * STS (web identity, assumed roles) and SSO 5 s a request, two attempts. Those go out through the gateway's outbound
 * dispatcher (settings.network's proxy and CAs, as of the chain's latest call); the container endpoint and instance
 * metadata, link-local or loopback addresses no proxy can reach for this machine, are asked directly, as before.
 */
async function makeProvider(profile: string | null, dispatcherOf: () => Dispatcher | undefined): Promise<Provider> {
  const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
  return defaultProvider({
    ...(profile !== null ? { profile } : {}),
    timeout: 1_000,
    maxRetries: 0,
    clientConfig: { maxAttempts: 2, requestHandler: new DispatcherHttpHandler(dispatcherOf, 5_000) },
  });
}

/** A URL as a message may show it: no user, password or query. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return 'an invalid URL';
  }
}

/** The source the environment points the chain at (names and URLs only, never a value that authenticates). */
function sourceNamed(profile: string | null, env: NodeJS.ProcessEnv): string | null {
  const named = profile ?? env.AWS_PROFILE;
  if (named) return `profile '${named}' of the AWS config files`;
  if (env.AWS_WEB_IDENTITY_TOKEN_FILE && env.AWS_ROLE_ARN) return `web identity (role ${env.AWS_ROLE_ARN}, token file ${env.AWS_WEB_IDENTITY_TOKEN_FILE})`;
  if (env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI) return `the ECS container credentials endpoint ${shown(`http://169.254.170.2${env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI}`)}`;
  if (env.AWS_CONTAINER_CREDENTIALS_FULL_URI) return `the container credentials endpoint ${shown(env.AWS_CONTAINER_CREDENTIALS_FULL_URI)} (AWS_CONTAINER_CREDENTIALS_FULL_URI)`;
  if (env.AWS_EC2_METADATA_DISABLED && env.AWS_EC2_METADATA_DISABLED !== 'false') return null;
  return 'the EC2 instance metadata service';
}

/**
 * What the SDK said, fit to show: its first line (a failed credential_process quotes its command and output after
 * it), without any value the environment holds to authenticate, and short.
 */
function sdkSaid(err: unknown, env: NodeJS.ProcessEnv): string {
  let text = String((err as { message?: unknown })?.message ?? err).split('\n')[0] ?? '';
  if (/^Command failed/i.test(text)) text = 'the credential_process command failed';
  for (const name of ['AWS_CONTAINER_AUTHORIZATION_TOKEN', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_BEARER_TOKEN_BEDROCK']) {
    const secret = env[name];
    if (secret && secret.length >= 4) text = text.replaceAll(secret, '[REDACTED]');
  }
  return quoteInput(text, 300);
}

/** Why the chain gave nothing, naming the provider and where it looked. */
function failureMessage(provider: string, profile: string | null, err: unknown, env: NodeJS.ProcessEnv): string {
  const source = sourceNamed(profile, env);
  const said = sdkSaid(err, env);
  // The chain's last word when every source passed (one that failed to answer included): nothing more to quote.
  const nothing = /Could not load credentials from any providers/.test(said);
  return (
    `${provider}: no AWS credentials: AWS's default credential chain found none` +
    (source ? ` (it looked last at ${source}${nothing ? '' : `: ${said}`})` : nothing ? '' : ` (${said})`) +
    '. Give tollgate an IAM role (EKS IRSA or Pod Identity, an ECS task role, an EC2 instance profile) or an AWS profile, or configure an access key pair or a Bedrock API key.'
  );
}

/** The chain did not answer in time: its message is already the one to show. */
class ChainTimeout extends Error {}

function failed(message: string): GatewayError {
  return gatewayError('provider_token_failed', message);
}

/**
 * The chain's cached set, or, once AWS refused it, a new one from the source: the SDK's forced refresh, one for all
 * callers, whose result the SDK caches as its own from then on.
 */
function lookup(chain: Chain, provider: Promise<Provider>): Promise<AwsKeyPair & { expiration?: Date }> {
  if (chain.stale && !chain.refreshing) {
    chain.stale = false;
    const refreshing = provider.then((get) => get({ forceRefresh: true }));
    chain.refreshing = refreshing;
    const done = (): void => {
      if (chain.refreshing === refreshing) chain.refreshing = null;
    };
    refreshing.then(done, done);
  }
  return chain.refreshing ?? provider.then((get) => get());
}

/**
 * AWS refused the set with this access key id (revoked or rotated before the expiry it came with, which the SDK's own
 * refresh waits for): the next lookup fetches a new one. A refusal of a set already replaced, or arriving while the
 * new one is being fetched, changes nothing more, so requests refused together cause one fetch. Says whether a call
 * made again may be signed with other credentials: false for a long-term key pair the chain found (the environment's,
 * a credentials file's), which no fetch renews.
 */
export function forgetChainCredentials(settings: AwsChainSettings, provider: string, accessKeyId: string): boolean {
  const chain = chains.get(`${provider}\0${settings.profile ?? ''}`);
  if (!chain || chain.current === null) return false;
  if (chain.current !== accessKeyId || chain.refreshing) return true;
  if (!chain.temporary) return false;
  chain.stale = true;
  return true;
}

/**
 * The credentials to sign a call to `provider` with, from the default chain. A chain that finds none, or a
 * credentials endpoint that fails or does not answer within `timeoutMs`, fails this call with a 502 naming the provider
 * (retryable: the breaker counts it against the target and a fallback may take the request). `dispatcher` is the
 * gateway's outbound one, which the chain's STS and SSO requests take (undici's global one when not given).
 */
export async function chainCredentials(
  settings: AwsChainSettings,
  provider: string,
  timeoutMs: number,
  dispatcher?: Dispatcher,
  env: NodeJS.ProcessEnv = process.env,
): Promise<AwsKeyPair> {
  const key = `${provider}\0${settings.profile ?? ''}`;
  let chain = chains.get(key);
  if (!chain) {
    chain = { provider: null, failed: null, current: null, temporary: false, stale: false, refreshing: null, dispatcher: undefined };
    chains.set(key, chain);
  }
  if (chain.failed && chain.failed.until > Date.now()) throw failed(chain.failed.message);
  chain.dispatcher = dispatcher;
  const current = chain;
  chain.provider ??= makeProvider(settings.profile, () => current.dispatcher);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const source = sourceNamed(settings.profile, env);
      reject(new ChainTimeout(`${provider}: no AWS credentials: AWS's default credential chain did not answer within ${timeoutMs} ms${source ? ` (it was looking at ${source})` : ''}.`));
    }, timeoutMs);
  });
  try {
    const found = await Promise.race([lookup(chain, chain.provider), timeout]);
    chain.failed = null;
    chain.current = found.accessKeyId;
    chain.temporary = found.expiration !== undefined;
    return { accessKeyId: found.accessKeyId, secretAccessKey: found.secretAccessKey, ...(found.sessionToken ? { sessionToken: found.sessionToken } : {}) };
  } catch (err) {
    const message = err instanceof ChainTimeout ? err.message : failureMessage(provider, settings.profile, err, env);
    chain.failed = { message, until: Date.now() + FAILURE_HOLD_MS };
    throw failed(message);
  } finally {
    clearTimeout(timer);
  }
}
