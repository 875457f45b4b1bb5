package tollgate

import (
	"context"
	"encoding/json"
	"net/http"
)

// Source says which layer of the config defines an item: "api", "file", "env" or "builtin".
type Source string

// Price is USD per million tokens (web searches: USD per 1,000).
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
	// CachedInputPerMTok and CacheWritePerMTok default to the input price.
	CachedInputPerMTok *float64 `json:"cached_input_per_mtok,omitempty"`
	CacheWritePerMTok  *float64 `json:"cache_write_per_mtok,omitempty"`
	// CacheWrite1hPerMTok prices writes to Anthropic's 1-hour cache; it defaults to the cache-write price.
	CacheWrite1hPerMTok *float64 `json:"cache_write_1h_per_mtok,omitempty"`
	// WebSearchPer1K prices the web searches a provider ran and reported; unset, they cost nothing.
	WebSearchPer1K *float64 `json:"web_search_per_1k,omitempty"`
}

// ProviderTimeouts are upstream time limits in milliseconds.
type ProviderTimeouts struct {
	FirstByteMS int64 `json:"first_byte_ms,omitempty"`
	TotalMS     int64 `json:"total_ms,omitempty"`
	IdleMS      int64 `json:"idle_ms,omitempty"`
}

// Provider is a provider as the API shows it: key values masked (****abcd), the completed base URL.
type Provider struct {
	Name             string            `json:"name"`
	Type             string            `json:"type"`
	BaseURL          string            `json:"base_url"`
	Headers          map[string]string `json:"headers"`
	Timeouts         ProviderTimeouts  `json:"timeouts"`
	MaxResponseBytes int64             `json:"max_response_bytes"`
	Models           []string          `json:"models"`
	Region           string            `json:"region,omitempty"`
	Project          string            `json:"project,omitempty"`
	APIVersion       string            `json:"api_version,omitempty"`
	TokenURL         string            `json:"token_url,omitempty"`
	Prices           map[string]Price  `json:"prices,omitempty"`
	// Auth is the credential used instead of a key (Entra ID, AWS's credential chain), its
	// client_secret masked; ExtraParameters (azure-ai) and ClaudeModels (bedrock) as in ProviderConfig.
	Auth            json.RawMessage `json:"auth,omitempty"`
	ExtraParameters string          `json:"extra_parameters,omitempty"`
	ClaudeModels    []string        `json:"claude_models,omitempty"`
	Keys            []ProviderKey   `json:"keys"`
	Source          Source          `json:"source"`
	Raw
}

// UnmarshalJSON decodes a provider and keeps its JSON (see Raw).
func (p *Provider) UnmarshalJSON(data []byte) error {
	type plain Provider
	return decodeKeepingRaw(data, (*plain)(p), &p.Raw)
}

// ProviderKey is one of a provider's keys, value masked.
type ProviderKey struct {
	ID     string  `json:"id"`
	Value  string  `json:"value"`
	Weight float64 `json:"weight"`
	// Models this key may serve; nil serves all.
	Models []string `json:"models"`
	// Disabled keys are kept and shown but never used.
	Disabled bool   `json:"disabled,omitempty"`
	Source   Source `json:"source"`
	Raw
}

// UnmarshalJSON decodes a provider key and keeps its JSON (see Raw).
func (k *ProviderKey) UnmarshalJSON(data []byte) error {
	type plain ProviderKey
	return decodeKeepingRaw(data, (*plain)(k), &k.Raw)
}

// ProviderConfig is the body of PUT /api/providers/:name. Type defaults to the provider's name (a
// known vendor); a custom OpenAI-compatible server takes Type "openai" and a BaseURL.
type ProviderConfig struct {
	Type             string              `json:"type,omitempty"`
	BaseURL          string              `json:"base_url,omitempty"`
	APIKey           string              `json:"api_key,omitempty"`
	Keys             []ProviderKeyConfig `json:"keys,omitempty"`
	Headers          map[string]string   `json:"headers,omitempty"`
	Timeouts         *ProviderTimeouts   `json:"timeouts,omitempty"`
	MaxResponseBytes int64               `json:"max_response_bytes,omitempty"`
	Models           []string            `json:"models,omitempty"`
	Region           string              `json:"region,omitempty"`
	Project          string              `json:"project,omitempty"`
	APIVersion       string              `json:"api_version,omitempty"`
	TokenURL         string              `json:"token_url,omitempty"`
	Prices           map[string]Price    `json:"prices,omitempty"`
	// Auth is a credential instead of a key: {"type": "entra", "credential": ...} for azure and
	// azure-ai, {"type": "aws"} (AWS's default credential chain) for bedrock.
	Auth json.RawMessage `json:"auth,omitempty"`
	// ExtraParameters (azure-ai) is what the model inference API does with fields outside its spec:
	// "drop", "pass-through" or "error".
	ExtraParameters string `json:"extra_parameters,omitempty"`
	// ClaudeModels (bedrock) are ids or ARNs of inference profiles and provisioned models serving Claude.
	ClaudeModels []string `json:"claude_models,omitempty"`
}

