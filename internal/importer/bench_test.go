// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkParse parses the largest corpus file of each format and reports the time relative
// to a baseline measured in the same run: encoding/json decoding the same bytes into any
// (x_baseline = importer ns/op / baseline ns/op).
func BenchmarkParse(b *testing.B) {
	for _, set := range []struct {
		name  string
		files []string
	}{
		{"langfuse", langfuseCorpus(b)},
		{"any-agent", anyAgentCorpus(b)},
	} {
		file := largest(b, set.files)
		data, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(set.name+"/"+filepath.Base(file), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			// Baseline: the same number of plain encoding/json decodes, outside the timer.
			b.StopTimer()
			t0 := time.Now()
			for i := 0; i < b.N; i++ {
				dec := json.NewDecoder(bytes.NewReader(data))
				dec.UseNumber()
				var v any
				if err := dec.Decode(&v); err != nil {
					b.Fatal(err)
				}
			}
			baseline := time.Since(t0)
			b.StartTimer()
			for i := 0; i < b.N; i++ {
				if _, err := ParseBytes(file, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(baseline), "x_baseline")
		})
	}
}

func largest(tb testing.TB, files []string) string {
	best, size := "", int64(-1)
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			tb.Fatal(err)
		}
		if st.Size() > size {
			best, size = f, st.Size()
		}
	}
	return best
}
