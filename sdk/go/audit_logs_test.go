package tollgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

// The shipping tests' upstream, OpenAI-compatible, registered through the management API as a provider of
// each test's own. The last message's first word picks the answer: "hold <marker>" streams one chunk and
// finishes only when the test releases that marker (a request that arrives before others and ends after
// them); "should-retry" is a 409 saying x-should-retry: true; anything else is answered at once.
var (
	shipOnce   sync.Once
	shipServer *httptest.Server
	shipMu     sync.Mutex
	shipHeld   = map[string]chan struct{}{}
)

const shipUpstreamKey = "sk-ship-upstream-52e0"

// shipModel registers the upstream as provider `name` and returns a model to call; removed when the test ends.
func shipModel(t *testing.T, name string) string {
	t.Helper()
	shipOnce.Do(func() { shipServer = httptest.NewServer(http.HandlerFunc(serveShip)) })
	admin := adminClient(t)
	if _, _, err := admin.Providers.Put(testContext(t), name, tollgate.ProviderConfig{
		Type:    "openai",
		BaseURL: shipServer.URL + "/v1",
		Keys:    []tollgate.ProviderKeyConfig{{Value: shipUpstreamKey, Weight: 1}},
	}); err != nil {
		t.Fatalf("registering provider %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = admin.Providers.Delete(context.Background(), name) })
	return name + "/ship-1"
}

// holdUntilReleased makes the upstream hold a "hold <marker>" stream until the returned release is called
// (at the latest when the test ends).
func holdUntilReleased(t *testing.T, marker string) (release func()) {
	held := make(chan struct{})
	shipMu.Lock()
	shipHeld[marker] = held
	shipMu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	return release
}

func serveShip(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeOpenAIError(w, 400, "invalid_request_error", "invalid_json", "bad JSON")
		return
	}
	messages, _ := body["messages"].([]any)
	last, _ := messages[len(messages)-1].(map[string]any)
	words := strings.Fields(messageText(last["content"]) + " none none")
	model, _ := body["model"].(string)
	head := func(object string, choice map[string]any) map[string]any {
		return map[string]any{"id": "chatcmpl-ship", "object": object, "created": time.Now().Unix(), "model": model, "choices": []any{choice}}
	}
	switch words[0] {
	case "should-retry":
		w.Header().Set("x-should-retry", "true")
		writeOpenAIError(w, http.StatusConflict, "invalid_request_error", "conflict", "Another request holds this resource; try again.")
		return
	case "hold":
		shipMu.Lock()
		held := shipHeld[words[1]]
		shipMu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		send := func(choice map[string]any) {
			encoded, _ := json.Marshal(head("chat.completion.chunk", choice))
			fmt.Fprintf(w, "data: %s\n\n", encoded)
			w.(http.Flusher).Flush()
		}
		send(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "Held"}, "finish_reason": nil})
		select {
		case <-held:
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Second):
		}
		send(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"})
		fmt.Fprint(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
		return
	}
	message := map[string]any{"role": "assistant", "content": "Shipped", "refusal": nil}
	answer := head("chat.completion", map[string]any{"index": 0, "message": message, "finish_reason": "stop", "logprobs": nil})
	answer["usage"] = map[string]any{"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
	writeJSON(w, 200, answer)
}

func shipRequest(model, text string) tollgate.ChatCompletionRequest {
	return tollgate.ChatCompletionRequest{Model: model, Messages: []tollgate.ChatMessage{tollgate.UserMessage(text)}}
}

// logIDs lists the ids of entries, in their order.
func logIDs(entries []tollgate.RequestLogEntry) []string {
	ids := make([]string, 0, len(entries))
	for _, entry := range entries {
		ids = append(ids, entry.ID)
	}
	return ids
}

// shippedSoFar walks a key's records from the start of the log, as a new shipper does, and returns them
// and the cursor to go on from.
func shippedSoFar(t *testing.T, admin *tollgate.Client, keyID string) ([]tollgate.RequestLogEntry, int64) {
	t.Helper()
	var entries []tollgate.RequestLogEntry
	it := admin.Logs.IterateWrittenAfter(0, tollgate.LogFilter{KeyID: keyID, Limit: 500, AllowGaps: true})
	for it.Next(testContext(t)) {
		entries = append(entries, it.Entry())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if it.Cursor() <= 0 {
		t.Fatalf("the cursor after walking the log is %d", it.Cursor())
	}
	return entries, it.Cursor()
}

// A shipper's cursor takes the records written after it, oldest write first, whenever their requests
// arrived: a stream that arrived before another request and ended after it comes after that request,
// and a poll made while the stream was still open takes it the next time instead of missing it (as a
// `from=<last poll>` poll by arrival does).
func TestAuditLogsWrittenAfterOrder(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	model := shipModel(t, "ship-order")
	key := createKey(t, tollgate.KeyCreate{Name: "ship-order"})
	chat := keyClient(t, key.Key)
	filter := tollgate.LogFilter{KeyID: key.ID}

	earlier, err := chat.Chat.Create(ctx, shipRequest(model, "earlier "+marker()))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error {
		_, err := admin.Logs.Get(ctx, earlier.RequestID)
		return err
	})
	before, cursor := shippedSoFar(t, admin, key.ID)
	if fmt.Sprint(logIDs(before)) != fmt.Sprint([]string{earlier.RequestID}) || before[0].WriteSeq <= 0 || before[0].WriteSeq > cursor {
		t.Fatalf("from the start: %v (write_seq %v), cursor %d; want [%s]", logIDs(before), before, cursor, earlier.RequestID)
	}

	first, err := chat.Chat.Create(ctx, shipRequest(model, "first "+marker()))
	if err != nil {
		t.Fatal(err)
	}
	held := marker()
	release := holdUntilReleased(t, held)
	stream, err := chat.Chat.Stream(ctx, shipRequest(model, "hold "+held))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if chunk, err := stream.Recv(); err != nil || chunk.Choices[0].Delta.Content != "Held" {
		t.Fatalf("the held stream's first chunk: %+v, %v", chunk, err)
	}
	third, err := chat.Chat.Create(ctx, shipRequest(model, "third "+marker()))
	if err != nil {
		t.Fatal(err)
	}

	// While the stream is open: the two answered requests, in the order they were written.
	var poll *tollgate.WrittenLogPage
	eventually(t, 5*time.Second, func() (err error) {
		poll, err = admin.Logs.WrittenAfter(ctx, cursor, filter)
		if err != nil {
			return err
		}
		if got, want := fmt.Sprint(logIDs(poll.Data)), fmt.Sprint([]string{first.RequestID, third.RequestID}); got != want {
			return fmt.Errorf("written after %d: %s, want %s", cursor, got, want)
		}
		return nil
	})
	if poll.HasMore || poll.Data[0].WriteSeq <= cursor || poll.Data[1].WriteSeq <= poll.Data[0].WriteSeq || poll.NextWrittenAfter < poll.Data[1].WriteSeq {
		t.Fatalf("cursor %d gave write_seqs %d, %d, next %d, has_more %v", cursor, poll.Data[0].WriteSeq, poll.Data[1].WriteSeq, poll.NextWrittenAfter, poll.HasMore)
	}

	// The stream ends: its record is written after the poll's cursor, though it arrived before the third request.
	release()
	readAll(t, stream)
	var next *tollgate.WrittenLogPage
	eventually(t, 5*time.Second, func() (err error) {
		next, err = admin.Logs.WrittenAfter(ctx, poll.NextWrittenAfter, filter)
		if err != nil {
			return err
		}
		if len(next.Data) != 1 || next.Data[0].ID != stream.RequestID() {
			return fmt.Errorf("written after %d: %v, want [%s]", poll.NextWrittenAfter, logIDs(next.Data), stream.RequestID())
		}
		return nil
	})
	if !next.Data[0].Stream || next.Data[0].WriteSeq <= poll.NextWrittenAfter || next.HasMore {
		t.Fatalf("the stream's record: %s, has_more %v", next.Data[0].RawJSON(), next.HasMore)
	}
	// By arrival (List, newest first) the stream sits between the first and the third request.
	list, err := admin.Logs.List(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(logIDs(list.Data)), fmt.Sprint([]string{third.RequestID, stream.RequestID(), first.RequestID, earlier.RequestID}); got != want {
		t.Fatalf("List by arrival: %s, want %s", got, want)
	}
	// The whole walk from the start cursor, by the iterator: write order.
	var walked []string
	it := admin.Logs.IterateWrittenAfter(cursor, filter)
	for it.Next(ctx) {
		walked = append(walked, it.Entry().ID)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(walked), fmt.Sprint([]string{first.RequestID, third.RequestID, stream.RequestID()}); got != want {
		t.Fatalf("IterateWrittenAfter(%d): %s, want %s", cursor, got, want)
	}
	if it.Cursor() < next.Data[0].WriteSeq {
		t.Fatalf("the iterator's cursor %d is before the last record's write_seq %d", it.Cursor(), next.Data[0].WriteSeq)
	}
}

// Paging: Limit entries a page, HasMore while more were written, each page's cursor its last entry's write_seq;
// the iterator follows the pages and its Cursor resumes where a shipper stopped. A Limit above the gateway's 500
// is cut to 500, not refused.
func TestAuditLogsWrittenAfterPaging(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	model := shipModel(t, "ship-paging")
	key := createKey(t, tollgate.KeyCreate{Name: "ship-paging"})
	chat := keyClient(t, key.Key)
	none, cursor := shippedSoFar(t, admin, key.ID)
	if len(none) != 0 {
		t.Fatalf("a new key has records: %v", logIDs(none))
	}
	var ids []string
	for i := 0; i < 5; i++ {
		answer, err := chat.Chat.Create(ctx, shipRequest(model, fmt.Sprintf("paged %d %s", i, marker())))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, answer.RequestID)
	}
	eventually(t, 5*time.Second, func() error {
		page, err := admin.Logs.WrittenAfter(ctx, cursor, tollgate.LogFilter{KeyID: key.ID, Limit: 1000})
		if err != nil {
			return err
		}
		if fmt.Sprint(logIDs(page.Data)) != fmt.Sprint(ids) || page.HasMore {
			return fmt.Errorf("limit 1000: %v (has_more %v), want %v", logIDs(page.Data), page.HasMore, ids)
		}
		return nil
	})

	filter := tollgate.LogFilter{KeyID: key.ID, Limit: 2}
	var paged []string
	var sizes []int
	at := cursor
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page, err := admin.Logs.WrittenAfter(ctx, at, filter)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page.Data))
		paged = append(paged, logIDs(page.Data)...)
		if page.NextWrittenAfter <= at {
			t.Fatalf("page %d: cursor %d did not move past %d", pages, page.NextWrittenAfter, at)
		}
		if page.HasMore && page.NextWrittenAfter != page.Data[len(page.Data)-1].WriteSeq {
			t.Fatalf("page %d: next_written_after %d, its last entry's write_seq %d", pages, page.NextWrittenAfter, page.Data[len(page.Data)-1].WriteSeq)
		}
		at = page.NextWrittenAfter
		if !page.HasMore {
			break
		}
	}
	if fmt.Sprint(sizes) != "[2 2 1]" || fmt.Sprint(paged) != fmt.Sprint(ids) {
		t.Fatalf("pages of %v: %v, want [2 2 1] of %v", sizes, paged, ids)
	}
	empty, err := admin.Logs.WrittenAfter(ctx, at, filter)
	if err != nil || len(empty.Data) != 0 || empty.HasMore || empty.NextWrittenAfter < at {
		t.Fatalf("after the last page: %+v, %v", empty, err)
	}

	// The iterator stops after three entries; a new one from its Cursor ships the other two.
	it := admin.Logs.IterateWrittenAfter(cursor, filter)
	var walked []string
	for len(walked) < 3 && it.Next(ctx) {
		walked = append(walked, it.Entry().ID)
		if it.Cursor() != it.Entry().WriteSeq {
			t.Fatalf("mid-page cursor %d, the entry's write_seq %d", it.Cursor(), it.Entry().WriteSeq)
		}
	}
	resumed := admin.Logs.IterateWrittenAfter(it.Cursor(), filter)
	for resumed.Next(ctx) {
		walked = append(walked, resumed.Entry().ID)
	}
	if err := resumed.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(walked) != fmt.Sprint(ids) || resumed.Cursor() != at {
		t.Fatalf("stopped and resumed: %v, cursor %d; want %v, cursor %d", walked, resumed.Cursor(), ids, at)
	}
}

