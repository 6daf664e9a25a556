'use strict';
//  Worker and Client across broker restarts on the same endpoints and store.

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const { Worker } = require ('..');
const { Actd, until, gate, collect, freePort } = require ('./actd');

describe ('Broker restarts', () => {
    let actd, worker, client;

    afterEach (async () => {
        if (worker)
            await worker.stop ();
        if (client)
            client.close ();
        await actd.finish ();
    });

    async function workerListed () {
        const probe = actd.client ({ timeoutMs: 2000 });
        try {
            await until (async () => {
                try {
                    return (await probe.stats ()).workers.some ((w) => w.name === worker.name);
                }
                catch (error) {
                    return false;       //  Not up yet
                }
            }, 'the worker in STATS');
        }
        finally {
            probe.close ();
        }
    }

    it ('a worker sends READY again after the broker restarts, and serves calls', async () => {
        actd = await new Actd ().start ();
        worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, liveness: 3,
                               name: 'restart-worker' });
        worker.activity ('upper', async ({ text }) => text.toUpperCase ());
        worker.run ();
        client = actd.client ();
        const before = await client.call ('r-restart', { _tool: 'upper', _outputPath: '†s.a',
                                                         text: 'one' });
        assert.equal (before.result, 'ONE');
        assert.equal (worker.connections, 1);

        await actd.stopClean ();
        await actd.start ();
        await workerListed ();
        assert.ok (worker.connections >= 2, 'connections ' + worker.connections);
        const stats = await client.stats ();
        assert.deepEqual (stats.workers.map ((w) => [w.name, w.lang]), [['restart-worker', 'node']]);
        const after = await client.call ('r-restart', { _tool: 'upper', _outputPath: '†s.b',
                                                        text: 'two' });
        assert.equal (after.status, 'ok');
        assert.equal (after.result, 'TWO');
        assert.equal (await client.resolve ('r-restart', '†s.a'), 'ONE');
    });

    it ('a DONE awaited when the broker crashed resolves from a watch once the call is recovered and ends', async () => {
        actd = await new Actd ().start ();
        const started = gate ();
        const release = gate ();
        const attempts = [];
        worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, liveness: 3,
                               name: 'crash-worker' });
        worker.activity ('slow', async ({ text }, task) => {
            attempts.push (task.attempt);
            started.open ();
            await release;
            return text + ' after ' + task.attempt;
        });
        worker.run ();
        client = actd.client ({ statusPollMs: 200 });
        //  ACCEPTED has come (a crash could lose an ACCEPTED still in the
        //  broker's send queue), and the task runs
        const { callId, done } = await client.submit ('r-crash', { _tool: 'slow',
            _outputPath: '†s.x', text: 'done' });
        await started;
        //  A crash after ACCEPTED: the restarted broker runs the call again,
        //  but its DONE cannot reach this client's old connection
        await actd.kill ();
        release.open ();
        await actd.start ();
        const outcome = await done;
        assert.equal (outcome.call_id, callId);
        assert.equal (outcome.status, 'ok');
        assert.equal (outcome.result, 'done after ' + attempts [attempts.length - 1]);
        assert.ok (attempts.length >= 2, 'attempts ' + attempts);
        assert.equal (await client.resolve ('r-crash', '†s.x'), outcome.result);
    });

    it ('a request that timed out while actd was down is not carried out once actd starts', async () => {
        actd = new Actd ();
        actd.clientEndpoint = 'tcp://127.0.0.1:' + await freePort ();
        actd.workerEndpoint = 'tcp://127.0.0.1:' + await freePort ();
        client = actd.client ({ timeoutMs: 300 });
        //  Nothing listens yet: the APPEND waits in the socket's queue
        await assert.rejects (client.append ('r-late', { type: 'text', text: 'timed out' }),
                              (error) => error.code === 'request_timeout'
                                      && /may or may not have been carried out/.test (error.message));
        await actd.start ();
        //  The client dropped the queued APPEND with its socket; the next
        //  request goes on a new one
        assert.equal (await client.append ('r-late', { type: 'text', text: 'sent again' }), 1);
        assert.deepEqual ((await collect (client.history ('r-late'))).map ((m) => m.text),
                          ['sent again']);
    });
});
