'use strict';
//  The client against a scripted broker that misbehaves: replies it cannot
//  read reject only the request (or the call) they answer, with code
//  bad_reply, and the client goes on; a moved naming an endpoint zeromq
//  cannot connect to rejects with moved; a call STATUS does not know
//  rejects its DONE with NotFoundError and is no longer followed; wait ()
//  that times out before STATUS answers opens no watch; a reply of another
//  verb than its command's rejects with bad_reply, its own still resolves
//  (request () takes any). And endpoints
//  zeromq cannot connect to, for a Client and a Worker, in a child process
//  that must exit by itself.

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const path = require ('node:path');
const { Client, ActdError, NotFoundError } = require ('..');
const { ScriptedBroker, until, sleep, collect, runProgram, freePort } = require ('./actd');

const OUTCOME = (id) => JSON.stringify ({ call_id: id, status: 'ok', branch: 0,
                                          written: ['\u2020s.x'], seqs: [1], result: 1,
                                          attempts: 1 });

//  promise's value, or the error it rejects with, or 'pending' after ms
function settled (promise, ms = 5000) {
    return Promise.race ([promise.then ((value) => ({ value }), (error) => ({ error })),
                          sleep (ms).then (() => 'pending')]);
}

function isError (result, code, Type = ActdError) {
    assert.notEqual (result, 'pending', 'the promise never settled');
    assert.ok (result.error instanceof Type,
               `not a ${Type.name}: ${result.error ?? JSON.stringify (result.value)}`);
    assert.equal (result.error.code, code, result.error.message);
}

