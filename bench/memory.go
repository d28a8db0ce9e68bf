package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/taskstore"
)

// The memory benchmark: many tasks through a mesh whose --max-tasks is
// below them, to see that the cost of a mesh stays flat once retention
// holds. It starts the mesh as processes of one a2amesh binary — `nats`,
// `edge` and `worker --agent echo` (RolesSplit), or one `dev` process
// (RolesDev) — drives blocking 1.0 SendMessage calls to echo, each with a
// fresh messageId, and at each level of tasks sent reads every process's
// resident memory (under load, after an idle pause, and after a forced GC
// that returns freed memory to the OS, where the process serves
// --pprof-listen), the disk the NATS data directory takes, and what the
// JetStream streams hold.

// Roles a memory run can start.
const (
	RolesSplit = "split" // a2amesh nats, a2amesh edge, a2amesh worker --agent echo
	RolesDev   = "dev"   // one a2amesh dev process
)

// Bounds of a memory run.
const (
	MaxMemoryTasks  = 10_000_000
	maxMemoryLevels = 16
	// fillRounds bounds the load runs that fill up to one level (each at
	// most MaxDuration).
	fillRounds = 1000
)

// MemoryOptions configures a memory run.
type MemoryOptions struct {
	// Levels are the numbers of tasks sent (in all, increasing) at which
	// the processes are measured.
	Levels []int64
	// MaxTasks is the mesh's --max-tasks (default 100,000).
	MaxTasks int64
	// Clients is how many blocking senders load the mesh (default 64).
	Clients int
	// Roles is RolesSplit (the default) or RolesDev.
	Roles string
	// Bin is the a2amesh binary the processes are started from.
	Bin string
	// DataDir holds the NATS data (default: a new directory under
	// TempDir, removed at the end).
	DataDir, TempDir string
	// Idle is how long the mesh rests after a level's load before the
	// idle figures are read (default 10s).
	Idle time.Duration
	// Settle bounds the wait, after a level's load, for the trimmer to
	// bring the retained tasks to 90% of MaxTasks (default 60s).
	Settle time.Duration
	// HeapProfileDir, when set, receives a heap profile of each process
	// serving --pprof-listen at each level (<role>-<tasks>.pb.gz).
	HeapProfileDir string
	// Progress, if set, is told what is about to happen.
	Progress func(msg string)
	// Measured, if set, gets each level as soon as it is measured.
	Measured func(MemoryLevel)
}

func (o *MemoryOptions) normalize() error {
	if o.MaxTasks == 0 {
		o.MaxTasks = 100_000
	}
	if o.Clients == 0 {
		o.Clients = 64
	}
	if o.Roles == "" {
		o.Roles = RolesSplit
	}
	if o.Idle == 0 {
		o.Idle = 10 * time.Second
	}
	if o.Settle == 0 {
		o.Settle = time.Minute
	}
	switch {
	case len(o.Levels) == 0 || len(o.Levels) > maxMemoryLevels:
		return fmt.Errorf("bench: 1 to %d levels of tasks, got %d", maxMemoryLevels, len(o.Levels))
	case o.MaxTasks < 10 || o.MaxTasks > MaxMemoryTasks:
		return fmt.Errorf("bench: max tasks %d not in [10, %d]", o.MaxTasks, MaxMemoryTasks)
	case o.Clients < 1 || o.Clients > MaxConcurrency:
		return fmt.Errorf("bench: clients %d not in [1, %d]", o.Clients, MaxConcurrency)
	case o.Roles != RolesSplit && o.Roles != RolesDev:
		return fmt.Errorf("bench: roles %q: want %q or %q", o.Roles, RolesSplit, RolesDev)
	case o.Bin == "":
		return errors.New("bench: memory needs an a2amesh binary")
	case o.Idle < 0 || o.Idle > 10*time.Minute || o.Settle < 0 || o.Settle > 10*time.Minute:
		return errors.New("bench: idle and settle must be in [0, 10m]")
	}
	for i, l := range o.Levels {
		if l < 1 || l > MaxMemoryTasks || i > 0 && l <= o.Levels[i-1] {
			return fmt.Errorf("bench: levels must increase, each in [1, %d]", MaxMemoryTasks)
		}
	}
	return nil
}

// ProcMemory is one process's memory at one level.
type ProcMemory struct {
	Role string
	// Load is the highest RSS sampled while the level's tasks were sent;
	// Idle the RSS after the idle pause; GC the RSS after a forced GC
	// that returned freed memory to the OS (0: the process serves no
	// profiles); HWM the process's high-water mark so far.
	Load, Idle, GC, HWM uint64
	// The Go runtime's figures after the forced GC (runtime.MemStats):
	// the live heap, the heap's spans in use, and all the runtime holds
	// from the OS. Zero without profiles.
	HeapAlloc, HeapInuse, Sys uint64
}

