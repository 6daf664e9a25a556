/*  =========================================================================
    act_settings - what an actd runs with: the defaults of PROTOCOL.md
    section 5, then the config file, then the command line.
    ========================================================================= */

#ifndef ACT_SETTINGS_H_INCLUDED
#define ACT_SETTINGS_H_INCLUDED

#include <czmq.h>
#include "actd/act.h"
#include "act_store.h"
#include "act_log.h"

//  The most each kind of integer setting may be (docs/operations.md
//  section 3), so that no sum or product actd makes of them, with a clock
//  reading, comes near overflowing a long long. Durations fit an int too,
//  as PostgreSQL's timeouts and the kernel's TCP_USER_TIMEOUT take them.
#define ACT_SETTINGS_MAX_MS         2147483647LL    //  A duration: about 24.8 days
#define ACT_SETTINGS_MAX_RETAIN_MS  315360000000LL  //  store/retain_ms: 3650 days
#define ACT_SETTINGS_MAX_HOLD_US    60000000LL      //  store/hold_us: a minute
#define ACT_SETTINGS_MAX_LIVENESS   1000LL          //  server/liveness: intervals
#define ACT_SETTINGS_MAX_COUNT      1000000000LL    //  Calls, contexts, watches, attempts
#define ACT_SETTINGS_MAX_BYTES      1073741824LL    //  A frame or a reply: 1 GiB
#define ACT_SETTINGS_MAX_CLIENT_BYTES 68719476736LL //  Held for one client: 64 GiB

//  Settings that may differ per activity
typedef struct {
    long long timeout_ms;       //  Default _timeout of one attempt
    act_retry_t retry;          //  Default _retry, every field set
    long long max_queue;        //  Calls waiting or queued before "busy"
    long long schedule_timeout_ms;  //  Longest wait in the queue for a worker
} act_activity_settings_t;

//  Client rights (a tenant's "rights"; a command's row names the one it needs)
#define ACT_RIGHT_READ  1       //  RESOLVE, VIEW, HISTORY, WATCH, STATUS, CONTEXTS, TOOLS
#define ACT_RIGHT_WRITE 2       //  CALL, PLAN, APPEND, CANCEL, DELETE
#define ACT_RIGHT_ADMIN 4       //  STATS, and every tenant's contexts
#define ACT_RIGHT_NONE  8       //  Needs no right (PING): any allowed key
#define ACT_RIGHTS_ALL  (ACT_RIGHT_READ | ACT_RIGHT_WRITE | ACT_RIGHT_ADMIN)

//  A tenant (section tenants/NAME): client keys that share a context prefix
typedef struct {
    char *name;                 //  Its section name
    char *prefix;               //  Its contexts' ids start with it
    int rights;                 //  ACT_RIGHT_* bits
    char *keys;                 //  Directory of *.key files, or one key file
} act_tenant_settings_t;

//  A worker group (section workers/NAME): worker keys and what they serve
typedef struct {
    char *name;                 //  Its section name
    zlistx_t *patterns;         //  Activities they may serve (fnmatch), strings
    char *keys;                 //  Directory of *.key files, or one key file
} act_group_settings_t;

