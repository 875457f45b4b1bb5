/**
 * The wire format of OpenAI's legacy Completions API (`POST /v1/completions`, the SDK's `client.completions.create`,
 * which FIM autocomplete tools and lm-eval-harness call): a body with `prompt` (and `suffix`, `echo`, `logprobs`, ...)
 * whose answer is a `text_completion` object, or a stream of them. Only providers whose API serves it take it;
 * nothing translates it to another format.
 */
export const COMPLETIONS_FORMAT = 'openai-completions';
