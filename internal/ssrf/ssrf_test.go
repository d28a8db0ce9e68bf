package ssrf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func mustNew(t *testing.T, trusted ...string) *Guard {
	t.Helper()
	g, err := New(trusted)
	if err != nil {
		t.Fatalf("New(%q): %v", trusted, err)
	}
	return g
}

// checkURLCases are run against New(nil) and a nil *Guard.
var checkURLCases = []struct {
	url  string
	ok   bool
	want string // substring of the error
}{
	{"http://93.184.216.34/", true, ""},
	{"https://93.184.216.34:8443/a?b=c", true, ""},
	{"http://example.com/", true, ""},
	{"HTTPS://Example.COM/path", true, ""},
	{"http://example.com./", true, ""},
	{"http://[2606:4700:4700::1111]/", true, ""},
	{"http://[64:ff9b::5db8:d822]/", true, ""}, // NAT64 of a public address
	{"http://agents.internal:8080/", true, ""}, // names are checked at dial time

	{"ftp://example.com/", false, "scheme"},
	{"file:///etc/passwd", false, "scheme"},
	{"gopher://example.com/", false, "scheme"},
	{"javascript:alert(1)", false, "scheme"},
	{"data:text/plain,hi", false, "scheme"},
	{"example.com/path", false, "scheme"},
	{"http:///path", false, "no host"},
	{"http://", false, "no host"},
	{"http:example.com", false, "no host"},
	{"http://:80/", false, "no host"},
	{"http://user:secret@example.com/", false, "userinfo"},
	{"http://user@example.com/", false, "userinfo"},
	{"http://@example.com/", false, "userinfo"},
	{"http://example.com:0/", false, "port"},
	{"http://example.com:70000/", false, "port"},
	{"http://exa mple.com/", false, "malformed"},

	{"http://127.0.0.1/", false, "loopback"},
	{"http://127.0.0.1:8080/", false, "loopback"},
	{"http://10.1.2.3/", false, "private"},
	{"http://172.16.0.1/", false, "private"},
	{"http://172.31.255.255/", false, "private"},
	{"http://192.168.1.1/", false, "private"},
	{"http://169.254.169.254/latest/meta-data/", false, "link-local"},
	{"http://0.0.0.0/", false, "this network"},
	{"http://[::1]/", false, "loopback"},
	{"http://[::]/", false, "unspecified"},
	{"http://[fe80::1]/", false, "link-local"},
	{"http://[fc00::1]/", false, "unique local"},
	{"http://[fd12:3456::1]/", false, "unique local"},
	{"http://[::ffff:127.0.0.1]/", false, "loopback"},
	{"http://[::ffff:7f00:1]/", false, "loopback"},
	{"http://[::ffff:169.254.169.254]/", false, "link-local"},
	{"http://[64:ff9b::a00:1]/", false, "NAT64 of private"},
	{"http://[64:ff9b::7f00:1]/", false, "NAT64 of loopback"},
	{"http://[2002:7f00:1::]/", false, "6to4 of loopback"},
	{"http://[2002:a9fe:a9fe::1]/", false, "6to4 of link-local"},
	{"http://[2001:db8::1]/", false, "documentation"},
	{"http://[ff02::1]/", false, "multicast"},
	{"http://100.64.0.1/", false, "carrier-grade NAT"},
	{"http://224.0.0.1/", false, "multicast"},
	{"http://255.255.255.255/", false, "reserved"},
	{"http://240.0.0.1/", false, "reserved"},
	{"http://192.0.0.170/", false, "IETF"},
	{"http://192.0.2.1/", false, "documentation"},
	{"http://198.18.0.1/", false, "benchmarking"},

	{"http://2130706433/", false, "127.0.0.1"},
	{"http://0x7f000001/", false, "127.0.0.1"},
	{"http://0X7F000001/", false, "127.0.0.1"},
	{"http://0177.0.0.1/", false, "127.0.0.1"},
	{"http://017700000001/", false, "127.0.0.1"},
	{"http://127.1/", false, "127.0.0.1"},
	{"http://127.0.1/", false, "127.0.0.1"},
	{"http://0x7f.1/", false, "127.0.0.1"},
	{"http://127.0.0.1./", false, "127.0.0.1"},
	{"http://127.000.000.001/", false, "127.0.0.1"},
	{"http://1572395042/", false, "93.184.216.34"}, // public, but still obfuscated
	{"http://1.2.3.4.5/", false, "ends in a number"},
	{"http://foo.123/", false, "ends in a number"},

	{"http://[fe80::1%25eth0]/", false, "zone"},
	{"http://[fe80::1%25eth0]:8080/", false, "zone"},
	{"http://localhost/", false, "loopback"},
	{"http://LocalHost.:8080/", false, "loopback"},
	{"http://api.localhost/", false, "loopback"},
}

