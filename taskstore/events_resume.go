package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/nats-io/nats.go"
)

// LastEventSeq returns the position (Pos) of the last event in task id's log (0
// when the log is empty or gone). A stream uses it to tell a quiet task
// from a reader stalled by a failover (events in the log beyond the last
// one read mean the reader is stuck, and a new one resumes after it), and
// from a JetStream that does not answer at all.
//
// It is a leader read (the stream's message-get API, not a direct get
// that any replica may answer): it fails while the events stream has no
// leader, which is what the caller wants to know, and it never answers
// from a replica that is behind.
func (b *Store) LastEventSeq(ctx context.Context, id string) (uint64, error) {
	if !bus.ValidToken(id) {
		return 0, nil
	}
	subj, err := b.subject(ctx, id)
	if errors.Is(err, ErrTaskNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("bus: last event of %s: %w", id, err)
	}
	req, err := json.Marshal(map[string]string{"last_by_subj": subj})
	if err != nil {
		return 0, err
	}
	msg, err := b.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+StreamLog, req)
	if err != nil {
		return 0, fmt.Errorf("bus: last event of %s: %w", id, err)
	}
	var resp struct {
		Message *struct {
			Seq  uint64 `json:"seq"`
			Hdrs []byte `json:"hdrs"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, fmt.Errorf("bus: last event of %s: %w", id, err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == 404:
		return 0, nil // no message: an empty or expired log
	case resp.Error != nil:
		return 0, fmt.Errorf("bus: last event of %s: %s (%d)", id, resp.Error.Description, resp.Error.ErrCode)
	case resp.Message == nil:
		return 0, fmt.Errorf("bus: last event of %s: empty answer", id)
	}
	n := 1
	if len(resp.Message.Hdrs) > 0 {
		if h, err := nats.DecodeHeadersMsg(resp.Message.Hdrs); err == nil {
			n = countOf(h)
		}
	}
	return Pos(resp.Message.Seq, n-1), nil
}

// Tuning of the consumer that reads the log for streams (fanout.go).
const (
	// followHeartbeat is the pull heartbeat: two missed ones end the
	// consumer's reader (its server is gone).
	followHeartbeat = time.Second
	// followInactive lets the server remove a consumer its reader left
	// without deleting it.
	followInactive = time.Minute
)

// errFollowGap: a message of a consumer that reads the log did not arrive.
var errFollowGap = errors.New("a delivery was lost")
