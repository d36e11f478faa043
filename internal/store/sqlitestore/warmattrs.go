// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/runagain/runagain/internal/store"
)

// # The warm tier's attributes column
//
// A summary's attributes are a small JSON object (store.SummaryAttribute keys: about 300 bytes,
// two thirds of them keys, several values repeating the row's own columns). It is stored in one
// of three forms, told apart by the first byte:
//
//	'{'          the JSON text (version 2 rows; any object the compact form cannot rebuild exactly)
//	28 B5 2F FD  one zstd frame of the JSON text, no dictionary (version 3 rows)
//	01           the compact form (version 4): then, per member in the JSON text's order,
//	               the key: one byte, its index in attrKeys (1..), or 0, a uvarint length and the
//	                 key's JSON text (quotes included)
//	               the value: one byte, 0 followed by a uvarint length and the value's JSON text, or
//	                 the tag of the row column it equals (attrSame*): session_id, model, tool_name,
//	                 agent_name, error_type (as JSON strings), input_tokens, output_tokens (as
//	                 JSON integers)
//
// The compact form keeps the members in the text's order with their key and value text as
// written, so decoding rebuilds the text byte for byte; a text with whitespace between tokens (not
// json.Marshal's, which store.Summarize writes) is stored as it is. Why not zstd: per-row frames of a few hundred bytes cost 10-25 µs each to encode (the
// encoder's tables are reset per frame, a dictionary's copied in) for 199 (plain) or 99 (with a
// trained dictionary) bytes a row on the bench's summaries; the compact form takes a few µs for
// about the same bytes as the dictionary (BenchmarkWarmAttrs).

// attrsCompact starts a compact attributes value.
const attrsCompact = 0x01

// attrKeys are the keys the compact form writes as one byte (index+1): store.SummaryAttribute's
// keys (every usage spelling included) and the default session keys. Append only: a stored index names its key forever.
var attrKeys = []string{
	"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.system", "gen_ai.request.model", "gen_ai.response.model",
	"gen_ai.agent.name", "gen_ai.agent.id", "gen_ai.conversation.id", "gen_ai.tool.name", "gen_ai.tool.call.id",
	"gen_ai.tool.type", "gen_ai.response.finish_reasons", "gen_ai.response.id", "session.id", "error.type",
	"openinference.span.kind", "llm.model_name", "llm.provider", "llm.system", "http.request.method",
	"http.response.status_code", "server.address", "runagain.sequence", "gen_ai.step.sequence",
	"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens",
	"gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.prompt_tokens",
	"gen_ai.usage.completion_tokens", "gen_ai.usage.total_tokens", "llm.token_count.prompt", "llm.token_count.completion",
	"llm.token_count.total",
	// Every other usage spelling genai.TokenUsage reads (genai.UsageKeys; TestAttrKeysHoldEveryUsageKey).
	"gen_ai.usage.cache_write.input_tokens", "gen_ai.usage.cache_read_input_tokens", "gen_ai.usage.cache_creation_input_tokens",
	"cache_read_input_tokens", "cache_creation_input_tokens", "llm.token_count.prompt_details.cache_read",
	"llm.token_count.prompt_details.cache_write", "llm.token_count.completion_details.reasoning",
	"ai.usage.inputTokens", "ai.usage.outputTokens", "ai.usage.promptTokens", "ai.usage.completionTokens",
	"ai.usage.cachedInputTokens", "ai.usage.reasoningTokens",
}

// attrKeyIndex maps a key's JSON text (quoted) to its byte.
var attrKeyIndex = func() map[string]byte {
	m := make(map[string]byte, len(attrKeys))
	for i, k := range attrKeys {
		m[strconv.Quote(k)] = byte(i + 1)
	}
	return m
}()

// Value tags of the compact form: the value is the JSON text that follows, or that of a column.
const (
	attrRaw = iota
	attrSameSession
	attrSameModel
	attrSameTool
	attrSameAgent
	attrSameError
	attrSameInput
	attrSameOutput
)

// zstdMagic starts every zstd frame (RFC 8878 section 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// columnText is the JSON text of the column a value tag names.
func columnText(tag byte, s *store.SpanSummary) string {
	switch tag {
	case attrSameSession:
		return jsonString(s.SessionID)
	case attrSameModel:
		return jsonString(s.Model)
	case attrSameTool:
		return jsonString(s.ToolName)
	case attrSameAgent:
		return jsonString(s.AgentName)
	case attrSameError:
		return jsonString(s.ErrorType)
	case attrSameInput:
		return strconv.FormatInt(s.InputTokens, 10)
	case attrSameOutput:
		return strconv.FormatInt(s.OutputTokens, 10)
	}
	return ""
}

// jsonString is json.Marshal's text of s (” for none: a tag is only used for a non-empty one).
// Strings without a character json.Marshal escapes are quoted as they are, without it.
func jsonString(s string) string {
	if s == "" {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, err := json.Marshal(s)
			if err != nil {
				return ""
			}
			return string(b)
		}
	}
	return `"` + s + `"`
}

