// A small weather agent written the way a user of LangGraph JS would: a StateGraph over
// MessagesAnnotation with a model node (@langchain/openai's ChatOpenAI, tools bound), a ToolNode
// and toolsCondition between them, traced by OpenInference's LangChain instrumentation
// (@arizeai/openinference-instrumentation-langchain) and exported over OTLP/HTTP
// (OTEL_EXPORTER_OTLP_ENDPOINT) by the OpenTelemetry Node SDK to otelcol-runagain.
//
// Against OPENAI_BASE_URL (a scripted upstream in the Go test) it makes two LLM calls: one that
// asks for get_weather, then one with the tool's result. Prints the run's trace id on stdout.
// Run by test/e2e/langgraph_client_test.go with NODE_PATH set to the packages .ci/run installs
// (package.json beside this file).
'use strict';

const { NodeSDK } = require('@opentelemetry/sdk-node');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');
const { LangChainInstrumentation } = require('@arizeai/openinference-instrumentation-langchain');
const CallbackManagerModule = require('@langchain/core/callbacks/manager');

const sdk = new NodeSDK({ serviceName: 'weather-agent-langgraph', traceExporter: new OTLPTraceExporter() });
sdk.start();
// LangChain is instrumented by hand: @langchain/core has no single module to hook (the
// instrumentation's README).
new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);

const api = require('@opentelemetry/api');
const { StateGraph, MessagesAnnotation, START } = require('@langchain/langgraph');
const { ToolNode, toolsCondition } = require('@langchain/langgraph/prebuilt');
const { tool } = require('@langchain/core/tools');
const { SystemMessage, HumanMessage } = require('@langchain/core/messages');
const { ChatOpenAI } = require('@langchain/openai');
const { z } = require('zod');

const getWeather = tool(async ({ location }) => (location === 'Paris' ? 'rainy, 57°F' : 'unknown'), {
  name: 'get_weather',
  description: 'Current weather of a city',
  schema: z.object({ location: z.string() }),
});

async function main() {
  const model = new ChatOpenAI({
    model: 'gpt-4o-mini',
    apiKey: 'sk-test-not-a-key',
    configuration: { baseURL: process.env.OPENAI_BASE_URL },
    maxRetries: 0,
  }).bindTools([getWeather]);
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode([getWeather]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition)
    .addEdge('tools', 'agent')
    .compile();

  let traceId;
  const tracer = api.trace.getTracer('weather-agent');
  await tracer.startActiveSpan('weather request', async (root) => {
    traceId = root.spanContext().traceId;
    try {
      const out = await graph.invoke(
        { messages: [new SystemMessage('You are a weather bot.'), new HumanMessage('Weather in Paris?')] },
        { recursionLimit: 6 },
      );
      if (!out.messages.at(-1).content) throw new Error('no final text');
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
