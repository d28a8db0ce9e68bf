package edge_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/natstest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/registry"
)

// fleetDoc is GET /ops/v1/fleet as a client reads it.
type fleetDoc struct {
	Agents []struct {
		Name    string `json:"name"`
		Workers int    `json:"workers"`
		Queue   struct {
			Pending     uint64 `json:"pending"`
			InFlight    uint64 `json:"inFlight"`
			Redelivered uint64 `json:"redelivered"`
			DeadLetters uint64 `json:"deadLetters"`
		} `json:"queue"`
		Card struct {
			Name   string `json:"name"`
			Skills []struct {
				ID string `json:"id"`
			} `json:"skills"`
		} `json:"card"`
		CardCheck *registry.CardCheck `json:"cardCheck"`
	} `json:"agents"`
	Time time.Time `json:"time"`
}

// opsGet asks the edge at base for path, with key when not empty.
func opsGet(t *testing.T, base, path, key string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set(edge.APIKeyHeader, key)
	}
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

func readFleet(t *testing.T, base, key string) fleetDoc {
	t.Helper()
	code, hdr, body := opsGet(t, base, "/ops/v1/fleet", key)
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.Equal(t, "application/json", hdr.Get("Content-Type"))
	require.Equal(t, "no-store", hdr.Get("Cache-Control"))
	var doc fleetDoc
	require.NoError(t, json.Unmarshal(body, &doc))
	return doc
}

