package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/taskstore"
)

// admin is the harness's own NATS connection to the cluster: it only
// reads (stream and consumer info, registry keys, task event logs) and
// never configures anything.
type admin struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func dialAdmin(urls []string) (*admin, error) {
	// Pings every second: a connection to a paused (SIGSTOPped) node is
	// given up in a few seconds, not after nats.go's default 2 minutes.
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Name("a2amesh-chaos-harness"),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.Timeout(2*time.Second),
		nats.RetryOnFailedConnect(true), nats.PingInterval(time.Second), nats.MaxPingsOutstanding(3))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &admin{nc: nc, js: js}, nil
}

func (a *admin) close() { a.nc.Close() }

// caughtUp reports nil when every stream of the account (the mesh's streams
// and KV buckets) and every durable consumer has a leader and all its
// replicas current and online; else what is not.
func (a *admin) caughtUp(ctx context.Context, replicas int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lister := a.js.ListStreams(ctx)
	var names []string
	n := 0
	for info := range lister.Info() {
		n++
		if err := replicasCurrent("stream "+info.Config.Name, info.Cluster, replicas); err != nil {
			return err
		}
		names = append(names, info.Config.Name)
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("list streams: %w", err)
	}
	if n == 0 {
		return errors.New("no streams yet")
	}
	for _, name := range names {
		s, err := a.js.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
		cl := s.ListConsumers(ctx)
		for ci := range cl.Info() {
			if ci.Config.Durable == "" {
				continue // ordered and other ephemeral consumers: R1, not replicated
			}
			want := replicas
			if ci.Config.Replicas > 0 {
				want = ci.Config.Replicas
			}
			if err := replicasCurrent("consumer "+name+"/"+ci.Name, ci.Cluster, want); err != nil {
				return err
			}
		}
		if err := cl.Err(); err != nil {
			return fmt.Errorf("consumers of %s: %w", name, err)
		}
	}
	return nil
}

func replicasCurrent(what string, ci *jetstream.ClusterInfo, want int) error {
	if want <= 1 {
		return nil
	}
	if ci == nil || ci.Leader == "" {
		return fmt.Errorf("%s: no leader", what)
	}
	if len(ci.Replicas)+1 != want {
		return fmt.Errorf("%s: leader %s and %d replicas, want %d in all", what, ci.Leader, len(ci.Replicas), want)
	}
	for _, p := range ci.Replicas {
		if !p.Current || p.Offline {
			return fmt.Errorf("%s: replica %s not current (offline %v, lag %d, last seen %v ago)", what, p.Name, p.Offline, p.Lag, p.Active.Round(time.Millisecond))
		}
	}
	return nil
}

// seesOffline reports whether some stream's cluster info, as the cluster
// answers it now, shows node as offline or behind: the rest of the
// cluster has noticed the node is cut off.
func (a *admin) seesOffline(ctx context.Context, node string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	lister := a.js.ListStreams(ctx)
	for info := range lister.Info() {
		ci := info.Cluster
		if ci == nil || ci.Leader == node {
			continue
		}
		for _, p := range ci.Replicas {
			if p.Name == node && (p.Offline || !p.Current || p.Active > 3*time.Second) {
				return true
			}
		}
	}
	return false
}

