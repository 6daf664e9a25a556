/*  =========================================================================
    act_wire - wire constants' companions: the decimal parser and the
    context key builder (see include/actd/act_wire.h).
    ========================================================================= */

#include <stdlib.h>
#include <string.h>
#include "actd/act_wire.h"

bool
act_decimal_parse (const char *text, size_t size, uint64_t limit, uint64_t *value)
{
    //  20 digits hold UINT64_MAX; a leading zero would give one number two
    //  spellings (call "01" is not call "1")
    if (!text || size == 0 || size > 20 || (text [0] == '0' && size > 1))
        return false;
    uint64_t number = 0;
    for (size_t i = 0; i < size; i++) {
        if (text [i] < '0' || text [i] > '9')
            return false;
        unsigned digit = (unsigned) (text [i] - '0');
        if (number > (UINT64_MAX - digit) / 10)
            return false;
        number = number * 10 + digit;
    }
    if (number > limit)
        return false;
    *value = number;
    return true;
}

char *
act_key_new (const char *context, const char *key)
{
    size_t left = strlen (context), right = strlen (key);
    char *full = malloc (left + right + 2);
    if (!full)
        return NULL;
    memcpy (full, context, left);
    full [left] = ACT_KEY_SEPARATOR;
    memcpy (full + left + 1, key, right + 1);
    return full;
}

size_t
act_decimal_write (char *out, long long number)
{
    static const char pairs [201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    unsigned long long left = number < 0? 0ULL - (unsigned long long) number
                                        : (unsigned long long) number;
    //  The digits are counted first, then written from the last, two at a
    //  time, straight into out
    size_t size = 1;
    for (unsigned long long bound = 10; size < 20 && left >= bound; bound *= 10)
        size++;
    if (number < 0) {
        *out++ = '-';
    }
    char *digit = out + size;
    while (left >= 100) {
        unsigned pair = (unsigned) (left % 100) * 2;
        left /= 100;
        *--digit = pairs [pair + 1];
        *--digit = pairs [pair];
    }
    if (left >= 10) {
        *--digit = pairs [left * 2 + 1];
        *--digit = pairs [left * 2];
    }
    else
        *--digit = (char) ('0' + left);
    return size + (number < 0);
}
