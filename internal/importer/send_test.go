// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"context"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/otlpclient"
	"github.com/runagain/runagain/internal/otlpclient/otlptest"
)

// TestSendCorpusBytesEqual sends every corpus trace and the fixtures and checks that the bytes
// the server received are exactly the protobuf of what was parsed.
func TestSendCorpusBytesEqual(t *testing.T) {
	srv := otlptest.Start(t, 0)
	snd, err := otlpclient.Dial(srv.Addr, otlpclient.Options{Insecure: true, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	files := append(langfuseCorpus(t), anyAgentCorpus(t)...)
	files = append(files, td("otlp_lines.json"), td("otlp_whole.json"), td("langfuse_small.json"), td("anyagent_small.json"))
	var m ptrace.ProtoMarshaler
	for _, f := range files {
		res, err := ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.MarshalTraces(res.Traces)
		if err != nil {
			t.Fatal(err)
		}
		before := len(srv.Requests())
		st, err := snd.SendTraces(context.Background(), res.Traces)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got := srv.Requests()[before:]
		if len(got) != 1 || st.Requests != 1 || st.Spans != res.SpanCount() || st.Bytes != len(want) {
			t.Fatalf("%s: %d requests received, stats %+v", f, len(got), st)
		}
		if !bytes.Equal(got[0], want) {
			t.Errorf("%s: received %d bytes differ from the %d parsed", f, len(got[0]), len(want))
		}
	}
}
