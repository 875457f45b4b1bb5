/** The wire format of OpenAI's Responses API (`POST /v1/responses`): a Responses client's native body and an upstream's own answer. */
export const RESPONSES_FORMAT = 'openai-responses';

/**
 * The wire format of OpenAI's compaction (`POST /v1/responses/compact`): a Responses body (model, input, instructions,
 * previous_response_id) whose answer is a `response.compaction` object (the conversation's user messages and one
 * encrypted compaction item, with usage). Only OpenAI's API serves it; nothing translates it to another format.
 */
export const COMPACT_FORMAT = 'openai-responses-compact';