// encodeAttrs appends the stored form of s.Attributes to dst: the compact form, or the JSON text
// itself when it is not a compact object (whitespace between tokens, not an object) or is
// shorter than a compact form could be. It returns the value to bind (the text as a string, or
// the bytes) and dst for reuse.
func encodeAttrs(dst []byte, s *store.SpanSummary) (any, []byte) {
	js := s.Attributes
	if len(js) < 8 || js[0] != '{' || js[len(js)-1] != '}' {
		return js, dst
	}
	var cols [attrSameOutput + 1]string
	for tag := byte(attrSameSession); tag <= attrSameOutput; tag++ {
		cols[tag] = columnText(tag, s)
	}
	out := append(dst[:0], attrsCompact)
	i := 1
	for {
		kEnd := scanString(js, i)
		if kEnd < 0 || kEnd >= len(js) || js[kEnd] != ':' {
			return js, out[:0]
		}
		kt := js[i:kEnd]
		if k, ok := attrKeyIndex[kt]; ok {
			out = append(out, k)
		} else {
			out = append(out, 0)
			out = binary.AppendUvarint(out, uint64(len(kt)))
			out = append(out, kt...)
		}
		vEnd := skipValue(js, kEnd+1)
		if vEnd < 0 || vEnd >= len(js) {
			return js, out[:0]
		}
		v := js[kEnd+1 : vEnd]
		tag := byte(attrRaw)
		for t := byte(attrSameSession); t <= attrSameOutput; t++ {
			if cols[t] != "" && v == cols[t] {
				tag = t
				break
			}
		}
		out = append(out, tag)
		if tag == attrRaw {
			out = binary.AppendUvarint(out, uint64(len(v)))
			out = append(out, v...)
		}
		switch js[vEnd] {
		case ',':
			i = vEnd + 1
			continue
		case '}':
			if vEnd != len(js)-1 {
				return js, out[:0]
			}
			return out, out
		}
		return js, out[:0]
	}
}

// scanString returns the index after the JSON string starting at js[i] ('"'), or -1.
func scanString(js string, i int) int {
	if i >= len(js) || js[i] != '"' {
		return -1
	}
	for j := i + 1; j < len(js); j++ {
		switch js[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at js[i], or -1 when it is not one
// json.Marshal would write there (whitespace included).
func skipValue(js string, i int) int {
	if i >= len(js) {
		return -1
	}
	switch js[i] {
	case '"':
		return scanString(js, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(js); j++ {
			switch js[j] {
			case '"':
				e := scanString(js, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			case ' ', '\t', '\n', '\r':
				return -1
			}
		}
		return -1
	}
	j := i // a number, true, false or null
	for j < len(js) && js[j] != ',' && js[j] != '}' {
		switch js[j] {
		case ' ', '\t', '\n', '\r', ']', '{', '[', '"', ':':
			return -1
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}

var errAttrs = errors.New("malformed compact attributes")

// decodeAttrs returns the JSON text of a stored attributes column of the row s (its other
// columns already read).
func decodeAttrs(s *store.SpanSummary, stored []byte) (string, error) {
	switch {
	case len(stored) == 0 || stored[0] == '{':
		return string(stored), nil
	case bytes.HasPrefix(stored, zstdMagic):
		_, dec := plainCodec()
		out, err := dec.DecodeAll(stored, nil)
		if err != nil {
			return "", fmt.Errorf("decode zstd attributes: %w", err)
		}
		return string(out), nil
	case stored[0] != attrsCompact:
		return "", fmt.Errorf("attributes: unknown form %#x", stored[0])
	}
	b := stored[1:]
	out := make([]byte, 0, 3*len(stored))
	out = append(out, '{')
	next := func() ([]byte, error) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return nil, errAttrs
		}
		v := b[w : w+int(n)]
		b = b[w+int(n):]
		return v, nil
	}
	for len(b) > 0 {
		if len(out) > 1 {
			out = append(out, ',')
		}
		k := b[0]
		b = b[1:]
		switch {
		case k == 0:
			kt, err := next()
			if err != nil {
				return "", err
			}
			out = append(out, kt...)
		case int(k) <= len(attrKeys):
			out = strconv.AppendQuote(out, attrKeys[k-1])
		default:
			return "", errAttrs
		}
		out = append(out, ':')
		if len(b) == 0 {
			return "", errAttrs
		}
		tag := b[0]
		b = b[1:]
		switch {
		case tag == attrRaw:
			v, err := next()
			if err != nil {
				return "", err
			}
			out = append(out, v...)
		case tag <= attrSameOutput:
			out = append(out, columnText(tag, s)...)
		default:
			return "", errAttrs
		}
	}
	return string(append(out, '}')), nil
}
