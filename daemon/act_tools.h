/*  =========================================================================
    act_tools - the registry of tools (PROTOCOL.md section 2.1): what
    each activity takes, as the workers declared it in READY. Per
    activity: its description, its params JSON Schema (compiled once, at
    READY), and its output path (a prescribed one, or a pattern the whole
    _outputPath must match). The latest READY that declares a tool for an
    activity wins (a change is logged). It also remembers the activities
    a READY named, for strict activities and TOOLS, for as long as the
    pool keeps them: once no worker serves one and it has no call, it is
    idle, and the pool forgets the one idle the longest past
    ACT_POOL_IDLE_KEPT (act_pool_idle), its name and tool with it.

    Calls are checked at submit (act_tools_prescribe, act_tools_admit)
    and, after resolution, at dispatch (act_tools_check_params).
    ========================================================================= */

#ifndef ACT_TOOLS_H_INCLUDED
#define ACT_TOOLS_H_INCLUDED

#include "act_pool.h"

typedef struct _act_tools_t act_tools_t;

//  An empty registry; settings (strict_activities, the activities the
//  config names) and pool (workers per activity) are borrowed. It is
//  the pool's forget hook (act_pool_on_forget) until it is destroyed.
act_tools_t *act_tools_new (act_settings_t *settings, act_pool_t *pool);

//  Destroy the registry and null the pointer; safe on NULL.
void act_tools_destroy (act_tools_t **self_p);

//  A READY from worker (its name, for the log) names activities names (a
//  JSON array of strings) and declares tools (NULL when it has none).
//  Every declaration is checked and compiled first: returns 0 and
//  records them all (and the names), or -1 with err (bad_argument, the
//  message naming the activity and what is wrong) and nothing changed.
int act_tools_declare (act_tools_t *self, const json_t *names, const json_t *tools,
                       const char *worker, act_err_t *err);

//  worker, which declared worker->tools at its READY, is leaving: for
//  each of them that is in force and that a connected worker other than
//  it declared otherwise, the declaration of the latest READY among those
//  applies again (logged). A tool no connected worker declares stays as
//  the last READY left it.
void act_tools_left (act_tools_t *self, act_worker_t *worker);

//  True when a READY named activity and the pool keeps it (its workers
//  have not all left, or it is among the idle it keeps).
bool act_tools_named (act_tools_t *self, const char *activity);

//  A call just made (a CALL's or a PLAN entry's): when its activity
//  prescribes an output path and the call has no _outputPath, *call_p is
//  replaced by the call with that one added (its text is then
//  act_json_dump's). Returns 1 when it was, 0 when not, -1 with err
//  (internal) and *call_p kept.
int act_tools_prescribe (act_tools_t *self, act_call_t **call_p, act_err_t *err);

//  A parsed call of activity at submit: strict activities
//  (unknown_activity), the bound on unserved activities in use (busy:
//  act_pool_admit), its _outputPath against the prescribed one or the
//  pattern, and its parameters against the params schema; parameters that
//  hold references are refused only when no value of theirs would make
//  them valid (act_schema_valid_unresolved), and checked whole at
//  dispatch. *checked is set to the version of the tool its params were
//  checked against, 0 when they were not (or held references). Returns 0,
//  or -1 with err (unknown_activity, busy, bad_call).
int act_tools_admit (act_tools_t *self, act_call_t *call, act_activity_t *activity,
                     uint64_t *checked, act_err_t *err);

//  True when act_tools_check_params would check a call of activity whose
//  params passed at version checked (0: not checked): its tool has a
//  params schema, of another version.
bool act_tools_checks (act_tools_t *self, const char *activity, uint64_t checked);

//  The resolved parameters of a call of activity at dispatch, against its
//  params schema; not checked again when checked (from act_tools_admit)
//  is the version of the tool in force (params without references are
//  the same at dispatch). Returns 0, or -1 with err (bad_params) naming
//  the JSON Pointer of the first offending value and the keyword.
int act_tools_check_params (act_tools_t *self, const char *activity, const json_t *params,
                            uint64_t checked, act_err_t *err);

//  TOOLS' body: {"<activity>": {"description"?, "params"?, "outputPath"?,
//  "workers": N}} for activity (NULL: every activity a READY named that
//  the pool keeps), as a new object.
json_t *act_tools_json (act_tools_t *self, const char *activity);

#endif
