import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { apiRoot, baseUrlProblem, sdkBaseUrlHasVersion } from '../../src/providers/base-url.js';
import { allVendors } from '../../src/providers/registry.js';
import { vendor } from './targets.js';

const root = (id: string, baseUrl: string): string => apiRoot(baseUrl, vendor(id));

describe('apiRoot: vendors whose SDK base URL has no version path', () => {
  it('anthropic: the SDK form and the /v1 form are the same API root', () => {
    expect(root('anthropic', 'https://api.anthropic.com')).toBe('https://api.anthropic.com/v1');
    expect(root('anthropic', 'https://api.anthropic.com/')).toBe('https://api.anthropic.com/v1');
    expect(root('anthropic', 'https://api.anthropic.com/v1')).toBe('https://api.anthropic.com/v1');
    expect(root('anthropic', 'https://api.anthropic.com/v1/')).toBe('https://api.anthropic.com/v1');
  });

  it('anthropic: a proxy prefix gets /v1 as the SDK would add it; a prefix already ending in a version keeps it', () => {
    expect(root('anthropic', 'http://host:9000/anthropic')).toBe('http://host:9000/anthropic/v1');
    expect(root('anthropic', 'http://host:9000/anthropic/v1')).toBe('http://host:9000/anthropic/v1');
  });

  it('groq: the Groq SDK host and the OpenAI SDK /openai/v1 form', () => {
    expect(root('groq', 'https://api.groq.com')).toBe('https://api.groq.com/openai/v1');
    expect(root('groq', 'https://api.groq.com/openai/v1/')).toBe('https://api.groq.com/openai/v1');
    expect(root('groq', 'http://mirror/groq/v1')).toBe('http://mirror/groq/v1');
  });

  it('gemini: the Gen AI SDK host gets v1beta; an explicit v1 or v1alpha is kept', () => {
    expect(root('gemini', 'https://generativelanguage.googleapis.com/')).toBe('https://generativelanguage.googleapis.com/v1beta');
    expect(root('gemini', 'https://generativelanguage.googleapis.com/v1beta')).toBe('https://generativelanguage.googleapis.com/v1beta');
    expect(root('gemini', 'https://generativelanguage.googleapis.com/v1')).toBe('https://generativelanguage.googleapis.com/v1');
    expect(root('gemini', 'https://generativelanguage.googleapis.com/v1alpha')).toBe('https://generativelanguage.googleapis.com/v1alpha');
  });

  it('cohere, mistral, cerebras, ollama, vertex, azure', () => {
    expect(root('cohere', 'https://api.cohere.com')).toBe('https://api.cohere.com/v2');
    expect(root('cohere', 'https://api.cohere.com/v2')).toBe('https://api.cohere.com/v2');
    expect(root('mistral', 'https://api.mistral.ai')).toBe('https://api.mistral.ai/v1');
    expect(root('mistral', 'https://api.mistral.ai/v1')).toBe('https://api.mistral.ai/v1');
    expect(root('cerebras', 'https://api.cerebras.ai')).toBe('https://api.cerebras.ai/v1');
    expect(root('ollama', 'http://gpu:11434')).toBe('http://gpu:11434/v1');
    expect(root('ollama', 'http://gpu:11434/v1/')).toBe('http://gpu:11434/v1');
    expect(root('vertex', 'https://europe-west4-aiplatform.googleapis.com/')).toBe('https://europe-west4-aiplatform.googleapis.com/v1');
    expect(root('vertex', 'https://europe-west4-aiplatform.googleapis.com/v1beta1')).toBe('https://europe-west4-aiplatform.googleapis.com/v1beta1');
    expect(root('azure', 'https://acme.openai.azure.com')).toBe('https://acme.openai.azure.com/openai');
    expect(root('azure', 'https://acme.openai.azure.com/openai/')).toBe('https://acme.openai.azure.com/openai');
  });
});

