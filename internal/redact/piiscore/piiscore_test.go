// SPDX-License-Identifier: Apache-2.0

package piiscore

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/redact"
)

// TestPresidioScores asserts recall >= 0.98 and precision >= 0.95 per claimed entity type on the
// corpus pii/ presidio records, and prints the table (go test -v).
func TestPresidioScores(t *testing.T) {
	recs, err := Load(filepath.Join(corpus.Dir(t), "pii"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 800 {
		t.Fatalf("read %d records, want the ~850 presidio records", len(recs))
	}
	r, err := redact.New(redact.Config{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	stats := Score(r, recs)
	var buf bytes.Buffer
	Print(&buf, stats, testing.Verbose())
	t.Log("\n" + buf.String())
	for e := range Entities {
		s := stats[e]
		if s.Labels == 0 {
			t.Errorf("%s: no labels in the corpus", e)
		}
		if s.Recall() < 0.98 {
			t.Errorf("%s recall %.3f < 0.98 (missed %q)", e, s.Recall(), s.Missed)
		}
		if s.Precision() < 0.95 {
			t.Errorf("%s precision %.3f < 0.95 (spurious %q)", e, s.Precision(), s.Spurious)
		}
	}
}

// TestScoreCountsMisses checks the scorer itself: a redactor with the phone rule disabled must
// score phone recall 0, and a record with a wrong label must lower precision.
func TestScoreCountsMisses(t *testing.T) {
	r, err := redact.New(redact.Config{HashKey: []byte("k"), Disabled: []string{redact.RulePhone}})
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	rec.FullText = "call 541-714-1388 or mail ana@example.org"
	rec.Spans = append(rec.Spans, struct {
		EntityType  string `json:"entity_type"`
		EntityValue string `json:"entity_value"`
		Start       int    `json:"start_position"`
		End         int    `json:"end_position"`
	}{"PHONE_NUMBER", "541-714-1388", 5, 17})
	st := Score(r, []Record{rec})
	if st["PHONE_NUMBER"].Recall() != 0 || st["PHONE_NUMBER"].Labels != 1 {
		t.Errorf("phone: %+v", st["PHONE_NUMBER"])
	}
	if st["EMAIL_ADDRESS"].Precision() != 0 || st["EMAIL_ADDRESS"].Detections != 1 {
		t.Errorf("email without label must be spurious: %+v", st["EMAIL_ADDRESS"])
	}
}
