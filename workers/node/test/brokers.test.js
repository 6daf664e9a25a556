'use strict';
//  Several brokers sharing one PostgreSQL store: each context is owned by
//  one broker, another broker answers ERROR moved with the owner's client
//  endpoint, and the client follows it; a client given several endpoints
//  sends each context's requests to its owner (rendezvous hashing first),
//  retries on another broker when one stops answering, and gives calls an
//  _id; a worker connects to every broker; after a broker is killed the
//  other takes its contexts over once the lease expires and runs their
//  pending calls, writing each output once.
//
//  The brokers run with lease_ms = 1000 (a config file), on databases of a
//  private PostgreSQL server (./pg.js).

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const fs = require ('node:fs');
const os = require ('node:os');
const path = require ('node:path');
const zmq = require ('zeromq');
const { Worker, Client, ActdError } = require ('..');
const { score, rendezvous, fnv1a64 } = require ('../lib/route');
const { MAX_HOPS } = require ('../lib/client');
const { Actd, ScriptedBroker, lossyRelay, until, collect, runProgram, freePort, sibling, ROOT } = require ('./actd');
const pg = require ('./pg');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MASK = (1n << 64n) - 1n;

//  MurmurHash3's 64-bit finalizer, written out for the test
function fmix64 (value) {
    for (const multiplier of [0xff51afd7ed558ccdn, 0xc4ceb9fe1a85ec53n]) {
        value ^= value >> 33n;
        value = (value * multiplier) & MASK;
    }
    return value ^ (value >> 33n);
}

//  count brokers on one new database, with 1000 ms leases
async function startBrokers (count) {
    const dir = fs.mkdtempSync (path.join (os.tmpdir (), 'actd-node-brokers-'));
    const config = path.join (dir, 'lease.cfg');
    fs.writeFileSync (config, 'server\n    lease_ms = 1000\n');
    const store = await pg.database ();
    const brokers = [];
    for (let index = 0; index < count; index++)
        brokers.push (await new Actd ({ store, args: ['--config', config] }).start ());
    brokers.dir = dir;
    return brokers;
}

//  A raw ACT/1 client on one broker: request () resolves with the reply
//  frames after the request id, as strings (ERROR moved included)
class RawClient {
    constructor (endpoint) {
        this.socket = new zmq.Dealer ({ linger: 0, receiveTimeout: 30000 });
        this.socket.connect (endpoint);
        this.counter = 0;
    }

    async request (command, ...args) {
        const id = 'raw' + ++this.counter;
        await this.socket.send (['ACTC01', command, id, ...args]);
        for (;;) {
            const [header, verb, rid, ...rest] = await this.socket.receive ();
            assert.equal (header.toString (), 'ACTC01');
            if (rid.toString () === id)
                return [verb.toString (), ...rest.map (String)];
        }
    }

    close () {
        this.socket.close ();
    }
}

//  The reply to command through a raw client on each broker, by endpoint
async function rawAsk (brokers, command, ...args) {
    const replies = {};
    for (const broker of brokers) {
        const raw = new RawClient (broker.clientEndpoint);
        try {
            replies [broker.clientEndpoint] = await raw.request (command, ...args);
        }
        finally {
            raw.close ();
        }
    }
    return replies;
}

//  count context ids whose rendezvous order puts endpoint first
function contextsFirstAt (endpoints, endpoint, prefix, count = 1) {
    const found = [];
    for (let number = 0; found.length < count; number++)
        if (rendezvous (endpoints, prefix + '-' + number) [0] === endpoint)
            found.push (prefix + '-' + number);
    return found;
}

