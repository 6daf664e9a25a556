/*  =========================================================================
    scan_diff - act_scan against act_json_parse on one text: the check
    fuzz_scan runs on every input and test_scan on the seeds and its cases.
    ========================================================================= */

#ifndef SCAN_DIFF_H_INCLUDED
#define SCAN_DIFF_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include "actd/act_scan.h"

//  Scan the size bytes at text with scan and parse them with
//  act_json_parse. They must agree on:
//  - the verdict (a refusal by act_scan is bad_json, with a message);
//  - for an accepted text: the top-level type; the top-level members
//    (count, order, decoded keys, act_scan_find, each value's span parsed
//    alone equal to jansson's value); the dagger strings (exactly the
//    string values jansson holds at any depth, not keys, whose text starts
//    with U+2020: same order, decoded text, depth, member, escape flag);
//    and splicing null over every dagger string gives jansson's value with
//    those strings nulled.
//  Returns NULL when they agree, else a description of the first
//  difference (static storage, until the next call). Sets *accepted to
//  act_json_parse's verdict.
const char *scan_diff (act_scan_t *scan, const char *text, size_t size, bool *accepted);

#endif