// GET /ops/v1/fleet lists every live agent with its workers, its card's
// skills and its work queue: tasks held by workers while they run, none
// once they finish, and the agent's dead letters.
func TestOpsFleet(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	doc := readFleet(t, m.URL, "")
	names := map[string]int{}
	for i, a := range doc.Agents {
		names[a.Name] = i
		require.Equal(t, 1, a.Workers, a.Name)
		require.Equal(t, a.Name, a.Card.Name)
	}
	require.Contains(t, names, "echo")
	require.Contains(t, names, "slow")
	echo := doc.Agents[names["echo"]]
	require.Equal(t, "echo", echo.Card.Skills[0].ID)
	require.Zero(t, echo.Queue)
	require.WithinDuration(t, time.Now(), doc.Time, 10*time.Second)

	// Three slow tasks run at once: in flight until they finish.
	for i := range 3 {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"ops-slow-%d","parts":[{"text":"chunks=10 delay=200ms"}]},"configuration":{"returnImmediately":true}}}`, i, i)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/agents/slow", bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	slow := func() (q [2]uint64) {
		for _, a := range readFleet(t, m.URL, "").Agents {
			if a.Name == "slow" {
				q = [2]uint64{a.Queue.Pending, a.Queue.InFlight}
			}
		}
		return q
	}
	require.True(t, natstest.Eventually(ctx, 5*time.Second, func() bool { return slow() == [2]uint64{0, 3} }),
		"three slow tasks in flight; last %v", slow())
	require.True(t, natstest.Eventually(ctx, 15*time.Second, func() bool { return slow() == [2]uint64{0, 0} }),
		"none in flight once they finished; last %v", slow())

	require.NoError(t, m.Bus().DeadLetter(ctx, "echo", []byte("{}"), "test"))
	for _, a := range readFleet(t, m.URL, "").Agents {
		if a.Name == "echo" {
			require.EqualValues(t, 1, a.Queue.DeadLetters)
			require.Nil(t, a.CardCheck, "not a proxy")
		}
	}

	// A proxy's entry says what it verified of its upstream card.
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = registry.Publish(pctx, m.Bus(), registry.Entry{Agent: "proxied", Instance: "p1", Card: a2a.AgentCard{Name: "proxied"},
			CardCheck: &registry.CardCheck{Status: registry.CardInvalid, Error: "no key verifies"}}, nil, nil)
	}()
	defer func() { stop(); <-done }()
	var check *registry.CardCheck
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool {
		for _, a := range readFleet(t, m.URL, "").Agents {
			if a.Name == "proxied" {
				check = a.CardCheck
				return a.Workers == 1
			}
		}
		return false
	}), "the proxy's agent listed")
	require.Equal(t, &registry.CardCheck{Status: registry.CardInvalid, Error: "no key verifies"}, check)
}

// With auth the operator API needs a key like the A2A endpoints: 401 with
// the challenges without one or with a wrong one.
func TestOpsFleetNeedsKey(t *testing.T) {
	const key = "alice-secret-0123456789"
	auth, err := edge.NewAuth(map[string][]string{"alice": {key}})
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Auth = auth }))
	for _, k := range []string{"", "wrong-secret-0123456789"} {
		code, hdr, body := opsGet(t, m.URL, "/ops/v1/fleet", k)
		require.Equal(t, http.StatusUnauthorized, code, "key %q", k)
		require.NotEmpty(t, hdr.Values("WWW-Authenticate"))
		require.Contains(t, string(body), `"error":`)
		require.NotContains(t, string(body), "echo")
	}
	require.NotEmpty(t, readFleet(t, m.URL, key).Agents)
}

// Config.DisableConsole leaves /console unserved (404) and the operator
// API served; by default the console is there.
func TestConsoleDisabled(t *testing.T) {
	on := meshtest.Start(t)
	code, _, _ := opsGet(t, on.URL, "/console/", "")
	require.Equal(t, http.StatusOK, code)

	off := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.DisableConsole = true }))
	for _, p := range []string{"/console", "/console/", "/console/app.js"} {
		code, _, _ := opsGet(t, off.URL, p, "")
		require.Equal(t, http.StatusNotFound, code, p)
	}
	readFleet(t, off.URL, "")
}

// opsSend sends text to agent over JSON-RPC with key and waits for the
// task to end; it returns the task's id.
func opsSend(t *testing.T, base, agent, text, key string) string {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"%d","parts":[{"text":%q}]}}}`, time.Now().UnixNano(), text)
	req, err := http.NewRequest(http.MethodPost, base+"/agents/"+agent, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if key != "" {
		req.Header.Set(edge.APIKeyHeader, key)
	}
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Task struct{ ID string } `json:"task"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.NotEmpty(t, out.Result.Task.ID)
	return out.Result.Task.ID
}

// eventsDoc is GET /ops/v1/tasks/{id}/events as a client reads it.
type eventsDoc struct {
	TaskID string `json:"taskId"`
	State  string `json:"state"`
	Events []struct {
		Seq   uint64                     `json:"seq"`
		Time  time.Time                  `json:"time"`
		Event map[string]json.RawMessage `json:"event"`
	} `json:"events"`
	More bool `json:"more"`
}

func readEvents(t *testing.T, base, query, key string) eventsDoc {
	t.Helper()
	code, _, body := opsGet(t, base, query, key)
	require.Equal(t, http.StatusOK, code, "%s", body)
	var doc eventsDoc
	require.NoError(t, json.Unmarshal(body, &doc), "%s", body)
	return doc
}

// GET /ops/v1/tasks/{id}/events replays a task's log in order, with each
// event's position and time, a page at a time; bad positions and limits
// are 400, an unknown task 404.
func TestOpsTaskEvents(t *testing.T) {
	m := meshtest.Start(t)
	id := opsSend(t, m.URL, "slow", "chunks=3 delay=10ms", "")
	path := "/ops/v1/tasks/" + id + "/events"

	all := readEvents(t, m.URL, path, "")
	require.Equal(t, id, all.TaskID)
	require.Equal(t, "TASK_STATE_COMPLETED", all.State)
	require.False(t, all.More)
	var kinds []string
	for i, ev := range all.Events {
		if i > 0 {
			require.Greater(t, ev.Seq, all.Events[i-1].Seq)
			require.False(t, ev.Time.Before(all.Events[i-1].Time))
		}
		for k := range ev.Event {
			kinds = append(kinds, k)
		}
	}
	require.Equal(t, "task", kinds[0])
	require.Equal(t, 3, strings.Count(strings.Join(kinds, " "), "artifactUpdate"), "%v", kinds)
	require.Equal(t, "statusUpdate", kinds[len(kinds)-1])
	require.Contains(t, string(all.Events[len(all.Events)-1].Event["statusUpdate"]), "TASK_STATE_COMPLETED")

	first := readEvents(t, m.URL, path+"?limit=2", "")
	require.True(t, first.More)
	require.Len(t, first.Events, 2)
	rest := readEvents(t, m.URL, fmt.Sprintf("%s?after=%d", path, first.Events[1].Seq), "")
	require.False(t, rest.More)
	require.Len(t, rest.Events, len(all.Events)-2)
	require.Equal(t, all.Events[2].Seq, rest.Events[0].Seq)
	none := readEvents(t, m.URL, fmt.Sprintf("%s?after=%d", path, all.Events[len(all.Events)-1].Seq), "")
	require.Empty(t, none.Events)
	require.False(t, none.More)

	for q, want := range map[string]int{
		path + "?after=x":                   http.StatusBadRequest,
		path + "?after=-1":                  http.StatusBadRequest,
		path + "?limit=0":                   http.StatusBadRequest,
		path + "?limit=1001":                http.StatusBadRequest,
		"/ops/v1/tasks/no-such-task/events": http.StatusNotFound,
	} {
		code, _, body := opsGet(t, m.URL, q, "")
		require.Equal(t, want, code, "%s: %s", q, body)
		require.Contains(t, string(body), `"error":`)
	}
}

// A task's log is its owner's: another principal gets 404, as GetTask
// answers, and a call without a key 401.
func TestOpsTaskEventsAreTheOwners(t *testing.T) {
	const alice, bob = "alice-secret-0123456789", "bob-secret-0123456789ab"
	auth, err := edge.NewAuth(map[string][]string{"alice": {alice}, "bob": {bob}})
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Auth = auth }))
	id := opsSend(t, m.URL, "echo", "alice's", alice)
	path := "/ops/v1/tasks/" + id + "/events"
	require.NotEmpty(t, readEvents(t, m.URL, path, alice).Events)
	code, _, body := opsGet(t, m.URL, path, bob)
	require.Equal(t, http.StatusNotFound, code)
	require.NotContains(t, string(body), "alice's")
	code, _, _ = opsGet(t, m.URL, path, "")
	require.Equal(t, http.StatusUnauthorized, code)
}

// A large answer is gzipped for a client that accepts it, and plain for
// one that does not.
func TestOpsGzip(t *testing.T) {
	m := meshtest.Start(t)
	get := func(enc string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, m.URL+"/ops/v1/fleet", nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", enc) // set by hand: the transport leaves the body as sent
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp, b
	}
	plain, body := get("identity")
	require.Empty(t, plain.Header.Get("Content-Encoding"))
	require.True(t, json.Valid(body))
	require.Greater(t, len(body), 4<<10, "the fleet of dev's agents is large enough to compress")

	zipped, zbody := get("br;q=1.0, gzip;q=0.8")
	require.Equal(t, "gzip", zipped.Header.Get("Content-Encoding"))
	require.Contains(t, zipped.Header.Values("Vary"), "Accept-Encoding")
	zr, err := gzip.NewReader(bytes.NewReader(zbody))
	require.NoError(t, err)
	unzipped, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.True(t, json.Valid(unzipped))
	require.Less(t, len(zbody), len(unzipped)/3)
	t.Logf("fleet: %d bytes, %d gzipped", len(unzipped), len(zbody))

	refused, _ := get("gzip;q=0")
	require.Empty(t, refused.Header.Get("Content-Encoding"))
}
