package tollgate_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// fakeUpstreamKey is the provider key tollgate is configured with; the fake refuses any other, so a
// test passing through it proves the gateway sent its own key and not the client's virtual key.
const fakeUpstreamKey = "sk-fake-upstream-3f9a"

// cutStreamPrefix, at the start of the last user message of a streamed request, makes the fake send
// two chunks and then drop the connection, as an upstream that dies mid-answer does.
const cutStreamPrefix = "cut-stream"

// slowStreamPrefix makes the fake wait between streamed chunks, so a client can leave mid-answer.
const slowStreamPrefix = "slow-stream"

// fakeUpstream is an OpenAI-compatible server speaking OpenAI's wire format: chat.completion objects,
// chat.completion.chunk SSE events ending in "data: [DONE]", the include_usage chunk, tool calls whose
// arguments stream in pieces, and OpenAI's error shape. Its answers are derived from the request, so
// tests can assert what passed through the gateway. It adds fields the SDK does not model
// (fake_upstream_trace, message annotations, vLLM's stop_reason) to check that they survive.
type fakeUpstream struct {
	server   *httptest.Server
	counter  atomic.Int64
	mu       sync.Mutex
	requests []recordedRequest
}

// recordedRequest is one request as the upstream received it.
type recordedRequest struct {
	Header http.Header
	Body   map[string]any
}

func startFakeUpstream() *fakeUpstream {
	upstream := &fakeUpstream{}
	upstream.server = httptest.NewServer(http.HandlerFunc(upstream.serve))
	return upstream
}

func (u *fakeUpstream) close() { u.server.Close() }

// requestsWith returns the requests whose body contains marker, oldest first.
func (u *fakeUpstream) requestsWith(marker string) []recordedRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	var found []recordedRequest
	for _, request := range u.requests {
		encoded, _ := json.Marshal(request.Body)
		if strings.Contains(string(encoded), marker) {
			found = append(found, request)
		}
	}
	return found
}

func (u *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", fmt.Sprintf("Unknown request URL: %s %s.", r.Method, r.URL.Path))
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+fakeUpstreamKey {
		writeOpenAIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "We could not parse the JSON body of your request.")
		return
	}
	u.mu.Lock()
	u.requests = append(u.requests, recordedRequest{Header: r.Header.Clone(), Body: body})
	u.mu.Unlock()

	plan := planAnswer(body)
	plan.id = fmt.Sprintf("chatcmpl-fake%06d", u.counter.Add(1))
	if stream, _ := body["stream"].(bool); stream {
		includeUsage := false
		if options, ok := body["stream_options"].(map[string]any); ok {
			includeUsage, _ = options["include_usage"].(bool)
		}
		u.stream(w, plan, includeUsage, r.Context().Done())
		return
	}
	writeJSON(w, http.StatusOK, plan.completion())
}

// answerPlan is what the fake answers, rendered either whole or as chunks.
type answerPlan struct {
	id               string
	model            string
	created          int64
	tokens           []string // the text, split into streamed pieces
	toolName         string   // non-empty: the answer is a call to this tool
	toolArguments    string
	promptTokens     int
	completionTokens int
	cut              bool
	slow             bool
}

// planAnswer derives the answer from the request: a call to the first (or the forced) tool when tools
// are offered and the conversation does not end with a tool result; else "echo: <last message>".
func planAnswer(body map[string]any) answerPlan {
	messages, _ := body["messages"].([]any)
	plan := answerPlan{created: time.Now().Unix()}
	plan.model, _ = body["model"].(string)
	last, lastRole := "", ""
	for _, raw := range messages {
		message, _ := raw.(map[string]any)
		text := messageText(message["content"])
		plan.promptTokens += len(strings.Fields(text))
		lastRole, _ = message["role"].(string)
		last = text
	}
	if name := chosenTool(body); name != "" && lastRole != "tool" {
		plan.toolName = name
		arguments, _ := json.Marshal(map[string]string{"city": last, "unit": "celsius"})
		plan.toolArguments = string(arguments)
		plan.completionTokens = len(strings.Fields(plan.toolArguments)) + 1
		return plan
	}
	plan.cut = strings.HasPrefix(last, cutStreamPrefix)
	plan.slow = strings.HasPrefix(last, slowStreamPrefix)
	plan.tokens = splitPieces("echo: " + last)
	plan.completionTokens = len(plan.tokens)
	return plan
}

