package tollgate

import "encoding/json"

// ChatCompletionRequest is the body of POST /v1/chat/completions. Optional numbers are pointers so
// that zero (temperature 0, say) can be sent; use Ptr.
type ChatCompletionRequest struct {
	// Model is a <provider>/<model>, a route name, or a bare model name the gateway resolves.
	Model    string        `json:"model"`
	Messages []ChatMessage `json:"messages"`

	Tools             []Tool      `json:"tools,omitempty"`
	ToolChoice        *ToolChoice `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool       `json:"parallel_tool_calls,omitempty"`

	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	N                   *int            `json:"n,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	Logprobs            *bool           `json:"logprobs,omitempty"`
	TopLogprobs         *int            `json:"top_logprobs,omitempty"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	// User and Metadata tag the request; both show in the gateway's request log.
	User     string            `json:"user,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Fallbacks is tollgate's own field: models or routes to try, in order, when the model fails.
	Fallbacks []string `json:"fallbacks,omitempty"`

	// Stream is set by ChatService: Create sends false, Stream sends true.
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`

	// Extra holds fields to send that are not modelled here (provider-specific parameters).
	Extra Extra `json:"-"`
}

// MarshalJSON writes the request with its extra fields.
func (r ChatCompletionRequest) MarshalJSON() ([]byte, error) {
	type plain ChatCompletionRequest
	return marshalWithExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads a request, keeping unmodelled fields in Extra (useful for fake upstreams and proxies).
func (r *ChatCompletionRequest) UnmarshalJSON(data []byte) error {
	type plain ChatCompletionRequest
	extra, err := unmarshalWithExtra(data, (*plain)(r))
	r.Extra = extra
	return err
}

// StreamOptions asks for the usage chunk at the end of a stream.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ResponseFormat asks for JSON: {"type": "json_object"} or {"type": "json_schema", "json_schema": {...}}.
type ResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
}

// ChatCompletion is a whole answer ("object": "chat.completion").
type ChatCompletion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []Choice `json:"choices"`
	Usage             *Usage   `json:"usage,omitempty"`
	SystemFingerprint string   `json:"system_fingerprint,omitempty"`
	ServiceTier       string   `json:"service_tier,omitempty"`
	// RequestID is the answer's x-request-id header: the id of its request-log entry.
	RequestID string `json:"-"`
	// Extra holds answer fields not modelled here.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the completion with its extra fields.
func (c ChatCompletion) MarshalJSON() ([]byte, error) {
	type plain ChatCompletion
	return marshalWithExtra(plain(c), c.Extra)
}

// UnmarshalJSON reads a completion, keeping unmodelled fields in Extra.
func (c *ChatCompletion) UnmarshalJSON(data []byte) error {
	type plain ChatCompletion
	extra, err := unmarshalWithExtra(data, (*plain)(c))
	c.Extra = extra
	return err
}

// FirstText is the text of the first choice, the usual answer when n is 1.
func (c *ChatCompletion) FirstText() string {
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Message.Text()
}

// Choice is one answer of a completion.
type Choice struct {
	Index   int         `json:"index"`
	Message ChatMessage `json:"message"`
	// FinishReason is stop, length, tool_calls, content_filter, ...
	FinishReason string          `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
	// Extra holds choice fields not modelled here (vLLM's stop_reason, say).
	Extra Extra `json:"-"`
}

// MarshalJSON writes the choice with its extra fields.
func (c Choice) MarshalJSON() ([]byte, error) {
	type plain Choice
	return marshalWithExtra(plain(c), c.Extra)
}

// UnmarshalJSON reads a choice, keeping unmodelled fields in Extra.
func (c *Choice) UnmarshalJSON(data []byte) error {
	type plain Choice
	extra, err := unmarshalWithExtra(data, (*plain)(c))
	c.Extra = extra
	return err
}

// Usage counts the tokens of a request.
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
	// Extra holds usage fields not modelled here (a provider's own counters, say).
	Extra Extra `json:"-"`
}

