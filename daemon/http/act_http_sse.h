/*  =========================================================================
    act_http_sse - GET /v1/contexts/{ctx}/events: a WATCH of the context as
    Server-Sent Events. Each message is "id: SEQ", "event: message",
    "data: {"seq", "message"}"; with ?all=1 each change of a call's state
    is "event: call", "data: {"call": STATUS}"; a deleted context ends the
    stream with "event: deleted". Last-Event-ID: N resumes from N + 1.
    ========================================================================= */

#ifndef ACT_HTTP_SSE_H_INCLUDED
#define ACT_HTTP_SSE_H_INCLUDED

#include "act_http_req.h"

//  A comment line ": keepalive" goes out after this long without an event
#define ACT_HTTP_SSE_KEEPALIVE_MS 15000

//  The "retry:" of every stream: an EventSource reconnects this long after
//  its stream ended (busy, or actd away when it started)
#define ACT_HTTP_SSE_RETRY_MS 2000

//  Start the stream of context's events for req (the stream is written by
//  req's connection thread, which blocks between events). When actd does
//  not answer its first request (timeout, disconnected) or answers busy,
//  the stream is still answered 200: the retry line, one event: error
//  with that code, and its end, so that an EventSource reconnects.
enum MHD_Result act_http_sse_start (act_http_req_t *req, const char *context);

#endif
