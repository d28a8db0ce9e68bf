package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Role kinds of the fleet.
const (
	RoleNATS   = "nats"
	RoleEdge   = "edge"
	RoleWorker = "worker"
)

// spawner starts child processes from one goroutine locked to its OS
// thread for the harness's lifetime. On Linux a child gets SIGKILL when the
// thread that forked it dies (Pdeathsig): with every fork on this thread,
// that happens only when the harness is gone.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
	once sync.Once
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		for {
			select {
			case r := <-s.reqs:
				r.err <- r.cmd.Start()
			case <-s.done:
				return
			}
		}
	}()
	return s
}

func (s *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	select {
	case s.reqs <- r:
		return <-r.err
	case <-s.done:
		return errors.New("chaos: harness stopped")
	}
}

func (s *spawner) close() { s.once.Do(func() { close(s.done) }) }

// member is one role process slot of the fleet: it keeps its arguments
// and data directory, so a restart is the same process again.
type member struct {
	Name  string // nats-0, edge-1, worker-slow-0
	Role  string
	Agent string // workers
	args  []string
	env   []string
	bin   string
	log   *logSink

	// addresses: NATS client address, edge HTTP base URL
	clientAddr string
	routeAddr  string
	serverName string // NATS nodes: the server's name in the cluster
	baseURL    string

	mu     sync.Mutex
	cur    *proc
	starts int
	paused bool
}

// proc is one run of a member.
type proc struct {
	cmd      *exec.Cmd
	pid      int
	started  time.Time
	done     chan struct{}
	exitAt   time.Time
	exitErr  error
	expected bool // the harness killed or stopped it (guarded by member.mu)
}

// start spawns the member's process. onExit runs (in its own goroutine)
// when that process exits, with whether the harness caused it.
func (m *member) start(sp *spawner, onExit func(m *member, p *proc, expected bool)) (*proc, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur != nil {
		return nil, fmt.Errorf("chaos: %s already running (pid %d)", m.Name, m.cur.pid)
	}
	cmd := exec.Command(m.bin, m.args...)
	cmd.Env = append(roleEnv(), m.env...)
	cmd.SysProcAttr = sysProcAttr()
	// The pid is known only after Start: route output through a writer
	// that is told the pid before the first byte can arrive (the pipes
	// are read by exec's goroutines after Start returns).
	w := &pidWriter{sink: m.log}
	cmd.Stdout, cmd.Stderr = w, w
	if err := sp.start(cmd); err != nil {
		return nil, fmt.Errorf("chaos: start %s: %w", m.Name, err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), done: make(chan struct{})}
	w.set(p.pid)
	m.starts++
	m.cur = p
	m.paused = false
	m.log.note("start #%d of %s: pid %d: %s %s", m.starts, m.Name, p.pid, m.bin, strings.Join(m.args, " "))
	go func() {
		err := cmd.Wait()
		m.mu.Lock()
		p.exitAt, p.exitErr = time.Now(), err
		expected := p.expected
		if m.cur == p {
			m.cur = nil
		}
		m.mu.Unlock()
		close(p.done)
		how := "exit status 0"
		if err != nil {
			how = err.Error()
		}
		m.log.note("pid %d of %s exited (%s; caused by the harness: %v)", p.pid, m.Name, how, expected)
		if onExit != nil {
			onExit(m, p, expected)
		}
	}()
	return p, nil
}

// current returns the running process, or nil.
func (m *member) current() *proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

// kill SIGKILLs the running process and waits (bounded) for it to be
// gone; it returns the process killed, nil when none was running.
func (m *member) kill() (*proc, error) {
	m.mu.Lock()
	p := m.cur
	if p == nil {
		m.mu.Unlock()
		return nil, nil
	}
	p.expected = true
	err := p.cmd.Process.Kill()
	m.mu.Unlock()
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return p, err
	}
	select {
	case <-p.done:
		return p, nil
	case <-time.After(10 * time.Second):
		return p, fmt.Errorf("chaos: %s (pid %d) still there 10s after SIGKILL", m.Name, p.pid)
	}
}

// stop asks the running process to end (SIGTERM), then kills it after
// grace.
func (m *member) stop(grace time.Duration) {
	m.mu.Lock()
	p := m.cur
	if p == nil {
		m.mu.Unlock()
		return
	}
	p.expected = true
	if m.paused {
		_ = resumeProcess(p.cmd.Process)
		m.paused = false
	}
	_ = terminateProcess(p.cmd.Process)
	m.mu.Unlock()
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// pause stops the process with SIGSTOP; resume continues it.
func (m *member) pause() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return fmt.Errorf("chaos: %s is not running", m.Name)
	}
	if err := pauseProcess(m.cur.cmd.Process); err != nil {
		return err
	}
	m.paused = true
	m.log.note("SIGSTOP pid %d of %s", m.cur.pid, m.Name)
	return nil
}

func (m *member) resume() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil || !m.paused {
		return nil
	}
	m.paused = false
	m.log.note("SIGCONT pid %d of %s", m.cur.pid, m.Name)
	return resumeProcess(m.cur.cmd.Process)
}

// pidWriter stamps lines with a pid set right after the process started.
type pidWriter struct {
	mu   sync.Mutex
	sink *logSink
	pid  int
}

func (w *pidWriter) set(pid int) {
	w.mu.Lock()
	w.pid = pid
	w.mu.Unlock()
}

func (w *pidWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	pid := w.pid
	w.mu.Unlock()
	return w.sink.writer(pid).Write(p)
}

// roleEnv is the harness's environment without the A2AMESH_ and NATS_
// settings that would change the roles' flags behind the harness's back.
func roleEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "A2AMESH_") || strings.HasPrefix(kv, "NATS_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
