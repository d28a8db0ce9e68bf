package bus

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Dead letters: work items no worker could process, kept in StreamDead
// under one subject per agent (DeadSubject) for Retention, at most
// 100,000 over all agents. Each carries why (A2a-Reason) and the stream
// sequence of the same agent's letter before it (A2a-Prev-Dead, 0 for
// none): an agent's letters form a chain from the newest back, so that
// RecentDeadLetters reads the newest few with one get each, however many
// letters the stream holds and however they interleave.

// Headers of a dead letter.
const (
	hdrDeadReason = "A2a-Reason"
	hdrDeadPrev   = "A2a-Prev-Dead"
)

// deadChainTries bounds the appends that find another letter of the same
// agent appended between reading the newest and appending after it (each
// try after a lost race waits up to deadChainJitter, so that writers
// racing for one agent spread out); the last try appends without the
// check (the chain then skips a letter, which is all a lost race costs).
const (
	deadChainTries  = 16
	deadChainJitter = 2 * time.Millisecond
)

// DeadLetter records a work item of agent that could not be processed,
// and why.
func (b *Bus) DeadLetter(ctx context.Context, agent string, data []byte, reason string) error {
	msg := &nats.Msg{Subject: DeadSubject(agent), Data: data, Header: nats.Header{}}
	msg.Header.Set(hdrDeadReason, reason)
	id := jetstream.WithMsgID("d-" + uuid.NewString())
	for try := 1; ; try++ {
		prev, err := b.lastDeadSeq(ctx, agent)
		if err != nil {
			// The letter matters more than its link: record it unchained.
			msg.Header.Set(hdrDeadPrev, "0")
			_, err = b.Publish(ctx, msg, id)
			return err
		}
		msg.Header.Set(hdrDeadPrev, strconv.FormatUint(prev, 10))
		// The client writes an expectation into the message's headers:
		// the last try's must not carry an earlier one.
		msg.Header.Del(jetstream.ExpectedLastSubjSeqHeader)
		opts := []jetstream.PublishOpt{id}
		if try < deadChainTries {
			opts = append(opts, jetstream.WithExpectLastSequencePerSubject(prev))
		}
		_, err = b.Publish(ctx, msg, opts...)
		if err == nil || try >= deadChainTries || !IsWrongLastSeq(err) {
			return err
		}
		if !Sleep(ctx, time.Duration(rand.Int64N(int64(deadChainJitter)))) {
			return ctx.Err()
		}
	}
}

// lastDeadSeq is the stream sequence of agent's newest dead letter, 0
// when it has none.
func (b *Bus) lastDeadSeq(ctx context.Context, agent string) (uint64, error) {
	m, err := Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
		return b.deadStream.GetLastMsgForSubject(c, DeadSubject(agent))
	})
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return m.Sequence, nil
}

// DeadLetterInfo is what RecentDeadLetters tells of one dead letter.
type DeadLetterInfo struct {
	// Seq is its position in StreamDead.
	Seq uint64
	// Time is when it was recorded.
	Time time.Time
	// Reason is why no worker could process it ("max deliveries",
	// "undecodable", "task not found").
	Reason string
	// TaskID is the task of the work item, "" when the item does not
	// decode.
	TaskID string
}

// MaxRecentDeadLetters bounds RecentDeadLetters' n.
const MaxRecentDeadLetters = 20

// RecentDeadLetters reads agent's newest n dead letters (at most
// MaxRecentDeadLetters), newest first: one get for the newest, then one
// for each letter before it along the chain (A2a-Prev-Dead). It stops
// early where the chain ends: at the agent's first letter, at one aged
// out of the stream, or at one recorded before letters were chained.
func (b *Bus) RecentDeadLetters(ctx context.Context, agent string, n int) ([]DeadLetterInfo, error) {
	n = min(n, MaxRecentDeadLetters)
	subject := DeadSubject(agent)
	var out []DeadLetterInfo
	for seq := uint64(0); len(out) < n; {
		m, err := Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
			if seq == 0 {
				return b.deadStream.GetLastMsgForSubject(c, subject)
			}
			return b.deadStream.GetMsg(c, seq)
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return out, err
		}
		if m.Subject != subject {
			break // not the agent's: a chain broken by a purge
		}
		info := DeadLetterInfo{Seq: m.Sequence, Time: m.Time, Reason: m.Header.Get(hdrDeadReason)}
		var item struct {
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal(m.Data, &item) == nil {
			info.TaskID = item.TaskID
		}
		out = append(out, info)
		prev, err := strconv.ParseUint(m.Header.Get(hdrDeadPrev), 10, 64)
		if err != nil || prev == 0 || prev >= m.Sequence {
			break
		}
		seq = prev
	}
	return out, nil
}