describe ('Rendezvous routing', () => {
    it ('the score is fmix64 of FNV-1a 64 of endpoint "\\n" context', () => {
        //  The published FNV-1a 64 test vectors
        assert.equal (fnv1a64 (Buffer.from ('')), 0xcbf29ce484222325n);
        assert.equal (fnv1a64 (Buffer.from ('a')), 0xaf63dc4c8601ec8cn);
        assert.equal (fnv1a64 (Buffer.from ('foobar')), 0x85944171f73967e8n);
        for (const [endpoint, context] of [['tcp://127.0.0.1:5555', 'chat-1'],
                                           ['ipc:///tmp/a', 'x'],
                                           ['tcp://b:5555', 'caf\u00e9/run:7']])
            assert.equal (score (endpoint, context),
                          fmix64 (fnv1a64 (Buffer.from (endpoint + '\n' + context, 'utf8'))));
    });

    it ('orders the endpoints highest score first, whatever their order in the list', () => {
        const endpoints = [1, 2, 3, 4, 5].map ((n) => `tcp://10.0.0.${n}:5555`);
        for (let number = 0; number < 50; number++) {
            const order = rendezvous (endpoints, 'ctx-' + number);
            const scores = order.map ((endpoint) => score (endpoint, 'ctx-' + number));
            assert.deepEqual ([...order].sort (), [...endpoints].sort ());
            assert.deepEqual (scores, [...scores].sort ((a, b) => (a < b) - (a > b)));
            assert.deepEqual (rendezvous ([...endpoints].reverse (), 'ctx-' + number), order);
        }
    });

    it ('spreads contexts named alike about evenly over two brokers', () => {
        for (let port = 40000; port < 40010; port++) {
            const endpoints = [`tcp://127.0.0.1:${port}`, `tcp://127.0.0.1:${port + 7919}`];
            let first = 0;
            for (let number = 0; number < 1000; number++)
                first += rendezvous (endpoints, 'run-' + number) [0] === endpoints [0];
            assert.ok (first >= 400 && first <= 600, endpoints + ': ' + first);
        }
    });

    it ('agrees with the Python package', async () => {
        const endpoints = ['tcp://127.0.0.1:5555', 'tcp://127.0.0.1:6555', 'ipc:///tmp/x'];
        const contexts = Array.from ({ length: 20 }, (_, n) => 'agree-' + n);
        const program = 'import sys, json; sys.path.insert (0, sys.argv [1]); '
                      + 'from actd import _wire; '
                      + 'print (json.dumps ([_wire.rendezvous (json.loads (sys.argv [2]), c) '
                      + 'for c in json.loads (sys.argv [3])]))';
        const output = await runProgram ('/usr/bin/python3', ['-c', program,
            path.join (ROOT, 'workers', 'python'), JSON.stringify (endpoints),
            JSON.stringify (contexts)]);
        assert.deepEqual (JSON.parse (output),
                          contexts.map ((context) => rendezvous (endpoints, context)));
    });

    it ('a client refuses an empty list or an endpoint listed twice', () => {
        assert.throws (() => new Client ({ endpoints: [] }), TypeError);
        assert.throws (() => new Client ({ endpoints: ['tcp://a:1', 'tcp://a:1'] }), TypeError);
        assert.throws (() => new Worker ({ endpoints: ['tcp://a:1', 'tcp://a:1'] }), TypeError);
        assert.throws (() => new Client ({ endpoints: ' , ' }), TypeError);
    });

    it ('takes endpoints as a comma-separated string too, and $ACTD_[WORKER_]ENDPOINT by default', () => {
        const listed = 'tcp://127.0.0.1:1, tcp://127.0.0.1:2';
        const both = ['tcp://127.0.0.1:1', 'tcp://127.0.0.1:2'];
        for (const options of [{ endpoints: listed }, { endpoint: listed }, listed]) {
            const client = new Client (options);
            assert.deepEqual (client.endpoints, both);
            client.close ();
            assert.deepEqual (new Worker (options).endpoints, both);
        }
        process.env.ACTD_ENDPOINT = listed;
        try {
            const client = new Client ();
            assert.deepEqual (client.endpoints, both);
            client.close ();
            //  It is a client endpoint: the worker has its own
            assert.deepEqual (new Worker ().endpoints, ['tcp://127.0.0.1:5556']);
            process.env.ACTD_WORKER_ENDPOINT = 'tcp://127.0.0.1:3';
            assert.deepEqual (new Worker ().endpoints, ['tcp://127.0.0.1:3']);
        }
        finally {
            delete process.env.ACTD_ENDPOINT;
            delete process.env.ACTD_WORKER_ENDPOINT;
        }
    });
});

