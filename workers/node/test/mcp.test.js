'use strict';
//  actd-mcp through the official MCP SDK's own Client: stdio (the
//  bin/actd-mcp.js process) and Streamable HTTP, against a real actd and
//  real Node workers: tools/list (schemas that are not plain object
//  schemas too), tools/call (ok, error outcome, refused call, arguments
//  that are actd call fields, an unknown tool (a JSON-RPC error), a
//  cancelled request), the context's merged
//  view as a resource, and notifications/tools/list_changed when a worker
//  with a new tool comes and goes. mcp_sessions.test.js has the rest:
//  sessions that close mid-call, HTTP limits, --confine, actd down.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const http = require ('node:http');
const path = require ('node:path');
const { Client: McpClient } = require ('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require ('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } =
    require ('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ToolListChangedNotificationSchema, ResourceListChangedNotificationSchema } =
    require ('@modelcontextprotocol/sdk/types.js');
const Ajv2020 = require ('ajv/dist/2020');
const { Worker, ActivityError } = require ('..');
const { ActdMcp } = require ('../lib/mcp');
const { Actd, until } = require ('./actd');

const BIN = path.join (__dirname, '..', 'bin', 'actd-mcp.js');
const WEATHER = {
    description: 'The weather in a city',
    params: { type: 'object', required: ['city'], additionalProperties: false,
              properties: { city: { type: 'string' } } }
};

//  A raw initialize request to actd-mcp's HTTP server with these headers
//  (Host among them): { status, body }
function s_initialize (port, headers) {
    const body = JSON.stringify ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
        protocolVersion: '2025-06-18', capabilities: {},
        clientInfo: { name: 'rebinding', version: '1' } } });
    return new Promise ((resolve, reject) => {
        const request = http.request ({ host: '127.0.0.1', port, path: '/mcp', method: 'POST',
            headers: { 'content-type': 'application/json',
                       accept: 'application/json, text/event-stream', ...headers } },
        (response) => {
            let text = '';
            response.setEncoding ('utf8');
            response.on ('data', (chunk) => { text += chunk; });
            response.on ('end', () => resolve ({ status: response.statusCode, body: text }));
        });
        request.on ('error', reject);
        request.end (body);
    });
}

