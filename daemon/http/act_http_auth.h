/*  =========================================================================
    act_http_auth - bearer tokens: each configured token has its own
    connection to actd (act_http_broker_t), with that token's CURVE
    client certificate, so that actd itself enforces the tenant of that
    key. With no token configured, every request uses one connection (the
    configured certificate, or plain TCP) and no token is asked for.
    ========================================================================= */

#ifndef ACT_HTTP_AUTH_H_INCLUDED
#define ACT_HTTP_AUTH_H_INCLUDED

#include "act_http_broker.h"
#include "act_http_config.h"

typedef struct _act_http_auth_t act_http_auth_t;

//  Connect to actd once per token (and once for requests without one).
//  NULL with err set when a connection cannot be made (a bad endpoint,
//  key or certificate).
act_http_auth_t *act_http_auth_new (const act_http_config_t *config, act_err_t *err);

//  Close every connection and null the pointer; safe on NULL.
void act_http_auth_destroy (act_http_auth_t **self_p);

//  The connection for a request whose Authorization header is header
//  ("Bearer TOKEN", or NULL) and whose access_token argument is
//  access_token (or NULL): NULL when tokens are configured and the
//  request has none of them.
act_http_broker_t *act_http_auth_broker (act_http_auth_t *self, const char *header,
                                         const char *access_token);

//  End every job of every connection (the process is stopping).
void act_http_auth_stop (act_http_auth_t *self);

#endif
