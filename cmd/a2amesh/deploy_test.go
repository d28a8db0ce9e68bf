package main

// deploy_test.go keeps deploy/ and the Dockerfile honest without running
// them: every a2amesh command line of the compose file and the Kubernetes
// manifests is parsed by its role's real flag set (parseHook, roles.go),
// and the wiring between services is checked: a 3-node NATS cluster whose
// routes name each other, edges and workers pointed at NATS servers that
// exist, R3 streams, Jaeger and Prometheus targets that exist, and host
// ports bound to 127.0.0.1 only.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/a2amesh/a2amesh/agentrt/agents"
)

const (
	deployDir    = "../../deploy"
	composeImage = "a2amesh:local"           // what compose.yaml builds
	k8sImage     = "ghcr.io/a2amesh/a2amesh" // the manifests' image (kustomization.yaml renames it)
)

// ---- role command lines -------------------------------------------------

var errParsedOnly = errors.New("flags parsed; role not run")

// parseRole hands args to the real entry point of role with parseHook set:
// the role builds its flag set, the hook parses args with it, and the role
// returns before it does anything else. The context is already canceled,
// should a role ever get further.
func parseRole(role string, args []string) (*flag.FlagSet, error) {
	if !slices.Contains([]string{"nats", "edge", "worker", "dev"}, role) {
		return nil, fmt.Errorf("%q is not a role (nats, edge, worker or dev)", role)
	}
	var got *flag.FlagSet
	parseHook = func(fs *flag.FlagSet, args []string) error {
		got = fs
		fs.SetOutput(io.Discard)
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected arguments: %v", fs.Args())
		}
		return errParsedOnly
	}
	defer func() { parseHook = nil }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := commands[role].run(ctx, args)
	if !errors.Is(err, errParsedOnly) {
		if err == nil {
			err = errors.New("the role ran instead of stopping after its flags")
		}
		return nil, err
	}
	return got, nil
}

// roleCmd is one a2amesh process of a manifest, its flags parsed.
type roleCmd struct {
	where string // "compose service edge-1", "k8s Deployment/edge container edge"
	name  string // the compose service or the workload's name
	role  string
	fs    *flag.FlagSet
	given map[string]bool // flags set on the command line or by the manifest's environment
}

// value is a flag's value: given, or its default.
func (c *roleCmd) value(name string) string {
	f := c.fs.Lookup(name)
	if f == nil {
		panic("no flag " + name + " in role " + c.role)
	}
	return f.Value.String()
}