// waitCaughtUp polls caughtUp every 250ms until it holds or budget ends.
func (a *admin) waitCaughtUp(ctx context.Context, replicas int, budget time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(budget)
	var last error
	for i := 0; i < 100_000; i++ {
		if last = a.caughtUp(ctx, replicas); last == nil {
			return time.Since(start), nil
		}
		if ctx.Err() != nil {
			return time.Since(start), ctx.Err()
		}
		if time.Now().After(deadline) {
			break
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("cluster not caught up after %v: %v", budget.Round(time.Second), last)
}

// registryKeys lists the registry bucket's keys (<agent>.<instance>)
// from the subjects of its stream: one request, no consumer. A key
// deleted (a worker stopped cleanly) still shows until the bucket's
// MaxAge drops it; callers look for new keys, or count keys at start.
func (a *admin) registryKeys(ctx context.Context) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := a.js.Stream(ctx, "KV_"+bus.BucketRegistry)
	if err != nil {
		return nil, err
	}
	prefix := "$KV." + bus.BucketRegistry + "."
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for subj := range info.State.Subjects {
		keys[strings.TrimPrefix(subj, prefix)] = true
	}
	return keys, nil
}

// jetStreamReady waits until the cluster answers JetStream API requests
// (it has a meta leader).
func (a *admin) jetStreamReady(ctx context.Context, budget time.Duration) error {
	return pollUntil(ctx, budget, 100*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := a.js.AccountInfo(ctx)
		return err
	}, "JetStream of the cluster answering")
}

// logEntry is one entry of a task's event log.
type logEntry struct {
	Seq  uint64
	Run  string    // the worker run that wrote it (header A2a-Run), if any
	At   time.Time // when the stream stored it
	Resp a2a.StreamResponse
}

// streamed reports whether an SSE stream forwards this entry (the edge
// skips the creation entry and user turns, which are history).
func (e logEntry) streamed() bool {
	if e.Resp.Task != nil {
		return false
	}
	if e.Resp.Message != nil && e.Resp.Message.Role == a2a.RoleUser {
		return false
	}
	return true
}

func (e logEntry) state() a2a.TaskState {
	switch {
	case e.Resp.StatusUpdate != nil:
		return e.Resp.StatusUpdate.Status.State
	case e.Resp.Task != nil:
		return e.Resp.Task.Status.State
	}
	return ""
}