// What the gateway refuses with a cursor (the arrival range and its cursor, a cursor it never gave) and
// allow_gaps without one: an *APIError with the gateway's 400 invalid_query naming the parameter.
func TestAuditLogsWrittenAfterRefused(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	_, cursor := shippedSoFar(t, admin, "vk_no_such_key")
	for param, filter := range map[string]tollgate.LogFilter{
		"from":   {From: time.Now().Add(-time.Hour)},
		"to":     {To: time.Now()},
		"before": {Before: "000000000000000-000000"},
	} {
		_, err := admin.Logs.WrittenAfter(ctx, cursor, filter)
		if refused := requireAPIError(t, err, 400, "invalid_request_error", "invalid_query"); refused.Param != param {
			t.Fatalf("%s with written_after: param %q (%s)", param, refused.Param, refused.Message)
		}
		it := admin.Logs.IterateWrittenAfter(cursor, filter)
		if it.Next(ctx) {
			t.Fatalf("%s with written_after: the iterator gave an entry", param)
		}
		requireAPIError(t, it.Err(), 400, "invalid_request_error", "invalid_query")
	}
	_, err := admin.Logs.WrittenAfter(ctx, 1<<52, tollgate.LogFilter{})
	if refused := requireAPIError(t, err, 400, "invalid_request_error", "invalid_query"); refused.Param != "written_after" {
		t.Fatalf("a cursor past the log: param %q", refused.Param)
	}
	_, err = admin.Logs.List(ctx, tollgate.LogFilter{AllowGaps: true})
	if refused := requireAPIError(t, err, 400, "invalid_request_error", "invalid_query"); refused.Param != "allow_gaps" {
		t.Fatalf("allow_gaps without written_after: param %q", refused.Param)
	}
}

