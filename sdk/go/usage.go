package tollgate

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
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

// UsageOrder says which groups an answer holds when not all fit.
type UsageOrder string

const (
	// UsageOrderSpend keeps the top groups by spend and sums the rest in Others (the default).
	UsageOrderSpend UsageOrder = "spend"
	// UsageOrderGroup pages through every group in name order: follow NextAfter with After.
	UsageOrderGroup UsageOrder = "group"
)

// UsageQuery selects usage; zero fields take the gateway's defaults (grouped by model, by day,
// over the last 30 days, the top 1,000 groups by spend).
type UsageQuery struct {
	GroupBy  UsageGroup
	Interval UsageInterval
	From, To time.Time
	// TimeZone is an IANA zone name (Europe/Berlin): with IntervalDay the buckets are that zone's local
	// days (23 or 25 hours across a clock change). Empty: UTC days.
	TimeZone string
	// Limit is the most groups an answer holds (the gateway's default and maximum is 1,000; fewer fit
	// when their rows pass 50,000, as by hour over a month). Groups left out are summed in Others.
	Limit int
	// Order is UsageOrderSpend (the top groups) or UsageOrderGroup (pages in name order).
	Order UsageOrder
	// After is the previous page's NextAfter (with UsageOrderGroup only).
	After string
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
	// TimeZone is the query's zone (UTC when it named none).
	TimeZone string     `json:"tz,omitempty"`
	Data     []UsageRow `json:"data"`
	// Totals are per group over the range, highest spend first (name order with UsageOrderGroup).
	Totals []UsageTotal `json:"totals"`
	// Groups is how many groups the range has, Truncated whether the answer left some out: then
	// Others sums them, so Totals and Others together add up to the whole range.
	Groups    int          `json:"groups"`
	Truncated bool         `json:"truncated"`
	Others    *UsageOthers `json:"others,omitempty"`
	// NextAfter, with UsageOrderGroup, is the After of the next page; empty on the last one.
	NextAfter string `json:"next_after,omitempty"`
	Raw
}

// UsageOthers sums the groups an answer left out: over the range, and per interval.
type UsageOthers struct {
	Groups int             `json:"groups"`
	Totals UsageCounts     `json:"totals"`
	Data   []UsageOtherRow `json:"data"`
}

// UsageOtherRow is the groups left out, summed in one interval.
type UsageOtherRow struct {
	Start time.Time `json:"start"`
	UsageCounts
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
	if q.Limit > 0 {
		query.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Order != "" {
		query.Set("order", string(q.Order))
	}
	if q.After != "" {
		query.Set("after", q.After)
	}
	var report UsageReport
	if _, err := s.client.admin(ctx, http.MethodGet, "/api/usage", query, nil, &report); err != nil {
		return nil, err
	}
	return &report, nil
}
