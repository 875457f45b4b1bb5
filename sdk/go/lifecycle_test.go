package tollgate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

// weatherTool is a function tool with a real JSON Schema.
var weatherTool = tollgate.FunctionTool("get_weather", "Current weather in a city.", json.RawMessage(`{
	"type": "object",
	"properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
	"required": ["city"]
}`))

// The whole life of a virtual key through the SDK: created (its secret shown once), used for a whole
// answer, a stream and a streamed tool call, seen in the request log and in usage grouped by key,
// then deleted, after which its secret is refused with a typed 401.
func TestVirtualKeyLifecycle(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	created := createKey(t, tollgate.KeyCreate{Name: "lifecycle", Models: []string{"fake/*"}, Metadata: map[string]any{"owner": "go-sdk"}})
	if !strings.HasPrefix(created.Key, "tg-") || !strings.HasPrefix(created.Key, strings.TrimSuffix(created.KeyPrefix, "...")) {
		t.Fatalf("secret %q does not start with tg- and its prefix %q", created.Key, created.KeyPrefix)
	}

	t.Run("the secret is shown only at creation", func(t *testing.T) {
		got, err := admin.Keys.Get(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "lifecycle" || got.Metadata["owner"] != "go-sdk" || len(got.Models) != 1 || got.Models[0] != "fake/*" {
			t.Fatalf("key read back differs: %+v", got)
		}
		if strings.Contains(string(got.RawJSON()), created.Key) || strings.Contains(string(got.RawJSON()), `"key"`) {
			t.Fatalf("GET shows the secret: %s", got.RawJSON())
		}
	})

	chat := keyClient(t, created.Key)
	var requestIDs []string

	t.Run("whole answer", func(t *testing.T) {
		word := marker()
		completion, err := chat.Chat.Create(ctx, tollgate.ChatCompletionRequest{
			Model:    "fake/echo-1",
			Messages: []tollgate.ChatMessage{tollgate.UserMessage("hello " + word)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := completion.FirstText(); got != "echo: hello "+word {
			t.Fatalf("answer %q", got)
		}
		if completion.RequestID == "" {
			t.Fatal("no x-request-id")
		}
		seen := upstream.requestsWith(word)
		if len(seen) != 1 || seen[0].Header.Get("Authorization") != "Bearer "+fakeUpstreamKey {
			t.Fatalf("the upstream saw %d requests, or not the provider key: %+v", len(seen), seen)
		}
		requestIDs = append(requestIDs, completion.RequestID)
	})

	t.Run("stream", func(t *testing.T) {
		word := marker()
		stream, err := chat.Chat.Stream(ctx, tollgate.ChatCompletionRequest{
			Model:         "fake/echo-1",
			Messages:      []tollgate.ChatMessage{tollgate.UserMessage("stream " + word + " please")},
			StreamOptions: &tollgate.StreamOptions{IncludeUsage: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		var text strings.Builder
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, choice := range chunk.Choices {
				text.WriteString(choice.Delta.Content)
			}
		}
		if text.String() != "echo: stream "+word+" please" {
			t.Fatalf("streamed text %q", text.String())
		}
		requestIDs = append(requestIDs, stream.RequestID())
	})

	t.Run("streamed tool call", func(t *testing.T) {
		stream, err := chat.Chat.Stream(ctx, tollgate.ChatCompletionRequest{
			Model:      "fake/echo-1",
			Messages:   []tollgate.ChatMessage{tollgate.UserMessage("Paris")},
			Tools:      []tollgate.Tool{weatherTool},
			ToolChoice: tollgate.ToolChoiceAuto(),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		for {
			if _, err := stream.Recv(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		answer := stream.Completion()
		calls := answer.Choices[0].Message.ToolCalls
		if answer.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_weather" {
			t.Fatalf("not one get_weather call: %+v", answer.Choices[0])
		}
		var arguments struct{ City, Unit string }
		if err := calls[0].Function.DecodeArguments(&arguments); err != nil {
			t.Fatal(err)
		}
		if arguments.City != "Paris" || arguments.Unit != "celsius" {
			t.Fatalf("arguments put together wrong: %q", calls[0].Function.Arguments)
		}
		requestIDs = append(requestIDs, stream.RequestID())
	})

	t.Run("the request log shows each request", func(t *testing.T) {
		if len(requestIDs) != 3 {
			t.Skip("an earlier step failed")
		}
		for i, id := range requestIDs {
			var entry *tollgate.RequestLogEntry
			eventually(t, 5*time.Second, func() (err error) {
				entry, err = admin.Logs.Get(ctx, id)
				return err
			})
			if entry.KeyID == nil || *entry.KeyID != created.ID || entry.Model != "fake/echo-1" || entry.Status != 200 {
				t.Fatalf("entry %s: key %v, model %s, status %d", id, entry.KeyID, entry.Model, entry.Status)
			}
			if entry.Stream != (i > 0) || entry.PromptTokens == 0 || entry.CompletionTokens == 0 || !entry.Priced || entry.CostUSD <= 0 {
				t.Fatalf("entry %s: stream %v, tokens %d/%d, priced %v, cost %v", id, entry.Stream, entry.PromptTokens, entry.CompletionTokens, entry.Priced, entry.CostUSD)
			}
		}
		// Filtered by key and paged one entry at a time: the three requests, newest first.
		var walked []string
		it := admin.Logs.Iterate(tollgate.LogFilter{KeyID: created.ID, Limit: 1})
		for it.Next(ctx) {
			walked = append(walked, it.Entry().ID)
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		want := []string{requestIDs[2], requestIDs[1], requestIDs[0]}
		if fmt.Sprint(walked) != fmt.Sprint(want) {
			t.Fatalf("paged log %v, want %v", walked, want)
		}
	})

	t.Run("usage groups the requests by key", func(t *testing.T) {
		eventually(t, 5*time.Second, func() error {
			report, err := admin.Usage.Get(ctx, tollgate.UsageQuery{GroupBy: tollgate.GroupByKey, Interval: tollgate.IntervalHour, From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute)})
			if err != nil {
				return err
			}
			if report.GroupBy != tollgate.GroupByKey || report.Interval != tollgate.IntervalHour {
				return fmt.Errorf("report is for %s/%s", report.GroupBy, report.Interval)
			}
			total, ok := report.Total(created.ID)
			if !ok || total.Requests != 3 {
				return fmt.Errorf("key %s totals %+v (found %v)", created.ID, total, ok)
			}
			if total.Errors != 0 || total.SpendUSD <= 0 || total.InputTokens == 0 || total.OutputTokens == 0 {
				return fmt.Errorf("key totals %+v", total)
			}
			return nil
		})
	})

	t.Run("a deleted key gets a typed 401", func(t *testing.T) {
		if err := admin.Keys.Delete(ctx, created.ID); err != nil {
			t.Fatal(err)
		}
		_, err := chat.Chat.Create(ctx, tollgate.ChatCompletionRequest{Model: "fake/echo-1", Messages: []tollgate.ChatMessage{tollgate.UserMessage("again")}})
		requireAPIError(t, err, 401, "invalid_request_error", "invalid_api_key")
		_, err = chat.Chat.Stream(ctx, tollgate.ChatCompletionRequest{Model: "fake/echo-1", Messages: []tollgate.ChatMessage{tollgate.UserMessage("again")}})
		requireAPIError(t, err, 401, "invalid_request_error", "invalid_api_key")
		_, err = admin.Keys.Get(ctx, created.ID)
		requireAPIError(t, err, 404, "invalid_request_error", "key_not_found")
	})
}
