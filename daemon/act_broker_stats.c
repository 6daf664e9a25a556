/*  =========================================================================
    act_broker_stats - the broker's STATS: the store's counts, the calls in
    flight, how the group commit batches, the clients' held replies, and
    per worker and activity, within max_reply_bytes (PROTOCOL.md section 4).
    ========================================================================= */

#include "act_broker_int.h"

json_t *
act_broker_stats (void *arg)
{
    act_broker_t *self = (act_broker_t *) arg;
    json_t *stats = act_store_counts (self->store);
    json_object_set_new (stats, "uptime_ms", json_integer (act_clock_ms () - self->started));
    json_t *calls = json_object_get (stats, "calls");
    json_object_set_new (calls, "running", json_integer ((json_int_t) act_flow_running (self->flow)));
    json_object_set_new (calls, "queued", json_integer ((json_int_t) act_flow_queued (self->flow)));
    json_object_set_new (calls, "waiting", json_integer ((json_int_t) act_flow_waiting (self->flow)));
    //  Beyond PROTOCOL.md section 4: how the group commit batches writes
    //  and how long a commit takes (histograms, as act_hist_json)
    json_object_set_new (stats, "store", json_pack ("{sssssbsIsIsIsIsoso}",
        "backend", act_store_backend (self->store),
        "sync", self->settings->sync == ACT_SYNC_FULL? "full": "normal",
        "early_tasks", self->settings->early_tasks,
        "held", (json_int_t) self->held,
        "held_expired", (json_int_t) self->held_expired,
        "commits", (json_int_t) self->commits,
        "writes", (json_int_t) self->committed,
        "commit_ms", act_hist_json (&self->commit_ms),
        "batch", act_hist_json (&self->batch)));
    //  Also beyond it: reply bytes libzmq holds for clients now, and the
    //  clients cut off for not reading theirs (server/max_client_bytes),
    //  and DONEs and EVENTs not sent to a connection of another key
    json_object_set_new (stats, "clients", json_pack ("{sIsIsI}",
        "held_bytes", (json_int_t) act_outbox_client_bytes (self->outbox),
        "cut", (json_int_t) act_outbox_cuts (self->outbox),
        "unowned", (json_int_t) act_outbox_unowned (self->outbox)));
    //  Last, in what is left of max_reply_bytes: one entry per worker and
    //  per activity, which calls may name without end
    act_pool_stats (self->pool, stats, (size_t) self->settings->max_reply_bytes);
    return stats;
}
