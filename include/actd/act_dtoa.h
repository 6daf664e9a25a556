/*  =========================================================================
    act_dtoa - a double as the shortest decimal text that reads back as the
    same double (SEMANTICS.md section 1: "0.1", not "0.10000000000000001").

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_DTOA_H_INCLUDED
#define ACT_DTOA_H_INCLUDED

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

//  Bytes a buffer for act_dtoa needs: "-2.2250738585072014e-308" and a NUL
//  fit with room to spare
#define ACT_DTOA_SIZE   32

//  Write value into buffer (ACT_DTOA_SIZE bytes) and return its length
//  (the text is NUL-terminated). The text has the fewest significant digits
//  that strtod reads back as exactly value; among those, the one nearest to
//  value (ties to even). It is laid out as Python's repr writes floats:
//  fixed notation with at least one digit after the point ("0.1", "100.0",
//  "-0.0", "0.0001") when the decimal exponent is in [-4, 16), otherwise
//  "d.ddde+XX" with a sign and at least two exponent digits ("1e+16",
//  "5e-324", "1.7976931348623157e+308"). Every finite value therefore reads
//  back as a JSON real, never as an integer. Not JSON: a NaN is "nan" and
//  infinities "inf" / "-inf" (jansson never holds those).
size_t act_dtoa (double value, char *buffer);

#ifdef __cplusplus
}
#endif

#endif
