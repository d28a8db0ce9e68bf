package edge

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock for the limiter.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestLimiter(l Limits) (*limiter, *fakeClock) {
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	return newLimiter(l, c.now), c
}

func TestLimitBurstThenRefuse(t *testing.T) {
	l, _ := newTestLimiter(Limits{Rate: 2, Burst: 5})
	for i := 0; i < 5; i++ {
		ok, _ := l.take("p:a")
		require.True(t, ok, "call %d of the burst", i+1)
	}
	ok, wait := l.take("p:a")
	assert.False(t, ok, "the call past the burst is refused")
	assert.Equal(t, 500*time.Millisecond, wait, "one token at 2/s is 0.5s away")
	// A refused call takes nothing: the wait does not grow.
	ok, wait2 := l.take("p:a")
	assert.False(t, ok)
	assert.Equal(t, wait, wait2)
}

func TestLimitRefill(t *testing.T) {
	l, c := newTestLimiter(Limits{Rate: 2, Burst: 3})
	for i := 0; i < 3; i++ {
		ok, _ := l.take("p:a")
		require.True(t, ok)
	}
	ok, _ := l.take("p:a")
	require.False(t, ok)
	c.advance(499 * time.Millisecond)
	ok, _ = l.take("p:a")
	assert.False(t, ok, "not yet a whole token")
	c.advance(time.Millisecond)
	ok, _ = l.take("p:a")
	assert.True(t, ok, "one token after 0.5s at 2/s")
	ok, _ = l.take("p:a")
	assert.False(t, ok)

	// A long idle refills to the burst, never beyond it.
	c.advance(time.Hour)
	for i := 0; i < 3; i++ {
		ok, _ := l.take("p:a")
		require.True(t, ok, "call %d after idling", i+1)
	}
	ok, _ = l.take("p:a")
	assert.False(t, ok, "an idle hour gives a burst of 3, not 7200")

	// The clock stepping back refills nothing.
	c.advance(-time.Minute)
	ok, _ = l.take("p:a")
	assert.False(t, ok)
}

func TestLimitPrincipalsIndependent(t *testing.T) {
	l, _ := newTestLimiter(Limits{Rate: 1, Burst: 2})
	for i := 0; i < 2; i++ {
		ok, _ := l.take("p:alice")
		require.True(t, ok)
	}
	ok, _ := l.take("p:alice")
	require.False(t, ok)
	for i := 0; i < 2; i++ {
		ok, _ := l.take("p:bob")
		assert.True(t, ok, "bob is not limited by alice's calls")
	}
}

func TestLimitDefaults(t *testing.T) {
	assert.Nil(t, newLimiter(Limits{}, nil), "rate 0 is off")
	assert.Nil(t, newLimiter(Limits{Rate: -1}, nil))
	l := newLimiter(Limits{Rate: 0.3}, nil)
	require.NotNil(t, l)
	assert.Equal(t, 1.0, l.burst, "burst is at least 1")
	assert.Equal(t, defaultMaxPrincipals, l.max)
	assert.Equal(t, 20.0, newLimiter(Limits{Rate: 10}, nil).burst, "burst defaults to 2×rate")
}

func TestLimitIdleBucketsAreSwept(t *testing.T) {
	l, c := newTestLimiter(Limits{Rate: 10, Burst: 10})
	for i := 0; i < 100; i++ {
		ok, _ := l.take("ip:10.0.0." + strconv.Itoa(i))
		require.True(t, ok)
	}
	ok, _ := l.take("p:busy")
	require.True(t, ok)
	require.Equal(t, 101, l.size())
	// Past the sweep interval every bucket but the busy one is full again.
	c.advance(sweepEvery - time.Second)
	for i := 0; i < 10; i++ {
		_, _ = l.take("p:busy")
	}
	c.advance(time.Second)
	_, _ = l.take("p:busy")
	assert.Equal(t, 1, l.size(), "full buckets are dropped; the drained one stays")
	// Dropped is the same as full: a swept principal gets its burst.
	for i := 0; i < 10; i++ {
		ok, _ := l.take("ip:10.0.0.1")
		require.True(t, ok)
	}
	ok, _ = l.take("ip:10.0.0.1")
	assert.False(t, ok)
}

func TestLimitMaxPrincipals(t *testing.T) {
	l, c := newTestLimiter(Limits{Rate: 1, Burst: 1, MaxPrincipals: 16})
	for i := 0; i < 1000; i++ {
		c.advance(time.Millisecond)
		ok, _ := l.take("ip:" + strconv.Itoa(i))
		require.True(t, ok, "a new principal gets its burst")
		require.LessOrEqual(t, l.size(), 16)
	}
	assert.Equal(t, 16, l.size())
	// A drained principal that keeps calling stays limited while others
	// come and go: it is among the two most recently seen, and the bucket
	// dropped is the least recently seen of a sample of 8.
	ok, _ := l.take("p:steady")
	require.True(t, ok)
	refused := 0
	for i := 0; i < 50; i++ {
		c.advance(time.Millisecond)
		_, _ = l.take("ip:new-" + strconv.Itoa(i))
		if ok, _ := l.take("p:steady"); !ok {
			refused++
		}
	}
	assert.Equal(t, 50, refused, "the steady principal stays limited")
	assert.LessOrEqual(t, l.size(), 16)
}

func TestLimitKey(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/a2a", nil)
	r.RemoteAddr = "127.0.0.1:5555"
	r.Header.Set("X-Forwarded-For", "203.0.113.9")
	assert.Equal(t, "ip:127.0.0.1", limitKey(r, ""), "X-Forwarded-For is not trusted")
	assert.Equal(t, "p:alice", limitKey(r, "alice"))
	r.RemoteAddr = "[::1]:5555"
	assert.Equal(t, "ip:::1", limitKey(r, ""))
	r.RemoteAddr = "pipe"
	assert.Equal(t, "ip:pipe", limitKey(r, ""))
}

func TestAllowAnswers429(t *testing.T) {
	lim := Limits{Rate: 0.5, Burst: 1}
	e := &Edge{cfg: Config{Limits: lim}, limiter: newLimiter(lim, nil)}
	call := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/a2a", nil)
		r.RemoteAddr = "127.0.0.1:4000"
		if !e.allow(w, r, "", rpcRefusals{}) {
			return w
		}
		return nil
	}
	require.Nil(t, call(), "the first call is allowed")
	w := call()
	require.NotNil(t, w, "the second call is refused")
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ra, 1)
	assert.LessOrEqual(t, ra, 2, "one token at 0.5/s is at most 2s away")
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	assert.Equal(t, "2.0", resp.JSONRPC)
	assert.Equal(t, "null", string(resp.ID))
	assert.Equal(t, codeRateLimited, resp.Error.Code)
	assert.True(t, resp.Error.Code <= -32000 && resp.Error.Code >= -32099)
	assert.Contains(t, resp.Error.Message, "Rate limit")

	off := &Edge{}
	for i := 0; i < 100; i++ {
		r := httptest.NewRequest(http.MethodPost, "/a2a", nil)
		require.True(t, off.allow(httptest.NewRecorder(), r, "", rpcRefusals{}), "no limits: every call passes")
	}
}
