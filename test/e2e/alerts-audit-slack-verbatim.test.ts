import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The README: Slack alert text "is escaped for Slack's mrkdwn (`&`, `<`, `>`), so it cannot link or `<!channel>`".
// Escaping stops `<url|text>` and `<!channel>`, but Slack's text object reference says that a mrkdwn text object
// without `verbatim: true` has its URLs "auto-converted into links, conversation names link-ified, and certain
// mentions automatically parsed". A model name is made up by the client (printable ASCII: `https://...` fits), and
// route rules name it in the summary and the facts: it came out as a clickable link in the ops channel.

const hi = [{ role: 'user' as const, content: 'hi' }];
const HOSTILE_MODEL = 'openai/https://evil.example/login @channel #general';

let upstream: ScriptedUpstream;
let receiver: Receiver;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  receiver = await startReceiver();
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    settings: { routing: { retry: { max_attempts: 1 } } },
    alerts: {
      channels: { chat: { type: 'slack', url: receiver.url } },
      rules: [{ name: 'down', kind: 'fallbacks_exhausted', severity: 'critical', cooldown_ms: 0 }],
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await receiver?.close();
  await upstream?.close();
});

/** The mrkdwn text objects of a Block Kit message's sections (the summary, the facts as fields). */
function mrkdwnObjects(blocks: any[]): any[] {
  return blocks.filter((block) => block.type === 'section').flatMap((block) => [block.text, ...(block.fields ?? [])]).filter((object) => object?.type === 'mrkdwn');
}

describe("a Slack alert naming a client's model", () => {
  it('sends the summary and the facts (mrkdwn) verbatim, so Slack neither links the URL nor parses the mention in them', async () => {
    upstream.setMode({ kind: 'error', status: 500 });
    await tg.client.chat.completions.create({ model: HOSTILE_MODEL, messages: hi }).catch(() => undefined);
    upstream.reset();
    const firing = await until('the Slack notification', () => receiver.deliveries.find((d) => Array.isArray(d.json.blocks)), 5_000);
    const objects = mrkdwnObjects(firing.json.blocks);
    const naming = objects.filter((object) => String(object.text).includes('evil.example'));
    // The summary and the route fact at least carry the client's text.
    expect(naming.length).toBeGreaterThanOrEqual(2);
    for (const object of objects) expect(object).toMatchObject({ type: 'mrkdwn', verbatim: true });
    // The one mrkdwn object left as Slack parses it, the context line, holds only the alert id.
    const context = firing.json.blocks.at(-1);
    expect(String(context.elements[0].text)).not.toContain('evil.example');
  });
});
