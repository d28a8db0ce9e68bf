package bench

// `a2amesh bench`: the mesh's echo agent and the a2a-go SDK's echo server
// for the same binding, loaded alike, side by side.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2amesh/a2amesh/internal/a2agoecho"
)

// CompareOptions is one run of `a2amesh bench`.
type CompareOptions struct {
	// MeshURL is the mesh's base URL, or an agent endpoint
	// (.../agents/NAME); a base URL is loaded at its echo agent.
	MeshURL string
	// GRPCAddr is the mesh's gRPC address (host:port), for BindingGRPC.
	GRPCAddr string
	// Bindings are loaded one after the other, each against a2a-go's
	// server for the same binding.
	Bindings []string
	// Method is the JSON-RPC binding's method (MethodSend03 or
	// MethodSend10); the other bindings send 1.0 SendMessage.
	Method string
	// Levels are the numbers of concurrent clients, each measured for
	// Duration after Warmup's unmeasured load.
	Levels           []int
	Duration, Warmup time.Duration
	// CPUProfile, when set, is the prefix of the files of a CPU profile
	// of each measured run of the mesh: CPUProfile-<binding>-<clients>.pprof.
	CPUProfile string
	// LoadgenBin, when set, is the a2amesh binary whose `bench loadgen`
	// runs each load as a process of its own, whose CPU use is reported;
	// by default the load runs in this process.
	LoadgenBin string
	// Out gets the tables, Err the errors' summaries (default: stdout
	// and stderr).
	Out, Err io.Writer
}

// Compare loads the mesh and a2a-go's server, binding by binding, and
// prints a table for each and the ratio at the top level.
func Compare(ctx context.Context, o CompareOptions) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Err == nil {
		o.Err = os.Stderr
	}
	if len(o.Levels) == 0 || len(o.Bindings) == 0 {
		return errors.New("bench: no concurrency level or no binding to load")
	}
	meshURL := strings.TrimSuffix(o.MeshURL, "/")
	meshEndpoint := meshURL
	if !strings.Contains(meshURL, "/agents/") {
		meshEndpoint = meshURL + "/agents/echo"
	}
	for i, b := range o.Bindings {
		if i > 0 {
			fmt.Fprintln(o.Out)
		}
		t := compareTarget{binding: b, mesh: meshEndpoint, method: o.Method}
		if b != BindingJSONRPC {
			t.method = MethodSend10
		}
		if b == BindingGRPC {
			if o.GRPCAddr == "" {
				return errors.New("--binding grpc with --url needs --grpc-url (the mesh's gRPC host:port)")
			}
			t.mesh, t.tenant = o.GRPCAddr, "echo"
		}
		if err := compareBinding(ctx, o, t); err != nil {
			return err
		}
	}
	return nil
}

// compareTarget is what one binding's run loads: the mesh's endpoint for
// the binding (and the tenant that names echo there), and the method.
type compareTarget struct {
	binding, mesh, tenant, method string
}

// profiled runs run under a CPU profile written to path ("": none).
func profiled(path string, run func() (Result, error)) (Result, error) {
	if path == "" {
		return run()
	}
	f, err := os.Create(path)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return Result{}, err
	}
	defer pprof.StopCPUProfile()
	return run()
}

// goBinding is a2agoecho's name of a bench binding.
var goBinding = map[string]string{
	BindingJSONRPC: "JSONRPC",
	BindingREST:    "HTTP+JSON",
	BindingGRPC:    "GRPC",
}

