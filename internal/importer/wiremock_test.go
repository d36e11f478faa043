package importer

import (
	"errors"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/fixture"
)

func wireMockExchanges(t *testing.T, file string) []*fixture.Exchange {
	t.Helper()
	res, err := ParseFile("testdata/wiremock/" + file)
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != "wiremock" {
		t.Fatalf("%s detected as %s", file, res.Format)
	}
	var out []*fixture.Exchange
	for _, sp := range fixtureSpans(res.Traces) {
		ex, err := fixture.FromSpan(sp)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ex)
	}
	return out
}

func TestWireMockJSONMapping(t *testing.T) {
	exs := wireMockExchanges(t, "chat_completion.json")
	if len(exs) != 1 {
		t.Fatalf("%d exchanges, want 1", len(exs))
	}
	ex := exs[0]
	if ex.Method != "POST" || ex.URL != "http://localhost/v1/chat/completions" || ex.Status != 200 {
		t.Errorf("got %s %s %d", ex.Method, ex.URL, ex.Status)
	}
	if got, want := string(ex.RequestBody), `{"messages":[{"content":"Which ocean contains Bouvet Island?","role":"user"}],"model":"gpt-4o-mini"}`; got != want {
		t.Errorf("request body\n%s\nwant\n%s", got, want)
	}
	if !strings.HasPrefix(string(ex.ResponseBody), `{"id":"chatcmpl-wm1","object":"chat.completion","created":1730000000,`) {
		t.Errorf("response body not in written key order: %s", ex.ResponseBody)
	}
	if ex.RequestHeader.Get("Authorization") != "" {
		t.Error("a matches pattern became a recorded header")
	}
	if ex.End.Sub(ex.Start).Milliseconds() != 120 {
		t.Errorf("duration %v, want the fixed delay 120ms", ex.End.Sub(ex.Start))
	}
}

func TestWireMockYAMLMappings(t *testing.T) {
	exs := wireMockExchanges(t, "mappings.yaml")
	if len(exs) != 2 {
		t.Fatalf("%d exchanges, want 2", len(exs))
	}
	if exs[0].URL != "http://localhost/weather?city=Oslo" || string(exs[0].ResponseBody) != `{"city":"Oslo","temperature_c":-3.5,"conditions":["snow","wind"]}` {
		t.Errorf("first: %s %s", exs[0].URL, exs[0].ResponseBody)
	}
	if exs[1].Method != "POST" || exs[1].URL != "http://localhost/alerts?severity=high" || string(exs[1].RequestBody) != "storm warning" ||
		exs[1].Status != 201 || string(exs[1].ResponseBody) != "created" || len(exs[1].ResponseHeader.Values("X-Request-Id")) != 2 {
		t.Errorf("second: %+v", exs[1])
	}
}

func TestWireMockErrorsNameTheField(t *testing.T) {
	_, err := ParseFile("testdata/wiremock/body_file.json")
	if err == nil || !strings.Contains(err.Error(), "mappings[0].response.bodyFileName") {
		t.Errorf("got %v", err)
	}
	_, err = ParseFile("testdata/wiremock/unknown.yaml")
	if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "YAML mapping with top-level keys stubs") {
		t.Errorf("unknown YAML not described: %v", err)
	}
}