typedef struct {
    char *client_endpoint;      //  ROUTER for clients
    char *worker_endpoint;      //  ROUTER for workers
    char *store;                //  ":memory:" or a SQLite file path
    act_sync_t sync;            //  synchronous=FULL or NORMAL
    bool early_tasks;           //  A first attempt's TASK may leave before
                                //  the commit that stores its call
    long long hold_us;          //  How long a batch of patient replies may
                                //  wait for its early tasks' results
    long long heartbeat_ms;     //  Heartbeat interval, both ways
    long long liveness;         //  Intervals of silence before a worker is dead
    long long mdp_heartbeat_ms; //  An idle Majordomo worker's interval, at
                                //  least (theirs is often 2500 ms)
    long long max_message_bytes;//  Largest frame accepted (too_large above)
    long long max_reply_bytes;  //  HISTORY and CONTEXTS pages stop here,
                                //  STATS lists what fits; larger VIEW,
                                //  RESOLVE, TOOLS values and PLAN's
                                //  ACCEPTED are too_large
    long long max_client_bytes; //  Replies libzmq may hold for one client
                                //  not reading them, in bytes
    long long max_worker_bytes; //  Tasks libzmq may hold for one worker not
                                //  reading them before it gets no more
    long long max_queued_calls; //  Calls waiting or queued in all activities
                                //  before CALL and PLAN get busy
    bool io_batch;              //  libzmq's I/O threads under SCHED_BATCH
    bool strict_activities;     //  A call to an activity no READY named and
                                //  the config does not name: unknown_activity
    long long max_unserved_activities;  //  Without strict activities: such
                                //  activities with calls at once, at most
                                //  (a call naming one more is busy)
    long long max_worker_activities;    //  Names one READY may give, at
                                //  most (a READY naming more: bad_argument)
    long long max_served_activities;    //  Activities connected workers
                                //  serve at once, at most (a READY that
                                //  would pass it: busy)
    long long shutdown_grace_ms;//  How long SIGTERM lets running tasks finish
    long long context_idle_ms;  //  Idle contexts leave memory after this
    long long max_contexts;     //  Loaded contexts kept in memory, at most
    long long max_watches;      //  Open WATCHes, at most (busy beyond)
    int ipc_mode;               //  Permissions of ipc:// socket files
                                //  after bind (0600: the owner only)
    long long retain_ms;        //  A context idle this long is deleted (0:
                                //  keep every context)
    int log_level;              //  LOG_ERR .. LOG_DEBUG (syslog levels)
    bool log_stderr;            //  Also log to stderr (-v)
    bool log_syslog;            //  Log to syslog (facility daemon, ident actd)
    act_activity_settings_t defaults;   //  For activities not listed
    zhashx_t *activities;       //  Activity name -> act_activity_settings_t
    //  Security (CURVE)
    char *server_key;           //  Server certificate file (secret), or NULL
    char *client_keys;          //  Directory of allowed client public keys
    char *worker_keys;          //  Directory of allowed worker public keys
    bool allow_plain_tcp;       //  Plain TCP on non-loopback addresses allowed
    zlistx_t *tenants;          //  act_tenant_settings_t, in file order
    zlistx_t *worker_groups;    //  act_group_settings_t, in file order
    char *config_file;          //  File the settings came from, or NULL
    //  Several brokers on one PostgreSQL store
    char *broker_id;            //  This broker's id (default host/endpoint)
    char *advertise;            //  Client endpoint other brokers send clients
                                //  to (default: client_endpoint)
    long long lease_ms;         //  A dead broker's contexts are taken over
                                //  this long after its last heartbeat
    long long store_timeout_ms; //  PostgreSQL: longest statement or lock wait
} act_settings_t;

//  Settings with every default of PROTOCOL.md section 5.
act_settings_t *act_settings_new (void);

//  Destroy settings and null the pointer; safe on NULL.
void act_settings_destroy (act_settings_t **self_p);

//  Read a zconfig file over the current settings: a section or setting
//  given twice is read twice, the later value winning. Returns 0, or -1
//  with message (size bytes) saying what is wrong and on which line.
int act_settings_load (act_settings_t *self, const char *path, char *message, size_t size);

//  Parse a rights list ("read, write"): the ACT_RIGHT_* bits, or -1.
int act_settings_rights (const char *text);

//  The settings for activity name (its own, or the defaults).
const act_activity_settings_t *act_settings_activity (act_settings_t *self, const char *name);

//  Log, at notice, every setting of fresh that differs from now (a
//  reload's changes), per activity included; and at warning each
//  restart-only setting that differs, as not applied (it needs a restart).
void act_settings_log_changes (const act_settings_t *now, const act_settings_t *fresh);

#endif
