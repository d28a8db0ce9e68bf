package main

// deploy_keda_test.go checks the KEDA example (deploy/k8s/keda) against
// KEDA itself: the ScaledObject against the CRD schema KEDA installs
// (strictly: a field the schema does not name is an error, as kubectl's
// strict field validation makes it), and the nats-jetstream trigger's
// metadata against the names KEDA's scaler reads. Both come from KEDA's
// Go module at kedaVersion, which the test downloads through the Go module
// proxy as `go` fetches any module (3 MB; A2AMESH_SKIP_KEDA=1 opts out).
// Then the wiring: the trigger names the mesh's work stream and the
// consumer of the agent its target Deployment runs, and a NATS monitoring
// endpoint that the NATS Service and nodes serve.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/a2amesh/a2amesh/bus"
)

// kedaVersion is the KEDA release the example is checked against.
const kedaVersion = "v2.21.0"

// kedaModule downloads KEDA's module (once per machine: the module cache
// keeps it) and returns its directory.
func kedaModule(t *testing.T) string {
	t.Helper()
	if os.Getenv("A2AMESH_SKIP_KEDA") == "1" {
		t.Skip("A2AMESH_SKIP_KEDA=1: the KEDA example is not checked against KEDA")
	}
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/kedacore/keda/v2@"+kedaVersion)
	cmd.Dir = t.TempDir() // outside this module: only KEDA's own zip is fetched
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download KEDA %s (set A2AMESH_SKIP_KEDA=1 to skip this check): %v\n%s%s", kedaVersion, err, out, stderr.String())
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download KEDA %s: %v %s\n%s", kedaVersion, err, mod.Error, out)
	}
	return mod.Dir
}

// kedaScaledObjectSchema compiles the openAPIV3Schema of KEDA's
// ScaledObject CRD (v1alpha1), made strict: every object that names its
// properties allows no others, unless it says it keeps unknown fields.
func kedaScaledObjectSchema(t *testing.T, kedaDir string) *jsonschema.Schema {
	t.Helper()
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `yaml:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	readYAML(t, filepath.Join(kedaDir, "config/crd/bases/keda.sh_scaledobjects.yaml"), &crd)
	var schema map[string]any
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1alpha1" {
			schema = v.Schema.OpenAPIV3Schema
		}
	}
	if schema == nil {
		t.Fatal("KEDA's ScaledObject CRD has no v1alpha1 schema")
	}
	strict(schema)
	c := jsonschema.NewCompiler()
	if err := c.AddResource("keda-scaledobject.json", jsonRoundTrip(t, schema)); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("keda-scaledobject.json")
	if err != nil {
		t.Fatalf("KEDA's ScaledObject schema: %v", err)
	}
	return sch
}

// strict sets additionalProperties false on every object schema under s
// that lists properties and neither allows others nor keeps unknown
// fields (x-kubernetes-preserve-unknown-fields).
func strict(s any) {
	switch v := s.(type) {
	case map[string]any:
		_, named := v["properties"]
		_, open := v["additionalProperties"]
		keep, _ := v["x-kubernetes-preserve-unknown-fields"].(bool)
		if named && !open && !keep {
			v["additionalProperties"] = false
		}
		for _, x := range v {
			strict(x)
		}
	case []any:
		for _, x := range v {
			strict(x)
		}
	}
}

// jsonRoundTrip turns a YAML-decoded value into what JSON decoding gives
// (float64 numbers, map[string]any objects), as the validator expects.
func jsonRoundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// natsJetStreamParams reads the trigger metadata names KEDA's
// nats-jetstream scaler parses (its keda:"name=..." struct tags): all of
// them, and those it requires (neither optional nor defaulted).
func natsJetStreamParams(t *testing.T, kedaDir string) (known, required []string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(kedaDir, "pkg/scalers/nats_jetstream_scaler.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`keda:"([^"]*)"`).FindAllStringSubmatch(string(src), -1) {
		var name string
		optional := false
		for _, part := range strings.Split(m[1], ",") {
			part = strings.TrimSpace(part)
			switch {
			case strings.HasPrefix(part, "name="):
				name = strings.TrimPrefix(part, "name=")
			case part == "optional", strings.HasPrefix(part, "default="):
				optional = true
			}
		}
		if name == "" {
			continue
		}
		known = append(known, name)
		if !optional {
			required = append(required, name)
		}
	}
	if len(known) == 0 {
		t.Fatal("found no trigger metadata names in KEDA's nats-jetstream scaler")
	}
	return known, required
}

type kedaScaledObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Spec struct {
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicaCount *int `yaml:"minReplicaCount"`
		Triggers        []struct {
			Type              string            `yaml:"type"`
			Metadata          map[string]string `yaml:"metadata"`
			AuthenticationRef any               `yaml:"authenticationRef"`
		} `yaml:"triggers"`
	} `yaml:"spec"`
}

// kedaCheck is what the test holds each ScaledObject against.
type kedaCheck struct {
	schema          *jsonschema.Schema
	known, required []string
}

// problems lists what is wrong with one ScaledObject document (raw: as
// YAML decodes it) for KEDA: its schema, and its nats-jetstream triggers'
// metadata names.
func (k kedaCheck) problems(t *testing.T, raw map[string]any) []string {
	t.Helper()
	var out []string
	if err := k.schema.Validate(jsonRoundTrip(t, raw)); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return append(out, "against KEDA's CRD schema: "+err.Error())
		}
		for _, u := range ve.BasicOutput().Errors {
			if u.Error != nil {
				out = append(out, fmt.Sprintf("against KEDA's CRD schema: at %q: %v", u.InstanceLocation, u.Error))
			}
		}
	}
	var so kedaScaledObject
	b, _ := yaml.Marshal(raw)
	if err := yaml.Unmarshal(b, &so); err != nil {
		return append(out, err.Error())
	}
	for i, tr := range so.Spec.Triggers {
		if tr.Type != "nats-jetstream" {
			out = append(out, fmt.Sprintf("trigger %d: type %q, want nats-jetstream", i, tr.Type))
			continue
		}
		for name := range tr.Metadata {
			if !slices.Contains(k.known, name) {
				out = append(out, fmt.Sprintf("trigger %d: metadata %q is not a parameter of KEDA's nats-jetstream scaler (%v)", i, name, k.known))
			}
		}
		for _, name := range k.required {
			if _, ok := tr.Metadata[name]; !ok && tr.AuthenticationRef == nil {
				out = append(out, fmt.Sprintf("trigger %d: metadata lacks %q, which the scaler requires", i, name))
			}
		}
	}
	return out
}

