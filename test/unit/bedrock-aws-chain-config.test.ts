import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema } from '../../src/config/schema.js';
import type { Env } from '../../src/config/secret-ref.js';
import type { RuntimeConfig } from '../../src/core/config.js';
import { resolveDirectTarget } from '../../src/routing/resolve-target.js';

// When a Bedrock provider signs with AWS's default credential chain (an IAM role) rather than a key: asked for by
// name (`auth: {type: aws}`), or when nothing else would sign its calls. Only settings are decided here: the chain is
// looked at on the first call (test/e2e/bedrock-aws-role.test.ts).

function runtime(file: unknown, env: Env = {}): RuntimeConfig {
  return resolveRuntimeConfig({ api: {}, file: configFileSchema.parse(file) }, env, 1);
}

const awsOf = (config: RuntimeConfig, name = 'bedrock') => config.providers.get(name)?.options.aws;

describe('a bedrock provider and the AWS default credential chain', () => {
  it('uses the chain when it has no key and the environment gives none; zero config included', () => {
    expect(awsOf(runtime({}))).toEqual({ profile: null, configured: false });
    expect(awsOf(runtime({ providers: { 'bedrock-eu': { type: 'bedrock', region: 'eu-west-1' } } }), 'bedrock-eu')).toEqual({ profile: null, configured: false });
  });

  it('keeps a key, the environment key pair and the Bedrock API key as they were', () => {
    expect(awsOf(runtime({ providers: { bedrock: { api_key: 'AKID:SECRET' } } }))).toBeUndefined();
    expect(awsOf(runtime({}, { AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'SECRET' }))).toBeUndefined();
    expect(awsOf(runtime({}, { AWS_BEARER_TOKEN_BEDROCK: 'ABSKtoken' }))).toBeUndefined();
    // A custom instance reads the environment's Bedrock API key in the adapter, as before.
    expect(awsOf(runtime({ providers: { b2: { type: 'bedrock' } } }, { AWS_BEARER_TOKEN_BEDROCK: 'ABSKtoken' }), 'b2')).toBeUndefined();
    // Other providers never get it.
    expect(awsOf(runtime({}), 'openai')).toBeUndefined();
  });

  it('takes auth {type: aws, profile} over the environment, and shows it as written', () => {
    const config = runtime({ providers: { bedrock: { auth: { type: 'aws', profile: 'prod-sso' } } } }, { AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'SECRET', AWS_BEARER_TOKEN_BEDROCK: 'ABSKtoken' });
    expect(awsOf(config)).toEqual({ profile: 'prod-sso', configured: true });
    // The environment's API key is not a key beside the chain.
    expect(config.providers.get('bedrock')?.keys).toEqual([]);
    expect(config.providers.get('bedrock')?.rawAuth).toEqual({ type: 'aws', profile: 'prod-sso' });
    expect(awsOf(runtime({ providers: { bedrock: { auth: { type: 'aws' } } } }))).toEqual({ profile: null, configured: true });
  });

  it('refuses auth {type: aws} on another provider type, beside keys, or with an odd profile name', () => {
    expect(() => runtime({ providers: { openai: { auth: { type: 'aws' } } } })).toThrow(/providers\.openai\.auth: AWS credentials are for the bedrock provider type only/);
    expect(() => runtime({ providers: { bedrock: { api_key: 'AKID:SECRET', auth: { type: 'aws' } } } })).toThrow(/providers\.bedrock\.auth: AWS's credential chain replaces keys/);
    expect(() => configFileSchema.parse({ providers: { bedrock: { auth: { type: 'aws', profile: 'two words' } } } })).toThrow(/profile name/);
    expect(() => configFileSchema.parse({ providers: { bedrock: { auth: { type: 'aws', role: 'x' } } } })).toThrow();
    expect(() => runtime({ providers: { bedrock: { auth: { type: 'entra', credential: 'managed_identity' } } } })).toThrow(/Entra ID is for the azure/);
  });

  it("uses a client's own key when the chain is only the fallback, and the chain when the config names it", () => {
    expect(resolveDirectTarget(runtime({}), 'bedrock/m', 'AKIDCLIENT:secret')).toMatchObject({ apiKey: 'AKIDCLIENT:secret', keySource: 'client' });
    const named = runtime({ providers: { bedrock: { auth: { type: 'aws' } } } });
    expect(resolveDirectTarget(named, 'bedrock/m', 'AKIDCLIENT:secret')).toMatchObject({ apiKey: null, keySource: 'none' });
  });
});
