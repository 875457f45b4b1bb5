package tollgate_test

import (
	"strings"
	"testing"
	"time"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

// Update sets, clears (null) and leaves fields; disabling a key refuses its secret; rotating it
// gives a new secret and refuses the old one.
func TestKeyUpdateAndRotate(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	key := createKey(t, tollgate.KeyCreate{Name: "changing", Budget: tollgate.Ptr(5.0), BudgetPeriod: tollgate.BudgetMonthly, Metadata: map[string]any{"env": "test"}})
	if key.Budget == nil || *key.Budget != 5 || key.BudgetPeriod != tollgate.BudgetMonthly || key.PeriodResetsAt == nil {
		t.Fatalf("created %+v", key.VirtualKey)
	}

	expires := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Millisecond)
	updated, err := admin.Keys.Update(ctx, key.ID, tollgate.KeyUpdate{
		Budget:    tollgate.Null[float64](),
		RateLimit: tollgate.Value(100),
		ExpiresAt: tollgate.Value(expires),
		Models:    &[]string{"fake/*"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Budget != nil || updated.RateLimit == nil || *updated.RateLimit != 100 || updated.ExpiresAt == nil || !updated.ExpiresAt.Equal(expires) {
		t.Fatalf("updated %+v", updated)
	}
	if updated.Name != "changing" || updated.Metadata["env"] != "test" || updated.BudgetPeriod != tollgate.BudgetMonthly {
		t.Fatalf("fields not in the update changed: %+v", updated)
	}

	chat := keyClient(t, key.Key)
	if _, err := admin.Keys.Update(ctx, key.ID, tollgate.KeyUpdate{Disabled: tollgate.Ptr(true)}); err != nil {
		t.Fatal(err)
	}
	_, err = chat.Chat.Create(ctx, hello())
	requireAPIError(t, err, 401, "invalid_request_error", "key_disabled")
	if _, err := admin.Keys.Update(ctx, key.ID, tollgate.KeyUpdate{Disabled: tollgate.Ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if _, err := chat.Chat.Create(ctx, hello()); err != nil {
		t.Fatalf("re-enabled key: %v", err)
	}

	rotated, err := admin.Keys.Rotate(ctx, key.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Key == "" || rotated.Key == key.Key || rotated.ID != key.ID {
		t.Fatalf("rotation gave %q for %s", rotated.Key, rotated.ID)
	}
	_, err = chat.Chat.Create(ctx, hello())
	requireAPIError(t, err, 401, "invalid_request_error", "invalid_api_key")
	if _, err := keyClient(t, rotated.Key).Chat.Create(ctx, hello()); err != nil {
		t.Fatalf("new secret: %v", err)
	}
}

// Keys page by a cursor, found by text, each page naming the next, every key on exactly one page.
func TestKeyListPaging(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	prefix := marker() + "-paged"
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, createKey(t, tollgate.KeyCreate{Name: prefix}).ID)
	}
	first, err := admin.Keys.ListPage(ctx, tollgate.KeyListOptions{Limit: 2, Query: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Data) != 2 || !first.HasMore || !strings.HasPrefix(first.NextAfter, "c_") {
		t.Fatalf("first page %d keys, has_more %v, next %q", len(first.Data), first.HasMore, first.NextAfter)
	}
	second, err := admin.Keys.ListPage(ctx, tollgate.KeyListOptions{Limit: 2, Query: prefix, After: first.NextAfter})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Data) != 1 || second.HasMore || second.NextAfter != "" {
		t.Fatalf("second page %+v", second)
	}
	// Keys made in the same millisecond may list in any order among themselves; the pages hold each once.
	paged := map[string]bool{first.Data[0].ID: true, first.Data[1].ID: true, second.Data[0].ID: true}
	for _, id := range ids {
		if !paged[id] {
			t.Fatalf("key %s is on neither page (pages hold %v)", id, paged)
		}
	}
	all, err := admin.Keys.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, key := range all {
		if key.Name == prefix {
			found++
		}
	}
	if found != 3 {
		t.Fatalf("List has %d of the 3 keys", found)
	}
}

// Keys asked for by id come back in the order asked, an unknown id left out; fields keep only what was named.
func TestKeyListByID(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	prefix := marker() + "-byid"
	a := createKey(t, tollgate.KeyCreate{Name: prefix + "-a", Budget: tollgate.Ptr(3.0)})
	b := createKey(t, tollgate.KeyCreate{Name: prefix + "-b"})
	keys, err := admin.Keys.ListByID(ctx, []string{b.ID, "no-such-key", a.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].ID != b.ID || keys[1].ID != a.ID || keys[1].Budget == nil || *keys[1].Budget != 3 {
		t.Fatalf("by id: %+v", keys)
	}
	named, err := admin.Keys.ListByID(ctx, []string{a.ID}, "name")
	if err != nil {
		t.Fatal(err)
	}
	if len(named) != 1 || named[0].ID != a.ID || named[0].Name != prefix+"-a" || named[0].Budget != nil {
		t.Fatalf("name only: %+v", named)
	}
	_, err = admin.Keys.ListByID(ctx, []string{a.ID}, "key_hash")
	requireAPIError(t, err, 400, "invalid_request_error", "invalid_query")
	many := make([]string, tollgate.MaxKeyIDs+1)
	if _, err := admin.Keys.ListByID(ctx, many); err == nil {
		t.Fatal("more than MaxKeyIDs ids were sent")
	}
}