describe ('Client routing, with scripted brokers and one actd', () => {
    let actd, worker;
    const runs = [];

    before (async () => {
        actd = await new Actd ().start ();
        worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, capacity: 2,
                               name: 'routing-worker' });
        worker.activity ('echo', async (params, task) => {
            runs.push (task.callId);
            return params;
        });
        worker.run ();
        const probe = actd.client ();
        await until (async () => (await probe.stats ()).workers.length === 1, 'the worker');
        probe.close ();
    });

    after (async () => {
        await worker.stop ();
        await actd.finish ();
    });

    it ('follows moved at most 5 times, then rejects with code moved', async () => {
        const fake = await new ScriptedBroker ().start ();
        fake.answer = (frames) => ['ACTC01', 'ERROR', frames [2], 'moved', fake.endpoint];
        const client = new Client ({ endpoint: fake.endpoint });
        try {
            await assert.rejects (client.resolve ('loop', '\u2020k'), (error) => {
                assert.ok (error instanceof ActdError);
                assert.equal (error.code, 'moved');
                assert.equal (error.message, fake.endpoint);
                return true;
            });
            assert.equal (fake.received.length, 1 + MAX_HOPS);
            assert.equal (new Set (fake.received.map ((frames) => frames [2])).size, 1);
            for (const frames of fake.received)
                assert.deepEqual ([frames [0], frames [1], ...frames.slice (3)],
                                  ['ACTC01', 'RESOLVE', 'loop', '\u2020k']);
        }
        finally {
            client.close ();
            fake.close ();
        }
    });

    it ('connects to the owner moved names when it is not listed', async () => {
        const fake = await new ScriptedBroker ().start ((frames) =>
            ['ACTC01', 'ERROR', frames [2], 'moved', actd.clientEndpoint]);
        const client = new Client ({ endpoint: fake.endpoint });
        try {
            assert.equal (await client.append ('node-moved-once', { type: 'text', n: 1 }), 1);
            assert.deepEqual (client.endpoints, [fake.endpoint, actd.clientEndpoint]);
            //  Later requests about the context go to its owner at once
            assert.equal ((await collect (client.history ('node-moved-once'))) [0].n, 1);
            assert.equal (fake.received.length, 1);
        }
        finally {
            client.close ();
            fake.close ();
        }
    });

    it ('sends PING and STATS to the first broker that answers', async () => {
        const silent = await new ScriptedBroker ().start ();
        const client = new Client ({ endpoints: [silent.endpoint, actd.clientEndpoint],
                                     requestTimeoutMs: 500 });
        try {
            assert.ok (await client.ping () >= 0);
            assert.deepEqual (silent.received.map ((frames) => frames [1]), ['PING']);
            //  The silent broker is skipped now
            assert.equal (typeof (await client.stats ()).uptime_ms, 'number');
            assert.deepEqual (silent.received.map ((frames) => frames [1]), ['PING']);
        }
        finally {
            client.close ();
            silent.close ();
        }
    });

    it ('a call sent again after a timeout runs once thanks to the _id it was given', async () => {
        //  The first broker in the context's order is a relay that passes
        //  requests on to actd and loses its replies: the client hears
        //  nothing, sends the CALL again to actd itself, and actd knows it
        //  by its _id
        const relay = await lossyRelay (actd.clientEndpoint);
        const endpoints = [relay.endpoint, actd.clientEndpoint];
        const [context] = contextsFirstAt (endpoints, relay.endpoint, 'node-retried');
        const client = new Client ({ endpoints, requestTimeoutMs: 1000 });
        try {
            const outcome = await client.call (context, { _tool: 'echo', n: 7,
                                                          _outputPath: '\u2020out.n' });
            assert.deepEqual ([outcome.status, outcome.result], ['ok', { n: 7 }]);
            const sent = relay.received.filter ((frames) => frames [1] === 'CALL')
                                       .map ((frames) => JSON.parse (frames [4]));
            assert.equal (sent.length, 1);
            assert.match (sent [0]._id, UUID);
            const { _id, ...rest } = sent [0];
            assert.deepEqual (rest, { _tool: 'echo', n: 7, _outputPath: '\u2020out.n' });
            const history = await collect (client.history (context));
            assert.deepEqual (history.map ((m) => [m._seq, m._callId, m._call._id]),
                              [[1, outcome.call_id, _id]]);
            assert.equal (runs.filter ((id) => id === outcome.call_id).length, 1);
            //  A call that has an _id keeps it; a plan's calls get one each
            const outcomes = await client.plan (context, [
                { _tool: 'echo', _id: 'mine', _outputPath: '\u2020out.a' },
                { _tool: 'echo', _outputPath: '\u2020out.b' }]);
            assert.deepEqual (outcomes.map ((o) => o.status), ['ok', 'ok']);
            const calls = (await collect (client.history (context, { fromSeq: 2 })))
                .map ((m) => m._call);
            assert.equal (calls [0]._id, 'mine');
            assert.match (calls [1]._id, UUID);
        }
        finally {
            client.close ();
            relay.close ();
        }
    });

    it ('a client given one endpoint adds no _id', async () => {
        const client = actd.client ();
        try {
            assert.equal ((await client.call ('node-no-id', { _tool: 'echo',
                                                             _outputPath: '\u2020out' })).status,
                          'ok');
            assert.deepEqual ((await collect (client.history ('node-no-id'))) [0]._call,
                              { _tool: 'echo', _outputPath: '\u2020out' });
        }
        finally {
            client.close ();
        }
    });
});

