package tollgate

import (
	"encoding/json"
	"sort"
	"strings"
)

// ChatAccumulator puts the chunks of a stream together into one ChatCompletion: each choice's text,
// its tool calls (id and name from the first piece, arguments from every piece, by index) and the
// usage of the final chunk. ChatStream uses one; it is exported for callers that read chunks another
// way. The zero value is ready to use.
type ChatAccumulator struct {
	head    ChatCompletion
	started bool
	choices map[int]*choiceParts
}

// choiceParts is one choice being put together.
type choiceParts struct {
	role      string
	content   strings.Builder
	refusal   strings.Builder
	toolCalls map[int]*ToolCall
	finish    string
	// logprobs are the choice's logprobs put together: each list (content, refusal) joined in the order
	// the chunks came, any other field as last sent; nil until a chunk had logprobs.
	logprobs map[string]json.RawMessage
	// lists are the joined entries of the logprobs fields that are lists.
	lists map[string][]json.RawMessage
	extra Extra
	// choiceExtra are the choice's own unmodelled fields (vLLM's stop_reason, say), as last sent.
	choiceExtra Extra
}

// Add takes one chunk into the answer.
func (a *ChatAccumulator) Add(chunk *ChatCompletionChunk) {
	if !a.started {
		a.started = true
		a.head = ChatCompletion{ID: chunk.ID, Created: chunk.Created}
		a.choices = map[int]*choiceParts{}
	}
	if chunk.Model != "" {
		a.head.Model = chunk.Model
	}
	if chunk.SystemFingerprint != "" {
		a.head.SystemFingerprint = chunk.SystemFingerprint
	}
	if chunk.ServiceTier != "" {
		a.head.ServiceTier = chunk.ServiceTier
	}
	if chunk.Usage != nil {
		usage := *chunk.Usage
		a.head.Usage = &usage
	}
	for name, value := range chunk.Extra {
		if a.head.Extra == nil {
			a.head.Extra = Extra{}
		}
		a.head.Extra[name] = value
	}
	for _, choice := range chunk.Choices {
		a.addChoice(choice)
	}
}

func (a *ChatAccumulator) addChoice(choice ChunkChoice) {
	parts := a.choices[choice.Index]
	if parts == nil {
		parts = &choiceParts{toolCalls: map[int]*ToolCall{}}
		a.choices[choice.Index] = parts
	}
	delta := choice.Delta
	if delta.Role != "" {
		parts.role = delta.Role
	}
	parts.content.WriteString(delta.Content)
	parts.refusal.WriteString(delta.Refusal)
	for _, piece := range delta.ToolCalls {
		call := parts.toolCalls[piece.Index]
		if call == nil {
			call = &ToolCall{Type: "function"}
			parts.toolCalls[piece.Index] = call
		}
		if piece.ID != "" {
			call.ID = piece.ID
		}
		if piece.Type != "" {
			call.Type = piece.Type
		}
		if piece.Function.Name != "" {
			call.Function.Name = piece.Function.Name
		}
		call.Function.Arguments += piece.Function.Arguments
	}
	for name, value := range delta.Extra {
		parts.addExtra(name, value)
	}
	if choice.FinishReason != "" {
		parts.finish = choice.FinishReason
	}
	parts.addLogprobs(choice.Logprobs)
	for name, value := range choice.Extra {
		if parts.choiceExtra == nil {
			parts.choiceExtra = Extra{}
		}
		parts.choiceExtra[name] = value
	}
}

// addLogprobs takes one chunk's logprobs ({"content": [...], "refusal": [...]}, each chunk holding the
// entries of its own tokens) into the choice's, so the whole answer has every token's entry.
func (p *choiceParts) addLogprobs(raw json.RawMessage) {
	var fields map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &fields) != nil || fields == nil {
		return
	}
	if p.logprobs == nil {
		p.logprobs = map[string]json.RawMessage{}
		p.lists = map[string][]json.RawMessage{}
	}
	for name, value := range fields {
		var entries []json.RawMessage
		if trimmed := strings.TrimSpace(string(value)); strings.HasPrefix(trimmed, "[") && json.Unmarshal(value, &entries) == nil {
			p.lists[name] = append(p.lists[name], entries...)
			p.logprobs[name] = nil
			continue
		}
		if _, joined := p.lists[name]; !joined {
			p.logprobs[name] = value
		}
	}
}

// joinedLogprobs is the choice's logprobs as one object, nil when no chunk had any.
func (p *choiceParts) joinedLogprobs() json.RawMessage {
	if p.logprobs == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(p.logprobs))
	for name, value := range p.logprobs {
		out[name] = value
		if entries, joined := p.lists[name]; joined {
			if entries == nil {
				entries = []json.RawMessage{}
			}
			out[name], _ = json.Marshal(entries)
		}
	}
	encoded, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return encoded
}

// addExtra keeps an unmodelled delta field: text fields (reasoning_content, say) stream in pieces and
// are joined; any other value is kept as last sent.
func (p *choiceParts) addExtra(name string, value json.RawMessage) {
	if p.extra == nil {
		p.extra = Extra{}
	}
	var piece, sofar string
	if json.Unmarshal(value, &piece) == nil {
		if previous, ok := p.extra[name]; ok && json.Unmarshal(previous, &sofar) == nil {
			joined, _ := json.Marshal(sofar + piece)
			p.extra[name] = joined
			return
		}
	}
	p.extra[name] = value
}

// Completion returns the answer put together so far, choices in index order.
func (a *ChatAccumulator) Completion() *ChatCompletion {
	completion := a.head
	completion.Object = "chat.completion"
	completion.Choices = []Choice{}
	indexes := make([]int, 0, len(a.choices))
	for index := range a.choices {
		indexes = append(indexes, index)
	}
	sort.Ints(indexes)
	for _, index := range indexes {
		parts := a.choices[index]
		message := ChatMessage{Role: parts.role, Content: parts.content.String(), Refusal: parts.refusal.String(), Extra: copyExtra(parts.extra)}
		if message.Role == "" {
			message.Role = RoleAssistant
		}
		calls := make([]int, 0, len(parts.toolCalls))
		for callIndex := range parts.toolCalls {
			calls = append(calls, callIndex)
		}
		sort.Ints(calls)
		for _, callIndex := range calls {
			message.ToolCalls = append(message.ToolCalls, *parts.toolCalls[callIndex])
		}
		completion.Choices = append(completion.Choices, Choice{Index: index, Message: message, FinishReason: parts.finish, Logprobs: parts.joinedLogprobs(), Extra: copyExtra(parts.choiceExtra)})
	}
	return &completion
}

// copyExtra copies an Extra, so an answer returned mid-stream does not change as more chunks come.
func copyExtra(extra Extra) Extra {
	if extra == nil {
		return nil
	}
	copied := make(Extra, len(extra))
	for name, value := range extra {
		copied[name] = value
	}
	return copied
}
