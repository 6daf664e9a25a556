'use strict';
//  Worker against the real actd, called by the Node Client: results,
//  branches, failures, PROGRESS, cancellation, task meta, capacity.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const { Worker, branch, ActivityError } = require ('..');
const { Actd, until, sleep, gate } = require ('./actd');

describe ('Worker', () => {
    let actd, client;
    const workers = [];

    before (async () => {
        actd = await new Actd ().start ();
        client = actd.client ();
    });

    after (async () => {
        for (const worker of workers)
            await worker.stop ();
        client.close ();
        await actd.finish ();
    });

    //  A worker serving handlers, registered with the broker
    async function serve (handlers, options = {}) {
        const name = options.name || 'w' + workers.length;
        const worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200,
                                     liveness: 3, ...options, name });
        for (const [activity, handler] of Object.entries (handlers))
            worker.activity (activity, handler);
        workers.push (worker);
        worker.run ();
        await until (async () => (await client.stats ()).workers.some ((w) => w.name === name),
                     'worker ' + name + ' in STATS');
        return worker;
    }

    it ('sends READY with its activities, capacity, name and lang "node"', async () => {
        await serve ({ ready_a: () => 1, ready_b: () => 2 }, { name: 'ready-worker', capacity: 3 });
        const stats = await client.stats ();
        const entry = stats.workers.find ((w) => w.name === 'ready-worker');
        assert.deepEqual (entry, { name: 'ready-worker', activities: ['ready_a', 'ready_b'],
                                   capacity: 3, running: 0, lang: 'node' });
        assert.equal (stats.activities.ready_a.workers, 1);
    });

    it ('answers RESULT with the handler\'s value, written at the output path', async () => {
        await serve ({ upper: async ({ text }) => text.toUpperCase () });
        const outcome = await client.call ('w-result', { _tool: 'upper',
            _outputPath: '†state.shout', text: 'hello' });
        assert.equal (outcome.status, 'ok');
        assert.equal (outcome.result, 'HELLO');
        assert.deepEqual (outcome.written, ['†state.shout']);
        assert.equal (outcome.attempts, 1);
        assert.equal (await client.resolve ('w-result', '†state.shout'), 'HELLO');
    });

    it ('answers null for a handler that returns nothing', async () => {
        await serve ({ nothing: async () => {} });
        const outcome = await client.call ('w-null', { _tool: 'nothing', _outputPath: '†state.x' });
        assert.equal (outcome.status, 'ok');
        assert.equal (outcome.result, null);
        assert.equal (await client.resolve ('w-null', '†state.x'), null);
    });

    it ('fails a result JSON cannot carry (a BigInt, a cycle) once, not retried', async () => {
        //  Each retry ran the handler again to return the same value
        const runs = [];
        await serve ({ unjson: async ({ kind }, task) => {
            runs.push (kind + task.attempt);
            if (kind === 'bigint')
                return { n: 10n };
            const cycle = {};
            cycle.self = cycle;
            return branch (0, cycle);
        } });
        for (const kind of ['bigint', 'cycle']) {
            const outcome = await client.call ('w-unjson', { _tool: 'unjson', kind,
                _outputPath: '†state.x', _retry: { max_attempts: 3, initial_ms: 10 } });
            assert.equal (outcome.status, 'error');
            assert.equal (outcome.error.code, 'activity_failed');
            assert.match (outcome.error.message, /^the result is not JSON: /);
            assert.equal (outcome.attempts, 1);
        }
        assert.deepEqual (runs, ['bigint1', 'cycle1']);
    });

    it ('sends a failure over a MiB as its code and retryable, its message cut', async () => {
        //  actd reads a FAIL over max_message_bytes (1 MiB by default) as
        //  {}: the call was retried, its code and message lost
        let runs = 0;
        await serve ({ hugefail: async () => {
            runs++;
            throw new ActivityError ('é'.repeat (1 << 20), { code: 'w_huge', retryable: false,
                                                            context: 'x'.repeat (1 << 20) });
        } });
        const outcome = await client.call ('w-hugefail', { _tool: 'hugefail', _outputPath: '†state.x',
            _retry: { max_attempts: 3, initial_ms: 10 } });
        assert.equal (outcome.status, 'error');
        assert.equal (outcome.error.code, 'w_huge');
        assert.equal (outcome.attempts, 1);
        assert.equal (runs, 1);
        assert.match (outcome.error.message, /^éé.*cut/s);
        assert.ok (Buffer.byteLength (outcome.error.message) < 70000);
    });

    it ('sends each lone surrogate of a failure as ?, its code and message kept', async () => {
        //  JSON.stringify writes a lone surrogate as \udxxx, which actd
        //  refuses: it read the FAIL as {}, retried as activity_failed, code
        //  and message lost. In keys and details too; a '\' before "ud800"
        //  (path) is no surrogate and stays
        const lone = 'caf\uD800.txt';
        let runs = 0;
        await serve ({ badname: async ({ kind }) => {
            runs++;
            if (kind === 'thrown')
                throw new Error ('cannot read ' + lone.slice (0, 4));
            if (kind === 'huge')
                throw new ActivityError ('\uDC00'.repeat (1 << 20) + ' end',
                                         { code: 'w_\uDC00', retryable: false });
            throw new ActivityError ('cannot read ' + lone, { code: 'w_' + lone, retryable: false,
                file: lone, tried: [lone, { [lone]: 'x\uDFFF', ok: '\uD83D\uDE00' }],
                path: 'C:\\ud800' });
        } });
        const call = (kind) => client.call ('w-surrogate', { _tool: 'badname', kind,
            _outputPath: '†state.' + kind, _retry: { max_attempts: 3, initial_ms: 10 } });
        const failure = await call ('failure');
        assert.deepEqual ([failure.status, failure.attempts], ['error', 1]);
        assert.deepEqual (failure.error, { code: 'w_caf?.txt', message: 'cannot read caf?.txt',
            file: 'caf?.txt', tried: ['caf?.txt', { 'caf?.txt': 'x?', ok: '\u{1F600}' }],
            path: 'C:\\ud800' });
        const thrown = await call ('thrown');
        assert.deepEqual ([thrown.attempts, thrown.error], [3,
            { code: 'activity_failed', message: 'cannot read caf?' }]);
        const huge = await call ('huge');
        assert.deepEqual ([huge.attempts, huge.error.code], [1, 'w_?']);
        assert.match (huge.error.message, /^\?\?\?.*cut/s);
        assert.equal (runs, 5);
    });

    it ('fails a result holding a lone surrogate once, naming it', async () => {
        //  The result is data, not sent with '?': the worker fails it as the
        //  Python worker does, where actd refused the RESULT's \ud800 with
        //  "worker NAME sent a bad result: invalid Unicode escape"
        let runs = 0;
        await serve ({ badresult: async ({ kind }) => {
            runs++;
            return kind === 'branch'? branch (0, { '\\ud800': 'caf\uDFFF' })
                                    : { name: 'caf\uD800' };
        } });
        for (const [kind, lone] of [['value', '\\ud800'], ['branch', '\\udfff']]) {
            const outcome = await client.call ('w-surrogate-result', { _tool: 'badresult',
                kind, _outputPath: '†state.x', _retry: { max_attempts: 3, initial_ms: 10 } });
            assert.deepEqual ([outcome.status, outcome.attempts, outcome.error],
                              ['error', 1, { code: 'activity_failed', message:
                               `the result is not JSON: it holds a lone surrogate (${lone}), `
                               + 'which UTF-8 cannot carry' }]);
        }
        assert.equal (runs, 2);
    });

    it ('sends each lone surrogate of progress as ?', async () => {
        //  actd refused the PROGRESS's \ud800 and ignored it: STATUS showed
        //  no progress
        const release = gate ();
        await serve ({ badprogress: async (params, task) => {
            await task.progress ({ file: 'caf\uD800.txt', ['k\uDC00']: 'C:\\ud800' });
            await release;
            return 'finished';
        } });
        const { callId, done } = await client.submit ('w-surrogate-progress', {
            _tool: 'badprogress', _outputPath: '†state.x' });
        await until (async () => (await client.status (callId)).state === 'running',
                     'the call to run');
        const status = await until (async () => {
            const value = await client.status (callId);
            return value.progress && value;
        }, 'progress in STATUS', 3000);
        assert.deepEqual (status.progress, { file: 'caf?.txt', 'k?': 'C:\\ud800' });
        release.open ();
        assert.deepEqual ([(await done).result, (await done).attempts], ['finished', 1]);
    });

    it ('takes the alternative named by branch (n, value)', async () => {
        await serve ({ sky: async ({ city }) => city.length % 2 === 0
            ? branch (0, { city, sky: 'sunny' }) : branch (1, { city, sky: 'rainy' }) });
        const path = '†forecast.sunny || †forecast.rainy';
        const rainy = await client.call ('w-branch', { _tool: 'sky', _outputPath: path, city: 'Paris' });
        assert.equal (rainy.status, 'ok');
        assert.equal (rainy.branch, 1);
        assert.deepEqual (rainy.written, ['†forecast.rainy']);
        assert.deepEqual (rainy.result, { city: 'Paris', sky: 'rainy' });
        const sunny = await client.call ('w-branch', { _tool: 'sky', _outputPath: path, city: 'Oslo' });
        assert.equal (sunny.branch, 0);
        assert.deepEqual (sunny.written, ['†forecast.sunny']);
        assert.deepEqual (await client.resolve ('w-branch', '†forecast'), {
            rainy: { city: 'Paris', sky: 'rainy' }, sunny: { city: 'Oslo', sky: 'sunny' } });
    });

    it ('answers FAIL with the code and details of an ActivityError that is not retryable: one attempt', async () => {
        let runs = 0;
        await serve ({ refuse: async () => {
            runs++;
            throw new ActivityError ('no such city', { code: 'bad_city', retryable: false,
                                                       city: 'Atlantis' });
        } });
        const outcome = await client.call ('w-fail', { _tool: 'refuse', _outputPath: '†state.x',
            _retry: { max_attempts: 3, initial_ms: 10 } });
        assert.equal (outcome.status, 'error');
        //  The error's details are kept beside code and message
        assert.deepEqual (outcome.error, { code: 'bad_city', message: 'no such city',
                                           city: 'Atlantis' });
        assert.equal (outcome.attempts, 1);
        assert.equal (runs, 1);
    });

    it ('retries a retryable failure as a new attempt that can succeed', async () => {
        const attempts = [];
        await serve ({ flaky: async (params, task) => {
            attempts.push (task.attempt);
            if (task.attempt === 1)
                throw new ActivityError ('try again', { code: 'flaky', retryable: true });
            return 'fine';
        } });
        const outcome = await client.call ('w-retry', { _tool: 'flaky', _outputPath: '†state.x',
            _retry: { max_attempts: 3, initial_ms: 10 } });
        assert.equal (outcome.status, 'ok');
        assert.equal (outcome.result, 'fine');
        assert.equal (outcome.attempts, 2);
        assert.deepEqual (attempts, [1, 2]);
    });

    it ('ends error with the last failure when retryable attempts are used up', async () => {
        await serve ({ always: async (params, task) => {
            throw new ActivityError ('still down ' + task.attempt, { code: 'down' });
        } });
        const outcome = await client.call ('w-exhaust', { _tool: 'always', _outputPath: '†state.x',
            _retry: { max_attempts: 2, initial_ms: 10 } });
        assert.equal (outcome.status, 'error');
        assert.deepEqual (outcome.error, { code: 'down', message: 'still down 2' });
        assert.equal (outcome.attempts, 2);
    });

    it ('answers FAIL with code activity_failed for any other thrown value', async () => {
        await serve ({ boom: async ({ how }) => {
            if (how === 'error')
                throw new TypeError ('it broke');
            throw 'a plain string';     // eslint-disable-line no-throw-literal
        } });
        const retry = { max_attempts: 1 };
        const thrown = await client.call ('w-other', { _tool: 'boom', _outputPath: '†state.a',
            _retry: retry, how: 'error' });
        assert.equal (thrown.status, 'error');
        assert.deepEqual (thrown.error, { code: 'activity_failed', message: 'it broke' });
        const string = await client.call ('w-other', { _tool: 'boom', _outputPath: '†state.b',
            _retry: retry, how: 'string' });
        assert.deepEqual (string.error, { code: 'activity_failed', message: 'a plain string' });
    });

    it ('writes a failure to the last alternative of the output path', async () => {
        await serve ({ nope: async () => {
            throw new ActivityError ('closed today', { code: 'closed', retryable: false });
        } });
        const outcome = await client.call ('w-fail-branch', { _tool: 'nope',
            _outputPath: '†r.ok || †r.failed' });
        assert.equal (outcome.status, 'error');
        assert.equal (outcome.branch, 1);
        assert.deepEqual (outcome.written, ['†r.failed']);
        assert.deepEqual (await client.resolve ('w-fail-branch', '†r.failed.error'),
                          { code: 'closed', message: 'closed today' });
    });

    it ('gives the handler the task meta', async () => {
        const seen = [];
        await serve ({ meta: async (params, task) => {
            seen.push ({ params, task });
            return 'ok';
        } });
        const outcome = await client.call ('w-meta', { _tool: 'meta', _outputPath: '†a.x || †a.y',
            _instance: 'alice', _timeout: 60000, n: 1,
            _trace: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
        const { params, task } = seen [0];
        assert.deepEqual (params, { n: 1 });
        assert.equal (task.activity, 'meta');
        assert.equal (task.context, 'w-meta');
        assert.equal (task.callId, outcome.call_id);
        assert.equal (task.id, outcome.call_id + '.1');
        assert.equal (task.attempt, 1);
        assert.equal (task.instance, 'alice');
        assert.equal (task.branches, 2);
        assert.equal (task.discard, false);
        assert.equal (task.trace, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
        assert.equal (task.meta.trace, task.trace);
        assert.ok (task.deadlineMs > 0 && task.deadlineMs <= 60000, 'deadlineMs ' + task.deadlineMs);
        assert.equal (task.meta.call_id, outcome.call_id);
        assert.equal (task.cancelled, false);

        //  A fire-and-forget call: discard, no instance, no branches
        const callId = await client.call ('w-meta', { _tool: 'meta', n: 2 });
        await until (() => seen.length === 2, 'the fire-and-forget task');
        const { task: second } = seen [1];
        assert.equal (second.callId, callId);
        assert.equal (second.discard, true);
        assert.equal (second.instance, undefined);
        assert.equal (second.trace, undefined);
        assert.equal (second.branches, 0);
        const status = await until (async () => {
            const value = await client.status (callId);
            return value.state === 'ok' && value;
        }, 'the fire-and-forget call to end');
        assert.equal (status.attempts, 1);
    });

    it ('sends PROGRESS, which STATUS shows while the call runs', async () => {
        const release = gate ();
        await serve ({ long: async (params, task) => {
            await task.progress ({ done: 1, of: 2 });
            await release;
            return 'finished';
        } });
        const { callId, done } = await client.submit ('w-progress', { _tool: 'long',
            _outputPath: '†state.x' });
        const status = await until (async () => {
            const value = await client.status (callId);
            return value.progress && value;
        }, 'progress in STATUS');
        assert.equal (status.state, 'running');
        assert.deepEqual (status.progress, { done: 1, of: 2 });
        release.open ();
        assert.equal ((await done).result, 'finished');
    });

    it ('aborts task.signal when the client cancels the call', async () => {
        const seen = [];
        let started = 0;
        await serve ({ wait: async (params, task) => {
            started++;
            await new Promise ((resolve) => task.signal.addEventListener ('abort', resolve));
            seen.push ({ cancelled: task.cancelled, reason: task.signal.reason });
            throw task.signal.reason;
        } });
        const { callId, done } = await client.submit ('w-cancel', { _tool: 'wait',
            _outputPath: '†state.x' });
        await until (() => started === 1, 'the handler to start');
        await client.cancel (callId);
        const outcome = await done;
        assert.equal (outcome.status, 'cancelled');
        assert.equal (outcome.error.code, 'cancelled');
        await until (() => seen.length === 1, 'the handler to see the cancel');
        assert.equal (seen [0].cancelled, true);
        assert.ok (seen [0].reason instanceof ActivityError);
        assert.equal (seen [0].reason.code, 'cancelled');
        //  Its answer freed the slot: the worker (capacity 1) takes the next task
        const next = await client.call ('w-cancel', { _tool: 'wait', _outputPath: '†state.y' },
                                        { wait: false });
        await until (() => started === 2, 'the next task after the cancelled one');
        await client.cancel (next);
        await until (() => seen.length === 2, 'the second handler to see its cancel');
    });

    it ('aborts task.signal when the attempt\'s _timeout passes', async () => {
        let aborted = null;
        await serve ({ slow: async (params, task) => {
            await new Promise ((resolve) => task.signal.addEventListener ('abort', resolve));
            aborted = task.signal.reason;
            return 'too late';
        } });
        const outcome = await client.call ('w-timeout', { _tool: 'slow', _outputPath: '†state.x',
            _timeout: 300, _retry: { max_attempts: 1 } });
        assert.equal (outcome.status, 'timeout');
        assert.equal (outcome.error.code, 'timeout');
        await until (() => aborted, 'the handler to see CANCEL');
        assert.equal (aborted.code, 'cancelled');
    });

    it ('runs capacity tasks at once while heartbeats keep the worker alive', async () => {
        const capacity = 4;
        let running = 0, most = 0;
        const release = gate ();
        const worker = await serve ({ hold: async ({ n }, task) => {
            running++;
            most = Math.max (most, running);
            await release;
            running--;
            return { n, attempt: task.attempt };
        } }, { capacity });
        let disconnects = 0;
        worker.on ('disconnect', () => disconnects++);
        const calls = [];
        for (let n = 0; n < 6; n++)
            calls.push (client.call ('w-capacity', { _tool: 'hold', _outputPath: `†r.n${n}`, n }));
        //  All capacity tasks run at once, and the broker sends no more
        await until (() => running === capacity, capacity + ' tasks running at once');
        const stats = await client.stats ();
        assert.equal (stats.workers.find ((w) => w.name === worker.name).running, capacity);
        assert.equal (stats.activities.hold.queued, 2);
        //  Hold them for five times the broker's dead-peer time (liveness x
        //  heartbeat_ms = 600 ms): only heartbeats keep the worker alive
        await sleep (5 * 600);
        release.open ();
        const outcomes = await Promise.all (calls);
        for (const [n, outcome] of outcomes.entries ()) {
            assert.equal (outcome.status, 'ok');
            assert.deepEqual (outcome.result, { n, attempt: 1 });
            assert.equal (outcome.attempts, 1);
        }
        assert.equal (most, capacity);
        assert.equal (disconnects, 0);
        assert.equal (worker.connections, 1);
        assert.doesNotMatch (actd.log (), new RegExp (`worker ${worker.name} lost`));
    });
});
