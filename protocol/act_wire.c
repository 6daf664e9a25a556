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
    char digits [ACT_DECIMAL_MAX];
    char *digit = digits + sizeof digits;
    unsigned long long left = number < 0? 0ULL - (unsigned long long) number
                                        : (unsigned long long) number;
    do
        *--digit = (char) ('0' + left % 10);
    while (left /= 10);
    if (number < 0)
        *--digit = '-';
    size_t size = (size_t) (digits + sizeof digits - digit);
    memcpy (out, digit, size);
    return size;
}
