// Package ssetest reads Server-Sent Events frame by frame, strictly, for
// the code that checks the mesh's streams: the chaos harness, the streams
// benchmark and the tests. It hands back each event's own id and raw data
// and tells a stream the server ended between events from one cut inside
// an event; what the data means is the caller's to decode.
//
// It is not the client's parser (client/stream.go): that one is lenient,
// as a client should be (a lone CR ends a line, an event cut at the end of
// the stream is delivered when it decodes, a bare result is accepted), and
// it decodes the data into a2a types, hiding what a check looks at.
package ssetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// DefaultMaxEvent bounds one event's lines, fields included, unless
// Reader.MaxEvent says otherwise.
const DefaultMaxEvent = 16 << 20

// ErrEventTooLong is returned by Next for an event longer than MaxEvent.
var ErrEventTooLong = errors.New("ssetest: SSE event too long")

// Frame is one event: the fields of the lines between two blank lines.
type Frame struct {
	// ID is the value of the event's own id field ("" when it has none;
	// the last one when it has several). Unlike a browser's last event ID
	// it does not carry over from the event before.
	ID string
	// HasID reports whether the event had an id field.
	HasID bool
	// Data is the event's data lines joined by "\n".
	Data []byte
}

// Seq is the event's id as the mesh writes it: a decimal event-log
// position. An event without an id is an error.
func (f Frame) Seq() (uint64, error) {
	if !f.HasID {
		return 0, errors.New("ssetest: SSE event without an id")
	}
	n, err := strconv.ParseUint(f.ID, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ssetest: bad SSE id %q", f.ID)
	}
	return n, nil
}

// Reader reads the events of one stream. Lines end in LF or CRLF (what
// the edge writes); comments (": keep-alive") are skipped, "event",
// "retry" and unknown fields ignored, and an event with no data line is
// not returned.
type Reader struct {
	br *bufio.Reader
	// MaxEvent bounds one event's lines in bytes; 0: DefaultMaxEvent.
	MaxEvent int
	// KeepComments keeps the comment lines read in Comments.
	KeepComments bool
	// Comments are the comment lines read so far, as they came
	// (": keep-alive"), when KeepComments is set.
	Comments []string
}

// NewReader reads events from r, buffering it.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReader(r)} }

// Next returns the next event with data. It returns io.EOF when the stream
// ended between two events, an error wrapping io.ErrUnexpectedEOF when it
// ended inside one (a line, or fields without the blank line closing
// them), ErrEventTooLong for an event over MaxEvent, and a read error as
// it came.
func (r *Reader) Next() (Frame, error) {
	max := r.MaxEvent
	if max <= 0 {
		max = DefaultMaxEvent
	}
	var f Frame
	var data []byte
	hasData, inEvent, size := false, false, 0
	for {
		line, err := r.line(max - size)
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(line) == 0 && !inEvent {
					return Frame{}, io.EOF
				}
				return Frame{}, fmt.Errorf("ssetest: stream ended inside an event (%q): %w", trunc(line), io.ErrUnexpectedEOF)
			}
			return Frame{}, err
		}
		size += len(line) + 1
		switch {
		case len(line) == 0:
			if hasData {
				f.Data = data
				return f, nil
			}
			f, inEvent, size = Frame{}, false, 0 // an event without data is not dispatched
			continue
		case line[0] == ':':
			if r.KeepComments {
				r.Comments = append(r.Comments, string(line))
			}
			continue
		}
		inEvent = true
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], bytes.TrimPrefix(line[i+1:], []byte(" "))
		}
		switch string(field) {
		case "id":
			f.ID, f.HasID = string(value), true
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
	}
}

// ReadAll reads the events of r to the end of the stream. The error is
// nil when the stream ended between two events, else what ended it (see
// Reader.Next); the events before it are returned either way.
func ReadAll(r io.Reader) ([]Frame, error) {
	sr := NewReader(r)
	var out []Frame
	for {
		f, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

// line reads one line of at most max bytes, without its line ending; it
// is valid until the next read. At the end of the stream it returns what
// it read with io.EOF.
func (r *Reader) line(max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 { // +2: the line ending
			return nil, ErrEventTooLong
		}
		if err == nil && line == nil {
			line = chunk // the whole line in the buffer: no copy
		} else {
			line = append(line, chunk...)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line[:len(line)-1], []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
