/*  =========================================================================
    act_broker_lease - the broker's lease on a shared store (PostgreSQL,
    several brokers): renewed a third of the lease apart; when it may have
    run out (two thirds of it without a renewal), nothing more is written
    and every context and call is forgotten, to be claimed again.
    ========================================================================= */

#include "act_broker_int.h"

//  Forget every context and call, without recovering them: this broker can
//  no longer prove it owns them (it lost the store longer than its lease
//  allows), and others may have taken them over; workers holding their
//  tasks are told to connect again, which frees the slots. Contexts come
//  back, claimed again, with the next requests.
static void
s_forget_all (act_broker_t *self)
{
    act_log (LOG_ERR, "lost the store for too long: its leases may have run out; "
             "dropping %zu contexts and %zu calls from memory",
             act_cache_size (self->cache), act_flow_live (self->flow));
    //  The answers kept through failed commits go too: their calls are
    //  other brokers' to run now
    act_flow_kept_reset (self->flow);
    act_flow_kept_drop (self->flow);
    act_broker_drop_busy_workers (self);
    act_flow_forget (self->flow);
    act_flow_kept_drop (self->flow);    //  Those the calls forgotten waited for
    act_cache_clear (self->cache);
}

//  Shared store: true when this broker's lease may have run out (it was
//  not renewed for two thirds of it: actd was paused, or lost the store),
//  so that what it holds may be another broker's now
static bool
s_lapsed (act_broker_t *self, long long now)
{
    return act_store_shared (self->store)
        && now - self->renewed > self->settings->lease_ms * 2 / 3;
}

//  The lease lapsed: nothing more is written. The batch is dropped (what
//  it acknowledged refused), and every context and call forgotten.

static void
s_stop_writing (act_broker_t *self)
{
    //  A commit that ended in time keeps its replies
    act_broker_settle (self);
    act_broker_land (self);
    size_t writes = act_store_batch (self->store);
    if (writes || act_cache_size (self->cache)) {
        act_log (LOG_WARNING, "the lease was not renewed for %lld ms: %zu writes dropped, "
                 "not committed", act_clock_ms () - self->renewed, writes);
        act_store_abort (self->store);
        act_outbox_refuse (self->outbox, NULL, act_watches_lost, self->watches);
        act_watches_rewind (self->watches);
        s_forget_all (self);
    }
}

//  Shared store: renew the lease, and adopt what dead brokers left. A
//  lease that lapsed first stops all writing; once renewed, the contexts
//  still this broker's are taken back.
void
act_broker_leases (act_broker_t *self, long long now)
{
    long long lease = self->settings->lease_ms;
    if (now >= self->renew_at) {
        bool lapsed = s_lapsed (self, now);
        if (lapsed)
            s_stop_writing (self);
        if (act_store_renew (self->store) == 0) {
            self->renewed = now;
            self->renew_at = now + lease / 3;
            if (lapsed)
                self->recovering = act_cache_recover (self->cache) > 0;
        }
        else {
            //  Tried again soon, so that writing resumes once the server
            //  is back, not a third of the lease later; but ten times as
            //  long as the try took, so that tries against a silent server
            //  hold the loop a tenth of the time at most
            long long wait = (act_clock_ms () - now) * 10;
            wait = wait < S_RENEW_RETRY_MS? S_RENEW_RETRY_MS: wait;
            self->renew_at = now + (wait < lease / 3? wait: lease / 3);
        }
    }
    if (now >= self->orphans_at && now - self->renewed < lease / 2) {
        act_cache_adopt_orphans (self->cache);
        act_flow_settle (self->flow);
        self->orphans_at = now + lease / 2;
    }
}

void
act_broker_stop_if_lapsed (act_broker_t *self, long long now)
{
    if (s_lapsed (self, now))
        s_stop_writing (self);
}
