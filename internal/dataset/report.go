// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jstemmer/go-junit-report/v2/junit"
)

// Implicit checks made after a case's own expectations: the command must exit 0, and unless the
// case has a replay expectation, replay must not diverge.
const (
	ExpectExitZero = "command exits 0"
)

// CaseResult is the outcome of one case of `runagain test`.
type CaseResult struct {
	Case     string `json:"case"`
	Status   string `json:"status"` // "pass", "fail", or "error" (the case could not be run)
	Original string `json:"original_trace_id"`
	New      string `json:"new_trace_id,omitempty"`
	// Failure is the first failed expectation; Failures all of them.
	Failure  *Failure   `json:"failure,omitempty"`
	Failures []*Failure `json:"failures,omitempty"`
	Error    string     `json:"error,omitempty"`
	DiffCmd  string     `json:"diff_command,omitempty"` // runagain diff ORIGINAL NEW
	Seconds  float64    `json:"seconds"`
	ExitCode int        `json:"exit_code"`
	Facts    *Facts     `json:"facts,omitempty"`
	Checked  []string   `json:"checked"` // every expectation checked, in order
	Output   string     `json:"-"`       // the command's stdout and stderr (JUnit system-out)
}

// Evaluate checks a case's expectations in order, then the implicit ones, against the facts
// of the new run and the command's exit code.
func Evaluate(c *Case, f *Facts, exitCode int) (checked []string, failures []*Failure) {
	hasReplay := false
	for _, e := range c.Expect.Expect {
		checked = append(checked, e.Name())
		if e.Replay != "" {
			hasReplay = true
		}
		if fl := e.Check(f); fl != nil {
			failures = append(failures, fl)
		}
	}
	checked = append(checked, ExpectExitZero)
	if exitCode != 0 {
		failures = append(failures, &Failure{Expectation: ExpectExitZero, Expected: "exit code 0", Got: fmt.Sprintf("exit code %d", exitCode)})
	}
	if !hasReplay {
		e := Expectation{Replay: "strict"}
		checked = append(checked, e.Name())
		if fl := e.Check(f); fl != nil {
			failures = append(failures, fl)
		}
	}
	return checked, failures
}

// Line is the one-line report of a case.
func (r *CaseResult) Line() string {
	switch r.Status {
	case "pass":
		return fmt.Sprintf("PASS  %s  (%.1fs, %d checks, run %s)", r.Case, r.Seconds, len(r.Checked), r.New)
	case "fail":
		return fmt.Sprintf("FAIL  %s  %s  (%.1fs; compare: %s)", r.Case, r.Failure, r.Seconds, r.DiffCmd)
	}
	return fmt.Sprintf("ERROR %s  %s", r.Case, r.Error)
}

// Summary counts results.
type Summary struct {
	Dataset string  `json:"dataset"`
	Version string  `json:"version"`
	Cases   int     `json:"cases"`
	Passed  int     `json:"passed"`
	Failed  int     `json:"failed"`
	Errors  int     `json:"errors"`
	Seconds float64 `json:"seconds"`
}

// Summarize counts the results.
func Summarize(m *Manifest, rs []*CaseResult, d time.Duration) Summary {
	s := Summary{Dataset: m.Name, Version: m.Version, Cases: len(rs), Seconds: d.Seconds()}
	for _, r := range rs {
		switch r.Status {
		case "pass":
			s.Passed++
		case "fail":
			s.Failed++
		default:
			s.Errors++
		}
	}
	return s
}

// String is the summary line.
func (s Summary) String() string {
	verdict := "ok"
	if s.Failed+s.Errors > 0 {
		verdict = "FAILED"
	}
	return fmt.Sprintf("%s: dataset %s@%s, %d cases: %d passed, %d failed, %d errors (%.1fs)",
		verdict, s.Dataset, Short(s.Version), s.Cases, s.Passed, s.Failed, s.Errors, s.Seconds)
}

// WriteJUnit writes the results as JUnit XML (one testsuite named NAME@VERSION, one testcase per
// case, class name the dataset; a failure's message is the failed expectation, its text every
// failure and the diff command; the command's output is the testcase's system-out).
func WriteJUnit(path string, m *Manifest, rs []*CaseResult, s Summary, started time.Time) error {
	suite := junit.Testsuite{Name: m.Name + "@" + Short(m.Version), Time: secs(s.Seconds)}
	suite.SetTimestamp(started)
	suite.AddProperty("runagain.dataset.version", m.Version)
	for _, r := range rs {
		tc := junit.Testcase{Name: r.Case, Classname: "runagain.dataset." + m.Name, Time: secs(r.Seconds)}
		switch r.Status {
		case "fail":
			var b strings.Builder
			for _, f := range r.Failures {
				fmt.Fprintf(&b, "%s\n", f)
			}
			fmt.Fprintf(&b, "original run %s, new run %s\ncompare: %s\n", r.Original, r.New, r.DiffCmd)
			tc.Failure = &junit.Result{Message: r.Failure.String(), Type: r.Failure.Expectation, Data: b.String()}
		case "error":
			tc.Error = &junit.Result{Message: r.Error, Type: "error", Data: r.Error}
		}
		if r.Output != "" {
			tc.SystemOut = &junit.Output{Data: r.Output}
		}
		suite.AddTestcase(tc)
	}
	var all junit.Testsuites
	all.AddSuite(suite)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	if err := all.WriteXML(f); err != nil {
		f.Close()
		return fmt.Errorf("--junit %s: %w", path, err)
	}
	return f.Close()
}

func secs(s float64) string { return fmt.Sprintf("%.3f", s) }

// WriteLines writes one line per result and the summary.
func WriteLines(w io.Writer, rs []*CaseResult, s Summary) {
	for _, r := range rs {
		fmt.Fprintln(w, r.Line())
	}
	fmt.Fprintln(w, s)
}
