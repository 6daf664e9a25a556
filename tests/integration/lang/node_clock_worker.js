#!/usr/bin/env node
//  The Node.js worker of test_node_clock.py: the actd package of
//  workers/node, run with tests/helpers/clockshift.so preloaded, so that
//  the test steps its wall clock (Date.now ()) while it runs a task.
//  Serves:
//    slow: {ms} -> {attempt, wall, remaining, deadlineMs} after ms (a timer
//          of the event loop, which runs on the monotonic clock): wall is
//          Date.now () at the end (the stepped clock), remaining
//          task.remaining ()
//  Prints "READY #n" at each READY and "disconnect: reason" at each
//  disconnect on stdout.
//
//  node node_clock_worker.js ENDPOINT HEARTBEAT_MS
'use strict';
const path = require ('node:path');
const { Worker } = require (path.join (__dirname, '..', '..', '..', 'workers', 'node'));

const worker = new Worker ({
    endpoint: process.argv [2],
    heartbeatMs: Number (process.argv [3]),
    liveness: 3,
    name: 'clock-node-worker'
});

worker.activity ('slow', async ({ ms }, task) => {
    await new Promise ((resolve) => setTimeout (resolve, ms));
    return { attempt: task.attempt, wall: Date.now (), remaining: task.remaining (),
             deadlineMs: task.deadlineMs };
});

worker.on ('ready', ({ connections }) => console.log (`READY #${connections}`));
worker.on ('disconnect', (reason) => console.log (`disconnect: ${reason}`));
worker.on ('warning', (error) => console.log (`warning: ${error.message}`));

process.on ('SIGTERM', () => worker.stop ());

worker.run ().then (() => console.log ('stopped'));
