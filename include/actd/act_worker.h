/*  =========================================================================
    act_worker - a C worker for actd (PROTOCOL.md section 2).

    The worker serves activities with handlers. Its loop (CZMQ zloop) owns
    the socket: it heartbeats whatever the handlers do, and connects anew
    (with a new socket, then READY) when the broker says DISCONNECT or goes
    silent; after a DISCONNECT that refused its READY, only after a wait
    that doubles from 100 ms to 5 s, the reason logged (zsys). A handler
    runs in the loop's thread and answers its task either before it
    returns or later, from the same thread: from a file
    descriptor watched with act_worker_watch (a child's pipe, say) or a
    timer. Work that blocks must not run in a handler: the loop would stop
    heartbeating and the broker would declare the worker lost.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_WORKER_H_INCLUDED
#define ACT_WORKER_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _act_worker_t act_worker_t;
typedef struct _act_task_t act_task_t;

//  Default worker endpoint (PROTOCOL.md section 5)
#define ACT_WORKER_ENDPOINT "tcp://127.0.0.1:5556"

//  What the broker accepts in READY (PROTOCOL.md section 2.1): checked
//  when set, so that a worker the broker would refuse fails at once
#define ACT_WORKER_MAX_NAME     256     //  Bytes of the worker's name
#define ACT_WORKER_MAX_LANG     64      //  Bytes of its language
#define ACT_WORKER_MAX_CAPACITY 100000  //  Tasks at once

//  Serves one task; answers it now or later (see above)
typedef void (act_worker_fn) (act_task_t *task, void *arg);
//  A watched descriptor is readable; return -1 to stop watching it
typedef int (act_worker_fd_fn) (act_worker_t *worker, int fd, void *arg);
//  A timer fired (once)
typedef void (act_worker_timer_fn) (act_worker_t *worker, void *arg);
//  The broker cancelled the task (it is still to be answered, to free its slot)
typedef void (act_task_cancel_fn) (act_task_t *task, void *arg);

//  A worker connecting to endpoint (several: "tcp://a:5556,tcp://b:5556"),
//  called name in the broker's STATS. With endpoint NULL, the environment
//  decides: the endpoints of $ACTD_WORKER_ENDPOINT (else
//  ACT_WORKER_ENDPOINT), and CURVE when $ACTD_SERVER_KEY and $ACTD_CERT
//  (this worker's certificate file) are set; NULL if only one of the two
//  is set, $ACTD_SERVER_KEY is not a CURVE public key or the certificate
//  does not load; NULL too when name is empty or longer than
//  ACT_WORKER_MAX_NAME bytes.
act_worker_t *act_worker_new (const char *endpoint, const char *name);

//  Destroy the worker and null the pointer; safe on NULL.
void act_worker_destroy (act_worker_t **self_p);

//  Serve activity with handler. Call before act_worker_run. Returns 0, or
//  -1 when activity is empty or longer than 256 bytes (ACT_MAX_TOOL).
//  A TASK the worker cannot read never reaches a handler: one of other
//  than 4 frames, params or meta that do not parse, or a meta field of the
//  wrong type (attempt, branches, deadline_ms, instance) is answered FAIL
//  bad_task, not retryable; one for an activity not served, FAIL
//  unknown_activity, retryable (as the Python and Node libraries answer).
int act_worker_serve (act_worker_t *self, const char *activity,
                      act_worker_fn *handler, void *arg);

//  Declare the tool of activity (PROTOCOL.md section 2.1), sent in READY:
//  a description for models (or NULL), the JSON Schema of its parameters
//  as JSON text (or NULL: any), and its output path, prescribed
//  (output_const) or constrained (output_pattern, a regular expression
//  the whole _outputPath must match), or neither (NULL, NULL). The
//  broker checks every call against it. Call after act_worker_serve for
//  that activity and before act_worker_run; a second declaration
//  replaces the first. Returns 0, or -1 when the activity is not served,
//  the schema is not JSON or not a schema actd implements, output_const
//  is not an output path, output_pattern is not a regular expression actd
//  compiles, or both output forms are given (what the broker would refuse
//  at READY, refusing this worker again and again).
int act_worker_declare (act_worker_t *self, const char *activity, const char *description,
                        const char *params_schema, const char *output_const,
                        const char *output_pattern);

//  Tasks the broker may give at once (default 1). Returns 0, or -1 (and
//  nothing changed) outside 1 to ACT_WORKER_MAX_CAPACITY, which the broker
//  would refuse at READY.
int act_worker_set_capacity (act_worker_t *self, size_t capacity);

//  actd's server/max_message_bytes, the largest RESULT, PROGRESS or FAIL
//  body this worker sends (default ACT_WORKER_MAX_MESSAGE_BYTES, actd's
//  default): set it to actd's when actd's is raised. A result over it is
//  not sent: the task fails activity_failed, not retryable, "the result is
//  N bytes, over max_message_bytes (M)" (a fire-and-forget task's, which
//  actd throws away, is sent as null). actd would fail that attempt
//  itself, but a frame over 4 x max_message_bytes + 65536 it does not
//  read: the connection drops, and every task running on this worker
//  fails with it. Returns 0, or -1 (nothing changed) for 0.
int act_worker_set_max_message_bytes (act_worker_t *self, size_t bytes);
#define ACT_WORKER_MAX_MESSAGE_BYTES 1048576

//  Heartbeat interval and liveness (defaults 1000 ms and 3), as the broker's.
void act_worker_set_heartbeat (act_worker_t *self, int heartbeat_ms, int liveness);

//  The language shown in STATS (default "c"). Returns 0, or -1 (and nothing
//  changed) unless 1 to ACT_WORKER_MAX_LANG bytes.
int act_worker_set_lang (act_worker_t *self, const char *lang);

//  Use CURVE: the broker's public key and this worker's certificate file.
//  Returns 0; -2 (nothing changed) if server_public is not a CURVE public
//  key (40 characters of Z85 that decode); -1 if the file does not load,
//  errno set (read as act_client_set_curve reads it: never blocking, only
//  a regular file of at most 64 KiB, with both keys).
int act_worker_set_curve (act_worker_t *self, const char *server_public,
                          const char *certificate_file);

//  Watch fd in the worker's loop. Returns 0 or -1.
int act_worker_watch (act_worker_t *self, int fd, act_worker_fd_fn *fn, void *arg);

//  Stop watching fd.
void act_worker_unwatch (act_worker_t *self, int fd);

//  Call fn once after delay_ms. Returns a timer id for act_worker_cancel_timer.
int act_worker_timer (act_worker_t *self, int delay_ms, act_worker_timer_fn *fn, void *arg);
void act_worker_cancel_timer (act_worker_t *self, int timer_id);

//  Connect to every broker of the endpoint list and say READY, as
//  act_worker_run does first when it was not done. Returns 0, or -1 with
//  errno set when ZeroMQ refuses an endpoint ("foo", "tcp://",
//  "tcp://host:x"; a host name that does not resolve is only tried again
//  and again), logged by zsys with the endpoint and the reason; then
//  nothing was sent and act_worker_run returns -1 at once.
int act_worker_connect (act_worker_t *self);

//  Serve until act_worker_stop, SIGINT or SIGTERM, and then until no task
//  runs or the grace is over (act_worker_set_grace), before DISCONNECT.
//  Returns 0, or -1 when no activity is served or ZeroMQ refuses an
//  endpoint (act_worker_connect).
int act_worker_run (act_worker_t *self);

//  How long, at a stop, running tasks may go on to their answers (default
//  ACT_WORKER_GRACE_MS; 0: none). Meanwhile the worker heartbeats and
//  answers as before, and runs the TASKs the broker still sends while it
//  sees a free slot (until DISCONNECT); act_worker_run returns once no
//  task runs, or when the grace is over. A task cut short there fails
//  worker_lost at the broker and runs again elsewhere, an attempt spent
//  (act_task_cancelled is then true; an answer to it is no longer read).
//  Set it below what stops the program for good (systemd's
//  TimeoutStopSec).
void act_worker_set_grace (act_worker_t *self, int grace_ms);
#define ACT_WORKER_GRACE_MS 5000

//  Send HEARTBEAT to every broker now (once connected), before work that
//  holds the loop for a while (the broker declares a worker lost after
//  heartbeat_ms * liveness of silence).
void act_worker_heartbeat (act_worker_t *self);

//  The number of brokers in the endpoint list: each gives up to the
//  capacity in tasks, so up to that many times capacity run at once.
size_t act_worker_brokers (act_worker_t *self);

//  Ask act_worker_run to return (from a handler or a watch), once the
//  tasks running have answered or the grace is over: a handler that stops
//  the worker and answers its own task has its answer sent.
void act_worker_stop (act_worker_t *self);

//  The task's fields (borrowed; valid until the task is answered)
const char *act_task_id (act_task_t *self);
const char *act_task_activity (act_task_t *self);
json_t *act_task_params (act_task_t *self);
json_t *act_task_meta (act_task_t *self);
const char *act_task_context (act_task_t *self);
const char *act_task_call_id (act_task_t *self);
const char *act_task_instance (act_task_t *self);    //  NULL when global
const char *act_task_trace (act_task_t *self);       //  _trace (traceparent), or NULL
long long act_task_deadline_ms (act_task_t *self);
long long act_task_attempt (act_task_t *self);
long long act_task_branches (act_task_t *self);
bool act_task_discard (act_task_t *self);
bool act_task_cancelled (act_task_t *self);
act_worker_t *act_task_worker (act_task_t *self);

//  Call fn when the broker cancels the task.
void act_task_on_cancel (act_task_t *self, act_task_cancel_fn *fn, void *arg);

//  Answer with result on branch (0 when the output path has one
//  alternative). Frees the task. A result over the worker's
//  max_message_bytes fails the task instead (act_worker_set_max_message_bytes).
//  Returns 0, or -1 if it could not be sent (an answer to a task whose
//  connection has since been replaced is dropped, as the broker gave the
//  task to someone else: 0).
int act_task_result (act_task_t *self, const json_t *result, int branch);

//  The same with the result already serialized: size bytes of text, sent
//  as they are, with no second serialization (for large results). The
//  caller has checked that text is one JSON text actd accepts (act_scan,
//  act_json_parse); the broker fails the attempt when it is not.
int act_task_result_text (act_task_t *self, const char *text, size_t size, int branch);

//  A failure whose body would be over the worker's max_message_bytes
//  (ACT_WORKER_MAX_FAIL, actd's default, unless set; past it actd reads
//  the body as none at all: a retryable activity_failed, its code and
//  message lost) is sent as its code and retryable, its message cut to
//  its first ACT_WORKER_MAX_FAIL_MESSAGE bytes, or half of
//  max_message_bytes when that is less (at a UTF-8 character's start),
//  and followed by "... (cut: the failure was N bytes)"
#define ACT_WORKER_MAX_FAIL         1048576
#define ACT_WORKER_MAX_FAIL_MESSAGE 65536

//  Answer with a failure (code may be NULL; message UTF-8, cut as said
//  above when the failure is over max_message_bytes; a byte of code or
//  message that is not part of well-formed UTF-8 is sent as '?'). Frees
//  the task.
int act_task_fail (act_task_t *self, const char *code, const char *message, bool retryable);

//  Report progress (kept with the call; shown by STATUS); a byte of a
//  string or key that is not part of well-formed UTF-8 is sent as '?'.
//  Returns 0, or -1 if it could not be sent (details NULL, or over the
//  worker's max_message_bytes: nothing sent).
int act_task_progress (act_task_t *self, const json_t *details);

#ifdef __cplusplus
}
#endif

#endif
