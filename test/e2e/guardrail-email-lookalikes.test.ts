import type Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';

// An email redaction rule in front of a coding agent (Claude Code on /anthropic): git's scp-style remotes look like
// addresses (git@github.com:acme/app.git) and must reach the model, and come back from it, as they are.

let rig: AnthropicRig;
beforeAll(async () => {
  rig = await startAnthropicRig({ guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact' }] } });
});
afterAll(async () => rig?.stop());

const REMOTE = 'origin\tgit@github.com:acme/app.git (fetch)';

describe('git remotes under an email rule', () => {
  it('reach the model and the client unchanged, while an address is still redacted', async () => {
    const tools: Anthropic.Tool[] = [{ name: 'bash', description: 'Runs a command.', input_schema: { type: 'object' } }];
    const message = await rig.client.messages.create({
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 300,
      tools,
      messages: [
        { role: 'user', content: 'Which remote is this? Mail jane@example.com the answer.' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'git remote -v' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: REMOTE }, { type: 'text', text: `Clone it with: git clone git@github.com:acme/app.git` }] },
      ],
    });
    const sent = JSON.stringify(rig.lastCall().body);
    expect(sent).toContain(JSON.stringify(REMOTE).slice(1, -1));
    expect(sent).toContain('git clone git@github.com:acme/app.git');
    expect(sent).not.toContain('jane@example.com');
    expect(sent).toContain('Mail [REDACTED:email] the answer.');
    expect(JSON.stringify(message.content)).toContain('git clone git@github.com:acme/app.git');
  });
});