var (
	envOfFlag = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]*)`)
	envInHelp = regexp.MustCompile(`\b(?:A2AMESH|NATS)_[A-Z0-9_]+`)
)

// newRoleCmd parses a command line (args[0] is the role) and applies the
// manifest's environment as the role would read it: every A2AMESH_* and
// NATS_* variable must be one the role's help names, and one that stands
// for a flag must hold a value that flag accepts (envVals holds literal
// values only; a variable filled in by the platform maps to "").
func newRoleCmd(where, name string, args []string, envVals map[string]string) (*roleCmd, error) {
	if len(args) == 0 {
		return nil, errors.New("no command: the image's entrypoint is the binary, the command must name a role")
	}
	fs, err := parseRole(args[0], args[1:])
	if err != nil {
		return nil, fmt.Errorf("a2amesh %s: %w", strings.Join(args, " "), err)
	}
	c := &roleCmd{where: where, name: name, role: args[0], fs: fs, given: map[string]bool{}}
	fs.Visit(func(f *flag.Flag) { c.given[f.Name] = true })
	flagOf, known := map[string]string{}, map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if m := envOfFlag.FindStringSubmatch(f.Usage); m != nil {
			flagOf[m[1]] = f.Name
		}
		for _, v := range envInHelp.FindAllString(f.Usage, -1) {
			known[v] = true
		}
	})
	for _, k := range sortedKeys(envVals) {
		if !strings.HasPrefix(k, "A2AMESH_") && !strings.HasPrefix(k, "NATS_") {
			continue
		}
		if !known[k] {
			return nil, fmt.Errorf("environment %s: not a variable of a2amesh %s", k, c.role)
		}
		f, ok := flagOf[k]
		if !ok || c.given[f] || envVals[k] == "" {
			continue
		}
		if err := fs.Set(f, envVals[k]); err != nil {
			return nil, fmt.Errorf("environment %s=%q: %w", k, envVals[k], err)
		}
		c.given[f] = true
	}
	return c, nil
}

// listenPorts are the ports a command serves, by the flag that sets each.
func (c *roleCmd) listenPorts() map[string]string {
	var flags []string
	switch c.role {
	case "nats":
		flags = []string{"listen", "listen-cluster", "monitor-listen"}
	case "edge":
		flags = []string{"listen"}
	case "worker":
		flags = []string{"metrics-listen"}
	case "dev":
		flags = []string{"listen", "nats-listen"}
	}
	ports := map[string]string{}
	for _, f := range flags {
		if v := c.value(f); v != "" {
			if _, port, err := net.SplitHostPort(v); err == nil {
				ports[f] = port
			}
		}
	}
	return ports
}

// metricsPort is where a command serves /metrics ("" if it does not).
func (c *roleCmd) metricsPort() string {
	switch {
	case c.role == "edge" && c.value("metrics") == "true":
		return c.listenPorts()["listen"]
	case c.role == "worker":
		return c.listenPorts()["metrics-listen"]
	}
	return ""
}

// checkCommon checks what holds for every a2amesh process in a container:
// it listens on every interface (the default 127.0.0.1 is unreachable from
// other containers and from probes), and edges and workers keep R3 streams
// on a built-in agent.
func checkCommon(t *testing.T, c *roleCmd) {
	t.Helper()
	for f, port := range c.listenPorts() {
		host, _, _ := net.SplitHostPort(c.value(f))
		if host != "0.0.0.0" && host != "" && host != "::" {
			t.Errorf("%s: --%s %s: listen on 0.0.0.0 inside a container", c.where, f, c.value(f))
		}
		if port == "0" {
			t.Errorf("%s: --%s: a fixed port, please", c.where, f)
		}
	}
	if c.role == "edge" || c.role == "worker" {
		if !c.given["replicas"] || c.value("replicas") != "3" {
			t.Errorf("%s: --replicas 3 on a 3-node cluster (got %s)", c.where, c.value("replicas"))
		}
	}
	if c.role == "worker" {
		if _, ok := agents.Builtin()[c.value("agent")]; !ok && c.value("proxy") == "" {
			t.Errorf("%s: --agent %q is not a built-in agent", c.where, c.value("agent"))
		}
	}
}

// checkPlanner: planner delegates to echo and upper, which must run too.
func checkPlanner(t *testing.T, where string, workers []*roleCmd) {
	t.Helper()
	running := map[string]bool{}
	for _, w := range workers {
		running[w.value("agent")] = true
	}
	if running["planner"] && (!running["echo"] || !running["upper"]) {
		t.Errorf("%s: planner delegates to echo and upper: run workers of both", where)
	}
}

// natsServers parses a --nats value into host:port pairs.
func natsServers(v string) ([][2]string, error) {
	var out [][2]string
	for _, s := range strings.Split(v, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Hostname() == "" {
			return nil, fmt.Errorf("--nats %q: want nats://host:port,...", v)
		}
		port := u.Port()
		if port == "" {
			port = "4222"
		}
		out = append(out, [2]string{u.Hostname(), port})
	}
	return out, nil
}

// otlpTarget is the host and port spans go to, from the manifest's
// OTEL_EXPORTER_OTLP_ENDPOINT.
func otlpTarget(env map[string]string) (host, port string, err error) {
	v, ok := env["OTEL_EXPORTER_OTLP_ENDPOINT"]
	if !ok {
		return "", "", errors.New("no OTEL_EXPORTER_OTLP_ENDPOINT: tracing is off")
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" || u.Port() == "" {
		return "", "", fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT %q: want http://host:4318", v)
	}
	if u.Port() != "4318" {
		return "", "", fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT %q: the mesh speaks OTLP over HTTP, port 4318", v)
	}
	return u.Hostname(), u.Port(), nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// ---- the seam itself -----------------------------------------------------

func TestDeployFlagCheckRejectsBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{"edge", "--replicas=three"},
		{"edge", "--listne=0.0.0.0:8080"},
		{"worker", "--agent", "echo", "stray"},
		{"nats", "--sync-always=maybe"},
		{"dev", "--no-such-flag"},
		{"serve"},
	} {
		if _, err := parseRole(args[0], args[1:]); err == nil {
			t.Errorf("a2amesh %v: accepted", args)
		}
	}
	if _, err := newRoleCmd("test", "edge", []string{"edge"}, map[string]string{"A2AMESH_REPLICAS": "three"}); err == nil {
		t.Error("A2AMESH_REPLICAS=three: accepted")
	}
	if _, err := newRoleCmd("test", "edge", []string{"edge"}, map[string]string{"A2AMESH_REPLICA": "3"}); err == nil {
		t.Error("A2AMESH_REPLICA (a typo): accepted")
	}
	c, err := newRoleCmd("test", "edge", []string{"edge", "--listen", "0.0.0.0:9000"}, map[string]string{"A2AMESH_REPLICAS": "3"})
	if err != nil {
		t.Fatal(err)
	}
	if c.value("replicas") != "3" || !c.given["replicas"] || c.listenPorts()["listen"] != "9000" {
		t.Errorf("replicas %s (given %v), listen port %s", c.value("replicas"), c.given["replicas"], c.listenPorts()["listen"])
	}
}

// ---- Dockerfile ------------------------------------------------------------

func TestDeployDockerfile(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(string(mod))
	if goVersion == nil {
		t.Fatal("go.mod: no go directive")
	}
	if !strings.Contains(df, "ARG GO_VERSION="+goVersion[1]+"\n") {
		t.Errorf("Dockerfile: ARG GO_VERSION=%s, go.mod's go version (the golang image builds with exactly its own toolchain)", goVersion[1])
	}
	if !strings.Contains(df, `ENTRYPOINT ["/a2amesh"]`) {
		t.Error(`Dockerfile: ENTRYPOINT ["/a2amesh"]: manifests give the role as the command`)
	}
	if m := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(df); m == nil || strings.HasPrefix(m[1], "0") || m[1] == "root" {
		t.Errorf("Dockerfile: run as a non-root USER (got %v)", m)
	}
	cmd := regexp.MustCompile(`(?m)^CMD (\[.*\])$`).FindStringSubmatch(df)
	if cmd == nil {
		t.Fatal("Dockerfile: no CMD [...]")
	}
	var args []string
	if err := json.Unmarshal([]byte(cmd[1]), &args); err != nil {
		t.Fatalf("Dockerfile CMD: %v", err)
	}
	c, err := newRoleCmd("Dockerfile CMD", "", args, nil)
	if err != nil {
		t.Fatalf("Dockerfile CMD: %v", err)
	}
	checkCommon(t, c)
}

// ---- docker compose --------------------------------------------------------

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

// composeService is what the test reads of a service, in the forms
// compose.yaml uses: command as a list, environment as a map, ports and
// volumes in the short "a:b" syntax.
type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context string `yaml:"context"`
	} `yaml:"build"`
	Entrypoint  any               `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
}