describe ('Two brokers sharing PostgreSQL', () => {
    let brokers, a, b, endpoints, client, worker;

    before (async () => {
        brokers = await startBrokers (2);
        [a, b] = brokers;
        endpoints = [a.clientEndpoint, b.clientEndpoint];
        client = new Client ({ endpoints });
        worker = new Worker ({ endpoints: [a.workerEndpoint, b.workerEndpoint], capacity: 2,
                               heartbeatMs: 200, name: 'node-two-broker-worker' });
        worker.activity ('upper', async ({ text }) => String (text).toUpperCase ());
        worker.activity ('spread', async ({ text }) => String (text).toUpperCase ());
        worker.run ();
        for (const broker of brokers)
            await until (async () => {
                const replies = await rawAsk ([broker], 'STATS');
                return JSON.parse (replies [broker.clientEndpoint] [1]).workers
                    .some ((w) => w.name === 'node-two-broker-worker');
            }, 'the worker registered at ' + broker.clientEndpoint);
    });

    after (async () => {
        await worker.stop ();
        client.close ();
        try {
            for (const broker of brokers)
                await broker.stopClean ();
        }
        finally {
            for (const broker of brokers)
                broker.cleanup ();
            fs.rmSync (brokers.dir, { recursive: true, force: true });
        }
    });

    it ('spreads 20 contexts over both brokers, each owned by one, served by one worker', async () => {
        const contexts = Array.from ({ length: 20 }, (_, n) => 'node-spread-' + n);
        const outcomes = await Promise.all (contexts.map ((context) => client.call (context,
            { _tool: 'spread', text: context, _outputPath: '\u2020out.text' })));
        assert.deepEqual (outcomes.map ((o) => [o.status, o.result]),
                          contexts.map ((context) => ['ok', context.toUpperCase ()]));
        const owned = { [a.clientEndpoint]: [], [b.clientEndpoint]: [] };
        for (const context of contexts) {
            const replies = await rawAsk (brokers, 'RESOLVE', context, '\u2020out.text');
            const values = Object.keys (replies).filter ((ep) => replies [ep] [0] === 'VALUE');
            assert.equal (values.length, 1, JSON.stringify (replies));
            const [owner] = values;
            assert.deepEqual (replies [owner], ['VALUE', JSON.stringify (context.toUpperCase ())]);
            const other = endpoints.find ((endpoint) => endpoint !== owner);
            assert.deepEqual (replies [other], ['ERROR', 'moved', owner]);
            //  The client created it where rendezvous hashing said
            assert.equal (owner, rendezvous (endpoints, context) [0]);
            owned [owner].push (context);
        }
        assert.ok (Object.values (owned).every ((list) => list.length > 0),
                   JSON.stringify (owned));
        //  The worker connected to both served each broker's calls; each
        //  broker counts its own and sees the capacity the worker declared
        for (const broker of brokers) {
            const stats = JSON.parse ((await rawAsk ([broker], 'STATS')) [broker.clientEndpoint] [1]);
            assert.equal (stats.activities.spread.done, owned [broker.clientEndpoint].length);
            assert.deepEqual (stats.workers.filter ((w) => w.name === 'node-two-broker-worker')
                                           .map ((w) => [w.capacity, w.lang]), [[2, 'node']]);
        }
    });

    it ('a broker that does not own a context answers moved; a one-endpoint client follows it', async () => {
        const [context] = contextsFirstAt (endpoints, a.clientEndpoint, 'node-wrong');
        const outcome = await client.call (context, { _tool: 'upper', text: 'x',
                                                      _outputPath: '\u2020out.x' });
        assert.equal (outcome.status, 'ok');
        const moved = ['ERROR', 'moved', a.clientEndpoint];
        const raw = new RawClient (b.clientEndpoint);
        try {
            assert.deepEqual (await raw.request ('CALL', context, '{"_tool":"upper"}'), moved);
            assert.deepEqual (await raw.request ('PLAN', context, '[{"_tool":"upper"}]'), moved);
            assert.deepEqual (await raw.request ('APPEND', context, '{"type":"text"}'), moved);
            assert.deepEqual (await raw.request ('RESOLVE', context, '\u2020out.x'), moved);
            assert.deepEqual (await raw.request ('VIEW', context), moved);
            assert.deepEqual (await raw.request ('HISTORY', context, '1', '10'), moved);
            assert.deepEqual (await raw.request ('STATUS', outcome.call_id), moved);
            assert.deepEqual (await raw.request ('CANCEL', outcome.call_id), moved);
            assert.deepEqual (await raw.request ('PING'), ['PONG']);
            assert.equal ((await raw.request ('STATS')) [0], 'VALUE');
        }
        finally {
            raw.close ();
        }
        assert.deepEqual ((await collect (client.history (context))).map ((m) => m._seq), [1]);
        const one = new Client ({ endpoint: b.clientEndpoint });
        try {
            assert.equal (await one.resolve (context, '\u2020out.x'), 'X');
            assert.deepEqual (one.endpoints, [b.clientEndpoint, a.clientEndpoint]);
            assert.equal ((await one.status (outcome.call_id)).state, 'ok');
        }
        finally {
            one.close ();
        }
    });

    it ('follows moved to an owner rendezvous hashing did not pick', async () => {
        const [context] = contextsFirstAt (endpoints, a.clientEndpoint, 'node-second');
        //  A raw client creates the context at the broker rendezvous puts
        //  second, which owns it from then on
        assert.deepEqual ((await rawAsk ([b], 'APPEND', context,
                                         '{"type":"data","kind":"k","data":{"v":1}}')) [b.clientEndpoint],
                          ['OK', '{"seq":1}']);
        const fresh = new Client ({ endpoints });
        try {
            assert.equal (await fresh.resolve (context, '\u2020k.v'), 1);
            const outcome = await fresh.call (context, { _tool: 'upper', text: '\u2020k.v',
                                                         _outputPath: '\u2020k.w' });
            assert.deepEqual ([outcome.status, outcome.result], ['ok', '1']);
            assert.equal ((await fresh.status (outcome.call_id)).state, 'ok');
            assert.deepEqual (fresh.endpoints, endpoints);
        }
        finally {
            fresh.close ();
        }
        assert.deepEqual (await rawAsk (brokers, 'RESOLVE', context, '\u2020k.w'), {
            [a.clientEndpoint]: ['ERROR', 'moved', b.clientEndpoint],
            [b.clientEndpoint]: ['VALUE', '"1"'] });
    });

    it ('the C library (actctl) creates each context where this client routes it', async () => {
        for (let number = 0; number < 8; number++) {
            const context = 'node-c-lib-' + number;
            await runProgram (sibling ('actctl'),
                ['--endpoint', endpoints.join (','), 'append', context, '{"type":"text"}']);
            const first = rendezvous (endpoints, context) [0];
            const replies = await rawAsk (brokers, 'HISTORY', context, '1', '10');
            assert.equal (replies [first] [0], 'VALUE', JSON.stringify (replies));
            for (const endpoint of endpoints.filter ((ep) => ep !== first))
                assert.deepEqual (replies [endpoint], ['ERROR', 'moved', first]);
        }
    });
});

