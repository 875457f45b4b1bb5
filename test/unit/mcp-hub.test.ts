import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import type { McpServerRuntime, McpSettings } from '../../src/core/config.js';
import { createLog } from '../../src/log.js';
import { McpHubService, splitToolName } from '../../src/mcp/mcp-hub.js';
import { until } from '../helpers/alert-receiver.js';
import { OutboundNetwork } from '../../src/network/outbound-network.js';

function settings(servers: McpServerRuntime[]): McpSettings {
  return { servers: new Map(servers.map((server) => [server.name, server])), callTimeoutMs: 1_000, maxResultBytes: 1_000, maxAnswerBytes: 10_485_760, maxSteps: 5, timeBudgetMs: 10_000 };
}

describe('McpHubService', () => {
  it('splits namespaced names at the first separator', () => {
    expect(splitToolName('docs__read__file')).toEqual({ server: 'docs', tool: 'read__file' });
    expect(splitToolName('plain')).toEqual({ server: '', tool: 'plain' });
  });

  it('reports a server that cannot start as failed, retries it with backoff, and never throws on a call', async () => {
    const bus = new EventBus();
    const failures: string[] = [];
    bus.on('mcp.tool.failed', (event) => failures.push(event.error));
    const hub = new McpHubService({ bus, log: createLog('silent'), clientInfo: { name: 'test', version: '0' }, backoff: { baseMs: 20, maxMs: 40 }, outbound: new OutboundNetwork() });
    await hub.reconfigure(settings([
      { name: 'broken', type: 'stdio', command: '/nonexistent/mcp-server' },
      { name: 'off', type: 'stdio', command: '/nonexistent/other', disabled: true },
    ]));
    try {
      await until('two attempts', () => (hub.health().find((entry) => entry.name === 'broken')?.attempts ?? 0) >= 2);
      const [broken, off] = hub.health();
      expect(broken).toMatchObject({ name: 'broken', type: 'stdio', tools: 0, lastError: expect.stringContaining('ENOENT') });
      expect(['failed', 'reconnecting']).toContain(broken!.state);
      expect(off).toMatchObject({ name: 'off', state: 'closed', attempts: 0 });
      expect(hub.tools()).toEqual([]);

      const caller = { requestId: 'r1', keyId: null, teamId: null, via: 'api' as const };
      const unknown = await hub.callTool('nowhere__tool', {}, caller);
      expect(unknown).toMatchObject({ status: 'error', isError: true, failure: 'failed', text: expect.stringMatching(/^Error: /) });
      const down = await hub.callTool('broken__tool', { a: 1 }, caller);
      expect(down).toMatchObject({ status: 'error', failure: 'unavailable', argumentsBytes: 7 });
      expect(failures).toHaveLength(2);
    } finally {
      await hub.close();
    }
    expect(hub.health().map((entry) => entry.state)).toEqual(['closed', 'closed']);
  });

  it('keeps the secrets a server was given out of last_error (shown by /health, /api/mcp and failed tool calls)', async () => {
    const hub = new McpHubService({ bus: new EventBus(), log: createLog('silent'), clientInfo: { name: 'test', version: '0' }, backoff: { baseMs: 20, maxMs: 40 }, outbound: new OutboundNetwork() });
    // A server that complains about its credential on stderr, quoting it, then exits.
    const script = "process.stderr.write('login refused for ' + process.env.DB_PASSWORD + ' and ' + process.env.SHORT + '\\n'); process.exit(1)";
    await hub.reconfigure(settings([{ name: 'leaky', type: 'stdio', command: process.execPath, args: ['-e', script], env: { DB_PASSWORD: 'hunter2-prod-db', SHORT: 'off' } }]));
    try {
      await until('a failed attempt', () => (hub.health()[0]?.lastError ?? '').includes('stderr'));
      const lastError = hub.health()[0]!.lastError!;
      expect(lastError).not.toContain('hunter2-prod-db');
      expect(lastError).toContain('login refused for [REDACTED] and off');
      const down = await hub.callTool('leaky__tool', {}, { requestId: 'r1', keyId: 'k1', teamId: null, via: 'api' as const });
      expect(down.text).not.toContain('hunter2-prod-db');
    } finally {
      await hub.close();
    }
  });
});
