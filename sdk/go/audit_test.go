package tollgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

// The audit's scripted upstream: an OpenAI-compatible server whose answer is chosen by the first word of the
// last message (a script name), for wire shapes the shared fake does not send (logprobs, usage details, a
// 429 with retry-after-ms, vLLM's stop_reason in a stream, many parallel tool calls, a very long event). The
// tests register it through the management API as a provider of their own, so the shared one is untouched.
var (
	auditOnce   sync.Once
	auditServer *httptest.Server
)

const auditUpstreamKey = "sk-audit-upstream-7c21"

// auditModel registers the scripted upstream as provider `name` and returns the model to call; the
// provider is removed when the test ends.
func auditModel(t *testing.T, name string) string {
	t.Helper()
	auditOnce.Do(func() { auditServer = httptest.NewServer(http.HandlerFunc(serveAudit)) })
	admin := adminClient(t)
	if _, _, err := admin.Providers.Put(testContext(t), name, tollgate.ProviderConfig{
		Type:    "openai",
		BaseURL: auditServer.URL + "/v1",
		Keys:    []tollgate.ProviderKeyConfig{{Value: auditUpstreamKey, Weight: 1}},
	}); err != nil {
		t.Fatalf("registering provider %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = admin.Providers.Delete(context.Background(), name) })
	return name + "/scripted-1"
}

// auditLogprob is one token's logprob entry, as OpenAI writes it.
func auditLogprob(token string) map[string]any {
	return map[string]any{"token": token, "logprob": -0.25, "bytes": []byte(token), "top_logprobs": []any{}}
}

func serveAudit(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeOpenAIError(w, 400, "invalid_request_error", "invalid_json", "bad JSON")
		return
	}
	messages, _ := body["messages"].([]any)
	last, _ := messages[len(messages)-1].(map[string]any)
	script := strings.Fields(messageText(last["content"]) + " none")[0]
	model, _ := body["model"].(string)
	stream, _ := body["stream"].(bool)
	head := map[string]any{"id": "chatcmpl-audit", "created": time.Now().Unix(), "model": model}
	object := func(fields map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range head {
			out[k] = v
		}
		for k, v := range fields {
			out[k] = v
		}
		return out
	}
	usage := map[string]any{"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}
	switch script {
	case "slow-whole":
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
			return
		}
	case "custom-tool":
		// A call to the first custom tool offered, its input what the request's tool_choice was.
		tools, _ := body["tools"].([]any)
		first, _ := tools[0].(map[string]any)
		custom, _ := first["custom"].(map[string]any)
		choice, _ := json.Marshal(body["tool_choice"])
		call := map[string]any{"id": "call_custom1", "type": "custom", "custom": map[string]any{"name": custom["name"], "input": string(choice)}}
		message := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "tool_calls": []any{call}}
		writeJSON(w, 200, object(map[string]any{"object": "chat.completion", "choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": "tool_calls", "logprobs": nil}}, "usage": usage}))
		return
	case "usage-details":
		usage["prompt_tokens_details"] = map[string]any{"cached_tokens": 5, "cache_write_tokens": 7, "text_tokens": 20, "image_tokens": 3, "audio_tokens": 0}
		usage["completion_tokens_details"] = map[string]any{"reasoning_tokens": 4, "text_tokens": 6, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
	case "limited":
		w.Header().Set("retry-after-ms", "1500")
		w.Header().Set("x-should-retry", "false")
		writeOpenAIError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again in 1.5s.")
		return
	}
	if !stream {
		message := map[string]any{"role": "assistant", "content": "Hello", "refusal": nil}
		choice := map[string]any{"index": 0, "message": message, "finish_reason": "stop", "logprobs": nil}
		if script == "logprobs" {
			choice["logprobs"] = map[string]any{"content": []any{auditLogprob("Hel"), auditLogprob("lo")}, "refusal": nil}
		}
		if script == "stop-reason" {
			choice["stop_reason"] = "END"
		}
		writeJSON(w, 200, object(map[string]any{"object": "chat.completion", "choices": []any{choice}, "usage": usage}))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	flusher := w.(http.Flusher)
	send := func(choice map[string]any) {
		chunk := object(map[string]any{"object": "chat.completion.chunk", "choices": []any{choice}})
		encoded, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", encoded)
		flusher.Flush()
	}
	switch script {
	case "logprobs":
		send(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "logprobs": nil, "finish_reason": nil})
		for _, token := range []string{"Hel", "lo"} {
			send(map[string]any{"index": 0, "delta": map[string]any{"content": token}, "logprobs": map[string]any{"content": []any{auditLogprob(token)}, "refusal": nil}, "finish_reason": nil})
		}
		send(map[string]any{"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": "stop"})
	case "stop-reason":
		send(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "Hello"}, "logprobs": nil, "finish_reason": nil})
		send(map[string]any{"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": "stop", "stop_reason": "END"})
	case "parallel-tools":
		// Eight calls whose pieces interleave: ids and names first, then the arguments in turns.
		send(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": nil}, "finish_reason": nil})
		for i := 0; i < 8; i++ {
			send(map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d", i), "type": "function", "function": map[string]any{"name": "lookup", "arguments": ""}}}}, "finish_reason": nil})
		}
		for _, piece := range []string{`{"n":`, `%d,"s":"`, `x%d"}`} {
			for i := 0; i < 8; i++ {
				text := piece
				if strings.Contains(piece, "%d") {
					text = fmt.Sprintf(piece, i)
				}
				send(map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": text}}}}, "finish_reason": nil})
			}
		}
		send(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"})
	case "long-line":
		send(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": strings.Repeat("y", 3<<20)}, "finish_reason": nil})
		send(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"})
	case "reasoning":
		send(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "reasoning_content": "Think"}, "finish_reason": nil})
		send(map[string]any{"index": 0, "delta": map[string]any{"reasoning_content": "ing."}, "finish_reason": nil})
		send(map[string]any{"index": 0, "delta": map[string]any{"content": "Done"}, "finish_reason": nil})
		send(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"})
	default:
		send(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "Hello"}, "finish_reason": "stop"})
	}
	if options, _ := body["stream_options"].(map[string]any); options != nil && options["include_usage"] == true {
		encoded, _ := json.Marshal(object(map[string]any{"object": "chat.completion.chunk", "choices": []any{}, "usage": usage}))
		fmt.Fprintf(w, "data: %s\n\n", encoded)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	flusher.Flush()
}

func auditRequest(model, script string) tollgate.ChatCompletionRequest {
	return tollgate.ChatCompletionRequest{Model: model, Messages: []tollgate.ChatMessage{tollgate.UserMessage(script + " " + marker())}}
}

// tokensOf lists the tokens of a choice's logprobs.content.
func tokensOf(t *testing.T, logprobs json.RawMessage) []string {
	t.Helper()
	var decoded struct {
		Content []struct {
			Token string `json:"token"`
		} `json:"content"`
	}
	if err := json.Unmarshal(logprobs, &decoded); err != nil {
		t.Fatalf("logprobs %s: %v", logprobs, err)
	}
	var tokens []string
	for _, entry := range decoded.Content {
		tokens = append(tokens, entry.Token)
	}
	return tokens
}

// A stream's Completion is documented as the whole answer Create would give: its logprobs must hold every
// token's entry, not only the last chunk's.
func TestAuditStreamLogprobsAssembled(t *testing.T) {
	ctx := testContext(t)
	model := auditModel(t, "audit-logprobs")
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-logprobs"}).Key)
	request := auditRequest(model, "logprobs")
	request.Logprobs = tollgate.Ptr(true)
	whole, err := chat.Chat.Create(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	if got := tokensOf(t, whole.Choices[0].Logprobs); fmt.Sprint(got) != "[Hel lo]" {
		t.Fatalf("whole answer's logprobs tokens %v", got)
	}
	stream, err := chat.Chat.Stream(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	readAll(t, stream)
	assembled := stream.Completion()
	if got := tokensOf(t, assembled.Choices[0].Logprobs); fmt.Sprint(got) != "[Hel lo]" {
		t.Fatalf("assembled logprobs tokens %v (%s), want [Hel lo] as the whole answer has", got, assembled.Choices[0].Logprobs)
	}
	var shape map[string]json.RawMessage
	if err := json.Unmarshal(assembled.Choices[0].Logprobs, &shape); err != nil || string(shape["refusal"]) != "null" {
		t.Fatalf("assembled logprobs %s", assembled.Choices[0].Logprobs)
	}
}

// A choice's own fields beyond the modelled ones (vLLM's stop_reason) reach Choice.Extra from Create, and
// must reach the assembled Completion of a stream too.
func TestAuditStreamChoiceExtraAssembled(t *testing.T) {
	ctx := testContext(t)
	model := auditModel(t, "audit-stop")
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-stop"}).Key)
	whole, err := chat.Chat.Create(ctx, auditRequest(model, "stop-reason"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(whole.Choices[0].Extra["stop_reason"]); got != `"END"` {
		t.Fatalf("whole answer's stop_reason %q", got)
	}
	stream, err := chat.Chat.Stream(ctx, auditRequest(model, "stop-reason"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	readAll(t, stream)
	if got := string(stream.Completion().Choices[0].Extra["stop_reason"]); got != `"END"` {
		t.Fatalf("assembled stop_reason %q, want \"END\" as Create gives", got)
	}
}

// Usage details OpenAI's schema has (prompt_tokens_details.text_tokens, image_tokens, cache_write_tokens;
// completion_tokens_details.text_tokens) and tollgate sends (cache_write_tokens for Anthropic's cache writes)
// are decoded, whole and streamed.
func TestAuditUsageDetails(t *testing.T) {
	ctx := testContext(t)
	model := auditModel(t, "audit-usage")
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-usage"}).Key)
	check := func(where string, usage *tollgate.Usage) {
		t.Helper()
		if usage == nil || usage.PromptTokensDetails == nil || usage.CompletionTokensDetails == nil {
			t.Fatalf("%s: usage %+v", where, usage)
		}
		prompt, completion := *usage.PromptTokensDetails, *usage.CompletionTokensDetails
		if prompt.CachedTokens != 5 || prompt.CacheWriteTokens != 7 || prompt.TextTokens != 20 || prompt.ImageTokens != 3 {
			t.Fatalf("%s: prompt_tokens_details %+v", where, prompt)
		}
		if completion.ReasoningTokens != 4 || completion.TextTokens != 6 {
			t.Fatalf("%s: completion_tokens_details %+v", where, completion)
		}
	}
	whole, err := chat.Chat.Create(ctx, auditRequest(model, "usage-details"))
	if err != nil {
		t.Fatal(err)
	}
	check("whole", whole.Usage)
	request := auditRequest(model, "usage-details")
	request.StreamOptions = &tollgate.StreamOptions{IncludeUsage: true}
	stream, err := chat.Chat.Stream(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	readAll(t, stream)
	check("streamed", stream.Completion().Usage)
	// What was decoded encodes back as it came.
	encoded, _ := json.Marshal(whole.Usage)
	if !strings.Contains(string(encoded), `"cache_write_tokens":7`) || !strings.Contains(string(encoded), `"text_tokens":6`) {
		t.Fatalf("usage re-encoded as %s", encoded)
	}
}

// An upstream 429 that tells its wait only as OpenAI's retry-after-ms (passed on by tollgate) gives
// APIError.RetryAfter that wait.
func TestAuditRetryAfterMS(t *testing.T) {
	ctx := testContext(t)
	model := auditModel(t, "audit-limited")
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-limited"}).Key)
	_, err := chat.Chat.Create(ctx, auditRequest(model, "limited"))
	var apiErr *tollgate.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Fatalf("want a 429 *APIError, got %v", err)
	}
	if apiErr.Header.Get("retry-after-ms") != "1500" {
		t.Fatalf("the gateway did not pass retry-after-ms on: %v", apiErr.Header)
	}
	if apiErr.Header.Get("retry-after") == "" && apiErr.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("RetryAfter %s, want 1.5s from retry-after-ms", apiErr.RetryAfter)
	}
}

// The client holds the admin key, the virtual key and headers such as a provider key brought along;
// printing it (%v, %+v, %#v, %s), as a log line or a panic does, must show none of them.
func TestAuditClientDoesNotPrintSecrets(t *testing.T) {
	const providerKey = "sk-brought-provider-key-9d8e"
	const virtualKey = "tg-virtual-key-secret-4b1a"
	client, err := tollgate.NewClient(gateway.URL, tollgate.WithAdminKey(testAdminKey), tollgate.WithAPIKey(virtualKey),
		tollgate.WithHeader("x-tollgate-provider-key", providerKey))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, value := range []any{client, *client} {
			printed := fmt.Sprintf(format, value)
			for _, secret := range []string{testAdminKey, virtualKey, providerKey} {
				if strings.Contains(printed, secret) {
					t.Errorf("fmt %s of %T shows %q: %s", format, value, secret, printed)
				}
			}
		}
	}
	if !strings.Contains(fmt.Sprint(client), gateway.URL) {
		t.Errorf("the printed client does not name its gateway: %v", client)
	}
	// A refused virtual key is not repeated in the error.
	refusedKey := "tg-not-a-real-key-" + marker()
	_, err = keyClient(t, refusedKey).Chat.Create(testContext(t), hello())
	if err == nil || strings.Contains(err.Error(), refusedKey) || strings.Contains(fmt.Sprintf("%+v", err), refusedKey) {
		t.Fatalf("error %v", err)
	}
}

// Many tool calls streamed in parallel, their pieces interleaved, come together by index.
func TestAuditParallelToolCalls(t *testing.T) {
	ctx := testContext(t)
	model := auditModel(t, "audit-tools")
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-tools"}).Key)
	stream, err := chat.Chat.Stream(ctx, auditRequest(model, "parallel-tools"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	readAll(t, stream)
	answer := stream.Completion()
	calls := answer.Choices[0].Message.ToolCalls
	if len(calls) != 8 || answer.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("%d calls, finish %s", len(calls), answer.Choices[0].FinishReason)
	}
	for i, call := range calls {
		var arguments struct {
			N int
			S string
		}
		if err := call.Function.DecodeArguments(&arguments); err != nil || call.ID != fmt.Sprintf("call_%d", i) || arguments.N != i || arguments.S != fmt.Sprintf("x%d", i) {
			t.Fatalf("call %d: %+v (%v)", i, call, err)
		}
	}
}

// A 3 MiB event and reasoning_content pieces: both reach the caller whole.
func TestAuditLongEventAndReasoning(t *testing.T) {
	ctx := testContext(t)
	model := auditModel(t, "audit-long")
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-long"}).Key)
	stream, err := chat.Chat.Stream(ctx, auditRequest(model, "long-line"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	readAll(t, stream)
	if got := len(stream.Completion().FirstText()); got != 3<<20 {
		t.Fatalf("long content %d bytes", got)
	}
	reasoning, err := chat.Chat.Stream(ctx, auditRequest(model, "reasoning"))
	if err != nil {
		t.Fatal(err)
	}
	defer reasoning.Close()
	readAll(t, reasoning)
	message := reasoning.Completion().Choices[0].Message
	if message.Content != "Done" || string(message.Extra["reasoning_content"]) != `"Thinking."` {
		t.Fatalf("message %q, reasoning %s", message.Content, message.Extra["reasoning_content"])
	}
}

// Closing a stream before its end (no context cancelled) drops the connection: the gateway logs the
// request as abandoned by its client, and no goroutine of the client outlives it.
func TestAuditStreamCloseEndsTheRequest(t *testing.T) {
	ctx := testContext(t)
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-close"}).Key)
	before := runtime.NumGoroutine()
	stream, err := chat.Chat.Stream(ctx, tollgate.ChatCompletionRequest{
		Model:    "fake/echo-1",
		Messages: []tollgate.ChatMessage{tollgate.UserMessage(slowStreamPrefix + " a b c d e f g h i j k l m n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := stream.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("Recv after Close gave %v", err)
	}
	admin := adminClient(t)
	eventually(t, 5*time.Second, func() error {
		entry, err := admin.Logs.Get(ctx, stream.RequestID())
		if err != nil {
			return err
		}
		if !entry.Cancelled || entry.Status != 499 {
			return fmt.Errorf("entry status %d cancelled %v", entry.Status, entry.Cancelled)
		}
		return nil
	})
	http.DefaultClient.CloseIdleConnections()
	eventually(t, 5*time.Second, func() error {
		if now := runtime.NumGoroutine(); now > before {
			return fmt.Errorf("%d goroutines, %d before", now, before)
		}
		return nil
	})
}

// More groups than an answer of GET /api/usage holds (1,000 by default; fewer by hour, within 50,000 rows):
// the answer says it is truncated and sums the rest in `others`, and every group can be read by paging in
// name order (order=group, limit, after=next_after), as a chargeback script needs.
func TestAuditUsageBeyondOneAnswer(t *testing.T) {
	ctx := testContext(t)
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-usage-groups"}).Key)
	prefix := "audit-g" + strings.TrimPrefix(marker(), "marker") + "-"
	const models = 1001
	work := make(chan int)
	failures := make(chan error, models)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				_, err := chat.Chat.Create(ctx, tollgate.ChatCompletionRequest{Model: fmt.Sprintf("fake/%s%04d", prefix, i), Messages: []tollgate.ChatMessage{tollgate.UserMessage("hi")}})
				if err != nil {
					failures <- err
				}
			}
		}()
	}
	for i := 0; i < models; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Fatal(err)
	}
	admin := adminClient(t)
	query := tollgate.UsageQuery{GroupBy: tollgate.GroupByModel, Interval: tollgate.IntervalDay, From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute)}
	counted := func(totals []tollgate.UsageTotal, seen map[string]bool) {
		for _, total := range totals {
			if strings.HasPrefix(total.Group, "fake/"+prefix) {
				seen[total.Group] = true
			}
		}
	}
	eventually(t, 10*time.Second, func() error {
		report, err := admin.Usage.Get(ctx, query)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		counted(report.Totals, seen)
		if len(seen) == models {
			return fmt.Errorf("all %d groups in one answer: the test needs more than it holds", models)
		}
		if !report.Truncated || report.Groups < models || report.Others == nil || report.Others.Totals.Requests < int64(models-len(seen)) {
			return fmt.Errorf("top %d groups of %d (truncated %v, others %+v)", len(report.Totals), report.Groups, report.Truncated, report.Others)
		}
		return nil
	})
	seen := map[string]bool{}
	query.Order, query.Limit = tollgate.UsageOrderGroup, 400
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		page, err := admin.Usage.Get(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Totals) > 400 {
			t.Fatalf("a page of %d groups with limit 400", len(page.Totals))
		}
		counted(page.Totals, seen)
		if page.NextAfter == "" {
			break
		}
		query.After = page.NextAfter
	}
	if len(seen) != models {
		t.Fatalf("paging by group found %d of the %d groups", len(seen), models)
	}
}

// A proxy in front of the gateway that answers an error page of its own (HTML, not the gateway's JSON) gives
// an *APIError with the status and retry-after, the page whole in Body, and a message that names the page
// (its title) instead of carrying the whole page into every log line that prints the error.
func TestAuditProxyErrorPage(t *testing.T) {
	page := "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title><style>" + strings.Repeat("body{margin:0}", 5000) +
		"</style></head><body><h1>Bad Gateway</h1><p>The proxy could not reach the server.</p></body></html>"
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, page)
	}))
	defer proxy.Close()
	client, err := tollgate.NewClient(proxy.URL, tollgate.WithAPIKey("tg-behind-a-proxy"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Chat.Create(testContext(t), hello())
	var apiErr *tollgate.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.RetryAfter != 7*time.Second || string(apiErr.Body) != page {
		t.Fatalf("want a 502 *APIError with the page in Body, got %T %.200v", err, err)
	}
	if len(err.Error()) > 300 || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Fatalf("the error's text is %d bytes: %.300s", len(err.Error()), err.Error())
	}
	_, err = client.Chat.Stream(testContext(t), hello())
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || len(err.Error()) > 300 {
		t.Fatalf("stream: %T %.300v", err, err)
	}
}

// Request fields OpenAI's chat API takes in shapes the SDK's types do not model (a custom tool, a tool_choice
// of allowed_tools) go through Extra when the modelled field is left unset; the custom tool call that comes
// back keeps its name and input, and is written back (replaying the conversation) without an empty function.
func testAuditExtraForUnmodelledShapesOFF(t *testing.T) {
	ctx := testContext(t)
	model := auditModel(t, "audit-custom")
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-custom"}).Key)
	request := auditRequest(model, "custom-tool")
	request.Extra = tollgate.Extra{
		"tools":       json.RawMessage(`[{"type": "custom", "custom": {"name": "run_sql", "description": "Runs one SQL query."}}]`),
		"tool_choice": json.RawMessage(`{"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [{"type": "custom", "custom": {"name": "run_sql"}}]}}`),
	}
	answer, err := chat.Chat.Create(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	calls := answer.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Type != "custom" || calls[0].Custom == nil || calls[0].Custom.Name != "run_sql" || !strings.Contains(calls[0].Custom.Input, `"allowed_tools"`) {
		t.Fatalf("custom call %+v", calls)
	}
	replayed, err := json.Marshal(answer.Choices[0].Message)
	if err != nil || strings.Contains(string(replayed), `"function"`) || !strings.Contains(string(replayed), `"custom":{"name":"run_sql"`) {
		t.Fatalf("the call written back as %s (%v)", replayed, err)
	}
	// A field set both ways is still refused, never sent twice.
	request.ToolChoice = tollgate.ToolChoiceAuto()
	if _, err := chat.Chat.Create(ctx, request); err == nil || !strings.Contains(err.Error(), "tool_choice") {
		t.Fatalf("tool_choice set in both places gave %v", err)
	}
}

// patchConfig sends a JSON merge patch to PATCH /api/config (the SDK has no config API).
func patchConfig(t *testing.T, patch string) {
	t.Helper()
	request, err := http.NewRequestWithContext(testContext(t), http.MethodPatch, gateway.URL+"/api/config", strings.NewReader(patch))
	if err != nil {
		t.Fatal(err)
	}
	request.Header.Set("Authorization", "Bearer "+testAdminKey)
	request.Header.Set("Content-Type", "application/json")
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(response.Body)
		t.Fatalf("PATCH /api/config %s: %d %s", patch, response.StatusCode, body)
	}
}

// The gateway's keep-alive comments (": keep-alive") between the chunks of a slow stream are skipped: the
// text arrives whole and the stream ends cleanly.
func TestAuditKeepAliveComments(t *testing.T) {
	patchConfig(t, `{"settings": {"stream_keepalive_ms": 20}}`)
	t.Cleanup(func() { patchConfig(t, `{"settings": {"stream_keepalive_ms": null}}`) })
	key := createKey(t, tollgate.KeyCreate{Name: "audit-keepalive"}).Key
	// The gateway does send them on this stream (read raw).
	raw, _ := json.Marshal(map[string]any{"model": "fake/echo-1", "stream": true, "messages": []any{map[string]any{"role": "user", "content": slowStreamPrefix + " one two three"}}})
	request, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, gateway.URL+"/v1/chat/completions", strings.NewReader(string(raw)))
	request.Header.Set("Authorization", "Bearer "+key)
	request.Header.Set("Content-Type", "application/json")
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(response.Body)
	response.Body.Close()
	if !strings.Contains(string(body), "\n: keep-alive\n\n") {
		t.Fatalf("no keep-alive in the raw stream: %s", body)
	}
	chat := keyClient(t, key)
	stream, err := chat.Chat.Stream(testContext(t), tollgate.ChatCompletionRequest{
		Model:    "fake/echo-1",
		Messages: []tollgate.ChatMessage{tollgate.UserMessage(slowStreamPrefix + " one two three")},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	readAll(t, stream)
	if got := stream.Completion().FirstText(); got != "echo: "+slowStreamPrefix+" one two three" {
		t.Fatalf("text %q", got)
	}
}

// Provider settings the management API takes (auth instead of a key, azure-ai's extra_parameters, bedrock's
// claude_models) can be sent by Providers.Put and are read back.
func TestAuditProviderSettings(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	t.Cleanup(func() {
		_, _ = admin.Providers.Delete(context.Background(), "audit-azure-ai")
		_, _ = admin.Providers.Delete(context.Background(), "audit-bedrock")
	})
	azure, _, err := admin.Providers.Put(ctx, "audit-azure-ai", tollgate.ProviderConfig{
		Type: "azure-ai", BaseURL: "https://audit.services.ai.azure.com/models", APIKey: "azure-ai-key-0001", ExtraParameters: "pass-through",
	})
	if err != nil {
		t.Fatal(err)
	}
	arn := "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123"
	bedrock, _, err := admin.Providers.Put(ctx, "audit-bedrock", tollgate.ProviderConfig{
		Type: "bedrock", Region: "us-east-1", Auth: json.RawMessage(`{"type": "aws"}`), ClaudeModels: []string{arn},
	})
	if err != nil {
		t.Fatal(err)
	}
	if azure.ExtraParameters != "pass-through" || len(bedrock.ClaudeModels) != 1 || bedrock.ClaudeModels[0] != arn || !strings.Contains(string(bedrock.Auth), `"aws"`) {
		t.Fatalf("read back: azure-ai %s, bedrock %s", azure.RawJSON(), bedrock.RawJSON())
	}
}

// A whole answer whose context times out: Create returns the context's error at once, the connection is
// dropped (the gateway logs the request as abandoned by its client) and no goroutine of the client stays.
func TestAuditCreateTimeout(t *testing.T) {
	model := auditModel(t, "audit-slow")
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "audit-slow"}).Key)
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := chat.Chat.Create(ctx, auditRequest(model, "slow-whole"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(started) > 2*time.Second {
		t.Fatalf("Create gave %v after %s", err, time.Since(started))
	}
	admin := adminClient(t)
	eventually(t, 5*time.Second, func() error {
		page, err := admin.Logs.List(testContext(t), tollgate.LogFilter{Provider: "audit-slow", Limit: 1})
		if err != nil {
			return err
		}
		if len(page.Data) != 1 || !page.Data[0].Cancelled || page.Data[0].Status != 499 {
			return fmt.Errorf("log %+v", page.Data)
		}
		return nil
	})
	http.DefaultClient.CloseIdleConnections()
	eventually(t, 5*time.Second, func() error {
		if now := runtime.NumGoroutine(); now > before {
			return fmt.Errorf("%d goroutines, %d before", now, before)
		}
		return nil
	})
}

// A key's last use, which the management API shows, is decoded.
func TestAuditKeyLastUsed(t *testing.T) {
	ctx := testContext(t)
	key := createKey(t, tollgate.KeyCreate{Name: "audit-last-used"})
	if key.LastUsedAt != nil {
		t.Fatalf("a new key was last used at %v", key.LastUsedAt)
	}
	if _, err := keyClient(t, key.Key).Chat.Create(ctx, hello()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error {
		got, err := adminClient(t).Keys.Get(ctx, key.ID)
		if err != nil {
			return err
		}
		if got.LastUsedAt == nil || time.Since(*got.LastUsedAt) > 2*time.Minute {
			return fmt.Errorf("last used at %v (%s)", got.LastUsedAt, got.RawJSON())
		}
		return nil
	})
}

// A proxy in front that drops the connection mid-stream (no error event, no [DONE]): Recv gives the chunks
// that came, then an error wrapping io.ErrUnexpectedEOF, never io.EOF.
func TestAuditStreamCutByAProxy(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"par"},"finish_reason":null}]}`+"\n\n: keep-alive\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer proxy.Close()
	client, err := tollgate.NewClient(proxy.URL, tollgate.WithAPIKey("tg-behind-a-proxy"))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.Chat.Stream(testContext(t), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	chunk, err := stream.Recv()
	if err != nil || chunk.Choices[0].Delta.Content != "par" {
		t.Fatalf("first chunk %+v, %v", chunk, err)
	}
	_, err = stream.Recv()
	if errors.Is(err, io.EOF) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after the cut Recv gave %v", err)
	}
	if stream.Completion().FirstText() != "par" {
		t.Fatalf("what came before the cut: %q", stream.Completion().FirstText())
	}
}
