/*  =========================================================================
    act_http_broker - actd-http's side of ACT/1: one thread that owns one
    act_client (one DEALER, CURVE when configured) and pipelines the
    requests of every HTTP connection over it, matching replies by request
    id. HTTP threads hand it jobs and block on their job alone; the thread
    never blocks on any one request.
    ========================================================================= */

#ifndef ACT_HTTP_BROKER_H_INCLUDED
#define ACT_HTTP_BROKER_H_INCLUDED

#include "actd/act_client.h"

//  The code of what actd-http refuses because it is stopping (503): a
//  restart of actd-http, which its clients retry, not a bug (internal)
#define ACT_HTTP_E_UNAVAILABLE "unavailable"
//  Its message
#define ACT_HTTP_STOPPING "actd-http is stopping; retry shortly"

typedef struct _act_http_broker_t act_http_broker_t;
typedef struct _act_http_job_t act_http_job_t;

//  Start the thread, connected to endpoint (a list as act_client_new takes),
//  with CURVE when server_key is not NULL (certificate: this client's,
//  required then). A request made while actd is not connected is held for
//  the connection up to a second, and three quarters of request_timeout_ms
//  (the wait of act_http_broker_send's callers) at most, then answered
//  unreachable. NULL with err set when the endpoint or the keys are not
//  valid, or the certificate (its secret half) cannot be read.
act_http_broker_t *act_http_broker_new (const char *endpoint, const char *server_key,
                                        const char *certificate, int request_timeout_ms,
                                        act_err_t *err);

//  Stop the thread and null the pointer; safe on NULL. Every job must have
//  been destroyed first.
void act_http_broker_destroy (act_http_broker_t **self_p);

//  The process is stopping: end every job now open, and every job sent
//  from now on, so that no HTTP thread keeps waiting.
void act_http_broker_stop (act_http_broker_t *self);

//  True once act_http_broker_stop was called (a request left without an
//  answer then was not timed out: the process is stopping).
bool act_http_broker_stopping (act_http_broker_t *self);

//  Send command with its args (strings, up to 4, ended by NULL). Replies
//  are kept on the job until one is final: any reply when final_verb is
//  NULL, else ERROR or final_verb ("DONE" for a CALL that waits). Never
//  NULL.
act_http_job_t *act_http_broker_send (act_http_broker_t *self, const char *final_verb,
                                      const char *command, ...);

//  Watch context from from_seq (at least 1; act_client_watch's resume on
//  gaps and reconnections), its calls too when calls. Events come as
//  act_http_job_event returns them. At most max_bytes of event text and
//  max_events events wait on the job (one event alone always may): when
//  one more would pass either, it is dropped and the watch ends with busy
//  after the events waiting (its reader is too slow: it resumes after
//  the last event it took, with Last-Event-ID), so that memory is bounded.
act_http_job_t *act_http_broker_watch (act_http_broker_t *self, const char *context,
                                       uint64_t from_seq, bool calls, size_t max_bytes,
                                       size_t max_events);

//  The next reply of a sent job, waiting until deadline (zclock_mono
//  milliseconds). NULL on timeout, or when no more will come (the final
//  one was taken, or the process is stopping).
act_reply_t *act_http_job_reply (act_http_job_t *self, int64_t deadline);

//  The next event of a watch job as JSON text (the caller frees), waiting
//  until deadline. NULL on timeout (*ended false), or with *ended true when
//  the watch has ended (err set: not_found once its context was deleted,
//  or the broker's refusal).
char *act_http_job_event (act_http_job_t *self, int64_t deadline, bool *ended,
                          act_err_t *err);

//  Forget the job (a watch is closed with UNWATCH) and null the pointer;
//  safe on NULL.
void act_http_job_destroy (act_http_job_t **self_p);

//  Send, wait up to timeout_ms for the one reply and forget the job. NULL
//  on timeout.
act_reply_t *act_http_broker_ask (act_http_broker_t *self, int timeout_ms,
                                  const char *command, ...);

#endif