describe('apiRoot: vendors whose SDK base URL has the version path (OpenAI and followers)', () => {
  it('openai: a bare origin gets /v1; with /v1 it is used as written', () => {
    expect(root('openai', 'http://host:8000')).toBe('http://host:8000/v1');
    expect(root('openai', 'http://host:8000/')).toBe('http://host:8000/v1');
    expect(root('openai', 'http://host:8000/v1')).toBe('http://host:8000/v1');
    expect(root('openai', 'https://api.openai.com/v1/')).toBe('https://api.openai.com/v1');
  });

  it('openai: any other path is the operator\'s (reverse proxy prefixes, gateways) and is kept as written', () => {
    expect(root('openai', 'http://host/proxy/v1')).toBe('http://host/proxy/v1');
    expect(root('openai', 'https://gateway.example/v1/acct/gw/openai')).toBe('https://gateway.example/v1/acct/gw/openai');
    expect(root('openai', 'http://host/proxy')).toBe('http://host/proxy');
    expect(root('vllm', 'http://10.0.0.5:8000')).toBe('http://10.0.0.5:8000/v1');
  });

  it('vendors whose API lives under another path: only a bare origin is completed', () => {
    expect(root('openrouter', 'https://openrouter.ai')).toBe('https://openrouter.ai/api/v1');
    expect(root('openrouter', 'https://openrouter.ai/api/v1/')).toBe('https://openrouter.ai/api/v1');
    expect(root('fireworks', 'https://api.fireworks.ai')).toBe('https://api.fireworks.ai/inference/v1');
    expect(root('deepinfra', 'https://api.deepinfra.com/v1/openai')).toBe('https://api.deepinfra.com/v1/openai');
    expect(root('novita', 'https://api.novita.ai/v3/openai/')).toBe('https://api.novita.ai/v3/openai');
    expect(root('azure-ai', 'https://acme.services.ai.azure.com')).toBe('https://acme.services.ai.azure.com/models');
  });

  it('vendors without a version path use the URL as written, trailing slash aside', () => {
    expect(root('perplexity', 'https://api.perplexity.ai/')).toBe('https://api.perplexity.ai');
    expect(root('deepseek', 'https://api.deepseek.com')).toBe('https://api.deepseek.com');
    expect(root('deepseek', 'https://api.deepseek.com/v1')).toBe('https://api.deepseek.com/v1');
    expect(root('bedrock', 'https://bedrock-runtime.{region}.amazonaws.com/')).toBe('https://bedrock-runtime.{region}.amazonaws.com');
  });
});

describe('the vendor table', () => {
  it('every default base URL resolves to an API root that ends with the vendor\'s version path', () => {
    for (const row of allVendors()) {
      const resolved = apiRoot(row.defaultBaseUrl, row);
      if (row.versionPath) expect(resolved.endsWith(row.versionPath), `${row.id}: ${resolved}`).toBe(true);
      // Completing is idempotent: the API root resolves to itself.
      expect(apiRoot(resolved, row), row.id).toBe(resolved);
    }
  });

  it('says which SDKs take the version path in the base URL', () => {
    const withVersion = allVendors().filter((row) => row.versionPath && sdkBaseUrlHasVersion(row)).map((row) => row.id);
    const withoutVersion = allVendors().filter((row) => row.versionPath && !sdkBaseUrlHasVersion(row)).map((row) => row.id);
    expect(withVersion).toContain('openai');
    expect(withVersion).toContain('openrouter');
    expect(withoutVersion.sort()).toEqual(['anthropic', 'azure', 'cerebras', 'cohere', 'gemini', 'groq', 'mistral', 'ollama', 'vertex']);
  });
});

describe('the README', () => {
  it('lists every vendor\'s default base URL and base URL variables as the vendor table has them', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    for (const row of allVendors()) {
      const env = row.baseUrlEnv.map((name) => `\`${name}\``).join(', ');
      expect(readme, row.id).toContain(`| \`${row.id}\` | \`${row.defaultBaseUrl}\` | ${env} |`);
    }
  });
});

describe('baseUrlProblem', () => {
  it('accepts http and https URLs with a host', () => {
    expect(baseUrlProblem('https://api.anthropic.com')).toBeNull();
    expect(baseUrlProblem('http://127.0.0.1:8000/v1/')).toBeNull();
    expect(baseUrlProblem(' https://api.anthropic.com ')).toBeNull();
  });

  it('refuses a value without a scheme, another scheme, or no host', () => {
    expect(baseUrlProblem('api.anthropic.com')).toMatch(/http:\/\/ or https:\/\//);
    expect(baseUrlProblem('localhost:8000')).toMatch(/http:\/\/ or https:\/\//);
    expect(baseUrlProblem('ftp://files.example')).toMatch(/http:\/\/ or https:\/\//);
    expect(baseUrlProblem('https://')).not.toBeNull();
    expect(baseUrlProblem('http://exa mple.com')).not.toBeNull();
  });
});
