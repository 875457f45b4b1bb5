/** The wire format of OpenAI's Responses API (`POST /v1/responses`): a Responses client's native body and an upstream's own answer. */
export const RESPONSES_FORMAT = 'openai-responses';