describe ('actd-mcp', () => {
    let actd, client, transport, worker, stderr = '';
    const toolsChanged = [], resourcesChanged = [];
    const tasks = [];                   //  The weather tasks the worker ran
    const slow = { started: 0, aborted: 0 };

    //  A Node worker serving handlers with tools, registered with actd
    async function serve (name, activities) {
        const serving = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200,
                                      liveness: 3, name });
        for (const [activity, [handler, tool]] of Object.entries (activities))
            serving.activity (activity, handler, tool);
        serving.run ();
        const probe = actd.client ();
        try {
            await until (async () => (await probe.stats ()).workers.some ((w) => w.name === name),
                         `worker ${name} in STATS`);
        } finally {
            probe.close ();
        }
        return serving;
    }

    before (async () => {
        actd = await new Actd ().start ();
        worker = await serve ('mcp-worker', {
            weather: [({ city }, task) => {
                tasks.push (task);
                return { city, sky: city.length % 2? 'rainy': 'sunny' };
            }, WEATHER],
            fails: [() => { throw new ActivityError ('no such station', { code: 'no_station',
                                                                          retryable: false }); },
                    { description: 'Always fails' }],
            slow: [async (params, task) => {
                slow.started++;
                await new Promise ((resolve) => {
                    task.signal.addEventListener ('abort', resolve);
                    setTimeout (resolve, 20000).unref ();
                });
                if (task.signal.aborted)
                    slow.aborted++;
                return 'finished';
            }, { description: 'Takes 20 s unless cancelled' }]
        });
        transport = new StdioClientTransport ({
            command: process.execPath,
            args: [BIN, '--endpoint', actd.clientEndpoint, '--poll-ms', '100'],
            stderr: 'pipe'
        });
        transport.stderr.on ('data', (chunk) => { stderr += chunk; });
        client = new McpClient ({ name: 'actd-mcp-test', version: '1.0.0' });
        client.setNotificationHandler (ToolListChangedNotificationSchema,
                                       (notification) => toolsChanged.push (notification));
        client.setNotificationHandler (ResourceListChangedNotificationSchema,
                                       (notification) => resourcesChanged.push (notification));
        await client.connect (transport);
    });

    after (async () => {
        if (client)
            await client.close ();
        if (worker)
            await worker.stop ();
        await actd.finish ();
    });

    it ('lists the workers\' tools with their schemas', async () => {
        const { tools } = await client.listTools ();
        assert.deepEqual (tools.map ((tool) => tool.name), ['fails', 'slow', 'weather']);
        const weather = tools.find ((tool) => tool.name === 'weather');
        assert.equal (weather.description, 'The weather in a city');
        assert.deepEqual (weather.inputSchema, WEATHER.params);
        const fails = tools.find ((tool) => tool.name === 'fails');
        assert.deepEqual (fails.inputSchema, { type: 'object' });
        assert.match (stderr, /serving MCP on stdio \(context mcp\/[0-9a-f-]{36}\)/);
    });

    it ('calls a tool as a CALL and returns its result', async () => {
        const result = await client.callTool ({ name: 'weather', arguments: { city: 'Oslo' } });
        assert.equal (result.isError, undefined);
        assert.deepEqual (JSON.parse (result.content [0].text), { city: 'Oslo', sky: 'sunny' });
    });

    it ('returns an error outcome, and a refused call, as isError', async () => {
        const failed = await client.callTool ({ name: 'fails', arguments: {} });
        assert.equal (failed.isError, true);
        assert.equal (failed.content [0].text, 'no_station: no such station');
        const refused = await client.callTool ({ name: 'weather', arguments: { town: 'Oslo' } });
        assert.equal (refused.isError, true);
        assert.match (refused.content [0].text, /^bad_call: /);
    });

    it ('refuses an unknown tool as a JSON-RPC error -32602', async () => {
        //  A protocol error, as MCP's Tools page has it; the SDK's client
        //  puts "MCP error -32602: " before the message it received
        await assert.rejects (client.callTool ({ name: 'nothing', arguments: {} }),
            (error) => error.code === -32602
                    && error.message === 'MCP error -32602: Unknown tool: nothing');
    });

    it ('serves the session\'s context\'s merged view as a resource', async () => {
        const { resources } = await client.listResources ();
        assert.equal (resources.length, 1);
        const [resource] = resources;
        assert.match (resource.uri, /^actd:\/\/context\/mcp\/[0-9a-f-]{36}$/);
        assert.equal (resource.mimeType, 'text/plain');
        const read = await client.readResource ({ uri: resource.uri });
        assert.equal (read.contents [0].uri, resource.uri);
        //  The view holds what the calls wrote, as VIEW text renders it
        const context = resource.uri.slice ('actd://context/'.length);
        const probe = actd.client ();
        try {
            assert.equal (read.contents [0].text, await probe.view (context, 'text'));
            assert.deepEqual (await probe.resolve (context, '\u2020tools["weather"]'),
                              { city: 'Oslo', sky: 'sunny' });
        } finally {
            probe.close ();
        }
        assert.match (read.contents [0].text, /Oslo/);
        const { resourceTemplates } = await client.listResourceTemplates ();
        assert.equal (resourceTemplates [0].uriTemplate, 'actd://context/{id}');
    });

    it ('runs a call in the context its _context argument names', async () => {
        const result = await client.callTool ({ name: 'weather',
            arguments: { city: 'Bergen', _context: 'mcp-named', _outputPath: '\u2020state.w' } });
        assert.equal (result.isError, undefined);
        await until (() => resourcesChanged.length > 0, 'resources/list_changed');
        const { resources } = await client.listResources ();
        assert.ok (resources.some ((r) => r.uri === 'actd://context/mcp-named'));
        const read = await client.readResource ({ uri: 'actd://context/mcp-named' });
        assert.match (read.contents [0].text, /Bergen/);
    });

    it ('sends tools/list_changed when a worker with a new tool comes and goes', async () => {
        const before = toolsChanged.length;
        const second = await serve ('mcp-second', {
            summarize: [({ text }) => text.slice (0, 5),
                        { description: 'Summarize', outputPath: '\u2020state.summary' }]
        });
        try {
            await until (() => toolsChanged.length > before, 'list_changed for a new tool');
            const { tools } = await client.listTools ();
            assert.deepEqual (tools.map ((tool) => tool.name),
                              ['fails', 'slow', 'summarize', 'weather']);
            //  A prescribed output path is the one the call gets
            const result = await client.callTool ({ name: 'summarize',
                                                    arguments: { text: 'abcdefgh' } });
            assert.equal (result.content [0].text, '"abcde"');
        } finally {
            await second.stop ();
        }
        const gone = toolsChanged.length;
        await until (() => toolsChanged.length > gone, 'list_changed when the worker goes');
        await until (async () => !(await client.listTools ()).tools.some ((t) => t.name === 'summarize'),
                     'summarize off the list');
        //  Its workers gone, a call of it says so within seconds (it waited in
        //  actd for a worker up to schedule_timeout_ms, the SDK client's whole
        //  60 s request timeout: before, this one timed out at 15 s)
        const started = Date.now ();
        const result = await client.callTool ({ name: 'summarize', arguments: { text: 'abc' } },
                                              undefined, { timeout: 15000 });
        assert.equal (result.isError, true);
        assert.match (result.content [0].text, /^no_worker: no worker serves tool summarize now/u);
        assert.ok (Date.now () - started < 12000, `${Date.now () - started} ms`);
    });

    it ('lists tools whose schema is not a plain object schema, as object schemas', async () => {
        //  A top-level anyOf, $ref or type list is a valid params schema;
        //  an inputSchema without "type": "object" made the SDK client
        //  refuse the whole tools/list (every tool gone)
        //  Not anchored: actd matches it against the whole path, and so must
        //  the host, from the inputSchema
        const pattern = '\u2020out\\.[a-z]+';
        const shapes = {
            anyof: { anyOf: [{ type: 'object', required: ['a'] },
                             { type: 'object', required: ['b'] }] },
            ref: { $ref: '#/$defs/args', $defs: { args: {
                type: 'object', required: ['a'], properties: { a: { type: 'string' } } } } },
            typelist: { type: ['object'], required: ['a'], properties: { a: { type: 'string' } } }
        };
        const odd = await serve ('mcp-odd', Object.fromEntries (Object.entries (shapes).map (
            ([name, params]) => [name, [(p) => p, { params, outputPath: { pattern } }]])));
        try {
            await until (async () => (await client.listTools ().catch (() => ({ tools: [] })))
                             .tools.some ((tool) => tool.name === 'typelist'),
                         'the odd tools listed', 10000);
            const { tools } = await client.listTools ();
            const ajv = new Ajv2020 ({ strict: false });
            for (const name of Object.keys (shapes)) {
                const schema = tools.find ((tool) => tool.name === name).inputSchema;
                assert.equal (schema.type, 'object', name);
                assert.ok (schema.required.includes ('_outputPath'), name);
                const valid = ajv.compile (schema);
                assert.ok (valid ({ a: 'x', _outputPath: '\u2020out.x' }), name);
                assert.ok (!valid ({ a: 'x' }), `${name}: _outputPath is required`);
                assert.ok (!valid ({ a: 'x', _outputPath: '\u2020out.x || \u2020evil.y' }),
                           `${name}: _outputPath matches the pattern as a whole`);
                assert.ok (!valid ({ c: 'x', _outputPath: '\u2020out.x' }),
                           `${name}: a is required`);
            }
            //  The $ref still resolves from the top: a must be a string
            assert.ok (!ajv.compile (tools.find ((tool) => tool.name === 'ref').inputSchema) (
                { a: 1, _outputPath: '\u2020out.x' }));
            const result = await client.callTool ({ name: 'ref',
                arguments: { a: 'x', _outputPath: '\u2020out.r' } });
            assert.deepEqual (JSON.parse (result.content [0].text), { a: 'x' });
        } finally {
            await odd.stop ();
        }
    });

    it ('refuses arguments that are actd call fields, naming them', async () => {
        const before = tasks.length;
        for (const [fields, named] of [
                [{ _id: 'k1', _instance: 'evil' }, /^bad_arguments: _id, _instance: /],
                [{ _outputMethod: 'erase' }, /^bad_arguments: _outputMethod: /],
                [{ _timeout: 5, _retry: {}, _trace: '00-0af7651916cd43dd8448eb211c80319c-'
                   + 'b7ad6b7169203331-01' }, /^bad_arguments: _timeout, _retry, _trace: /]]) {
            const result = await client.callTool ({ name: 'weather',
                                                    arguments: { city: 'Oslo', ...fields } });
            assert.equal (result.isError, true);
            assert.match (result.content [0].text, named);
        }
        assert.equal (tasks.length, before, 'no call reached the worker');
        //  _context and _outputPath pass
        const result = await client.callTool ({ name: 'weather', arguments: {
            city: 'Lima', _context: 'mcp-fields', _outputPath: '\u2020state.lima' } });
        assert.equal (result.isError, undefined);
        assert.equal (tasks.at (-1).context, 'mcp-fields');
        assert.equal (tasks.at (-1).instance, undefined);
    });

    it ('cancels the actd call when the client cancels the request', async () => {
        const started = slow.started, aborted = slow.aborted;
        const controller = new AbortController ();
        const call = client.callTool ({ name: 'slow', arguments: {} }, undefined,
                                      { signal: controller.signal });
        await until (() => slow.started > started, 'the slow task started');
        controller.abort ('the user changed their mind');
        await assert.rejects (call, /the user changed their mind/);
        //  notifications/cancelled: actd-mcp sends CANCEL, actd the worker
        await until (() => slow.aborted > aborted, 'the task cancelled', 5000);
    });

    it ('lists a context as a resource once actd accepted a call in it', async () => {
        //  "a%41b" is no context id: actd refuses the call; its resource
        //  was listed, as actd://context/a%41b, whose read gave aAb's view
        const refused = await client.callTool ({ name: 'weather', arguments: {
            city: 'Quito', _context: 'a%41b', _outputPath: '\u2020state.x' } });
        assert.equal (refused.isError, true);
        assert.match (refused.content [0].text, /^bad_context: /);
        const { resources } = await client.listResources ();
        assert.ok (!resources.some ((resource) => resource.name === 'a%41b'),
                   JSON.stringify (resources));
        await assert.rejects (client.readResource ({ uri: 'actd://context/a%2541b' }),
                              /bad_context/);
    });

    it ('serves Streamable HTTP on loopback, a context per session', async () => {
        const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint, pollMs: 100 }).start ();
        assert.throws (() => mcp.listenHttp (0, '0.0.0.0'), /loopback only/);
        const port = await mcp.listenHttp (0);
        const httpClient = new McpClient ({ name: 'actd-mcp-http-test', version: '1.0.0' });
        try {
            const httpTransport = new StreamableHTTPClientTransport (
                new URL (`http://127.0.0.1:${port}/mcp`));
            await httpClient.connect (httpTransport);
            const { tools } = await httpClient.listTools ();
            assert.ok (tools.some ((tool) => tool.name === 'weather'));
            const result = await httpClient.callTool ({ name: 'weather',
                                                        arguments: { city: 'Rome' } });
            assert.deepEqual (JSON.parse (result.content [0].text), { city: 'Rome', sky: 'sunny' });
            await assert.rejects (httpClient.callTool ({ name: 'nothing', arguments: {} }),
                (error) => error.code === -32602
                        && error.message === 'MCP error -32602: Unknown tool: nothing');
            const { resources } = await httpClient.listResources ();
            assert.equal (resources [0].uri, `actd://context/mcp/${httpTransport.sessionId}`);
            const read = await httpClient.readResource ({ uri: resources [0].uri });
            assert.match (read.contents [0].text, /Rome/);
            //  DNS rebinding: a page at another name that resolves to
            //  127.0.0.1 sends its own name as Host and Origin; refused
            for (const [headers, status] of [
                    [{ host: `evil.example:${port}` }, 403],
                    [{ host: `127.0.0.1:${port}`, origin: `http://evil.example:${port}` }, 403],
                    [{ host: `127.0.0.1:${port}`, origin: 'null' }, 403],
                    [{ host: `localhost:${port}`, origin: `http://localhost:${port}` }, 200]]) {
                const reply = await s_initialize (port, headers);
                assert.equal (reply.status, status, JSON.stringify (headers));
                if (status === 403)
                    assert.match (reply.body, /loopback names/);
            }
        } finally {
            await httpClient.close ();
            await mcp.close ();
        }
    });
});
