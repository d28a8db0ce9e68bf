package bench

// The load generator as a process of its own (`a2amesh bench loadgen`,
// not listed: bench starts it). Out of the benchmarked process, its work
// is neither counted as the server's nor slowed by it, and its own CPU
// use can be reported beside the figures: it shares the machine.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LoadgenReport is what a load generator process prints: what it
// measured, the CPU it used meanwhile (user + system, seconds) and, where
// /proc/stat tells, the machine's busy and total CPU time over the same
// span (seconds, all cores).
type LoadgenReport struct {
	Result       Result  `json:"result"`
	CPU          float64 `json:"cpu_seconds"`
	MachineBusy  float64 `json:"machine_busy_seconds"`
	MachineTotal float64 `json:"machine_total_seconds"`
}

// Cores is the load generator's CPU use over the run, in cores.
func (r LoadgenReport) Cores() float64 {
	if r.Result.Elapsed <= 0 {
		return 0
	}
	return r.CPU / r.Result.Elapsed.Seconds()
}

// Share is the load generator's part of the machine's CPU time over the
// run (0: unknown).
func (r LoadgenReport) Share() float64 {
	if r.MachineTotal <= 0 {
		return 0
	}
	return r.CPU / r.MachineTotal
}

// Loadgen is the load generator process's run: warmup's unmeasured load
// (none for 0), then Run(o), with the CPU this process and the machine
// used meanwhile.
func Loadgen(ctx context.Context, o Options, warmup time.Duration) (LoadgenReport, error) {
	if warmup > 0 {
		w := o
		w.Duration = warmup
		if _, err := Run(ctx, w); err != nil {
			return LoadgenReport{}, err
		}
	}
	cpu0 := processCPU()
	busy0, total0 := machineCPU()
	res, err := Run(ctx, o)
	if err != nil {
		return LoadgenReport{}, err
	}
	cpu1 := processCPU()
	busy1, total1 := machineCPU()
	rep := LoadgenReport{Result: res, CPU: cpu1 - cpu0}
	if total0 > 0 && total1 > total0 {
		rep.MachineBusy, rep.MachineTotal = busy1-busy0, total1-total0
	}
	return rep, nil
}

// RunLoadgen runs `bin bench loadgen` (a load generator process of the
// a2amesh binary bin) with o, and warmup first, and returns its report.
func RunLoadgen(ctx context.Context, bin string, o Options, warmup time.Duration) (LoadgenReport, error) {
	args := []string{"bench", "loadgen", "--url", o.URL, "--binding", o.Binding, "--tenant", o.Tenant,
		"--method", o.Method, "--concurrency", strconv.Itoa(o.Concurrency),
		"--duration", o.Duration.String(), "--warmup", warmup.String()}
	// Bounded: the load, its warmup, and the generator's own request
	// timeout for what is in flight at the end, plus start-up.
	ctx, cancel := context.WithTimeout(ctx, warmup+o.Duration+DefaultRequestTimeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return LoadgenReport{}, fmt.Errorf("load generator: %w: %s", err, strings.TrimSpace(errOut.String()))
	}
	var rep LoadgenReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return LoadgenReport{}, fmt.Errorf("load generator: unreadable report: %w", err)
	}
	return rep, nil
}

// processCPU is the CPU time this process has used (user + system),
// in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// machineCPU reads the machine's busy and total CPU time, all cores, in
// seconds, from /proc/stat (0, 0 where there is none).
func machineCPU() (busy, total float64) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0
	}
	var idle, sum float64
	for i, v := range fields[1:] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, 0
		}
		if i >= 8 { // guest times are counted in user already
			break
		}
		sum += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	const hz = 100 // USER_HZ on Linux
	return (sum - idle) / hz, sum / hz
}
