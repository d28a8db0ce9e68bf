package push

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/ssrf"
)

// Both token shapes are read, top-level first.
func TestPushTokenShapes(t *testing.T) {
	for _, c := range []struct {
		json, want string
	}{
		{`{"url":"https://h/x","token":"top"}`, "top"},
		{`{"url":"https://h/x","authentication":{"schemes":["Bearer"],"credentials":"cred"}}`, "cred"},
		{`{"url":"https://h/x","authentication":{"scheme":"Bearer","credentials":"cred"}}`, "cred"},
		{`{"url":"https://h/x","token":"top","authentication":{"scheme":"Bearer","credentials":"cred"}}`, "top"},
		{`{"taskId":"t","pushNotificationConfig":{"url":"https://h/x","authentication":{"schemes":["Basic"],"credentials":"cred"}}}`, "cred"},
		{`{"url":"https://h/x"}`, ""},
	} {
		var cfg a2a.TaskPushNotificationConfig
		if err := json.Unmarshal([]byte(c.json), &cfg); err != nil {
			t.Fatal(err)
		}
		if got := pushToken(cfg); got != c.want {
			t.Errorf("%s: token %q, want %q", c.json, got, c.want)
		}
	}
}

func TestPushBackoffBounded(t *testing.T) {
	d := &Deliverer{cfg: Config{Backoff: time.Second, MaxBackoff: 10 * time.Second}.withDefaults()}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := d.backoff(uint64(i + 1)); got != w {
			t.Errorf("attempt %d: %v, want %v", i+1, got, w)
		}
	}
	if got := d.backoff(1 << 40); got != 10*time.Second {
		t.Errorf("huge attempt: %v", got)
	}
}

func TestValidatePushConfig(t *testing.T) {
	g, err := ssrf.New([]string{"127.0.0.1:9999"})
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{guard: g}
	ok := []a2a.TaskPushNotificationConfig{
		{URL: "http://127.0.0.1:9999/hook"},
		{URL: "https://hooks.example.com/x", ID: "abc-1", Token: "t"},
		{URL: "https://hooks.example.com/x", Authentication: &a2a.AuthenticationInfo{Scheme: "Basic", Credentials: "dTpw"}},
	}
	for _, c := range ok {
		if err := s.Validate(&c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := []a2a.TaskPushNotificationConfig{
		{},
		{URL: "http://127.0.0.1:9998/hook"},
		{URL: "http://[::1]/"},
		{URL: "http://192.168.1.1/"},
		{URL: "gopher://x/"},
		{URL: "https://u:p@hooks.example.com/"},
		{URL: "https://hooks.example.com/", ID: "a b"},
		{URL: "https://hooks.example.com/", Token: "x\ny"},
		{URL: "https://hooks.example.com/", Authentication: &a2a.AuthenticationInfo{Scheme: "", Credentials: "c"}},
		{URL: "https://hooks.example.com/", Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "c\r\n"}},
	}
	for _, c := range bad {
		err := s.Validate(&c)
		if !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("%+v: got %v, want invalid params", c, err)
		}
	}
}

func TestPushWorthy(t *testing.T) {
	user := &a2a.StreamResponse{Message: &a2a.Message{Role: a2a.RoleUser}}
	agent := &a2a.StreamResponse{Message: &a2a.Message{Role: a2a.RoleAgent}}
	task := &a2a.StreamResponse{Task: &a2a.Task{}}
	status := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{}}
	if pushWorthy(user) || pushWorthy(task) || !pushWorthy(agent) || !pushWorthy(status) {
		t.Fatal("pushWorthy")
	}
	// a worker's claim of an undecided turn, and a message reply, are not
	// notified (agentrt.Reply)
	claim := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{State: a2a.StateWorking},
		Metadata: a2a.Metadata{a2a.ClaimKey: true}}}
	reply := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{State: a2a.StateCompleted,
		Message: &a2a.Message{Role: a2a.RoleAgent, Metadata: a2a.Metadata{a2a.ReplyKey: true}}}}}
	if pushWorthy(claim) || pushWorthy(reply) {
		t.Fatal("pushWorthy of a claim or a message reply")
	}
}

func TestPushIndexExpires(t *testing.T) {
	x := newIndex()
	x.mu.Lock()
	x.tasks["old"] = map[string]uint64{"c": 1}
	x.newest["old"] = time.Now().Add(-2 * time.Hour)
	x.tasks["new"] = map[string]uint64{"c": 1}
	x.newest["new"] = time.Now()
	x.mu.Unlock()
	x.expire(time.Now().Add(-time.Hour))
	if x.configs("old") != nil || x.configs("new") == nil {
		t.Fatalf("expire kept %v", x.tasks)
	}
}
