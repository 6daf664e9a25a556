/*  =========================================================================
    act_text - JSON texts built from JSON texts, without parsing them
    again: a member spliced into an object's text, and a value's text
    nested under a reference's path (the display form of SEMANTICS.md
    section 4). The broker keeps what a client or worker sent as bytes and
    builds stored messages and replies around them.
    ========================================================================= */

#ifndef ACT_TEXT_H_INCLUDED
#define ACT_TEXT_H_INCLUDED

#include "act_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

//  The text of JSON object object (compact, ending in '}') with the member
//  "name": value added last, value being JSON text. name must need no
//  escaping. Returns a new string the caller frees.
char *act_text_splice (const char *object, const char *name, const char *value);

//  The display form of a value written at ref: value_text (JSON) inside
//  one object level per segment of ref's path, the segment's text as the
//  key. Returns a new string the caller frees.
char *act_text_nest (const act_ref_t *ref, const char *value_text);

#ifdef __cplusplus
}
#endif

#endif