// chosenTool is the tool the answer calls: the forced function, else the first tool unless the
// choice is "none"; empty when no tool is offered.
func chosenTool(body map[string]any) string {
	tools, _ := body["tools"].([]any)
	if len(tools) == 0 {
		return ""
	}
	switch choice := body["tool_choice"].(type) {
	case string:
		if choice == "none" {
			return ""
		}
	case map[string]any:
		function, _ := choice["function"].(map[string]any)
		name, _ := function["name"].(string)
		return name
	}
	first, _ := tools[0].(map[string]any)
	function, _ := first["function"].(map[string]any)
	name, _ := function["name"].(string)
	return name
}

// messageText is a message's text: the string content, or its text parts joined.
func messageText(content any) string {
	switch value := content.(type) {
	case string:
		return value
	case []any:
		var text strings.Builder
		for _, raw := range value {
			part, _ := raw.(map[string]any)
			if piece, ok := part["text"].(string); ok {
				text.WriteString(piece)
			}
		}
		return text.String()
	}
	return ""
}

// splitPieces splits text into words, each with the space before it, so the pieces join back exactly.
func splitPieces(text string) []string {
	var pieces []string
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' {
			pieces = append(pieces, text[start:i])
			start = i
		}
	}
	return append(pieces, text[start:])
}

func (p answerPlan) usage() map[string]any {
	return map[string]any{
		"prompt_tokens":             p.promptTokens,
		"completion_tokens":         p.completionTokens,
		"total_tokens":              p.promptTokens + p.completionTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": 0, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
}

func (p answerPlan) toolCall() map[string]any {
	return map[string]any{"id": "call_" + p.id[len(p.id)-6:], "type": "function", "function": map[string]any{"name": p.toolName, "arguments": p.toolArguments}}
}

func (p answerPlan) completion() map[string]any {
	message := map[string]any{"role": "assistant", "content": strings.Join(p.tokens, ""), "refusal": nil, "annotations": []any{}}
	finish := "stop"
	if p.toolName != "" {
		message["content"] = nil
		message["tool_calls"] = []any{p.toolCall()}
		finish = "tool_calls"
	}
	return map[string]any{
		"id": p.id, "object": "chat.completion", "created": p.created, "model": p.model,
		"choices":             []any{map[string]any{"index": 0, "message": message, "logprobs": nil, "finish_reason": finish, "stop_reason": nil}},
		"usage":               p.usage(),
		"service_tier":        "default",
		"system_fingerprint":  "fp_fake01",
		"fake_upstream_trace": "trace-" + p.id,
	}
}

func (p answerPlan) chunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{
		"id": p.id, "object": "chat.completion.chunk", "created": p.created, "model": p.model,
		"service_tier": "default", "system_fingerprint": "fp_fake01", "fake_upstream_trace": "trace-" + p.id,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	}
}

// stream writes the answer as OpenAI does: a role chunk, content or tool-call pieces, a finish chunk,
// the usage chunk when asked for (every earlier chunk then carries "usage": null), and [DONE].
func (u *fakeUpstream) stream(w http.ResponseWriter, p answerPlan, includeUsage bool, done <-chan struct{}) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	send := func(chunk map[string]any) {
		if includeUsage {
			chunk["usage"] = nil
		}
		encoded, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", encoded)
		flusher.Flush()
	}
	send(p.chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	if p.toolName != "" {
		call := p.toolCall()
		send(p.chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": call["id"], "type": "function", "function": map[string]any{"name": p.toolName, "arguments": ""},
		}}}, nil))
		// Arguments in pieces of 7 bytes, cutting through keys and values as real upstreams do.
		for start := 0; start < len(p.toolArguments); start += 7 {
			end := start + 7
			if end > len(p.toolArguments) {
				end = len(p.toolArguments)
			}
			send(p.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": p.toolArguments[start:end]}}}}, nil))
		}
		send(p.chunk(map[string]any{}, "tool_calls"))
	} else {
		for i, piece := range p.tokens {
			if p.cut && i == 2 {
				// Drop the connection mid-answer: no finish chunk, no [DONE].
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			if p.slow && i > 0 {
				select {
				case <-time.After(100 * time.Millisecond):
				case <-done:
					return
				}
			}
			send(p.chunk(map[string]any{"content": piece}, nil))
		}
		send(p.chunk(map[string]any{}, "stop"))
	}
	if includeUsage {
		final := p.chunk(nil, nil)
		final["choices"] = []any{}
		final["usage"] = p.usage()
		encoded, _ := json.Marshal(final)
		fmt.Fprintf(w, "data: %s\n\n", encoded)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	flusher.Flush()
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func writeOpenAIError(w http.ResponseWriter, status int, kind, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": kind, "param": nil, "code": code}})
}