// taskLog reads task id's whole event log from the stream's leader, one
// message at a time ($JS.API.STREAM.MSG.GET with next_by_subj: no
// consumer, so it works even when the stream has no consumer to spare, and
// no direct get, which a lagging replica could answer). A message may hold
// a batch of events: each is one entry, its Seq the event's position
// (taskstore.Pos), the id streams give it.
func (a *admin) taskLog(ctx context.Context, id string) ([]logEntry, error) {
	subj, err := a.logSubject(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []logEntry
	next := uint64(1)
	for i := 0; i < 20_000; i++ {
		m, err := a.nextMsg(ctx, subj, next)
		if err != nil || m == nil {
			return out, err
		}
		hdr, err := m.header()
		if err != nil {
			return out, err
		}
		evs, err := taskstore.EventsOf(m.Seq, hdr, m.Data)
		if err != nil {
			return out, fmt.Errorf("message %d: %w", m.Seq, err)
		}
		run := hdr.Get(runHeader)
		for _, ev := range evs {
			out = append(out, logEntry{Seq: ev.Seq, Run: run, At: m.Time, Resp: *ev.Resp})
		}
		next = m.Seq + 1
	}
	return out, errors.New("log too long")
}

// logSubject is the subject of task id's log: computed from an id the
// mesh minted, else read from the task's alias (taskstore/ids.go).
func (a *admin) logSubject(ctx context.Context, id string) (string, error) {
	if subj, ok := taskstore.LogSubject(id); ok {
		return subj, nil
	}
	aliases, err := a.js.Stream(ctx, taskstore.StreamAliases)
	if err != nil {
		return "", fmt.Errorf("task %s: %w", id, err)
	}
	m, err := aliases.GetLastMsgForSubject(ctx, aliasPrefix+id)
	if err != nil {
		return "", fmt.Errorf("task %s: alias: %w", id, err)
	}
	subj := m.Header.Get(aliasHeader)
	if _, ok := taskstore.TaskIDOf(subj); !ok {
		return "", fmt.Errorf("task %s: alias names no log (%q)", id, subj)
	}
	return subj, nil
}

// rawMsg is a message of the log stream as $JS.API.STREAM.MSG.GET
// answers it.
type rawMsg struct {
	Seq  uint64    `json:"seq"`
	Hdrs []byte    `json:"hdrs"`
	Data []byte    `json:"data"`
	Time time.Time `json:"time"`
}

// header decodes the message's raw header block.
func (m *rawMsg) header() (nats.Header, error) {
	if len(m.Hdrs) == 0 {
		return nats.Header{}, nil
	}
	h, err := nats.DecodeHeadersMsg(m.Hdrs)
	if err != nil {
		return nil, fmt.Errorf("message %d: headers: %w", m.Seq, err)
	}
	return h, nil
}

// nextMsg reads, from the events stream's leader, the first message on
// subj at or after sequence seq (nil, nil: there is none).
func (a *admin) nextMsg(ctx context.Context, subj string, seq uint64) (*rawMsg, error) {
	req, _ := json.Marshal(map[string]any{"seq": seq, "next_by_subj": subj})
	var resp struct {
		Error *struct {
			Code    int    `json:"code"`
			ErrCode int    `json:"err_code"`
			Desc    string `json:"description"`
		} `json:"error"`
		Message *rawMsg `json:"message"`
	}
	var err error
	for try := 0; try < 5; try++ {
		var m *nats.Msg
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		m, err = a.nc.RequestWithContext(rctx, "$JS.API.STREAM.MSG.GET."+taskstore.StreamLog, req)
		cancel()
		if err == nil {
			resp.Error, resp.Message = nil, nil
			err = json.Unmarshal(m.Data, &resp)
		}
		if err == nil || ctx.Err() != nil {
			break
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		if resp.Error.ErrCode == 10037 { // no message found: the end of the log
			return nil, nil
		}
		return nil, fmt.Errorf("get message at or after %d: %d %s", seq, resp.Error.ErrCode, resp.Error.Desc)
	}
	if resp.Message == nil {
		return nil, errors.New("get message: empty answer")
	}
	return resp.Message, nil
}

// Headers of a task log's messages (taskstore/log.go, taskstore/tasks.go).
const (
	runHeader   = "A2a-Run"   // the worker run that wrote the message
	formHeader  = "A2a-Form"  // "c" the creation, "b" a batch, none: one event (a log written before batches)
	baseHeader  = "A2a-Base"  // a batch without a snapshot: the sequence of the last message with one
	agentHeader = "A2a-Agent" // a creation written before batches: the task's agent
	ownerHeader = "A2a-Owner"
	aliasHeader = "A2a-Alias" // an alias message (stream A2A_ALIASES): the subject of the task's log
)

// aliasPrefix is the subject prefix of the aliases of tasks whose ids the
// mesh did not mint (taskstore/names.go).
const aliasPrefix = "a2a.alias."

// snapshotOf returns the task a message of a task's log holds, if it
// holds one (nil otherwise): a creation's body is the task record, a
// batch's may carry it as "task"; of a log written before batches, the
// creation is the task event with the agent in a header.
func snapshotOf(hdr nats.Header, data []byte) (*taskstore.TaskRecord, error) {
	var rec taskstore.TaskRecord
	switch hdr.Get(formHeader) {
	case "c":
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, err
		}
	case "b":
		var b struct {
			Task json.RawMessage `json:"task"`
		}
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, err
		}
		if len(b.Task) == 0 || string(b.Task) == "null" {
			return nil, nil
		}
		if err := json.Unmarshal(b.Task, &rec); err != nil {
			return nil, err
		}
	default:
		var ev a2a.StreamResponse
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, err
		}
		if ev.Task == nil || hdr.Get(agentHeader) == "" {
			return nil, nil
		}
		rec = taskstore.TaskRecord{Task: *ev.Task, Agent: hdr.Get(agentHeader), Owner: hdr.Get(ownerHeader)}
	}
	return &rec, nil
}

