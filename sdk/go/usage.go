package tollgate

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// UsageGroup is what usage is grouped by.
type UsageGroup string

const (
	GroupByKey      UsageGroup = "key"
	GroupByTeam     UsageGroup = "team"
	GroupByModel    UsageGroup = "model"
	GroupByProvider UsageGroup = "provider"
	GroupByRoute    UsageGroup = "route"
)

// UsageInterval is the length of one usage bucket.
type UsageInterval string

const (
	IntervalHour UsageInterval = "hour"
	IntervalDay  UsageInterval = "day"
)

// UsageQuery selects usage; zero fields take the gateway's defaults (grouped by model, by day,
// over the last 30 days).
type UsageQuery struct {
	GroupBy  UsageGroup
	Interval UsageInterval
	From, To time.Time
	// TimeZone is an IANA zone name (Europe/Berlin): with IntervalDay the buckets are that zone's local
	// days (23 or 25 hours across a clock change). Empty: UTC days.
	TimeZone string
}

// UsageCounts is what one group did.
type UsageCounts struct {
	Requests int64 `json:"requests"`
	// Errors are requests that ended with status 400 or above (a client that left, 499, is not one).
	Errors       int64   `json:"errors"`
	SpendUSD     float64 `json:"spend_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
}

// UsageRow is one group in one interval.
type UsageRow struct {
	// Start is the start of the interval: UTC, or local with its offset when the query named a TimeZone.
	Start time.Time `json:"start"`
	// Group is the key id, team id, model, provider or route; "none" for requests without one.
	Group string `json:"group"`
	UsageCounts
}

// UsageTotal is one group over the whole range.
type UsageTotal struct {
	Group string `json:"group"`
	UsageCounts
}

// UsageReport is the answer of GET /api/usage.
type UsageReport struct {
	GroupBy  UsageGroup    `json:"group_by"`
	Interval UsageInterval `json:"interval"`
	From     time.Time     `json:"from"`
	To       time.Time     `json:"to"`
	// TimeZone is the query's zone, empty when it named none.
	TimeZone string     `json:"tz,omitempty"`
	Data     []UsageRow `json:"data"`
	// Totals are per group over the range, highest spend first.
	Totals []UsageTotal `json:"totals"`
	Raw
}

// UnmarshalJSON decodes a report and keeps its JSON (see Raw).
func (r *UsageReport) UnmarshalJSON(data []byte) error {
	type plain UsageReport
	return decodeKeepingRaw(data, (*plain)(r), &r.Raw)
}

// Total returns the totals of one group, and whether the report has it.
func (r *UsageReport) Total(group string) (UsageTotal, bool) {
	for _, total := range r.Totals {
		if total.Group == group {
			return total, true
		}
	}
	return UsageTotal{}, false
}

// UsageService reads usage rollups: /api/usage. The rollups are written about once a second, so
// a request that just finished may take that long to show.
type UsageService struct{ client *Client }

// Get returns spend, tokens, requests and errors per group and interval.
func (s *UsageService) Get(ctx context.Context, q UsageQuery) (*UsageReport, error) {
	query := url.Values{}
	if q.GroupBy != "" {
		query.Set("group_by", string(q.GroupBy))
	}
	if q.Interval != "" {
		query.Set("interval", string(q.Interval))
	}
	if q.TimeZone != "" {
		query.Set("tz", q.TimeZone)
	}
	setTime(query, "from", q.From)
	setTime(query, "to", q.To)
	var report UsageReport
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/usage", query, nil, &report); err != nil {
		return nil, err
	}
	return &report, nil
}
