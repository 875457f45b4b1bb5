package tollgate_test

import (
	"testing"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

func hello() tollgate.ChatCompletionRequest {
	return tollgate.ChatCompletionRequest{Model: "fake/echo-1", Messages: []tollgate.ChatMessage{tollgate.UserMessage("hello")}}
}

// A budget too small for the request's reserved cost is a 429 insufficient_quota/budget_exceeded,
// with retry-after until the daily period resets, for whole answers and streams alike.
func TestBudgetExceededIsTyped(t *testing.T) {
	ctx := testContext(t)
	key := createKey(t, tollgate.KeyCreate{Name: "tiny-budget", Budget: tollgate.Ptr(0.000001), BudgetPeriod: tollgate.BudgetDaily})
	chat := keyClient(t, key.Key)
	_, err := chat.Chat.Create(ctx, hello())
	refused := requireAPIError(t, err, 429, "insufficient_quota", "budget_exceeded")
	if refused.RetryAfter <= 0 || refused.RequestID == "" {
		t.Fatalf("retry-after %s, request id %q", refused.RetryAfter, refused.RequestID)
	}
	_, err = chat.Chat.Stream(ctx, hello())
	requireAPIError(t, err, 429, "insufficient_quota", "budget_exceeded")
}

// Past the key's requests per minute: 429 rate_limit_exceeded of type "requests", with the limit
// headers and retry-after.
func TestRateLimitIsTyped(t *testing.T) {
	ctx := testContext(t)
	key := createKey(t, tollgate.KeyCreate{Name: "one-per-minute", RateLimit: tollgate.Ptr(1)})
	chat := keyClient(t, key.Key)
	if _, err := chat.Chat.Create(ctx, hello()); err != nil {
		t.Fatal(err)
	}
	_, err := chat.Chat.Create(ctx, hello())
	limited := requireAPIError(t, err, 429, "requests", "rate_limit_exceeded")
	if limited.RetryAfter <= 0 || limited.Header.Get("x-ratelimit-limit-requests") != "1" || limited.Header.Get("x-ratelimit-remaining-requests") != "0" {
		t.Fatalf("retry-after %s, headers %v", limited.RetryAfter, limited.Header)
	}
}

// Who may call: no virtual key (the gateway requires one), a model outside the key's list.
func TestAccessErrorsAreTyped(t *testing.T) {
	ctx := testContext(t)
	anonymous, err := tollgate.NewClient(gateway.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = anonymous.Chat.Create(ctx, hello())
	requireAPIError(t, err, 401, "invalid_request_error", "missing_api_key")

	narrow := createKey(t, tollgate.KeyCreate{Name: "narrow", Models: []string{"fake/other-model"}})
	_, err = keyClient(t, narrow.Key).Chat.Create(ctx, hello())
	requireAPIError(t, err, 403, "permission_error", "model_not_allowed")

	wide := createKey(t, tollgate.KeyCreate{Name: "wide"})
	unknown := hello()
	unknown.Model = "nosuchprovider/x"
	_, err = keyClient(t, wide.Key).Chat.Create(ctx, unknown)
	requireAPIError(t, err, 404, "invalid_request_error", "provider_not_found")
}

// The management API: a wrong or missing admin key, a body the gateway refuses (naming the field),
// an id that does not exist.
func TestAdminErrorsAreTyped(t *testing.T) {
	ctx := testContext(t)
	for _, key := range []string{"wrong-admin-key", ""} {
		client, err := tollgate.NewClient(gateway.URL, tollgate.WithAdminKey(key))
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.Keys.List(ctx)
		refused := requireAPIError(t, err, 401, "authentication_error", "invalid_admin_key")
		if refused.Header.Get("www-authenticate") == "" {
			t.Fatal("no www-authenticate on the admin 401")
		}
	}

	admin := adminClient(t)
	_, err := admin.Keys.Create(ctx, tollgate.KeyCreate{Name: "bad-models", Models: []string{"not a model"}})
	invalid := requireAPIError(t, err, 400, "invalid_request_error", "invalid_value")
	if invalid.Param != "models.0" {
		t.Fatalf("param %q, want models.0", invalid.Param)
	}
	_, err = admin.Keys.Create(ctx, tollgate.KeyCreate{Name: "bad-rate", RateLimit: tollgate.Ptr(-1)})
	if requireAPIError(t, err, 400, "invalid_request_error", "invalid_value").Param != "rate_limit" {
		t.Fatalf("param for rate_limit: %v", err)
	}
	_, err = admin.Teams.Get(ctx, "no-such-team")
	requireAPIError(t, err, 404, "invalid_request_error", "team_not_found")
	_, err = admin.Logs.Get(ctx, "no-such-request")
	requireAPIError(t, err, 404, "invalid_request_error", "request_not_found")
	_, err = admin.Usage.Get(ctx, tollgate.UsageQuery{GroupBy: "colour"})
	if requireAPIError(t, err, 400, "invalid_request_error", "invalid_query").Param != "group_by" {
		t.Fatalf("param for group_by: %v", err)
	}
}

// A base URL that is not an http(s) URL is refused when the client is made, not at the first call.
func TestNewClientChecksTheBaseURL(t *testing.T) {
	for _, bad := range []string{"localhost:8080", "ftp://host", "http://", ""} {
		if _, err := tollgate.NewClient(bad); err == nil {
			t.Errorf("NewClient(%q) accepted", bad)
		}
	}
	for _, good := range []string{"http://host:8080", "http://host:8080/", "https://host/v1", "http://host/v1/"} {
		client, err := tollgate.NewClient(good)
		if err != nil {
			t.Fatalf("NewClient(%q): %v", good, err)
		}
		if got := client.BaseURL(); got != "http://host:8080" && got != "https://host" && got != "http://host" {
			t.Errorf("NewClient(%q).BaseURL() = %q", good, got)
		}
	}
}