// mount returns the source of the volume mounted at target ("" if none).
func (s composeService) mount(target string) string {
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == target {
			return parts[0]
		}
	}
	return ""
}

// composeFleet is compose.yaml with its a2amesh command lines parsed.
type composeFleet struct {
	dir       string
	file      composeFile
	byService map[string]*roleCmd
	byRole    map[string][]*roleCmd
}

func TestDeployCompose(t *testing.T) {
	f := loadCompose(t)
	checkComposeNATS(t, f)

	// Edges and workers reach NATS servers that exist.
	clients := append(slices.Clone(f.byRole["edge"]), f.byRole["worker"]...)
	for _, c := range clients {
		servers, err := natsServers(c.value("nats"))
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		for _, s := range servers {
			if n := f.byService[s[0]]; n == nil || n.role != "nats" || n.listenPorts()["listen"] != s[1] {
				t.Errorf("%s: --nats names %s:%s, which is no NATS node's client address", c.where, s[0], s[1])
			}
		}
	}
	if len(f.byRole["edge"]) != 2 {
		t.Errorf("compose: %d edges, want 2", len(f.byRole["edge"]))
	}
	checkPlanner(t, "compose", f.byRole["worker"])
	checkComposePrometheus(t, f, clients)
}

// loadCompose reads compose.yaml, parses each a2amesh service's command
// line, and checks each service on its own: ports, image, tracing.
func loadCompose(t *testing.T) *composeFleet {
	f := &composeFleet{dir: filepath.Join(deployDir, "compose"), byService: map[string]*roleCmd{}, byRole: map[string][]*roleCmd{}}
	readYAML(t, filepath.Join(f.dir, "compose.yaml"), &f.file)
	for _, name := range sortedKeys(f.file.Services) {
		s := f.file.Services[name]
		where := "compose service " + name
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s: port %q: publish on 127.0.0.1 only (127.0.0.1:host:container)", where, p)
			}
		}
		if s.Image != composeImage && s.Build == nil {
			continue // not a2amesh (Jaeger, Prometheus)
		}
		if s.Image != composeImage || s.Build == nil || filepath.Join(f.dir, s.Build.Context) != filepath.Clean("../..") {
			t.Errorf("%s: a2amesh services share one image: image %s, build context ../.. (the repository root)", where, composeImage)
		}
		if s.Entrypoint != nil {
			t.Errorf("%s: keep the image's entrypoint (the binary); name the role in command", where)
		}
		c, err := newRoleCmd(where, name, s.Command, s.Environment)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		checkCommon(t, c)
		listening := map[string]bool{}
		for _, port := range c.listenPorts() {
			listening[port] = true
		}
		for _, p := range s.Ports {
			container := strings.TrimSuffix(p[strings.LastIndex(p, ":")+1:], "/tcp")
			if !listening[container] {
				t.Errorf("%s: port %q: the container serves nothing on %s", where, p, container)
			}
		}
		if c.role == "edge" || c.role == "worker" {
			host, _, err := otlpTarget(s.Environment)
			if err != nil {
				t.Errorf("%s: %v", where, err)
			} else if _, ok := f.file.Services[host]; !ok {
				t.Errorf("%s: spans go to %s, which is not a service", where, host)
			}
		}
		f.byRole[c.role] = append(f.byRole[c.role], c)
		f.byService[name] = c
	}
	return f
}

