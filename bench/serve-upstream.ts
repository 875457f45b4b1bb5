// Child-process entry: the scripted OpenAI upstream from the tests, with the bench's control channel so its
// CPU can be sampled like the other servers'. No artificial delay between SSE chunks: the bench measures
// proxy cost, and a delay would only add the same constant to every target.
import { startOpenAIUpstream } from '../test/upstream/openai-upstream.js';
import { readServeArgs } from './serve-args.js';
import { serveControl } from './serve-control.js';

const args = readServeArgs(false);
const upstream = await startOpenAIUpstream({ port: args.port, host: '127.0.0.1', apiKey: 'sk-bench', chunkDelayMs: 0, record: false });
// `--pieces <n>`: every answer is n word pieces (a stream of n content chunks) instead of the short echo.
if (args.pieces > 0) upstream.setMode({ kind: 'reply', pieces: Array.from({ length: args.pieces }, (_, i) => `${i === 0 ? '' : ' '}word${i}`) });
serveControl(upstream.url, () => upstream.close());
