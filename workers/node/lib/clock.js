'use strict';
//  The clock the library times with: every interval, deadline, timeout,
//  liveness and expiry is measured on now (), a monotonic clock, never on
//  Date.now (). The wall clock steps (NTP, a VM resumed, the date set by
//  hand): a step back stopped a worker's heartbeats (actd declared it dead
//  and ran its task again), a step forward made it drop its broker as
//  silent. Date stays for dates shown to a person.
//
//  Used as clock.now () (not destructured), so that a test can move it.

const { performance } = require ('node:perf_hooks');

//  Whole milliseconds since the process started: never goes back, and
//  does not move when the wall clock is set
function now () {
    return Math.floor (performance.now ());
}

module.exports = { now };
