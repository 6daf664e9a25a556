'use strict';
//  Errors of the actd package.
//
//  ActdError: the broker answered ERROR (PROTOCOL.md section 3), or the
//  client itself gave up on a request (code "request_timeout", "closed",
//  "bad_reply": a reply it cannot read, or "disconnected": the connection
//  dropped before the reply came).
//  NotFoundError: the ERROR code was not_found (an absent value, an unknown
//  call or context).
//  ActivityError: thrown by an activity handler to answer FAIL with a code,
//  a retryable flag and details of its own.

class ActdError extends Error {
    constructor (code, message) {
        super (message);
        this.name = 'ActdError';
        this.code = code;
    }
}

class NotFoundError extends ActdError {
    constructor (message) {
        super ('not_found', message);
        this.name = 'NotFoundError';
    }
}

//  The ERROR reply's error: NotFoundError for not_found, ActdError else. A
//  moved that names no broker (a broker cut off from its store that knows
//  no other, docs/protocol.md section 12) says what that means
function errorFromReply (code, message) {
    if (code === 'moved' && !message)
        message = 'the broker no longer serves the context (cut off from its store) and named no other broker';
    return code === 'not_found'? new NotFoundError (message): new ActdError (code, message);
}

class ActivityError extends Error {
    //  options: { code, retryable, ...details }. details are sent with the
    //  FAIL and kept in the call's error object (SEMANTICS.md section 5).
    constructor (message, options = {}) {
        super (message);
        const { code, retryable, ...details } = options || {};
        this.name = 'ActivityError';
        this.code = code === undefined? 'activity_failed': String (code);
        this.retryable = retryable === undefined? true: Boolean (retryable);
        this.details = details;
    }

    //  The FAIL body: {"message", "code", "retryable", ...details}
    toJSON () {
        return { ...this.details, message: this.message, code: this.code,
                 retryable: this.retryable };
    }
}

module.exports = { ActdError, NotFoundError, ActivityError, errorFromReply };
