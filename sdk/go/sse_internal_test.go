package tollgate

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// readEvents reads every event of body, returning the data texts and the error that ended the read.
func readEvents(body string) ([]string, error) {
	reader := newSSEReader(strings.NewReader(body))
	var data []string
	for {
		event, err := reader.next()
		if err != nil {
			return data, err
		}
		data = append(data, string(event.data))
	}
}

// The framing other servers and proxies use, beyond what tollgate itself writes: CRLF and CR line
// ends, comments (keep-alives), event names, data split over lines, no space after the colon.
func TestSSEFraming(t *testing.T) {
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"LF", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}},
		{"CRLF", "data: one\r\n\r\ndata: two\r\n\r\n", []string{"one", "two"}},
		{"CR", "data: one\r\rdata: two\r\r", []string{"one", "two"}},
		{"comments and names", ": keep-alive\n\nevent: message\ndata: x\n\n:\n", []string{"x"}},
		{"multi-line data", "data: first\ndata: second\n\n", []string{"first\nsecond"}},
		{"no space", "data:tight\n\n", []string{"tight"}},
		{"only the first space goes", "data:  two spaces\n\n", []string{" two spaces"}},
		{"id and retry ignored", "id: 7\nretry: 100\ndata: y\n\n", []string{"y"}},
	}
	for _, c := range cases {
		got, err := readEvents(c.body)
		if !errors.Is(err, io.EOF) || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: got %q, %v; want %q, EOF", c.name, got, err, c.want)
		}
	}
}

// A body that ends inside an event is a cut stream, not a clean end.
func TestSSECutInsideAnEvent(t *testing.T) {
	for _, body := range []string{"data: one\n\ndata: partial", "data: one\n\ndata: partial\n"} {
		got, err := readEvents(body)
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != 1 {
			t.Errorf("%q: got %q, %v; want one event then ErrUnexpectedEOF", body, got, err)
		}
	}
}

// A line that never ends stops at the bound instead of growing the buffer without limit.
func TestSSEEventBound(t *testing.T) {
	huge := "data: " + strings.Repeat("x", maxEventBytes+10)
	if _, err := readEvents(huge); !errors.Is(err, errEventTooLarge) {
		t.Fatalf("got %v, want errEventTooLarge", err)
	}
}