// compareBinding loads the mesh and a2a-go's server for the same binding
// at each level, alternately, and prints a table and the ratio at the top
// level.
func compareBinding(ctx context.Context, o CompareOptions, t compareTarget) error {
	var goEndpoint string
	if t.binding == BindingJSONRPC {
		goURL, stopGo, err := a2agoecho.Start(ctx)
		if err != nil {
			return fmt.Errorf("starting a2a-go echo server: %w", err)
		}
		defer stopGo()
		goEndpoint = A2AGoEndpoint(goURL, t.method)
	} else {
		srv, err := a2agoecho.StartBinding(ctx, a2agoecho.Options{Binding: goBinding[t.binding]})
		if err != nil {
			return fmt.Errorf("starting a2a-go echo server: %w", err)
		}
		defer srv.Stop()
		goEndpoint = srv.Endpoint
	}

	fmt.Fprintf(o.Out, "bench %s: %s, %v per level (+%v warmup)\n  mesh:   %s\n  a2a-go: %s\n",
		t.binding, t.method, o.Duration, o.Warmup, t.mesh, goEndpoint)

	ownProcess := o.LoadgenBin != ""
	type row struct {
		clients     int
		mesh, a2ago Result
		meshE, a2aE error
		// meshGen and goGen are the load generator's CPU use in each
		// run (with ownProcess).
		meshGen, goGen LoadgenReport
	}
	rows := make([]row, 0, len(o.Levels))
	for _, n := range o.Levels {
		r := row{clients: n}
		// Alternate which server goes first so slow drift (thermal,
		// GC of the previous run) does not always favour the same one.
		var gen LoadgenReport
		runOne := func(endpoint, tenant string) (Result, error) {
			lo := Options{
				URL: endpoint, Concurrency: n, Duration: o.Duration, Method: t.method,
				Binding: t.binding, Tenant: tenant,
			}
			if ownProcess {
				var err error
				gen, err = RunLoadgen(ctx, o.LoadgenBin, lo, o.Warmup)
				return gen.Result, err
			}
			lo.Warmup = o.Warmup
			return Run(ctx, lo)
		}
		runMesh := func() (Result, error) {
			path := ""
			if o.CPUProfile != "" {
				path = fmt.Sprintf("%s-%s-%d.pprof", o.CPUProfile, t.binding, n)
			}
			return profiled(path, func() (Result, error) { return runOne(t.mesh, t.tenant) })
		}
		if len(rows)%2 == 0 {
			r.mesh, r.meshE = runMesh()
			r.meshGen = gen
			r.a2ago, r.a2aE = runOne(goEndpoint, "")
			r.goGen = gen
		} else {
			r.a2ago, r.a2aE = runOne(goEndpoint, "")
			r.goGen = gen
			r.mesh, r.meshE = runMesh()
			r.meshGen = gen
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.meshE != nil || r.a2aE != nil {
			return fmt.Errorf("%s at %d clients: %w", t.binding, n, errors.Join(r.meshE, r.a2aE))
		}
		reportErrors(o.Err, "mesh", n, r.mesh)
		reportErrors(o.Err, "a2a-go", n, r.a2ago)
		rows = append(rows, r)
	}

	tw := tabwriter.NewWriter(o.Out, 0, 0, 2, ' ', tabwriter.AlignRight)
	gen := ""
	if ownProcess {
		gen = "load gen CPU\t"
	}
	fmt.Fprintln(tw, "clients\tmesh tasks/s\tp50\tp99\terrors\t"+gen+"a2a-go tasks/s\tp50\tp99\terrors\t"+gen)
	for _, r := range rows {
		mg, gg := "", ""
		if ownProcess {
			mg, gg = fmtGen(r.meshGen)+"\t", fmtGen(r.goGen)+"\t"
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%s\t%d\t%s%.0f\t%s\t%s\t%d\t%s\n", r.clients,
			r.mesh.Throughput, fmtLatency(r.mesh.P50), fmtLatency(r.mesh.P99), r.mesh.Errors, mg,
			r.a2ago.Throughput, fmtLatency(r.a2ago.P50), fmtLatency(r.a2ago.P99), r.a2ago.Errors, gg)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if ownProcess {
		fmt.Fprintln(o.Out, "load gen CPU: the load generator's own CPU use during the run, in cores and as a share of the machine's CPU time")
	}

	// The last line: the ratio at the highest level.
	top := rows[0]
	for _, r := range rows {
		if r.clients > top.clients {
			top = r
		}
	}
	ratio := "n/a"
	if top.a2ago.Throughput > 0 {
		ratio = fmt.Sprintf("%.2fx", top.mesh.Throughput/top.a2ago.Throughput)
	}
	fmt.Fprintf(o.Out, "ratio mesh/a2a-go (%s) at %d clients: %s\n", t.binding, top.clients, ratio)
	return nil
}

// fmtGen renders a load generator's CPU use: cores, and its share of the
// machine's CPU time where known.
func fmtGen(r LoadgenReport) string {
	s := fmt.Sprintf("%.2f cores", r.Cores())
	if sh := r.Share(); sh > 0 {
		s += fmt.Sprintf(" (%.0f%%)", 100*sh)
	}
	return s
}
