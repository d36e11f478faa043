// A small support agent written the way a user of the OpenAI Agents SDK for JS (@openai/agents)
// would: a triage agent with an input guardrail hands off to a weather agent with a function
// tool, both on OpenAIChatCompletionsModel. The SDK has its own tracing (TracingProcessor); npm
// serves no OpenTelemetry instrumentation for it, so, as its tracing guide suggests for other
// backends, a small processor (below) turns its traces into OpenTelemetry spans with the GenAI
// semantic conventions (gen_ai.operation.name chat / execute_tool / invoke_agent,
// gen_ai.input.messages / gen_ai.output.messages, gen_ai.usage.*), exported over OTLP/HTTP
// (OTEL_EXPORTER_OTLP_ENDPOINT) by the OpenTelemetry Node SDK to otelcol-runagain. It replaces
// the SDK's default processor, so nothing is sent to the OpenAI tracing backend.
//
// Against OPENAI_BASE_URL (a scripted upstream in the Go test, directly or through
// `runagain proxy --record`, whose TRACEPARENT the run joins) it makes three LLM calls: the
// triage agent's handoff, the weather agent's get_weather call, its answer. Prints the run's
// trace id on stdout. Run by test/e2e/openai_agents_client_test.go with NODE_PATH set to the
// packages .ci/run installs (package.json beside this file), on Node 22 (openai 7 needs it).
'use strict';

const { NodeSDK } = require('@opentelemetry/sdk-node');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');

const sdk = new NodeSDK({ serviceName: 'support-agent-openai-agents', traceExporter: new OTLPTraceExporter() });
sdk.start();

const api = require('@opentelemetry/api');
const { Agent, run, tool, handoff, OpenAIChatCompletionsModel, setTraceProcessors } = require('@openai/agents');
const OpenAI = require('openai');
const { z } = require('zod');

// parts converts one OpenAI chat message to GenAI semconv message parts.
function toSemconvMessage(m) {
  const parts = [];
  if (m.role === 'tool') {
    parts.push({ type: 'tool_call_response', id: m.tool_call_id, response: textOf(m.content) });
    return { role: 'tool', parts };
  }
  const text = textOf(m.content);
  if (text) parts.push({ type: 'text', content: text });
  for (const tc of m.tool_calls || []) {
    let args = tc.function.arguments;
    try {
      args = JSON.parse(args);
    } catch (_) {
      // keep the string
    }
    parts.push({ type: 'tool_call', id: tc.id, name: tc.function.name, arguments: args });
  }
  return { role: m.role, parts };
}

function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => p.text || '').join('');
  return '';
}

function usageAttributes(u) {
  const a = {};
  if (!u) return a;
  const input = u.input_tokens ?? u.prompt_tokens;
  const output = u.output_tokens ?? u.completion_tokens;
  if (input !== undefined) a['gen_ai.usage.input_tokens'] = input;
  if (output !== undefined) a['gen_ai.usage.output_tokens'] = output;
  const cached = u.cached_input_tokens ?? u.prompt_tokens_details?.cached_tokens;
  if (cached) a['gen_ai.usage.cache_read.input_tokens'] = cached;
  if (u.cache_write_input_tokens) a['gen_ai.usage.cache_write.input_tokens'] = u.cache_write_input_tokens;
  return a;
}

// OTelProcessor is an Agents SDK TracingProcessor that writes each SDK span as an OpenTelemetry
// span, parented as the SDK parents them, under the context given for each SDK trace.
class OTelProcessor {
  constructor(tracer, parentContext) {
    this.tracer = tracer;
    this.parentContext = parentContext;
    this.spans = new Map(); // SDK trace or span id -> OTel span
  }

  async onTraceStart(t) {
    const s = this.tracer.startSpan(t.name, { attributes: { 'openai.agents.trace_id': t.traceId } }, this.parentContext());
    this.spans.set(t.traceId, s);
  }

  async onTraceEnd(t) {
    this.end(t.traceId);
  }

  async onSpanStart(span) {
    const parent = this.spans.get(span.parentId || span.traceId);
    const ctx = parent ? api.trace.setSpan(api.context.active(), parent) : this.parentContext();
    const d = span.spanData;
    const kind = d.type === 'generation' ? api.SpanKind.CLIENT : api.SpanKind.INTERNAL;
    const s = this.tracer.startSpan(d.type, { kind, attributes: { 'openai.agents.span_data.type': d.type } }, ctx);
    this.spans.set(span.spanId, s);
  }

