package tokens_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/oidctest"
	"github.com/a2amesh/a2amesh/tokens"
)

func TestVerify(t *testing.T) {
	is := oidctest.Start(t)
	v, err := tokens.New(tokens.Config{Issuer: is.URL, Audience: "a2amesh", Algorithms: []string{"ES256"}})
	require.NoError(t, err)
	ctx := context.Background()

	c, err := v.Verify(ctx, is.Token(t, oidctest.Claims{"sub": "svc-billing", "aud": "a2amesh", "scope": "a2a.call a2a.read"}))
	require.NoError(t, err)
	assert.Equal(t, "svc-billing", c.Principal)
	assert.Equal(t, []string{"a2a.call", "a2a.read"}, c.Grants)

	// scp as an array (Hydra's and Okta's access tokens) when there is no scope.
	c, err = v.Verify(ctx, is.Token(t, oidctest.Claims{"sub": "x", "aud": []string{"other", "a2amesh"}, "scp": []string{"a", "b"}}))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, c.Grants)

	for name, tok := range map[string]string{
		"expired past the skew":    is.Token(t, oidctest.Claims{"sub": "x", "aud": "a2amesh", "exp": time.Now().Add(-time.Minute).Unix()}),
		"not yet valid":            is.Token(t, oidctest.Claims{"sub": "x", "aud": "a2amesh", "nbf": time.Now().Add(time.Minute).Unix()}),
		"for another audience":     is.Token(t, oidctest.Claims{"sub": "x", "aud": "someone-else"}),
		"from another issuer":      is.Token(t, oidctest.Claims{"sub": "x", "aud": "a2amesh", "iss": "https://evil.example"}),
		"signed by an unknown key": is.TokenFromOtherKey(t, oidctest.Claims{"sub": "x", "aud": "a2amesh"}),
		"alg none":                 is.UnsignedToken(t, oidctest.Claims{"sub": "x", "aud": "a2amesh"}),
		"with no principal claim":  is.Token(t, oidctest.Claims{"aud": "a2amesh"}),
		"not a JWT":                "abc.def.ghi",
	} {
		_, err := v.Verify(ctx, tok)
		assert.ErrorIs(t, err, tokens.ErrInvalid, name)
	}

	// Within the skew, a token just expired still passes.
	_, err = v.Verify(ctx, is.Token(t, oidctest.Claims{"sub": "x", "aud": "a2amesh", "exp": time.Now().Add(-5 * time.Second).Unix()}))
	require.NoError(t, err)

	// An unknown key id makes the verifier read the key set again (it may
	// have been rotated), once per such token.
	before := is.JWKSFetches()
	_, _ = v.Verify(ctx, is.TokenFromOtherKey(t, oidctest.Claims{"sub": "x", "aud": "a2amesh"}))
	assert.Greater(t, is.JWKSFetches(), before, "an unknown kid refreshes the key set")

	_, err = tokens.New(tokens.Config{Issuer: is.URL, Audience: "a", Algorithms: []string{"none"}})
	require.Error(t, err, "alg none is never accepted")
}

// An issuer that is down is a retryable failure, bounded in time, not an
// invalid token; the verifier discovers it once it is back.
func TestIssuerDown(t *testing.T) {
	is := oidctest.Start(t)
	tok := is.Token(t, oidctest.Claims{"sub": "x", "aud": "a2amesh"})
	is.Close()
	v, err := tokens.New(tokens.Config{Issuer: is.URL, Audience: "a2amesh", Algorithms: []string{"ES256"}})
	require.NoError(t, err)
	_, err = v.Verify(context.Background(), tok)
	require.Error(t, err)
	assert.True(t, errors.Is(err, tokens.ErrUnavailable), "%v", err)
	_, err = v.Verify(context.Background(), tok)
	assert.True(t, errors.Is(err, tokens.ErrUnavailable), "%v", err)
}

// BenchmarkVerify is the cost of one token's verification once the key
// set is cached: what an edge with --oidc-issuer adds to each call.
func BenchmarkVerify(b *testing.B) {
	is := oidctest.Start(b)
	v, err := tokens.New(tokens.Config{Issuer: is.URL, Audience: "a2amesh", Algorithms: []string{"ES256"}})
	require.NoError(b, err)
	tok := is.Token(b, oidctest.Claims{"sub": "x", "aud": "a2amesh", "scope": "a2a.call"})
	ctx := context.Background()
	_, err = v.Verify(ctx, tok)
	require.NoError(b, err)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := v.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// A token verified once is answered from the cache, and refused once it
// expires (the cache holds it only until exp plus the skew).
func TestVerifiedTokenExpiresFromTheCache(t *testing.T) {
	is := oidctest.Start(t)
	v, err := tokens.New(tokens.Config{Issuer: is.URL, Audience: "a2amesh", Algorithms: []string{"ES256"}, Skew: 500 * time.Millisecond})
	require.NoError(t, err)
	tok := is.Token(t, oidctest.Claims{"sub": "x", "aud": "a2amesh", "exp": time.Now().Add(time.Second).Unix()})
	ctx := context.Background()
	_, err = v.Verify(ctx, tok)
	require.NoError(t, err)
	_, err = v.Verify(ctx, tok)
	require.NoError(t, err, "from the cache")
	time.Sleep(2 * time.Second)
	_, err = v.Verify(ctx, tok)
	assert.ErrorIs(t, err, tokens.ErrInvalid, "expired, cached or not")
}
