// SPDX-License-Identifier: Apache-2.0

package profsplit

// Areas splits otelcol-runagain by the session's work areas, one owner each (bench/cmd/profareas):
// the hot SQLite write, payload offload, the warm and cold tiers, redaction, agent_guard, the
// tiered exporter's own code, the otlp receiver (with pdata decoding), the background garbage
// collector and the collector's own telemetry. SQLite and zstd are charged to the write that
// called them; generic sqlitestore code (the run index, codecs) under the warm write is warm.
var Areas = Table{
	Parts: []Part{
		{"guard", []string{"connector/agentguardconnector"}},
		{"redact", []string{"processor/agentredactionprocessor", "runagain/internal/redact"}},
		{"offload", []string{"processor/payloadoffloadprocessor", "runagain/internal/payloadref"}},
		{"warm", []string{"sqlitestore.(*WarmDB)", "runagainstorageextension.(*warmSQLite)", "runagainstorageextension.(*cold",
			"runagain/internal/store.", "runagain/internal/store/parquet", "exporter/tieredexporter.records",
			"go.etcd.io/bbolt", "extension/storage/filestorage", "persistentQueue", "parquet-go"}},
		{"hot", []string{"runagain/internal/store/sqlitestore", "runagainstorageextension.(*hotSQLite)"}},
		{"tiered", []string{"exporter/tieredexporter", "exporter/exporterhelper"}},
		{"receiver", []string{"receiver/otlpreceiver", "ptraceotlp", "plogotlp", "google.golang.org/grpc", "golang.org/x/net/http2", "pdata/internal"}},
		{"GC", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
		{"telemetry", []string{"prometheus/client_golang", "go.opentelemetry.io/otel/sdk"}},
	},
	Moves: []Move{{From: "hot", To: "warm", Patterns: []string{"sqlitestore.(*WarmDB)", "(*warmSQLite)"}}},
	Other: "other",
}

// Components splits any of bench's pipelines (runagain and its peers: the plain collector, the
// contrib redaction pipeline, the file exporter, Jaeger) by pipeline component, for the table in
// BENCHMARKS.md: the SQLite engine on its own, whatever calls it.
var Components = Table{
	Parts: []Part{
		{"SQLite engine (modernc.org/sqlite)", []string{"modernc.org/sqlite", "modernc.org/libc"}},
		{"tiered exporter (row encoding, batching)", []string{"exporter/tieredexporter", "internal/store/sqlitestore"}},
		{"persistent queue (file_storage, bbolt)", []string{"go.etcd.io/bbolt", "extension/storage/filestorage", "persistentQueue"}},
		{"agent_redaction", []string{"processor/agentredactionprocessor", "runagain/internal/redact"}},
		{"payload_offload", []string{"processor/payloadoffloadprocessor", "runagain/internal/payloadref", "gocloud.dev/blob"}},
		{"agent_guard", []string{"connector/agentguardconnector"}},
		{"contrib redaction", []string{"processor/redactionprocessor"}},
		{"file exporter (marshal, zstd, write)", []string{"exporter/fileexporter"}},
		{"Badger store (jaeger)", []string{"github.com/dgraph-io/badger", "github.com/dgraph-io/ristretto"}},
		{"jaeger storage exporter (model translation)", []string{"github.com/jaegertracing/jaeger"}},
		{"batch processor", []string{"processor/batchprocessor"}},
		{"memory_limiter", []string{"memorylimiter"}},
		{"otlp receiver (gRPC, protobuf decode)", []string{"receiver/otlpreceiver", "google.golang.org/grpc", "golang.org/x/net/http2"}},
		{"exporter helper / queue batching", []string{"exporter/exporterhelper"}},
		{"collector telemetry (prometheus, otel sdk)", []string{"prometheus/client_golang", "go.opentelemetry.io/otel/sdk"}},
		{"GC (background)", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
	},
	Other: "other (scheduler, syscalls, idle work)",
}

// LeafKinds are the kinds of leaf work profareas reports per area: system calls and lock or
// scheduler waits (leaf frame only), allocation (mallocgc and below), GC assists and zstd.
var LeafKinds = []Kind{
	{Name: "syscall", Patterns: []string{"syscall.Syscall", "syscall.RawSyscall", "internal/runtime/syscall", "modernc.org/libc.___syscall"}, LeafOnly: true},
	{Name: "lock/sched", Patterns: []string{"runtime.futex", "runtime.lock2", "runtime.unlock2", "runtime.procyield", "runtime.osyield",
		"sync.(*Mutex).lockSlow", "sync.(*Mutex).unlockSlow", "runtime.semacquire", "runtime.semrelease", "runtime.schedule",
		"runtime.findRunnable", "runtime.usleep"}, LeafOnly: true},
	{Name: "gcassist", Patterns: []string{"runtime.gcAssistAlloc"}},
	{Name: "malloc", Patterns: []string{"runtime.mallocgc"}},
	{Name: "zstd", Patterns: []string{"klauspost/compress/zstd"}},
}
