package tollgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

// readAll receives a stream to its end and returns its chunks.
func readAll(t *testing.T, stream *tollgate.ChatStream) []*tollgate.ChatCompletionChunk {
	t.Helper()
	var chunks []*tollgate.ChatCompletionChunk
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return chunks
		}
		if err != nil {
			t.Fatalf("after %d chunks: %v", len(chunks), err)
		}
		chunks = append(chunks, chunk)
	}
}

// The request's fields arrive at the upstream as OpenAI's wire format has them: a zero temperature is
// sent, a forced tool choice is an object, extra fields go along; then the tool's result, sent back
// with the assistant's call (content null), gets the final answer.
func TestChatToolRoundTrip(t *testing.T) {
	ctx := testContext(t)
	key := createKey(t, tollgate.KeyCreate{Name: "tools"})
	chat := keyClient(t, key.Key)
	word := marker()
	question := tollgate.UserMessage("Lyon " + word)
	first, err := chat.Chat.Create(ctx, tollgate.ChatCompletionRequest{
		Model:             "fake/echo-1",
		Messages:          []tollgate.ChatMessage{tollgate.SystemMessage("You check the weather."), question},
		Tools:             []tollgate.Tool{weatherTool},
		ToolChoice:        tollgate.ToolChoiceFunction("get_weather"),
		ParallelToolCalls: tollgate.Ptr(false),
		Temperature:       tollgate.Ptr(0.0),
		MaxTokens:         tollgate.Ptr(64),
		Seed:              tollgate.Ptr(int64(7)),
		Stop:              []string{"\n\n"},
		Extra:             tollgate.Extra{"top_k": json.RawMessage(`5`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := upstream.requestsWith(word)
	if len(seen) != 1 {
		t.Fatalf("the upstream saw %d requests", len(seen))
	}
	body := seen[0].Body
	if temperature, ok := body["temperature"]; !ok || temperature != 0.0 {
		t.Fatalf("temperature 0 not sent: %v", body["temperature"])
	}
	if choice, _ := json.Marshal(body["tool_choice"]); string(choice) != `{"function":{"name":"get_weather"},"type":"function"}` {
		t.Fatalf("tool_choice sent as %s", choice)
	}
	if body["top_k"] != 5.0 || body["parallel_tool_calls"] != false || body["max_tokens"] != 64.0 || body["seed"] != 7.0 {
		t.Fatalf("fields not sent as given: %v", body)
	}
	if tools, _ := json.Marshal(body["tools"]); !strings.Contains(string(tools), `"required":["city"]`) {
		t.Fatalf("the tool's schema did not arrive: %s", tools)
	}
	if _, streamed := body["stream"]; streamed {
		t.Fatalf("a whole answer was asked with stream: %v", body["stream"])
	}

	choice := first.Choices[0]
	if choice.FinishReason != "tool_calls" || len(choice.Message.ToolCalls) != 1 || choice.Message.Content != "" {
		t.Fatalf("want one tool call and no text, got %+v", choice)
	}
	call := choice.Message.ToolCalls[0]
	var arguments map[string]string
	if err := call.Function.DecodeArguments(&arguments); err != nil || arguments["city"] != "Lyon "+word {
		t.Fatalf("arguments %q (%v)", call.Function.Arguments, err)
	}

	final, err := chat.Chat.Create(ctx, tollgate.ChatCompletionRequest{
		Model:    "fake/echo-1",
		Messages: []tollgate.ChatMessage{question, choice.Message, tollgate.ToolMessage(call.ID, "18 degrees "+word)},
		Tools:    []tollgate.Tool{weatherTool},
	})
	if err != nil {
		t.Fatal(err)
	}
	if final.FirstText() != "echo: 18 degrees "+word || final.Choices[0].FinishReason != "stop" {
		t.Fatalf("final answer %q (%s)", final.FirstText(), final.Choices[0].FinishReason)
	}
	replayed := upstream.requestsWith("18 degrees " + word)[0].Body["messages"].([]any)
	assistant := replayed[1].(map[string]any)
	if content, present := assistant["content"]; !present || content != nil {
		t.Fatalf("the assistant's tool-call turn must carry content null, got %v", assistant)
	}
	if calls := assistant["tool_calls"].([]any); calls[0].(map[string]any)["id"] != call.ID {
		t.Fatalf("the replayed tool call lost its id: %v", calls)
	}
	if replayed[2].(map[string]any)["tool_call_id"] != call.ID {
		t.Fatalf("the tool message does not name the call: %v", replayed[2])
	}
}

// Fields the SDK does not model survive the trip in both directions: the upstream's extra fields
// reach Extra on the completion, its message and its chunks, and the usage details are decoded.
func TestUnknownFieldsAreKept(t *testing.T) {
	ctx := testContext(t)
	key := createKey(t, tollgate.KeyCreate{Name: "extra"})
	chat := keyClient(t, key.Key)
	request := tollgate.ChatCompletionRequest{Model: "fake/echo-1", Messages: []tollgate.ChatMessage{tollgate.UserMessage("extras")}}

	completion, err := chat.Chat.Create(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	if trace := string(completion.Extra["fake_upstream_trace"]); !strings.HasPrefix(trace, `"trace-chatcmpl-fake`) {
		t.Fatalf("completion Extra %v", completion.Extra)
	}
	if stop, ok := completion.Choices[0].Extra["stop_reason"]; !ok || string(stop) != "null" {
		t.Fatalf("choice Extra %v", completion.Choices[0].Extra)
	}
	if string(completion.Choices[0].Message.Extra["annotations"]) != "[]" {
		t.Fatalf("message Extra %v", completion.Choices[0].Message.Extra)
	}
	if completion.ServiceTier != "default" || completion.SystemFingerprint != "fp_fake01" || completion.Object != "chat.completion" {
		t.Fatalf("completion fields %+v", completion)
	}
	if u := completion.Usage; u == nil || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.PromptTokensDetails == nil || u.CompletionTokensDetails == nil {
		t.Fatalf("usage %+v", completion.Usage)
	}
	// What was decoded encodes back with its extra fields.
	encoded, err := json.Marshal(completion)
	if err != nil || !strings.Contains(string(encoded), `"fake_upstream_trace":"trace-chatcmpl-fake`) || !strings.Contains(string(encoded), `"annotations":[]`) {
		t.Fatalf("re-encoded %s (%v)", encoded, err)
	}

	stream, err := chat.Chat.Stream(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	chunks := readAll(t, stream)
	if len(chunks) == 0 || !strings.HasPrefix(string(chunks[0].Extra["fake_upstream_trace"]), `"trace-chatcmpl-fake`) || chunks[0].Object != "chat.completion.chunk" {
		t.Fatalf("first chunk %+v", chunks[0])
	}
}

// A stream asked with include_usage ends with a chunk without choices that carries the usage, and
// the stream's Completion is the same answer a whole request gives.
func TestStreamIncludeUsage(t *testing.T) {
	ctx := testContext(t)
	key := createKey(t, tollgate.KeyCreate{Name: "usage-chunk"})
	chat := keyClient(t, key.Key)
	request := tollgate.ChatCompletionRequest{Model: "fake/echo-1", Messages: []tollgate.ChatMessage{tollgate.UserMessage("count these four words")}}

	whole, err := chat.Chat.Create(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	request.StreamOptions = &tollgate.StreamOptions{IncludeUsage: true}
	stream, err := chat.Chat.Stream(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	chunks := readAll(t, stream)
	last := chunks[len(chunks)-1]
	if len(last.Choices) != 0 || last.Usage == nil {
		t.Fatalf("last chunk is not the usage chunk: %+v", last)
	}
	for _, chunk := range chunks[:len(chunks)-1] {
		if chunk.Usage != nil {
			t.Fatalf("usage before the last chunk: %+v", chunk)
		}
	}
	assembled := stream.Completion()
	if assembled.FirstText() != whole.FirstText() || assembled.Choices[0].FinishReason != "stop" || assembled.Choices[0].Message.Role != "assistant" {
		t.Fatalf("assembled %q/%s, whole %q", assembled.FirstText(), assembled.Choices[0].FinishReason, whole.FirstText())
	}
	if assembled.Usage == nil || *assembled.Usage.PromptTokensDetails != *whole.Usage.PromptTokensDetails ||
		assembled.Usage.PromptTokens != whole.Usage.PromptTokens || assembled.Usage.CompletionTokens != whole.Usage.CompletionTokens {
		t.Fatalf("stream usage %+v, whole %+v", assembled.Usage, whole.Usage)
	}

	request.StreamOptions = nil
	plain, err := chat.Chat.Stream(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, chunk := range readAll(t, plain) {
		if chunk.Usage != nil {
			t.Fatalf("usage sent without include_usage: %+v", chunk)
		}
	}
}

// An upstream that dies mid-answer: the chunks that came are delivered, then Recv reports the
// gateway's error event as an *APIError (never a clean io.EOF), and keeps reporting it.
func TestStreamCutByTheUpstream(t *testing.T) {
	ctx := testContext(t)
	key := createKey(t, tollgate.KeyCreate{Name: "cut"})
	chat := keyClient(t, key.Key)
	stream, err := chat.Chat.Stream(ctx, tollgate.ChatCompletionRequest{
		Model:    "fake/echo-1",
		Messages: []tollgate.ChatMessage{tollgate.UserMessage(cutStreamPrefix + " one two three")},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var text strings.Builder
	var streamErr error
	for {
		chunk, err := stream.Recv()
		if err != nil {
			streamErr = err
			break
		}
		for _, choice := range chunk.Choices {
			text.WriteString(choice.Delta.Content)
		}
	}
	if errors.Is(streamErr, io.EOF) {
		t.Fatal("a cut stream ended like a complete one")
	}
	var apiErr *tollgate.APIError
	if !errors.As(streamErr, &apiErr) || apiErr.StatusCode != 0 || apiErr.Code == "" || apiErr.Type == "" || apiErr.RequestID != stream.RequestID() {
		t.Fatalf("want an in-stream *APIError, got %T %v", streamErr, streamErr)
	}
	if text.String() != "echo: "+cutStreamPrefix {
		t.Fatalf("text before the cut %q", text.String())
	}
	if _, again := stream.Recv(); again != streamErr {
		t.Fatalf("a second Recv gave %v, want the same error", again)
	}
}

// Cancelling the context ends a stream mid-answer: Recv returns promptly with the context's error,
// and the gateway logs the request as cancelled by its client.
func TestStreamCancelledByContext(t *testing.T) {
	key := createKey(t, tollgate.KeyCreate{Name: "cancel"})
	chat := keyClient(t, key.Key)
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	stream, err := chat.Chat.Stream(ctx, tollgate.ChatCompletionRequest{
		Model:    "fake/echo-1",
		Messages: []tollgate.ChatMessage{tollgate.UserMessage(slowStreamPrefix + " a b c d e f g h i j")},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	started := time.Now()
	for {
		_, err = stream.Recv()
		if err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) || time.Since(started) > 2*time.Second {
		t.Fatalf("after cancel, Recv gave %v after %s", err, time.Since(started))
	}
	admin := adminClient(t)
	eventually(t, 5*time.Second, func() error {
		entry, err := admin.Logs.Get(testContext(t), stream.RequestID())
		if err != nil {
			return err
		}
		if !entry.Cancelled || entry.Status != 499 {
			return errors.New("entry not marked cancelled")
		}
		return nil
	})
}

// Content given as parts is sent as an array of parts.
func TestMessageParts(t *testing.T) {
	ctx := testContext(t)
	key := createKey(t, tollgate.KeyCreate{Name: "parts"})
	chat := keyClient(t, key.Key)
	word := marker()
	completion, err := chat.Chat.Create(ctx, tollgate.ChatCompletionRequest{
		Model: "fake/echo-1",
		Messages: []tollgate.ChatMessage{{Role: tollgate.RoleUser, Parts: []tollgate.ContentPart{
			tollgate.TextPart("first " + word + " "), tollgate.TextPart("second"),
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if completion.FirstText() != "echo: first "+word+" second" {
		t.Fatalf("answer %q", completion.FirstText())
	}
	content := upstream.requestsWith(word)[0].Body["messages"].([]any)[0].(map[string]any)["content"]
	if parts, ok := content.([]any); !ok || len(parts) != 2 || parts[1].(map[string]any)["type"] != "text" {
		t.Fatalf("content sent as %v", content)
	}
}
