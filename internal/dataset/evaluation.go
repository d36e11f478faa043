// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runagainattr"
)

// EvaluationScope is the instrumentation scope of the evaluation events `runagain test` emits.
const EvaluationScope = "github.com/runagain/runagain/internal/dataset"

// Score labels of the gen_ai.evaluation.result events (the conventions ask the emitter to
// document them): a case whose expectations all held is "pass" (score 1), one with a failed
// expectation "fail" (score 0). A case that could not be run (CaseResult.Status "error") has no
// score: its event carries error.type instead.
const (
	ScoreLabelPass = "pass"
	ScoreLabelFail = "fail"
)

// EvaluationLogs is the result r of one case of dataset m as an OpenTelemetry event
// gen_ai.evaluation.result (semantic-conventions-genai v0.1.0, model/gen-ai/events.yaml), so
// back ends other than runagain read test results in their own terms. One log record:
//
//   - event name gen_ai.evaluation.result, trace id of the test run (r.New) and span id of its
//     root span (root): the event is parented to the run it evaluates, as the conventions ask;
//   - gen_ai.evaluation.name: the dataset name (one evaluation per dataset; its cases share it);
//   - gen_ai.evaluation.score.label "pass" or "fail" and gen_ai.evaluation.score.value 1.0 or
//     0.0 (double); for a case that could not be run, neither, and error.type "_OTHER";
//   - gen_ai.evaluation.explanation: the expectations checked (pass), every failed expectation
//     with expected and got and the diff command (fail), or the error (error);
//   - runagain.test.dataset, runagain.test.dataset.version, runagain.test.case and
//     runagain.rerun.original_trace_id as on the root span, and runagain.record.id (the event,
//     the run, the case: a store keeps it once however often it is sent).
//
// Severity is INFO for a pass and WARN otherwise; the body is empty. now is the event time.
func EvaluationLogs(m *Manifest, r *CaseResult, traceID pcommon.TraceID, root pcommon.SpanID, now time.Time) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr(genai.AttrServiceName, "runagain-test")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(EvaluationScope)
	lr := sl.LogRecords().AppendEmpty()
	ts := pcommon.NewTimestampFromTime(now)
	lr.SetTimestamp(ts)
	lr.SetObservedTimestamp(ts)
	lr.SetEventName(genai.EventEvaluationResult)
	lr.SetTraceID(traceID)
	lr.SetSpanID(root)
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	lr.SetSeverityText("WARN")
	a := lr.Attributes()
	a.PutStr(genai.AttrEvaluationName, m.Name)
	switch r.Status {
	case "pass":
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("INFO")
		a.PutStr(genai.AttrEvaluationScoreLabel, ScoreLabelPass)
		a.PutDouble(genai.AttrEvaluationScoreValue, 1)
		a.PutStr(genai.AttrEvaluationExplanation, "every expectation held: "+strings.Join(r.Checked, ", "))
	case "fail":
		a.PutStr(genai.AttrEvaluationScoreLabel, ScoreLabelFail)
		a.PutDouble(genai.AttrEvaluationScoreValue, 0)
		fs := r.Failures
		if len(fs) == 0 && r.Failure != nil {
			fs = []*Failure{r.Failure}
		}
		parts := make([]string, 0, len(fs)+1)
		for _, f := range fs {
			parts = append(parts, f.String())
		}
		if r.DiffCmd != "" {
			parts = append(parts, "compare: "+r.DiffCmd)
		}
		a.PutStr(genai.AttrEvaluationExplanation, strings.Join(parts, "; "))
	default:
		a.PutStr(genai.AttrErrorType, genai.ErrorTypeOther)
		a.PutStr(genai.AttrEvaluationExplanation, r.Error)
	}
	a.PutStr(runagainattr.TestDataset, m.Name)
	a.PutStr(runagainattr.TestVersion, m.Version)
	a.PutStr(runagainattr.TestCase, r.Case)
	if r.Original != "" {
		a.PutStr(runagainattr.RerunOriginalTrace, r.Original)
	}
	a.PutStr(runagainattr.RecordID, runagainattr.RecordIDOf(genai.EventEvaluationResult, traceID.String(), m.Name, m.Version, r.Case))
	return ld
}
