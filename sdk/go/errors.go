package tollgate

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxErrorBody bounds how much of an error answer is read: enough for any gateway error, and a
// misbehaving proxy cannot make the client buffer an endless body.
const maxErrorBody = 1 << 20

// APIError is an error answer from the gateway, in OpenAI's shape
// {"error": {"message", "type", "param", "code"}}, which tollgate uses on /v1 and /api alike.
// Use errors.As to reach it:
//
//	var apiErr *tollgate.APIError
//	if errors.As(err, &apiErr) && apiErr.Code == "budget_exceeded" { ... }
type APIError struct {
	// StatusCode is the HTTP status. It is 0 for an error that arrived inside a stream after
	// the 200 status had been sent.
	StatusCode int
	// Type is the error's type, e.g. invalid_request_error, insufficient_quota, requests.
	Type string
	// Code is tollgate's error code, e.g. invalid_api_key, budget_exceeded, key_not_found; upstream
	// errors passed through carry the provider's code. Empty when the answer had none.
	Code string
	// Param names the offending request field, when the gateway said which.
	Param string
	// Message is the gateway's explanation.
	Message string
	// RequestID is the x-request-id of the answer, the id of its request-log entry (model calls).
	RequestID string
	// RetryAfter is how long the answer asks to wait (rate limits, budgets): its retry-after-ms header
	// (OpenAI's, which tollgate passes on from an upstream), else its retry-after header; zero when
	// neither is there.
	RetryAfter time.Duration
	// Header holds every header of the error answer (x-ratelimit-*, www-authenticate, ...).
	Header http.Header
	// Body is the raw error body, for answers that were not in the expected shape (whose Message is
	// then a page's title, or the body's first 200 characters).
	Body []byte
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("tollgate: ")
	if e.StatusCode != 0 {
		b.WriteString(strconv.Itoa(e.StatusCode))
		b.WriteString(" ")
	}
	if e.Code != "" {
		b.WriteString(e.Code)
	} else if e.Type != "" {
		b.WriteString(e.Type)
	} else {
		b.WriteString("error")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// ShouldRetry reads the answer's x-should-retry header, which the gateway sends when it knows whether
// sending the request again can succeed: false on a spent budget (no retry passes before it resets,
// however long retry-after is) and on an upstream error that said so; true on a budget held only by
// requests in flight, and on an upstream error that said so (OpenAI's and Anthropic's SDKs obey it over
// the status). said is false when the answer has no such header (or not true or false), as errors
// inside a stream have none: then the status decides (OpenAI's SDKs retry 408, 409, 429 and 5xx).
func (e *APIError) ShouldRetry() (retry bool, said bool) {
	switch strings.ToLower(strings.TrimSpace(e.Header.Get("x-should-retry"))) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// errorBody is the wire shape of an error answer; code may be a string, a number or null upstream.
type errorBody struct {
	Error *struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Param   *string         `json:"param"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// parseErrorBody fills type, code, param and message from an error body; false when the body is
// not in the error shape.
func (e *APIError) parseErrorBody(data []byte) bool {
	var parsed errorBody
	if json.Unmarshal(data, &parsed) != nil || parsed.Error == nil {
		return false
	}
	e.Message = parsed.Error.Message
	e.Type = parsed.Error.Type
	if parsed.Error.Param != nil {
		e.Param = *parsed.Error.Param
	}
	e.Code = codeText(parsed.Error.Code)
	return true
}

// codeText renders an error code that may be a JSON string, a number (some providers) or null.
func codeText(raw json.RawMessage) string {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	trimmed := strings.TrimSpace(string(raw))
	if trimmed == "null" {
		return ""
	}
	return trimmed
}

// errorFromResponse turns a non-2xx answer into an *APIError. A body that is not the error shape
// (a proxy's HTML page, say) becomes the message, so the caller still sees what came back.
func errorFromResponse(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	apiErr := &APIError{
		StatusCode: resp.StatusCode,
		RequestID:  resp.Header.Get("x-request-id"),
		RetryAfter: retryAfter(resp.Header),
		Header:     resp.Header.Clone(),
		Body:       data,
	}
	if !apiErr.parseErrorBody(data) {
		apiErr.Message = bodyMessage(data, resp.Header.Get("content-type"), resp.StatusCode)
	}
	return apiErr
}

// maxBodyMessage bounds the message made from a body that is not the error shape: the whole body
// stays in Body, but an error's text goes into log lines.
const maxBodyMessage = 200

// bodyMessage is the message of an answer that is not in the error shape (a proxy's or load balancer's
// page, say): an HTML page by its title or first heading, other text as it is up to maxBodyMessage
// characters, an empty body by its status text.
func bodyMessage(data []byte, contentType string, status int) string {
	text := strings.TrimSpace(string(data))
	if text == "" {
		return http.StatusText(status)
	}
	head := asciiLower(text[:minInt(len(text), 512)])
	if strings.Contains(strings.ToLower(contentType), "html") || strings.HasPrefix(head, "<!doctype html") || strings.Contains(head, "<html") {
		for _, element := range []string{"title", "h1"} {
			if name := elementText(text, element); name != "" {
				return fmt.Sprintf("an HTML page (%q) instead of the gateway's JSON error", clip(name))
			}
		}
		return "an HTML page instead of the gateway's JSON error"
	}
	return clip(text)
}

// elementText is the text of the first <element> of an HTML page, whitespace collapsed; empty when none.
func elementText(page, element string) string {
	lower := asciiLower(page)
	open := strings.Index(lower, "<"+element)
	if open < 0 {
		return ""
	}
	start := strings.IndexByte(lower[open:], '>')
	if start < 0 {
		return ""
	}
	start += open + 1
	end := strings.Index(lower[start:], "</"+element)
	if end < 0 {
		return ""
	}
	return strings.Join(strings.Fields(html.UnescapeString(page[start:start+end])), " ")
}

// clip cuts text to maxBodyMessage characters (never inside one), saying how long it was.
func clip(text string) string {
	if utf8.RuneCountInString(text) <= maxBodyMessage {
		return text
	}
	runes := []rune(text)
	return fmt.Sprintf("%s… (%d characters)", string(runes[:maxBodyMessage]), len(runes))
}

// asciiLower lowers A-Z only, so every byte stays where it was (strings.ToLower may change lengths,
// and offsets found in its result are used on the original).
func asciiLower(text string) string {
	lowered := []byte(text)
	for i, c := range lowered {
		if 'A' <= c && c <= 'Z' {
			lowered[i] = c + ('a' - 'A')
		}
	}
	return string(lowered)
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// retryAfter reads the wait an answer asks for: retry-after-ms (milliseconds, finer than retry-after,
// so it wins as in OpenAI's SDKs), else retry-after (seconds, or an HTTP date).
func retryAfter(header http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(header.Get("retry-after-ms")), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	value := strings.TrimSpace(header.Get("retry-after"))
	if value == "" {
		return 0
	}
	if seconds, err := strconv.ParseFloat(value, 64); err == nil && seconds >= 0 {
		return time.Duration(seconds * float64(time.Second))
	}
	if at, err := http.ParseTime(value); err == nil {
		if wait := time.Until(at); wait > 0 {
			return wait
		}
	}
	return 0
}

// streamError is the error event the gateway writes into a stream that fails after it started
// ("data: {"error": {...}}"), returned by ChatStream.Recv.
func streamError(data []byte, requestID string) (*APIError, bool) {
	apiErr := &APIError{RequestID: requestID, Body: append([]byte(nil), data...)}
	if !apiErr.parseErrorBody(data) {
		return nil, false
	}
	return apiErr, true
}

// errorf wraps an SDK-side failure (not a gateway answer) with the package prefix.
func errorf(format string, args ...any) error {
	return fmt.Errorf("tollgate: "+format, args...)
}
