// Package ssrf guards outbound requests to URLs that users supply (the agent
// URL of a proxy worker, push-notification webhooks) against server-side
// request forgery: reaching loopback, private, link-local (cloud metadata),
// multicast and other special-purpose addresses, IPv4 or IPv6, unless an
// operator trusts them explicitly.
//
// There are two layers. CheckURL vets a URL before any request (scheme,
// userinfo, numeric host obfuscations, literal IPs) without resolving names.
// DialContext checks every address actually connected to, after resolution,
// so a name that resolves (or re-resolves, as in DNS rebinding) to a blocked
// address is refused. HTTPClient combines both for redirects.
package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked is wrapped by every refusal (errors.Is works through the
// *url.Error and *net.OpError that http.Client and net.Dialer add).
var ErrBlocked = errors.New("ssrf: blocked")

// maxRedirects is how many redirects HTTPClient follows.
const maxRedirects = 5

// Guard decides which outbound URLs and addresses may be contacted. A nil
// *Guard is usable and trusts nothing, like New(nil). A Guard is immutable
// and safe for concurrent use.
type Guard struct {
	prefixes  []netip.Prefix          // trusted IPs and CIDRs
	names     map[string]bool         // trusted host names, any port
	hostPorts map[string]bool         // trusted name:port
	addrPorts map[netip.AddrPort]bool // trusted ip:port
}

// New builds a guard. Each trusted entry is one of: an IP ("10.0.0.5",
// "::1"), a CIDR ("10.0.0.0/8"), a host name ("agents.internal") or
// host:port ("127.0.0.1:9001", "[::1]:9001", "agents.internal:8443").
// An address inside a trusted IP/CIDR may be dialed even though it is
// private, as may a trusted ip:port; a URL whose host (or host:port) is a
// trusted name may be dialed whatever its names resolve to.
// Malformed entries are an error naming the entry.
func New(trusted []string) (*Guard, error) {
	g := &Guard{
		names:     map[string]bool{},
		hostPorts: map[string]bool{},
		addrPorts: map[netip.AddrPort]bool{},
	}
	for _, e := range trusted {
		if err := g.add(strings.TrimSpace(e)); err != nil {
			return nil, fmt.Errorf("ssrf: trusted entry %q: %w", e, err)
		}
	}
	return g, nil
}

func (g *Guard) add(e string) error {
	if e == "" {
		return errors.New("empty")
	}
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return errors.New("not a valid CIDR")
		}
		g.prefixes = append(g.prefixes, p.Masked())
		return nil
	}
	if strings.Contains(e, "%") {
		return errors.New("IPv6 zones are not supported")
	}
	if ip, err := netip.ParseAddr(e); err == nil {
		g.prefixes = append(g.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
		return nil
	}
	if ap, err := netip.ParseAddrPort(e); err == nil {
		if ap.Port() == 0 {
			return errors.New("port 0")
		}
		g.addrPorts[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] = true
		return nil
	}
	host, port := e, ""
	if h, p, err := net.SplitHostPort(e); err == nil {
		host, port = h, p
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return errors.New("not a valid port")
		}
	}
	name := normName(host)
	if !validName(name) {
		return errors.New("not an IP, CIDR, host name or host:port")
	}
	if endsInNumber(name) {
		return errors.New("numeric host that is not a valid IP address")
	}
	if port == "" {
		g.names[name] = true
	} else {
		g.hostPorts[name+":"+port] = true
	}
	return nil
}

