/*  =========================================================================
    actctl.h - what the files of actctl, the actd command line, share:
    its options, the printing helpers and the commands of its table
    (actctl.c). Commands take the words after their name and return the
    exit code, or -1 for a bad command line (usage, exit 2).
    ========================================================================= */

#ifndef ACTCTL_H_INCLUDED
#define ACTCTL_H_INCLUDED

#include "actd/act_client.h"
#include "actd/act_json.h"

//  The command line
typedef struct {
    const char *endpoint;       //  Broker's client endpoint
    bool json;                  //  Print raw JSON
    bool wait;                  //  call/plan: wait for the outcome
    bool text;                  //  view: the text rendering
    bool all;                   //  history: every page
    const char *instance;       //  resolve: the instance
    const char *dir;            //  keygen: where to write
    const char *curve_server;   //  The broker's public key (CURVE)
    const char *curve_source;   //  Where it came from: "--curve-server" or
                                //  "$ACTD_SERVER_KEY", for the messages
    const char *curve_cert;     //  This client's certificate file (CURVE)
    uint64_t from;              //  history: first _seq
    uint64_t limit;             //  history: page size
    int timeout;                //  Milliseconds to wait for a reply (0: not given)
    int connect_timeout;        //  Milliseconds to wait for a first connection
                                //  (0: no bound of its own; -1: not given)
    bool live;                  //  --wait on a terminal: show the call's state
    bool calls;                 //  tail: the calls' changes of state too
    const char *key;            //  append: the idempotency key
    const char *format;         //  tools: json (default), mcp, openai, anthropic
    bool force;                 //  keygen: overwrite a keypair that exists
} actctl_options_t;

//  A command of the table: the words after its name
typedef int (actctl_run_fn) (act_client_t *client, actctl_options_t *options,
                             char **args, int nargs);

//  actctl_print.c: a JSON value, indented
void actctl_print_json (const json_t *value);

//  actctl_print.c: one JSON value on one line
void actctl_print_line (const json_t *value);

//  actctl_print.c: print a failed request; returns the exit code (1, or
//  3 for no reply)
int actctl_fail (const actctl_options_t *options, act_err_t *err);

//  actctl_print.c: answer (a request's, NULL when it failed) when it is a
//  JSON value of type (JSON_OBJECT or JSON_ARRAY); else NULL, with err set
//  to bad_json naming command and answer dropped (when answer is NULL, err
//  says already why)
json_t *actctl_expect (json_t *answer, json_type type, const char *command, act_err_t *err);

//  The string at key of object, for printing: "?" when the broker sent
//  none (printf may not be given NULL for %s)
const char *actctl_field (const json_t *object, const char *key);

//  actctl_print.c: "" for 1, else "s"
const char *actctl_plural (json_int_t count);

//  actctl_print.c: print a JSON answer and drop it; or, when there is
//  none, the failure. Returns the exit code.
int actctl_print_answer (const actctl_options_t *options, json_t *answer, act_err_t *err);

//  actctl_calls.c
actctl_run_fn actctl_call, actctl_plan, actctl_status, actctl_cancel;

//  actctl_contexts.c
actctl_run_fn actctl_append, actctl_resolve, actctl_view, actctl_history, actctl_tail,
              actctl_contexts, actctl_delete;

//  actctl_broker.c
actctl_run_fn actctl_stats, actctl_ping;

//  actctl_broker.c: write a CURVE keypair (talks to no broker); 1 when
//  either file is there (without --force) or cannot be written
int actctl_keygen (actctl_options_t *options, const char *name);

//  actctl_tools.c
actctl_run_fn actctl_tools;

#endif
