import { describe, expect, it } from 'vitest';
import { canonicalRequest } from '../../src/dialects/responses/request.js';
import { nativeFrames } from '../../src/dialects/responses/native.js';
import { newId, responseOf } from '../../src/dialects/responses/response.js';
import { ResponsesStreamRenderer } from '../../src/dialects/responses/stream.js';
import type { ResponsesRequest } from '../../src/dialects/responses/parse-request.js';
import { ResponsesChunker } from '../../src/wire/openai-responses/event-chunks.js';
import { completionOfResponse } from '../../src/wire/openai-responses/to-completion.js';

const read = (body: Record<string, unknown>) => canonicalRequest({ model: 'm', ...body } as ResponsesRequest, 'anthropic/claude');

describe('a Responses request as the canonical one', () => {
  it('turns input items into chat messages: parts, tool calls joined to their turn, outputs, reasoning dropped', () => {
    const { request, untranslatable } = read({
      instructions: 'be brief',
      input: [
        { role: 'developer', content: 'dev rules' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: 'https://x/cat.png', detail: 'low' }, { type: 'input_file', file_data: 'data:application/pdf;base64,AA==', filename: 'a.pdf' }] },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'calling', annotations: [] }] },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{"a":1}' },
        { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'one' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'two' }] },
      ],
      tools: [{ type: 'function', name: 'f', description: 'd', parameters: { type: 'object' }, strict: true }],
      tool_choice: { type: 'function', name: 'f' },
      text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true } },
      max_output_tokens: 100,
      reasoning: { effort: 'high' },
      parallel_tool_calls: false,
      store: true,
      include: ['reasoning.encrypted_content'],
      stream: true,
    });
    expect(untranslatable).toBeNull();
    expect(request).toEqual({
      model: 'anthropic/claude',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'developer', content: 'dev rules' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'https://x/cat.png', detail: 'low' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,AA==', filename: 'a.pdf' } },
          ],
        },
        {
          role: 'assistant',
          content: 'calling',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
            { id: 'c2', type: 'function', function: { name: 'g', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'one' },
        { role: 'tool', tool_call_id: 'c2', content: 'two' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' }, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' }, strict: true } },
      max_completion_tokens: 100,
      reasoning_effort: 'high',
    });
  });

  it.each([
    [{ input: 'x', previous_response_id: 'resp_1' }, 'previous_response_id'],
    [{ input: 'x', conversation: { id: 'conv_1' } }, 'conversation'],
    [{ input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0]'],
    [{ input: 'x', tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'web_search' }] } }, 'tool_choice'],
    [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]'],
    [{ input: [{ type: 'web_search_call', id: 'ws_1' }] }, 'input[0]'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }, 'input[0].content[0]'],
  ])('records what only the Responses API can take: %j', (body, param) => {
    const { untranslatable } = read(body);
    expect(untranslatable).toMatchObject({ status: 400, code: 'unsupported_for_provider', param });
  });

  it("names a custom tool as the client's own, not as a built-in tool", () => {
    const { untranslatable } = read({ input: 'x', tools: [{ type: 'custom', name: 'apply_patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' } }] });
    expect(untranslatable).toMatchObject({ status: 400, code: 'unsupported_for_provider', param: 'tools[0]' });
    expect((untranslatable as unknown as Error).message).toMatch(/^The custom tool 'apply_patch' \(free-form input\)/);
  });

  it.each([
    [{ input: [{ role: 'robot', content: 'x' }] }, 'input[0].role'],
    [{ input: [{ role: 'user', content: 5 }] }, 'input[0].content'],
    [{ input: [{ type: 'mystery' }] }, 'input[0].type'],
    [{ input: 'x', tool_choice: 5 }, 'tool_choice'],
    [{ input: [] }, 'input'],
    [{ input: 'x', text: { format: { type: 'json_schem', name: 'a', schema: { type: 'object' } } } }, 'text.format.type'],
    [{ input: 'x', text: { format: { type: 'json_schema', schema: { type: 'object' } } } }, 'text.format.name'],
    [{ input: 'x', text: { format: { type: 'json_schema', name: 'a' } } }, 'text.format.schema'],
    [{ input: 'x', text: { format: 'json' } }, 'text.format'],
    [{ input: 'x', tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'g' }] } }, 'tool_choice.tools'],
    [{ input: [{ role: 'user', content: [{ type: 'input_text', text: 5 }] }] }, 'input[0].content[0].text'],
    [{ input: [{ role: 'assistant', content: [{ type: 'output_text' }] }, { role: 'user', content: 'q' }] }, 'input[0].content[0].text'],
    [{ input: [{ role: 'assistant', content: [{ type: 'refusal', refusal: null }] }, { role: 'user', content: 'q' }] }, 'input[0].content[0].refusal'],
    [{ input: [{ role: 'user', content: 'q' }, { type: 'function_call', call_id: 'c', name: 'f', arguments: { city: 'Oslo' } }] }, 'input[1].arguments'],
    [{ input: [{ role: 'user', content: 'q' }, { type: 'function_call_output', call_id: 'c' }] }, 'input[1].output'],
  ])('records what it cannot read as a 400 naming the field, for a provider of another format: %j', (body, param) => {
    const { untranslatable } = read(body);
    expect(untranslatable).toMatchObject({ status: 400, param });
  });
});