func TestCheckURL(t *testing.T) {
	guards := map[string]*Guard{"New(nil)": mustNew(t), "nil": nil}
	for gname, g := range guards {
		for _, c := range checkURLCases {
			err := g.CheckURL(c.url)
			if c.ok {
				if err != nil {
					t.Errorf("%s: CheckURL(%q) = %v, want ok", gname, c.url, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s: CheckURL(%q) = nil, want refusal", gname, c.url)
				continue
			}
			if !errors.Is(err, ErrBlocked) {
				t.Errorf("%s: CheckURL(%q) = %v, does not wrap ErrBlocked", gname, c.url, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: CheckURL(%q) = %v, want it to mention %q", gname, c.url, err, c.want)
			}
		}
	}
}

func TestCheckURLHidesPassword(t *testing.T) {
	err := mustNew(t).CheckURL("http://user:hunter2@example.com/")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v leaks the password", err)
	}
}

func TestCheckURLTrusted(t *testing.T) {
	cases := []struct {
		trusted []string
		url     string
		ok      bool
	}{
		{[]string{"10.0.0.5"}, "http://10.0.0.5/", true},
		{[]string{"10.0.0.5"}, "http://10.0.0.6/", false},
		{[]string{"10.0.0.5"}, "http://[::ffff:10.0.0.5]/", true},
		{[]string{"10.0.0.0/8"}, "http://10.200.1.1:9000/", true},
		{[]string{"10.0.0.0/8"}, "http://11.0.0.1/", true}, // public anyway
		{[]string{"10.0.0.0/8"}, "http://192.168.0.1/", false},
		{[]string{"10.0.0.0/8"}, "http://169.254.169.254/", false},
		{[]string{"::1"}, "http://[::1]:8080/", true},
		{[]string{"::1"}, "http://127.0.0.1:8080/", false},
		{[]string{"fd00::/8"}, "http://[fd00::1234]/", true},
		{[]string{"127.0.0.1:9001"}, "http://127.0.0.1:9001/", true},
		{[]string{"127.0.0.1:9001"}, "http://127.0.0.1:9002/", false},
		{[]string{"127.0.0.1:9001"}, "http://127.0.0.2:9001/", false},
		{[]string{"127.0.0.1:80"}, "http://127.0.0.1/", true},
		{[]string{"127.0.0.1:80"}, "https://127.0.0.1/", false},
		{[]string{"[::1]:9001"}, "http://[::1]:9001/", true},
		{[]string{"[::1]:9001"}, "http://[::1]:9002/", false},
		{[]string{"127.0.0.1"}, "http://localhost:1234/", true},
		{[]string{"localhost"}, "http://localhost:1234/", true},
		{[]string{"localhost"}, "http://LOCALHOST.:1234/", true},
		{[]string{"localhost:1234"}, "http://localhost:1234/", true},
		{[]string{"localhost:1234"}, "http://localhost:1235/", false},
		{[]string{"localhost:80"}, "http://localhost/", true},
		{[]string{"localhost"}, "http://127.0.0.1/", false}, // name trust is not address trust
		{[]string{"agents.internal"}, "http://127.1/", false},
		{[]string{"127.0.0.0/8"}, "http://2130706433/", false}, // obfuscation is refused even if trusted
	}
	for _, c := range cases {
		g := mustNew(t, c.trusted...)
		err := g.CheckURL(c.url)
		if c.ok && err != nil {
			t.Errorf("trusted %q: CheckURL(%q) = %v, want ok", c.trusted, c.url, err)
		}
		if !c.ok && !errors.Is(err, ErrBlocked) {
			t.Errorf("trusted %q: CheckURL(%q) = %v, want ErrBlocked", c.trusted, c.url, err)
		}
	}
}

func TestAllowed(t *testing.T) {
	cases := []struct {
		ip string
		ok bool
	}{
		{"93.184.216.34", true},
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"172.32.0.1", true},
		{"100.128.0.1", true},
		{"192.31.196.1", true}, // AS112, globally reachable
		{"2606:4700:4700::1111", true},
		{"2a00:1450:4001::200e", true},
		{"64:ff9b::808:808", true},
		{"2002:808:808::1", true},
		{"::ffff:8.8.8.8", true},

		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"100.64.0.1", false},
		{"100.127.255.255", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"192.0.0.8", false},
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.0.1", false},
		{"198.18.0.1", false},
		{"198.19.255.255", false},
		{"198.51.100.1", false},
		{"203.0.113.1", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"::", false},
		{"::1", false},
		{"::127.0.0.1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"64:ff9b::a00:1", false},
		{"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b:1::808:808", false},
		{"100::1", false},
		{"2001::1", false},
		{"2001:db8::1", false},
		{"2002:a00:1::", false},
		{"2002:c0a8:101::1", false},
		{"3fff::1", false},
		{"5f00::1", false},
		{"fc00::1", false},
		{"fd00::1", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"4000::1", false}, // outside global unicast
	}
	g := mustNew(t)
	for _, c := range cases {
		ip := netip.MustParseAddr(c.ip)
		if got := g.Allowed(ip); got != c.ok {
			t.Errorf("Allowed(%s) = %v, want %v", c.ip, got, c.ok)
		}
		if got := (*Guard)(nil).Allowed(ip); got != c.ok {
			t.Errorf("nil Guard: Allowed(%s) = %v, want %v", c.ip, got, c.ok)
		}
	}
	if g.Allowed(netip.Addr{}) {
		t.Error("Allowed(zero Addr) = true")
	}

	trusted := mustNew(t, "127.0.0.1", "10.0.0.0/8", "fd00::/8", "127.0.0.2:8080")
	for _, c := range []struct {
		ip string
		ok bool
	}{
		{"127.0.0.1", true},
		{"::ffff:127.0.0.1", true},
		{"127.0.0.2", false}, // only trusted on one port, which Allowed does not know
		{"10.255.0.1", true},
		{"fd00::1", true},
		{"fc00::1", false},
		{"169.254.169.254", false},
	} {
		if got := trusted.Allowed(netip.MustParseAddr(c.ip)); got != c.ok {
			t.Errorf("trusted: Allowed(%s) = %v, want %v", c.ip, got, c.ok)
		}
	}
}

func TestNew(t *testing.T) {
	good := []string{
		"10.0.0.5", "::1", "10.0.0.0/8", "10.1.2.3/8", "fd00::/8", "agents.internal", "Agents.Internal.",
		"localhost", "127.0.0.1:9001", "[::1]:9001", "agents.internal:8443", " 10.0.0.5 ", "my_host",
	}
	for _, e := range good {
		if _, err := New([]string{e}); err != nil {
			t.Errorf("New(%q) = %v, want ok", e, err)
		}
	}
	bad := []string{
		"", "  ", "10.0.0.0/33", "10.0.0/8", "10.0.0.0/", "not a host", "http://agents.internal",
		"agents.internal:", "agents.internal:0", "agents.internal:http", "agents.internal:70000",
		"127.0.0.1:0", "[::1]", "fe80::1%eth0", "127.1", "2130706433", "0x7f000001", "foo..bar",
		".", "a/b", "exa$mple.com", "::1:80:", "[::1]:",
	}
	for _, e := range bad {
		_, err := New([]string{"10.0.0.1", e})
		if err == nil {
			t.Errorf("New(%q) = nil error, want error", e)
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", e)) {
			t.Errorf("New(%q) = %v, want the entry named", e, err)
		}
	}
	if g, err := New(nil); err != nil || g == nil {
		t.Errorf("New(nil) = %v, %v", g, err)
	}
}

// server is an httptest server on 127.0.0.1 counting its requests.
type server struct {
	*httptest.Server
	hits atomic.Int64
	port string
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(s.Close)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if host := u.Hostname(); host != "127.0.0.1" {
		t.Fatalf("test server on %s, want 127.0.0.1", host)
	}
	s.port = u.Port()
	return s
}

// get fetches u with a client from g, bounded in time.
func get(g *Guard, u string) error {
	c := g.HTTPClient(5 * time.Second)
	defer c.CloseIdleConnections()
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

func TestDialTimeCheck(t *testing.T) {
	a := newServer(t, nil)
	b := newServer(t, nil)
	cases := []struct {
		trusted []string
		url     string
		ok      bool
	}{
		{nil, "http://localhost:" + a.port + "/", false},
		{nil, "http://127.0.0.1:" + a.port + "/", false},
		{nil, "http://[::ffff:127.0.0.1]:" + a.port + "/", false},
		{nil, "http://0.0.0.0:" + a.port + "/", false},
		{[]string{"10.0.0.0/8"}, "http://localhost:" + a.port + "/", false},
		{[]string{"127.0.0.1"}, "http://localhost:" + a.port + "/", true},
		{[]string{"127.0.0.1"}, "http://127.0.0.1:" + a.port + "/", true},
		{[]string{"127.0.0.0/8"}, "http://127.0.0.1:" + b.port + "/", true},
		{[]string{"localhost:" + a.port}, "http://localhost:" + a.port + "/", true},
		{[]string{"localhost:" + a.port}, "http://localhost:" + b.port + "/", false},
		{[]string{"localhost:" + a.port}, "http://127.0.0.1:" + a.port + "/", false},
		{[]string{"localhost"}, "http://localhost:" + b.port + "/", true},
		{[]string{"127.0.0.1:" + a.port}, "http://127.0.0.1:" + a.port + "/", true},
		{[]string{"127.0.0.1:" + a.port}, "http://localhost:" + a.port + "/", true},
		{[]string{"127.0.0.1:" + a.port}, "http://127.0.0.1:" + b.port + "/", false},
		{[]string{"127.0.0.1:" + a.port}, "http://localhost:" + b.port + "/", false},
	}
	for _, c := range cases {
		before := a.hits.Load() + b.hits.Load()
		for gname, g := range map[string]*Guard{"New": mustNew(t, c.trusted...), "nil": nil} {
			if gname == "nil" && c.trusted != nil {
				continue
			}
			err := get(g, c.url)
			if c.ok && err != nil {
				t.Errorf("%s trusted %q: GET %s: %v, want ok", gname, c.trusted, c.url, err)
			}
			if !c.ok {
				if !errors.Is(err, ErrBlocked) {
					t.Errorf("%s trusted %q: GET %s: %v, want ErrBlocked", gname, c.trusted, c.url, err)
				}
				if n := a.hits.Load() + b.hits.Load(); n != before {
					t.Errorf("%s trusted %q: GET %s reached the server", gname, c.trusted, c.url)
				}
			}
		}
	}
}

func TestDialContext(t *testing.T) {
	s := newServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, g := range []*Guard{nil, mustNew(t), mustNew(t, "10.0.0.0/8", "example.com")} {
		for _, addr := range []string{
			"localhost:" + s.port, "127.0.0.1:" + s.port, "[::ffff:127.0.0.1]:" + s.port,
			"0.0.0.0:" + s.port, "[::1]:" + s.port, ":" + s.port, "localhost",
		} {
			conn, err := g.DialContext(ctx, "tcp", addr)
			if err == nil {
				conn.Close()
				t.Errorf("DialContext(tcp, %s) connected, want ErrBlocked", addr)
			} else if !errors.Is(err, ErrBlocked) {
				t.Errorf("DialContext(tcp, %s) = %v, want ErrBlocked", addr, err)
			}
		}
		for _, network := range []string{"udp", "unix", "ip4:icmp"} {
			if _, err := g.DialContext(ctx, network, "127.0.0.1:53"); !errors.Is(err, ErrBlocked) {
				t.Errorf("DialContext(%s) = %v, want ErrBlocked", network, err)
			}
		}
	}
	g := mustNew(t, "localhost:"+s.port)
	for _, network := range []string{"tcp", "tcp4"} {
		conn, err := g.DialContext(ctx, network, "localhost:"+s.port)
		if err != nil {
			t.Errorf("trusted DialContext(%s, localhost:%s) = %v", network, s.port, err)
			continue
		}
		conn.Close()
	}
}

func TestRedirectRecheck(t *testing.T) {
	b := newServer(t, nil)
	a := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		io.WriteString(w, "ok")
	})
	cases := []struct {
		to string
		ok bool
	}{
		{"/", true},
		{"/?x=1", true},
		{"http://169.254.169.254/latest/meta-data/", false},
		{"http://[fd00:ec2::254]/", false},
		{"http://127.0.0.1:" + b.port + "/", false},
		{"http://[::1]:" + b.port + "/", false},
		{"http://2130706433:" + b.port + "/", false},
		{"http://localhost:" + b.port + "/", false},
		{"ftp://127.0.0.1:" + a.port + "/", false},
		{"http://u:p@127.0.0.1:" + a.port + "/", false},
	}
	for _, trusted := range []string{"127.0.0.1:" + a.port, "localhost:" + a.port} {
		g := mustNew(t, trusted)
		start := "http://127.0.0.1:" + a.port + "/"
		if strings.HasPrefix(trusted, "localhost") {
			start = "http://localhost:" + a.port + "/"
		}
		for _, c := range append(cases, struct {
			to string
			ok bool
		}{start, true}) {
			err := get(g, start+"?to="+url.QueryEscape(c.to))
			if c.ok && err != nil {
				t.Errorf("trusted %s: redirect to %s: %v, want ok", trusted, c.to, err)
			}
			if !c.ok && !errors.Is(err, ErrBlocked) {
				t.Errorf("trusted %s: redirect to %s: %v, want ErrBlocked", trusted, c.to, err)
			}
		}
	}
	if n := b.hits.Load(); n != 0 {
		t.Errorf("untrusted server got %d requests", n)
	}
}

