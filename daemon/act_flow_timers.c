/*  =========================================================================
    act_flow_timers - a call's timers (see act_flow.h): the deadline of
    a running attempt (_timeout), the wait for a worker of a queued call
    (schedule_timeout_ms), and the end of a retry's delay.
    ========================================================================= */

#include "act_flow_int.h"

//  Timers held before void ones are swept out (and at least four a live call)
#define S_TIMERS_SWEEP  4096
//  While commits fail, a due deadline is looked at again this often (ms)
#define S_DEFER_MS      100

//  The sweep's test: the timer's call has not ended nor moved on
static bool
s_timer_live (void *arg, const act_timer_t *timer)
{
    act_live_t *call = act_flow_lookup ((act_flow_t *) arg, timer->id);
    return call && call->timer == timer->generation;
}

void
act_flow_timers (act_flow_t *self, long long now)
{
    //  A call that ended leaves its timers in the heap until they come due
    //  (its deadline, its wait for a worker): with a long _timeout, for
    //  good. Once the heap holds far more than the calls alive can want,
    //  the void ones go; O(n), so not before the heap has doubled since
    //  the last sweep
    size_t held = act_timers_size (self->timers);
    if (held >= S_TIMERS_SWEEP && held > 4 * zhashx_size (self->calls)
    &&  held >= 2 * self->timers_kept) {
        size_t dropped = act_timers_sweep (self->timers, s_timer_live, self);
        self->timers_kept = act_timers_size (self->timers);
        act_log (LOG_DEBUG, "timers: %zu void ones dropped, %zu kept", dropped,
                 act_timers_size (self->timers));
    }

    act_timer_t timer;
    while (act_timers_pop (self->timers, now, &timer)) {
        act_live_t *call = act_flow_lookup (self, timer.id);
        if (!call || call->timer != timer.generation)
            continue;           //  Void: the call moved on
        //  While commits fail, an attempt's end would be refused with its
        //  batch and its task, released, taken from its worker: the call,
        //  taken again from the store, would run once more. Its timeout
        //  waits for the commits instead, and its task stays its worker's
        //  (an answer meanwhile is kept, and taken before the deadline is
        //  looked at again: act_flow_kept_retake runs first in the pass)
        if (timer.type == T_DEADLINE && call->state == ACT_LIVE_RUNNING && self->failing) {
            timer.at = now + S_DEFER_MS;
            if (act_timers_add (self->timers, timer))
                act_log (LOG_ERR, "out of memory for a timer of call %s", call->id);
            continue;
        }
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
