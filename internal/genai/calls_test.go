// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestContentHashFromRef(t *testing.T) {
	h := "3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b"
	for _, tc := range []struct{ in, want string }{
		{"file:///var/lib/runagain/blobs/sha256/" + h + ".zst", h},
		{"s3://payloads/runagain/sha256/" + h + ".manifest.zst?region=us-east-1&endpoint=x%2Fy", h},
		{"mem://b/sha256/" + h, h},
		{"gs://bucket/other/name.json", "gs://bucket/other/name.json"},
		{"file:///x/" + h[:63] + ".zst", "file:///x/" + h[:63] + ".zst"},
	} {
		if got := ContentHashFromRef(tc.in); got != tc.want {
			t.Errorf("ContentHashFromRef(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestToolArgumentsAndFinishReasons(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr(AttrToolCallArguments+RefSuffix, "file:///b/sha256/3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b.zst")
	p := ToolArguments(m)
	if p.Value != "" || p.Identity() != "sha256:3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b" {
		t.Fatalf("offloaded arguments: %+v identity %q", p, p.Identity())
	}
	m.PutStr(AttrToolCallArguments, `{"q":1}`)
	if p := ToolArguments(m); p.Value != `{"q":1}` {
		t.Fatalf("inline arguments must win: %+v", p)
	}
	if err := m.PutEmptySlice(AttrFinishReasons).FromRaw([]any{"stop", "length"}); err != nil {
		t.Fatal(err)
	}
	if got := FinishReasons(m); len(got) != 2 || got[1] != "length" {
		t.Fatalf("FinishReasons = %v", got)
	}
	m.PutStr(AttrFinishReasons, "length")
	if got := FinishReasons(m); len(got) != 1 || got[0] != "length" {
		t.Fatalf("FinishReasons(string) = %v", got)
	}
}

// A Vercel AI SDK tool span (ai.toolCall) names its tool and records its arguments and result in
// ai.toolCall.*: every view shows get_weather, not the span name ai.toolCall.
func TestVercelToolCall(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr("ai.operationId", "ai.toolCall")
	m.PutStr(AttrVercelToolName, "get_weather")
	m.PutStr(AttrVercelToolArgs, `{"location":"Paris"}`)
	m.PutStr(AttrVercelToolResult, `"rainy, 57°F"`)
	if k := Classify(m); k != KindTool {
		t.Fatalf("Classify = %v", k)
	}
	if got := ToolName(m); got != "get_weather" {
		t.Errorf("ToolName = %q", got)
	}
	if got := ToolArguments(m).Value; got != `{"location":"Paris"}` {
		t.Errorf("ToolArguments = %q", got)
	}
	m.PutStr(AttrToolName, "semconv_name")
	if got := ToolName(m); got != "semconv_name" {
		t.Errorf("gen_ai.tool.name must win: %q", got)
	}
}
