package bench

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// profiled writes a CPU profile of the run it wraps, and passes the run's
// result and error through; without a path it only runs it.
func TestProfiled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pprof")
	res, err := profiled(path, func() (Result, error) {
		x := int64(0)
		for i := range int64(5_000_000) { // some work to sample
			x += i % 7
		}
		return Result{Tasks: 42 + x*0}, nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 42, res.Tasks, "the run's result is passed through")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Positive(t, st.Size(), "a profile was written")

	boom := errors.New("boom")
	_, err = profiled("", func() (Result, error) { return Result{}, boom })
	require.ErrorIs(t, err, boom)
	_, err = profiled(filepath.Join(t.TempDir(), "no", "such", "dir", "p"), func() (Result, error) { return Result{}, nil })
	require.Error(t, err, "an unwritable profile path fails before the run")
}

// fmtGen shows cores, and the share of the machine where it is known.
func TestFmtGen(t *testing.T) {
	r := LoadgenReport{Result: Result{Elapsed: 2e9}, CPU: 1}
	require.Equal(t, "0.50 cores", fmtGen(r))
	r.MachineTotal = 4
	require.Equal(t, "0.50 cores (25%)", fmtGen(r))
}
