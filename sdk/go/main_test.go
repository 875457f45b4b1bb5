package tollgate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

// The gateway and the fake upstream every test talks to, started once by TestMain.
var (
	gateway  *gatewayProcess
	upstream *fakeUpstream
)

// TestMain starts a fake OpenAI-compatible upstream and a real tollgate pointed at it, runs the
// tests, then stops the gateway and fails the run if its process or port outlived it.
func TestMain(m *testing.M) {
	os.Exit(runWithGateway(m))
}

func runWithGateway(m *testing.M) int {
	upstream = startFakeUpstream()
	defer upstream.close()
	dir, err := os.MkdirTemp("", "tollgate-go-sdk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	gateway, err = startGateway(dir, upstream.server.URL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tollgate did not start:", err)
		return 1
	}
	code := m.Run()
	if err := gateway.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping tollgate:", err)
		return 1
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "tollgate's output during the run:\n%s\n", gateway.output.String())
	}
	return code
}

// testContext bounds one test's calls, so a hung gateway fails the test instead of the whole run.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// adminClient is a client holding the admin key.
func adminClient(t *testing.T) *tollgate.Client {
	t.Helper()
	client, err := tollgate.NewClient(gateway.URL, tollgate.WithAdminKey(testAdminKey))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// keyClient is a client calling models with a virtual key.
func keyClient(t *testing.T, secret string) *tollgate.Client {
	t.Helper()
	client, err := tollgate.NewClient(gateway.URL+"/v1", tollgate.WithAPIKey(secret))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// createKey makes a virtual key for one test and deletes it when the test ends (if it still exists).
func createKey(t *testing.T, body tollgate.KeyCreate) *tollgate.KeyWithSecret {
	t.Helper()
	admin := adminClient(t)
	created, err := admin.Keys.Create(testContext(t), body)
	if err != nil {
		t.Fatalf("creating key %q: %v", body.Name, err)
	}
	t.Cleanup(func() {
		err := admin.Keys.Delete(context.Background(), created.ID)
		if err != nil && apiErrorCode(err) != "key_not_found" {
			t.Errorf("deleting key %s: %v", created.ID, err)
		}
	})
	return created
}

var markers atomic.Int64

// marker is a word unique to one call, put in prompts to find that call's request at the upstream.
func marker() string {
	return fmt.Sprintf("marker%d", markers.Add(1))
}

// apiErrorCode is the code of an *APIError, or "" for any other error.
func apiErrorCode(err error) string {
	var apiErr *tollgate.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code
	}
	return ""
}

// requireAPIError asserts err is an *APIError with this status, type and code, and returns it.
func requireAPIError(t *testing.T, err error, status int, kind, code string) *tollgate.APIError {
	t.Helper()
	var apiErr *tollgate.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("want *tollgate.APIError %d %s/%s, got %T: %v", status, kind, code, err, err)
	}
	if apiErr.StatusCode != status || apiErr.Type != kind || apiErr.Code != code {
		t.Fatalf("want %d %s/%s, got %d %s/%s (%s)", status, kind, code, apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message)
	}
	if apiErr.Message == "" {
		t.Fatalf("the %s error has no message", code)
	}
	return apiErr
}

// eventually retries check until it returns nil or the time is up: the request log and the usage
// rollups are written just after an answer ends (usage about once a second).
func eventually(t *testing.T, within time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %s: %v", within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
