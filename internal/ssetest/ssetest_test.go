package ssetest

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r *Reader) ([]Frame, error) {
	t.Helper()
	var out []Frame
	for range 100 {
		f, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	t.Fatal("more than 100 events")
	return nil, nil
}

func TestFrames(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []Frame
	}{
		{"LF", "id: 1\ndata: {}\n\nid: 2\ndata: []\n\n",
			[]Frame{{ID: "1", HasID: true, Data: []byte("{}")}, {ID: "2", HasID: true, Data: []byte("[]")}}},
		{"CRLF", "id: 7\r\ndata: x\r\n\r\n", []Frame{{ID: "7", HasID: true, Data: []byte("x")}}},
		{"no space after the colon", "id:3\ndata:x\n\n", []Frame{{ID: "3", HasID: true, Data: []byte("x")}}},
		{"one space only is dropped", "data:  x\n\n", []Frame{{Data: []byte(" x")}}},
		{"lines joined", "data: a\ndata: b\n\n", []Frame{{Data: []byte("a\nb")}}},
		{"comments and unknown fields skipped", ": keep-alive\n\nevent: message\nretry: 5\nfoo\ndata: x\n\n: keep-alive\n\n",
			[]Frame{{Data: []byte("x")}}},
		{"an event without data is not returned, nor is its id kept", "id: 4\n\ndata: x\n\n", []Frame{{Data: []byte("x")}}},
		{"empty data is an event", "data:\n\n", []Frame{{Data: []byte{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time too: a line may arrive in pieces.
			for _, r := range []io.Reader{strings.NewReader(tc.body), iotest.OneByteReader(strings.NewReader(tc.body))} {
				got, err := readAll(t, NewReader(r))
				if !errors.Is(err, io.EOF) {
					t.Fatalf("end: %v, want io.EOF", err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %d events %+v, want %+v", len(got), got, tc.want)
				}
				for i := range got {
					if got[i].ID != tc.want[i].ID || got[i].HasID != tc.want[i].HasID || string(got[i].Data) != string(tc.want[i].Data) {
						t.Errorf("event %d: %+v, want %+v", i, got[i], tc.want[i])
					}
				}
			}
		})
	}
}

// A stream cut inside an event is not a clean end.
func TestCutInsideAnEvent(t *testing.T) {
	for _, body := range []string{"data: x\n\ndata: y", "data: x\n\ndata: y\n", "data: x\n\nid: 3\n", "data: x\n\nda"} {
		got, err := readAll(t, NewReader(strings.NewReader(body)))
		if len(got) != 1 || !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			t.Errorf("%q: %d events, %v; want 1 and io.ErrUnexpectedEOF", body, len(got), err)
		}
	}
	// A read error comes back as it is.
	boom := errors.New("boom")
	_, err := NewReader(io.MultiReader(strings.NewReader("data: x\n"), iotest.ErrReader(boom))).Next()
	if !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
}

func TestComments(t *testing.T) {
	r := NewReader(strings.NewReader(": keep-alive\n\ndata: x\n\n: bye\n\n"))
	if _, err := readAll(t, r); !errors.Is(err, io.EOF) || r.Comments != nil {
		t.Fatalf("comments kept unasked: %q (%v)", r.Comments, err)
	}
	r = NewReader(strings.NewReader(": keep-alive\n\ndata: x\n\n: bye\n\n"))
	r.KeepComments = true
	if _, err := readAll(t, r); !errors.Is(err, io.EOF) || strings.Join(r.Comments, "|") != ": keep-alive|: bye" {
		t.Fatalf("comments %q (%v)", r.Comments, err)
	}
}

func TestMaxEvent(t *testing.T) {
	long := "data: " + strings.Repeat("x", 10_000) + "\n\n"
	r := NewReader(strings.NewReader(long))
	r.MaxEvent = 5000
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLong) {
		t.Fatalf("one long line: %v", err)
	}
	r = NewReader(strings.NewReader(strings.Repeat("data: "+strings.Repeat("x", 100)+"\n", 100) + "\n"))
	r.MaxEvent = 5000
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLong) {
		t.Fatalf("many lines: %v", err)
	}
	r = NewReader(strings.NewReader(long + long))
	if f, err := r.Next(); err != nil || len(f.Data) != 10_000 {
		t.Fatalf("within the default bound: %d bytes, %v", len(f.Data), err)
	}
	if f, err := r.Next(); err != nil || len(f.Data) != 10_000 {
		t.Fatalf("the next one: %d bytes, %v", len(f.Data), err)
	}
}

func TestSeq(t *testing.T) {
	if n, err := (Frame{ID: "42", HasID: true}).Seq(); n != 42 || err != nil {
		t.Errorf("42: %d %v", n, err)
	}
	for _, f := range []Frame{{}, {ID: "x", HasID: true}, {ID: "-1", HasID: true}, {HasID: true}} {
		if _, err := f.Seq(); err == nil {
			t.Errorf("%+v: no error", f)
		}
	}
}

func TestReadAll(t *testing.T) {
	fs, err := ReadAll(strings.NewReader("id: 1\ndata: a\n\n: keep-alive\n\ndata: b\n\n"))
	if err != nil || len(fs) != 2 || string(fs[0].Data) != "a" || fs[1].HasID {
		t.Fatalf("%+v, %v", fs, err)
	}
	fs, err = ReadAll(strings.NewReader("data: a\n\ndata: b"))
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(fs) != 1 {
		t.Fatalf("cut: %+v, %v", fs, err)
	}
}
