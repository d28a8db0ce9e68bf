package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// RunAndReport is a run as `a2amesh bench chaos` makes it: Run, its
// report printed to w, and each role's output tail saved into logDir (by
// default only when the run failed or broke a promise, into a new
// temporary directory; cfg.Logf says where). It returns Run's error, or
// an error for a run cut short or one with violations.
func RunAndReport(ctx context.Context, cfg Config, w io.Writer, logDir string) error {
	rep, err := Run(ctx, cfg)
	if rep != nil {
		rep.Print(w)
	}
	if err != nil {
		rep.SaveTails(logDir, true, cfg.logf)
		return err
	}
	verr := rep.Err()
	rep.SaveTails(logDir, verr != nil, cfg.logf)
	if rep.Aborted {
		return errors.New("chaos run aborted")
	}
	if verr != nil {
		return fmt.Errorf("chaos: %d violations (listed above)", rep.total())
	}
	return nil
}

// SaveTails saves each role's output tail as <role>.log into dir or,
// when dir is "" and wanted, a new temporary directory, and says where
// (or what failed) through logf.
func (r *Report) SaveTails(dir string, wanted bool, logf func(format string, args ...any)) {
	if r == nil || len(r.Tails) == 0 || (dir == "" && !wanted) {
		return
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "a2amesh-chaos-logs-*")
		if err != nil {
			logf("saving the roles' output: %v", err)
			return
		}
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("saving the roles' output: %v", err)
		return
	}
	for name, tail := range r.Tails {
		if err := os.WriteFile(filepath.Join(dir, name+".log"), []byte(tail), 0o644); err != nil {
			logf("saving the roles' output: %v", err)
			return
		}
	}
	logf("each role's output tail is in %s", dir)
}