// StreamState is what a stream held at one level.
type StreamState struct {
	Name                string
	Msgs, Bytes         uint64
	Subjects, Deleted   int
	FirstSeq, LastSeq   uint64
	Consumers           int
	MaxMsgs             int64
	Missing, Unreadable bool
}

// MemoryLevel is what a memory run measured at one level.
type MemoryLevel struct {
	// Sent is the tasks sent so far (completed and failed sends), Tasks
	// the completed ones; Fill is the load run of this level.
	Sent, Tasks int64
	Fill        Result
	// Retained is the task logs the events stream holds (one per retained
	// task); Settled how long the trimmer took after the load to bring
	// them to 90% of MaxTasks (or Settle, when it did not).
	Retained uint64
	Settled  time.Duration
	// DataDir is the disk the NATS data directory takes (allocated
	// blocks); DataFiles its files.
	DataDir   uint64
	DataFiles int
	Procs     []ProcMemory
	Streams   []StreamState
	// Profiles are the heap profiles written at this level.
	Profiles []string
}

// Proc returns the level's figures of role (zero if not measured).
func (l MemoryLevel) Proc(role string) ProcMemory {
	for _, p := range l.Procs {
		if p.Role == role {
			return p
		}
	}
	return ProcMemory{}
}

// Stream returns the level's figures of stream name.
func (l MemoryLevel) Stream(name string) StreamState {
	for _, s := range l.Streams {
		if s.Name == name {
			return s
		}
	}
	return StreamState{Name: name, Missing: true}
}

// MemoryResult is a memory run's levels, the first (Sent 0) measured
// before any task was sent.
type MemoryResult struct {
	Roles    string
	MaxTasks int64
	Clients  int
	Levels   []MemoryLevel
}

// memStreams are the streams a level reports, in order: the task log
// (which the listing reads too: there is no index), the work queue and
// the push configs.
var memStreams = []string{taskstore.StreamLog, bus.StreamWork, "KV_" + bus.BucketPush}

// memProc is a process of the mesh under measurement.
type memProc struct {
	role  string
	p     *Proc
	pprof string // base URL of its profiles ("": none)
}

type memoryMesh struct {
	procs   []*memProc
	url     string
	natsURL string
	dataDir string // what to measure
	rmDir   string // what to remove at the end ("": keep)
}

func (m *memoryMesh) close() {
	for i := len(m.procs) - 1; i >= 0; i-- {
		m.procs[i].p.Stop(30 * time.Second)
	}
	if m.rmDir != "" {
		_ = os.RemoveAll(m.rmDir)
	}
}

func startMemoryMesh(ctx context.Context, o MemoryOptions) (_ *memoryMesh, err error) {
	m := &memoryMesh{}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	root := o.DataDir
	if root == "" {
		if root, err = os.MkdirTemp(o.TempDir, "a2amesh-bench-memory-*"); err != nil {
			return nil, err
		}
		m.rmDir = root
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	maxTasks := strconv.FormatInt(o.MaxTasks, 10)
	natsAddr, err := FreePort()
	if err != nil {
		return nil, err
	}
	m.natsURL = "nats://" + natsAddr
	start := func(role string, args ...string) (*memProc, error) {
		mp := &memProc{role: role}
		if role != RolesDev { // dev serves no profiles
			addr, err := FreePort()
			if err != nil {
				return nil, err
			}
			args = append(args, "--pprof-listen", addr)
			mp.pprof = "http://" + addr
		}
		p, err := StartProc(o.Bin, append(args, "--log-level", "warn"), nil)
		if err != nil {
			return nil, err
		}
		mp.p = p
		m.procs = append(m.procs, mp)
		return mp, nil
	}
	if o.Roles == RolesDev {
		m.dataDir = filepath.Join(root, "dev")
		addr, err := FreePort()
		if err != nil {
			return nil, err
		}
		m.url = "http://" + addr
		d, err := start("dev", "dev", "--data", m.dataDir, "--listen", addr, "--grpc-listen", "off",
			"--nats-listen", natsAddr, "--max-tasks", maxTasks)
		if err != nil {
			return nil, err
		}
		if err := waitHTTP(ctx, d.p, m.url+"/agents/echo/.well-known/agent-card.json", 2*time.Minute); err != nil {
			return nil, err
		}
		return m, nil
	}
	m.dataDir = filepath.Join(root, "nats")
	n, err := start("nats", "nats", "--data", m.dataDir, "--listen", natsAddr)
	if err != nil {
		return nil, err
	}
	if err := waitTCP(ctx, n.p, natsAddr, time.Minute); err != nil {
		return nil, err
	}
	edgeAddr, err := FreePort()
	if err != nil {
		return nil, err
	}
	m.url = "http://" + edgeAddr
	e, err := start("edge", "edge", "--nats", m.natsURL, "--listen", edgeAddr, "--max-tasks", maxTasks)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, e.p, m.url+"/agents", time.Minute); err != nil {
		return nil, err
	}
	w, err := start("worker", "worker", "--nats", m.natsURL, "--agent", "echo", "--max-tasks", maxTasks)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, w.p, m.url+"/agents/echo/.well-known/agent-card.json", time.Minute); err != nil {
		return nil, err
	}
	return m, nil
}

