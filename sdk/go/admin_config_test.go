package tollgate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

// Providers: the config file's provider as the API shows it (key masked), and one added through the
// API that serves requests at once, with keys added, disabled and removed, then deleted.
func TestProviders(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)

	fromFile, err := admin.Providers.Get(ctx, "fake")
	if err != nil {
		t.Fatal(err)
	}
	if fromFile.Source != "file" || fromFile.Type != "openai" || fromFile.BaseURL != upstream.server.URL+"/v1" || len(fromFile.Keys) != 1 {
		t.Fatalf("file provider %+v", fromFile)
	}
	masked := fromFile.Keys[0].Value
	if strings.Contains(masked, fakeUpstreamKey) || !strings.HasSuffix(masked, fakeUpstreamKey[len(fakeUpstreamKey)-4:]) {
		t.Fatalf("provider key shown as %q", masked)
	}
	if price, ok := fromFile.Prices["echo-1"]; !ok || price.OutputPerMTok != 2 {
		t.Fatalf("prices %+v", fromFile.Prices)
	}
	_, err = admin.Providers.Delete(ctx, "fake")
	requireAPIError(t, err, 409, "invalid_request_error", "conflict")

	lab, created, err := admin.Providers.Put(ctx, "go-sdk-lab", tollgate.ProviderConfig{
		Type:    "openai",
		BaseURL: upstream.server.URL + "/v1",
		Keys:    []tollgate.ProviderKeyConfig{{ID: "primary", Value: fakeUpstreamKey, Weight: 1}},
		Models:  []string{"echo-2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !created || lab.Source != "api" || len(lab.Keys) != 1 || lab.Keys[0].ID != "primary" {
		t.Fatalf("put gave created=%v %+v", created, lab)
	}
	t.Cleanup(func() { _, _ = admin.Providers.Delete(ctx, "go-sdk-lab") })
	providers, err := admin.Providers.List(ctx)
	if err != nil || !hasProvider(providers, "go-sdk-lab") || !hasProvider(providers, "fake") {
		t.Fatalf("List %d providers (%v)", len(providers), err)
	}

	key := createKey(t, tollgate.KeyCreate{Name: "lab-user"})
	word := marker()
	answer, err := keyClient(t, key.Key).Chat.Create(ctx, tollgate.ChatCompletionRequest{
		Model: "go-sdk-lab/echo-2", Messages: []tollgate.ChatMessage{tollgate.UserMessage(word)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if answer.FirstText() != "echo: "+word || upstream.requestsWith(word)[0].Body["model"] != "echo-2" {
		t.Fatalf("the API's provider did not serve: %q", answer.FirstText())
	}

	spare, err := admin.Providers.AddKey(ctx, "go-sdk-lab", tollgate.ProviderKeyConfig{ID: "spare", Value: "sk-spare-key-0000", Weight: 2})
	if err != nil {
		t.Fatal(err)
	}
	if spare.Value != "****0000" || spare.Weight != 2 {
		t.Fatalf("added key shown as %+v", spare)
	}
	disabled, err := admin.Providers.UpdateKey(ctx, "go-sdk-lab", "spare", tollgate.ProviderKeyUpdate{Disabled: tollgate.Ptr(true)})
	if err != nil || !disabled.Disabled {
		t.Fatalf("disable: %+v (%v)", disabled, err)
	}
	keys, err := admin.Providers.ListKeys(ctx, "go-sdk-lab")
	if err != nil || len(keys) != 2 {
		t.Fatalf("ListKeys %+v (%v)", keys, err)
	}
	if got, err := admin.Providers.GetKey(ctx, "go-sdk-lab", "spare"); err != nil || !got.Disabled {
		t.Fatalf("GetKey %+v (%v)", got, err)
	}
	if err := admin.Providers.DeleteKey(ctx, "go-sdk-lab", "spare"); err != nil {
		t.Fatal(err)
	}
	_, err = admin.Providers.GetKey(ctx, "go-sdk-lab", "spare")
	requireAPIError(t, err, 404, "invalid_request_error", "key_not_found")

	remaining, err := admin.Providers.Delete(ctx, "go-sdk-lab")
	if err != nil || remaining != nil {
		t.Fatalf("delete left %+v (%v)", remaining, err)
	}
	_, err = admin.Providers.Get(ctx, "go-sdk-lab")
	requireAPIError(t, err, 404, "invalid_request_error", "provider_not_found")
}

func hasProvider(providers []tollgate.Provider, name string) bool {
	for _, provider := range providers {
		if provider.Name == name {
			return true
		}
	}
	return false
}

// Routes: one whose name holds a "/" is created, serves requests under its name (the answer and the
// log say so), shows live health, and is deleted.
func TestRoutes(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	name := "go-sdk/" + marker()
	route, created, err := admin.Routes.Put(ctx, name, tollgate.RouteConfig{
		Targets: []tollgate.RouteTarget{{Model: "fake/echo-1", Weight: 2}},
		Retry:   &tollgate.RouteRetry{MaxAttempts: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Routes.Delete(ctx, name) })
	if !created || route.Name != name || route.Source != "api" || len(route.Targets) != 1 || route.Targets[0].Weight != 2 {
		t.Fatalf("put gave created=%v %+v", created, route)
	}
	again, created, err := admin.Routes.Put(ctx, name, tollgate.RouteConfig{Targets: []tollgate.RouteTarget{{Model: "fake/echo-1"}}, Fallbacks: []string{"fake/echo-1"}})
	if err != nil || created || len(again.Fallbacks) != 1 {
		t.Fatalf("second put: created=%v %+v (%v)", created, again, err)
	}
	if got, err := admin.Routes.Get(ctx, name); err != nil || got.Targets[0].Model != "fake/echo-1" {
		t.Fatalf("Get %+v (%v)", got, err)
	}
	routes, err := admin.Routes.List(ctx)
	if err != nil || !hasRoute(routes, name) {
		t.Fatalf("List %d routes (%v)", len(routes), err)
	}

	key := createKey(t, tollgate.KeyCreate{Name: "route-user"})
	answer, err := keyClient(t, key.Key).Chat.Create(ctx, tollgate.ChatCompletionRequest{Model: name, Messages: []tollgate.ChatMessage{tollgate.UserMessage("routed")}})
	if err != nil {
		t.Fatal(err)
	}
	if answer.Model != name || answer.FirstText() != "echo: routed" {
		t.Fatalf("routed answer model %q text %q", answer.Model, answer.FirstText())
	}
	eventually(t, 5*time.Second, func() error {
		entry, err := admin.Logs.Get(ctx, answer.RequestID)
		if err != nil {
			return err
		}
		if entry.Route != name || entry.Provider == nil || *entry.Provider != "fake" || len(entry.Attempts) != 1 || !entry.Attempts[0].OK {
			return fmt.Errorf("entry route %q provider %v attempts %+v", entry.Route, entry.Provider, entry.Attempts)
		}
		return nil
	})

	health, err := admin.Routes.Health(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if health.Route == nil || *health.Route != name || len(health.Groups) == 0 || len(health.Groups[0].Targets) != 1 {
		t.Fatalf("health %+v", health)
	}
	target := health.Groups[0].Targets[0]
	if target.Provider != "fake" || target.Model != "echo-1" || target.Health.Calls < 1 || target.Breaker.State != "closed" {
		t.Fatalf("target health %+v", target)
	}

	remaining, err := admin.Routes.Delete(ctx, name)
	if err != nil || remaining != nil {
		t.Fatalf("delete left %+v (%v)", remaining, err)
	}
	_, err = admin.Routes.Get(ctx, name)
	requireAPIError(t, err, 404, "invalid_request_error", "route_not_found")
}

func hasRoute(routes []tollgate.Route, name string) bool {
	for _, route := range routes {
		if route.Name == name {
			return true
		}
	}
	return false
}
