'use strict';
//  actd: Node.js worker and client for the actd broker (ACT/1).
//  Types: index.d.ts. Protocol: PROTOCOL.md; data semantics: SEMANTICS.md.

const { Worker, Task, Branch, branch } = require ('./lib/worker');
const { Client } = require ('./lib/client');
const { ActdError, NotFoundError, ActivityError } = require ('./lib/errors');

//  PROTOCOL.md section 5
const DEFAULTS = Object.freeze ({
    clientEndpoint: 'tcp://127.0.0.1:5555',
    workerEndpoint: 'tcp://127.0.0.1:5556',
    heartbeatMs: 1000,
    liveness: 3
});

module.exports = {
    Worker, Task, Branch, branch, Client, ActdError, NotFoundError, ActivityError, DEFAULTS
};
