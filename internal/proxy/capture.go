// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/runagain/runagain/internal/fixture"
)

// captureBody tees the response body into the exchange, timing each read; at EOF or Close the
// exchange is finished and sent.
type captureBody struct {
	rc    io.ReadCloser
	p     *pending
	r     *Recorder
	sse   bool
	buf   bytes.Buffer
	reads []fixture.Chunk
	once  sync.Once
	err   error
	eof   bool // the upstream's body was read to its end
	// cutShort: closed before the end with no upstream error (the client stopped reading)
	cutShort bool
	// upstreamCut, when the request came through Recorder.ServeHTTP, is set when the upstream's
	// body fails before its end, so the client's response is aborted as well.
	upstreamCut *upstreamCut
}

func (c *captureBody) Read(b []byte) (int, error) {
	n, err := c.rc.Read(b)
	if n > 0 {
		if c.buf.Len()+n <= MaxBodyBytes {
			c.reads = append(c.reads, fixture.Chunk{Offset: c.buf.Len(), Size: n, Time: time.Now()})
			c.buf.Write(b[:n])
		} else if len(c.p.trunc) == 0 || c.p.trunc[len(c.p.trunc)-1] != fixture.AttrResponseBody {
			c.p.trunc = append(c.p.trunc, fixture.AttrResponseBody)
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, io.EOF):
			c.eof = true
		case errors.Is(err, context.Canceled):
			// the upstream request is bound to the client's: the client went away
			c.cutShort = true
		default:
			c.err = err
			if c.upstreamCut != nil {
				c.upstreamCut.Store(true)
			}
		}
		c.done()
	}
	return n, err
}

// Close is called by the proxy when the response is over: at the upstream's EOF, or earlier when
// the client went away (it read one SSE event and closed the stream), which marks the exchange
// cut short.
func (c *captureBody) Close() error {
	err := c.rc.Close()
	if !c.eof && c.err == nil {
		c.cutShort = true
	}
	c.done()
	return err
}

func (c *captureBody) done() {
	c.once.Do(func() {
		p := c.p
		p.ex.End = time.Now()
		body := c.buf.Bytes()
		if c.sse {
			// SSE events, each timed by the read that completed it.
			evs := fixture.SplitEvents(body)
			ri := 0
			for i := range evs {
				end := evs[i].Offset + evs[i].Size
				for ri < len(c.reads)-1 && c.reads[ri].Offset+c.reads[ri].Size < end {
					ri++
				}
				if ri < len(c.reads) {
					evs[i].Time = c.reads[ri].Time
				}
			}
			p.ex.Chunks = evs
		}
		if c.err != nil {
			p.ex.Error = errorType(c.err)
		}
		p.ex.CutShort = c.cutShort
		if c.r.cfg.RedactBodies && c.r.cfg.Redactor != nil {
			s, _ := c.r.cfg.Redactor.Redact(string(body))
			if c.sse && len(s) != len(body) {
				// offsets no longer line up with redacted text: re-split events, keep their times
				evs := fixture.SplitEvents([]byte(s))
				for i := range evs {
					if i < len(p.ex.Chunks) {
						evs[i].Time = p.ex.Chunks[i].Time
					}
				}
				p.ex.Chunks = evs
			}
			body = []byte(s)
		}
		p.ex.ResponseBody = bytes.Clone(body)
		c.r.finish(p)
	})
}

// errorType is an exchange's error.type: "timeout" for a network timeout; io.ErrUnexpectedEOF,
// ECONNRESET or EPIPE by name; else the Go type of the cause (the error a wrapper wraps, e.g.
// *net.OpError), or "_OTHER" (the semantic conventions' fallback) when that type is a plain
// error string that names nothing.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "io.ErrUnexpectedEOF" // the connection closed mid-body
	case errors.Is(err, syscall.ECONNRESET):
		return "ECONNRESET"
	case errors.Is(err, syscall.EPIPE):
		return "EPIPE"
	}
	if inner := errors.Unwrap(err); inner != nil {
		err = inner // the cause's type (*net.OpError...) rather than a wrapper's
	}
	if t := fmt.Sprintf("%T", err); t != "*errors.errorString" && t != "*fmt.wrapError" {
		return t
	}
	return "_OTHER" // semantic conventions' error.type when no type names the error
}
