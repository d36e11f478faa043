package redact

import "testing"

func BenchmarkZZShort(b *testing.B) {
	r, _ := New(Config{HashKey: []byte("bench-key"), CleanCache: NewCleanCache(8 << 20)})
	kvs := [][2]string{{"gen_ai.request.model", "gpt-4o"}, {"gen_ai.operation.name", "chat"}, {"server.address", "api.openai.com"}, {"gen_ai.response.id", "chatcmpl-1gpmuzj1azem8"}, {"", "chat gpt-4o"}, {"gen_ai.response.finish_reasons", "tool_calls"}, {"gen_ai.conversation.id", "conv_9f6067c4caa7a19a9c8939024892e324"}, {"gen_ai.response.model", "gpt-4o-2024-08-06"}}
	b.Run("value", func(b *testing.B) {
		for b.Loop() {
			for _, kv := range kvs {
				r.RedactValue(kv[0], kv[1])
			}
		}
	})
	b.Run("find", func(b *testing.B) {
		for b.Loop() {
			for _, kv := range kvs {
				r.Find(kv[1])
			}
		}
	})
	b.Run("keyApplies", func(b *testing.B) {
		for b.Loop() {
			for _, kv := range kvs {
				r.keyApplies(kv[0])
			}
		}
	})
	b.Run("digitGated", func(b *testing.B) {
		for b.Loop() {
			for _, kv := range kvs {
				r.digitGated(kv[1])
			}
		}
	})
}
