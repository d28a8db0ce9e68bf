package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/cmd/a2amesh/internal/bench"
)

// profiled writes a CPU profile of the run it wraps, and passes the run's
// result and error through; without a path it only runs it.
func TestProfiled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pprof")
	res, err := profiled(path, func() (bench.Result, error) {
		x := int64(0)
		for i := range int64(5_000_000) { // some work to sample
			x += i % 7
		}
		return bench.Result{Tasks: 42 + x*0}, nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 42, res.Tasks, "the run's result is passed through")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Positive(t, st.Size(), "a profile was written")

	boom := errors.New("boom")
	_, err = profiled("", func() (bench.Result, error) { return bench.Result{}, boom })
	require.ErrorIs(t, err, boom)
	_, err = profiled(filepath.Join(t.TempDir(), "no", "such", "dir", "p"), func() (bench.Result, error) { return bench.Result{}, nil })
	require.Error(t, err, "an unwritable profile path fails before the run")
}
