'use strict';
//  The examples run as documented: examples/worker.js serves upper, echo and
//  weather; examples/client.js calls them.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const { spawn } = require ('node:child_process');
const path = require ('node:path');
const { Actd, until, runProgram } = require ('./actd');

const EXAMPLES = path.join (__dirname, '..', 'examples');

describe ('examples', () => {
    let actd, client, worker;

    before (async () => {
        actd = await new Actd ().start ();
        client = actd.client ();
        worker = spawn (process.execPath, [path.join (EXAMPLES, 'worker.js'),
            '--endpoint', actd.workerEndpoint, '--heartbeat-ms', '200'], { stdio: 'ignore' });
        worker.exited = new Promise ((resolve) => worker.once ('exit', (code) => resolve (code)));
        await until (async () => (await client.stats ()).workers.length === 1, 'the example worker');
    });

    after (async () => {
        worker.kill ('SIGTERM');
        assert.equal (await worker.exited, 0);
        client.close ();
        await actd.finish ();
    });

    it ('worker.js serves upper, echo and weather', async () => {
        const [worker] = (await client.stats ()).workers;
        assert.deepEqual (worker.activities, ['upper', 'echo', 'weather']);
        assert.equal (worker.lang, 'node');
        const upper = await client.call ('ex', { _tool: 'upper', _outputPath: '†s.u', text: 'Hello' });
        assert.equal (upper.result, 'HELLO');
        const echo = await client.call ('ex', { _tool: 'echo', _outputPath: '†s.e', a: [1, { b: 2 }] });
        assert.deepEqual (echo.result, { a: [1, { b: 2 }] });
        const path = '†w.sunny || †w.rainy';
        const sunny = await client.call ('ex', { _tool: 'weather', _outputPath: path, city: 'Oslo' });
        assert.equal (sunny.branch, 0);
        assert.deepEqual (sunny.result, { city: 'Oslo', sky: 'sunny' });
        const rainy = await client.call ('ex', { _tool: 'weather', _outputPath: path, city: 'Paris' });
        assert.equal (rainy.branch, 1);
        assert.deepEqual (rainy.result, { city: 'Paris', sky: 'rainy' });
        const refused = await client.call ('ex', { _tool: 'upper', _outputPath: '†s.bad', text: 7 });
        assert.equal (refused.status, 'error');
        assert.equal (refused.error.code, 'bad_params');
        assert.equal (refused.attempts, 1);
    });

    it ('client.js runs against it', async () => {
        const output = await runProgram (process.execPath, [path.join (EXAMPLES, 'client.js'),
            '--endpoint', actd.clientEndpoint, '--context', 'ex-client']);
        assert.match (output, /^upper: ok -> "HELLO, WORLD"$/m);
        assert.match (output, /^weather: branch 0, wrote \["†forecast.sunny"\]$/m);
        assert.match (output, /^echo: ok$/m);
        assert.deepEqual (await client.resolve ('ex-client', '†state.outing'), { go: {
            city: 'Lisbon', sky: 'sunny' } });
    });
});
