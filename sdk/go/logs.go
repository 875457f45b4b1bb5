package tollgate

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// RequestLogEntry is one finished request: answered, refused, failed upstream or abandoned by its
// client. Fields added by newer gateways are in RawJSON.
type RequestLogEntry struct {
	// ID is the x-request-id the client got with its answer.
	ID            string    `json:"id"`
	At            time.Time `json:"at"`
	Dialect       string    `json:"dialect,omitempty"`
	Path          string    `json:"path,omitempty"`
	Operation     string    `json:"operation,omitempty"`
	KeyID         *string   `json:"key_id"`
	TeamID        *string   `json:"team_id"`
	Route         string    `json:"route,omitempty"`
	Model         string    `json:"model"`
	Provider      *string   `json:"provider"`
	UpstreamModel *string   `json:"upstream_model"`
	Status        int       `json:"status"`
	ErrorType     string    `json:"error_type,omitempty"`
	ErrorCode     *string   `json:"error_code,omitempty"`
	ErrorMessage  string    `json:"error_message,omitempty"`
	Stream        bool      `json:"stream"`
	Cancelled     bool      `json:"cancelled"`
	Fallback      bool      `json:"fallback,omitempty"`
	// Attempts are the upstream calls, in order (retries and fallbacks included).
	Attempts         []RequestAttempt `json:"attempts,omitempty"`
	PromptTokens     int64            `json:"prompt_tokens"`
	CompletionTokens int64            `json:"completion_tokens"`
	CachedTokens     int64            `json:"cached_tokens,omitempty"`
	CacheWriteTokens int64            `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int64            `json:"reasoning_tokens,omitempty"`
	// Estimated is true when tollgate counted the tokens (the upstream reported none).
	Estimated bool    `json:"estimated,omitempty"`
	CostUSD   float64 `json:"cost_usd"`
	// Priced is false when no price was known for the model (cost 0).
	Priced       bool     `json:"priced"`
	DurationMS   float64  `json:"duration_ms"`
	UpstreamMS   float64  `json:"upstream_ms,omitempty"`
	FirstTokenMS *float64 `json:"first_token_ms,omitempty"`
	OverheadMS   float64  `json:"overhead_ms,omitempty"`
	// Cache is what the response cache did (hit-exact, miss, ...), empty when it is off.
	Cache      string            `json:"cache,omitempty"`
	Guardrails []string          `json:"guardrails,omitempty"`
	User       *string           `json:"user,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	// RequestBody and ResponseBody are kept only with settings.log_bodies.enabled.
	RequestBody  string `json:"request_body,omitempty"`
	ResponseBody string `json:"response_body,omitempty"`
	Raw
}

// UnmarshalJSON decodes an entry and keeps its JSON (see Raw).
func (e *RequestLogEntry) UnmarshalJSON(data []byte) error {
	type plain RequestLogEntry
	return decodeKeepingRaw(data, (*plain)(e), &e.Raw)
}

// RequestAttempt is one upstream call of a request.
type RequestAttempt struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Status is nil when no answer came (connection error, timeout, cancelled).
	Status     *int    `json:"status"`
	OK         bool    `json:"ok"`
	DurationMS float64 `json:"duration_ms"`
	ErrorCode  *string `json:"error_code"`
}

// LogFilter selects request-log entries; zero fields do not filter.
type LogFilter struct {
	From, To time.Time
	KeyID    string
	TeamID   string
	// Model matches the requested or the upstream model.
	Model    string
	Provider string
	Route    string
	// Status is a code ("429") or a class ("5xx").
	Status string
	// Query finds text in the error message.
	Query string
	// Limit is the page size (the gateway's default is 50).
	Limit int
	// Before is the cursor of the next (older) page: LogPage.NextBefore.
	Before string
}

func (f LogFilter) values() url.Values {
	query := url.Values{}
	setTime(query, "from", f.From)
	setTime(query, "to", f.To)
	for name, value := range map[string]string{
		"key_id": f.KeyID, "team_id": f.TeamID, "model": f.Model, "provider": f.Provider,
		"route": f.Route, "status": f.Status, "q": f.Query, "before": f.Before,
	} {
		if value != "" {
			query.Set(name, value)
		}
	}
	if f.Limit > 0 {
		query.Set("limit", strconv.Itoa(f.Limit))
	}
	return query
}

// setTime writes a time as epoch milliseconds, which the gateway reads exactly (no time-zone or
// fractional-second parsing in between).
func setTime(query url.Values, name string, at time.Time) {
	if !at.IsZero() {
		query.Set(name, strconv.FormatInt(at.UnixMilli(), 10))
	}
}

// LogPage is one page of the request log, newest first.
type LogPage struct {
	Data []RequestLogEntry
	// NextBefore is the cursor of the next (older) page, empty on the last one. A page looks at a
	// bounded number of records, so a rare filter may answer a short page that still has a cursor.
	NextBefore string
}

// LogsService reads the request log: /api/logs.
type LogsService struct{ client *Client }

// List returns one page of the request log.
func (s *LogsService) List(ctx context.Context, filter LogFilter) (*LogPage, error) {
	var page struct {
		Data       []RequestLogEntry `json:"data"`
		NextBefore *string           `json:"next_before"`
	}
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/logs", filter.values(), nil, &page); err != nil {
		return nil, err
	}
	result := &LogPage{Data: page.Data}
	if page.NextBefore != nil {
		result.NextBefore = *page.NextBefore
	}
	return result, nil
}

// Get returns one entry by its request id (the x-request-id of the answer). The log is written just
// after the answer ends, so a Get made the instant a response arrives may still see 404 request_not_found.
func (s *LogsService) Get(ctx context.Context, id string) (*RequestLogEntry, error) {
	var entry RequestLogEntry
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/logs/"+pathEscape(id), nil, nil, &entry); err != nil {
		return nil, err
	}
	return &entry, nil
}

// Iterate walks every entry the filter selects, newest first, fetching pages as it goes:
//
//	it := client.Logs.Iterate(filter)
//	for it.Next(ctx) {
//		entry := it.Entry()
//	}
//	if err := it.Err(); err != nil { ... }
func (s *LogsService) Iterate(filter LogFilter) *LogIterator {
	return &LogIterator{service: s, filter: filter}
}

// LogIterator walks the request log page by page; see LogsService.Iterate.
type LogIterator struct {
	service *LogsService
	filter  LogFilter
	page    []RequestLogEntry
	index   int
	done    bool
	err     error
}

// Next advances to the next entry, fetching the next page when needed. It returns false at the end
// of the log or on an error (see Err).
func (it *LogIterator) Next(ctx context.Context) bool {
	for {
		if it.err != nil {
			return false
		}
		if it.index+1 < len(it.page) {
			it.index++
			return true
		}
		if it.done {
			return false
		}
		page, err := it.service.List(ctx, it.filter)
		if err != nil {
			it.err = err
			return false
		}
		it.page, it.index = page.Data, -1
		it.filter.Before = page.NextBefore
		it.done = page.NextBefore == ""
	}
}

// Entry is the current entry; valid after Next returned true.
func (it *LogIterator) Entry() RequestLogEntry { return it.page[it.index] }

// Err is the error that stopped the iteration, nil at a normal end.
func (it *LogIterator) Err() error { return it.err }