describe('answers', () => {
  const reply = { model: 'anthropic/claude', body: { model: 'anthropic/claude', instructions: 'hi' } as ResponsesRequest };

  it('a completion as a Response: text, tool calls by call id, a length stop as incomplete, usage', () => {
    const response = responseOf(
      {
        id: 'x',
        object: 'chat.completion',
        model: 'm',
        created: 5,
        choices: [{ index: 0, message: { role: 'assistant', content: 'hello', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, finish_reason: 'length' }],
        usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14, prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 2 } },
      },
      reply,
    );
    expect(response).toMatchObject({
      object: 'response',
      model: 'anthropic/claude',
      instructions: 'hi',
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      output: [
        { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hello', annotations: [] }] },
        // The length stop came while the call was being written: that item is the incomplete one.
        { type: 'function_call', call_id: 'toolu_1', name: 'f', arguments: '{}', status: 'incomplete' },
      ],
      usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 3 }, output_tokens: 4, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 14 },
    });
  });

  it('reasoning as a reasoning item’s summary, streamed with the reasoning_summary events, before the text', () => {
    const renderer = new ResponsesStreamRenderer(reply);
    const chunk = (delta: Record<string, unknown>) => ({ id: 'c', object: 'chat.completion.chunk' as const, model: 'm', choices: [{ index: 0, delta, finish_reason: null }] });
    const events = [...renderer.push(chunk({ reasoning_content: 'hmm' })), ...renderer.push(chunk({ content: 'ok' })), ...renderer.end(null)];
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect((events.at(-1)?.response as Record<string, any>).output[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'hmm' }] });
  });

  it('chunks as the documented event sequence, numbered, one item open at a time', () => {
    const renderer = new ResponsesStreamRenderer(reply);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: 'c', object: 'chat.completion.chunk' as const, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
    const events = [
      ...renderer.push(chunk({ role: 'assistant', content: 'Hi' })),
      ...renderer.push(chunk({ content: ' there' })),
      ...renderer.push(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a"' } }] })),
      ...renderer.push(chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }, 'tool_calls')),
      ...renderer.end({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }),
    ];
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
    const completed = events.at(-1)?.response as Record<string, any>;
    expect(completed.output).toMatchObject([
      { type: 'message', content: [{ text: 'Hi there' }] },
      { type: 'function_call', call_id: 'call_1', arguments: '{"a":1}' },
    ]);
    expect(completed.usage).toMatchObject({ input_tokens: 3, output_tokens: 2 });
  });
});

describe('an upstream’s own Responses answer', () => {
  it('its events show the client’s model in the Response they carry, and nothing else changes', () => {
    const created = '{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","output":[],"model":"gpt-5-2025-08-07","text":{"format":{"type":"text"}}}}';
    const delta = '{"type":"response.output_text.delta","sequence_number":3,"delta":"\\"model\\":\\"x\\", \\"response\\":{}"}';
    const frames = nativeFrames([{ event: 'response.created', data: created }, { event: 'response.output_text.delta', data: delta }], 'openai/gpt-5');
    expect(frames).toBe(`event: response.created\ndata: ${created.replace('gpt-5-2025-08-07', 'openai/gpt-5')}\n\nevent: response.output_text.delta\ndata: ${delta}\n\n`);
  });

  it('only the Response’s own model changes: not a nested one, nor one inside a string with braces and quotes', () => {
    const data = '{"type":"response.completed","note":"{\\"response\\":{\\"model\\":\\"x\\"}}","response":{"output":[{"model":"inner","text":"} \\" {"}],"model":"gpt-5"},"sequence_number":9}';
    const frame = nativeFrames([{ event: 'response.completed', data }], 'openai/gpt-5');
    const shown = JSON.parse(frame.slice(frame.indexOf('data: ') + 6)) as Record<string, any>;
    expect(shown.response.model).toBe('openai/gpt-5');
    expect(shown.response.output[0].model).toBe('inner');
    expect(shown.note).toBe('{"response":{"model":"x"}}');
    expect(frame.replace('"openai/gpt-5"', '"gpt-5"')).toBe(`event: response.completed\ndata: ${data}\n\n`);
  });

  it('reads into the canonical completion and chunks the stages use', () => {
    const response = {
      id: 'resp_1',
      created_at: 9,
      model: 'gpt-5',
      status: 'completed',
      output: [
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thought' }], encrypted_content: 'gAAAA' },
        { type: 'message', content: [{ type: 'output_text', text: 'hi' }] },
        { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}' },
      ],
      usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 4 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 17 },
    };
    expect(completionOfResponse(response).choices[0]).toMatchObject({
      message: { content: 'hi', reasoning_content: 'thought', tool_calls: [{ id: 'call_1', function: { name: 'f', arguments: '{}' } }] },
      finish_reason: 'tool_calls',
    });
    const chunker = new ResponsesChunker();
    chunker.push({ type: 'response.created', response: { ...response, output: [] } });
    expect(chunker.push({ type: 'response.output_text.delta', output_index: 1, delta: 'hi' })[0]?.choices[0]).toMatchObject({ delta: { content: 'hi' } });
    expect(chunker.push({ type: 'response.output_item.added', output_index: 2, item: { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '' } })[0]?.choices[0]).toMatchObject({
      delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f' } }] },
    });
    const end = chunker.push({ type: 'response.completed', response });
    expect(end.map((chunk) => chunk.usage ?? null).at(-1)).toMatchObject({ prompt_tokens: 10, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 5 } });
    expect(chunker.finished).toBe(true);
  });
});

describe('newId', () => {
  it('gives each id its own 16 random bytes, across the pool they are drawn from', () => {
    // Drawn from a 4 KiB pool (256 ids) refilled as it runs out: 1,000 ids span four refills.
    const ids = Array.from({ length: 1_000 }, () => newId('msg'));
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(newId('fc')).toMatch(/^fc_[0-9a-f]{32}$/);
  });
});