// normName lowercases a host name and drops one trailing dot, so
// "Agents.Internal." and "agents.internal" compare equal.
func normName(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// validName reports whether a normalized name is made of non-empty labels
// of letters, digits, '-' and '_'.
func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// trustedName reports whether a (normalized) host name is trusted on port.
func (g *Guard) trustedName(name, port string) bool {
	return g != nil && (g.names[name] || g.hostPorts[name+":"+port])
}

// trustedIP reports whether ip is inside a trusted IP or CIDR.
func (g *Guard) trustedIP(ip netip.Addr) bool {
	if g == nil {
		return false
	}
	for _, p := range g.prefixes {
		if p.Contains(ip) || p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// Allowed reports whether ip may be contacted: it is in no blocked range,
// or it is in a trusted IP/CIDR.
func (g *Guard) Allowed(ip netip.Addr) bool {
	ip = ip.WithZone("")
	return ip.IsValid() && (g.trustedIP(ip) || blockedReason(ip) == "")
}

// refuseAddrPort returns why ap must not be contacted, or "" if it may be:
// like Allowed, but also honoring trusted ip:port entries.
func (g *Guard) refuseAddrPort(ap netip.AddrPort) string {
	ip := ap.Addr().WithZone("")
	if !ip.IsValid() {
		return "invalid address"
	}
	if g.trustedIP(ip) || g != nil && g.addrPorts[netip.AddrPortFrom(ip.Unmap(), ap.Port())] {
		return ""
	}
	return blockedReason(ip)
}

type blockedRange struct {
	prefix netip.Prefix
	why    string
}

func ranges(list ...string) []blockedRange {
	out := make([]blockedRange, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		out = append(out, blockedRange{netip.MustParsePrefix(list[i]), list[i+1]})
	}
	return out
}

// blocked4 lists IPv4 ranges that are not globally reachable (IANA IPv4
// Special-Purpose Address Registry, plus multicast and class E). The few
// special-purpose blocks that are globally reachable anycast (AS112, AMT)
// are left out.
var blocked4 = ranges(
	"0.0.0.0/8", `"this network" (connecting to 0.0.0.0 reaches the local host)`,
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "carrier-grade NAT shared space (often the provider's internal network)",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local (includes cloud metadata 169.254.169.254)",
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "IETF protocol assignments (DS-Lite, NAT64 discovery)",
	"192.0.2.0/24", "documentation",
	"192.88.99.0/24", "deprecated 6to4 relay anycast",
	"192.168.0.0/16", "private",
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation",
	"203.0.113.0/24", "documentation",
	"224.0.0.0/4", "multicast",
	"240.0.0.0/4", "reserved (includes broadcast 255.255.255.255)",
)

// blocked6 lists IPv6 ranges that are not globally reachable. IPv6 outside
// 2000::/3 (global unicast) is refused anyway; the entries outside it are
// only there to give a precise reason.
var blocked6 = ranges(
	"::/128", "unspecified",
	"::1/128", "loopback",
	"::/96", "IPv4-compatible (deprecated)",
	"64:ff9b:1::/48", "local-use NAT64",
	"100::/64", "discard-only",
	"fc00::/7", "unique local (private)",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local (deprecated)",
	"ff00::/8", "multicast",
	// Teredo (2001::/32, whose embedded IPv4 is obfuscated), benchmarking,
	// ORCHID and other protocol blocks; no ordinary host lives here.
	"2001::/23", "IETF protocol assignments",
	"2001:db8::/32", "documentation",
	"3fff::/20", "documentation",
	"5f00::/16", "SRv6 segment identifiers",
)

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	// NAT64 (RFC 6052) and 6to4 (RFC 3056) addresses carry an IPv4 address
	// that a translator or relay will connect to; judge that one.
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")

	loopback4 = netip.AddrFrom4([4]byte{127, 0, 0, 1})
)

// blockedReason returns why ip (no zone) must not be contacted, or "" if it
// may be.
func blockedReason(ip netip.Addr) string {
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	if ip.Is4() {
		for _, r := range blocked4 {
			if r.prefix.Contains(ip) {
				return r.why + " (" + r.prefix.String() + ")"
			}
		}
		return ""
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		if why := blockedReason(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
			return "NAT64 of " + why
		}
		return ""
	case sixToFour.Contains(ip):
		if why := blockedReason(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
			return "6to4 of " + why
		}
	}
	for _, r := range blocked6 {
		if r.prefix.Contains(ip) {
			return r.why + " (" + r.prefix.String() + ")"
		}
	}
	if !globalUnicast6.Contains(ip) {
		return "not IPv6 global unicast"
	}
	return ""
}

// CheckURL validates a URL before any request: scheme http or https only,
// a host present, no userinfo, no IPv6 zone, and no numeric host in a form
// other than dotted decimal ("2130706433", "0x7f000001", "0177.0.0.1",
// "127.1"): Go's parser does not read those as IPs but C resolvers and
// browsers do. A literal IP host is checked against the blocked ranges
// unless trusted (by IP/CIDR or ip:port), and "localhost" or a name under
// it (RFC 6761: loopback) is refused unless that name or a loopback address
// is trusted. Other names are not resolved here; DialContext checks what
// they resolve to.
func (g *Guard) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the raw URL may hold a password; don't echo it
		}
		return fmt.Errorf("%w: malformed URL: %v", ErrBlocked, err)
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: URL %s: %s", ErrBlocked, u.Redacted(), fmt.Sprintf(format, args...))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return refuse("scheme %q is not http or https", u.Scheme)
	}
	if u.User != nil {
		return refuse("userinfo (user:password@) is not allowed")
	}
	host := u.Hostname()
	if u.Opaque != "" || host == "" {
		return refuse("no host")
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil || pn == 0 {
		return refuse("invalid port %q", u.Port())
	}
	if strings.Contains(host, "%") {
		return refuse("IPv6 zone in host %q", host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := g.refuseAddrPort(netip.AddrPortFrom(ip, uint16(pn))); why != "" {
			return refuse("host %s is %s", host, why)
		}
		return nil
	}
	name := normName(host)
	if endsInNumber(name) {
		if ip, ok := parseLooseIPv4(name); ok {
			return refuse("host %q is IPv4 address %s in a non-standard numeric form; write it as %s", host, ip, ip)
		}
		return refuse("host %q ends in a number but is not a dotted-decimal IP address", host)
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761: these names are loopback. Refuse them early unless
		// the dial would be allowed (name or loopback address trusted).
		if !g.trustedName(name, port) &&
			g.refuseAddrPort(netip.AddrPortFrom(loopback4, uint16(pn))) != "" &&
			g.refuseAddrPort(netip.AddrPortFrom(netip.IPv6Loopback(), uint16(pn))) != "" {
			return refuse("host %q is loopback", host)
		}
	}
	return nil
}

// endsInNumber reports whether the last label of a normalized host name is
// a decimal or 0x-hex number. Browsers (WHATWG URL) then parse the whole
// host as IPv4, and C's inet_aton accepts such forms too; no real name
// has a numeric top-level label.
func endsInNumber(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		_, err := strconv.ParseUint("0"+last[2:], 16, 64)
		return err == nil || errors.Is(err, strconv.ErrRange)
	}
	return strings.Trim(last, "0123456789") == ""
}

