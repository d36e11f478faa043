// A small weather agent written the way a user would: the official `openai` client (6.x) traced
// by @opentelemetry/instrumentation-openai with message content capture on, exporting traces and
// log records over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT) to otelcol-runagain.
//
// It makes three LLM calls against OPENAI_BASE_URL (a scripted upstream in the Go test):
//   1. chat completion (non-streaming) that asks for the get_weather tool,
//   2. chat completion streamed over SSE with the tool result, usage included,
//   3. a Responses API call with instructions.
// With AGENT_PROPAGATE=1 each request carries the W3C traceparent of the agent's span, as an HTTP
// client instrumentation would send it (the SDK itself still ignores TRACEPARENT).
// Prints the run's trace id on stdout. Run by test/e2e/node_client_test.go with NODE_PATH set to
// the packages installed by .ci/run (package.json beside this file).
'use strict';

const { NodeSDK } = require('@opentelemetry/sdk-node');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');
const { OTLPLogExporter } = require('@opentelemetry/exporter-logs-otlp-proto');
const { BatchLogRecordProcessor } = require('@opentelemetry/sdk-logs');
const { OpenAIInstrumentation } = require('@opentelemetry/instrumentation-openai');

const sdk = new NodeSDK({
  serviceName: 'weather-agent-node',
  traceExporter: new OTLPTraceExporter(),
  logRecordProcessors: [new BatchLogRecordProcessor({ exporter: new OTLPLogExporter() })],
  instrumentations: [new OpenAIInstrumentation({ captureMessageContent: true })],
});
sdk.start();

// Loaded after sdk.start() so the instrumentation wraps it.
const { OpenAI } = require('openai');
const api = require('@opentelemetry/api');

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  },
}];

// callOptions are the request options of one API call: the active span's traceparent header
// under AGENT_PROPAGATE=1, else none.
function callOptions() {
  if (!process.env.AGENT_PROPAGATE) return undefined;
  const headers = {};
  api.propagation.inject(api.context.active(), headers);
  return { headers };
}

function getWeather(args) {
  const { location } = JSON.parse(args);
  return location === 'Paris' ? 'rainy, 57°F' : 'unknown';
}

async function main() {
  const client = new OpenAI({ apiKey: 'sk-test-not-a-key', baseURL: process.env.OPENAI_BASE_URL, maxRetries: 0 });
  const tracer = api.trace.getTracer('weather-agent');
  let traceId;
  await tracer.startActiveSpan('invoke_agent weather', {
    attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'weather' },
  }, async (root) => {
    traceId = root.spanContext().traceId;
    try {
      const messages = [
        { role: 'system', content: 'You are a weather bot.' },
        { role: 'user', content: 'Weather in Paris?' },
      ];
      const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools }, callOptions());
      const msg = first.choices[0].message;
      messages.push(msg);
      for (const call of msg.tool_calls || []) {
        const result = await tracer.startActiveSpan(`execute_tool ${call.function.name}`, {
          attributes: {
            'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': call.function.name,
            'gen_ai.tool.call.id': call.id, 'gen_ai.tool.call.arguments': call.function.arguments,
          },
        }, async (span) => {
          const r = getWeather(call.function.arguments);
          span.setAttribute('gen_ai.tool.call.result', r);
          span.end();
          return r;
        });
        messages.push({ role: 'tool', tool_call_id: call.id, content: result });
      }
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini', messages, tools, stream: true, stream_options: { include_usage: true },
      }, callOptions());
      let answer = '';
      for await (const chunk of stream) {
        answer += (chunk.choices[0] && chunk.choices[0].delta && chunk.choices[0].delta.content) || '';
      }
      const summary = await client.responses.create({
        model: 'gpt-4o-mini', instructions: 'Answer in one word.', input: `Summarise: ${answer}`,
      }, callOptions());
      process.stderr.write(`answer: ${answer}\nsummary: ${summary.output_text}\n`);
    } finally {
      root.end();
    }
  });
  await sdk.shutdown();
  process.stdout.write(`${traceId}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
