'use strict';
//  A dropped connection rejects the requests it lost, at once, with code
//  "disconnected", instead of leaving their callers waiting forever: libzmq
//  forgets what it wrote to the dropped connection, and actd's replies go
//  to a routing id that is gone.
//
//  actd is stopped (SIGSTOP) past the client's ZMTP heartbeat timeout
//  (the library's 10 s, 3 s in this file's process) with requests and an accepted call pending, or killed (SIGKILL)
//  with a request pending and started again on the same ports. Nothing is
//  timed: requests get a timeoutMs longer than the pause, so a drop not
//  noticed would end them with "request_timeout", not "disconnected".
//
//  And replies that came before the connection dropped, unread when it
//  did (the process was busy): they answer their requests, and only the
//  request left unanswered rejects with "disconnected".

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const { Worker, Client, ActdError } = require ('..');
const { spawnSync, execSync } = require ('node:child_process');
const { Actd, until, gate, held, collect, freePort } = require ('./actd');
const { Link } = require ('../lib/link');

//  Each pause lasted the library's 10 s (some 40 s of the suite); what is
//  tested does not depend on the length. node --test runs each file in a
//  process of its own: the other files keep 10 s
Link.heartbeatTimeoutMs = 3000;

const LONG_MS = 90000;                  //  Past the library's heartbeat timeout and a loaded machine's slack
const REQUESTS = 20;                    //  Requests pending when the connection drops

async function disconnected (promise, words) {
    await assert.rejects (promise, (error) => {
        assert.ok (error instanceof ActdError, 'not an ActdError: ' + error);
        assert.equal (error.code, 'disconnected', error.message);
        assert.ok (error.message.includes (words), error.message);
        return true;
    });
}

describe ('A dropped connection', { timeout: 300000 }, () => {
    let actd, worker, client;
    const hold = { gate: gate () };

    afterEach (async () => {
        if (actd.process)
            actd.process.kill ('SIGCONT');
        hold.gate.open ();
        hold.gate = gate ();
        if (worker)
            await worker.stop ();
        worker = null;
        if (client)
            client.close ();
        await actd.finish ();
    });

    async function serving (name) {
        actd = await new Actd ().start ();
        worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, liveness: 3,
                               capacity: 4, name });
        worker.activity ('held', held (hold));
        worker.run ();
    }

    const call = { _tool: 'held', _outputPath: '†s.out' };

    it ('rejects the pending requests and an awaited DONE (statusPollMs 0) with disconnected', async () => {
        await serving ('drop-worker');
        client = actd.client ({ timeoutMs: LONG_MS, statusPollMs: 0 });
        const entered = hold.entered ?? 0;
        const { callId, done } = await client.submit ('n-pause', call);
        await until (() => hold.entered > entered, 'the call to run');
        actd.process.kill ('SIGSTOP');
        const pending = [];
        for (let n = 0; n < REQUESTS; n++)
            pending.push (disconnected (client.stats (), 'may or may not have been carried out'));
        pending.push (disconnected (client.submit ('n-pause', call), 'may or may not'));
        pending.push (disconnected (done, 'ask STATUS'));
        await Promise.all (pending);
        //  actd goes on: the client is answered on the new connection
        actd.process.kill ('SIGCONT');
        assert.ok (Array.isArray ((await client.stats ()).workers));
        hold.gate.open ();              //  Open for good: actd may run the call again
        const outcome = await client.wait (callId, { timeout: 30000 });
        assert.equal (outcome.result, 'released');
    });

    it ('follows an awaited DONE across the drop when statusPollMs is set', async () => {
        await serving ('drop-worker-poll');
        client = actd.client ({ timeoutMs: LONG_MS });
        const entered = hold.entered ?? 0;
        const { callId, done } = await client.submit ('n-poll', call);
        await until (() => hold.entered > entered, 'the call to run');
        actd.process.kill ('SIGSTOP');
        await disconnected (client.ping (), 'may or may not');
        actd.process.kill ('SIGCONT');
        hold.gate.open ();              //  Open for good: actd may run the call again
        const outcome = await done;
        assert.equal (outcome.call_id, callId);
        assert.equal (outcome.result, 'released');
    });

    it ('rejects a request pending when actd is killed; the next after its restart is answered', async () => {
        actd = await new Actd ().start ();
        client = actd.client ({ timeoutMs: LONG_MS });
        assert.equal (await client.append ('n-restart', { type: 'text', text: 'one' }), 1);
        //  Stopped first, so that the APPEND is surely not answered
        actd.process.kill ('SIGSTOP');
        const pending = disconnected (client.append ('n-restart', { type: 'text', text: 'lost' }),
                                      'may or may not');
        await actd.kill ();
        await pending;
        await actd.start ();
        //  The pending APPEND may or may not have been carried out, as the
        //  error says: libzmq sends again, on the new connection, what it
        //  had not yet written to the old one
        const seq = await client.append ('n-restart', { type: 'text', text: 'two' });
        assert.ok (seq === 2 || seq === 3, `seq ${seq}`);
        const texts = (await collect (client.history ('n-restart'))).map (m => m.text);
        assert.deepEqual (texts, seq === 3? ['one', 'lost', 'two']: ['one', 'two']);
    });

    //  The process is busy (blocked) while actd is killed and started
    //  again: the drop's event waits unread when the next request is
    //  sent. The request goes out on the new connection (it is carried
    //  out), so the drop, read only then, must not fail it: the link reads
    //  the socket's pending events before it writes (the C library reads
    //  them before each send)
    it ('does not reject a request sent after a drop that the busy process had not yet read', async () => {
        actd = await new Actd ().start ();
        client = actd.client ({ timeoutMs: LONG_MS });
        assert.equal (typeof await client.ping (), 'number');
        const killed = actd.kill ();   //  SIGKILL sent now
        execSync ('sleep 0.3');
        const started = actd.start (); //  Spawned now, on the same store and ports
        execSync ('sleep 1.5');         //  Blocked while actd starts and the client reconnects
        const seq = client.append ('n-busy', { type: 'text', text: 'after' });
        await killed;
        await started;
        assert.equal (await seq, 1);
        const texts = (await collect (client.history ('n-busy'))).map (m => m.text);
        assert.deepEqual (texts, ['after']);
    });
});