describe ('The client against a scripted broker', () => {
    let broker, client;

    afterEach (() => {
        client.close ();
        broker.close ();
    });

    async function setup (answer, options = {}) {
        broker = await new ScriptedBroker ().start (answer);
        client = new Client ({ endpoint: broker.endpoint, timeoutMs: 5000, ...options });
    }

    it ('a DONE whose outcome does not read rejects only its call, with bad_reply; the client goes on', async () => {
        await setup ((frames) => {
            const [, command, id] = frames.map (String);
            if (command === 'PLAN')
                return [['ACTC01', 'ACCEPTED', id, '["7","8","9"]'],
                        ['ACTC01', 'DONE', id, '7', '{not json'],
                        ['ACTC01', 'DONE', id, '8', '5'],
                        ['ACTC01', 'DONE', id, '9', OUTCOME ('9')]];
            if (command === 'CALL' && frames [3].toString () === 'bare')
                return [['ACTC01', 'ACCEPTED', id, '11'], ['ACTC01', 'DONE', id]];
            if (command === 'CALL')
                return [['ACTC01', 'ACCEPTED', id, '10'], ['ACTC01', 'DONE', id, '10', OUTCOME ('10')]];
            if (command === 'PING')
                return ['ACTC01', 'PONG', id];
        });
        const call = { _tool: 'x', _outputPath: '\u2020s.x' };
        //  A DONE without even a call id fails what its request awaits
        const bare = await settled (client.call ('bare', call));
        isError (bare, 'bad_reply');
        assert.match ((await client.call ('bare', call).catch ((error) => error)).message,
                      /without a call id/);
        const { callIds, done } = await client.submitPlan ('bad-done', [call, call, call]);
        assert.deepEqual (callIds, ['7', '8', '9']);
        isError (await settled (done [0]), 'bad_reply');
        assert.match ((await done [0].catch ((error) => error)).message, /call 7/);
        isError (await settled (done [1]), 'bad_reply');
        assert.equal ((await done [2]).call_id, '9');
        //  The receive loop goes on
        assert.equal ((await client.call ('bad-done', call)).call_id, '10');
        assert.equal (typeof await client.ping (), 'number');
    });

    it ('EVENT, HISTORY, CONTEXTS and STATUS replies that do not read reject with bad_reply', async () => {
        await setup ((frames) => {
            const [, command, id, first] = frames.map (String);
            if (command === 'WATCH')
                return ['ACTC01', 'EVENT', id, first === 'null-event'? 'null': '{bad'];
            if (command === 'HISTORY')
                return ['ACTC01', 'VALUE', id, first === 'no-seq'? '[{"type":"text"}]': '{"x":1}'];
            if (command === 'CONTEXTS')
                return ['ACTC01', 'VALUE', id, '{}'];
            if (command === 'STATUS')
                return ['ACTC01', 'VALUE', id, 'null'];
            if (command === 'UNWATCH' || command === 'PING')
                return ['ACTC01', command === 'PING'? 'PONG': 'OK', id];
        });
        const bad = async (promise) => isError (await settled (promise), 'bad_reply');
        await bad (collect (client.watch ('bad-event')));
        await bad (collect (client.watch ('null-event')));
        await bad (collect (client.history ('not-an-array')));
        await bad (collect (client.history ('no-seq')));
        await bad (collect (client.contexts ()));
        await bad (client.status ('1'));
        await bad (client.wait ('1'));
        assert.equal (typeof await client.ping (), 'number');
    });

    it ('moved naming an endpoint zeromq cannot connect to rejects with moved', async () => {
        await setup ((frames) => {
            const [, command, id] = frames.map (String);
            if (command === 'APPEND')
                return ['ACTC01', 'ERROR', id, 'moved', 'tcp://*:5555'];
            if (command === 'PING')
                return ['ACTC01', 'PONG', id];
        });
        const result = await settled (client.append ('moved-away', { type: 'text', text: 'a' }));
        isError (result, 'moved');
        assert.equal (result.error.message, 'tcp://*:5555');
        assert.deepEqual (client.endpoints, [broker.endpoint]);
        assert.equal (typeof await client.ping (), 'number');
    });

    it ('a DONE awaited for a call STATUS does not know, or whose context is deleted, rejects with NotFoundError, and the call is no longer followed', async () => {
        await setup ((frames) => {
            const [, command, id, first] = frames.map (String);
            if (command === 'CALL')
                return ['ACTC01', 'ACCEPTED', id, first === 'unknown'? '7': '8'];
            if (command === 'STATUS')
                return first === '7'? ['ACTC01', 'ERROR', id, 'not_found', 'no call 7']
                    : ['ACTC01', 'VALUE', id, JSON.stringify ({ call_id: '8', context: 'deleted',
                                                                state: 'running', attempts: 1 })];
            if (command === 'WATCH' && first === 'deleted')
                return ['ACTC01', 'EVENT', id, '{"deleted":true}'];
            if (command === 'UNWATCH')
                return ['ACTC01', 'OK', id];
        }, { statusPollMs: 100 });
        const call = { _tool: 'x', _outputPath: '\u2020s.x' };
        const unknown = client.call ('unknown', call);
        isError (await settled (unknown), 'not_found', NotFoundError);
        const deleted = client.call ('deleted', call);
        isError (await settled (deleted), 'not_found', NotFoundError);
        await until (() => broker.commands ().filter ((c) => c === 'UNWATCH').length === 2,
                     'both watches to end');
        //  No STATUS, WATCH or UNWATCH every statusPollMs from now on
        const seen = broker.received.length;
        await sleep (600);
        assert.deepEqual (broker.commands ().slice (seen), []);
        const count = (name) => broker.commands ().filter ((c) => c === name).length;
        assert.equal (count ('WATCH'), 2);
        assert.ok (count ('STATUS') <= 2, broker.commands ().join (' '));
    });

    it ('wait () whose timeout passes before STATUS answers opens no watch', async () => {
        await setup (async (frames) => {
            const [, command, id, first] = frames.map (String);
            if (command === 'STATUS') {
                await sleep (300);
                return ['ACTC01', 'VALUE', id, JSON.stringify ({ call_id: first, context: 'c9',
                                                                 state: 'queued', attempts: 0 })];
            }
            if (command === 'UNWATCH')
                return ['ACTC01', 'OK', id];
        });
        isError (await settled (client.wait ('9', { timeout: 50 })), 'timeout');
        await until (() => broker.commands ().length === 1, 'STATUS');
        await sleep (700);              //  STATUS answered at 300 ms
        assert.deepEqual (broker.commands (), ['STATUS']);
    });
});

//  Each command's verb (docs/protocol.md section 2.2), one it must not
//  take (a DONE where none may come first, for PLAN and STATS), and the
//  request that sends it
const STATUS_1 = JSON.stringify ({ call_id: '1', context: 'c', state: 'ok', attempts: 1,
                                   outcome: JSON.parse (OUTCOME ('1')) });
