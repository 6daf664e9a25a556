/*  =========================================================================
    act_http_metrics - GET /metrics: actd's STATS as Prometheus text
    (format 0.0.4), names actd_* (docs/http.md lists them).
    ========================================================================= */

#ifndef ACT_HTTP_METRICS_H_INCLUDED
#define ACT_HTTP_METRICS_H_INCLUDED

#include "act_http_req.h"

//  The exposition of stats (a STATS object; NULL: actd did not answer,
//  only actd_up 0), as a new string, or NULL when out of memory.
char *act_http_metrics_text (json_t *stats);

//  Answer req with the exposition of actd's STATS now.
enum MHD_Result act_http_metrics_handle (act_http_req_t *req);

#endif
