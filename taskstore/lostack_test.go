package taskstore_test

// A write whose ack is lost (the server stored it, the answer never came
// back, as when a leader dies between the two) is retried by the bus; the
// retry must be recognised as the same write, not stored a second time:
// appends carry a Nats-Msg-Id of their own, work items the turn's.
//
// The lost ack is real: the bus talks to a real NATS server through a TCP
// proxy on loopback that holds the server's answers from the moment the
// client publishes the write until the client publishes it again.

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/taskstore"
)

// ackLoser forwards a NATS connection. Armed with a subject, it holds
// everything the server sends once the client publishes to that subject,
// and lets it go when the client publishes to it again (the retry).
type ackLoser struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	pattern  []byte // "PUB <subject> " or "HPUB <subject> "
	seen     int    // publishes to the armed subject
	gate     chan struct{}
	held     bool
	heldFor  time.Duration
	heldFrom time.Time
}

func startAckLoser(t *testing.T, target string) *ackLoser {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &ackLoser{ln: ln, target: target, gate: make(chan struct{})}
	close(p.gate)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go p.clientToServer(c, s)
			go p.serverToClient(s, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); p.open() })
	return p
}

func (p *ackLoser) URL() string { return "nats://" + p.ln.Addr().String() }

// arm makes the next publish to subject lose its answers until the retry.
func (p *ackLoser) arm(subject string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pattern, p.seen = []byte(" "+subject+" "), 0
}

func (p *ackLoser) open() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.held = false
		p.heldFor = time.Since(p.heldFrom)
		close(p.gate)
	}
}

func (p *ackLoser) publishes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// clientToServer forwards, counting publishes to the armed subject: the
// first closes the gate on the way back, the second opens it. A publish
// line is counted in the read that ends it; the bytes after the last
// newline are kept for the next read, so a line split across reads is
// counted once.
func (p *ackLoser) clientToServer(src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 64<<10)
	var tail []byte
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunk := append(tail, buf[:n]...)
			p.mu.Lock()
			for _, op := range []string{"\nPUB", "\nHPUB"} {
				if p.pattern == nil {
					break
				}
				needle := append([]byte(op), p.pattern...)
				for i := 0; ; {
					j := bytes.Index(chunk[i:], needle)
					if j < 0 || bytes.IndexByte(chunk[i+j+1:], '\n') < 0 {
						break // none, or its line is not complete yet
					}
					i += j + 1
					p.seen++
					switch p.seen {
					case 1:
						p.held, p.heldFrom, p.gate = true, time.Now(), make(chan struct{})
					case 2:
						if p.held {
							p.held, p.heldFor = false, time.Since(p.heldFrom)
							close(p.gate)
						}
						p.pattern = nil
					}
					if p.pattern == nil {
						break
					}
				}
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
				chunk = chunk[i:]
			}
			if len(chunk) > 512 {
				chunk = chunk[len(chunk)-512:]
			}
			tail = append([]byte(nil), chunk...)
		}
		if err != nil {
			return
		}
	}
}

// serverToClient forwards, waiting while the gate is held.
func (p *ackLoser) serverToClient(src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func lostAckBus(t *testing.T) (*taskstore.Store, *ackLoser) {
	t.Helper()
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), Host: "127.0.0.1", Port: -1})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	p := startAckLoser(t, srv.ClientURL()[len("nats://"):])
	nc, err := nats.Connect(p.URL(), nats.Name("lost-ack"))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bb, err := bus.Open(ctx, nc, bus.Config{})
	require.NoError(t, err)
	b, err := taskstore.Open(ctx, bb)
	require.NoError(t, err)
	return b, p
}

// TestAppendWithLostAckIsStoredOnce: an artifact chunk appended while
// its ack is lost is in the log once.
func TestAppendWithLostAckIsStoredOnce(t *testing.T) {
	b, p := lostAckBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := taskstore.MintTaskID("", "ctx", "echo", "lost-ack-append")
	rec, err := b.CreateTask(ctx, &taskstore.TaskRecord{Agent: "echo",
		Task: a2a.Task{ID: id, ContextID: "ctx", Status: a2a.TaskStatus{State: a2a.StateSubmitted}}})
	require.NoError(t, err)

	var mutations atomic.Int64
	subj, _ := taskstore.LogSubject(id)
	p.arm(subj)
	_, _, err = b.AppendTask(ctx, id, rec, func(*taskstore.TaskRecord) (*a2a.StreamResponse, error) {
		mutations.Add(1)
		return &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: id, ContextID: "ctx", Append: true,
			Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("chunk")}}}}, nil
	}, taskstore.AppendOptions{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, p.publishes(), 2, "the append was not retried: the test did not lose its ack")
	t.Logf("the ack was held %v; the append was published %d times; the mutation ran %d times", p.heldFor.Round(time.Millisecond), p.publishes(), mutations.Load())

	events := logEvents(t, b, id)
	artifacts := 0
	for _, ev := range events {
		if ev.ArtifactUpdate != nil {
			artifacts++
		}
	}
	assert.Equal(t, 1, artifacts, "artifact events in the log after an append whose ack was lost (%d events)", len(events))
	got, err := b.LoadTask(ctx, id)
	require.NoError(t, err)
	require.Len(t, got.Task.Artifacts, 1)
	assert.Len(t, got.Task.Artifacts[0].Parts, 1, "the chunk is in the artifact once")
}

// TestEnqueueWithLostAckIsQueuedOnce: a work item enqueued while its ack
// is lost is queued once.
func TestEnqueueWithLostAckIsQueuedOnce(t *testing.T) {
	b, p := lostAckBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const id = "lost-ack-enqueue"
	msg := a2a.Message{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}
	p.arm(bus.WorkSubject("echo", id))
	err := taskstore.Enqueue(ctx, b.Bus(), &taskstore.WorkItem{TaskID: id, Agent: "echo", Message: msg, Enqueued: a2a.Now()}, bus.WorkMsgID(id, msg.MessageID), nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, p.publishes(), 2, "the enqueue was not retried: the test did not lose its ack")
	t.Logf("the ack was held %v; the work item was published %d times", p.heldFor.Round(time.Millisecond), p.publishes())

	s, err := b.Bus().JetStream().Stream(ctx, bus.StreamWork)
	require.NoError(t, err)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(bus.WorkSubject("echo", id)))
	require.NoError(t, err)
	assert.EqualValues(t, 1, info.State.Subjects[bus.WorkSubject("echo", id)], "work items queued for the turn after an enqueue whose ack was lost")
}

// logEvents reads task id's whole log.
func logEvents(t *testing.T, b *taskstore.Store, id string) []*a2a.StreamResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, _, err := b.TaskLog(ctx, id, 0, 1000)
	require.NoError(t, err)
	var out []*a2a.StreamResponse
	for _, ev := range events {
		out = append(out, ev.Resp)
	}
	return out
}
