// A small stdio MCP server built with the official TypeScript SDK (@modelcontextprotocol/sdk):
// append_note appends a line to the notes file named by argv[2] (a side effect), read_notes
// returns the file. Started by the agent (agent.js) through `runagain mcp --name notes -- node
// server.js FILE` in test/e2e/mcp_stdio_test.go.
'use strict';

const fs = require('node:fs');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StdioServerTransport } = require('@modelcontextprotocol/sdk/server/stdio.js');
const { z } = require('zod');

const file = process.argv[2];
const server = new McpServer({ name: 'notes', version: '1.0.0' });

server.registerTool('append_note', {
  description: 'Append one line to the notes file',
  inputSchema: { text: z.string() },
}, async ({ text }) => {
  fs.appendFileSync(file, text + '\n');
  return { content: [{ type: 'text', text: `appended ${Buffer.byteLength(text) + 1} bytes` }] };
});

server.registerTool('read_notes', {
  description: 'Read the notes file',
  inputSchema: {},
}, async () => ({ content: [{ type: 'text', text: fs.readFileSync(file, 'utf8') }] }));

server.connect(new StdioServerTransport()).catch((err) => {
  console.error(err);
  process.exit(1);
});
