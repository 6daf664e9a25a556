'use strict';
//  The worker's side of PROTOCOL.md section 2 frame by frame, against a
//  scripted broker (a ROUTER socket in the test): READY, RESULT with a
//  branch, FAIL, PROGRESS, heartbeats during long work, a silent broker and
//  DISCONNECT (both: a new socket and READY again), and a graceful stop:
//  running tasks answer before DISCONNECT, within the grace.

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const zmq = require ('zeromq');
const { setTimeout: sleep } = require ('node:timers/promises');
const { Worker, branch, ActivityError } = require ('..');
const { until, gate, freePort } = require ('./actd');

class ScriptedBroker {
    //  heartbeat: send HEARTBEAT every 100 ms to every peer that sent READY
    async start (heartbeat = true) {
        this.endpoint = 'tcp://127.0.0.1:' + await freePort ();
        this.router = new zmq.Router ({ linger: 0 });
        await this.router.bind (this.endpoint);
        this.messages = [];             //  { peer, identity, frames, taken }
        this._sending = Promise.resolve ();
        (async () => {
            for await (const [identity, ...frames] of this.router)
                this.messages.push ({ peer: identity.toString ('hex'), identity,
                                      frames: frames.map (String), taken: false,
                                      at: Date.now () });
        }) ().catch (() => {});
        if (heartbeat)
            this._beat = setInterval (() => {
                for (const message of this.messages)
                    if (message.frames [1] === 'READY')
                        this.send (message.identity, ['ACTW01', 'HEARTBEAT']).catch (() => {});
            }, 100);
        return this;
    }

    //  The first message not taken yet that matches; waits for it
    async take (match, what) {
        return until (() => {
            const found = this.messages.find ((message) => !message.taken && match (message));
            if (found)
                found.taken = true;
            return found;
        }, what, 20000);
    }

    command (name, peer) {
        return (message) => message.frames [1] === name && (!peer || message.peer === peer);
    }

    send (identity, frames) {
        this._sending = this._sending.then (() => this.router.send ([identity, ...frames]));
        return this._sending;
    }

    close () {
        clearInterval (this._beat);
        this.router.close ();
    }
}

