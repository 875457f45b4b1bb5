package tollgate

import (
	"context"
	"encoding/json"
	"net/http"
)

// RouteTarget is one weighted target of a route: a <provider>/<model>.
type RouteTarget struct {
	Model  string  `json:"model"`
	Weight float64 `json:"weight,omitempty"`
}

// RouteRetry bounds a route's upstream attempts; zero fields take the gateway's defaults.
type RouteRetry struct {
	MaxAttempts    int   `json:"max_attempts,omitempty"`
	InitialDelayMS int64 `json:"initial_delay_ms,omitempty"`
	MaxDelayMS     int64 `json:"max_delay_ms,omitempty"`
	DeadlineMS     int64 `json:"deadline_ms,omitempty"`
}

// RouteBreaker configures the circuit breakers of a route's targets; zero fields take the defaults.
type RouteBreaker struct {
	Enabled             *bool   `json:"enabled,omitempty"`
	ConsecutiveFailures int     `json:"consecutive_failures,omitempty"`
	FailureRate         float64 `json:"failure_rate,omitempty"`
	WindowMS            int64   `json:"window_ms,omitempty"`
	MinRequests         int     `json:"min_requests,omitempty"`
	CooldownMS          int64   `json:"cooldown_ms,omitempty"`
	HalfOpenRequests    int     `json:"half_open_requests,omitempty"`
}

// RouteConfig is the body of PUT /api/routes/:name: weighted targets and an ordered fallback chain.
type RouteConfig struct {
	Targets []RouteTarget `json:"targets"`
	// Fallbacks are tried in order when the picked target fails: <provider>/<model> or route names.
	Fallbacks              []string        `json:"fallbacks,omitempty"`
	Retry                  *RouteRetry     `json:"retry,omitempty"`
	Breaker                *RouteBreaker   `json:"breaker,omitempty"`
	Adaptive               *bool           `json:"adaptive,omitempty"`
	FallbackOnClientErrors *bool           `json:"fallback_on_client_errors,omitempty"`
	Price                  *Price          `json:"price,omitempty"`
	Plugins                []string        `json:"plugins,omitempty"`
	Cache                  json.RawMessage `json:"cache,omitempty"`
	Guardrails             json.RawMessage `json:"guardrails,omitempty"`
	MCP                    json.RawMessage `json:"mcp,omitempty"`
}

// Route is a route as the API shows it.
type Route struct {
	Name string `json:"name"`
	RouteConfig
	Source Source `json:"source"`
	Raw
}

// UnmarshalJSON decodes a route and keeps its JSON (see Raw).
func (r *Route) UnmarshalJSON(data []byte) error {
	type plain Route
	return decodeKeepingRaw(data, (*plain)(r), &r.Raw)
}

// RouteHealth is what routing knows right now about a route or a <provider>/<model>: each target's
// configured and effective weight, its share of new traffic, breaker and health.
type RouteHealth struct {
	Name string `json:"name"`
	// Route is the route that matched, nil for a plain <provider>/<model>.
	Route *string `json:"route"`
	// Unavailable lists targets and fallbacks skipped because they cannot be served (no key, say).
	Unavailable []UnavailableTarget `json:"unavailable"`
	Groups      []HealthGroup       `json:"groups"`
	Raw
}

// UnmarshalJSON decodes a health view and keeps its JSON (see Raw; the policy is there).
func (h *RouteHealth) UnmarshalJSON(data []byte) error {
	type plain RouteHealth
	return decodeKeepingRaw(data, (*plain)(h), &h.Raw)
}

// UnavailableTarget is a target the request path skips, and why.
type UnavailableTarget struct {
	Target string `json:"target"`
	Role   string `json:"role"`
	Via    string `json:"via"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// HealthGroup is the primary choice or one fallback, with its targets.
type HealthGroup struct {
	Name    string         `json:"name"`
	Role    string         `json:"role"`
	Targets []TargetHealth `json:"targets"`
}

// TargetHealth is one target's live state.
type TargetHealth struct {
	Target           string  `json:"target"`
	Provider         string  `json:"provider"`
	Model            string  `json:"model"`
	KeyID            *string `json:"key_id"`
	ConfiguredWeight float64 `json:"configured_weight"`
	EffectiveWeight  float64 `json:"effective_weight"`
	Share            float64 `json:"share"`
	Breaker          struct {
		State               string  `json:"state"`
		Reason              *string `json:"reason"`
		ConsecutiveFailures int     `json:"consecutive_failures"`
		FailureRate         float64 `json:"failure_rate"`
		WindowCalls         int     `json:"window_calls"`
		HalfOpensAt         *string `json:"half_opens_at"`
	} `json:"breaker"`
	Health struct {
		SuccessRate      float64  `json:"success_rate"`
		LatencyMS        *float64 `json:"latency_ms"`
		RecentRateLimits float64  `json:"recent_rate_limits"`
		RPS              float64  `json:"rps"`
		Calls            int64    `json:"calls"`
		Failures         int64    `json:"failures"`
		InFlight         int      `json:"in_flight"`
	} `json:"health"`
}

// RoutesService manages routes: /api/routes. Route names may contain "/"; they are escaped here.
type RoutesService struct{ client *Client }

func routePath(name string) string { return "/api/routes/" + pathEscape(name) }

// List returns every route.
func (s *RoutesService) List(ctx context.Context) ([]Route, error) {
	var list struct {
		Data []Route `json:"data"`
	}
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/routes", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// Get returns one route.
func (s *RoutesService) Get(ctx context.Context, name string) (*Route, error) {
	var route Route
	if _, err := s.client.admin(ctx, http.MethodGet, routePath(name), nil, nil, &route); err != nil {
		return nil, err
	}
	return &route, nil
}

// Put creates or replaces a route (over the config file's route of the same name); created is true
// when it is new.
func (s *RoutesService) Put(ctx context.Context, name string, body RouteConfig) (route *Route, created bool, err error) {
	var view Route
	status, err := s.client.admin(ctx, http.MethodPut, routePath(name), nil, body, &view)
	if err != nil {
		return nil, false, err
	}
	return &view, status == http.StatusCreated, nil
}

// Delete removes the API's route. It returns nil when the route is gone, or the config file's route
// that deleting the API's override brought back.
func (s *RoutesService) Delete(ctx context.Context, name string) (*Route, error) {
	var remaining Route
	status, err := s.client.admin(ctx, http.MethodDelete, routePath(name), nil, nil, &remaining)
	if err != nil || status == http.StatusNoContent {
		return nil, err
	}
	return &remaining, nil
}

// Health returns the live weights, breakers and health of a route's (or a <provider>/<model>'s) targets.
func (s *RoutesService) Health(ctx context.Context, name string) (*RouteHealth, error) {
	var health RouteHealth
	if _, err := s.client.admin(ctx, http.MethodGet, routePath(name)+"/health", nil, nil, &health); err != nil {
		return nil, err
	}
	return &health, nil
}
