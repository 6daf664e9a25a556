/*  =========================================================================
    act_pool - activities and the workers that serve them.

    An activity is a tool name with its queue of calls ready for a worker
    (first in, first out; retries at the front) and the workers serving
    it. A worker is a peer on the worker socket that sent READY: its
    protocol (ACT/1 or Majordomo), capacity and the tasks it holds. The
    pool picks the worker for an activity's next call and speaks each
    worker's protocol when the broker sends it something.
    ========================================================================= */

#ifndef ACT_POOL_H_INCLUDED
#define ACT_POOL_H_INCLUDED

#include "act_settings.h"
#include "act_outbox.h"
#include "act_hist.h"

typedef struct _act_pool_t act_pool_t;

//  The protocol a worker speaks
typedef enum {
    ACT_PROTO_ACTW,             //  ACT/1 (PROTOCOL.md section 2)
    ACT_PROTO_MDP1,             //  Majordomo 7/MDP (MDPW01)
    ACT_PROTO_MDP2              //  Majordomo 18/MDP (MDPW02)
} act_proto_t;

//  The statuses a call ends with, in STATS order: ok, error, timeout,
//  skipped, cancelled
#define ACT_POOL_OUTCOMES 5
extern const char *act_pool_outcome_names [ACT_POOL_OUTCOMES];

typedef struct {
    char *name;                 //  Activity (tool) name
    zlistx_t *queue;            //  Calls ready for a worker, FIFO (owner's)
    zlistx_t *workers;          //  act_worker_t serving it
    size_t backlog;             //  Calls waiting or queued, for max_queue
    size_t queued;              //  Calls queued (STATS)
    size_t running;             //  Calls running
    uint64_t done;              //  Calls ended since start
    uint64_t outcomes [ACT_POOL_OUTCOMES];  //  Of those, per status (act_pool_outcome_names)
    act_hist_t queue_ms;        //  Wait in the queue before each dispatch
    act_hist_t run_ms;          //  Each attempt, dispatch to its end
    act_hist_t total_ms;        //  Each call, accepted to ended
    long long run_us;           //  Its attempts' recent time, dispatch to end,
                                //  in us (1/4 the last, 3/4 those before);
                                //  0 until one has ended
    const act_activity_settings_t *settings;    //  Its limits
    bool served;                //  A READY named it since it was made: the
                                //  tools registry knows it, and only the
                                //  idle bound forgets it (act_pool_idle)
    void *idle;                 //  Its handle among the idle activities
                                //  (act_pool_idle), or NULL
    bool unserved;              //  Counted among the unserved activities
                                //  in use (act_pool_admit)
} act_activity_t;

//  Room for a task id, "<call>.<attempt>", and its NUL
#define ACT_TASK_ID_SIZE 48

typedef struct {
    char *key;                  //  Routing id in hex (key in the pool)
    zframe_t *identity;         //  Routing id
    act_proto_t protocol;       //  What it speaks
    bool envelope;              //  It puts an empty frame before its header
                                //  (a REQ-style envelope); it gets one back
    char *name;                 //  Name it gave, or its routing id
    char *lang;                 //  Language it gave, or ""
    size_t capacity;            //  Tasks it may hold at once
    zhashx_t *tasks;            //  Task ids it holds (answered or not)
    zlistx_t *activities;       //  act_activity_t it serves
    size_t cursor;              //  Round robin over its activities
    long long heard;            //  Last message from it
    long long sent;             //  Last message to it
    long long used;             //  Last dispatch to it
    char *user;                 //  Its CURVE key (Z85), or NULL
    const zlistx_t *patterns;   //  Activities its key may serve (fnmatch;
                                //  security's, renewed on reload), NULL: any
    json_t *tools;              //  The tools its READY declared; NULL: none
    uint64_t joined;            //  Its READY's place among all READYs (from 1)
    uint64_t first_call;        //  Lowest and highest call numbers of the
    uint64_t last_call;         //  tasks it was given (none: UINT64_MAX, 0)
    uint64_t last_attempt;      //  Highest attempt number it was given
    act_held_t *held;           //  Bytes of its tasks libzmq holds
    size_t max_held;            //  Past them it gets no more tasks
                                //  (server/max_worker_bytes when it joined)
    bool throttled;             //  Refused a task for them: its next
                                //  message, or the next heartbeat round,
                                //  looks again (act_worker_unthrottle)
} act_worker_t;

//  An empty pool taking per-activity limits from settings (borrowed).
act_pool_t *act_pool_new (act_settings_t *settings);

//  Destroy the pool, its activities and workers; null the pointer.
void act_pool_destroy (act_pool_t **self_p);

//  The activity named name, made if it is new.
act_activity_t *act_pool_activity (act_pool_t *self, const char *name);

//  Forget activities nothing refers to (no worker, call, history, nor a
//  READY that named it): a refused call may have named one never seen,
//  and a refused request changes nothing.
void act_pool_prune (act_pool_t *self);

