package tollgate

import (
	"encoding/json"
	"strings"
	"testing"
)

// Update bodies: nil leaves a field out, Null sends null, Value sends the value, and an empty list
// is sent (it means something: every model).
func TestUpdateBodies(t *testing.T) {
	body, err := json.Marshal(KeyUpdate{Budget: Null[float64](), RateLimit: Value(0), Models: &[]string{}, Team: Value("t1")})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(body); got != `{"budget":null,"rate_limit":0,"models":[],"team":"t1"}` {
		t.Fatalf("got %s", got)
	}
	if body, _ := json.Marshal(KeyUpdate{}); string(body) != "{}" {
		t.Fatalf("an empty update is %s", body)
	}
}

// Extra fields are appended after the modelled ones; one that a modelled field covers is refused
// rather than sent twice.
func TestExtraFields(t *testing.T) {
	request := ChatCompletionRequest{Model: "m", Messages: []ChatMessage{UserMessage("hi")}, Extra: Extra{"top_k": json.RawMessage("3"), "safe_prompt": json.RawMessage("true")}}
	body, err := json.Marshal(request)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(body); got != `{"model":"m","messages":[{"role":"user","content":"hi"}],"safe_prompt":true,"top_k":3}` {
		t.Fatalf("got %s", got)
	}
	request.Extra = Extra{"temperature": json.RawMessage("1")}
	request.Temperature = Ptr(0.5)
	if _, err := json.Marshal(request); err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Fatalf("a modelled field in Extra gave %v", err)
	}
	request.Extra = Extra{"bad": json.RawMessage("{")}
	if _, err := json.Marshal(request); err == nil {
		t.Fatal("invalid JSON in Extra was sent")
	}
}

// A message's content is a string, parts, or null (an assistant turn that only calls tools), both ways.
func TestMessageContentForms(t *testing.T) {
	call := ToolCall{ID: "c1", Type: "function", Function: FunctionCall{Name: "f", Arguments: "{}"}}
	body, _ := json.Marshal(ChatMessage{Role: RoleAssistant, ToolCalls: []ToolCall{call}})
	if !strings.Contains(string(body), `"content":null`) {
		t.Fatalf("tool-call turn encoded as %s", body)
	}
	var parts ChatMessage
	if err := json.Unmarshal([]byte(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"input_audio","input_audio":{"data":"AA=="}}]}`), &parts); err != nil {
		t.Fatal(err)
	}
	if parts.Text() != "a" || len(parts.Parts) != 2 || string(parts.Parts[1].Extra["input_audio"]) != `{"data":"AA=="}` {
		t.Fatalf("parts decoded as %+v", parts)
	}
	again, _ := json.Marshal(parts)
	if !strings.Contains(string(again), `"input_audio":{"data":"AA=="}`) {
		t.Fatalf("parts re-encoded as %s", again)
	}
}