// RunMemory runs the memory benchmark and returns a level for each of
// o.Levels, after one measured before any task was sent.
func RunMemory(ctx context.Context, o MemoryOptions) (MemoryResult, error) {
	if err := o.normalize(); err != nil {
		return MemoryResult{}, err
	}
	progress := func(f string, a ...any) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf(f, a...))
		}
	}
	if o.HeapProfileDir != "" {
		if err := os.MkdirAll(o.HeapProfileDir, 0o755); err != nil {
			return MemoryResult{}, err
		}
	}
	progress("starting the mesh (%s, --max-tasks %d)", o.Roles, o.MaxTasks)
	m, err := startMemoryMesh(ctx, o)
	if err != nil {
		return MemoryResult{}, err
	}
	defer m.close()
	nc, err := nats.Connect(m.natsURL, nats.Name("a2amesh-bench-memory"), nats.MaxReconnects(-1))
	if err != nil {
		return MemoryResult{}, fmt.Errorf("bench: connecting to NATS: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return MemoryResult{}, err
	}
	hc := NewClient(o.Clients)
	defer hc.CloseIdleConnections()
	pc := &http.Client{Timeout: 2 * time.Minute}
	defer pc.CloseIdleConnections()
	endpoint := m.url + "/agents/echo"

	res := MemoryResult{Roles: o.Roles, MaxTasks: o.MaxTasks, Clients: o.Clients}
	var sent, done int64
	for _, level := range append([]int64{0}, o.Levels...) {
		lv := MemoryLevel{}
		s := startSampler(m.procs)
		if n := level - sent; n > 0 {
			progress("sending %d tasks (to %d in all)", n, level)
			fill, err := fillTasks(ctx, hc, endpoint, o.Clients, n)
			lv.Fill = fill
			sent += fill.Tasks + fill.Errors
			done += fill.Tasks
			if err != nil {
				s.stop()
				return res, err
			}
		}
		load := s.stop()
		lv.Sent, lv.Tasks = sent, done
		// Let the trimmer catch up, then rest.
		t0 := time.Now()
		low := uint64(max(0, o.MaxTasks-max(1, o.MaxTasks/10)))
		for i := 0; i < 100_000; i++ {
			st := streamState(ctx, js, taskstore.StreamLog)
			if uint64(st.Subjects) <= low || time.Since(t0) >= o.Settle || ctx.Err() != nil {
				break
			}
			sleepCtx(ctx, 250*time.Millisecond)
		}
		lv.Settled = time.Since(t0)
		progress("at %d tasks sent: resting %v", sent, o.Idle)
		sleepCtx(ctx, o.Idle)
		if err := ctx.Err(); err != nil {
			return res, err
		}
		for _, mp := range m.procs {
			pm := ProcMemory{Role: mp.role, Load: load[mp.role]}
			pm.Idle, pm.HWM = procRSS(mp.p)
			pm.Load = max(pm.Load, pm.Idle)
			if mp.pprof != "" {
				path := ""
				if o.HeapProfileDir != "" {
					path = filepath.Join(o.HeapProfileDir, fmt.Sprintf("%s-%s-%d.pb.gz", o.Roles, mp.role, sent))
				}
				if err := forceGC(ctx, pc, mp.pprof, path, &pm); err != nil {
					return res, fmt.Errorf("bench: %s's profiles: %w", mp.role, err)
				}
				if path != "" {
					lv.Profiles = append(lv.Profiles, path)
				}
				pm.GC, _ = procRSS(mp.p)
			}
			lv.Procs = append(lv.Procs, pm)
		}
		for _, name := range memStreams {
			lv.Streams = append(lv.Streams, streamState(ctx, js, name))
		}
		lv.Retained = uint64(lv.Stream(taskstore.StreamLog).Subjects) // one log per task
		lv.DataDir, lv.DataFiles = diskUse(m.dataDir)
		res.Levels = append(res.Levels, lv)
		if o.Measured != nil {
			o.Measured(lv)
		}
		progress("at %d tasks sent: %d retained, data dir %.1f MiB", sent, lv.Retained, float64(lv.DataDir)/(1<<20))
	}
	return res, nil
}

