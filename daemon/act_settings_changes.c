/*  =========================================================================
    act_settings_changes - what a reload (SIGHUP) changes, logged, and what
    it cannot change: a restart-only setting that differs is said to need
    a restart (see act_settings.h).
    ========================================================================= */

#include <syslog.h>
#include "act_settings.h"
#include "act_store.h"

//  Log, at warning, each restart-only setting (docs/operations.md section
//  5) that differs in fresh: a reload does not apply it. broker_id and
//  advertise left unset take a default at start: only a value given is
//  compared.
static void
s_log_restart_only (const act_settings_t *now, const act_settings_t *fresh)
{
    struct { const char *name; const char *old, *new; bool defaulted; } texts [] = {
        { "server/client_endpoint", now->client_endpoint, fresh->client_endpoint, false },
        { "server/worker_endpoint", now->worker_endpoint, fresh->worker_endpoint, false },
        { "server/broker_id", now->broker_id, fresh->broker_id, true },
        { "server/advertise", now->advertise, fresh->advertise, true },
        { "store/path", now->store, fresh->store, false },
        { "security/server_key", now->server_key, fresh->server_key, false }
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts [0]; i++) {
        const char *old = texts [i].old? texts [i].old: "(none)";
        const char *new = texts [i].new? texts [i].new: "(none)";
        if (streq (old, new) || (texts [i].defaulted && !texts [i].new))
            continue;
        //  A store's URL may carry a password: not in the log
        char *old_shown = act_store_location_shown (old), *new_shown = act_store_location_shown (new);
        act_log (LOG_WARNING, "reload: %s %s -> %s needs a restart: not applied",
                 texts [i].name, old_shown, new_shown);
        free (old_shown);
        free (new_shown);
    }
    struct { const char *name; long long old, new; } numbers [] = {
        { "server/heartbeat_ms", now->heartbeat_ms, fresh->heartbeat_ms },
        { "server/liveness", now->liveness, fresh->liveness },
        { "server/mdp_heartbeat_ms", now->mdp_heartbeat_ms, fresh->mdp_heartbeat_ms },
        { "server/strict_activities", now->strict_activities, fresh->strict_activities },
        { "server/max_unserved_activities", now->max_unserved_activities,
          fresh->max_unserved_activities },
        { "server/max_worker_activities", now->max_worker_activities,
          fresh->max_worker_activities },
        { "server/max_served_activities", now->max_served_activities,
          fresh->max_served_activities },
        { "server/max_watches", now->max_watches, fresh->max_watches },
        { "server/ipc_mode", now->ipc_mode, fresh->ipc_mode },
        { "server/max_message_bytes", now->max_message_bytes, fresh->max_message_bytes },
        { "server/max_queued_calls", now->max_queued_calls, fresh->max_queued_calls },
        { "server/max_client_bytes", now->max_client_bytes, fresh->max_client_bytes },
        { "server/max_worker_bytes", now->max_worker_bytes, fresh->max_worker_bytes },
        { "server/max_reply_bytes", now->max_reply_bytes, fresh->max_reply_bytes },
        { "server/shutdown_grace_ms", now->shutdown_grace_ms, fresh->shutdown_grace_ms },
        { "server/io_batch", now->io_batch, fresh->io_batch },
        { "server/context_idle_ms", now->context_idle_ms, fresh->context_idle_ms },
        { "server/max_contexts", now->max_contexts, fresh->max_contexts },
        { "server/lease_ms", now->lease_ms, fresh->lease_ms },
        { "store/timeout_ms", now->store_timeout_ms, fresh->store_timeout_ms },
        { "store/retain_ms", now->retain_ms, fresh->retain_ms },
        { "store/sync", now->sync, fresh->sync },
        { "store/early_tasks", now->early_tasks, fresh->early_tasks },
        { "store/hold_us", now->hold_us, fresh->hold_us },
        { "log/syslog", now->log_syslog, fresh->log_syslog },
        { "log/stderr", now->log_stderr, fresh->log_stderr },
        { "security/allow_plain_tcp", now->allow_plain_tcp, fresh->allow_plain_tcp }
    };
    for (size_t i = 0; i < sizeof numbers / sizeof numbers [0]; i++)
        if (numbers [i].old != numbers [i].new)
            act_log (LOG_WARNING, "reload: %s %lld -> %lld needs a restart: not applied",
                     numbers [i].name, numbers [i].old, numbers [i].new);
}

//  Log, at notice, each per-activity setting that differs
static void
s_log_activity (const char *prefix, const act_activity_settings_t *old,
                       const act_activity_settings_t *new)
{
    struct { const char *name; long long old, new; } fields [] = {
        { "timeout_ms", old->timeout_ms, new->timeout_ms },
        { "max_queue", old->max_queue, new->max_queue },
        { "schedule_timeout_ms", old->schedule_timeout_ms, new->schedule_timeout_ms },
        { "retry/max_attempts", old->retry.max_attempts, new->retry.max_attempts },
        { "retry/initial_ms", old->retry.initial_ms, new->retry.initial_ms },
        { "retry/max_ms", old->retry.max_ms, new->retry.max_ms }
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields [0]; i++)
        if (fields [i].old != fields [i].new)
            act_log (LOG_NOTICE, "reload: %s/%s %lld -> %lld", prefix, fields [i].name,
                     fields [i].old, fields [i].new);
    if (old->retry.backoff != new->retry.backoff)
        act_log (LOG_NOTICE, "reload: %s/retry/backoff %g -> %g", prefix,
                 old->retry.backoff, new->retry.backoff);
}

void
act_settings_log_changes (const act_settings_t *now, const act_settings_t *fresh)
{
    s_log_restart_only (now, fresh);
    static const char *levels [] = {
        "emergency", "alert", "critical", "error", "warning", "notice", "info", "debug"
    };
    if (fresh->log_level != now->log_level)
        act_log (LOG_NOTICE, "reload: log/level %s -> %s", levels [now->log_level & 7],
                 levels [fresh->log_level & 7]);
    s_log_activity ("defaults", &now->defaults, &fresh->defaults);
    for (act_activity_settings_t *own = zhashx_first (fresh->activities); own;
         own = zhashx_next (fresh->activities)) {
        const char *name = zhashx_cursor (fresh->activities);
        char *prefix = zsys_sprintf ("activities/%s", name);
        if (!zhashx_lookup (now->activities, name))
            act_log (LOG_NOTICE, "reload: %s added", prefix);
        s_log_activity (prefix, act_settings_activity ((act_settings_t *) now, name), own);
        zstr_free (&prefix);
    }
    for (act_activity_settings_t *own = zhashx_first (now->activities); own;
         own = zhashx_next (now->activities)) {
        const char *name = zhashx_cursor (now->activities);
        if (zhashx_lookup (fresh->activities, name))
            continue;
        char *prefix = zsys_sprintf ("activities/%s", name);
        act_log (LOG_NOTICE, "reload: %s removed: it takes defaults", prefix);
        s_log_activity (prefix, own, &fresh->defaults);
        zstr_free (&prefix);
    }
}
