package tollgate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// chatPath is the OpenAI-compatible chat endpoint.
const chatPath = "/v1/chat/completions"

// ChatService calls POST /v1/chat/completions with the client's virtual key.
type ChatService struct{ client *Client }

// Create asks for a whole answer (stream false, whatever req.Stream says).
func (s *ChatService) Create(ctx context.Context, req ChatCompletionRequest) (*ChatCompletion, error) {
	req.Stream = false
	req.StreamOptions = nil
	resp, err := s.client.send(ctx, call{method: http.MethodPost, path: chatPath, body: req, token: s.client.apiKey})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("tollgate: reading the chat answer: %w", err)
	}
	var completion ChatCompletion
	if err := json.Unmarshal(data, &completion); err != nil {
		return nil, fmt.Errorf("tollgate: decoding the chat answer: %w", err)
	}
	completion.RequestID = resp.Header.Get("x-request-id")
	return &completion, nil
}

// Stream asks for a streamed answer (stream true) and returns once the gateway has answered with
// its status: an error status is an *APIError here, before any chunk. Read the chunks with Recv and
// always Close the stream. Cancelling ctx ends the stream (and the gateway charges what was used).
func (s *ChatService) Stream(ctx context.Context, req ChatCompletionRequest) (*ChatStream, error) {
	req.Stream = true
	resp, err := s.client.send(ctx, call{
		method: http.MethodPost, path: chatPath, body: req, token: s.client.apiKey, accept: "text/event-stream",
	})
	if err != nil {
		return nil, err
	}
	contentType := resp.Header.Get("content-type")
	if !strings.HasPrefix(strings.ToLower(contentType), "text/event-stream") {
		resp.Body.Close()
		return nil, errorf("a stream was asked for but the answer is %q, not text/event-stream", contentType)
	}
	return newChatStream(resp), nil
}
