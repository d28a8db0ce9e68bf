//go:build linux

package integration

// Disk full on a real file system: JetStream's data on a small tmpfs that
// a filler file then fills (what another process filling the disk does),
// so JetStream's writes fail with ENOSPC before its own store limit
// refuses them. These need root and mount(8): they run only with
// A2AMESH_TMPFS_TESTS=1 (and are skipped otherwise), each mounting its own
// tmpfs under the test's temp dir and unmounting it at the end.
//
//	sudo A2AMESH_TMPFS_TESTS=1 go test ./integration -run TestDiskFull -v

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/taskstore"
)

// mountTmpfs mounts a tmpfs of size (e.g. "64m") and returns its path; it
// is unmounted when the test ends (after everything started later stops).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Getenv("A2AMESH_TMPFS_TESTS") != "1" {
		t.Skip("a real full disk needs root and mount: set A2AMESH_TMPFS_TESTS=1 to run")
	}
	if os.Geteuid() != 0 {
		t.Fatal("A2AMESH_TMPFS_TESTS=1 asks for the real full-disk tests, but they need root to mount a tmpfs: run as root, or unset it")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount: %s", out)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk allocates a file taking all but leave bytes of dir's file
// system, and returns a func removing it.
func fillDisk(t *testing.T, dir string, leave int64) func() {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	// The mesh writes meanwhile: allocate what is free, less leave, in
	// steps, until less than a step would be left.
	const step = 1 << 20
	for i := 0; i < 10_000; i++ {
		var st syscall.Statfs_t
		require.NoError(t, syscall.Statfs(dir, &st))
		free := int64(st.Bavail) * int64(st.Bsize)
		if free-leave < step {
			break
		}
		fi, err := f.Stat()
		require.NoError(t, err)
		n := max(step, (free-leave)/2)
		if err := syscall.Fallocate(int(f.Fd()), 0, fi.Size(), n); err != nil && err != syscall.ENOSPC {
			require.NoError(t, err)
		}
	}
	return func() { require.NoError(t, os.Remove(path)) }
}

// filling sends blocking sends from a few clients until stopped and
// records every outcome.
type filling struct {
	m       *smallMesh
	text    string
	stop    atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	acked   map[string]string // task id -> messageId
	refused []sendResult
}

func startFilling(m *smallMesh, clients int, text string) *filling {
	f := &filling{m: m, text: text, acked: map[string]string{}}
	for c := 0; c < clients; c++ {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for i := 0; i < 5000 && !f.stop.Load(); i++ {
				mid := fmt.Sprintf("fill-%d-%d", c, i)
				r := m.send(mid, text)
				f.mu.Lock()
				if r.err == nil && r.code == 0 {
					f.acked[r.taskID] = mid
				} else {
					f.refused = append(f.refused, r)
				}
				f.mu.Unlock()
				if r.code != 0 || r.err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	return f
}

func (f *filling) counts() (acked, refused int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.acked), len(f.refused)
}

// finish stops the clients and waits for their last sends (bounded by the
// client's own timeout).
func (f *filling) finish(t *testing.T) {
	t.Helper()
	f.stop.Store(true)
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("senders still waiting 90s after space returned")
	}
}

// requireRefusalsBusy checks every refused send: -32000 (retry), never
// -32603 nor a transport error, and answered in bounded time. Writes that
// get no answer (a stream stopped by a write error) are retried through
// the failover budget, and a send makes more than one write, each with its
// own budget: up to 21s was seen; twice the budget is the bound.
func (f *filling) requireRefusalsBusy(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.refused {
		require.NoError(t, r.err, "a refused send")
		require.Equal(t, -32000, r.code, "refusal %q", r.message)
		require.Less(t, r.took, 2*bus.FailoverBudget+5*time.Second, "a refusal in bounded time: %+v", r)
	}
}

// requireAckedCompleted reads every acknowledged task: completed, with the
// text echoed back.
func (f *filling) requireAckedCompleted(t *testing.T) {
	t.Helper()
	for id, mid := range f.acked {
		state, text := f.m.getTask(t, id)
		require.Equal(t, "TASK_STATE_COMPLETED", state, "task %s (%s)", id, mid)
		require.Equal(t, f.text, text, "task %s's artifact", id)
	}
}

// One node: its disk fills, the streams written at that moment stop
// answering writes, sends are answered -32000 (never -32603, never past
// the failover budget), every acknowledged task stays readable; once the
// filler is removed the server restarts JetStream in-process, every
// acknowledged task is completed and sends work again.
func TestDiskFullSingleNode(t *testing.T) {
	dir := mountTmpfs(t, "64m")
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: filepath.Join(dir, "js"), DontListen: true, Logger: diskLogger()})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	m := startSmallMesh(t, srv.Connect, 1)
	m.hc.Timeout = 60 * time.Second

	text := strings.Repeat("s", 8<<10)
	f := startFilling(m, 2, text)
	time.Sleep(time.Second)
	free := fillDisk(t, dir, 256<<10)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, refused := f.counts(); refused >= 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no send refused 60s after the disk filled")
		time.Sleep(100 * time.Millisecond)
	}
	f.requireRefusalsBusy(t)
	acked, refused := f.counts()
	t.Logf("disk full: %d sends acknowledged, %d refused (first: %q)", acked, refused, f.refused[0].message)
	require.Positive(t, acked)

	free()
	deadline = time.Now().Add(30 * time.Second)
	for srv.JetStreamRestarts() == 0 {
		require.True(t, time.Now().Before(deadline), "JetStream not restarted after space returned")
		time.Sleep(100 * time.Millisecond)
	}
	f.finish(t)
	f.requireRefusalsBusy(t) // through the restart too
	f.requireAckedCompleted(t)
	r := m.send("after", "hello")
	require.NoError(t, r.err)
	require.Zero(t, r.code, "a send after recovery: %q", r.message)
	require.Equal(t, "TASK_STATE_COMPLETED", r.state)
}

