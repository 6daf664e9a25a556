/*  =========================================================================
    act_client - a C client of actd (PROTOCOL.md section 1).

    One DEALER socket; requests may be pipelined: act_client_send returns
    at once and replies are matched by request id. The synchronous calls
    (act_client_call, _append, _resolve, ...) wait for their own reply and
    keep any other reply that arrives meanwhile for act_client_recv.

    Not thread-safe: use one client per thread.
    ========================================================================= */

#ifndef ACT_CLIENT_H_INCLUDED
#define ACT_CLIENT_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include "act_err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _act_client_t act_client_t;

//  One reply from the broker
typedef struct {
    char *verb;                 //  ACCEPTED, DONE, OK, VALUE, PONG or ERROR
    char *request;              //  The request id it answers
    zmsg_t *args;               //  The frames after the request id
} act_reply_t;

//  Default client endpoint (PROTOCOL.md section 5)
#define ACT_CLIENT_ENDPOINT "tcp://127.0.0.1:5555"

//  Connect to the broker at endpoint. Returns NULL if the endpoint is not
//  valid. Connecting is asynchronous: nothing waits for the broker.
act_client_t *act_client_new (const char *endpoint);

//  Close the connection and null the pointer; safe on NULL.
void act_client_destroy (act_client_t **self_p);

//  How long a synchronous request waits for its reply (default 30 000 ms).
void act_client_set_timeout (act_client_t *self, int timeout_ms);

//  Use CURVE: the broker's public key and this client's certificate (see
//  actctl keygen). Call before the first request. Returns 0 or -1.
int act_client_set_curve (act_client_t *self, const char *server_public,
                          const char *certificate_file);

//  Send a request without waiting: command, then args (strings, ended by
//  NULL). Writes the request id into request (at least 24 bytes). Returns
//  0. A request that cannot be queued (a broker that refused this client's
//  CURVE key) is treated as one the broker did not answer: waiting for it
//  times out, or it goes to another broker.
int act_client_send (act_client_t *self, char *request, const char *command, ...);

//  The next reply not yet taken, waiting up to timeout_ms (-1: forever).
//  Returns NULL on timeout.
act_reply_t *act_client_recv (act_client_t *self, int timeout_ms);

//  The reply to request (with verb, if not NULL), waiting up to the
//  client's timeout; other replies are kept. NULL on timeout.
act_reply_t *act_client_wait (act_client_t *self, const char *request, const char *verb);

//  Destroy a reply and null the pointer; safe on NULL.
void act_reply_destroy (act_reply_t **self_p);

//  Frame index (0 = first after the request id) of a reply as a string
//  the caller frees, or NULL.
char *act_reply_arg (act_reply_t *self, size_t index);

//  CALL: submit call (JSON text) in context. Sets *call_id (caller frees).
//  With wait and an _outputPath, waits for DONE and sets *outcome (a new
//  reference). Returns 0, or -1 with err set: the broker's ERROR code and
//  message, or "timeout".
int act_client_call (act_client_t *self, const char *context, const char *call,
                     bool wait, char **call_id, json_t **outcome, act_err_t *err);

//  PLAN: submit an array of calls (JSON text). Sets *ids (a new array of
//  call ids); with wait, waits for every DONE and sets *outcomes (an
//  object: call id -> outcome). Returns 0 or -1 with err set.
int act_client_plan (act_client_t *self, const char *context, const char *calls,
                     bool wait, json_t **ids, json_t **outcomes, act_err_t *err);

//  APPEND: append message (JSON text). Sets *seq. Returns 0 or -1.
int act_client_append (act_client_t *self, const char *context, const char *message,
                       uint64_t *seq, act_err_t *err);

//  RESOLVE: the value of expression (in instance, or NULL). Returns a new
//  reference, or NULL with err set (not_found when absent).
json_t *act_client_resolve (act_client_t *self, const char *context,
                            const char *expression, const char *instance,
                            act_err_t *err);

//  VIEW as JSON (a new reference), or NULL with err set.
json_t *act_client_view (act_client_t *self, const char *context, act_err_t *err);

//  VIEW as text (the caller frees), or NULL with err set.
char *act_client_view_text (act_client_t *self, const char *context, act_err_t *err);

//  HISTORY: up to limit messages with _seq >= from. A new array, or NULL.
json_t *act_client_history (act_client_t *self, const char *context, uint64_t from,
                            size_t limit, act_err_t *err);

//  STATUS of a call. A new object, or NULL with err set.
json_t *act_client_status (act_client_t *self, const char *call_id, act_err_t *err);

//  CANCEL a call. Returns 0 or -1 with err set.
int act_client_cancel (act_client_t *self, const char *call_id, act_err_t *err);

//  STATS. A new object, or NULL with err set.
json_t *act_client_stats (act_client_t *self, act_err_t *err);

//  PING. Returns 0 when PONG came, or -1 with err set.
int act_client_ping (act_client_t *self, act_err_t *err);

#ifdef __cplusplus
}
#endif

#endif