const VERBS = {
    PING: ['PONG', ['OK']],
    APPEND: ['OK', ['VALUE', '{"seq":5}']],
    CANCEL: ['OK', ['PONG']],
    CALL: ['ACCEPTED', ['OK', '7']],
    PLAN: ['ACCEPTED', ['DONE', '7', OUTCOME ('7')]],
    STATUS: ['VALUE', ['OK', STATUS_1]],
    RESOLVE: ['VALUE', ['OK', '1']],
    VIEW: ['VALUE', ['OK', '[]']],
    HISTORY: ['VALUE', ['OK', '[]']],
    STATS: ['VALUE', ['DONE', '1', OUTCOME ('1')]],
    TOOLS: ['VALUE', ['PONG']],
    CONTEXTS: ['VALUE', ['OK', '{"contexts":[]}']],
    DELETE: ['OK', ['VALUE', '{"messages":0,"cancelled":0}']],
    WATCH: ['EVENT', ['VALUE', '{"seq":1,"message":{"_seq":1}}']],
    UNWATCH: ['OK', ['PONG']]
};
const CALL = { _tool: 'x', _outputPath: '\u2020s.x' };
const REQUESTS = {
    PING: (client) => client.ping (),
    APPEND: (client) => client.append ('c', { type: 'text', text: 'a' }),
    CANCEL: (client) => client.cancel ('1'),
    CALL: (client) => client.call ('c', CALL),
    PLAN: (client) => client.plan ('c', [CALL]),
    STATUS: (client) => client.status ('1'),
    RESOLVE: (client) => client.resolve ('c', '\u2020s.x'),
    VIEW: (client) => client.view ('c'),
    HISTORY: (client) => collect (client.history ('c')),
    STATS: (client) => client.stats (),
    TOOLS: (client) => client.tools (),
    CONTEXTS: (client) => collect (client.contexts ()),
    DELETE: (client) => client.delete ('c'),
    WATCH: (client) => collect (client.watch ('c'))
};

describe ('The verb of a reply', () => {
    let broker, client;

    afterEach (() => {
        client.close ();
        broker.close ();
    });

    //  Nothing left waiting: no request, DONE or followed call
    function nothingPending () {
        assert.deepEqual ([...client._pending.values ()].map ((request) => request.command), []);
        assert.equal (client._waits.size, 0);
        assert.equal (client._watches.size, 0);
    }

    it ('another verb than its command\'s rejects each request with bad_reply naming both, and leaves nothing pending; request () takes any', async () => {
        broker = await new ScriptedBroker ().start ((frames) => {
            const [, command, id] = frames.map (String);
            return ['ACTC01', VERBS [command][1][0], id, ...VERBS [command][1].slice (1)];
        });
        client = new Client ({ endpoint: broker.endpoint, timeoutMs: 5000 });
        //  What each request settled with, all told at once
        const outcome = (result) => result === 'pending'? 'pending'
            : result.error? `${result.error.code}: ${result.error.message}`
            : 'resolved ' + JSON.stringify (result.value);
        const seen = {}, wanted = {};
        for (const [command, send] of Object.entries (REQUESTS)) {
            seen [command] = outcome (await settled (send (client), 2000));
            const [expected, [got]] = VERBS [command];
            wanted [command] = `bad_reply: ${got} reply to ${command}: expected ${expected}`;
        }
        seen.wait = outcome (await settled (client.wait ('1'), 2000));
        wanted.wait = wanted.STATUS;
        assert.deepEqual (seen, wanted);
        //  The watch's UNWATCH was answered (PONG) and dropped
        await until (() => broker.commands ().includes ('UNWATCH') && client._pending.size === 0,
                     'the UNWATCH answered');
        nothingPending ();
        //  A CALL answered OK is not followed as accepted call 7
        await sleep (300);
        assert.ok (!broker.commands ().some ((command, at) =>
            command === 'STATUS' && broker.received [at][3] === '7'), broker.commands ().join (' '));
        //  request (): the frames as they come, whatever the verb
        const reply = await client.request ('PING');
        assert.equal (reply.verb, 'OK');
        nothingPending ();
    });

    it ('its command\'s verb still resolves each request, and ERROR still rejects with its code', async () => {
        broker = await new ScriptedBroker ().start ((frames) => {
            const [, command, id, first, second] = frames.map (String);
            const reply = (...args) => ['ACTC01', VERBS [command][0], id, ...args];
            if (command === 'RESOLVE' && first === 'missing')
                return ['ACTC01', 'ERROR', id, 'not_found', 'no such value'];
            const answers = {
                PING: () => reply (),
                APPEND: () => reply ('{"seq":5}'),
                CANCEL: () => reply (),
                CALL: () => [reply ('7'), ['ACTC01', 'DONE', id, '7', OUTCOME ('7')]],
                PLAN: () => [reply ('["8","9"]'), ['ACTC01', 'DONE', id, '9', OUTCOME ('9')],
                             ['ACTC01', 'DONE', id, '8', OUTCOME ('8')]],
                STATUS: () => reply (STATUS_1),
                RESOLVE: () => reply ('1'),
                VIEW: () => reply ('[{"_seq":1}]'),
                HISTORY: () => reply (second === '1'? '[{"_seq":1}]': '[]'),
                STATS: () => reply ('{"calls":{}}'),
                TOOLS: () => reply ('{"x":{"workers":1}}'),
                CONTEXTS: () => reply ('{"contexts":[{"context":"c"}]}'),
                DELETE: () => reply ('{"messages":1,"cancelled":0}'),
                WATCH: () => reply ('{"seq":1,"message":{"_seq":1}}'),
                UNWATCH: () => reply ()
            };
            return answers [command] ();
        });
        client = new Client ({ endpoint: broker.endpoint, timeoutMs: 5000 });
        const first = async (iterable) => {
            for await (const item of iterable)
                return item;
        };
        assert.equal (typeof await client.ping (), 'number');
        assert.equal (await client.append ('c', { type: 'text', text: 'a' }), 5);
        assert.equal (await client.cancel ('1'), undefined);
        assert.equal ((await client.call ('c', CALL)).call_id, '7');
        assert.deepEqual ((await client.plan ('c', [CALL, CALL])).map ((outcome) => outcome.call_id),
                          ['8', '9']);
        assert.equal ((await client.status ('1')).state, 'ok');
        assert.equal ((await client.wait ('1')).call_id, '1');
        assert.equal (await client.resolve ('c', '\u2020s.x'), 1);
        isError (await settled (client.resolve ('missing', '\u2020s.x')), 'not_found', NotFoundError);
        assert.deepEqual (await client.view ('c'), [{ _seq: 1 }]);
        assert.deepEqual (await collect (client.history ('c')), [{ _seq: 1 }]);
        assert.deepEqual (await client.stats (), { calls: {} });
        assert.deepEqual (await client.tools (), { x: { workers: 1 } });
        assert.deepEqual (await collect (client.contexts ()), [{ context: 'c' }]);
        assert.deepEqual (await client.delete ('c'), { messages: 1, cancelled: 0 });
        assert.equal ((await first (client.watch ('c'))).seq, 1);
        await until (() => broker.commands ().includes ('UNWATCH') && client._pending.size === 0,
                     'the UNWATCH answered');
        nothingPending ();
    });
});