// ProviderKeyConfig is a provider key to add. A masked value read from the API (****abcd) stands
// for the stored key, so what was read can be written back.
type ProviderKeyConfig struct {
	// ID is assigned by the gateway when empty.
	ID       string   `json:"id,omitempty"`
	Value    string   `json:"value"`
	Weight   float64  `json:"weight,omitempty"`
	Models   []string `json:"models,omitempty"`
	Disabled bool     `json:"disabled,omitempty"`
}

// ProviderKeyUpdate is the body of PATCH /api/providers/:name/keys/:id; nil fields stay as they are.
type ProviderKeyUpdate struct {
	Value  *string             `json:"value,omitempty"`
	Weight *float64            `json:"weight,omitempty"`
	Models *Nullable[[]string] `json:"models,omitempty"`
	// Disabled takes a key out of rotation (true) or puts it back (false).
	Disabled *bool `json:"disabled,omitempty"`
}

// ProvidersService manages providers and their keys: /api/providers.
type ProvidersService struct{ client *Client }

func providerPath(name string) string { return "/api/providers/" + pathEscape(name) }

// List returns every provider the gateway knows, from every source.
func (s *ProvidersService) List(ctx context.Context) ([]Provider, error) {
	var list struct {
		Data []Provider `json:"data"`
	}
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/providers", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// Get returns one provider.
func (s *ProvidersService) Get(ctx context.Context, name string) (*Provider, error) {
	var provider Provider
	if _, err := s.client.admin(ctx, http.MethodGet, providerPath(name), nil, nil, &provider); err != nil {
		return nil, err
	}
	return &provider, nil
}

// Put creates or replaces the API's definition of a provider; created is true when it is new.
func (s *ProvidersService) Put(ctx context.Context, name string, body ProviderConfig) (provider *Provider, created bool, err error) {
	var view Provider
	status, err := s.client.admin(ctx, http.MethodPut, providerPath(name), nil, body, &view)
	if err != nil {
		return nil, false, err
	}
	return &view, status == http.StatusCreated, nil
}

// Delete removes the API's definition of a provider. It returns nil when the provider is gone, or
// what remains when the config file or tollgate itself still defines it.
func (s *ProvidersService) Delete(ctx context.Context, name string) (*Provider, error) {
	var remaining Provider
	status, err := s.client.admin(ctx, http.MethodDelete, providerPath(name), nil, nil, &remaining)
	if err != nil || status == http.StatusNoContent {
		return nil, err
	}
	return &remaining, nil
}

// ListKeys returns a provider's keys, masked.
func (s *ProvidersService) ListKeys(ctx context.Context, provider string) ([]ProviderKey, error) {
	var list struct {
		Data []ProviderKey `json:"data"`
	}
	if _, err := s.client.admin(ctx, http.MethodGet, providerPath(provider)+"/keys", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// AddKey adds a key to a provider and returns it, masked.
func (s *ProvidersService) AddKey(ctx context.Context, provider string, body ProviderKeyConfig) (*ProviderKey, error) {
	var key ProviderKey
	if _, err := s.client.admin(ctx, http.MethodPost, providerPath(provider)+"/keys", nil, body, &key); err != nil {
		return nil, err
	}
	return &key, nil
}

// GetKey returns one provider key, masked.
func (s *ProvidersService) GetKey(ctx context.Context, provider, id string) (*ProviderKey, error) {
	var key ProviderKey
	if _, err := s.client.admin(ctx, http.MethodGet, providerPath(provider)+"/keys/"+pathEscape(id), nil, nil, &key); err != nil {
		return nil, err
	}
	return &key, nil
}

// UpdateKey changes a provider key (e.g. Disabled) and returns it, masked.
func (s *ProvidersService) UpdateKey(ctx context.Context, provider, id string, body ProviderKeyUpdate) (*ProviderKey, error) {
	var key ProviderKey
	if _, err := s.client.admin(ctx, http.MethodPatch, providerPath(provider)+"/keys/"+pathEscape(id), nil, body, &key); err != nil {
		return nil, err
	}
	return &key, nil
}

// DeleteKey removes a provider key.
func (s *ProvidersService) DeleteKey(ctx context.Context, provider, id string) error {
	_, err := s.client.admin(ctx, http.MethodDelete, providerPath(provider)+"/keys/"+pathEscape(id), nil, nil, nil)
	return err
}
