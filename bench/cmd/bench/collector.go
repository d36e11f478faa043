// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the hot tier's driver, to count rows
)

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts() (ports, error) {
	var p ports
	for _, dst := range []*int{&p.grpc, &p.http, &p.health, &p.telemetry, &p.pprof} {
		n, err := freePort()
		if err != nil {
			return p, err
		}
		*dst = n
	}
	return p, nil
}

// collector is one running otelcol-runagain process.
type collector struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan error
}

func startCollector(bin, config, dir string, env []string) (*collector, error) {
	logf, err := os.Create(filepath.Join(dir, "collector.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", config)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	c := &collector{cmd: cmd, log: logf, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	return c, nil
}

// waitReady waits until the OTLP gRPC port accepts connections, or the process exits.
func (c *collector) waitReady(grpcAddr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-c.done:
			c.done <- err
			return fmt.Errorf("collector exited during start: %v (see %s)", err, c.log.Name())
		default:
		}
		conn, err := net.DialTimeout("tcp", grpcAddr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("collector not listening on %s after %v (see %s)", grpcAddr, timeout, c.log.Name())
}

// stop sends SIGTERM and waits (SIGKILL after timeout).
func (c *collector) stop(timeout time.Duration) error {
	defer c.log.Close()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		return err
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		err := <-c.done
		return fmt.Errorf("collector did not stop within %v after SIGTERM; killed (%v)", timeout, err)
	}
}

func (c *collector) alive() bool {
	select {
	case err := <-c.done:
		c.done <- err
		return false
	default:
		return true
	}
}

var clockTicks = 100.0 // USER_HZ; 100 on Linux for all common architectures

// cpuSeconds is utime+stime of pid from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	// fields after the command: state(3) ... utime(14) stime(15) -> indexes 11, 12 here
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return (ut + st) / clockTicks, nil
}

// statusKB reads a "Key:  N kB" line of /proc/<pid>/status (VmHWM: peak resident set size).
func statusKB(pid int, key string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, key)
}

// hotCount returns the number of spans in the hot tier, distinct sessions and the newest
// ingested_unix_nano (sqlitestore schema v1).
func hotCount(ctx context.Context, path string, sessions bool) (n, nSessions, lastIngested int64, err error) {
	if _, err := os.Stat(path); err != nil {
		return 0, 0, 0, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, 0, 0, err
	}
	defer db.Close()
	var last sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT count(*), max(ingested_unix_nano) FROM spans`).Scan(&n, &last); err != nil {
		return 0, 0, 0, err
	}
	if sessions {
		if err := db.QueryRowContext(ctx, `SELECT count(DISTINCT session_id) FROM spans`).Scan(&nSessions); err != nil {
			return 0, 0, 0, err
		}
	}
	return n, nSessions, last.Int64, nil
}

// usage is the size of a set of files: Apparent is the sum of their sizes (st_size), Disk the
// space they occupy (st_blocks × 512, as du(1) counts it: every file takes whole filesystem
// blocks, and sparse or preallocated files take less or more than their size).
type usage struct {
	Apparent int64 `json:"apparent_bytes"`
	Disk     int64 `json:"disk_bytes"`
	Files    int64 `json:"files"`
}

func (u *usage) add(info os.FileInfo) {
	u.Apparent += info.Size()
	u.Files++
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		u.Disk += st.Blocks * 512
	} else {
		u.Disk += info.Size()
	}
}

func (u usage) plus(v usage) usage {
	return usage{Apparent: u.Apparent + v.Apparent, Disk: u.Disk + v.Disk, Files: u.Files + v.Files}
}

// dirSizes measures the files under dir, split into the hot database, the persistent queue and
// everything else (payload blobs and other stores).
func dirSizes(dir string) (hot, queue, other usage) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case strings.HasPrefix(filepath.Base(rel), "hot.db"):
			hot.add(info)
		case strings.HasPrefix(rel, "queue"+string(filepath.Separator)):
			queue.add(info)
		default:
			other.add(info)
		}
		return nil
	})
	return
}

// dirUsage measures every file under dir.
func dirUsage(dir string) usage {
	a, b, c := dirSizes(dir)
	return a.plus(b).plus(c)
}

// idleRule says when a process counts as idle: its CPU time grew by at most Fraction of one core
// over the last Window. Timeout bounds the wait.
type idleRule struct {
	Window   time.Duration
	Fraction float64
	Timeout  time.Duration
	Interval time.Duration
}

// cpuUntilIdle samples utime+stime of pid every rule.Interval until the process is idle (see
// idleRule) or rule.Timeout passed, so work a store does after acknowledging (flushes,
// compaction, queue drains) is counted. It returns the CPU seconds at that moment, how long it
// waited and whether the process became idle (false: timeout, context end or process exit).
func cpuUntilIdle(ctx context.Context, pid int, rule idleRule) (cpu float64, waited time.Duration, idle bool, err error) {
	type sample struct {
		at  time.Time
		cpu float64
	}
	t0 := time.Now()
	var samples []sample
	for {
		c, err := cpuSeconds(pid)
		if err != nil {
			if len(samples) > 0 {
				return samples[len(samples)-1].cpu, time.Since(t0), false, nil
			}
			return 0, 0, false, err
		}
		now := time.Now()
		samples = append(samples, sample{now, c})
		// the oldest sample at least one window old
		for len(samples) > 2 && now.Sub(samples[1].at) >= rule.Window {
			samples = samples[1:]
		}
		if span := now.Sub(samples[0].at); span >= rule.Window && c-samples[0].cpu <= rule.Fraction*span.Seconds() {
			return c, now.Sub(t0), true, nil
		}
		if now.Sub(t0) >= rule.Timeout {
			return c, now.Sub(t0), false, nil
		}
		select {
		case <-ctx.Done():
			return c, now.Sub(t0), false, ctx.Err()
		case <-time.After(rule.Interval):
		}
	}
}

// fetchProfile gets a CPU profile of seconds from a pprof extension into path.
func fetchProfile(ctx context.Context, addr string, seconds int, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+30)*time.Second)
	defer cancel()
	return fetchPprof(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds), path)
}

// fetchPprof saves what a pprof extension's URL answers (a profile) into path.
func fetchPprof(ctx context.Context, url, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("pprof: %s: %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
