package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
)

// ErrNoInterface is wrapped by FromCard's error when the card offers no
// interface the client speaks.
var ErrNoInterface = errors.New("no interface the client speaks")

// FromCard returns a client for the agent the card describes, calling the
// first interface the card lists (cards list their preferred one first)
// whose binding and version the client speaks: HTTP+JSON and gRPC in A2A
// 1.x, JSON-RPC in 1.x and 0.3. A card of 0.3 (url, preferredTransport,
// additionalInterfaces) is read too. With prefer, only those bindings
// count, in that order: the first of them the card offers wins.
//
// The client gets the interface's URL, binding, protocol version and
// tenant; opts give the rest (HTTP client, headers...).
func FromCard(card *a2a.AgentCard, prefer []string, opts ...Option) (*Client, error) {
	if card == nil {
		return nil, errors.New("client: no card")
	}
	in, version, err := pickInterface(card, prefer)
	if err != nil {
		return nil, fmt.Errorf("client: agent %q: %w", card.Name, err)
	}
	opts = append(opts[:len(opts):len(opts)], WithBinding(in.ProtocolBinding), WithProtocolVersion(version))
	if in.Tenant != "" {
		opts = append(opts, WithTenant(in.Tenant))
	}
	return New(in.URL, opts...), nil
}

// candidates lists the interfaces of a card the client speaks, in the
// card's order, with the version each is spoken in ("1.0" or "0.3"); the
// 0.3 fields come last.
func candidates(card *a2a.AgentCard) (ifs []a2a.AgentInterface, versions []string) {
	add := func(in a2a.AgentInterface, version string) {
		ifs = append(ifs, in)
		versions = append(versions, version)
	}
	for _, in := range card.SupportedInterfaces {
		if in.URL == "" {
			continue
		}
		b := canonicalBinding(in.ProtocolBinding)
		switch {
		case strings.HasPrefix(in.ProtocolVersion, "1."):
			if b != "" {
				in.ProtocolBinding = b
				add(in, "1.0")
			}
		case strings.HasPrefix(in.ProtocolVersion, "0."):
			if b == a2a.BindingJSONRPC {
				in.ProtocolBinding, in.Tenant = b, ""
				add(in, "0.3")
			}
		}
	}
	if card.URL != "" && (card.PreferredTransport == "" || canonicalBinding(card.PreferredTransport) == a2a.BindingJSONRPC) {
		add(a2a.AgentInterface{URL: card.URL, ProtocolBinding: a2a.BindingJSONRPC}, "0.3")
	}
	for _, in := range card.AdditionalInterfaces {
		if in.URL != "" && canonicalBinding(in.Transport) == a2a.BindingJSONRPC {
			add(a2a.AgentInterface{URL: in.URL, ProtocolBinding: a2a.BindingJSONRPC}, "0.3")
		}
	}
	return ifs, versions
}

func pickInterface(card *a2a.AgentCard, prefer []string) (a2a.AgentInterface, string, error) {
	ifs, versions := candidates(card)
	if len(prefer) == 0 {
		if len(ifs) > 0 {
			return ifs[0], versions[0], nil
		}
		return a2a.AgentInterface{}, "", ErrNoInterface
	}
	for _, b := range prefer {
		for i, in := range ifs {
			if in.ProtocolBinding == canonicalBinding(b) {
				return in, versions[i], nil
			}
		}
	}
	return a2a.AgentInterface{}, "", fmt.Errorf("%w among %s", ErrNoInterface, strings.Join(prefer, ", "))
}

// canonicalBinding returns the a2a.Binding* constant a binding name
// stands for, matched without regard to case; "" for one the client does
// not speak.
func canonicalBinding(b string) string {
	for _, known := range []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON, a2a.BindingGRPC} {
		if strings.EqualFold(b, known) {
			return known
		}
	}
	return ""
}
