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

//  Start the stream of context's events for req (the stream is written by
//  req's connection thread, which blocks between events).
enum MHD_Result act_http_sse_start (act_http_req_t *req, const char *context);

#endif
