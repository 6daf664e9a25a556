/*  =========================================================================
    act_flow_timers - a call's timers (see act_flow.h): the deadline of
    a running attempt (_timeout), the wait for a worker of a queued call
    (schedule_timeout_ms), and the end of a retry's delay.
    ========================================================================= */

#include "act_flow_int.h"

void
act_flow_timers (act_flow_t *self, long long now)
{
    act_timer_t timer;
    while (act_timers_pop (self->timers, now, &timer)) {
        act_live_t *call = act_flow_lookup (self, timer.id);
        if (!call || call->timer != timer.generation)
            continue;           //  Void: the call moved on
        if (timer.type == T_DEADLINE && call->state == ACT_LIVE_RUNNING) {
            act_out_addstr (act_worker_send (self->outbox, call->worker, "CANCEL"), call->task);
            char *message = zsys_sprintf ("attempt %lld ran over its timeout of %lld ms",
                                          call->attempts, call->timeout_ms);
            act_flow_attempt_failed (self, call, ACT_E_TIMEOUT, message);
            zstr_free (&message);
        }
        else
        if (timer.type == T_SCHEDULE && call->state == ACT_LIVE_QUEUED && !call->backoff) {
            char *message = zsys_sprintf ("no worker took it within %lld ms",
                                          call->activity->settings->schedule_timeout_ms);
            act_flow_end (self, call, "timeout", ACT_E_NO_WORKER, message);
            zstr_free (&message);
        }
        else
        if (timer.type == T_RETRY && call->state == ACT_LIVE_QUEUED && call->backoff)
            act_flow_retry_now (self, call);
        act_flow_settle (self);
    }
}

long long
act_flow_next_timer (act_flow_t *self)
{
    return act_timers_next (self->timers);
}