// One node of three: its disk fills, nats-server disables JetStream on
// it, the other two carry on (every send acknowledged and completed);
// once the filler is removed the node restarts JetStream in-process and
// catches up with the others.
func TestDiskFullOneNodeOfThree(t *testing.T) {
	dir := mountTmpfs(t, "256m")
	const n = 3
	ports := make([]string, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ports[i] = ln.Addr().String()
		require.NoError(t, ln.Close())
	}
	srvs := make([]*natsnode.Server, n)
	errc := make(chan error, n)
	for i := range n {
		var routes []string
		for j, p := range ports {
			if j != i {
				routes = append(routes, "nats-route://"+p)
			}
		}
		data := t.TempDir()
		if i == 2 {
			data = filepath.Join(dir, "n2")
		}
		go func() {
			s, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: data, ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1,
				ClusterName: "diskfull", ClusterListen: ports[i], Routes: strings.Join(routes, ","), Logger: diskLogger()})
			srvs[i] = s
			errc <- err
		}()
	}
	for range n {
		require.NoError(t, <-errc)
	}
	t.Cleanup(func() {
		for _, s := range srvs {
			s.Shutdown()
		}
	})
	// The mesh reaches the cluster through n0 and n1 (the full node's
	// clients would be served too: core NATS still routes).
	urls := srvs[0].ClientURL() + "," + srvs[1].ClientURL()
	m := startSmallMesh(t, func(name string) (*nats.Conn, error) {
		return nats.Connect(urls, nats.Name(name), nats.MaxReconnects(-1))
	}, 3)
	m.hc.Timeout = 60 * time.Second

	text := strings.Repeat("c", 8<<10)
	f := startFilling(m, 2, text)
	time.Sleep(time.Second)
	free := fillDisk(t, dir, 256<<10)
	deadline := time.Now().Add(60 * time.Second)
	for srvs[2].JetStreamEnabled() {
		require.True(t, time.Now().Before(deadline), "n2 still runs JetStream 60s after its disk filled")
		time.Sleep(100 * time.Millisecond)
	}
	// The two others carry on (after electing leaders for what n2 led).
	before, _ := f.counts()
	deadline = time.Now().Add(bus.FailoverBudget + 5*time.Second)
	for {
		after, _ := f.counts()
		if after >= before+10 {
			break
		}
		require.True(t, time.Now().Before(deadline), "sends not acknowledged without n2 (%d, then %d)", before, after)
		time.Sleep(100 * time.Millisecond)
	}
	_, refused := f.counts()
	require.Zero(t, refused, "a send refused while two nodes of three could write")

	free()
	deadline = time.Now().Add(30 * time.Second)
	for srvs[2].JetStreamRestarts() == 0 {
		require.True(t, time.Now().Before(deadline), "n2's JetStream not restarted after space returned")
		time.Sleep(100 * time.Millisecond)
	}
	f.finish(t)
	_, refused = f.counts()
	require.Zero(t, refused, "a send refused")
	f.requireAckedCompleted(t)
	// n2 catches up: every stream's replicas current.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, name := range []string{taskstore.StreamLog, bus.StreamWork} {
		for {
			s, err := m.bus.Bus().JetStream().Stream(ctx, name)
			require.NoError(t, err)
			if ci := s.CachedInfo().Cluster; ci != nil && len(ci.Replicas) == 2 && ci.Replicas[0].Current && ci.Replicas[1].Current {
				break
			}
			require.NoError(t, ctx.Err(), "stream %s's replicas not current after n2 came back", name)
			time.Sleep(200 * time.Millisecond)
		}
	}
	t.Logf("%d sends acknowledged and completed", len(f.acked))
}