describe ('Worker on the wire', () => {
    let broker, worker, run;

    afterEach (async () => {
        if (worker)
            await worker.stop ();
        worker = null;
        broker.close ();
    });

    async function setup (handlers, options = {}, heartbeat = true) {
        broker = await new ScriptedBroker ().start (heartbeat);
        worker = new Worker ({ endpoint: broker.endpoint, name: 'wire', heartbeatMs: 100,
                               liveness: 3, ...options });
        for (const [name, handler] of Object.entries (handlers))
            worker.activity (name, handler);
        run = worker.run ();
        return broker.take (broker.command ('READY'), 'READY');
    }

    function task (ready, id, activity, params, meta = {}) {
        return broker.send (ready.identity, ['ACTW01', 'TASK', id, activity, JSON.stringify (params),
            JSON.stringify ({ context: 'c', call_id: id.split ('.') [0], attempt: 1,
                              deadline_ms: 60000, branches: 2, discard: false, ...meta })]);
    }

    it ('sends READY first, with activities, capacity, name and lang', async () => {
        const ready = await setup ({ a: () => 1, b: () => 2 }, { capacity: 5 });
        assert.equal (ready.frames.length, 3);
        assert.equal (ready.frames [0], 'ACTW01');
        assert.deepEqual (JSON.parse (ready.frames [2]),
                          { activities: ['a', 'b'], capacity: 5, name: 'wire', lang: 'node' });
        assert.equal (broker.messages.indexOf (ready), 0);
    });

    it ('answers RESULT task-id, result json, branch', async () => {
        const ready = await setup ({ pick: async ({ n }) => n === 0? { n }: branch (n, { n }) });
        await task (ready, '1.1', 'pick', { n: 0 });
        await task (ready, '2.1', 'pick', { n: 1 });
        const first = await broker.take (broker.command ('RESULT'), 'RESULT 1.1');
        const second = await broker.take (broker.command ('RESULT'), 'RESULT 2.1');
        assert.deepEqual (first.frames, ['ACTW01', 'RESULT', '1.1', '{"n":0}']);
        assert.deepEqual (second.frames, ['ACTW01', 'RESULT', '2.1', '{"n":1}', '1']);
    });

    it ('answers FAIL task-id, error json', async () => {
        const ready = await setup ({ fail: async ({ how }) => {
            if (how === 'mine')
                throw new ActivityError ('bad input', { code: 'bad_input', retryable: false, field: 'x' });
            throw new Error ('oops');
        } });
        await task (ready, '3.1', 'fail', { how: 'mine' });
        const mine = await broker.take (broker.command ('FAIL'), 'FAIL 3.1');
        assert.deepEqual (mine.frames.slice (0, 3), ['ACTW01', 'FAIL', '3.1']);
        assert.deepEqual (JSON.parse (mine.frames [3]),
                          { message: 'bad input', code: 'bad_input', retryable: false, field: 'x' });
        await task (ready, '4.1', 'fail', { how: 'other' });
        const other = await broker.take (broker.command ('FAIL'), 'FAIL 4.1');
        assert.equal (other.frames [2], '4.1');
        assert.deepEqual (JSON.parse (other.frames [3]), { message: 'oops', code: 'activity_failed' });
    });

    it ('answers FAIL activity_failed for a thrown value that cannot be read as text', async () => {
        const warnings = [];
        const ready = await setup ({ odd: async ({ how }) => {
            if (how === 'bare')
                throw Object.create (null);
            if (how === 'toString')
                throw { toString () { throw new Error ('no text'); } };
            const error = new Error ('hidden');
            Object.defineProperty (error, 'message', { get () { throw new Error ('no message'); } });
            throw error;
        } }, { capacity: 3 });
        worker.on ('warning', (error) => warnings.push (error));
        const hows = ['bare', 'toString', 'getter'];
        for (const [n, how] of hows.entries ())
            await task (ready, `${n + 10}.1`, 'odd', { how });
        const fails = [];
        for (const how of hows)
            fails.push (await broker.take (broker.command ('FAIL'), 'FAIL of ' + how));
        assert.deepEqual (fails.map ((fail) => fail.frames [2]).sort (), ['10.1', '11.1', '12.1']);
        for (const fail of fails) {
            const body = JSON.parse (fail.frames [3]);
            assert.deepEqual (Object.keys (body).sort (), ['code', 'message']);
            assert.equal (body.code, 'activity_failed');
            assert.match (body.message, /^the activity failed/);
        }
        //  The worker goes on
        await task (ready, '13.1', 'odd', { how: 'none' });
        assert.equal ((await broker.take (broker.command ('FAIL'), 'FAIL 13.1')).frames [2], '13.1');
        assert.deepEqual (warnings, []);
    });

    it ('sends PROGRESS task-id, details json', async () => {
        const ready = await setup ({ steps: async (params, task) => {
            await task.progress ({ step: 1 });
            await task.progress ('almost');
            return 'done';
        } });
        await task (ready, '5.1', 'steps', {});
        const progress = [await broker.take (broker.command ('PROGRESS'), 'PROGRESS 1'),
                          await broker.take (broker.command ('PROGRESS'), 'PROGRESS 2')];
        const result = await broker.take (broker.command ('RESULT'), 'RESULT');
        assert.deepEqual (progress.map ((m) => m.frames),
                          [['ACTW01', 'PROGRESS', '5.1', '{"step":1}'],
                           ['ACTW01', 'PROGRESS', '5.1', '"almost"']]);
        assert.deepEqual (result.frames, ['ACTW01', 'RESULT', '5.1', '"done"']);
        assert.ok (broker.messages.indexOf (progress [1]) < broker.messages.indexOf (result));
    });

    it ('keeps sending HEARTBEAT while a handler awaits long work', async () => {
        const release = gate ();
        const ready = await setup ({ long: async () => { await release; return 1; } });
        await task (ready, '6.1', 'long', {});
        await until (() => worker.running === 1, 'the task to run');
        const seen = broker.messages.length;
        for (let n = 0; n < 5; n++)
            await broker.take ((m) => broker.messages.indexOf (m) >= seen
                                   && broker.command ('HEARTBEAT', ready.peer) (m),
                               'HEARTBEAT ' + n + ' during the task');
        release.open ();
        const result = await broker.take (broker.command ('RESULT'), 'RESULT');
        assert.equal (result.peer, ready.peer);
        assert.equal (worker.connections, 1);
    });

    it ('reconnects with a new socket and READY again when the broker is silent', async () => {
        const started = gate ();
        let reason = null;
        const ready = await setup ({ hang: async (params, task) => {
            started.open ();
            await new Promise ((resolve) => task.signal.addEventListener ('abort', resolve));
            reason = task.signal.reason;
            return 'late';
        } }, {}, false);
        await task (ready, '7.1', 'hang', {});
        await started;
        //  The scripted broker never sends anything: after liveness intervals
        //  the worker gives up on this socket
        const again = await broker.take (broker.command ('READY'), 'a second READY');
        assert.notEqual (again.peer, ready.peer);
        assert.deepEqual (JSON.parse (again.frames [2]), JSON.parse (ready.frames [2]));
        await until (() => reason, 'the task to be aborted');
        assert.equal (reason.code, 'worker_lost');
        assert.ok (worker.connections >= 2);
    });

    it ('reconnects on DISCONNECT and never answers the old socket\'s tasks on the new one', async () => {
        const hold = gate ();
        let started = 0;
        const ready = await setup ({ hold: async ({ n }) => {
            started++;
            if (n === 1)
                await hold;
            return n;
        } });
        await task (ready, '8.1', 'hold', { n: 1 });
        await until (() => started === 1, 'the task to start');
        const finished = new Promise ((resolve) => worker.on ('done', resolve));
        await broker.send (ready.identity, ['ACTW01', 'DISCONNECT', 'go away']);
        const again = await broker.take (broker.command ('READY'), 'READY after DISCONNECT');
        assert.notEqual (again.peer, ready.peer);
        //  The old task's handler finishes now; its RESULT must not be sent
        hold.open ();
        assert.equal ((await finished).id, '8.1');
        await task (again, '9.1', 'hold', { n: 2 });
        const result = await broker.take (broker.command ('RESULT'), 'RESULT 9.1');
        assert.deepEqual (result.frames, ['ACTW01', 'RESULT', '9.1', '2']);
        const answers = broker.messages.filter ((m) => ['RESULT', 'FAIL', 'PROGRESS'].includes (m.frames [1]));
        assert.deepEqual (answers, [result]);
    });

    it ('pauses longer and longer before READY again when the broker keeps refusing it', async () => {
        //  No HEARTBEAT from the broker: one before the DISCONNECT would make
        //  it a connection the broker kept, after which there is no pause
        const readies = [await setup ({ a: () => 1 }, {}, false)];
        for (let n = 1; n <= 3; n++) {
            await broker.send (readies [n - 1].identity, ['ACTW01', 'DISCONNECT', 'refused']);
            readies.push (await broker.take (broker.command ('READY'), 'READY ' + n));
        }
        //  Pauses of 100, 200 and 400 ms (a timer never fires early)
        const gaps = readies.slice (1).map ((ready, n) => ready.at - readies [n].at);
        assert.ok (gaps [0] >= 95 && gaps [1] >= 195 && gaps [2] >= 395, 'gaps ' + gaps);
        assert.equal (new Set (readies.map ((ready) => ready.peer)).size, 4);
    });

    function answers () {
        return broker.messages.filter ((m) => ['RESULT', 'FAIL'].includes (m.frames [1]));
    }

    it ('lets a running task end and answer when it stops, then sends DISCONNECT', async () => {
        const ready = await setup ({ slow: async (params, task) => {
            await sleep (300);
            return { cancelled: task.cancelled };
        } });
        await task (ready, '70.1', 'slow', {});
        await until (() => worker.running === 1, 'the task to run');
        const stopping = worker.stop ();
        const result = await broker.take (broker.command ('RESULT'), 'RESULT 70.1');
        assert.deepEqual (result.frames, ['ACTW01', 'RESULT', '70.1', '{"cancelled":false}']);
        const bye = await broker.take (broker.command ('DISCONNECT'), 'DISCONNECT');
        assert.ok (broker.messages.indexOf (result) < broker.messages.indexOf (bye));
        await stopping;
        await run;
        assert.equal (worker.running, 0);
    });

    it ('sends the answer of the handler that called stop (), then DISCONNECT', async () => {
        const ready = await setup ({ last: async () => {
            worker.stop ();
            return 'the last job';
        } });
        await task (ready, '71.1', 'last', {});
        const result = await broker.take (broker.command ('RESULT'), 'RESULT 71.1');
        assert.deepEqual (result.frames, ['ACTW01', 'RESULT', '71.1', '"the last job"']);
        const bye = await broker.take (broker.command ('DISCONNECT'), 'DISCONNECT');
        assert.ok (broker.messages.indexOf (result) < broker.messages.indexOf (bye));
        await run;
    });

    it ('aborts the tasks still running when the grace is over, and drops their answers', async () => {
        let reason = null, after = null;
        const ready = await setup ({ long: async (params, task) => {
            await new Promise ((resolve) => {
                const timer = setTimeout (resolve, 5000);
                task.signal.addEventListener ('abort', () => {
                    [reason, after] = [task.signal.reason, Date.now () - asked];
                    clearTimeout (timer);
                    resolve ();
                });
            });
            return 'too late';
        } }, { graceMs: 200 });
        const finished = new Promise ((resolve) => worker.on ('done', resolve));
        await task (ready, '72.1', 'long', {});
        await until (() => worker.running === 1, 'the task to run');
        const asked = Date.now ();
        await worker.stop ();
        await run;
        await broker.take (broker.command ('DISCONNECT'), 'DISCONNECT');
        assert.equal (reason.code, 'worker_stopped');
        assert.ok (after >= 190 && after < 4000, `aborted ${after} ms after stop ()`);
        assert.equal ((await finished).id, '72.1');
        await sleep (200);
        assert.deepEqual (answers (), []);
    });

    it ('runs and answers a TASK that comes while it stops, heartbeats going on', async () => {
        const hold = gate ();
        const ready = await setup ({ hold: async ({ n }) => {
            if (n === 1)
                await hold;
            return n;
        } }, { capacity: 2 });
        await task (ready, '73.1', 'hold', { n: 1 });
        await until (() => worker.running === 1, 'the task to run');
        const stopping = worker.stop ();
        const seen = broker.messages.length;
        await task (ready, '74.1', 'hold', { n: 2 });
        const second = await broker.take (broker.command ('RESULT'), 'RESULT 74.1');
        assert.deepEqual (second.frames, ['ACTW01', 'RESULT', '74.1', '2']);
        await broker.take ((m) => broker.messages.indexOf (m) >= seen
                               && broker.command ('HEARTBEAT') (m), 'HEARTBEAT while stopping');
        assert.ok (!broker.messages.some (broker.command ('DISCONNECT')), 'DISCONNECT too soon');
        hold.open ();
        const first = await broker.take (broker.command ('RESULT'), 'RESULT 73.1');
        assert.deepEqual (first.frames, ['ACTW01', 'RESULT', '73.1', '1']);
        const bye = await broker.take (broker.command ('DISCONNECT'), 'DISCONNECT');
        assert.ok (broker.messages.indexOf (first) < broker.messages.indexOf (bye));
        await stopping;
    });

    it ('aborts the tasks of a broker lost while it stops, and connects to it no more', async () => {
        let reason = null;
        const ready = await setup ({ hang: async (params, task) => {
            await new Promise ((resolve) => task.signal.addEventListener ('abort', resolve));
            reason = task.signal.reason;
            return 'late';
        } });
        await task (ready, '75.1', 'hang', {});
        await until (() => worker.running === 1, 'the task to run');
        const stopping = worker.stop ();
        await broker.send (ready.identity, ['ACTW01', 'DISCONNECT', 'go away']);
        await stopping;
        assert.equal (reason.code, 'worker_lost');
        assert.equal (worker.connections, 1);
        assert.equal (broker.messages.filter (broker.command ('READY')).length, 1);
        assert.deepEqual (answers (), []);
    });

    it ('with graceMs 0 aborts running tasks at once; takes only a number >= 0 for it', async () => {
        for (const bad of [-1, '100', NaN, true, {}])
            assert.throws (() => new Worker ({ endpoint: 'tcp://127.0.0.1:1', graceMs: bad }),
                           /graceMs/, String (bad));
        assert.equal (new Worker ({ endpoint: 'tcp://127.0.0.1:1' }).graceMs, 5000);
        const ready = await setup ({ hang: (params, task) =>
            new Promise ((resolve) => task.signal.addEventListener ('abort', resolve))
        }, { graceMs: 0 });
        assert.equal (worker.graceMs, 0);
        const running = new Promise ((resolve) => worker.on ('task', resolve));
        await task (ready, '76.1', 'hang', {});
        const hung = await running;
        await until (() => worker.running === 1, 'the task to run');
        const stopping = worker.stop ();
        assert.equal (hung.signal.reason?.code, 'worker_stopped', 'aborted as stop () is called');
        await stopping;
        await broker.take (broker.command ('DISCONNECT'), 'DISCONNECT');
        await sleep (200);
        assert.deepEqual (answers (), []);
        await assert.rejects (worker.stop ({ graceMs: -1 }), /graceMs/);
    });

    it ('ends the grace sooner at a stop ({ graceMs }) while it stops, never later', async () => {
        const ready = await setup ({ hang: (params, task) =>
            new Promise ((resolve) => task.signal.addEventListener ('abort', resolve))
        });
        const running = new Promise ((resolve) => worker.on ('task', resolve));
        await task (ready, '77.1', 'hang', {});
        const hung = await running;
        await until (() => worker.running === 1, 'the task to run');
        const stopping = worker.stop ({ graceMs: 60000 });
        await sleep (100);
        assert.ok (!hung.cancelled, 'the task runs on while it stops');
        assert.equal (worker.stop (), stopping, 'the default grace, later, changes nothing');
        await sleep (100);
        assert.ok (!hung.cancelled, 'the task runs on after a second stop ()');
        assert.equal (worker.stop ({ graceMs: 0 }), stopping);
        assert.equal (hung.signal.reason?.code, 'worker_stopped');
        await stopping;
        await broker.take (broker.command ('DISCONNECT'), 'DISCONNECT');
    });

    it ('sends DISCONNECT when it stops', async () => {
        const ready = await setup ({ a: () => 1 });
        await worker.stop ();
        worker = null;
        const bye = await broker.take (broker.command ('DISCONNECT'), 'DISCONNECT');
        assert.equal (bye.peer, ready.peer);
    });
    //  actd reads a worker frame up to 4 x max_message_bytes + 64 KiB:
    //  past that libzmq drops the worker's connection, and every task on it
    //  fails worker_lost; under it a RESULT over max_message_bytes fails
    //  its attempt at actd. The worker answers such a result itself
    it ('answers FAIL activity_failed for a result over maxMessageBytes, RESULT null when discarded', async () => {
        const warnings = [];
        //  A string of n characters is n + 2 bytes of JSON
        const ready = await setup ({ big: ({ bytes, alternative }) => {
            const text = 'x'.repeat (bytes - 2);
            return alternative? branch (alternative, text): text;
        } }, { maxMessageBytes: 1000 });
        worker.on ('warning', (error) => warnings.push (error.message));
        const over = JSON.stringify ({ code: 'activity_failed',
            message: 'the result is 2000 bytes, over max_message_bytes (1000)', retryable: false });
        await task (ready, '30.1', 'big', { bytes: 2000 });
        const fail = await broker.take (broker.command ('FAIL'), 'FAIL 30.1');
        assert.deepEqual (fail.frames, ['ACTW01', 'FAIL', '30.1', over]);
        await task (ready, '31.1', 'big', { bytes: 2000, alternative: 1 });
        const branched = await broker.take (broker.command ('FAIL'), 'FAIL 31.1');
        assert.deepEqual (branched.frames, ['ACTW01', 'FAIL', '31.1', over]);
        await task (ready, '32.1', 'big', { bytes: 2000 }, { discard: true });
        const discarded = await broker.take (broker.command ('RESULT'), 'RESULT 32.1');
        assert.deepEqual (discarded.frames, ['ACTW01', 'RESULT', '32.1', 'null']);
        await task (ready, '33.1', 'big', { bytes: 1000 });
        const exact = await broker.take (broker.command ('RESULT'), 'RESULT 33.1');
        assert.deepEqual (exact.frames, ['ACTW01', 'RESULT', '33.1', JSON.stringify ('x'.repeat (998))]);
        assert.equal (warnings.length, 3);
        for (const [n, warning] of warnings.entries ())
            assert.match (warning, new RegExp (`^task 3${n}\\.1: the result is 2000 bytes, over max_message_bytes \\(1000\\)`));
    });

    it ('sends no PROGRESS over maxMessageBytes', async () => {
        const warnings = [];
        const ready = await setup ({ steps: async (params, task) => {
            await task.progress ('p'.repeat (1998));
            await task.progress ('p'.repeat (999));
            await task.progress ('p'.repeat (998));
            return 'done';
        } }, { maxMessageBytes: 1000 });
        worker.on ('warning', (error) => warnings.push (error.message));
        await task (ready, '34.1', 'steps', {});
        const result = await broker.take (broker.command ('RESULT'), 'RESULT 34.1');
        assert.deepEqual (result.frames, ['ACTW01', 'RESULT', '34.1', '"done"']);
        const progress = broker.messages.filter (broker.command ('PROGRESS'));
        assert.deepEqual (progress.map ((m) => m.frames [3].length), [1000]);
        assert.equal (warnings.length, 2);
        assert.match (warnings [0], /^task 34\.1: the progress is 2000 bytes, over max_message_bytes \(1000\): not sent$/);
    });

    it ('cuts a failure over maxMessageBytes, and takes only a positive integer for it', async () => {
        for (const bad of [0, -1, 1.5, '1000', NaN, Infinity])
            assert.throws (() => new Worker ({ endpoint: 'tcp://127.0.0.1:1', maxMessageBytes: bad }),
                           /maxMessageBytes/, String (bad));
        const ready = await setup ({ fail: () => {
            throw new ActivityError ('e'.repeat (5000), { code: 'w_long', retryable: false });
        } }, { maxMessageBytes: 1000 });
        await task (ready, '35.1', 'fail', {});
        const fail = await broker.take (broker.command ('FAIL'), 'FAIL 35.1');
        assert.ok (Buffer.byteLength (fail.frames [3]) <= 1000, fail.frames [3].length + ' bytes');
        const body = JSON.parse (fail.frames [3]);
        assert.deepEqual ([body.code, body.retryable], ['w_long', false]);
        assert.match (body.message, /^e+\.\.\. \(cut: the failure was \d+ bytes\)$/);
    });

    it ('answers FAIL bad_task for a TASK of other than 4 frames, and goes on', async () => {
        const warnings = [];
        const ready = await setup ({ echo: (params) => params });
        worker.on ('warning', (error) => warnings.push (error.message));
        const meta = JSON.stringify ({ context: 'c', call_id: '40', attempt: 1 });
        const frames = (n) => JSON.stringify ({ code: 'bad_task',
            message: `a TASK of ${n} frames, not 4 (task id, activity, params, meta)`, retryable: false });
        await broker.send (ready.identity, ['ACTW01', 'TASK', '40.1', 'echo', '{}']);
        const three = await broker.take (broker.command ('FAIL'), 'FAIL 40.1');
        assert.deepEqual (three.frames, ['ACTW01', 'FAIL', '40.1', frames (3)]);
        await broker.send (ready.identity, ['ACTW01', 'TASK', '41.1', 'echo', '{}', meta, 'extra']);
        const five = await broker.take (broker.command ('FAIL'), 'FAIL 41.1');
        assert.deepEqual (five.frames, ['ACTW01', 'FAIL', '41.1', frames (5)]);
        //  Without even a task id there is no one to answer
        await broker.send (ready.identity, ['ACTW01', 'TASK']);
        await until (() => warnings.some ((warning) => /TASK of 0 frames/.test (warning)),
                     'the warning of a TASK of no frame');
        await task (ready, '42.1', 'echo', { ok: true });
        const result = await broker.take (broker.command ('RESULT'), 'RESULT 42.1');
        assert.deepEqual (result.frames, ['ACTW01', 'RESULT', '42.1', '{"ok":true}']);
        assert.equal (broker.messages.filter (broker.command ('FAIL')).length, 2);
        assert.equal (worker.running, 0);
    });

    it ('answers FAIL bad_task for params or meta that do not parse, and goes on', async () => {
        let runs = 0;
        const ready = await setup ({ echo: (params) => { runs++; return params; } });
        const meta = JSON.stringify ({ context: 'c', call_id: '50', attempt: 1 });
        const cases = [['{not json', meta], ['{}', 'nope'], ['{}', '[1,2]'], ['{}', 'null'],
                       ['{}', '{"attempt":"x"}'], ['{}', '{"attempt":null}'],
                       ['{}', '{"deadline_ms":"60000"}'], ['{}', '{"deadline_ms":1.5}'],
                       ['{}', '{"branches":null}'], ['{}', '{"instance":5}']];
        for (const [n, [params, meta]] of cases.entries ()) {
            await broker.send (ready.identity, ['ACTW01', 'TASK', `5${n}.1`, 'echo', params, meta]);
            const fail = await broker.take (broker.command ('FAIL'), `FAIL 5${n}.1 (${params} ${meta})`);
            assert.equal (fail.frames [2], `5${n}.1`);
            const body = JSON.parse (fail.frames [3]);
            assert.deepEqual ([body.code, body.retryable], ['bad_task', false], params + ' ' + meta);
            assert.match (body.message, /^the task does not parse: ./);
        }
        //  null is no deadline, as absent fields are their defaults
        await broker.send (ready.identity, ['ACTW01', 'TASK', '60.1', 'echo', '{"ok":1}',
                                            '{"deadline_ms":null,"context":5}']);
        const result = await broker.take (broker.command ('RESULT'), 'RESULT 60.1');
        assert.deepEqual (result.frames, ['ACTW01', 'RESULT', '60.1', '{"ok":1}']);
        assert.equal (runs, 1);
        assert.equal (worker.running, 0);
    });
});
