// SPDX-License-Identifier: Apache-2.0

// Package miniotest runs a real MinIO server on 127.0.0.1 for tests that need S3.
//
// The binary is found through the environment variable MINIO_BIN, else `minio` on PATH, else
// $(go env GOPATH)/bin/minio (where `go install github.com/minio/minio@...` puts it). Without a
// binary, Start skips the test, unless RUNAGAIN_REQUIRE_MINIO=1 (set by CI), in which case it fails.
//
// Start sets the AWS SDK environment for the test (static credentials, region, no shared config
// files, no instance metadata), so gocloud.dev's s3blob opens Server.URL with no other setup.
package miniotest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Credentials and region every Server uses.
const (
	AccessKey = "runagain-test"
	SecretKey = "runagain-test-secret"
	Region    = "us-east-1"
)

// Server is one MinIO process with its data directory. Stop and Restart keep the port and the data.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	// Bucket is the bucket created by Start.
	Bucket string
	// Dir is the data directory.
	Dir string

	tb      testing.TB
	bin     string
	addr    string
	console string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Binary returns the path of the minio binary (see package doc) or an error saying where it looked.
func Binary() (string, error) {
	if p := os.Getenv("MINIO_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("MINIO_BIN=%s: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "minio")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("minio binary not found (MINIO_BIN, PATH, $(go env GOPATH)/bin); install with `go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c`")
}

// Start starts MinIO on a free 127.0.0.1 port with a fresh data directory, waits until it is
// ready and creates a bucket. The server is stopped when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("RUNAGAIN_REQUIRE_MINIO") == "1" {
			tb.Fatalf("RUNAGAIN_REQUIRE_MINIO=1: %v", err)
		}
		tb.Skipf("skipping S3 test: %v", err)
	}
	tb.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	tb.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	tb.Setenv("AWS_SESSION_TOKEN", "")
	tb.Setenv("AWS_REGION", Region)
	tb.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	tb.Setenv("AWS_CONFIG_FILE", filepath.Join(tb.TempDir(), "none"))
	tb.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(tb.TempDir(), "none"))
	tb.Setenv("AWS_PROFILE", "")

	dir := tb.TempDir()
	s := &Server{
		tb:      tb,
		bin:     bin,
		Dir:     filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "minio.log"),
		addr:    freeAddr(tb),
		console: freeAddr(tb),
		Bucket:  "runagain-test",
	}
	s.Endpoint = "http://" + s.addr
	tb.Cleanup(s.Stop)
	s.start()
	s.createBucket()
	return s
}

// URL is the gocloud.dev/blob URL of the bucket, with an optional key prefix (e.g. "payloads/").
func (s *Server) URL(prefix string) string {
	q := url.Values{}
	q.Set("endpoint", s.Endpoint)
	q.Set("region", Region)
	q.Set("use_path_style", "true")
	q.Set("disable_https", "true")
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	return "s3://" + s.Bucket + "?" + q.Encode()
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it to exit. It is a no-op
// when the server is not running.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Restart starts the server again on the same port and data directory and waits until it is ready.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.start()
}

// Running tells whether the server process is up.
func (s *Server) Running() bool { return s.cmd != nil }

func (s *Server) start() {
	s.tb.Helper()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.tb.Fatal(err)
	}
	cmd := exec.Command(s.bin, "server", "--quiet", "--address", s.addr, "--console-address", s.console, s.Dir)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+AccessKey,
		"MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"MINIO_CI_CD=1",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		s.tb.Fatalf("start minio: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	s.cmd, s.exited = cmd, exited

	deadline := time.Now().Add(60 * time.Second)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-exited:
			s.cmd = nil
			s.tb.Fatalf("minio exited during start-up; log:\n%s", s.logTail())
		default:
		}
		resp, err := client.Get(s.Endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.tb.Fatalf("minio not ready at %s after 60 s; log:\n%s", s.Endpoint, s.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Client returns an S3 client for the server (for assertions a test cannot make through gocloud).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
	})
}

func (s *Server) createBucket() {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		s.tb.Fatalf("create bucket %s: %v; log:\n%s", s.Bucket, err, s.logTail())
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// Kill stops the server with SIGKILL at once, as a crash or a cut network would: requests in
// flight (a multi-part upload, a PUT) are cut off where they are. It is a no-op when the server
// is not running; Restart starts it again.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// MultipartInFlight tells whether MinIO holds an unfinished multi-part upload (parts under
// .minio.sys/multipart in its data directory).
func (s *Server) MultipartInFlight() bool {
	found := false
	_ = filepath.WalkDir(filepath.Join(s.Dir, ".minio.sys", "multipart"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}
