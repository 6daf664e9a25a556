/*  =========================================================================
    fuzz_ctx - a context filled with seed messages, for the targets that
    resolve or validate against one (fuzz_reference, fuzz_call).
    ========================================================================= */

#ifndef FUZZ_CTX_H_INCLUDED
#define FUZZ_CTX_H_INCLUDED

#include <stdio.h>
#include <stdlib.h>
#include "actd/act.h"

//  Append each of the count JSON messages to ctx; a seed refused is a bug
//  of the target (target names it), so it aborts.
static inline void
fuzz_ctx_seed (act_ctx_t *ctx, const char *target, const char **messages, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        act_err_t err = { 0 };
        json_t *message = json_loads (messages [i], 0, NULL);
        json_t *stored = message? act_ctx_append (ctx, message, &err): NULL;
        if (!stored) {
            fprintf (stderr, "%s: seed message %zu refused: %s\n", target, i,
                     message? err.message: "not JSON");
            abort ();
        }
        json_decref (stored);
        json_decref (message);
    }
}

#endif
