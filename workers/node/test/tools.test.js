'use strict';
//  Tools (PROTOCOL.md section 2.1): a Node worker declares them in READY
//  (worker.activity's tool option), the Client reads them back with TOOLS,
//  and actd checks calls against them.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const { Worker } = require ('..');
const { Actd, until } = require ('./actd');

const WEATHER = {
    description: 'The weather in a city',
    params: { type: 'object', required: ['city'], additionalProperties: false,
              properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } } }
};

describe ('tools', () => {
    let actd, client, worker;

    before (async () => {
        actd = await new Actd ().start ();
        client = actd.client ();
    });

    after (async () => {
        if (worker)
            await worker.stop ();
        client.close ();
        await actd.finish ();
    });

    it ('checks tool options at registration', () => {
        const w = new Worker ({ endpoint: 'tcp://127.0.0.1:1', name: 'options' });
        w.activity ('a', () => 1, { outputPath: '†state.a' });
        w.activity ('b', { description: 'B', outputPath: { pattern: '^†notes' } }, () => 2);
        w.activity ('c', () => 3);
        assert.deepEqual (w.tools, { a: { outputPath: { const: '†state.a' } },
                                     b: { description: 'B', outputPath: { pattern: '^†notes' } } });
        assert.throws (() => w.activity ('d', () => 4, { outputPath: { regex: 'x' } }), TypeError);
        assert.throws (() => w.activity ('d', () => 4, { params: 'string' }), TypeError);
        assert.throws (() => w.activity ('d', () => 4, { schema: {} }), TypeError);
    });

    it ('declares tools in READY; TOOLS lists them; actd checks calls', async () => {
        worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, liveness: 3,
                               name: 'tools-node' });
        worker.activity ('n-weather', ({ city, days }) => ({ city, days: days ?? 1 }), WEATHER);
        worker.activity ('n-summary', ({ text }) => text.slice (0, 3),
                         { description: 'Summarize', outputPath: '†state.summary' });
        worker.run ();
        await until (async () => (await client.stats ()).workers.some ((w) => w.name === 'tools-node'),
                     'tools-node in STATS');
        const tools = await client.tools ();
        assert.deepEqual (tools ['n-weather'], { ...WEATHER, workers: 1 });
        assert.deepEqual (tools ['n-summary'], { description: 'Summarize',
                                                 outputPath: { const: '†state.summary' }, workers: 1 });
        assert.deepEqual (Object.keys (await client.tools ('n-summary')), ['n-summary']);

        const ok = await client.call ('n-tools', { _tool: 'n-weather', city: 'Oslo', days: 2,
                                                   _outputPath: '†state.weather' });
        assert.equal (ok.status, 'ok');
        assert.deepEqual (ok.result, { city: 'Oslo', days: 2 });
        //  The prescribed output path is given to a call that has none
        //  (call () learns it from TOOLS and resolves with the outcome)
        const prescribed = await client.call ('n-tools', { _tool: 'n-summary', text: 'abcdef' });
        assert.deepEqual (prescribed.written, ['†state.summary']);
        assert.equal (await client.resolve ('n-tools', '†state.summary'), 'abc');
        await assert.rejects (client.call ('n-tools', { _tool: 'n-weather', city: 'Oslo', days: 0,
                                                        _outputPath: '†state.w2' }),
                              (error) => error.code === 'bad_call' && /\/days/.test (error.message));
    });

    it ('refuses an unknown activity in strict mode', async () => {
        const strict = new Actd ();
        const fs = require ('node:fs');
        const path = require ('node:path');
        const config = path.join (strict.dir, 'actd.cfg');
        fs.writeFileSync (config, 'server\n    strict_activities = 1\n');
        strict.args = ['--config', config];
        await strict.start ();
        const strictClient = strict.client ();
        try {
            await assert.rejects (strictClient.call ('s', { _tool: 'nobody', _outputPath: '†x' }),
                                  (error) => error.code === 'unknown_activity');
            assert.deepEqual (await strictClient.tools (), {});
        } finally {
            strictClient.close ();
            await strict.finish ();
        }
    });
});
