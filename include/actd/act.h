/*  =========================================================================
    actd - the public C interface of libactd.
    The ACT/1 specification is PROTOCOL.md and SEMANTICS.md; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_H_INCLUDED
#define ACT_H_INCLUDED

#define ACT_VERSION_MAJOR 0
#define ACT_VERSION_MINOR 1
#define ACT_VERSION_PATCH 0

#include "act_err.h"
#include "act_json.h"
#include "act_dtoa.h"
#include "act_ref.h"
#include "act_method.h"
#include "act_ctx.h"
#include "act_call.h"
#include "act_wire.h"
#include "act_text.h"
#include "act_schema.h"

#endif
