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
	logprobs  json.RawMessage
	extra     Extra
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
	if len(choice.Logprobs) > 0 && string(choice.Logprobs) != "null" {
		parts.logprobs = choice.Logprobs
	}
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
		message := ChatMessage{Role: parts.role, Content: parts.content.String(), Refusal: parts.refusal.String(), Extra: parts.extra}
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
		completion.Choices = append(completion.Choices, Choice{Index: index, Message: message, FinishReason: parts.finish, Logprobs: parts.logprobs})
	}
	return &completion
}
