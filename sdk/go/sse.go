package tollgate

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxEventBytes bounds one server-sent event, as the gateway bounds what it reads from upstreams
// (settings.max_response_bytes, 32 MiB by default): a stream that never ends a line cannot make the
// client buffer without limit.
const maxEventBytes = 32 << 20

// errEventTooLarge is returned for an event past maxEventBytes.
var errEventTooLarge = errors.New("a server-sent event is larger than 32 MiB")

// sseEvent is one server-sent event: its name (empty for the default "message") and its data,
// the data lines joined with "\n".
type sseEvent struct {
	name string
	data []byte
}

// sseReader reads events from a text/event-stream body, following the WHATWG parsing rules the
// gateway's answers rely on: "data:" lines (one optional space after the colon) accumulate, a blank
// line ends the event, ":" lines are comments (keep-alives), and LF, CRLF or CR end lines.
type sseReader struct {
	reader *bufio.Reader
	// pendingCR is set when a line ended with CR, so an LF that follows is not a second, empty line.
	pendingCR bool
}

func newSSEReader(body io.Reader) *sseReader {
	return &sseReader{reader: bufio.NewReaderSize(body, 64<<10)}
}

// next returns the next event with data. At the end of the body it returns io.EOF, or
// io.ErrUnexpectedEOF when the body ended inside an event.
func (r *sseReader) next() (sseEvent, error) {
	var event sseEvent
	hasData := false
	size := 0
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				return sseEvent{}, io.ErrUnexpectedEOF
			}
			return sseEvent{}, err
		}
		size += len(line)
		if size > maxEventBytes {
			return sseEvent{}, errEventTooLarge
		}
		if len(line) == 0 {
			if hasData {
				return event, nil
			}
			// An event without data (a lone "event:" or comments) is not dispatched.
			event, size = sseEvent{}, 0
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if colon := bytes.IndexByte(line, ':'); colon >= 0 {
			field, value = line[:colon], line[colon+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "data":
			if hasData {
				event.data = append(event.data, '\n')
			}
			event.data = append(event.data, value...)
			hasData = true
		case "event":
			event.name = string(value)
		}
		// id and retry are reconnection hints; a chat stream is never resumed, so they are ignored.
	}
}

// readLine returns one line without its terminator (LF, CRLF or CR). It scans what is buffered
// for a line end rather than reading byte by byte, so long events cost one copy.
func (r *sseReader) readLine() ([]byte, error) {
	var line []byte
	for {
		if _, err := r.reader.Peek(1); err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				// A last line without a terminator still counts, but the event it is in never ended.
				return line, nil
			}
			return nil, err
		}
		window, _ := r.reader.Peek(r.reader.Buffered())
		if r.pendingCR {
			r.pendingCR = false
			if window[0] == '\n' {
				_, _ = r.reader.Discard(1)
				continue
			}
		}
		end := bytes.IndexAny(window, "\r\n")
		if end < 0 {
			line = append(line, window...)
			_, _ = r.reader.Discard(len(window))
			if len(line) > maxEventBytes {
				return nil, errEventTooLarge
			}
			continue
		}
		line = append(line, window[:end]...)
		r.pendingCR = window[end] == '\r'
		_, _ = r.reader.Discard(end + 1)
		return line, nil
	}
}