//  A call of activity just ended (act_pool_detach does the same for the
//  activities of a worker that leaves). Of the activities idle, with no
//  worker and no call left, at most ACT_POOL_IDLE_KEPT are kept: past
//  them, the one idle the longest is forgotten with its counts (STATS),
//  and the forget hook told (the tools registry drops its name and tool).
//  Calls may name any number of activities nobody serves, and workers
//  that come and go any number of activities in their READY: each would
//  be kept until actd stops. An activity configured in the settings file
//  is forgotten as any other: its limits stay in the settings, and it
//  takes them again if it comes back (act_pool_activity). O(1), amortized
//  over the calls that end and the workers that leave.
void act_pool_idle (act_pool_t *self, act_activity_t *activity);

//  Idle activities kept at most (act_pool_idle). Not a setting: one
//  kept costs about 1 KB (its entry, three histograms, its name in the
//  tools registry), 5 KB with a small tool whose params schema is
//  compiled, so 1024 cost a few MB, while a deployment's activities
//  number in the tens or hundreds: every one whose workers restart or
//  move keeps its counts and tool. Only a flood of names reaches the
//  bound, and then no number would keep the ones that matter.
#define ACT_POOL_IDLE_KEPT 1024

//  A call naming activity is submitted (bounded) or recovered from the
//  store (not bounded: it was accepted before). True when a READY named
//  the activity since the pool made it, the settings name it
//  (activities/NAME), or it is counted already among the unserved
//  activities in use; else it is counted now, unless bounded and
//  server/max_unserved_activities are counted already: then false, and
//  the refusal counted (STATS). An activity leaves the count once it has
//  no call left, a READY names it, or the settings name it (a reload).
//  Without it, calls to names nobody serves, each waiting up to its
//  schedule_timeout_ms, made entries without bound: 20,000 names made
//  actd-http's /metrics 66 MB, and STATS held the loop 0.8 s. O(1).
bool act_pool_admit (act_pool_t *self, act_activity_t *activity, bool bounded);

//  What is told each activity the pool forgets (act_pool_idle), its name,
//  before it is freed
typedef void (act_pool_forget_fn) (void *arg, const char *activity);

//  Tell fn (with arg) of each activity forgotten from now on; fn NULL:
//  tell nobody.
void act_pool_on_forget (act_pool_t *self, act_pool_forget_fn *fn, void *arg);

//  Point every activity at its settings again (after a reload), and
//  count again those among the unserved in use (act_pool_admit): the
//  settings may name more activities, or fewer.
void act_pool_resettle (act_pool_t *self);

//  A READY names count activities (its array's entries, repeats
//  included): 0 when they are server/max_worker_activities at most, else
//  -1 with err bad_argument, and the refusal counted (STATS "served").
//  Checked before the names are read one by one: a READY's frame is read
//  up to max_message_bytes times four, some 400,000 short names, each an
//  activity with its entry in STATS and some 60 series in actd-http's
//  /metrics (100,000 held the loop 100 s and took 170 MB). O(1).
int act_pool_ready_names (act_pool_t *self, size_t count, act_err_t *err);

//  A READY names names (a JSON array of strings): 0 when the activities
//  connected workers serve, with those among names that none serves now,
//  are server/max_served_activities at most, else -1 with err busy (room
//  comes as workers leave), and the refusal counted (STATS "served").
//  Without it the activities workers serve were bounded only by the
//  workers that connect: 100 workers of 1,024 names each made a STATS
//  that held the loop 0.4 s and a /metrics of 50 MB. O(names).
int act_pool_room (act_pool_t *self, const json_t *names, act_err_t *err);

//  The worker with routing id key (hex), or NULL.
act_worker_t *act_pool_worker (act_pool_t *self, const char *key);

//  Register a worker: it serves names (a JSON array of strings) with
//  capacity. Returns the worker.
act_worker_t *act_pool_join (act_pool_t *self, zframe_t *identity, const char *key,
                             act_proto_t protocol, bool envelope, const json_t *names,
                             size_t capacity, const char *name, const char *lang);

//  Take a worker out of its activities: nothing is dispatched to it any
//  more, and it serves none (STATS lists it with none until it is
//  removed). Each of them that it leaves with no worker and no call is
//  idle (act_pool_idle). Its tasks are still listed, for the caller to
//  deal with. Once detached, detaching it again does nothing.
void act_pool_detach (act_pool_t *self, act_worker_t *worker);

//  Forget a worker (detached or not) and free it.
void act_pool_remove (act_pool_t *self, act_worker_t *worker);

//  Iterate over the workers (not safe against removal while iterating).
act_worker_t *act_pool_first (act_pool_t *self);
act_worker_t *act_pool_next (act_pool_t *self);

//  Workers registered.
size_t act_pool_size (act_pool_t *self);

