package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process of the benchmark (an a2amesh role), with the
// tail of its output kept for error messages.
type Proc struct {
	cmd     *exec.Cmd
	out     *tailBuffer
	done    chan struct{}
	exitAt  time.Time
	waitErr error
	// Started is when the process was spawned (just before fork/exec).
	Started time.Time
}

// StartProc starts path with args, its environment plus env.
func StartProc(path string, args, env []string) (*Proc, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &tailBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	p := &Proc{cmd: cmd, out: out, done: make(chan struct{})}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", path, err)
	}
	go func() {
		err := cmd.Wait()
		p.exitAt = time.Now()
		p.waitErr = err
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Terminate sends SIGTERM (a graceful stop).
func (p *Proc) Terminate() error { return p.cmd.Process.Signal(syscall.SIGTERM) }

// Kill sends SIGKILL (a crash: nothing runs after it).
func (p *Proc) Kill() error { return p.cmd.Process.Kill() }

// Exited is closed when the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.done }

// Wait waits up to timeout for the process to exit, then kills it; it
// returns when it exited and how (exec.Cmd.Wait's error: nil for exit
// status 0).
func (p *Proc) Wait(timeout time.Duration) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p.exitAt, p.waitErr
	case <-t.C:
	}
	_ = p.Kill()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	return p.exitAt, fmt.Errorf("bench: %s did not exit within %v; killed", p.cmd.Path, timeout)
}

// Stop terminates the process and waits up to timeout before killing it.
func (p *Proc) Stop(timeout time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Terminate()
	_, _ = p.Wait(timeout)
}

// Output is the tail of what the process wrote.
func (p *Proc) Output() string { return p.out.String() }

// RSS returns the process's resident set size and its high-water mark in
// bytes, from /proc (Linux only).
func (p *Proc) RSS() (rss, hwm uint64, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			hwm = n << 10
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("bench: no VmRSS in /proc status")
	}
	return rss, hwm, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FreePort returns a loopback address with a port that was free a moment
// ago (for a child process to listen on).
func FreePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr, nil
}

// ProcMesh is an a2amesh nats process and an a2amesh edge process, both
// started from one binary, on loopback ports.
type ProcMesh struct {
	NATSURL, EdgeURL string
	NATS, Edge       *Proc
	dir              string
}

// StartProcMesh starts `bin nats` (JetStream files in a new directory
// under tempDir) and `bin edge` against it, and returns once the edge
// answers.
func StartProcMesh(ctx context.Context, bin, tempDir string) (_ *ProcMesh, err error) {
	m := &ProcMesh{}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	if m.dir, err = os.MkdirTemp(tempDir, "a2amesh-bench-nats-*"); err != nil {
		return nil, err
	}
	natsAddr, err := FreePort()
	if err != nil {
		return nil, err
	}
	if m.NATS, err = StartProc(bin, []string{"nats", "--data", m.dir, "--listen", natsAddr, "--log-level", "warn"}, nil); err != nil {
		return nil, err
	}
	m.NATSURL = "nats://" + natsAddr
	if err := waitTCP(ctx, m.NATS, natsAddr, 30*time.Second); err != nil {
		return nil, err
	}
	// The registry bench measures when an edge drops a crashed worker,
	// not the grace that keeps its agent routable afterwards.
	if m.Edge, m.EdgeURL, err = StartEdgeProc(ctx, bin, m.NATSURL, "--lost-grace", "0"); err != nil {
		return nil, err
	}
	return m, nil
}

// StartEdgeProc starts `bin edge` against natsURL on a free loopback port
// and returns once it answers GET /agents (NATS may start later: the edge
// waits for it).
func StartEdgeProc(ctx context.Context, bin, natsURL string, extra ...string) (*Proc, string, error) {
	addr, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	p, err := StartProc(bin, append([]string{"edge", "--nats", natsURL, "--listen", addr, "--log-level", "warn"}, extra...), nil)
	if err != nil {
		return nil, "", err
	}
	url := "http://" + addr
	if err := waitHTTP(ctx, p, url+"/agents", 30*time.Second); err != nil {
		p.Stop(5 * time.Second)
		return nil, "", err
	}
	return p, url, nil
}

// waitTCP waits until addr accepts connections, p exits, or timeout passes.
func waitTCP(ctx context.Context, p *Proc, addr string, timeout time.Duration) error {
	return waitFor(ctx, p, timeout, "nothing listening at "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// waitHTTP polls url until it answers 200, p exits, or timeout passes.
func waitHTTP(ctx context.Context, p *Proc, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	return waitFor(ctx, p, timeout, url+" not answering", func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitFor polls ready every 20ms until it holds, p exits, ctx ends or
// timeout passes; what names the failure.
func waitFor(ctx context.Context, p *Proc, timeout time.Duration, what string, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for attempt := 0; attempt < 100_000; attempt++ {
		select {
		case <-p.Exited():
			return fmt.Errorf("bench: %s exited: %s", p.cmd.Path, p.Output())
		default:
		}
		if ready() {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			break
		}
		sleepCtx(ctx, 20*time.Millisecond)
	}
	return fmt.Errorf("bench: %s after %v: %s", what, timeout, p.Output())
}

// Close stops the edge, then NATS, and removes NATS's files.
func (m *ProcMesh) Close() {
	if m.Edge != nil {
		m.Edge.Stop(10 * time.Second)
	}
	if m.NATS != nil {
		m.NATS.Stop(10 * time.Second)
	}
	if m.dir != "" {
		_ = os.RemoveAll(m.dir)
	}
}