// parseLooseIPv4 reads host the way inet_aton does: one to four parts, each
// decimal, octal (leading 0) or hex (0x), the last part filling the
// remaining bytes. It only serves to name the address in an error.
func parseLooseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			base, p = 16, "0"+p[2:]
		case len(p) > 1 && p[0] == '0':
			base = 8
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
		} else {
			if n >= 1<<(8*(4-i)) {
				return netip.Addr{}, false
			}
			v |= n
		}
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// DialContext dials like net.Dialer, but every address it connects to,
// after name resolution, is checked in the dialer's Control hook, so the
// check is on the exact address connected to (which defeats DNS
// rebinding). A host or host:port trusted by name is dialed unchecked.
// Only TCP networks are allowed.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("%w: network %q is not allowed", ErrBlocked, network)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return nil, fmt.Errorf("%w: invalid address %q", ErrBlocked, addr)
	}
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if !g.trustedName(normName(host), port) {
		d.Control = g.control
	}
	return d.DialContext(ctx, network, addr)
}

// control runs on the resolved address just before connect.
func (g *Guard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unexpected address %q", ErrBlocked, address)
	}
	if why := g.refuseAddrPort(ap); why != "" {
		return fmt.Errorf("%w: %s is %s", ErrBlocked, ap.Addr().WithZone(""), why)
	}
	return nil
}

// Transport returns an http.Transport that dials through DialContext. Proxy
// is nil: with a proxy from the environment the dial check would apply to
// the proxy's address, not the target's.
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// HTTPClient returns a client using Transport() that re-checks every
// redirect target with CheckURL and follows at most 5 redirects (the error
// for more is not ErrBlocked). The first request's URL is not passed to
// CheckURL here: callers check it, and its addresses are checked at dial
// time anyway. timeout bounds a whole exchange including reading the body;
// 0 means none (streams can be long).
func (g *Guard) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: g.Transport(),
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("ssrf: stopped after %d redirects", maxRedirects)
			}
			return g.CheckURL(req.URL.String())
		},
	}
}