// fillTasks sends n tasks (blocking SendMessage, fresh messageIds) with
// clients senders, in load runs of at most MaxDuration each; failed sends
// count towards n.
func fillTasks(ctx context.Context, hc *http.Client, endpoint string, clients int, n int64) (Result, error) {
	var total Result
	start := time.Now()
	for round := 0; round < fillRounds && total.Tasks+total.Errors < n; round++ {
		r, err := Run(ctx, Options{URL: endpoint, Method: MethodSend10, Concurrency: clients,
			Duration: MaxDuration, MaxRequests: n - total.Tasks - total.Errors, Client: hc})
		if err != nil {
			return total, err
		}
		total.Tasks += r.Tasks
		total.Errors += r.Errors
		for k, v := range r.ErrorSamples {
			if total.ErrorSamples == nil {
				total.ErrorSamples = map[string]int64{}
			}
			if _, ok := total.ErrorSamples[k]; ok || len(total.ErrorSamples) < maxErrorSamples {
				total.ErrorSamples[k] += v
			}
		}
		// Percentiles of whole runs are not merged; keep the last run's
		// (a fill is mostly one run).
		total.P50, total.P99, total.Mean = r.P50, r.P99, r.Mean
		if r.Tasks+r.Errors == 0 {
			return total, errors.New("bench: a load run sent nothing")
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
	total.Elapsed = time.Since(start)
	if s := total.Elapsed.Seconds(); s > 0 {
		total.Throughput = float64(total.Tasks) / s
	}
	return total, nil
}

// sampler reads the processes' RSS every second and keeps each one's
// highest.
type sampler struct {
	mu   sync.Mutex
	peak map[string]uint64
	quit chan struct{}
	done chan struct{}
}

func startSampler(procs []*memProc) *sampler {
	s := &sampler{peak: map[string]uint64{}, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			s.mu.Lock()
			for _, mp := range procs {
				rss, _ := procRSS(mp.p)
				s.peak[mp.role] = max(s.peak[mp.role], rss)
			}
			s.mu.Unlock()
			select {
			case <-s.quit:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() map[string]uint64 {
	close(s.quit)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// forceGC asks a process's profile endpoint (base) for a heap profile
// after a GC (written to path unless ""), reads the runtime's figures
// from the same, then has it return freed memory to the OS.
func forceGC(ctx context.Context, hc *http.Client, base, path string, pm *ProcMemory) error {
	get := func(url string, w io.Writer) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		_, err = io.Copy(w, io.LimitReader(resp.Body, 1<<30))
		return err
	}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = get(base+"/debug/pprof/heap?gc=1", f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	var text strings.Builder
	if err := get(base+"/debug/pprof/heap?gc=1&debug=1", &text); err != nil {
		return err
	}
	pm.HeapAlloc, pm.HeapInuse, pm.Sys = memStat(text.String(), "HeapAlloc"), memStat(text.String(), "HeapInuse"), memStat(text.String(), "Sys")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/debug/free-os-memory", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("POST /debug/free-os-memory: %s", resp.Status)
	}
	return nil
}

// memStat reads "# name = value" from a debug=1 heap profile (the
// runtime.MemStats it ends with).
func memStat(text, name string) uint64 {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	prefix := "# " + name + " = "
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			n, _ := strconv.ParseUint(strings.Fields(v + " 0")[0], 10, 64)
			return n
		}
	}
	return 0
}

// streamState reads a stream's info (Missing when there is no such
// stream, Unreadable when it could not be read).
func streamState(ctx context.Context, js jetstream.JetStream, name string) StreamState {
	st := StreamState{Name: name}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := js.Stream(ictx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st.Missing = true
		return st
	}
	if err != nil {
		st.Unreadable = true
		return st
	}
	info := s.CachedInfo()
	st.Msgs, st.Bytes = info.State.Msgs, info.State.Bytes
	st.Subjects, st.Deleted = int(info.State.NumSubjects), info.State.NumDeleted
	st.FirstSeq, st.LastSeq = info.State.FirstSeq, info.State.LastSeq
	st.Consumers, st.MaxMsgs = info.State.Consumers, info.Config.MaxMsgs
	return st
}

// diskUse is the disk the files under dir take (their allocated blocks),
// and how many there are.
func diskUse(dir string) (bytes uint64, files int) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files++
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			bytes += uint64(st.Blocks) * 512
		} else {
			bytes += uint64(info.Size())
		}
		return nil
	})
	return bytes, files
}
