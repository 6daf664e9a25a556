/*  =========================================================================
    numbers_print - for test_dtoa_repr.py: prints each double of
    numbers_sample.h as its bits in hexadecimal and the text act_json_dump
    writes for it, one per line, so that Python's repr can judge the text.
    ========================================================================= */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "actd/act.h"
#include "numbers_sample.h"

int
main (void)
{
    uint64_t rng = 0;
    for (size_t i = 0; i < S_SAMPLE_COUNT; i++) {
        double value = s_sample (i, &rng);
        uint64_t bits;
        memcpy (&bits, &value, sizeof bits);
        json_t *real = json_real (value);
        char *text = act_json_dump (real);
        if (!text)
            return 1;
        printf ("%016" PRIx64 " %s\n", bits, text);
        free (text);
        json_decref (real);
    }
    return 0;
}
