/*  =========================================================================
    act_http_api - the JSON routes under /v1/ (docs/http.md), over ACT/1.
    ========================================================================= */

#ifndef ACT_HTTP_API_H_INCLUDED
#define ACT_HTTP_API_H_INCLUDED

#include "act_http_req.h"

//  Answer req, a request for a path under /v1/ whose body has come whole.
enum MHD_Result act_http_api_handle (act_http_req_t *req);

#endif
