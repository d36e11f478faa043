// A small agent written the way a user would: the official `openai` client against
// OPENAI_BASE_URL (a scripted upstream in the Go test) and the official MCP client
// (@modelcontextprotocol/sdk) speaking stdio to the notes server (server.js), started through
// `runagain mcp --name notes -- node server.js NOTES_FILE` (RUNAGAIN_BIN, MCP_SERVER_SCRIPT,
// NOTES_FILE). The SDK's default environment for the server (HOME, PATH, ...) is kept: runagain
// mcp finds the runagain command it runs under without it.
//
// It lists the tools, lets the model call them until it answers, and prints each tool result and
// the final answer. NOTE_OVERRIDE replaces the text the model asked append_note to write (the
// agent's tool arguments change); EXTRA_POST_URL makes it POST to that URL through HTTP_PROXY
// first (an unrecorded side effect).
//
// With OTEL_EXPORTER_OTLP_ENDPOINT set it is an instrumented agent too: @opentelemetry/sdk-node
// with the openai instrumentation (resolved through NODE_PATH from test/clients/openai-node's
// packages), an invoke_agent span over the run and an execute_tool span around each MCP tool
// call, as an agent framework writes them; its SDK ignores TRACEPARENT, so runagain joins the
// proxy's HTTP and MCP exchanges into this trace. It then prints "trace ID" last.
'use strict';

const http = require('node:http');

let sdk;
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
  const { NodeSDK } = require('@opentelemetry/sdk-node');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');
  const { OpenAIInstrumentation } = require('@opentelemetry/instrumentation-openai');
  sdk = new NodeSDK({
    serviceName: 'notes-agent', traceExporter: new OTLPTraceExporter(),
    instrumentations: [new OpenAIInstrumentation({ captureMessageContent: true })],
  });
  sdk.start();
}
const api = sdk ? require('@opentelemetry/api') : null;

// span runs fn inside a span named name (when traced), ending it with fn's outcome.
async function span(name, attributes, fn) {
  if (!api) return fn(null);
  return api.trace.getTracer('notes-agent').startActiveSpan(name, { attributes }, async (s) => {
    try {
      return await fn(s);
    } catch (err) {
      s.setStatus({ code: api.SpanStatusCode.ERROR, message: String(err && err.message) });
      throw err;
    } finally {
      s.end();
    }
  });
}

// Loaded after sdk.start() so the instrumentation wraps it.
const { OpenAI } = require('openai');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

function post(url) {
  const proxy = new URL(process.env.HTTP_PROXY);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'POST', path: url,
      headers: { 'content-type': 'application/json', host: new URL(url).host } }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ title: 'printer on fire' }));
  });
}

async function main() {
  let traceId;
  await span('invoke_agent notes', { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'notes' }, async (root) => {
    if (root) traceId = root.spanContext().traceId;
    await run();
  });
  if (sdk) {
    await sdk.shutdown();
    console.log('trace ' + traceId);
  }
}

async function run() {
  if (process.env.EXTRA_POST_URL) {
    const r = await post(process.env.EXTRA_POST_URL);
    console.log(`POST ${process.env.EXTRA_POST_URL}: ${r.status} ${r.body}`);
    if (r.status >= 400) process.exit(4);
  }
  const transport = new StdioClientTransport({
    command: process.env.RUNAGAIN_BIN,
    args: ['mcp', '--name', 'notes', '--', 'node', process.env.MCP_SERVER_SCRIPT, process.env.NOTES_FILE],
    stderr: 'inherit',
  });
  const mcp = new Client({ name: 'notes-agent', version: '1.0.0' });
  await mcp.connect(transport);
  const { tools } = await mcp.listTools();
  const openai = new OpenAI({ apiKey: 'sk-test-not-a-real-key', maxRetries: 0 });
  const messages = [
    { role: 'system', content: 'You keep notes.' },
    { role: 'user', content: 'Note that we need milk, then tell me what the notes say.' },
  ];
  const fns = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.inputSchema } }));
  for (let step = 0; step < 5; step++) {
    const c = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages, tools: fns });
    const msg = c.choices[0].message;
    messages.push(msg);
    if (!msg.tool_calls || msg.tool_calls.length === 0) {
      console.log('answer: ' + msg.content);
      await mcp.close();
      return;
    }
    for (const tc of msg.tool_calls) {
      const args = JSON.parse(tc.function.arguments || '{}');
      if (tc.function.name === 'append_note' && process.env.NOTE_OVERRIDE) args.text = process.env.NOTE_OVERRIDE;
      const res = await span('execute_tool ' + tc.function.name, {
        'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tc.function.name, 'gen_ai.tool.call.id': tc.id,
      }, () => mcp.callTool({ name: tc.function.name, arguments: args }));
      const text = res.content.map((p) => p.text).join('');
      console.log(`tool ${tc.function.name}: ${res.isError ? 'ERROR ' : ''}${JSON.stringify(text)}`);
      messages.push({ role: 'tool', tool_call_id: tc.id, content: text });
    }
  }
  throw new Error('too many steps');
}

main().catch((err) => {
  console.error('agent failed:', err && err.message ? err.message : err);
  process.exit(2);
});
