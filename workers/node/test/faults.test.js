'use strict';
//  The client against a scripted broker that misbehaves: replies it cannot
//  read reject only the request (or the call) they answer, with code
//  bad_reply, and the client goes on; a moved naming an endpoint zeromq
//  cannot connect to rejects with moved; a call STATUS does not know
//  rejects its DONE with NotFoundError and is no longer followed; wait ()
//  that times out before STATUS answers opens no watch. And endpoints
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
            if (command === 'CALL')
                return [['ACTC01', 'ACCEPTED', id, '10'], ['ACTC01', 'DONE', id, '10', OUTCOME ('10')]];
            if (command === 'PING')
                return ['ACTC01', 'PONG', id];
        });
        const call = { _tool: 'x', _outputPath: '\u2020s.x' };
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