// checkComposeNATS: three nodes of one cluster, routed to each other, each
// with its own name and its own named volume.
func checkComposeNATS(t *testing.T, f *composeFleet) {
	nodes := f.byRole["nats"]
	if len(nodes) != 3 {
		t.Fatalf("compose: %d NATS nodes, want 3", len(nodes))
	}
	names, volumes := map[string]bool{}, map[string]bool{}
	for _, n := range nodes {
		names[n.value("name")] = true
		if n.value("cluster") == "" || n.value("cluster") != nodes[0].value("cluster") {
			t.Errorf("%s: --cluster %q: the same cluster name on every node", n.where, n.value("cluster"))
		}
		vol := f.file.Services[n.name].mount(n.value("data"))
		if _, declared := f.file.Volumes[vol]; !declared || volumes[vol] {
			t.Errorf("%s: --data %s: mount a named volume of its own there (got %q)", n.where, n.value("data"), vol)
		}
		volumes[vol] = true
		routed := map[string]bool{}
		for _, r := range strings.Split(n.value("routes"), ",") {
			u, err := url.Parse(strings.TrimSpace(r))
			if err != nil || u.Scheme != "nats-route" {
				t.Errorf("%s: route %q: want nats-route://host:port", n.where, r)
				continue
			}
			peer := f.byService[u.Hostname()]
			if peer == nil || peer.role != "nats" {
				t.Errorf("%s: route %q: %s is not a NATS service", n.where, r, u.Hostname())
				continue
			}
			if u.Port() != peer.listenPorts()["listen-cluster"] {
				t.Errorf("%s: route %q: %s listens for routes on port %s", n.where, r, peer.name, peer.listenPorts()["listen-cluster"])
			}
			routed[peer.name] = true
		}
		for _, other := range nodes {
			if other != n && !routed[other.name] {
				t.Errorf("%s: no route to %s", n.where, other.name)
			}
		}
	}
	if len(names) != 3 || names[""] {
		t.Errorf("compose: NATS nodes need distinct --name values, got %v", sortedKeys(names))
	}
}

