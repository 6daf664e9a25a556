'use strict';
//  Every Client method against the real actd, ERROR codes as ActdError,
//  and many requests in flight on one socket.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const { Worker, Client, ActdError, NotFoundError, branch } = require ('..');
const { Actd, until, gate, held, release, collect, freePort } = require ('./actd');

describe ('Client', () => {
    let actd, client, worker;
    const hold = { gate: gate () };     //  "held" waits for hold.gate

    before (async () => {
        actd = await new Actd ().start ();
        client = actd.client ();
        worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, capacity: 16,
                               name: 'client-test-worker' });
        worker.activity ('upper', async ({ text }) => text.toUpperCase ());
        worker.activity ('echo', async (params) => params);
        worker.activity ('weather', async ({ city }) => city.length % 2 === 0
            ? branch (0, { city, sky: 'sunny' }) : branch (1, { city, sky: 'rainy' }));
        worker.activity ('held', held (hold));
        worker.run ();
        await until (async () => (await client.stats ()).workers.length === 1, 'the worker');
    });

    after (async () => {
        await worker.stop ();
        client.close ();
        await actd.finish ();
    });

    async function rejects (promise, code, Type = ActdError) {
        await assert.rejects (promise, (error) => {
            assert.ok (error instanceof Type, 'not a ' + Type.name + ': ' + error);
            assert.equal (error.code, code, error.message);
            assert.equal (typeof error.message, 'string');
            assert.ok (error.message.length > 0, 'an ERROR message');
            return true;
        });
    }

    it ('ping () resolves with the round trip in ms', async () => {
        const ms = await client.ping ();
        assert.equal (typeof ms, 'number');
        assert.ok (ms >= 0);
    });

    it ('call () resolves with the DONE outcome of a call with an output path', async () => {
        const outcome = await client.call ('c-call', { _tool: 'upper', _outputPath: '†s.x', text: 'a' });
        assert.deepEqual (Object.keys (outcome).sort (),
                          ['attempts', 'branch', 'call_id', 'result', 'seqs', 'status', 'written']);
        assert.equal (outcome.status, 'ok');
        assert.equal (outcome.branch, 0);
        assert.equal (outcome.result, 'A');
        assert.deepEqual (outcome.written, ['†s.x']);
        assert.deepEqual (outcome.seqs, [1]);
        assert.match (outcome.call_id, /^[0-9]+$/);
    });

    it ('call () resolves with the call id without waiting, or for fire-and-forget', async () => {
        const id = await client.call ('c-call', { _tool: 'upper', _outputPath: '†s.y', text: 'b' },
                                      { wait: false });
        assert.match (id, /^[0-9]+$/);
        const fire = await client.call ('c-call', { _tool: 'upper', text: 'c' });
        assert.match (fire, /^[0-9]+$/);
        const ended = await until (async () => {
            const status = await client.status (id);
            return status.outcome && status;
        }, 'call ' + id + ' to end');
        assert.equal (ended.outcome.result, 'B');
    });

    it ('a second call with the same _id gets the first call\'s id and outcome', async () => {
        const call = { _tool: 'upper', _outputPath: '†s.once', _id: 'k1', text: 'once' };
        const first = await client.call ('c-id', call);
        const second = await client.call ('c-id', call);
        assert.deepEqual (second, first);
    });

    it ('submit () resolves at ACCEPTED with the call id and a promise of DONE', async () => {
        const entered = hold.entered;
        const { callId, done } = await client.submit ('c-submit', { _tool: 'held',
            _outputPath: '†s.x' });
        assert.match (callId, /^[0-9]+$/);
        const running = await until (async () => {
            const status = await client.status (callId);
            return status.state === 'running' && status;
        }, 'the call to run');
        assert.deepEqual (running, { call_id: callId, context: 'c-submit', state: 'running',
                                     attempts: 1, tool: 'held', output_path: '†s.x' });
        await release (hold, entered);
        const outcome = await done;
        assert.equal (outcome.call_id, callId);
        assert.equal (outcome.result, 'released');
        const fire = await client.submit ('c-submit', { _tool: 'upper', text: 'x' });
        assert.equal (fire.done, null);
    });

    it ('plan () resolves with each call\'s outcome, or id for fire-and-forget, in order', async () => {
        const results = await client.plan ('c-plan', [
            { _tool: 'weather', _outputPath: '†w.sunny || †w.rainy', city: 'Oslo' },
            { _tool: 'echo', _outputPath: '†s.outing', go: '†w.sunny.city' },
            { _tool: 'upper', text: 'fire' }
        ]);
        assert.equal (results.length, 3);
        assert.equal (results [0].branch, 0);
        assert.deepEqual (results [0].written, ['†w.sunny']);
        assert.equal (results [1].status, 'ok');
        assert.deepEqual (results [1].result, { go: 'Oslo' });
        assert.match (results [2], /^[0-9]+$/);
        const ids = await client.plan ('c-plan', [
            { _tool: 'upper', _outputPath: '†s.a', text: 'a' },
            { _tool: 'upper', _outputPath: '†s.b', text: 'b' }
        ], { wait: false });
        assert.equal (ids.length, 2);
        assert.ok (ids.every ((id) => /^[0-9]+$/.test (id)));
        const planned = await client.submitPlan ('c-plan', [
            { _tool: 'upper', _outputPath: '†s.c', text: 'c' },
            { _tool: 'upper', text: 'd' }
        ]);
        assert.equal (planned.callIds.length, 2);
        assert.equal (planned.done [1], null);
        assert.equal ((await planned.done [0]).result, 'C');
    });

    it ('a skipped dependent call ends skipped with unresolved_reference', async () => {
        const [weather, echo] = await client.plan ('c-skip', [
            { _tool: 'weather', _outputPath: '†w.sunny || †w.rainy', city: 'Paris' },
            { _tool: 'echo', _outputPath: '†s.outing', go: '†w.sunny' }
        ]);
        assert.equal (weather.branch, 1);
        assert.equal (echo.status, 'skipped');
        assert.equal (echo.error.code, 'unresolved_reference');
        assert.equal (echo.attempts, 0);
    });

    it ('append () resolves with _seq; resolve () reads values, in an instance too', async () => {
        assert.equal (await client.append ('c-data', { type: 'data', kind: 'user',
                                                       data: { name: 'Alex' } }), 1);
        assert.equal (await client.append ('c-data', { type: 'data', kind: 'user',
                                                       data: { age: 30 } }), 2);
        assert.equal (await client.append ('c-data', { type: 'data', kind: 'user',
            _instance: 'bob', data: { name: 'Bob' } }), 3);
        assert.equal (await client.append ('c-data', { type: 'text', text: 'hi' }), 4);
        assert.deepEqual (await client.resolve ('c-data', '†user'), { name: 'Alex', age: 30 });
        assert.equal (await client.resolve ('c-data', '†user.name'), 'Alex');
        assert.equal (await client.resolve ('c-data', '†user.name', 'bob'), 'Bob');
        assert.equal (await client.resolve ('c-data', '†user.nick || †user.name'), 'Alex');
    });

    it ('resolve () rejects with NotFoundError for an absent value', async () => {
        await rejects (client.resolve ('c-data', '†user.email'), 'not_found', NotFoundError);
    });

    it ('view () gives the merged view as JSON or text', async () => {
        await client.append ('c-view', { type: 'data', kind: 'user', data: { name: 'Alex' },
                                         description: 'The user' });
        assert.deepEqual (await client.view ('c-view'), [
            { type: 'data', kind: 'user', data: { name: 'Alex' }, description: 'The user' }]);
        assert.deepEqual (await client.view ('c-view', 'json'), await client.view ('c-view'));
        const text = await client.view ('c-view', 'text');
        assert.equal (typeof text, 'string');
        assert.ok (text.startsWith ('## Data: ¶user\n{\n'), text);
        assert.match (text, /"name": "Alex"/);
        assert.match (text, /The user/);
    });

    it ('history () walks the stored messages, from fromSeq, at most limit, by pages', async () => {
        for (let n = 1; n <= 5; n++)
            await client.append ('c-history', { type: 'text', text: 'm' + n });
        const all = await collect (client.history ('c-history'));
        assert.deepEqual (all.map ((m) => [m._seq, m.text]),
                          [[1, 'm1'], [2, 'm2'], [3, 'm3'], [4, 'm4'], [5, 'm5']]);
        assert.match (all [0]._date, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        assert.deepEqual (await collect (client.history ('c-history', { pageSize: 2 })), all);
        const seqs = async (options) =>
            (await collect (client.history ('c-history', options))).map ((m) => m._seq);
        assert.deepEqual (await seqs ({ fromSeq: 4 }), [4, 5]);
        assert.deepEqual (await seqs ({ fromSeq: 2, limit: 2 }), [2, 3]);
        assert.deepEqual (await seqs ({ fromSeq: 2, limit: 3, pageSize: 2 }), [2, 3, 4]);
        assert.deepEqual (await seqs ({ limit: 0 }), []);
        assert.deepEqual (await seqs ({ fromSeq: 6 }), []);
        //  The page form history () had before it iterated is refused at once
        assert.throws (() => client.history ('c-history', 2, 2), TypeError);
    });

    it ('history () and contexts () refuse a page size outside 1..1000, or a bad limit, at once', async () => {
        for (const size of [0, -1, 1001, 5000, 1.5, '10', NaN])
            assert.throws (() => client.history ('c-history', { pageSize: size }),
                           /pageSize is an integer from 1 to 1000/, String (size));
        for (const limit of [-1, 1.5, '2', NaN])
            assert.throws (() => client.history ('c-history', { limit }), /limit is an integer >= 0/,
                           String (limit));
        for (const limit of [0, -1, 1001, 5000, 2.5, '10', NaN])
            assert.throws (() => client.contexts ({ limit }),
                           /limit is an integer from 1 to 1000/, String (limit));
        assert.throws (() => client.history ('c-history', { pageSize: 0 }), TypeError);
        assert.throws (() => client.contexts ({ limit: 0 }), TypeError);
        //  The bounds themselves are fine
        for (let n = 1; n <= 3; n++)
            await client.append ('c-pages', { type: 'text', text: 'p' + n });
        assert.equal ((await collect (client.history ('c-pages', { pageSize: 1000 }))).length, 3);
        assert.equal ((await collect (client.history ('c-pages', { pageSize: 1, limit: 2 }))).length, 2);
        for (const limit of [1, 1000])
            assert.deepEqual ((await collect (client.contexts ({ prefix: 'c-pages', limit })))
                              .map ((entry) => entry.context), ['c-pages']);
    });

    it ('iterateHistory () still walks the messages, with one DeprecationWarning', async () => {
        const warnings = [];
        const listener = (warning) => warnings.push (warning);
        process.on ('warning', listener);
        try {
            for (let round = 0; round < 2; round++) {
                const walked = [];
                for await (const message of client.iterateHistory ('c-history', { fromSeq: 3 }))
                    walked.push (message._seq);
                assert.deepEqual (walked, [3, 4, 5]);
            }
            //  Warnings are emitted on the next tick
            await new Promise ((resolve) => setImmediate (resolve));
        }
        finally {
            process.off ('warning', listener);
        }
        assert.deepEqual (warnings.map ((w) => [w.name, w.code]),
                          [['DeprecationWarning', 'ACTD_ITERATE_HISTORY']]);
    });

    it ('status () of a waiting call names what it waits on', async () => {
        const entered = hold.entered;
        const [producer, consumer] = await client.plan ('c-waiting', [
            { _tool: 'held', _outputPath: '†s.x' },
            { _tool: 'echo', _outputPath: '†s.y', x: '†s.x' }
        ], { wait: false });
        const status = await until (async () => {
            const value = await client.status (consumer);
            return value.state === 'waiting' && value;
        }, 'the consumer to wait');
        assert.deepEqual (status, { call_id: consumer, context: 'c-waiting', state: 'waiting',
                                    attempts: 0, waiting_on: ['†s.x'], tool: 'echo',
                                    output_path: '†s.y', references: ['†s.x'] });
        await release (hold, entered);
        const ended = await until (async () => {
            const value = await client.status (consumer);
            return value.outcome && value;
        }, 'the consumer to end');
        assert.equal (ended.state, 'ok');
        assert.deepEqual (ended.outcome.result, { x: 'released' });
        assert.equal ((await client.status (producer)).state, 'ok');
    });

    it ('cancel () ends a running call cancelled, and is OK for an ended one', async () => {
        const { callId, done } = await client.submit ('c-cancel', { _tool: 'held',
            _outputPath: '†s.x' });
        await until (async () => (await client.status (callId)).state === 'running', 'running');
        assert.equal (await client.cancel (callId), undefined);
        const outcome = await done;
        assert.equal (outcome.status, 'cancelled');
        assert.equal (outcome.error.code, 'cancelled');
        assert.equal (await client.cancel (callId), undefined);
        assert.equal ((await client.status (callId)).state, 'cancelled');
    });

    it ('stats () reports counts, activities and workers', async () => {
        const stats = await client.stats ();
        //  PROTOCOL.md section 4, plus actd's own "store" object (commit
        //  figures), "clients" (reply bytes held, clients cut off) and
        //  "unserved" (activities nobody serves with calls, their bound)
        //  and "served" (activities workers serve, the bounds on them)
        assert.deepEqual (Object.keys (stats).sort (),
                          ['activities', 'calls', 'clients', 'contexts', 'deleted', 'messages',
                           'served', 'store', 'unserved', 'uptime_ms', 'workers']);
        assert.deepEqual (Object.keys (stats.store).sort (), ['backend', 'batch', 'commit_ms',
                                                              'commits', 'early_tasks', 'held',
                                                              'held_expired', 'sync', 'writes']);
        assert.equal (stats.store.early_tasks, true);
        assert.deepEqual (Object.keys (stats.calls).sort (), ['accepted', 'cancelled', 'error',
            'ok', 'queued', 'running', 'skipped', 'timeout', 'waiting']);
        assert.ok (stats.calls.ok > 0);
        assert.ok (stats.calls.cancelled >= 1);
        assert.deepEqual (stats.activities.upper.workers, 1);
        assert.deepEqual (stats.workers, [{ name: 'client-test-worker',
            activities: ['upper', 'echo', 'weather', 'held'], capacity: 16, running: 0,
            lang: 'node' }]);
    });

    it ('request () sends any command and resolves with the reply', async () => {
        const reply = await client.request ('PING');
        assert.equal (reply.verb, 'PONG');
        assert.deepEqual (reply.args, []);
    });

    it ('rejects ERROR replies with an ActdError carrying the code', async () => {
        await rejects (client.call ('c-err', { text: 'no tool' }), 'bad_call');
        await rejects (client.call ('c-err', ['not', 'an', 'object']), 'bad_call');
        await rejects (client.call ('bad context!', { _tool: 'upper' }), 'bad_context');
        await rejects (client.call ('c-err', { _tool: 'upper', text: '†a..b' }), 'bad_reference');
        await rejects (client.call ('c-err', { _tool: 'upper', _outputPath: '†s.x',
                                               text: '†nothing.here' }), 'unresolved_reference');
        await rejects (client.call ('c-err', { _tool: 'upper', _outputPath: '†s.x',
                                               _outputMethod: 'replace' }), 'bad_method');
        await rejects (client.plan ('c-err', []), 'bad_call');
        await client.append ('c-err', { type: 'data', kind: 'obj', data: { a: 1 } });
        await rejects (client.append ('c-err', { type: 'data', kind: 'obj', data: 2,
                                                 _outputMethod: 'push' }), 'type_mismatch');
        await rejects (client.append ('c-err', { type: 'data', kind: 'bad kind', data: 1 }),
                       'bad_argument');
        await rejects (client.append ('c-err', { kind: 'x', data: 1 }), 'bad_argument');
        await rejects (client.view ('c-err', 'xml'), 'bad_argument');
        await rejects (client.request ('HISTORY', ['c-err', '1', '1001']), 'bad_argument');
        await rejects (collect (client.history ('c-err', { fromSeq: 'one' })), 'bad_argument');
        await rejects (client.status ('999999'), 'not_found', NotFoundError);
        await rejects (client.cancel ('999999'), 'not_found', NotFoundError);
        await rejects (client.view ('c-no-such-context'), 'not_found', NotFoundError);
        await rejects (collect (client.history ('c-no-such-context')), 'not_found', NotFoundError);
        await rejects (client.request ('NOPE'), 'unknown_command');
        await rejects (client.request ('PING', ['extra']), 'bad_frame');
        await rejects (client.request ('CALL', ['c-err', '{"_tool":']), 'bad_json');
    });

    it ('carries 500 calls in flight at once on one socket', async () => {
        const count = 500;
        const calls = [];
        for (let n = 0; n < count; n++)
            calls.push (client.call ('c-many', { _tool: 'upper', _outputPath: `†s.k${n}`,
                                                 text: 'text ' + n }));
        const outcomes = await Promise.all (calls);
        for (const [n, outcome] of outcomes.entries ()) {
            assert.equal (outcome.status, 'ok');
            assert.equal (outcome.result, 'TEXT ' + n);
            assert.deepEqual (outcome.written, [`†s.k${n}`]);
        }
        assert.equal (new Set (outcomes.map ((o) => o.call_id)).size, count);
        assert.equal (await client.resolve ('c-many', '†s.k499'), 'TEXT 499');
        const history = [];
        for await (const message of client.history ('c-many', { pageSize: 100 }))
            history.push (message._seq);
        assert.equal (history.length, count);
    });

    it ('close () rejects what still waits with code "closed", and later requests too', async () => {
        const entered = hold.entered;
        const other = actd.client ();
        const { done } = await other.submit ('c-close', { _tool: 'held', _outputPath: '†s.x' });
        other.close ();
        await rejects (done, 'closed');
        await rejects (other.ping (), 'closed');
        assert.equal (other.closed, true);
        await release (hold, entered);
    });

    it ('a request with no reply rejects with request_timeout', async () => {
        const nowhere = new Client ({ endpoint: 'tcp://127.0.0.1:1', timeoutMs: 200 });
        await rejects (nowhere.ping (), 'request_timeout');
        nowhere.close ();
    });
});

describe ('an IPv6 loopback endpoint', () => {
    it ('a Worker and a Client reach actd on tcp://[::1] (libzmq needs IPv6 on)', async () => {
        const actd = new Actd ();
        actd.clientEndpoint = 'tcp://[::1]:' + await freePort ();
        actd.workerEndpoint = 'tcp://[::1]:' + await freePort ();
        await actd.start ();
        const client = actd.client ();
        const worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, name: 'v6' });
        worker.activity ('upper', async ({ text }) => text.toUpperCase ());
        const running = worker.run ();
        try {
            const outcome = await client.call ('v6', { _tool: 'upper', text: 'six', _outputPath: '†v6' });
            assert.equal (outcome.result, 'SIX');
        }
        finally {
            client.close ();
            await worker.stop ();
            await running;
            await actd.finish ();
        }
    });
});
