'use strict';
//  A TASK's frames as the worker reads them, and the JSON bodies of its
//  answers (RESULT, FAIL, PROGRESS) as actd takes them: no lone
//  surrogate, a failure cut to fit maxMessageBytes (./worker.js).

//  The most bytes of a failure's message sent when the failure is over
//  maxMessageBytes (at most half of it): see MAX_MESSAGE_BYTES in ./worker.js
const MAX_FAIL_MESSAGE = 65536;

//  JSON text of a value; undefined (a handler that returns nothing) is null
function s_json (value) {
    const text = JSON.stringify (value === undefined? null: value);
    return text === undefined? 'null': text;
}

//  Each escape of JSON text, a lone surrogate's (\udxxx) or another's
const ESCAPE = /\\(?:ud[89a-f][0-9a-f]{2}|.)/g;

//  A lone surrogate's escape: not after a '\', after an even run of
//  "\\" (escaped backslashes). One pattern replaced, no function called
//  per escape: a FAIL of a million lone surrogates took 180 ms of the
//  event loop, now 47 ms (a loaded machine's worker missed heartbeats)
const LONE = /(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/g;

//  JSON text with each lone surrogate (a \uD800-\uDFFF code unit without
//  its pair: a Buffer decoded wrongly, a string cut inside a pair) written
//  '?', in keys and values alike, as the Python and C workers send what
//  UTF-8 cannot carry. JSON.stringify writes such a character as the
//  escape \udxxx (lowercase, ECMA-262's QuoteJSONString), which actd
//  refuses: it read such a FAIL as {}, retried as activity_failed. Every
//  '\' of the text starts an escape, so scanning them in order never takes
//  an escaped '\' followed by "ud800" for one.
function s_well_formed (text) {
    return text.includes ('\\ud')? text.replace (LONE, '$1?'): text;
}

//  JSON text of a result; throws for one holding a lone surrogate (the
//  escape \udxxx, which actd refuses), data not to send with '?': named,
//  as the Python worker names it
function s_result_json (value) {
    const text = s_json (value);
    if (text.includes ('\\ud'))
        for (const [escape] of text.matchAll (ESCAPE))
            if (escape.length > 2)
                throw new Error (`it holds a lone surrogate (${escape}), which UTF-8 cannot carry`);
    return text;
}

//  The FAIL body, JSON text over limit (maxMessageBytes), as its code,
//  retryable and its message cut to MAX_FAIL_MESSAGE bytes or half the
//  limit, details left out: actd reads a FAIL over its max_message_bytes
//  as {}, retried as activity_failed
function s_cut_failure (text, limit) {
    const { message, code, retryable } = JSON.parse (text);
    const bytes = Buffer.from (String (message ?? ''), 'utf8')
        .subarray (0, Math.min (MAX_FAIL_MESSAGE, Math.floor (limit / 2)));
    //  A character cut in two decodes as U+FFFD: drop it
    const cut = bytes.toString ('utf8').replace (/\uFFFD$/, '');
    return JSON.stringify ({
        message: `${cut}... (cut: the failure was ${Buffer.byteLength (text)} bytes)`,
        code: code || 'activity_failed', retryable: retryable !== false });
}

//  The frames after the task id of a TASK, [activity, params, meta], or
//  throws saying why they do not read: other than 4 frames, params or meta
//  not JSON, a meta not an object or a field of it of the wrong type
function s_task (args) {
    if (args.length !== 4)
        throw new Error (`a TASK of ${args.length} frames, not 4 (task id, activity, params, meta)`);
    try {
        const params = JSON.parse (args [2].toString ());
        return [args [1].toString (), params, s_meta (JSON.parse (args [3].toString ()))];
    }
    catch (error) {
        throw new Error ('the task does not parse: ' + error.message);
    }
}

//  The TASK meta, checked as the Python worker checks it (a field absent
//  is its default): an object; attempt and branches integers; deadline_ms
//  an integer or null; instance a string or null. Throws naming the first
//  field that is not. context and call_id are read as strings.
function s_meta (meta) {
    if (!meta || typeof meta !== 'object' || Array.isArray (meta))
        throw new Error ('the meta is not an object');
    for (const key of ['attempt', 'deadline_ms', 'branches']) {
        const value = meta [key];
        if (value !== undefined && !(value === null && key === 'deadline_ms')
            && !Number.isInteger (value))
            throw new Error (`${key} is not an integer: ${JSON.stringify (value)}`);
    }
    const instance = meta.instance;
    if (instance !== undefined && instance !== null && typeof instance !== 'string')
        throw new Error ('instance is not a string: ' + JSON.stringify (instance));
    return meta;
}

//  The message of a value a handler threw, never throwing itself: a value
//  String () cannot convert (Object.create (null), a toString that throws)
//  or a message getter that throws gives a fixed text
function s_message (thrown) {
    try {
        const message = thrown instanceof Error? thrown.message: String (thrown);
        if (message !== undefined && message !== null && String (message).length)
            return String (message);
    }
    catch (problem) {
        return 'the activity failed (what it threw cannot be read as text)';
    }
    return 'the activity failed';
}

module.exports = { taskArgs: s_task, jsonText: s_json, wellFormed: s_well_formed,
                   resultJson: s_result_json, cutFailure: s_cut_failure,
                   thrownMessage: s_message, MAX_FAIL_MESSAGE };
