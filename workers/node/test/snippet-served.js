'use strict';
//  Preloaded (node --require) into each README snippet readme.test.js runs:
//  appends "run" to $ACTD_SNIPPET_LOG when the snippet starts a Worker, and
//  the activity's name for every task one of its handlers settled, so the
//  test knows which snippets are workers and that they served calls.

const fs = require ('node:fs');
const { Worker } = require ('..');

const log = (line) => fs.appendFileSync (process.env.ACTD_SNIPPET_LOG, line + '\n');
const run = Worker.prototype.run;
Worker.prototype.run = function () {
    log ('run');
    this.on ('done', (task) => log ('served ' + task.activity));
    return run.call (this);
};
