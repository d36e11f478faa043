// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/dataset"
	fx "github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

const fixturePlayerEnv = "RUNAGAIN_E2E_FIXTURE_PLAYER"

// TestHelperFixturePlayer is not a test: it is the "agent" of the cassette cases. It reads the
// case runagain test gives it (RUNAGAIN_CASE_DIR), sends every recorded request again, in
// recorded order, through the forward proxy in HTTP_PROXY (plain http: the replay matches on
// method, path, query and body), and exits 1 unless each response has the recorded status and
// body, byte for byte.
func TestHelperFixturePlayer(t *testing.T) {
	if os.Getenv(fixturePlayerEnv) == "" {
		t.Skip("helper process for the dataset corpus test")
	}
	c, err := dataset.LoadCaseDir(os.Getenv("RUNAGAIN_CASE_DIR"))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	var exs []*fx.Exchange
	rss := c.Traces.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		for j := 0; j < rss.At(i).ScopeSpans().Len(); j++ {
			spans := rss.At(i).ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if sp := spans.At(k); fx.IsFixture(sp) {
					ex, err := fx.FromSpan(sp)
					if err != nil {
						fmt.Println("ERROR", err)
						os.Exit(2)
					}
					exs = append(exs, ex)
				}
			}
		}
	}
	sort.SliceStable(exs, func(a, b int) bool {
		if !exs[a].Start.Equal(exs[b].Start) {
			return exs[a].Start.Before(exs[b].Start)
		}
		return exs[a].Index < exs[b].Index
	})
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableCompression: true}, Timeout: 30 * time.Second}
	bad := 0
	for i, ex := range exs {
		u := strings.Replace(ex.URL, "https://", "http://", 1)
		req, _ := http.NewRequest(ex.Method, u, bytes.NewReader(ex.RequestBody))
		if ct := ex.RequestHeader.Get("Content-Type"); ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := client.Do(req)
		if err != nil {
			fmt.Printf("request %d: %v\n", i+1, err)
			bad++
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != ex.Status || !bytes.Equal(body, ex.ResponseBody) {
			fmt.Printf("request %d %s %s: status %d (recorded %d), %d body bytes (recorded %d): %.200s\n", i+1, ex.Method, u, resp.StatusCode, ex.Status, len(body), len(ex.ResponseBody), body)
			bad++
		}
	}
	fmt.Printf("replayed %d exchanges, %d differ\n", len(exs), bad)
	if bad > 0 {
		os.Exit(1)
	}
	os.Exit(0)
}

// TestCorpusCassettesAsCases: cassettes of the four formats the importer reads (VCR.py, go-vcr,
// nock, HAR) from the corpus are imported with the real runagain binary, added to a dataset in
// two `dataset add` calls (a second version holding all four cases), and replayed as cases by
// `runagain test --parallel 4 --json`: every recorded request gets its recorded response, every
// expectation holds.
func TestCorpusCassettesAsCases(t *testing.T) {
	dir := corpus.Dir(t)
	files := []string{
		"otel-python-contrib/instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/cassettes/test_chat_completion_with_content.yaml",                                                                         // VCR.py
		"otel-js-contrib-nock/packages/instrumentation-openai/test/mock-responses/openai-chat-completions-adds-genai-conventions.json",                                                                                     // nock
		"fantasy-go-vcr/providertests/testdata/TestImageUploadAgentStreaming/openai-gpt-5-stream.yaml",                                                                                                                     // go-vcr
		"openinference/js/packages/openinference-instrumentation-bedrock-agent-runtime/test/recordings/bedrock-agent-without-traces-bedrockagentinstrumentation-integration-agent-attributes-and_3073832749/recording.har", // HAR
	}
	col := collectortest.Start(t, collectortest.Options{})
	var traces []string
	for _, f := range files {
		p := filepath.Join(dir, f)
		res, err := importer.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var tid string
		spans := 0
		rss := res.Traces.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			for j := 0; j < rss.At(i).ScopeSpans().Len(); j++ {
				ss := rss.At(i).ScopeSpans().At(j).Spans()
				spans += ss.Len()
				if ss.Len() > 0 {
					tid = ss.At(0).TraceID().String()
				}
			}
		}
		if out, errOut, code := dsCLI(t, col, nil, "import", p); code != 0 {
			t.Fatalf("import %s: %s%s", f, out, errOut)
		}
		dsWaitSpans(t, col, tid, spans)
		traces = append(traces, tid)
	}
	out, errOut, code := dsCLI(t, col, nil, "dataset", "add", "cassettes", traces[0], traces[1], "--expect", "output=recorded", "--expect", "max_steps=1")
	if code != 0 {
		t.Fatalf("dataset add: %s%s", out, errOut)
	}
	out, errOut, code = dsCLI(t, col, nil, "dataset", "add", "cassettes", traces[2], traces[3], "--expect", "replay=strict", "--note", "go-vcr and HAR")
	if code != 0 || !strings.Contains(out, "4 cases (new version)") {
		t.Fatalf("dataset add: %s%s", out, errOut)
	}
	vs, _, _ := dsCLI(t, col, nil, "dataset", "versions", "cassettes")
	if strings.Count(vs, "\n") != 3 {
		t.Errorf("dataset versions: want 2 versions\n%s", vs)
	}
	out, errOut, code = dsCLI(t, col, []string{fixturePlayerEnv + "=1"}, "test", "cassettes", "--parallel", "4", "--json", "--",
		os.Args[0], "-test.run=^TestHelperFixturePlayer$", "-test.count=1")
	var rep struct {
		Summary dataset.Summary
		Cases   []dataset.CaseResult
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("runagain test --json: %v\n%s\n%s", err, out, errOut)
	}
	if code != 0 || rep.Summary.Passed != 4 {
		t.Errorf("runagain test: exit %d, summary %+v\n%s", code, rep.Summary, errOut)
		for _, c := range rep.Cases {
			t.Logf("%s: %s %v %s", c.Case, c.Status, c.Failure, c.Error)
		}
	}
	for _, c := range rep.Cases {
		if c.Facts == nil || c.New == "" || len(c.Checked) < 2 {
			t.Errorf("case %s: %+v", c.Case, c)
		}
	}
}