// checkComposePrometheus: Prometheus scrapes every edge and worker, at
// ports that serve /metrics.
func checkComposePrometheus(t *testing.T, f *composeFleet, clients []*roleCmd) {
	var src string
	for _, s := range f.file.Services {
		if strings.HasPrefix(s.Image, "prom/prometheus:") {
			src = s.mount("/etc/prometheus/prometheus.yml")
		}
	}
	if src == "" {
		t.Fatal("compose: no prometheus service with its config mounted at /etc/prometheus/prometheus.yml")
	}
	var pc struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, filepath.Join(f.dir, src), &pc)
	scraped := map[string]bool{}
	for _, sc := range pc.ScrapeConfigs {
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			t.Errorf("prometheus job %s: metrics_path %s: a2amesh serves /metrics", sc.JobName, sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, err := net.SplitHostPort(target)
				if c := f.byService[host]; err != nil || c == nil || c.metricsPort() != port {
					t.Errorf("prometheus job %s: target %s: no service serves /metrics there", sc.JobName, target)
					continue
				}
				scraped[host] = true
			}
		}
	}
	for _, c := range clients {
		if !scraped[c.name] {
			t.Errorf("%s: not scraped by Prometheus (workers need --metrics-listen)", c.where)
		}
	}
}

// ---- Kubernetes ------------------------------------------------------------

type k8sMeta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// intOrString is a port given by number or by name.
type intOrString string

func (p *intOrString) UnmarshalYAML(n *yaml.Node) error { *p = intOrString(n.Value); return nil }

type k8sProbe struct {
	HTTPGet *struct {
		Path string      `yaml:"path"`
		Port intOrString `yaml:"port"`
	} `yaml:"httpGet"`
	TCPSocket *struct {
		Port intOrString `yaml:"port"`
	} `yaml:"tcpSocket"`
}

type k8sSecurityContext struct {
	RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
	ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
}

type k8sMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		HostPort      int    `yaml:"hostPort"`
	} `yaml:"ports"`
	VolumeMounts    []k8sMount         `yaml:"volumeMounts"`
	ReadinessProbe  *k8sProbe          `yaml:"readinessProbe"`
	LivenessProbe   *k8sProbe          `yaml:"livenessProbe"`
	SecurityContext k8sSecurityContext `yaml:"securityContext"`
}

// port resolves a port by number or by the name of one of its ports.
func (c k8sContainer) port(p intOrString) string {
	for _, cp := range c.Ports {
		if cp.Name == string(p) {
			return strconv.Itoa(cp.ContainerPort)
		}
	}
	return string(p)
}