describe ('A broker killed', () => {
    let brokers, a, b, endpoints;
    const workers = [];

    before (async () => {
        brokers = await startBrokers (2);
        [a, b] = brokers;
        endpoints = [a.clientEndpoint, b.clientEndpoint];
    });

    after (async () => {
        for (const worker of workers)
            await worker.stop ();
        try {
            await b.stopClean ();
        }
        finally {
            a.cleanup ();
            b.cleanup ();
            fs.rmSync (brokers.dir, { recursive: true, force: true });
        }
    });

    function serve (name, activities) {
        const worker = new Worker ({ endpoints: [a.workerEndpoint, b.workerEndpoint],
                                     capacity: 2, heartbeatMs: 200, name });
        for (const [activity, handler] of Object.entries (activities))
            worker.activity (activity, handler);
        worker.run ();
        workers.push (worker);
        return worker;
    }

    it ('its contexts are served by the other after the lease expires, its calls run once',
        { timeout: 120000 }, async () => {
        const runs = [];
        serve ('node-takeover-upper', { upper: async ({ text }) => String (text).toUpperCase () });
        const contexts = contextsFirstAt (endpoints, a.clientEndpoint, 'node-taken', 3);
        const [kept] = contextsFirstAt (endpoints, b.clientEndpoint, 'node-kept');
        const client = new Client ({ endpoints, requestTimeoutMs: 2000, timeoutMs: 60000 });
        try {
            for (const context of [...contexts, kept]) {
                await client.append (context, { type: 'data', kind: 'k', data: { v: context } });
                assert.equal ((await client.call (context, { _tool: 'upper', text: '\u2020k.v',
                    _outputPath: '\u2020k.up' })).status, 'ok');
            }
            //  Accepted by the broker about to die; no worker serves
            //  "later" yet, so it stays queued there
            const { callId, done } = await client.submit (contexts [0], { _tool: 'later', n: 1,
                _outputPath: '\u2020k.later' });
            const forgotten = await client.call (contexts [1], { _tool: 'later', n: 2 });
            assert.equal ((await client.status (callId)).state, 'queued');
            assert.deepEqual ((await rawAsk ([b], 'RESOLVE', contexts [0], '\u2020k.up'))
                              [b.clientEndpoint], ['ERROR', 'moved', a.clientEndpoint]);

            await a.kill ();
            //  The contexts of the dead broker answer again, from the other
            for (const context of contexts)
                assert.equal (await client.resolve (context, '\u2020k.up'), context.toUpperCase ());
            assert.equal (await client.resolve (kept, '\u2020k.up'), kept.toUpperCase ());
            assert.equal (await client.append (contexts [2], { type: 'text', after: true }), 3);
            assert.deepEqual (await rawAsk ([b], 'RESOLVE', contexts [2], '\u2020k.up'),
                              { [b.clientEndpoint]: ['VALUE', JSON.stringify (contexts [2].toUpperCase ())] });
            //  The calls it had accepted run once a worker serves them; the
            //  awaited DONE arrives by STATUS
            serve ('node-takeover-later', { later: async ({ n }, task) => {
                runs.push (task.callId);
                return 'later ' + n;
            } });
            const outcome = await done;
            assert.deepEqual ([outcome.call_id, outcome.status, outcome.result],
                              [callId, 'ok', 'later 1']);
            const status = await until (async () => {
                const now = await client.status (forgotten);
                return now.outcome && now;
            }, 'the fire-and-forget call ended');
            assert.equal (status.outcome.status, 'ok');
            assert.deepEqual ((await client.status (callId)).outcome, outcome);
            assert.deepEqual ([...runs].sort (), [callId, forgotten].sort ());
            //  Its output is written exactly once, seqs without gaps
            const history = await collect (client.history (contexts [0]));
            assert.deepEqual (history.map ((m) => m._seq), history.map ((m, index) => index + 1));
            assert.deepEqual (history.filter ((m) => m._callId === callId).map ((m) => m._seq),
                              outcome.seqs);
            assert.equal (outcome.seqs.length, 1);
            assert.deepEqual (await client.resolve (contexts [0], '\u2020k'),
                              { v: contexts [0], up: contexts [0].toUpperCase (), later: 'later 1' });
            assert.deepEqual ((await collect (client.history (contexts [1]))).map ((m) => m._seq),
                              [1, 2]);
        }
        finally {
            client.close ();
        }
        assert.match (b.log (), new RegExp ('took over context ' + contexts [0]));
    });
});
