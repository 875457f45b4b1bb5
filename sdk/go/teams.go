package tollgate

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Team holds a budget and rate limits shared by its keys, on top of each key's own.
type Team struct {
	ID string `json:"id"`
	Limits
	PeriodUsage
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Raw
}

// UnmarshalJSON decodes a team and keeps its JSON (see Raw).
func (t *Team) UnmarshalJSON(data []byte) error {
	type plain Team
	return decodeKeepingRaw(data, (*plain)(t), &t.Raw)
}

// TeamCreate is the body of POST /api/teams. Only Name is required.
type TeamCreate struct {
	Name            string          `json:"name"`
	Budget          *float64        `json:"budget,omitempty"`
	BudgetPeriod    BudgetPeriod    `json:"budget_period,omitempty"`
	RateLimit       *int            `json:"rate_limit,omitempty"`
	TokensPerMinute *int            `json:"tokens_per_minute,omitempty"`
	Metadata        map[string]any  `json:"metadata,omitempty"`
	Plugins         []string        `json:"plugins,omitempty"`
	Cache           json.RawMessage `json:"cache,omitempty"`
	Guardrails      json.RawMessage `json:"guardrails,omitempty"`
	MCP             json.RawMessage `json:"mcp,omitempty"`
}

// TeamUpdate is the body of PATCH /api/teams/:id: nil fields are left as they are (see KeyUpdate).
type TeamUpdate struct {
	Name            *string            `json:"name,omitempty"`
	Budget          *Nullable[float64] `json:"budget,omitempty"`
	BudgetPeriod    *BudgetPeriod      `json:"budget_period,omitempty"`
	RateLimit       *Nullable[int]     `json:"rate_limit,omitempty"`
	TokensPerMinute *Nullable[int]     `json:"tokens_per_minute,omitempty"`
	Metadata        *map[string]any    `json:"metadata,omitempty"`
	Plugins         *[]string          `json:"plugins,omitempty"`
	Cache           json.RawMessage    `json:"cache,omitempty"`
	Guardrails      json.RawMessage    `json:"guardrails,omitempty"`
	MCP             json.RawMessage    `json:"mcp,omitempty"`
}

// TeamsService manages teams: /api/teams.
type TeamsService struct{ client *Client }

// Create makes a team.
func (s *TeamsService) Create(ctx context.Context, body TeamCreate) (*Team, error) {
	var team Team
	if _, err := s.client.admin(ctx, http.MethodPost, "/api/teams", nil, body, &team); err != nil {
		return nil, err
	}
	return &team, nil
}

// List returns every team.
func (s *TeamsService) List(ctx context.Context) ([]Team, error) {
	var list struct {
		Data []Team `json:"data"`
	}
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/teams", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// Get returns one team.
func (s *TeamsService) Get(ctx context.Context, id string) (*Team, error) {
	var team Team
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/teams/"+pathEscape(id), nil, nil, &team); err != nil {
		return nil, err
	}
	return &team, nil
}

// Update changes the fields set in body and returns the team as it now is.
func (s *TeamsService) Update(ctx context.Context, id string, body TeamUpdate) (*Team, error) {
	var team Team
	if _, err := s.client.admin(ctx, http.MethodPatch, "/api/teams/"+pathEscape(id), nil, body, &team); err != nil {
		return nil, err
	}
	return &team, nil
}

// Delete removes a team. While keys still name it the gateway answers 409 team_in_use.
func (s *TeamsService) Delete(ctx context.Context, id string) error {
	_, err := s.client.admin(ctx, http.MethodDelete, "/api/teams/"+pathEscape(id), nil, nil, nil)
	return err
}