//  Empty every queue and zero the activities' counts of live calls
//  (their calls were forgotten).
void act_pool_forget_calls (act_pool_t *self);

//  True when the worker may take one more task: it holds fewer than its
//  capacity, and libzmq holds fewer than max_held bytes of tasks for it
//  (else it is marked throttled, logged once).
bool act_worker_free (act_worker_t *worker);

//  True when the worker was throttled and may take a task again (libzmq
//  wrote out its tasks: it reads again); then no longer marked.
bool act_worker_unthrottle (act_worker_t *worker);

//  The worker is given task, attempt number attempt of call number: it
//  holds the task (a slot taken) until act_worker_release, and the task is
//  one it was given from then on (act_worker_given).
void act_worker_hold (act_worker_t *worker, const char *task, uint64_t number,
                      uint64_t attempt);

//  The worker answered task, which it held: its slot is free.
void act_worker_release (act_worker_t *worker, const char *task);

//  Mark task, which the worker holds, as one no call owns any longer (it
//  was told CANCEL): its slot stays taken until it answers, and no call
//  takes it back (act_pool_holder). False when the worker does not hold
//  it, or it was marked already.
bool act_worker_orphan (act_worker_t *worker, const char *task);

//  act_outbox_unsent for the pool (arg): a TASK that a failed commit
//  dropped before it left frees its worker's slot (the worker never had
//  it); other messages change nothing.
void act_pool_unsent (void *arg, zmq_msg_t *parts, size_t nparts);

//  True when the worker holds task (given, not marked an orphan).
bool act_worker_holds (act_worker_t *worker, const char *task);

//  The worker that holds task (given, not marked an orphan), or NULL.
act_worker_t *act_pool_holder (act_pool_t *self, const char *task);

//  Read task as a task id, "<call>.<attempt>", both decimal (no sign, no
//  leading zero) and the attempt from 1: true with *number and *attempt,
//  else false (no task actd gives out looks like that).
bool act_task_parse (const char *task, uint64_t *number, uint64_t *attempt);

//  False when the worker was never given task: it is not a task id, its
//  call is outside the span of call numbers of the tasks the worker was
//  given, or its attempt is past the highest it was given. True says only
//  that it may have been: a span costs no memory as the worker's answers
//  add up (a set of every task it answered would grow for as long as it
//  lives), and an answer the span lets through changes nothing but the
//  log (PROTOCOL.md section 2: a repeat, ignored).
bool act_worker_given (act_worker_t *worker, const char *task);

//  The worker to give the activity's next call: free capacity, its key
//  allowed to serve the activity, least loaded for its capacity, then
//  least recently used. NULL when none.
act_worker_t *act_worker_pick (act_activity_t *activity);

//  A message to worker in its own protocol in outbox: ACT/1 commands
//  TASK, CANCEL, HEARTBEAT, DISCONNECT; the caller adds the argument
//  frames. NULL (adding to it does nothing) for a command the worker's
//  protocol does not have (Majordomo has no CANCEL). command is a string
//  literal (act_out_literal: it is not copied).
act_out_t *act_worker_send (act_outbox_t *outbox, act_worker_t *worker,
                            const char *command);

//  HEARTBEAT, through outbox, to each worker sent nothing for interval ms
//  by now. Returns how many.
size_t act_pool_heartbeat (act_pool_t *self, act_outbox_t *outbox, long long now,
                           long long interval);

//  TASK to worker in its protocol: ACT/1 [task][activity][params][meta];
//  Majordomo's REQUEST [task as the client address][empty][params], the
//  task id coming back as the address of the reply. Returns the message
//  (NULL for a protocol without TASK, which is none now).
act_out_t *act_worker_task (act_outbox_t *outbox, act_worker_t *worker, const char *task,
                      const char *activity, const char *params, const char *meta);

//  DISCONNECT with reason to any peer (registered or not) of protocol,
//  in the framing it used (envelope: an empty frame first).
void act_pool_disconnect (act_outbox_t *outbox, zframe_t *identity, act_proto_t protocol,
                          bool envelope, const char *reason);

//  Add STATS' "unserved" object (the unserved activities in use, their
//  bound, and the calls refused for it: act_pool_admit), "served" object
//  (the activities connected workers serve, the bounds of act_pool_room
//  and act_pool_ready_names, and the READYs refused for each), "workers"
//  array and "activities" object (PROTOCOL.md section 4) to stats, with
//  as many entries as keep its text within max_bytes (PROTOCOL.md
//  section 1: replies are bounded): the workers first, in the order they
//  joined, then the activities with a worker or a live call, then the
//  others, until one does not fit. When some were left out,
//  "workers_left_out" and "activities_left_out" count them. Costs one
//  serialization of stats and of each entry listed.
void act_pool_stats (act_pool_t *self, json_t *stats, size_t max_bytes);

#endif