  async onSpanEnd(span) {
    const s = this.spans.get(span.spanId);
    if (!s) return;
    const d = span.spanData;
    switch (d.type) {
      case 'task':
        s.updateName(`invoke_workflow ${d.name}`);
        s.setAttributes({ 'gen_ai.operation.name': 'invoke_workflow', 'gen_ai.workflow.name': d.name, ...usageAttributes(d.usage) });
        break;
      case 'turn':
        s.updateName(`turn ${d.turn} ${d.agent_name}`);
        s.setAttributes({ 'gen_ai.agent.name': d.agent_name, ...usageAttributes(d.usage) });
        break;
      case 'agent':
        s.updateName(`invoke_agent ${d.name}`);
        s.setAttributes({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': d.name });
        break;
      case 'generation': {
        const response = (d.output || [])[0] || {};
        s.updateName(`chat ${d.model}`);
        s.setAttributes({
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': d.model,
          ...(response.model ? { 'gen_ai.response.model': response.model } : {}),
          ...(response.id ? { 'gen_ai.response.id': response.id } : {}),
          'gen_ai.response.finish_reasons': (response.choices || []).map((c) => c.finish_reason),
          'gen_ai.input.messages': JSON.stringify((d.input || []).map(toSemconvMessage)),
          'gen_ai.output.messages': JSON.stringify(
            (response.choices || []).map((c) => ({ ...toSemconvMessage(c.message), finish_reason: c.finish_reason })),
          ),
          ...usageAttributes(d.usage || response.usage),
        });
        break;
      }
      case 'function':
        s.updateName(`execute_tool ${d.name}`);
        s.setAttributes({
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': d.name,
          'gen_ai.tool.type': 'function',
          'gen_ai.tool.call.arguments': d.input,
          'gen_ai.tool.call.result': d.output,
        });
        break;
      case 'handoff':
        s.updateName(`${d.from_agent} → ${d.to_agent}.handoff`);
        s.setAttributes({ 'gen_ai.handoff.from_agent': d.from_agent, 'gen_ai.handoff.to_agent': d.to_agent });
        break;
      case 'guardrail':
        s.updateName(`guardrail ${d.name}`);
        s.setAttributes({ 'gen_ai.guardrail.name': d.name, 'gen_ai.guardrail.triggered': d.triggered });
        break;
      default:
        break;
    }
    if (span.error) s.setStatus({ code: api.SpanStatusCode.ERROR, message: span.error.message });
    this.end(span.spanId);
  }

  end(id) {
    const s = this.spans.get(id);
    if (s) {
      s.end();
      this.spans.delete(id);
    }
  }

  async shutdown() {}

  async forceFlush() {}
}

async function main() {
  const tracer = api.trace.getTracer('support-agent');
  // Under `runagain proxy --record` the run joins the proxy's trace through TRACEPARENT.
  const outer = process.env.TRACEPARENT
    ? api.propagation.extract(api.context.active(), { traceparent: process.env.TRACEPARENT })
    : api.context.active();
  const root = tracer.startSpan('support request', {}, outer);
  const rootContext = api.trace.setSpan(outer, root);
  setTraceProcessors([new OTelProcessor(tracer, () => rootContext)]);

  const client = new OpenAI({ apiKey: 'sk-test-not-a-key', baseURL: process.env.OPENAI_BASE_URL, maxRetries: 0 });
  const model = new OpenAIChatCompletionsModel(client, 'gpt-4o-mini');
  const getWeather = tool({
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: z.object({ location: z.string() }),
    execute: async ({ location }) => (location === 'Paris' ? 'rainy, 57°F' : 'unknown'),
  });
  const weatherAgent = new Agent({
    name: 'weather_agent',
    instructions: 'You answer weather questions with get_weather.',
    model,
    tools: [getWeather],
  });
  const noSecrets = {
    name: 'no_secrets',
    execute: async ({ input }) => {
      const text = typeof input === 'string' ? input : JSON.stringify(input);
      return { outputInfo: { checked: text.length }, tripwireTriggered: /password/i.test(text) };
    },
  };
  const triage = new Agent({
    name: 'triage_agent',
    instructions: 'Hand weather questions to the weather agent.',
    model,
    handoffs: [handoff(weatherAgent)],
    inputGuardrails: [noSecrets],
  });

  let traceId;
  try {
    traceId = root.spanContext().traceId;
    const result = await run(triage, 'Weather in Paris?', { maxTurns: 5 });
    if (!result.finalOutput) throw new Error('no final output');
  } finally {
    root.end();
  }
  await sdk.shutdown();
  process.stdout.write(traceId + '\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
