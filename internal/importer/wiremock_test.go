// SPDX-License-Identifier: Apache-2.0

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

// TestWireMockEveryMappingImported: a file of several YAML documents (a mapping, a mappings list,
// a list of mappings, a trailing ---) and a JSON array of mappings import every mapping, in file
// order, and a replay of the imported run serves each one's response byte for byte.
func TestWireMockEveryMappingImported(t *testing.T) {
	for _, c := range []struct {
		file  string
		calls []wmCall
	}{
		{"multi_document.yaml", []wmCall{
			{"GET", "/tickets/1", "", 200, `{"id":1,"title":"printer on fire","state":"open"}`},
			{"GET", "/tickets/2", "", 200, `{"id":2,"title":"vpn down","state":"closed"}`},
			{"POST", "/tickets", `{"title":"new laptop"}`, 201, `{"id":3}`},
			{"DELETE", "/tickets/2", "", 204, ""},
			{"GET", "/tickets?state=open", "", 200, "1"},
		}},
		{"array.json", []wmCall{
			{"GET", "/users/7", "", 200, `{"id":7,"name":"Grace"}`},
			{"GET", "/users/8", "", 404, "no such user"},
			{"PUT", "/users/7", "name=Grace+Hopper", 200, "ok"},
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			exs := wireMockExchanges(t, c.file)
			if len(exs) != len(c.calls) {
				t.Fatalf("%d exchanges, want %d (every mapping of the file)", len(exs), len(c.calls))
			}
			for i, w := range c.calls {
				if exs[i].Method != w.method || exs[i].URL != "http://localhost"+w.path {
					t.Errorf("exchange %d: %s %s, want %s %s (file order)", i, exs[i].Method, exs[i].URL, w.method, w.path)
				}
			}
			replayWireMock(t, c.file, c.calls)
		})
	}
}

// TestWireMockBadMappingNamesDocument: a mapping that cannot be imported fails the whole file
// with an error naming the file, the document and the mapping's index.
func TestWireMockBadMappingNamesDocument(t *testing.T) {
	_, err := ParseFile("testdata/wiremock/bad_second_document.yaml")
	if err == nil {
		t.Fatal("a mapping without a response was imported")
	}
	for _, want := range []string{"bad_second_document.yaml", "document 2 of 2", "mappings[1].response"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
