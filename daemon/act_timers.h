/*  =========================================================================
    act_timers - the broker's timers: a binary min-heap of deadlines.

    A timer names what it is for (an id and a type) and a generation. The
    heap never removes a timer early: its owner voids it by moving its own
    generation on, and ignores a popped timer whose generation is old. So
    adding is O(log n), voiding is O(1), and nothing searches the heap.
    ========================================================================= */

#ifndef ACT_TIMERS_H_INCLUDED
#define ACT_TIMERS_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct _act_timers_t act_timers_t;

typedef struct {
    long long at;               //  When it fires (monotonic ms)
    uint64_t id;                //  What it belongs to (a call number)
    uint32_t generation;        //  The owner's generation when it was set
    int type;                   //  What it means, for the owner
} act_timer_t;

//  An empty heap; NULL when out of memory.
act_timers_t *act_timers_new (void);

//  Destroy the heap and null the pointer; safe on NULL.
void act_timers_destroy (act_timers_t **self_p);

//  Add a timer. Returns 0, or -1 when out of memory (nothing added).
int act_timers_add (act_timers_t *self, act_timer_t timer);

//  When the earliest timer fires, or -1 when there is none.
long long act_timers_next (act_timers_t *self);

//  Take the earliest timer into *timer if it is due (at <= now). Returns
//  true when it took one: timers due at the same ms come in no set order.
bool act_timers_pop (act_timers_t *self, long long now, act_timer_t *timer);

//  Whether timer is still wanted (its owner's generation), for a sweep
typedef bool (act_timers_keep_fn) (void *arg, const act_timer_t *timer);

//  Drop every timer keep says is void and give back room the heap no
//  longer needs: void timers would otherwise be held until they come due,
//  which a long _timeout puts far off. O(n). Returns how many were dropped.
size_t act_timers_sweep (act_timers_t *self, act_timers_keep_fn *keep, void *arg);

//  Number of timers held (void ones included).
size_t act_timers_size (act_timers_t *self);

//  Drop every timer.
void act_timers_clear (act_timers_t *self);

#endif
