package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/a2amesh/a2amesh/internal/cardsig"
	"github.com/a2amesh/a2amesh/internal/pushsig"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/registry"
)

// A proxy worker checks the signatures on its upstream's card (spec §8.4)
// each time it fetches it: every signature's protected header names the
// JWK Set (jku) of its key; the worker fetches that set, on the card's own
// origin only (a card must not vouch for itself with keys from anywhere),
// through the SSRF guard, bounded in time and size, and verifies the
// card with internal/cardsig. What it found is registered with the card
// (registry.CardCheck). With Config.RequireSignedCard a card that does not
// verify is refused: New fails, and a refresh keeps the card registered
// before.

// Bounds of fetching an upstream's JWK Set.
const (
	jwksTimeout  = 5 * time.Second
	jwksMaxBytes = 64 << 10
)

// errJWKSUnavailable marks a JWK Set that could not be fetched for a
// reason that may pass (a network error, a 5xx).
var errJWKSUnavailable = errors.New("the JWK Set is unavailable")

// cardChecker verifies upstream card signatures.
type cardChecker struct {
	guard *ssrf.Guard
	hc    *http.Client
}

func newCardChecker(g *ssrf.Guard) *cardChecker {
	return &cardChecker{guard: g, hc: g.HTTPClient(jwksTimeout)}
}

// check verifies raw, the card fetched from cardURL. Its error is why the
// card is not verified, errJWKSUnavailable among its causes when retrying
// may help; the returned check says the same for the registry.
func (c *cardChecker) check(ctx context.Context, raw []byte, cardURL string) (*registry.CardCheck, error) {
	sigs, err := cardsig.Signatures(raw)
	if err != nil {
		return &registry.CardCheck{Status: registry.CardInvalid, Error: err.Error()}, err
	}
	if len(sigs) == 0 {
		return &registry.CardCheck{Status: registry.CardUnsigned}, cardsig.ErrUnsigned
	}
	var set pushsig.JWKSet
	var jkus []string
	var fetchErr error
	defer c.hc.CloseIdleConnections() // a card is checked every few minutes at most
	for _, s := range sigs {
		h, err := cardsig.DecodeHeader(s)
		if err != nil || h.JKU == "" || contains(jkus, h.JKU) {
			continue
		}
		jkus = append(jkus, h.JKU)
		got, err := c.fetchJWKS(ctx, h.JKU, cardURL)
		if err != nil {
			fetchErr = errors.Join(fetchErr, err)
			continue
		}
		set.Keys = append(set.Keys, got.Keys...)
	}
	ok, err := cardsig.VerifyCard(raw, set)
	if err != nil {
		if fetchErr != nil {
			err = fetchErr
		} else if len(jkus) == 0 {
			err = errors.New("cardsig: no signature names its JWK Set (jku)")
		}
		return &registry.CardCheck{Status: registry.CardInvalid, Error: err.Error()}, err
	}
	cc := &registry.CardCheck{Status: registry.CardVerified}
	for _, h := range ok {
		cc.KeyIDs = append(cc.KeyIDs, h.Kid)
		if cc.JKU == "" {
			cc.JKU = h.JKU
		}
	}
	return cc, nil
}

// fetchJWKS reads the JWK Set at jku, which must be on the origin of
// cardURL.
func (c *cardChecker) fetchJWKS(ctx context.Context, jku, cardURL string) (pushsig.JWKSet, error) {
	var set pushsig.JWKSet
	ju, err := url.Parse(jku)
	if err != nil || (ju.Scheme != "http" && ju.Scheme != "https") {
		return set, fmt.Errorf("jku %q is not an http(s) URL", jku)
	}
	cu, err := url.Parse(cardURL)
	if err != nil || ju.Scheme != cu.Scheme || ju.Host != cu.Host {
		return set, fmt.Errorf("jku %s is not on the card's origin %s://%s", jku, cu.Scheme, cu.Host)
	}
	if err := c.guard.CheckURL(jku); err != nil {
		return set, fmt.Errorf("jku: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, jwksTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jku, nil)
	if err != nil {
		return set, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return set, fmt.Errorf("%w: GET %s: %w", errJWKSUnavailable, jku, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("GET %s: HTTP %d", jku, resp.StatusCode)
		if resp.StatusCode >= 500 {
			err = fmt.Errorf("%w: %w", errJWKSUnavailable, err)
		}
		return set, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes+1))
	if err != nil {
		return set, fmt.Errorf("%w: GET %s: %w", errJWKSUnavailable, jku, err)
	}
	if len(body) > jwksMaxBytes {
		return set, fmt.Errorf("GET %s: the JWK Set is larger than %d bytes", jku, jwksMaxBytes)
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return set, fmt.Errorf("GET %s: not a JWK Set: %w", jku, err)
	}
	return set, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// CardCheck is what the worker verified of the upstream card registered
// now (agentrt.CardChecker).
func (a *Agent) CardCheck() *registry.CardCheck { return a.check.Load() }