type k8sWorkload struct { // a Deployment or a StatefulSet
	Kind     string  `yaml:"kind"`
	Metadata k8sMeta `yaml:"metadata"`
	Spec     struct {
		Replicas    int    `yaml:"replicas"`
		ServiceName string `yaml:"serviceName"`
		Template    struct {
			Metadata k8sMeta `yaml:"metadata"`
			Spec     struct {
				HostNetwork     bool               `yaml:"hostNetwork"`
				SecurityContext k8sSecurityContext `yaml:"securityContext"`
				InitContainers  []k8sContainer     `yaml:"initContainers"`
				Containers      []k8sContainer     `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata k8sMeta `yaml:"metadata"`
		} `yaml:"volumeClaimTemplates"`
	} `yaml:"spec"`
}

type k8sService struct {
	Metadata k8sMeta `yaml:"metadata"`
	Spec     struct {
		Type      string            `yaml:"type"`
		ClusterIP string            `yaml:"clusterIP"`
		Selector  map[string]string `yaml:"selector"`
		Ports     []struct {
			Port       int         `yaml:"port"`
			TargetPort intOrString `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// selects reports whether the service routes to pods labelled labels.
func (s k8sService) selects(labels map[string]string) bool {
	for k, v := range s.Spec.Selector {
		if labels[k] != v {
			return false
		}
	}
	return len(s.Spec.Selector) > 0
}

// k8sCmd is an a2amesh container with its workload.
type k8sCmd struct {
	*roleCmd
	w *k8sWorkload
	c k8sContainer
}

// k8sFleet is deploy/k8s with its a2amesh command lines parsed.
type k8sFleet struct {
	workloads []*k8sWorkload
	services  map[string]k8sService
	byRole    map[string][]*k8sCmd
}

func TestDeployKubernetes(t *testing.T) {
	f := loadKubernetes(t)
	for _, s := range f.services {
		if s.Spec.Type != "" && s.Spec.Type != "ClusterIP" {
			t.Errorf("k8s: Service/%s: type %s opens a port outside the cluster; keep ClusterIP (front edges with an Ingress)", s.Metadata.Name, s.Spec.Type)
		}
	}
	for _, w := range f.workloads {
		checkPod(t, w)
	}
	nats := checkK8sNATS(t, f)

	// Edges and workers reach NATS through a Service of the NATS pods, or
	// a pod's stable name.
	var workers []*roleCmd
	for _, c := range append(slices.Clone(f.byRole["edge"]), f.byRole["worker"]...) {
		servers, err := natsServers(c.value("nats"))
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		for _, s := range servers {
			if !f.reachesNATS(nats, s[0], s[1]) {
				t.Errorf("%s: --nats names %s:%s, which reaches no NATS node's client port", c.where, s[0], s[1])
			}
		}
		if c.role == "worker" {
			workers = append(workers, c.roleCmd)
			port := c.metricsPort()
			if port == "" || c.w.Spec.Template.Metadata.Annotations["prometheus.io/port"] != port {
				t.Errorf("%s: serve metrics (--metrics-listen) and annotate the pod prometheus.io/port with that port", c.where)
			}
		}
	}
	checkPlanner(t, "k8s", workers)
	checkK8sEdge(t, f)
}

// loadKubernetes reads the kustomization and every manifest it lists, and
// parses the command line of every a2amesh container.
func loadKubernetes(t *testing.T) *k8sFleet {
	dir := filepath.Join(deployDir, "k8s")
	var kust struct {
		Namespace string   `yaml:"namespace"`
		Resources []string `yaml:"resources"`
		Images    []struct {
			Name string `yaml:"name"`
		} `yaml:"images"`
	}
	readYAML(t, filepath.Join(dir, "kustomization.yaml"), &kust)
	if kust.Namespace != "a2amesh" {
		t.Errorf("kustomization: namespace %q, want a2amesh", kust.Namespace)
	}
	renamed := false
	for _, i := range kust.Images {
		renamed = renamed || i.Name == k8sImage
	}
	if !renamed {
		t.Errorf("kustomization: images: name %s there, so one line changes the image", k8sImage)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var manifests []string
	for _, file := range files {
		if filepath.Base(file) != "kustomization.yaml" {
			manifests = append(manifests, filepath.Base(file))
		}
	}
	if got := slices.Sorted(slices.Values(kust.Resources)); !slices.Equal(got, manifests) {
		t.Errorf("kustomization: resources %v, want every manifest of deploy/k8s: %v", got, manifests)
	}

	f := &k8sFleet{services: map[string]k8sService{}, byRole: map[string][]*k8sCmd{}}
	namespaces := map[string]bool{}
	for _, file := range manifests {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var head struct {
				Kind     string  `yaml:"kind"`
				Metadata k8sMeta `yaml:"metadata"`
			}
			decode := func(v any) {
				if err := n.Decode(v); err != nil {
					t.Fatalf("%s: %s/%s: %v", file, head.Kind, head.Metadata.Name, err)
				}
			}
			decode(&head)
			switch head.Kind {
			case "Namespace":
				namespaces[head.Metadata.Name] = true
			case "Deployment", "StatefulSet":
				w := &k8sWorkload{}
				decode(w)
				f.workloads = append(f.workloads, w)
			case "Service":
				var s k8sService
				decode(&s)
				f.services[s.Metadata.Name] = s
			}
		}
	}
	if !namespaces["a2amesh"] {
		t.Error("k8s: no Namespace a2amesh")
	}

	dollarRef := regexp.MustCompile(`\$\(([A-Za-z0-9_]+)\)`)
	for _, w := range f.workloads {
		for _, c := range w.Spec.Template.Spec.Containers {
			if c.Image != k8sImage && !strings.HasPrefix(c.Image, k8sImage+":") {
				continue
			}
			where := fmt.Sprintf("k8s %s/%s container %s", w.Kind, w.Metadata.Name, c.Name)
			if len(c.Command) > 0 {
				t.Errorf("%s: keep the image's entrypoint (the binary); name the role in args", where)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			for _, a := range c.Args {
				for _, m := range dollarRef.FindAllStringSubmatch(a, -1) {
					if _, ok := env[m[1]]; !ok {
						t.Errorf("%s: %s: $(%s) is not in the container's env", where, a, m[1])
					}
				}
			}
			rc, err := newRoleCmd(where, w.Metadata.Name, c.Args, env)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			checkCommon(t, rc)
			if rc.role == "edge" || rc.role == "worker" {
				host, port, err := otlpTarget(env)
				if err != nil {
					t.Errorf("%s: %v", where, err)
				} else if !f.serviceHasPort(host, port) {
					t.Errorf("%s: spans go to %s:%s, which is no Service's port", where, host, port)
				}
			}
			f.byRole[rc.role] = append(f.byRole[rc.role], &k8sCmd{roleCmd: rc, w: w, c: c})
		}
	}
	return f
}

// checkPod: non-root, no privilege escalation, a read-only root filesystem,
// nothing on the host's network or ports.
func checkPod(t *testing.T, w *k8sWorkload) {
	pod := w.Spec.Template.Spec
	if pod.HostNetwork {
		t.Errorf("k8s: %s/%s: hostNetwork", w.Kind, w.Metadata.Name)
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		where := fmt.Sprintf("k8s %s/%s container %s", w.Kind, w.Metadata.Name, c.Name)
		sc := c.SecurityContext
		if !ptrTrue(sc.RunAsNonRoot) && !ptrTrue(pod.SecurityContext.RunAsNonRoot) {
			t.Errorf("%s: runAsNonRoot", where)
		}
		if !ptrTrue(sc.ReadOnlyRootFilesystem) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: readOnlyRootFilesystem: true and allowPrivilegeEscalation: false", where)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				t.Errorf("%s: hostPort %d", where, p.HostPort)
			}
		}
	}
}

// checkK8sNATS: a 3-replica StatefulSet; each pod named after itself,
// routed to every pod by its stable DNS name through the headless Service,
// with its data on its own claim. It returns the NATS container.
func checkK8sNATS(t *testing.T, f *k8sFleet) *k8sCmd {
	if len(f.byRole["nats"]) != 1 || f.byRole["nats"][0].w.Kind != "StatefulSet" {
		t.Fatalf("k8s: want one StatefulSet running a2amesh nats, got %d NATS containers", len(f.byRole["nats"]))
	}
	nats := f.byRole["nats"][0]
	sts := nats.w
	if sts.Spec.Replicas != 3 {
		t.Errorf("%s: %d replicas, want 3", nats.where, sts.Spec.Replicas)
	}
	podName := false
	for _, e := range nats.c.Env {
		if nats.value("name") == "$("+e.Name+")" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			podName = true
		}
	}
	if !podName {
		t.Errorf("%s: --name %q: name each node after its pod, $(POD_NAME) from metadata.name", nats.where, nats.value("name"))
	}
	if nats.value("cluster") == "" {
		t.Errorf("%s: no --cluster", nats.where)
	}
	headless, ok := f.services[sts.Spec.ServiceName]
	if !ok || headless.Spec.ClusterIP != "None" || !headless.selects(sts.Spec.Template.Metadata.Labels) {
		t.Errorf("%s: serviceName %q: want a headless Service (clusterIP: None) selecting the pods", nats.where, sts.Spec.ServiceName)
	}
	routed := map[int]bool{}
	for _, r := range strings.Split(nats.value("routes"), ",") {
		u, err := url.Parse(strings.TrimSpace(r))
		if err != nil || u.Scheme != "nats-route" {
			t.Errorf("%s: route %q: want nats-route://host:port", nats.where, r)
			continue
		}
		i, ok := podOrdinal(sts, u.Hostname())
		if !ok {
			t.Errorf("%s: route %q: want %s-<0..%d>.%s", nats.where, r, sts.Metadata.Name, sts.Spec.Replicas-1, sts.Spec.ServiceName)
			continue
		}
		if u.Port() != nats.listenPorts()["listen-cluster"] {
			t.Errorf("%s: route %q: nodes listen for routes on port %s", nats.where, r, nats.listenPorts()["listen-cluster"])
		}
		routed[i] = true
	}
	for i := range sts.Spec.Replicas {
		if !routed[i] {
			t.Errorf("%s: no route to %s-%d", nats.where, sts.Metadata.Name, i)
		}
	}
	claims := map[string]bool{}
	for _, vc := range sts.Spec.VolumeClaimTemplates {
		claims[vc.Metadata.Name] = true
	}
	if !slices.ContainsFunc(nats.c.VolumeMounts, func(m k8sMount) bool {
		return m.MountPath == nats.value("data") && claims[m.Name]
	}) {
		t.Errorf("%s: --data %s: mount a volumeClaimTemplate there", nats.where, nats.value("data"))
	}
	return nats
}

// podOrdinal reads the ordinal of a StatefulSet pod's stable DNS name,
// <sts>-<i>.<serviceName>[.<namespace>...].
func podOrdinal(sts *k8sWorkload, host string) (int, bool) {
	labels := strings.Split(host, ".")
	if len(labels) < 2 || labels[1] != sts.Spec.ServiceName || !strings.HasPrefix(labels[0], sts.Metadata.Name+"-") {
		return 0, false
	}
	i, err := strconv.Atoi(strings.TrimPrefix(labels[0], sts.Metadata.Name+"-"))
	return i, err == nil && i >= 0 && i < sts.Spec.Replicas
}

// reachesNATS reports whether host:port reaches the client port of the
// NATS pods: a Service selecting them, or one pod's stable name.
func (f *k8sFleet) reachesNATS(nats *k8sCmd, host, port string) bool {
	clientPort := nats.listenPorts()["listen"]
	name, _, _ := strings.Cut(host, ".")
	if s, ok := f.services[name]; ok && s.selects(nats.w.Spec.Template.Metadata.Labels) {
		for _, p := range s.Spec.Ports {
			if strconv.Itoa(p.Port) == port && nats.c.port(p.TargetPort) == clientPort {
				return true
			}
		}
		return false
	}
	_, ok := podOrdinal(nats.w, host)
	return ok && port == clientPort
}

// checkK8sEdge: 2 replicas, probed on /healthz and /livez at their listen port, behind
// a Service.
func checkK8sEdge(t *testing.T, f *k8sFleet) {
	if len(f.byRole["edge"]) != 1 {
		t.Fatalf("k8s: want one edge Deployment, got %d edge containers", len(f.byRole["edge"]))
	}
	edge := f.byRole["edge"][0]
	listen := edge.listenPorts()["listen"]
	if edge.w.Spec.Replicas != 2 {
		t.Errorf("%s: %d replicas, want 2", edge.where, edge.w.Spec.Replicas)
	}
	// Readiness is /healthz (503 while NATS is away); liveness is /livez,
	// so a NATS failover never gets an edge restarted.
	for name, probe := range map[string]struct {
		p    *k8sProbe
		path string
	}{"readinessProbe": {edge.c.ReadinessProbe, "/healthz"}, "livenessProbe": {edge.c.LivenessProbe, "/livez"}} {
		if p := probe.p; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != probe.path || edge.c.port(p.HTTPGet.Port) != listen {
			t.Errorf("%s: %s: httpGet %s on the listen port %s", edge.where, name, probe.path, listen)
		}
	}
	for _, s := range f.services {
		if s.selects(edge.w.Spec.Template.Metadata.Labels) {
			for _, p := range s.Spec.Ports {
				if edge.c.port(p.TargetPort) == listen {
					return
				}
			}
		}
	}
	t.Errorf("%s: no Service routes to the edges' listen port", edge.where)
}

func ptrTrue(b *bool) bool { return b != nil && *b }

// serviceHasPort reports whether host (a Service name, maybe qualified)
// is a Service with that port.
func (f *k8sFleet) serviceHasPort(host, port string) bool {
	name, _, _ := strings.Cut(host, ".")
	for _, p := range f.services[name].Spec.Ports {
		if strconv.Itoa(p.Port) == port {
			return true
		}
	}
	return false
}
