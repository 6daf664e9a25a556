/*  =========================================================================
    act_http_server - actd-http's HTTP side on libmicrohttpd: connections,
    bodies, Host and Origin (what a browser may reach: docs/http.md,
    "Browsers: Origin and Host"), tokens, and which module answers which
    path (the JSON API, the event streams, /metrics, /healthz, the
    dashboard's static files).

    Threads: libmicrohttpd runs one thread per connection (up to
    connection_limit). A route blocks its thread while it waits for actd:
    an event stream blocks between events, ?wait=1 until the call ends.
    The ACT/1 side is not one connection per thread: every thread hands
    its requests to the one broker thread of its token (act_http_broker),
    which pipelines them all on one DEALER, so many HTTP requests are in
    flight on one connection to actd at once.
    ========================================================================= */

#ifndef ACT_HTTP_SERVER_H_INCLUDED
#define ACT_HTTP_SERVER_H_INCLUDED

#include "act_http_config.h"
#include "act_http_auth.h"

typedef struct _act_http_server_t act_http_server_t;

//  Listen as config says, answering through auth's connections. NULL
//  (logged) when the address cannot be bound.
act_http_server_t *act_http_server_new (const act_http_config_t *config,
                                        act_http_auth_t *auth);

//  Stop accepting connections (those open go on).
void act_http_server_quiesce (act_http_server_t *self);

//  Give open connections a moment to finish (2 s at most), then close them,
//  wait for their threads and null the pointer; safe on NULL. Call
//  act_http_auth_stop first, so that no thread waits for actd.
void act_http_server_destroy (act_http_server_t **self_p);

//  The port it listens on (the one the system chose for port 0).
int act_http_server_port (act_http_server_t *self);

#endif