// consumers counts the consumers of each stream.
func (a *admin) consumers(ctx context.Context) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out := map[string]int{}
	lister := a.js.ListStreams(ctx)
	for info := range lister.Info() {
		out[info.Config.Name] = info.State.Consumers
	}
	return out, lister.Err()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// scanTasks reads every task of the events stream with a consumer of its
// own that delivers each task log's last message: one pass however many
// tasks there are, where ListTasks reads the index and then each task. A
// last message holding a snapshot (the creation, every message that
// settles a turn, one every few events) is the task; the tasks whose last
// message holds none (still running) are folded afterwards from their
// last snapshot on, with leader reads. Callers read unfinished tasks
// again with GetTask.
func (a *admin) scanTasks(ctx context.Context, budget time.Duration) ([]taskstore.TaskRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	stream := taskstore.StreamLog
	cons, err := a.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		FilterSubject:     taskstore.LogSubjects,
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer on %s: %w", stream, err)
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = a.js.DeleteConsumer(dctx, stream, cons.CachedInfo().Name)
		dcancel()
	}()
	// running: tasks whose last message holds no snapshot.
	type running struct {
		id, subj   string
		last, base uint64
	}
	var todo []running
	want := cons.CachedInfo().NumPending
	var out []taskstore.TaskRecord
	read := uint64(0)
	for i := 0; i < 1_000_000 && read < want; i++ {
		batch, err := cons.FetchNoWait(1000)
		if err != nil {
			return out, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			read++
			id, ok := taskstore.TaskIDOf(m.Subject())
			if !ok {
				continue
			}
			rec, err := snapshotOf(m.Headers(), m.Data())
			if err != nil {
				return out, fmt.Errorf("%s: %w", m.Subject(), err)
			}
			if rec != nil {
				out = append(out, *rec)
				continue
			}
			meta, err := m.Metadata()
			if err != nil {
				return out, fmt.Errorf("%s: %w", m.Subject(), err)
			}
			base, _ := strconv.ParseUint(m.Headers().Get(baseHeader), 10, 64)
			todo = append(todo, running{id: id, subj: m.Subject(), last: meta.Sequence.Stream, base: base})
		}
		if err := batch.Error(); err != nil {
			return out, err
		}
		if got == 0 {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			sleepCtx(ctx, 50*time.Millisecond)
		}
	}
	if read < want {
		return out, fmt.Errorf("read %d of %d entries", read, want)
	}
	for _, r := range todo {
		rec, err := a.foldTask(ctx, r.id, r.subj, r.base, r.last)
		if err != nil {
			return out, fmt.Errorf("task %s: %w", r.id, err)
		}
		out = append(out, *rec)
	}
	return out, nil
}

// foldTask reads task id from its log's leader (subject subj): the first
// message holding a snapshot at or after sequence from (a batch's base),
// and the events of the messages after it up to sequence last folded onto
// its task. A
// log holding no snapshot there (its head aged out) gives a record with
// only the task's id, which no agent's check takes.
func (a *admin) foldTask(ctx context.Context, id, subj string, from, last uint64) (*taskstore.TaskRecord, error) {
	var rec *taskstore.TaskRecord
	next := max(from, 1)
	for i := 0; i < 20_000 && next <= last; i++ {
		m, err := a.nextMsg(ctx, subj, next)
		if err != nil {
			return nil, err
		}
		if m == nil || m.Seq > last {
			break
		}
		next = m.Seq + 1
		hdr, err := m.header()
		if err != nil {
			return nil, err
		}
		snap, err := snapshotOf(hdr, m.Data)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", m.Seq, err)
		}
		if snap != nil {
			rec = snap
			continue
		}
		if rec == nil {
			continue // before any snapshot: nothing to fold onto
		}
		evs, err := taskstore.EventsOf(m.Seq, hdr, m.Data)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", m.Seq, err)
		}
		for _, ev := range evs {
			rec.Task.Apply(ev.Resp)
		}
	}
	if rec == nil {
		return &taskstore.TaskRecord{Task: a2a.Task{ID: id}}, nil
	}
	return rec, nil
}
