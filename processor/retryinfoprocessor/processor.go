// SPDX-License-Identifier: Apache-2.0

package retryinfoprocessor // import "github.com/runagain/runagain/processor/retryinfoprocessor"

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// MemoryRefusedMessage is the text of memory_limiter's refusal (core
// go.opentelemetry.io/collector/internal/memorylimiter.ErrDataRefused, v0.165.0). The error
// value lives in an internal package no other module may import, so it is recognised by its
// text; test/faults TestOverload fails if a core release changes it.
const MemoryRefusedMessage = "data refused due to high memory usage"

// mapper turns a pipeline's error into what the otlp receiver should answer.
type mapper struct {
	overload, unavailable time.Duration
}

func newMapper(cfg *Config) mapper {
	return mapper{overload: cfg.OverloadDelay, unavailable: cfg.UnavailableDelay}
}

// refusal returns err unchanged when it is nil, permanent (consumererror.NewPermanent: the
// receiver answers INVALID_ARGUMENT / INTERNAL, not to be retried), or a gRPC status that is
// not retryable or already carries RetryInfo. Otherwise it returns a gRPC status with a
// google.rpc.RetryInfo detail:
//
//   - memory_limiter's refusal (MemoryRefusedMessage): RESOURCE_EXHAUSTED (HTTP 429), the
//     overload delay; OTLP: "the server is unable to keep up ... SHOULD respond with
//     RESOURCE_EXHAUSTED", retryable when RetryInfo is present;
//   - a RESOURCE_EXHAUSTED status without RetryInfo: the same, its message kept;
//   - every other retryable error (a plain error, which the receiver would answer UNAVAILABLE
//     without any delay, or an UNAVAILABLE status): UNAVAILABLE (HTTP 503), the unavailable
//     delay.
//
// The message is err's text, so the client still reads why.
func (m mapper) refusal(err error) error {
	if err == nil || consumererror.IsPermanent(err) {
		return err
	}
	code, delay := codes.Unavailable, m.unavailable
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable:
		case codes.ResourceExhausted:
			delay = m.overload
			code = codes.ResourceExhausted
		default:
			return err
		}
		for _, d := range st.Details() {
			if _, has := d.(*errdetails.RetryInfo); has {
				return err
			}
		}
	} else if strings.Contains(err.Error(), MemoryRefusedMessage) {
		code, delay = codes.ResourceExhausted, m.overload
	}
	st := status.New(code, err.Error())
	withInfo, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if derr != nil {
		return st.Err()
	}
	return withInfo.Err()
}

type base struct {
	component.StartFunc
	component.ShutdownFunc
	mapper
}

func (base) Capabilities() consumer.Capabilities { return consumer.Capabilities{MutatesData: false} }

type tracesProcessor struct {
	base
	next consumer.Traces
}

func (p *tracesProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return p.refusal(p.next.ConsumeTraces(ctx, td))
}

type logsProcessor struct {
	base
	next consumer.Logs
}

func (p *logsProcessor) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	return p.refusal(p.next.ConsumeLogs(ctx, ld))
}

type metricsProcessor struct {
	base
	next consumer.Metrics
}

func (p *metricsProcessor) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	return p.refusal(p.next.ConsumeMetrics(ctx, md))
}
