// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/runagain/runagain/internal/secretfile"
)

// CA file names under the data directory.
const (
	CACertFile = "proxy-ca.pem"
	CAKeyFile  = "proxy-ca-key.pem"
)

// LoadOrCreateCA loads the proxy CA from dir, creating it (ECDSA P-256, valid 10 years, key file
// mode 0600) when absent; an existing key file readable by group or others is refused. It returns the certificate for goproxy and the PEM path that clients
// must trust (see README.md, "HTTPS").
func LoadOrCreateCA(dir string) (*tls.Certificate, string, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if c, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil {
		if err := secretfile.CheckPrivate(keyPath); err != nil {
			return nil, "", fmt.Errorf("proxy CA: %w", err)
		}
		c.Leaf, _ = x509.ParseCertificate(c.Certificate[0])
		return &c, certPath, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("proxy CA in %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "runagain proxy local CA", Organization: []string{"runagain"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, "", err
	}
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, "", err
	}
	c.Leaf, _ = x509.ParseCertificate(c.Certificate[0])
	return &c, certPath, nil
}