// MarshalJSON writes the usage with its extra fields.
func (u Usage) MarshalJSON() ([]byte, error) {
	type plain Usage
	return marshalWithExtra(plain(u), u.Extra)
}

// UnmarshalJSON reads usage, keeping unmodelled fields in Extra.
func (u *Usage) UnmarshalJSON(data []byte) error {
	type plain Usage
	extra, err := unmarshalWithExtra(data, (*plain)(u))
	u.Extra = extra
	return err
}

// PromptTokensDetails splits the prompt tokens.
type PromptTokensDetails struct {
	// CachedTokens were read from the provider's prompt cache.
	CachedTokens int `json:"cached_tokens"`
	// CacheWriteTokens were written to the provider's prompt cache (Anthropic's cache writes, as
	// tollgate reports them; OpenRouter's field of the same name).
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	AudioTokens      int `json:"audio_tokens,omitempty"`
	TextTokens       int `json:"text_tokens,omitempty"`
	ImageTokens      int `json:"image_tokens,omitempty"`
}

// CompletionTokensDetails splits the completion tokens.
type CompletionTokensDetails struct {
	ReasoningTokens          int `json:"reasoning_tokens"`
	AudioTokens              int `json:"audio_tokens,omitempty"`
	TextTokens               int `json:"text_tokens,omitempty"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens,omitempty"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens,omitempty"`
}

// ChatCompletionChunk is one event of a stream ("object": "chat.completion.chunk"). The last
// chunk of a stream asked with StreamOptions{IncludeUsage: true} has no choices and carries Usage.
type ChatCompletionChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	Choices           []ChunkChoice `json:"choices"`
	Usage             *Usage        `json:"usage,omitempty"`
	SystemFingerprint string        `json:"system_fingerprint,omitempty"`
	ServiceTier       string        `json:"service_tier,omitempty"`
	// Extra holds chunk fields not modelled here.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the chunk with its extra fields.
func (c ChatCompletionChunk) MarshalJSON() ([]byte, error) {
	type plain ChatCompletionChunk
	return marshalWithExtra(plain(c), c.Extra)
}

// UnmarshalJSON reads a chunk, keeping unmodelled fields in Extra.
func (c *ChatCompletionChunk) UnmarshalJSON(data []byte) error {
	type plain ChatCompletionChunk
	extra, err := unmarshalWithExtra(data, (*plain)(c))
	c.Extra = extra
	return err
}

// ChunkChoice is one choice's piece of a stream.
type ChunkChoice struct {
	Index int        `json:"index"`
	Delta ChunkDelta `json:"delta"`
	// FinishReason is empty (null on the wire) until the choice's last chunk.
	FinishReason string          `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
	// Extra holds choice fields not modelled here.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the choice with its extra fields.
func (c ChunkChoice) MarshalJSON() ([]byte, error) {
	type plain ChunkChoice
	return marshalWithExtra(plain(c), c.Extra)
}

// UnmarshalJSON reads a choice, keeping unmodelled fields in Extra.
func (c *ChunkChoice) UnmarshalJSON(data []byte) error {
	type plain ChunkChoice
	extra, err := unmarshalWithExtra(data, (*plain)(c))
	c.Extra = extra
	return err
}

// ChunkDelta is what one chunk adds to a choice's message.
type ChunkDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   string          `json:"content,omitempty"`
	Refusal   string          `json:"refusal,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
	// Extra holds delta fields not modelled here (e.g. reasoning_content).
	Extra Extra `json:"-"`
}

// MarshalJSON writes the delta with its extra fields.
func (d ChunkDelta) MarshalJSON() ([]byte, error) {
	type plain ChunkDelta
	return marshalWithExtra(plain(d), d.Extra)
}

// UnmarshalJSON reads a delta (content and refusal may be null), keeping unmodelled fields in Extra.
func (d *ChunkDelta) UnmarshalJSON(data []byte) error {
	type plain ChunkDelta
	extra, err := unmarshalWithExtra(data, (*plain)(d))
	d.Extra = extra
	return err
}
