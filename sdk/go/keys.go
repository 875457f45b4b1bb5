package tollgate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// BudgetPeriod is how often a budget's spend resets (UTC).
type BudgetPeriod string

const (
	BudgetDaily   BudgetPeriod = "daily"
	BudgetWeekly  BudgetPeriod = "weekly"
	BudgetMonthly BudgetPeriod = "monthly"
	BudgetTotal   BudgetPeriod = "total"
)

// Limits are the fields virtual keys and teams share: a budget, rate limits and what applies to
// their requests. Null (nil) limits mean unlimited.
type Limits struct {
	Name string `json:"name"`
	// Budget is USD per BudgetPeriod; nil is unlimited.
	Budget       *float64     `json:"budget"`
	BudgetPeriod BudgetPeriod `json:"budget_period"`
	// RateLimit is requests per minute; nil is unlimited.
	RateLimit *int `json:"rate_limit"`
	// TokensPerMinute counts prompt and completion tokens; nil is unlimited.
	TokensPerMinute *int           `json:"tokens_per_minute"`
	Metadata        map[string]any `json:"metadata"`
	// Plugins (configured with apply: listed) turned on for these requests.
	Plugins []string `json:"plugins,omitempty"`
	// Cache, Guardrails and MCP are policy overrides, kept as JSON (null when none).
	Cache      json.RawMessage `json:"cache,omitempty"`
	Guardrails json.RawMessage `json:"guardrails,omitempty"`
	MCP        json.RawMessage `json:"mcp,omitempty"`
}

// PeriodUsage is what was used in the current budget period.
type PeriodUsage struct {
	// Spend is USD spent in the current period.
	Spend float64 `json:"spend"`
	// Requests made in the current period.
	Requests    int64     `json:"requests"`
	PeriodStart time.Time `json:"period_start"`
	// PeriodResetsAt is nil for a "total" budget, which never resets.
	PeriodResetsAt *time.Time `json:"period_resets_at"`
}