func TestRedirectLimit(t *testing.T) {
	// /n redirects to /n-1 ... /0 answers.
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/%d", &n); err != nil || n <= 0 {
			io.WriteString(w, "ok")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/%d", n-1), http.StatusFound)
	})
	g := mustNew(t, "127.0.0.1")
	if err := get(g, fmt.Sprintf("%s/%d", s.URL, maxRedirects)); err != nil {
		t.Errorf("%d redirects: %v", maxRedirects, err)
	}
	err := get(g, fmt.Sprintf("%s/%d", s.URL, maxRedirects+1))
	if err == nil || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("%d redirects: %v, want too many redirects", maxRedirects+1, err)
	}
}

func TestTransport(t *testing.T) {
	for _, g := range []*Guard{nil, mustNew(t)} {
		tr := g.Transport()
		if tr.Proxy != nil {
			t.Error("Transport().Proxy is set")
		}
		if tr.DialContext == nil || !tr.ForceAttemptHTTP2 {
			t.Error("Transport() does not dial through the guard or does not attempt HTTP/2")
		}
		if tr.TLSHandshakeTimeout <= 0 || tr.ResponseHeaderTimeout <= 0 || tr.IdleConnTimeout <= 0 {
			t.Error("Transport() lacks timeouts")
		}
		c := g.HTTPClient(0)
		if c.Timeout != 0 || c.CheckRedirect == nil {
			t.Errorf("HTTPClient(0): timeout %v, CheckRedirect set %v", c.Timeout, c.CheckRedirect != nil)
		}
	}
}

// Responses are read through an ordinary net.Conn: make sure a trusted
// DialContext returns a working connection, not just a nil error.
func TestDialContextConnWorks(t *testing.T) {
	s := newServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := mustNew(t, "127.0.0.1").DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, "GET / HTTP/1.0\r\nHost: x\r\n\r\n")
	body, _ := io.ReadAll(conn)
	if !strings.Contains(string(body), "ok") {
		t.Errorf("response %q", body)
	}
}
