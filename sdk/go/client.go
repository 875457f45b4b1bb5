package tollgate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// Client talks to one tollgate gateway. It is safe for concurrent use.
//
// The admin key (WithAdminKey) authenticates the management API under /api; the virtual key
// (WithAPIKey) authenticates model calls under /v1. A client may hold both, or only the one it needs.
type Client struct {
	baseURL    string
	adminKey   string
	apiKey     string
	httpClient *http.Client
	headers    http.Header

	// Chat calls POST /v1/chat/completions.
	Chat *ChatService
	// Keys manages virtual keys (/api/keys).
	Keys *KeysService
	// Teams manages teams (/api/teams).
	Teams *TeamsService
	// Providers manages providers and their keys (/api/providers).
	Providers *ProvidersService
	// Routes manages routes (/api/routes).
	Routes *RoutesService
	// Logs reads the request log (/api/logs).
	Logs *LogsService
	// Usage reads usage rollups (/api/usage).
	Usage *UsageService
}

// Option configures a Client.
type Option func(*Client)

// WithAdminKey sets the admin key (TOLLGATE_ADMIN_KEY) sent as a bearer token on /api calls. Without
// one, the gateway answers /api only to clients on its own machine.
func WithAdminKey(key string) Option {
	return func(c *Client) { c.adminKey = key }
}

// WithAPIKey sets the virtual key (tg-...) sent as a bearer token on model calls.
func WithAPIKey(key string) Option {
	return func(c *Client) { c.apiKey = key }
}

// WithHTTPClient replaces http.DefaultClient, e.g. for a proxy, TLS settings or an overall timeout.
// Streams stay open as long as the answer lasts, so prefer contexts over http.Client.Timeout.
func WithHTTPClient(httpClient *http.Client) Option {
	return func(c *Client) {
		if httpClient != nil {
			c.httpClient = httpClient
		}
	}
}

// WithHeader adds a header to every request, e.g. x-tollgate-provider-key to bring your own provider key.
func WithHeader(name, value string) Option {
	return func(c *Client) { c.headers.Add(name, value) }
}

// NewClient returns a client for the gateway at baseURL, e.g. "http://localhost:8080". A trailing
// "/v1" (the base URL OpenAI SDKs use) is accepted and dropped, since the client addresses both /v1
// and /api itself.
func NewClient(baseURL string, options ...Option) (*Client, error) {
	parsed, err := url.Parse(baseURL)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return nil, fmt.Errorf("tollgate: base URL must be an http:// or https:// URL, got %q", baseURL)
	}
	base := strings.TrimRight(baseURL, "/")
	base = strings.TrimSuffix(base, "/v1")
	c := &Client{baseURL: base, httpClient: http.DefaultClient, headers: http.Header{}}
	for _, option := range options {
		option(c)
	}
	c.Chat = &ChatService{client: c}
	c.Keys = &KeysService{client: c}
	c.Teams = &TeamsService{client: c}
	c.Providers = &ProvidersService{client: c}
	c.Routes = &RoutesService{client: c}
	c.Logs = &LogsService{client: c}
	c.Usage = &UsageService{client: c}
	return c, nil
}

// BaseURL is the gateway's root URL as the client addresses it.
func (c *Client) BaseURL() string { return c.baseURL }

// String describes the client without its secrets: the gateway's URL (any password in it redacted),
// whether an admin key and a virtual key are set, and the names of the added headers (their values may
// be keys too). Printing a client with %v, %+v or %s, as a log line or a panic does, shows this.
func (c Client) String() string {
	var b strings.Builder
	b.WriteString("tollgate.Client{")
	base := c.baseURL
	if parsed, err := url.Parse(base); err == nil {
		base = parsed.Redacted()
	}
	b.WriteString(base)
	if c.adminKey != "" {
		b.WriteString(", admin key set")
	}
	if c.apiKey != "" {
		b.WriteString(", virtual key set")
	}
	if len(c.headers) > 0 {
		names := make([]string, 0, len(c.headers))
		for name := range c.headers {
			names = append(names, name)
		}
		sort.Strings(names)
		b.WriteString(", headers ")
		b.WriteString(strings.Join(names, " "))
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so %#v shows no secret either.
func (c Client) GoString() string { return c.String() }

// call describes one HTTP exchange with the gateway.
type call struct {
	method string
	path   string
	query  url.Values
	body   any
	// token is the bearer token: the admin key for /api, the virtual key for /v1.
	token  string
	accept string
}

// send performs the call and returns the response when its status is 2xx; any other status is read
// and returned as an *APIError, with the body closed.
func (c *Client) send(ctx context.Context, req call) (*http.Response, error) {
	target := c.baseURL + req.path
	if len(req.query) > 0 {
		target += "?" + req.query.Encode()
	}
	var body io.Reader
	if req.body != nil {
		encoded, err := json.Marshal(req.body)
		if err != nil {
			return nil, fmt.Errorf("tollgate: encoding the %s %s body: %w", req.method, req.path, err)
		}
		body = bytes.NewReader(encoded)
	}
	httpReq, err := http.NewRequestWithContext(ctx, req.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("tollgate: %w", err)
	}
	for name, values := range c.headers {
		httpReq.Header[name] = append([]string(nil), values...)
	}
	if req.body != nil {
		httpReq.Header.Set("Content-Type", "application/json")
	}
	if req.accept != "" {
		httpReq.Header.Set("Accept", req.accept)
	} else {
		httpReq.Header.Set("Accept", "application/json")
	}
	if req.token != "" {
		httpReq.Header.Set("Authorization", "Bearer "+req.token)
	}
	resp, err := c.httpClient.Do(httpReq)
	if err != nil {
		return nil, fmt.Errorf("tollgate: %s %s: %w", req.method, req.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, errorFromResponse(resp)
	}
	return resp, nil
}

// admin performs a management API call and decodes a JSON answer into out (nil: the body is
// discarded). It returns the HTTP status, which tells apart answers such as 204 and 200 on delete.
func (c *Client) admin(ctx context.Context, method, path string, query url.Values, body, out any) (int, error) {
	resp, err := c.send(ctx, call{method: method, path: path, query: query, body: body, token: c.adminKey})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("tollgate: reading the %s %s answer: %w", method, path, err)
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return resp.StatusCode, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("tollgate: decoding the %s %s answer: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// pathEscape escapes one path segment (an id or a name), so "/" in a name stays inside its segment.
func pathEscape(segment string) string {
	return url.PathEscape(segment)
}
