// A small weather agent written the way a user of the Vercel AI SDK would: `generateText` with a
// function tool and up to three steps, over @ai-sdk/openai's chat completions model, with the
// SDK's own OpenTelemetry telemetry on (experimental_telemetry), exported over OTLP/HTTP
// (OTEL_EXPORTER_OTLP_ENDPOINT) by the OpenTelemetry Node SDK to otelcol-runagain.
//
// Against OPENAI_BASE_URL (a scripted upstream in the Go test) it makes two LLM calls: one that
// asks for get_weather, then one with the tool's result. Prints the run's trace id on stdout.
// Run by test/e2e/vercel_ai_client_test.go with NODE_PATH set to the packages .ci/run installs
// (package.json beside this file).
'use strict';

const { NodeSDK } = require('@opentelemetry/sdk-node');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');

const sdk = new NodeSDK({ serviceName: 'weather-agent-vercel', traceExporter: new OTLPTraceExporter() });
sdk.start();

const api = require('@opentelemetry/api');
const { generateText, tool, stepCountIs } = require('ai');
const { createOpenAI } = require('@ai-sdk/openai');
const { z } = require('zod');

async function main() {
  const openai = createOpenAI({ apiKey: 'sk-test-not-a-key', baseURL: process.env.OPENAI_BASE_URL });
  let traceId;
  const tracer = api.trace.getTracer('weather-agent');
  await tracer.startActiveSpan('weather request', async (root) => {
    traceId = root.spanContext().traceId;
    try {
      const result = await generateText({
        model: openai.chat('gpt-4o-mini'),
        system: 'You are a weather bot.',
        prompt: 'Weather in Paris?',
        tools: {
          get_weather: tool({
            description: 'Current weather of a city',
            inputSchema: z.object({ location: z.string() }),
            execute: async ({ location }) => (location === 'Paris' ? 'rainy, 57°F' : 'unknown'),
          }),
        },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
        experimental_telemetry: { isEnabled: true, functionId: 'weather' },
      });
      if (!result.text) throw new Error('no final text');
    } finally {
      root.end();
    }
  });
  await sdk.shutdown();
  process.stdout.write(traceId + '\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
