package tollgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// doneMarker ends an OpenAI stream: "data: [DONE]".
var doneMarker = []byte("[DONE]")

// ChatStream is a streamed answer. Recv returns chunks until io.EOF; Completion assembles what has
// arrived into a whole ChatCompletion (text, tool calls with their arguments, usage).
//
//	stream, err := client.Chat.Stream(ctx, req)
//	if err != nil { ... }
//	defer stream.Close()
//	for {
//		chunk, err := stream.Recv()
//		if errors.Is(err, io.EOF) { break }
//		if err != nil { ... }
//		...
//	}
type ChatStream struct {
	response  *http.Response
	events    *sseReader
	requestID string
	assembled ChatAccumulator
	// err is sticky: once the stream ended or failed, every Recv returns the same error.
	err       error
	closeOnce sync.Once
	// closed is set by Close (which may run on another goroutine, to stop a Recv).
	closed atomic.Bool
}

// errStreamClosed is what Recv returns once the caller closed the stream before its end.
var errStreamClosed = errors.New("tollgate: the stream was closed")

func newChatStream(resp *http.Response) *ChatStream {
	return &ChatStream{response: resp, events: newSSEReader(resp.Body), requestID: resp.Header.Get("x-request-id")}
}

// RequestID is the answer's x-request-id header: the id of its request-log entry.
func (s *ChatStream) RequestID() string { return s.requestID }

// Header is the answer's headers (x-ratelimit-*, x-request-id, ...).
func (s *ChatStream) Header() http.Header { return s.response.Header }

// Recv returns the next chunk. It returns io.EOF after "data: [DONE]"; an *APIError when the
// gateway reported an error inside the stream (an upstream that failed after the answer started);
// and an error wrapping io.ErrUnexpectedEOF when the stream ended without [DONE], so a cut stream
// never looks complete.
func (s *ChatStream) Recv() (*ChatCompletionChunk, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.closed.Load() {
		// What was read ahead into the buffer is not handed out after Close: the stream ended there.
		s.err = errStreamClosed
		return nil, s.err
	}
	chunk, err := s.recv()
	if err != nil {
		s.err = err
		s.Close()
		return nil, err
	}
	s.assembled.Add(chunk)
	return chunk, nil
}

func (s *ChatStream) recv() (*ChatCompletionChunk, error) {
	event, err := s.events.next()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("tollgate: the stream ended without [DONE]: %w", io.ErrUnexpectedEOF)
	}
	if err != nil {
		return nil, fmt.Errorf("tollgate: reading the stream: %w", err)
	}
	data := bytes.TrimSpace(event.data)
	if bytes.Equal(data, doneMarker) {
		return nil, io.EOF
	}
	if apiErr, ok := streamError(data, s.requestID); ok {
		return nil, apiErr
	}
	var chunk ChatCompletionChunk
	if err := json.Unmarshal(data, &chunk); err != nil {
		return nil, fmt.Errorf("tollgate: a stream event is not a chat.completion.chunk: %w", err)
	}
	return &chunk, nil
}

// Completion is everything received so far put together as one answer. After io.EOF it is the
// whole answer, as Create would have returned it.
func (s *ChatStream) Completion() *ChatCompletion {
	completion := s.assembled.Completion()
	completion.RequestID = s.requestID
	return completion
}

// Close ends the stream, releasing the connection; closing before the end cancels the request, and
// Recv then returns an error (not chunks already read ahead). It is safe to call more than once, and
// from another goroutine than Recv's.
func (s *ChatStream) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		err = s.response.Body.Close()
	})
	return err
}
