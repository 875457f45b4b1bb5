package tollgate

import (
	"bytes"
	"encoding/json"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ChatMessage is one message of a conversation, in a request or an answer.
//
// Content is the text. Parts, when not nil, is sent instead: a list of content parts (text, images,
// audio, files). An answer's message has Content (its text) and, for a tool call, ToolCalls.
type ChatMessage struct {
	Role    string
	Content string
	Parts   []ContentPart
	// Name tells apart participants of the same role.
	Name string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID is the call a "tool" message answers.
	ToolCallID string
	// Refusal is the model's refusal text, when it refused.
	Refusal string
	// Extra holds fields not modelled here (e.g. audio, annotations, reasoning_content).
	Extra Extra
}

// SystemMessage builds a system message.
func SystemMessage(text string) ChatMessage { return ChatMessage{Role: RoleSystem, Content: text} }

// UserMessage builds a user message.
func UserMessage(text string) ChatMessage { return ChatMessage{Role: RoleUser, Content: text} }

// AssistantMessage builds an assistant message with text.
func AssistantMessage(text string) ChatMessage {
	return ChatMessage{Role: RoleAssistant, Content: text}
}

// ToolMessage answers the tool call toolCallID with its result.
func ToolMessage(toolCallID, result string) ChatMessage {
	return ChatMessage{Role: RoleTool, Content: result, ToolCallID: toolCallID}
}

// messageWire is ChatMessage as JSON: content may be a string, an array of parts or null.
type messageWire struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Refusal    *string         `json:"refusal,omitempty"`
}

// MarshalJSON writes content as a string, as parts when Parts is set, or as null for an assistant
// message that only calls tools (OpenAI's own encoding of that turn).
func (m ChatMessage) MarshalJSON() ([]byte, error) {
	wire := messageWire{Role: m.Role, Name: m.Name, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
	var err error
	switch {
	case m.Parts != nil:
		wire.Content, err = json.Marshal(m.Parts)
	case m.Content == "" && len(m.ToolCalls) > 0:
		wire.Content = json.RawMessage("null")
	default:
		wire.Content, err = json.Marshal(m.Content)
	}
	if err != nil {
		return nil, err
	}
	if m.Refusal != "" {
		wire.Refusal = &m.Refusal
	}
	return marshalWithExtra(wire, m.Extra)
}

// UnmarshalJSON reads content as a string, parts or null.
func (m *ChatMessage) UnmarshalJSON(data []byte) error {
	var wire messageWire
	extra, err := unmarshalWithExtra(data, &wire)
	if err != nil {
		return err
	}
	*m = ChatMessage{Role: wire.Role, Name: wire.Name, ToolCalls: wire.ToolCalls, ToolCallID: wire.ToolCallID, Extra: extra}
	if wire.Refusal != nil {
		m.Refusal = *wire.Refusal
	}
	content := bytes.TrimSpace(wire.Content)
	switch {
	case len(content) == 0 || bytes.Equal(content, []byte("null")):
	case content[0] == '[':
		return json.Unmarshal(content, &m.Parts)
	default:
		return json.Unmarshal(content, &m.Content)
	}
	return nil
}

// Text returns the message's text: Content, or the text parts joined.
func (m ChatMessage) Text() string {
	if m.Parts == nil {
		return m.Content
	}
	var text string
	for _, part := range m.Parts {
		text += part.Text
	}
	return text
}

// ContentPart is one part of a message's content: {"type": "text", "text": ...},
// {"type": "image_url", "image_url": {...}}, or any other type through Extra.
type ContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
	// Extra holds the fields of other part types (input_audio, file, ...).
	Extra Extra `json:"-"`
}

// ImageURL is an image by URL or data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// TextPart builds a text content part.
func TextPart(text string) ContentPart { return ContentPart{Type: "text", Text: text} }

// ImagePart builds an image content part from a URL or a data: URL.
func ImagePart(url string) ContentPart {
	return ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: url}}
}

// MarshalJSON writes the part with its extra fields.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	type plain ContentPart
	return marshalWithExtra(plain(p), p.Extra)
}

// UnmarshalJSON reads the part, keeping fields of other part types in Extra.
func (p *ContentPart) UnmarshalJSON(data []byte) error {
	type plain ContentPart
	extra, err := unmarshalWithExtra(data, (*plain)(p))
	p.Extra = extra
	return err
}
