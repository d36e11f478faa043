// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runagain/runagain/internal/testutil/miniotest"
)

// The runagain-minio pipeline is runagain's configuration with the payload bucket on a MinIO
// server (started here on loopback, data under the bench's temporary directory) behind a
// counting reverse proxy, so the bench reports the S3 requests the payload store makes: PUT-class
// requests (PUT, POST: what S3 bills per 1,000 as "PUT, COPY, POST, LIST") per 1,000 spans and
// the bytes each PUT carried.

const minioBucket = "runagain-bench"

// s3Counts are the requests that passed the counting proxy.
type s3Counts struct {
	Put        int64 `json:"put"`  // PUT requests (objects, multipart parts)
	Post       int64 `json:"post"` // POST requests (multipart create/complete, batch delete)
	Get        int64 `json:"get"`
	Head       int64 `json:"head"`
	Delete     int64 `json:"delete"`
	List       int64 `json:"list"` // GET on the bucket itself (ListObjects)
	PutBytes   int64 `json:"put_payload_bytes"`
	Other      int64 `json:"other"`
	Errors5xx  int64 `json:"errors_5xx"`
	BucketDisk usage `json:"bucket_on_disk"`
}

// countingProxy forwards every request to target and counts it by method.
type countingProxy struct {
	srv                                           *http.Server
	addr                                          string
	put, post, get, head, del, list, other, err5x atomic.Int64
	putBytes                                      atomic.Int64
}

func startCountingProxy(target string) (*countingProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &countingProxy{}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode >= 500 {
			p.err5x.Add(1)
		}
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = l.Addr().String()
	p.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			p.put.Add(1)
			p.putBytes.Add(payloadLength(r))
		case http.MethodPost:
			p.post.Add(1)
		case http.MethodGet:
			if strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 0 {
				p.list.Add(1) // path style: /bucket is the bucket, /bucket/key an object
			} else {
				p.get.Add(1)
			}
		case http.MethodHead:
			p.head.Add(1)
		case http.MethodDelete:
			p.del.Add(1)
		default:
			p.other.Add(1)
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// payloadLength is the object bytes a PUT carries: the decoded length when the SDK streams the
// body in signed aws-chunked encoding, else the request's Content-Length.
func payloadLength(r *http.Request) int64 {
	if v := r.Header.Get("X-Amz-Decoded-Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return max(r.ContentLength, 0)
}

func (p *countingProxy) counts() s3Counts {
	return s3Counts{Put: p.put.Load(), Post: p.post.Load(), Get: p.get.Load(), Head: p.head.Load(),
		Delete: p.del.Load(), List: p.list.Load(), Other: p.other.Load(), Errors5xx: p.err5x.Load(),
		PutBytes: p.putBytes.Load()}
}

func (p *countingProxy) close() { _ = p.srv.Close() }

// minioServer is one MinIO process with its data directory.
type minioServer struct {
	cmd      *exec.Cmd
	dir      string
	endpoint string
	done     chan struct{}
	once     sync.Once
}

// startMinio starts MinIO (binary: MINIO_BIN, PATH or $(go env GOPATH)/bin, as the tests find
// it; .ci/run installs it) on free loopback ports with its data under dir, waits until it is
// ready (60 s at most) and creates the bench bucket.
func startMinio(ctx context.Context, dir string) (*minioServer, error) {
	bin, err := miniotest.Binary()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	console, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "minio-data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "minio.log"))
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "server", "--quiet", "--address", addr, "--console-address", fmt.Sprintf("127.0.0.1:%d", console), data)
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+miniotest.AccessKey, "MINIO_ROOT_PASSWORD="+miniotest.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	m := &minioServer{cmd: cmd, dir: data, endpoint: "http://" + addr, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(m.done) }()
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); ; {
		select {
		case <-m.done:
			return nil, fmt.Errorf("minio exited during start-up (see %s)", logf.Name())
		default:
		}
		if resp, err := client.Get(m.endpoint + "/minio/health/ready"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			m.stop()
			return nil, fmt.Errorf("minio not ready at %s after 60 s (see %s)", m.endpoint, logf.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
	s3c := s3.New(s3.Options{
		Region:       miniotest.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(miniotest.AccessKey, miniotest.SecretKey, ""),
		BaseEndpoint: aws.String(m.endpoint),
		UsePathStyle: true,
	})
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := s3c.CreateBucket(cctx, &s3.CreateBucketInput{Bucket: aws.String(minioBucket)}); err != nil {
		m.stop()
		return nil, fmt.Errorf("creating bucket %s: %w", minioBucket, err)
	}
	return m, nil
}

// stop ends MinIO (SIGTERM, SIGKILL after 10 s) and waits for it.
func (m *minioServer) stop() {
	m.once.Do(func() {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	})
}

// s3Env is the AWS SDK environment of a collector that reaches the bench's MinIO: static
// credentials, its region, no shared config files, no instance metadata.
func s3Env(dir string) []string {
	none := filepath.Join(dir, "no-aws-config")
	return []string{
		"AWS_ACCESS_KEY_ID=" + miniotest.AccessKey, "AWS_SECRET_ACCESS_KEY=" + miniotest.SecretKey,
		"AWS_SESSION_TOKEN=", "AWS_REGION=" + miniotest.Region, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + none, "AWS_SHARED_CREDENTIALS_FILE=" + none, "AWS_PROFILE=",
	}
}

// s3URL is the gocloud.dev/blob URL of the bench bucket through the proxy at addr.
func s3URL(addr, prefix string) string {
	q := url.Values{}
	q.Set("endpoint", "http://"+addr)
	q.Set("region", miniotest.Region)
	q.Set("use_path_style", "true")
	q.Set("disable_https", "true")
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	return "s3://" + minioBucket + "?" + q.Encode()
}

// setPayloadURL points runagain_storage::payloads::url of a runagain configuration at url.
func setPayloadURL(cfg map[string]any, u string) error {
	ext, _ := cfg["extensions"].(map[string]any)
	st, _ := ext["runagain_storage"].(map[string]any)
	if st == nil {
		return fmt.Errorf("no extensions::runagain_storage in the configuration")
	}
	pl, _ := st["payloads"].(map[string]any)
	if pl == nil {
		pl = map[string]any{}
		st["payloads"] = pl
	}
	pl["url"] = u
	return nil
}