// APIError.ShouldRetry reads the x-should-retry the gateway sends: false on a spent budget, true passed on
// from an upstream that said so, and not said on an error without the header.
func TestAuditShouldRetry(t *testing.T) {
	ctx := testContext(t)
	spent := createKey(t, tollgate.KeyCreate{Name: "ship-spent", Budget: tollgate.Ptr(0.000001), BudgetPeriod: tollgate.BudgetDaily})
	_, err := keyClient(t, spent.Key).Chat.Create(ctx, hello())
	if retry, said := requireAPIError(t, err, 429, "insufficient_quota", "budget_exceeded").ShouldRetry(); retry || !said {
		t.Fatalf("spent budget: ShouldRetry() = %v, %v; want false, true", retry, said)
	}

	model := shipModel(t, "ship-retry")
	chat := keyClient(t, createKey(t, tollgate.KeyCreate{Name: "ship-retry"}).Key)
	_, err = chat.Chat.Create(ctx, shipRequest(model, "should-retry "+marker()))
	if retry, said := requireAPIError(t, err, 409, "invalid_request_error", "conflict").ShouldRetry(); !retry || !said {
		t.Fatalf("upstream's x-should-retry: true: ShouldRetry() = %v, %v; want true, true", retry, said)
	}

	anonymous, err := tollgate.NewClient(gateway.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = anonymous.Chat.Create(ctx, hello())
	refused := requireAPIError(t, err, 401, "invalid_request_error", "missing_api_key")
	if retry, said := refused.ShouldRetry(); retry || said || refused.Header.Get("x-should-retry") != "" {
		t.Fatalf("no header: ShouldRetry() = %v, %v (header %q)", retry, said, refused.Header.Get("x-should-retry"))
	}
	if retry, said := (&tollgate.APIError{Message: "inside a stream"}).ShouldRetry(); retry || said {
		t.Fatalf("no headers at all: ShouldRetry() = %v, %v", retry, said)
	}
}
