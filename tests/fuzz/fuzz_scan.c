/*  =========================================================================
    fuzz_scan - the differential fuzzer of act_scan against act_json_parse.

    The input is a JSON text (any bytes). act_scan, the broker's hot-path
    scanner, must accept and refuse exactly what act_json_parse (jansson
    with the project's flags and limits) accepts and refuses, and its
    records must describe what jansson parsed (scan_diff.h says what is
    compared). One scanner serves every input, as in the broker, so that
    state left from one text cannot go unnoticed in the next. A difference
    aborts with the input named by libFuzzer.
    ========================================================================= */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "scan_diff.h"

static act_scan_t *s_scan;

static void
s_exit (void)
{
    act_scan_destroy (&s_scan);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (!s_scan) {
        s_scan = act_scan_new ();
        atexit (s_exit);
    }
    bool accepted;
    const char *diff = scan_diff (s_scan, (const char *) data, size, &accepted);
    if (diff) {
        fprintf (stderr, "fuzz_scan: %s\n", diff);
        abort ();
    }
    return 0;
}