func TestDeployKEDA(t *testing.T) {
	kedaDir := kedaModule(t)
	known, required := natsJetStreamParams(t, kedaDir)
	check := kedaCheck{schema: kedaScaledObjectSchema(t, kedaDir), known: known, required: required}

	files, _ := filepath.Glob(filepath.Join(deployDir, "k8s/keda/*.yaml"))
	if len(files) == 0 {
		t.Fatal("no manifest in deploy/k8s/keda")
	}
	k8s := loadKubernetes(t)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]any
		if err := yaml.Unmarshal(data, &raw); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, p := range check.problems(t, raw) {
			t.Errorf("%s: %s", file, p)
		}
		var so kedaScaledObject
		if err := yaml.Unmarshal(data, &so); err != nil {
			t.Fatal(err)
		}
		where := file + " " + so.Metadata.Name
		if so.Kind != "ScaledObject" || so.Metadata.Namespace != "a2amesh" {
			t.Errorf("%s: kind %q in namespace %q, want a ScaledObject in a2amesh", where, so.Kind, so.Metadata.Namespace)
		}
		if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount != 0 {
			t.Errorf("%s: minReplicaCount is not 0: the example scales from zero", where)
		}
		// The target runs one agent; the trigger reads that agent's queue.
		w := k8s.workload("Deployment", so.Spec.ScaleTargetRef.Name)
		if w == nil || so.Spec.ScaleTargetRef.Kind != "Deployment" {
			t.Errorf("%s: scaleTargetRef %s/%s is no Deployment of deploy/k8s", where, so.Spec.ScaleTargetRef.Kind, so.Spec.ScaleTargetRef.Name)
			continue
		}
		agent := ""
		for _, c := range k8s.byRole["worker"] {
			if c.w == w {
				agent = c.value("agent")
			}
		}
		if agent == "" {
			t.Errorf("%s: Deployment %s runs no worker of a named agent", where, w.Metadata.Name)
			continue
		}
		for _, tr := range so.Spec.Triggers {
			md := tr.Metadata
			if md["stream"] != bus.StreamWork || md["consumer"] != bus.ConsumerName(agent) {
				t.Errorf("%s: trigger reads %s/%s, want the work queue of %s: %s/%s", where, md["stream"], md["consumer"], agent, bus.StreamWork, bus.ConsumerName(agent))
			}
			k8s.requireMonitoring(t, where, md["natsServerMonitoringEndpoint"])
		}
	}

	// The check bites: a misspelled field, or a parameter KEDA does not
	// read, is refused.
	var raw map[string]any
	readYAML(t, files[0], &raw)
	spec := raw["spec"].(map[string]any)
	spec["minReplicas"] = spec["minReplicaCount"]
	delete(spec, "minReplicaCount")
	if len(check.problems(t, raw)) == 0 {
		t.Error("a ScaledObject with spec.minReplicas (not a field of KEDA's) passed the check")
	}
	readYAML(t, files[0], &raw)
	trig := raw["spec"].(map[string]any)["triggers"].([]any)[0].(map[string]any)["metadata"].(map[string]any)
	trig["natsServerMonitoringURL"] = trig["natsServerMonitoringEndpoint"]
	delete(trig, "natsServerMonitoringEndpoint")
	if len(check.problems(t, raw)) < 2 {
		t.Error("a trigger naming natsServerMonitoringURL instead of natsServerMonitoringEndpoint passed the check")
	}
}

// workload is the Deployment or StatefulSet of deploy/k8s named name.
func (f *k8sFleet) workload(kind, name string) *k8sWorkload {
	for _, w := range f.workloads {
		if w.Kind == kind && w.Metadata.Name == name {
			return w
		}
	}
	return nil
}

// requireMonitoring checks that endpoint (host:port, as KEDA's operator
// reaches it from its own namespace) names a Service of the NATS pods in
// namespace a2amesh whose port leads to every NATS node's --monitor-listen.
func (f *k8sFleet) requireMonitoring(t *testing.T, where, endpoint string) {
	t.Helper()
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		t.Errorf("%s: natsServerMonitoringEndpoint %q is not host:port", where, endpoint)
		return
	}
	labels := strings.Split(host, ".")
	if len(labels) < 2 || labels[1] != "a2amesh" {
		t.Errorf("%s: natsServerMonitoringEndpoint %q: name the Service with its namespace (<service>.a2amesh...): KEDA runs in its own", where, endpoint)
	}
	nats := f.byRole["nats"]
	if len(nats) == 0 {
		t.Errorf("%s: no NATS node in deploy/k8s", where)
		return
	}
	s, ok := f.services[labels[0]]
	if !ok || !s.selects(nats[0].w.Spec.Template.Metadata.Labels) {
		t.Errorf("%s: natsServerMonitoringEndpoint %q names no Service of the NATS pods", where, endpoint)
		return
	}
	for _, n := range nats {
		monitor := n.listenPorts()["monitor-listen"]
		if monitor == "" {
			t.Errorf("%s: %s serves no monitoring endpoint (--monitor-listen), which KEDA reads", where, n.where)
			continue
		}
		found := false
		for _, p := range s.Spec.Ports {
			found = found || (strconv.Itoa(p.Port) == port && n.c.port(p.TargetPort) == monitor)
		}
		if !found {
			t.Errorf("%s: Service %s port %s does not lead to %s's monitoring port %s", where, labels[0], port, n.where, monitor)
		}
	}
}