describe ('A dropped connection, with several brokers', { timeout: 120000 }, () => {
    it ('sends the requests pending on it to the next broker', async () => {
        const first = await new Actd ().start ();
        const second = await new Actd ().start ();
        const client = new Client ({ endpoints: [first.clientEndpoint, second.clientEndpoint],
                                     timeoutMs: LONG_MS, requestTimeoutMs: 0 });
        try {
            await client.ping ();       //  Both connected
            first.process.kill ('SIGSTOP');
            const pings = [];
            for (let n = 0; n < REQUESTS; n++)
                pings.push (client.ping ());    //  Sent to the first broker
            //  None is answered while the first is stopped: they are
            //  pending there, not sent to the second
            let settled = 0;
            for (const ping of pings)
                ping.then (() => settled++, () => settled++);
            await new Promise (resolve => setTimeout (resolve, 300));
            assert.equal (settled, 0, 'a ping was answered by the second broker at once');
            await first.kill ();
            for (const rtt of await Promise.all (pings))
                assert.equal (typeof rtt, 'number');
        }
        finally {
            client.close ();
            first.cleanup ();           //  Killed: no clean stop
            await second.finish ();
        }
    });
});

//  A broker in a child process, on endpoint: answers the first five of six
//  PINGs with PONG, closes its ROUTER 300 ms later (the PONGs written out:
//  linger), and exits 500 ms after that (the drop seen by this process's
//  libzmq); prints how many PINGs came
const DROPPING_BROKER = `
    const zmq = require (process.argv [1]);
    const sleep = (ms) => new Promise ((resolve) => setTimeout (resolve, ms));
    (async () => {
        const router = new zmq.Router ({ linger: 2000 });
        await router.bind (process.argv [2]);
        const pings = [];
        for await (const [identity, header, command, request] of router)
            if (String (command) === 'PING' && pings.push ([identity, header, request]) === 6)
                break;
        for (const [identity, header, request] of pings.slice (0, 5))
            await router.send ([identity, header, 'PONG', request]);
        await sleep (300);
        router.close ();
        await sleep (500);
        console.log (pings.length);
    }) ();`;

describe ('A dropped connection, its replies unread', { timeout: 60000 }, () => {
    //  libzmq keeps the replies that came on a connection readable after it
    //  reports the drop: they answer their requests, and only what is still
    //  pending then is lost. The client's receive loop and its socket's
    //  events are separate paths: here the process is busy (blocked in a
    //  listener of the socket's events) while the broker answers and goes
    //  away, so that the events that follow (the drop) are read before the
    //  replies, as when a busy client gets both at once
    it ('answers the requests whose replies came before the drop; only the sixth rejects with disconnected', async () => {
        const endpoint = 'tcp://127.0.0.1:' + await freePort ();
        const client = new Client ({ endpoint, timeoutMs: 20000 });
        try {
            const settled = [];
            const pings = [];
            for (let n = 0; n < 6; n++)
                pings.push (client.ping ().then (() => settled.push (`PONG ${n}`),
                    (error) => settled.push (`${error.code} ${n}`)));
            //  Sent after the drop, as its last reply is read: not lost
            //  with it (it waits for the next connection)
            const after = pings [4].then (() => client.ping ().catch ((error) => error.code));
            //  Nothing listens on endpoint yet: the first attempt to connect
            //  is refused, and its event blocks this process while the
            //  broker runs (the six PINGs wait in the socket: the link
            //  writes them after the event loop has polled once, so an
            //  attempt refused before then is let go, and the next one
            //  blocks)
            let broker;
            const link = client._links.get (endpoint);
            link.socket.events.on ('connect:retry', () => {
                if (link._queue.length)
                    return;
                broker ??= spawnSync (process.execPath, ['-e', DROPPING_BROKER,
                    require.resolve ('zeromq'), endpoint], { encoding: 'utf8', timeout: 20000 });
            });
            await Promise.all (pings);
            assert.equal (broker.status, 0, broker.stderr || String (broker.error));
            assert.equal (broker.stdout.trim (), '6');
            assert.deepEqual (settled, ['PONG 0', 'PONG 1', 'PONG 2', 'PONG 3', 'PONG 4',
                                        'disconnected 5']);
            client.close ();
            assert.equal (await after, 'closed');
        }
        finally {
            client.close ();
        }
    });
});
