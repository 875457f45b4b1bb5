// Package tollgate is a Go client for the tollgate LLM gateway.
//
// It speaks two of the gateway's surfaces:
//
//   - the OpenAI-compatible chat endpoint (POST /v1/chat/completions), whole answers and
//     server-sent-event streams, with tools and tool calls, authenticated by a virtual key;
//   - the management API under /api (virtual keys, teams, providers, routes, the request log
//     and usage), authenticated by the admin key.
//
// Every call takes a context.Context, and every error the gateway answers is an *APIError
// carrying its HTTP status, type, code, param and message. The package uses the standard
// library only.
package tollgate