// VirtualKey is a virtual key as the API shows it: everything but the secret.
type VirtualKey struct {
	ID string `json:"id"`
	Limits
	PeriodUsage
	// Models the key may call: <provider>/<model> names, route names or * patterns; empty is all.
	Models []string `json:"models"`
	// ModelRateLimits are requests per minute per requested model name.
	ModelRateLimits map[string]int `json:"model_rate_limits,omitempty"`
	// Team is the team id, nil when the key has none.
	Team      *string    `json:"team"`
	ExpiresAt *time.Time `json:"expires_at"`
	Disabled  bool       `json:"disabled"`
	// KeyPrefix is the secret's first characters, to recognise a key in lists (tg-AbCd...).
	KeyPrefix     string  `json:"key_prefix"`
	TotalSpend    float64 `json:"total_spend"`
	TotalRequests int64   `json:"total_requests"`
	// LastUsedAt is when a request with the key was last let through (to the minute); nil when never.
	LastUsedAt *time.Time `json:"last_used_at"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	Raw
}

// UnmarshalJSON decodes a key and keeps its JSON (see Raw).
func (k *VirtualKey) UnmarshalJSON(data []byte) error {
	type plain VirtualKey
	return decodeKeepingRaw(data, (*plain)(k), &k.Raw)
}

// KeyWithSecret is a virtual key with its secret, as create and rotate answer. The secret is shown
// this once: the gateway keeps only its hash.
type KeyWithSecret struct {
	VirtualKey
	// Key is the secret (tg-...), the bearer token of model calls.
	Key string `json:"key"`
}

// UnmarshalJSON decodes the key and its secret (VirtualKey's own decoder would drop the secret).
func (k *KeyWithSecret) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &k.VirtualKey); err != nil {
		return err
	}
	var secret struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(data, &secret); err != nil {
		return err
	}
	k.Key = secret.Key
	return nil
}

// KeyCreate is the body of POST /api/keys. Only Name is required; unset fields take the gateway's
// defaults (no budget, no limits, every model).
type KeyCreate struct {
	Name            string          `json:"name"`
	Budget          *float64        `json:"budget,omitempty"`
	BudgetPeriod    BudgetPeriod    `json:"budget_period,omitempty"`
	RateLimit       *int            `json:"rate_limit,omitempty"`
	TokensPerMinute *int            `json:"tokens_per_minute,omitempty"`
	Models          []string        `json:"models,omitempty"`
	ModelRateLimits map[string]int  `json:"model_rate_limits,omitempty"`
	Team            string          `json:"team,omitempty"`
	ExpiresAt       *time.Time      `json:"expires_at,omitempty"`
	Metadata        map[string]any  `json:"metadata,omitempty"`
	Disabled        bool            `json:"disabled,omitempty"`
	Plugins         []string        `json:"plugins,omitempty"`
	Cache           json.RawMessage `json:"cache,omitempty"`
	Guardrails      json.RawMessage `json:"guardrails,omitempty"`
	MCP             json.RawMessage `json:"mcp,omitempty"`
}

// KeyUpdate is the body of PATCH /api/keys/:id: nil fields are left as they are. Fields that may be
// null take Value(v) or Null[T](); list and map fields are pointers so that an empty list can be sent.
type KeyUpdate struct {
	Name            *string                   `json:"name,omitempty"`
	Budget          *Nullable[float64]        `json:"budget,omitempty"`
	BudgetPeriod    *BudgetPeriod             `json:"budget_period,omitempty"`
	RateLimit       *Nullable[int]            `json:"rate_limit,omitempty"`
	TokensPerMinute *Nullable[int]            `json:"tokens_per_minute,omitempty"`
	Models          *[]string                 `json:"models,omitempty"`
	ModelRateLimits *Nullable[map[string]int] `json:"model_rate_limits,omitempty"`
	Team            *Nullable[string]         `json:"team,omitempty"`
	ExpiresAt       *Nullable[time.Time]      `json:"expires_at,omitempty"`
	Metadata        *map[string]any           `json:"metadata,omitempty"`
	Disabled        *bool                     `json:"disabled,omitempty"`
	Plugins         *[]string                 `json:"plugins,omitempty"`
	Cache           json.RawMessage           `json:"cache,omitempty"`
	Guardrails      json.RawMessage           `json:"guardrails,omitempty"`
	MCP             json.RawMessage           `json:"mcp,omitempty"`
}

// KeyListOptions page GET /api/keys (oldest first).
type KeyListOptions struct {
	// Limit is the page size (the gateway serves at most 1,000).
	Limit int
	// After is the previous page's KeyPage.NextAfter (or the id of its last key).
	After string
	// Query finds text in the name, id or key prefix.
	Query string
}

// KeyPage is one page of virtual keys.
type KeyPage struct {
	Data    []VirtualKey `json:"data"`
	HasMore bool         `json:"has_more"`
	// NextAfter is the cursor of the next page, empty on the last one.
	NextAfter string `json:"next_after"`
}

// KeysService manages virtual keys: /api/keys.
type KeysService struct{ client *Client }

// Create makes a virtual key. The answer carries the secret, which is never shown again.
func (s *KeysService) Create(ctx context.Context, body KeyCreate) (*KeyWithSecret, error) {
	var created KeyWithSecret
	if _, err := s.client.admin(ctx, http.MethodPost, "/api/keys", nil, body, &created); err != nil {
		return nil, err
	}
	return &created, nil
}

// List returns every virtual key, oldest first.
func (s *KeysService) List(ctx context.Context) ([]VirtualKey, error) {
	var list struct {
		Data []VirtualKey `json:"data"`
	}
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/keys", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// MaxKeyIDs is the most ids one ListByID call may name (the gateway's bound on GET /api/keys?ids=).
const MaxKeyIDs = 500

// ListByID returns the keys with these ids, in the order asked; an id that names no key is left out. Fields, when
// given, keep only those fields of each key (the id always), e.g. "name" to label keys by name: at tens of thousands
// of keys this answers in a fraction of what List costs. At most MaxKeyIDs ids per call.
func (s *KeysService) ListByID(ctx context.Context, ids []string, fields ...string) ([]VirtualKey, error) {
	if len(ids) == 0 {
		return []VirtualKey{}, nil
	}
	if len(ids) > MaxKeyIDs {
		return nil, fmt.Errorf("tollgate: ListByID takes at most %d ids, got %d", MaxKeyIDs, len(ids))
	}
	query := url.Values{}
	query.Set("ids", strings.Join(ids, ","))
	if len(fields) > 0 {
		query.Set("fields", strings.Join(fields, ","))
	}
	var list struct {
		Data []VirtualKey `json:"data"`
	}
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/keys", query, nil, &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// ListPage returns one page of virtual keys; follow NextAfter for the next.
func (s *KeysService) ListPage(ctx context.Context, options KeyListOptions) (*KeyPage, error) {
	query := url.Values{}
	limit := options.Limit
	if limit <= 0 {
		// Sent always: without limit or after the gateway streams every key; 50 is its own default page size.
		limit = 50
	}
	query.Set("limit", strconv.Itoa(limit))
	if options.After != "" {
		query.Set("after", options.After)
	}
	if options.Query != "" {
		query.Set("q", options.Query)
	}
	var page struct {
		Data      []VirtualKey `json:"data"`
		HasMore   bool         `json:"has_more"`
		NextAfter *string      `json:"next_after"`
	}
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/keys", query, nil, &page); err != nil {
		return nil, err
	}
	result := &KeyPage{Data: page.Data, HasMore: page.HasMore}
	if page.NextAfter != nil {
		result.NextAfter = *page.NextAfter
	}
	return result, nil
}

// Get returns one virtual key.
func (s *KeysService) Get(ctx context.Context, id string) (*VirtualKey, error) {
	var key VirtualKey
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/keys/"+pathEscape(id), nil, nil, &key); err != nil {
		return nil, err
	}
	return &key, nil
}

// Update changes the fields set in body and returns the key as it now is.
func (s *KeysService) Update(ctx context.Context, id string, body KeyUpdate) (*VirtualKey, error) {
	var key VirtualKey
	if _, err := s.client.admin(ctx, http.MethodPatch, "/api/keys/"+pathEscape(id), nil, body, &key); err != nil {
		return nil, err
	}
	return &key, nil
}

// Delete revokes a virtual key: requests with its secret get 401 from then on.
func (s *KeysService) Delete(ctx context.Context, id string) error {
	_, err := s.client.admin(ctx, http.MethodDelete, "/api/keys/"+pathEscape(id), nil, nil, nil)
	return err
}

// Rotate gives the key a new secret; the old one stops working once this answers.
func (s *KeysService) Rotate(ctx context.Context, id string) (*KeyWithSecret, error) {
	var rotated KeyWithSecret
	if _, err := s.client.admin(ctx, http.MethodPost, "/api/keys/"+pathEscape(id)+"/rotate", nil, nil, &rotated); err != nil {
		return nil, err
	}
	return &rotated, nil
}
