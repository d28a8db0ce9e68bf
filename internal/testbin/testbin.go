// Package testbin builds the module's commands for tests that run them as
// real processes (roles, the CLI, examples).
package testbin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"
)

// Race reports whether the running test binary was built with -race.
func Race() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// ModuleRoot returns the directory of the go.mod above the working
// directory (a test runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for i := 0; i < 16; i++ {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("testbin: no go.mod above the working directory")
}

// BuildTo builds the package pkg (a path relative to the module root, such
// as "./cmd/a2amesh") into the file out, with the race detector when race
// is true, within 5 minutes.
func BuildTo(out, pkg string, race bool) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"build", "-o", out}
	if race {
		// The same flags as the test binary: the build reuses its compiled
		// packages, and the child's data races fail it.
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// Build builds pkg into the test's temporary directory and returns the
// binary's path, with the race detector when the test binary has it
// (Build(t, pkg, false) leaves it out: many processes under -race swamp a
// small machine).
func Build(t testing.TB, pkg string, race ...bool) string {
	t.Helper()
	withRace := Race()
	if len(race) > 0 {
		withRace = race[0] && Race()
	}
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	start := time.Now()
	if err := BuildTo(out, pkg, withRace); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s (race detector: %v) in %v", pkg, withRace, time.Since(start).Round(time.Millisecond))
	return out
}

// CacheDir is where the suite caches the binaries it builds once (Jaeger,
// Hydra): $A2AMESH_CACHE, else the user's cache directory under a2amesh/,
// as scripts/jaeger.sh and scripts/hydra.sh put them.
func CacheDir() string {
	if c := os.Getenv("A2AMESH_CACHE"); c != "" {
		return c
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "a2amesh")
}
