//  api.js - actd-http's JSON API as the dashboard uses it (docs/http.md).
//
//  The bearer token comes once from the page's ?token= (then removed from
//  the address bar), is kept in sessionStorage, and goes out as an
//  Authorization header; EventSource cannot set headers, so the events
//  route gets it as ?access_token=.

import { parseJson } from './util.js';

const TOKEN_KEY = 'actd-dashboard-token';

export class ApiError extends Error {
    constructor (status, code, message) {
        super (message || code || ('HTTP ' + status));
        this.status = status;           //  HTTP status (0: no answer)
        this.code = code;               //  ACT/1 error code, when given
    }
}

//  Take ?token= from the address (once) into sessionStorage
export function adoptToken () {
    const url = new URL (window.location.href);
    const token = url.searchParams.get ('token');
    if (token !== null) {
        if (token)
            sessionStorage.setItem (TOKEN_KEY, token);
        else
            sessionStorage.removeItem (TOKEN_KEY);
        url.searchParams.delete ('token');
        history.replaceState (null, '', url.pathname + url.search + url.hash);
    }
}

export function token () {
    return sessionStorage.getItem (TOKEN_KEY) || '';
}

export function setToken (value) {
    if (value)
        sessionStorage.setItem (TOKEN_KEY, value);
    else
        sessionStorage.removeItem (TOKEN_KEY);
}

function headers (extra) {
    const result = Object.assign ({ Accept: 'application/json' }, extra);
    if (token ())
        result.Authorization = 'Bearer ' + token ();
    return result;
}

//  Listeners told of 401 answers (the header shows a token field)
const authListeners = new Set ();
export function onAuthError (fn) {
    authListeners.add (fn);
}

async function request (method, path, { body, text = false, signal } = {}) {
    let response;
    try {
        response = await fetch (path, {
            method, signal, cache: 'no-store',
            headers: headers (body !== undefined ? { 'Content-Type': 'application/json' } : {}),
            body: body !== undefined ? JSON.stringify (body) : undefined
        });
    }
    catch (error) {
        if (error.name === 'AbortError')
            throw error;
        throw new ApiError (0, 'unreachable', 'actd-http did not answer: ' + error.message);
    }
    if (!response.ok) {
        let code = null;
        let message = response.statusText;
        try {
            const problem = await response.json ();
            code = problem.error?.code ?? null;
            message = problem.error?.message ?? message;
        }
        catch {
            //  Not JSON: keep the status text
        }
        if (response.status === 401)
            for (const fn of authListeners)
                fn (response.status, message);
        throw new ApiError (response.status, code, message);
    }
    return text ? response.text () : parseJson (await response.text ());
}

//  The header light for a failed request: auth (401: a token is needed),
//  denied (403: this token may not), or down
export function statusOf (problem) {
    return problem.status === 401 ? 'auth' : problem.status === 403 ? 'denied' : 'down';
}

const seg = encodeURIComponent;

//  The route of a context's action ('history', 'view', ...): in the path,
//  but for the ids "." and "..", which a browser would remove from a path
//  as dot segments (even percent-encoded): those go in ?context=
//  (docs/http.md). query: URLSearchParams of the route's own arguments.
function contextRoute (ctx, action, query = new URLSearchParams ()) {
    if (ctx !== '.' && ctx !== '..')
        return `/v1/contexts/${seg (ctx)}/${action}${query.size ? '?' + query : ''}`;
    query.set ('context', ctx);
    return `/v1/context/${action}?${query}`;
}

export const api = {
    stats: (signal) => request ('GET', '/v1/stats', { signal }),
    contexts: (prefix, after, limit = 100) => {
        const query = new URLSearchParams ({ prefix: prefix || '', limit: String (limit) });
        if (after)
            query.set ('after', after);
        return request ('GET', '/v1/contexts?' + query);
    },
    history: (ctx, from, limit) =>
        request ('GET', contextRoute (ctx, 'history',
                                      new URLSearchParams ({ from: String (from), limit: String (limit) }))),
    viewText: (ctx) => request ('GET', contextRoute (ctx, 'view', new URLSearchParams ({ format: 'text' })),
                                { text: true }),
    status: (callId) => request ('GET', `/v1/calls/${seg (callId)}`),
    cancel: (callId) => request ('POST', `/v1/calls/${seg (callId)}/cancel`, { body: {} })
};

//  The URL of a context's event stream (SSE), the token in the query
export function eventsUrl (ctx, from) {
    const query = new URLSearchParams ({ all: '1', from: String (from) });
    if (token ())
        query.set ('access_token', token ());
    return contextRoute (ctx, 'events', query);
}
