package edge_test

// TLS client certificates as principals (Config.ClientCertPrincipal) for
// service-to-service callers, on HTTPS (JSON-RPC) and gRPC.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/policy"
)

// testCA is a certificate authority for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue makes a leaf certificate: a server's for 127.0.0.1, or a client's
// naming uri.
func (ca *testCA) issue(t *testing.T, cn string, server bool, uri string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		u, err := url.Parse(uri)
		require.NoError(t, err)
		tmpl.URIs = []*url.URL{u}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestClientCertificatesArePrincipals(t *testing.T) {
	ca, stranger := newTestCA(t, "mesh CA"), newTestCA(t, "another CA")
	srvCert := ca.issue(t, "edge", true, "")
	billing := ca.issue(t, "billing", false, "spiffe://a2amesh/billing")
	impostor := stranger.issue(t, "billing", false, "spiffe://a2amesh/billing")
	path := filepath.Join(t.TempDir(), "policy")
	require.NoError(t, os.WriteFile(path, []byte("allow principal:spiffe://a2amesh/billing echo send,read\n"), 0o600))
	pf, err := policy.Load(path, nil)
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientCAs: ca.pool,
			ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12}
		c.Edge.ClientCertPrincipal, c.Edge.Policy = edge.CertPrincipalSAN, pf
	}))
	require.Contains(t, m.URL, "https://")

	client := func(cert *tls.Certificate) *http.Client {
		cfg := &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12}
		if cert != nil {
			// Sent whatever CAs the edge names (Go's client would
			// otherwise leave out a certificate of another CA).
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		}
		return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	call := func(hc *http.Client, method string, params any) (*http.Response, *rpcAnswer, error) {
		resp, err := hc.Post(m.URL+"/agents/echo", "application/json", bytes.NewReader(rpcBody(t, method, params)))
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		var out rpcAnswer
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp, &out, nil
	}

	resp, res, err := call(client(&billing), "SendMessage", sendParams("mtls-1"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Nil(t, res.Error, "%+v", res.Error)
	_, res, err = call(client(&billing), "ListTasks", map[string]any{})
	require.NoError(t, err)
	var list a2a.ListTasksResponse
	require.NoError(t, json.Unmarshal(res.Result, &list))
	assert.Len(t, list.Tasks, 1, "the certificate's principal owns its task")

	resp, _, err = call(client(nil), "SendMessage", sendParams("mtls-2"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no certificate, no credential")
	_, _, err = call(client(&impostor), "SendMessage", sendParams("mtls-3"))
	require.Error(t, err, "a certificate of another CA fails the handshake")

	dial := func(cert *tls.Certificate) a2apb.A2AServiceClient {
		cfg := &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		conn, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return a2apb.NewA2AServiceClient(conn)
	}
	_, err = dial(&billing).SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Tenant: "echo", Message: grpcUserMsg("mtls-4", "hi")})
	require.NoError(t, err)
	_, err = dial(nil).SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Tenant: "echo", Message: grpcUserMsg("mtls-5", "hi")})
	requireGRPCStatus(t, err, codes.Unauthenticated, "")
}
