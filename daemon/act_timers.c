/*  =========================================================================
    act_timers - a binary min-heap of timers (see act_timers.h).
    ========================================================================= */

#include <stdlib.h>
#include "act_timers.h"

struct _act_timers_t {
    act_timer_t *heap;          //  heap [0] fires first
    size_t size;                //  Timers held
    size_t room;                //  Slots allocated
};

act_timers_t *
act_timers_new (void)
{
    return (act_timers_t *) calloc (1, sizeof (act_timers_t));
}

void
act_timers_destroy (act_timers_t **self_p)
{
    if (self_p && *self_p) {
        free ((*self_p)->heap);
        free (*self_p);
        *self_p = NULL;
    }
}

int
act_timers_add (act_timers_t *self, act_timer_t timer)
{
    if (self->size == self->room) {
        size_t room = self->room? self->room * 2: 256;
        act_timer_t *heap = realloc (self->heap, room * sizeof (act_timer_t));
        if (!heap)
            return -1;
        self->heap = heap;
        self->room = room;
    }
    //  Sift up from the new leaf
    size_t index = self->size++;
    while (index > 0 && self->heap [(index - 1) / 2].at > timer.at) {
        self->heap [index] = self->heap [(index - 1) / 2];
        index = (index - 1) / 2;
    }
    self->heap [index] = timer;
    return 0;
}

long long
act_timers_next (act_timers_t *self)
{
    return self->size? self->heap [0].at: -1;
}

//  Put timer at index and sift it down to its place among the first size
static void
s_sift_down (act_timers_t *self, size_t index, act_timer_t timer)
{
    while (true) {
        size_t child = index * 2 + 1;
        if (child >= self->size)
            break;
        if (child + 1 < self->size && self->heap [child + 1].at < self->heap [child].at)
            child++;
        if (self->heap [child].at >= timer.at)
            break;
        self->heap [index] = self->heap [child];
        index = child;
    }
    self->heap [index] = timer;
}

bool
act_timers_pop (act_timers_t *self, long long now, act_timer_t *timer)
{
    if (self->size == 0 || self->heap [0].at > now)
        return false;
    *timer = self->heap [0];
    //  The last leaf sifts down from the root
    act_timer_t last = self->heap [--self->size];
    if (self->size)
        s_sift_down (self, 0, last);
    return true;
}

size_t
act_timers_sweep (act_timers_t *self, act_timers_keep_fn *keep, void *arg)
{
    size_t kept = 0;
    for (size_t i = 0; i < self->size; i++)
        if (keep (arg, &self->heap [i]))
            self->heap [kept++] = self->heap [i];
    size_t dropped = self->size - kept;
    self->size = kept;
    //  A heap again: each parent sifted down, the last one first
    for (size_t parent = kept / 2; parent-- > 0;)
        s_sift_down (self, parent, self->heap [parent]);
    //  Room given back once three quarters of it is empty
    if (self->room > 256 && self->size < self->room / 4) {
        size_t room = self->room / 2;
        while (room > 256 && self->size < room / 4)
            room /= 2;
        act_timer_t *heap = realloc (self->heap, room * sizeof (act_timer_t));
        if (heap) {
            self->heap = heap;
            self->room = room;
        }
    }
    return dropped;
}

size_t
act_timers_size (act_timers_t *self)
{
    return self->size;
}

void
act_timers_clear (act_timers_t *self)
{
    self->size = 0;
}
