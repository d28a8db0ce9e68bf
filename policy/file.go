package policy

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// maxFileBytes bounds a policy file.
const maxFileBytes = 1 << 20

// File is a policy kept from a file: read at start (an unreadable or
// unparsable file is an error: the edge does not start), then read again
// when its content changes (Watch) or on Reload (SIGHUP). A file that
// no longer parses keeps the last good policy, and says why in the log.
// A nil *File is no policy: everything is allowed.
type File struct {
	path string
	log  *slog.Logger
	cur  atomic.Pointer[Policy]

	mu  sync.Mutex
	sum [sha256.Size]byte // of the content last read, good or bad
}

// Load reads and parses the policy file at path.
func Load(path string, log *slog.Logger) (*File, error) {
	if log == nil {
		log = slog.Default()
	}
	f := &File{path: path, log: log}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.cur.Store(p)
	f.sum = sha256.Sum256(data)
	return f, nil
}

func readFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("policy: read %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("policy: %s is larger than %d bytes", path, maxFileBytes)
	}
	return data, nil
}

// Policy is the policy in force (nil for a nil File: allow all).
func (f *File) Policy() *Policy {
	if f == nil {
		return nil
	}
	return f.cur.Load()
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Reload reads the file again. A change that parses replaces the policy;
// one that does not keeps the policy in force, is logged, and is
// returned. An unchanged file is not parsed again.
func (f *File) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := readFile(f.path)
	if err != nil {
		f.log.Error("policy: cannot read the policy file; keeping the policy in force", "path", f.path, "err", err)
		return err
	}
	sum := sha256.Sum256(data)
	if sum == f.sum {
		return nil
	}
	f.sum = sum
	p, err := Parse(string(data))
	if err != nil {
		f.log.Error("policy: the changed policy file does not parse; keeping the policy in force", "path", f.path, "err", err)
		return err
	}
	f.cur.Store(p)
	f.log.Info("policy reloaded", "path", f.path, "rules", p.Rules())
	return nil
}

// Watch reads the file every `every` (2s when 0) and applies its changes,
// until ctx ends.
func (f *File) Watch(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = f.Reload()
		}
	}
}