describe ('Endpoints zeromq cannot connect to', () => {
    it ('the Client constructor throws and worker.run () rejects naming the endpoint, and no socket stays open', async () => {
        const good = 'tcp://127.0.0.1:' + await freePort ();
        const script = `
            const { Client, Worker } = require (${JSON.stringify (path.resolve (__dirname, '..'))});
            const result = {};
            const caught = (error) => [error.constructor.name, error.message];
            try { new Client ('tcp://*:5555'); result.one = 'no error'; }
            catch (error) { result.one = caught (error); }
            try { new Client ({ endpoints: ['${good}', 'tcp://*:5555'] }); result.two = 'no error'; }
            catch (error) { result.two = caught (error); }
            const worker = new Worker ({ endpoints: ['${good}', 'tcp://*:5556'], heartbeatMs: 100 });
            worker.activity ('a', () => 1);
            const run = () => {
                try {
                    return worker.run ().then (() => 'resolved', (error) => ['rejected', ...caught (error)]);
                }
                catch (error) {
                    return Promise.resolve (['threw', ...caught (error)]);
                }
            };
            run ().then ((first) => {
                result.run = first;
                return run ();
            }).then ((second) => {
                result.again = second;
                console.log (JSON.stringify (result));
            });`;
        //  The process must exit by itself: a socket left open would keep it
        const output = await runProgram (process.execPath, ['-e', script], { timeout: 15000 });
        const result = JSON.parse (output);
        for (const [caught, endpoint] of [[result.one, 'tcp://*:5555'], [result.two, 'tcp://*:5555'],
                                          [result.run.slice (1), 'tcp://*:5556']]) {
            assert.equal (caught [0], 'TypeError', JSON.stringify (result));
            assert.ok (caught [1].startsWith (`cannot connect to ${endpoint}: `), caught [1]);
        }
        assert.equal (result.run [0], 'rejected');
        //  Not "already running": the failed run () left it stopped
        assert.deepEqual (result.again, result.run);
    });
});
