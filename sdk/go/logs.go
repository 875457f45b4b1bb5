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
	// WriteSeq is the record's place in the order records were written (the cursor of WrittenAfter);
	// 0 for records written before the gateway numbered them (2026-11-29), which WrittenAfter never returns.
	WriteSeq int64 `json:"write_seq,omitempty"`
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
	// Limit is the page size: the gateway's default is 50 and its most 500 (a larger Limit is cut to 500).
	Limit int
	// Before is the cursor of the next (older) page: LogPage.NextBefore.
	Before string
	// AllowGaps goes with WrittenAfter only (List refuses it, a 400): when retention deleted records
	// written after the cursor before they were read, take what is still kept instead of the
	// 410 log_cursor_trimmed.
	AllowGaps bool
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
	if f.AllowGaps {
		query.Set("allow_gaps", "true")
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

// WrittenLogPage is one page of the request log in the order its records were written (see
// LogsService.WrittenAfter), oldest write first.
type WrittenLogPage struct {
	Data []RequestLogEntry
	// NextWrittenAfter is the cursor to ask with next. It is past the records the filters skipped too,
	// so it may be beyond the last entry's WriteSeq.
	NextWrittenAfter int64
	// HasMore says that more records were written after this page: ask again at once. A page looks at
	// a bounded number of records, so a rare filter may answer a short page, even an empty one, with HasMore.
	HasMore bool
}

// WrittenAfter returns the records written after cursor (a WriteSeq; 0 for the start of the log),
// oldest write first: what a log shipper polls, keeping NextWrittenAfter for its next call. Unlike
// From and To, which select by when a request arrived, it misses no request that arrived before a
// poll and ended after it (a long stream, a slow retry chain).
//
// The filter's KeyID, TeamID, Model, Provider, Route, Status and Query apply, Limit is the page size
// (default 50, at most 500), and AllowGaps takes what retention kept after a cursor it overtook
// (without it, a 410 log_cursor_trimmed). From, To and Before select by arrival and are refused with
// a cursor (a 400 invalid_query naming the parameter), as is a cursor past every WriteSeq this
// gateway gave (one of another gateway).
func (s *LogsService) WrittenAfter(ctx context.Context, cursor int64, filter LogFilter) (*WrittenLogPage, error) {
	query := filter.values()
	query.Set("written_after", strconv.FormatInt(cursor, 10))
	var page struct {
		Data             []RequestLogEntry `json:"data"`
		NextWrittenAfter int64             `json:"next_written_after"`
		HasMore          bool              `json:"has_more"`
	}
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/logs", query, nil, &page); err != nil {
		return nil, err
	}
	return &WrittenLogPage{Data: page.Data, NextWrittenAfter: page.NextWrittenAfter, HasMore: page.HasMore}, nil
}

// IterateWrittenAfter walks the records written after cursor, oldest write first, following
// NextWrittenAfter while the gateway says HasMore, then stops; Cursor is what to start from next time:
//
//	it := client.Logs.IterateWrittenAfter(cursor, tollgate.LogFilter{Limit: 500})
//	for it.Next(ctx) {
//		ship(it.Entry())
//	}
//	if err := it.Err(); err != nil { ... }
//	cursor = it.Cursor() // keep it once the sink took the entries
func (s *LogsService) IterateWrittenAfter(cursor int64, filter LogFilter) *WrittenLogIterator {
	return &WrittenLogIterator{service: s, filter: filter, next: cursor, more: true}
}

// WrittenLogIterator walks the request log in write order; see LogsService.IterateWrittenAfter.
type WrittenLogIterator struct {
	service *LogsService
	filter  LogFilter
	page    []RequestLogEntry
	index   int
	// next is the cursor the next page is asked with: the last page's NextWrittenAfter.
	next int64
	more bool
	err  error
}

// Next advances to the next entry, fetching the next page when needed. It returns false once a page
// without HasMore has been walked, or on an error (see Err).
func (it *WrittenLogIterator) Next(ctx context.Context) bool {
	for {
		if it.err != nil {
			return false
		}
		if it.index+1 < len(it.page) {
			it.index++
			return true
		}
		if !it.more {
			return false
		}
		page, err := it.service.WrittenAfter(ctx, it.next, it.filter)
		if err != nil {
			it.err = err
			return false
		}
		if page.HasMore && page.NextWrittenAfter <= it.next {
			it.err = errorf("the gateway answered has_more with a cursor that did not move (written_after %d, next_written_after %d)", it.next, page.NextWrittenAfter)
			return false
		}
		it.page, it.index = page.Data, -1
		it.next, it.more = page.NextWrittenAfter, page.HasMore
	}
}

// Entry is the current entry; valid after Next returned true.
func (it *WrittenLogIterator) Entry() RequestLogEntry { return it.page[it.index] }

// Cursor is the cursor to resume from after the entries Next has returned so far: the current entry's
// WriteSeq inside a page, the page's NextWrittenAfter after its last entry (past the records the
// filters skipped). After an error it is that of the last entry returned, so nothing is skipped.
func (it *WrittenLogIterator) Cursor() int64 {
	if it.index >= 0 && it.index+1 < len(it.page) {
		return it.page[it.index].WriteSeq
	}
	return it.next
}

// Err is the error that stopped the iteration, nil at a normal end.
func (it *WrittenLogIterator) Err() error { return it.err }
