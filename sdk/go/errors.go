package tollgate

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	// RetryAfter is the retry-after header (rate limits, budgets), zero when absent.
	RetryAfter time.Duration
	// Header holds every header of the error answer (x-ratelimit-*, www-authenticate, ...).
	Header http.Header
	// Body is the raw error body, for answers that were not in the expected shape.
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
		RetryAfter: retryAfter(resp.Header.Get("retry-after")),
		Header:     resp.Header.Clone(),
		Body:       data,
	}
	if !apiErr.parseErrorBody(data) {
		apiErr.Message = strings.TrimSpace(string(data))
		if apiErr.Message == "" {
			apiErr.Message = http.StatusText(resp.StatusCode)
		}
	}
	return apiErr
}

// retryAfter reads a retry-after header: whole seconds, or an HTTP date.
func retryAfter(value string) time.Duration {
	value = strings.TrimSpace(value)
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
