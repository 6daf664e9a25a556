/*  =========================================================================
    act_dtoa - a double as the shortest decimal text that reads back as the
    same double.

    The algorithm is Ryu (Ulf Adams, "Ryu: fast float-to-string conversion",
    PLDI 2018), written for actd from the paper's description:

    1.  A finite double is m2 * 2^e2. The doubles that read back as it are
        those in the rounding interval (halfway to each neighbour), whose
        bounds are (4 m2 - 1 - s) * 2^(e2-2) and (4 m2 + 2) * 2^(e2-2); s is
        1 except at a power of two, whose lower neighbour is twice as near
        (the interval is asymmetric there). The bounds belong to the
        interval when m2 is even (strtod rounds a halfway case to even).
    2.  The middle and both bounds are scaled to decimal, vm <= vr <= vp
        times 10^e10, with one multiplication each by a 125-bit power of
        five (act_dtoa_tables.h) and a shift; e10 is chosen so that vr
        keeps at least one digit more than the shortest form needs.
    3.  Digits are removed from all three while vp / 10 > vm / 10 (some
        shorter number still lies in the interval); vr is then rounded by
        the last digit removed. Whether the removed digits of vm and vr
        were all zero is tracked only in the rare cases where a bound or
        the middle is exactly a decimal of that length: that decides
        whether vm itself is in the interval and how a tie rounds (to even).

    The paper proves that 125 bits make every scaled value exact enough for
    every double; tests/unit/test_numbers.c and test_dtoa_repr.py check the
    output against strtod and against Python's repr (David Gay's exact
    algorithm) over 100 000 random bit patterns and the edge cases. Cost: no
    allocation, no division by a variable, about a tenth of snprintf's
    "%.17g" (bench/bench_numbers.c).
    ========================================================================= */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "actd/act_dtoa.h"
#include "act_dtoa_tables.h"

#if !defined (__SIZEOF_INT128__)
#   error "act_dtoa.c needs unsigned __int128 (gcc or clang on a 64-bit target)"
#endif
__extension__ typedef unsigned __int128 s_u128;

#define S_MANTISSA_BITS     52
#define S_EXPONENT_BIAS     1023

//  A decimal: digits * 10^exponent
typedef struct {
    uint64_t digits;            //  1 to 17 significant digits
    int32_t exponent;           //  Power of ten of the last digit
} s_decimal_t;

//  The interval around a double scaled to decimal (step 2)
typedef struct {
    uint64_t vm, vr, vp;        //  Lower bound, value, upper bound, truncated
    int32_t e10;                //  Their power of ten
    bool vm_exact;              //  vm is exactly the lower bound (no digits lost)
    bool vr_exact;              //  vr is exactly the value (no digits lost)
    bool accept_bounds;         //  The bounds read back as the value (m2 even)
} s_scaled_t;

//  floor (log10 (2^e)) for 0 <= e <= 1650
static inline uint32_t
s_log10_pow2 (int32_t e)
{
    return ((uint32_t) e * 78913) >> 18;
}

//  floor (log10 (5^e)) for 0 <= e <= 2620
static inline uint32_t
s_log10_pow5 (int32_t e)
{
    return ((uint32_t) e * 732923) >> 20;
}

//  Bits of 5^e (1 for e = 0) for 0 <= e <= 3528
static inline int32_t
s_pow5_bits (int32_t e)
{
    return (int32_t) (((uint32_t) e * 1217359) >> 19) + 1;
}

//  True when 5^p divides value (value > 0)
static inline bool
s_multiple_of_pow5 (uint64_t value, uint32_t p)
{
    uint32_t count = 0;
    while (value % 5 == 0) {
        value /= 5;
        count++;
    }
    return count >= p;
}

//  True when 2^p divides value (p < 64)
static inline bool
s_multiple_of_pow2 (uint64_t value, uint32_t p)
{
    return (value & ((1ULL << p) - 1)) == 0;
}

//  floor (m * factor / 2^shift), factor a 128-bit {low, high} pair; the
//  callers' shifts are in [64, 128) and the result fits 64 bits (Ryu 3.3)
static inline uint64_t
s_mul_shift (uint64_t m, const uint64_t factor [2], int32_t shift)
{
    s_u128 low = (s_u128) m * factor [0];
    s_u128 high = (s_u128) m * factor [1];
    return (uint64_t) ((high + (low >> 64)) >> (shift - 64));
}

//  Step 2: the interval of m2 * 2^e2 (e2 already lowered by 2 for the
//  quarter units of the bounds) scaled to decimal
static s_scaled_t
s_scale (uint64_t m2, int32_t e2, uint32_t mm_shift)
{
    s_scaled_t out = { .accept_bounds = (m2 & 1) == 0 };
    uint64_t mv = 4 * m2;
    uint64_t mp = mv + 2;
    uint64_t mm = mv - 1 - mm_shift;
    if (e2 >= 0) {
        //  Multiply by 2^e2 / 10^q: by 2^k / 5^q, shifted
        uint32_t q = s_log10_pow2 (e2) - (e2 > 3);
        int32_t shift = -e2 + (int32_t) q + S_POW5_INV_BITCOUNT + s_pow5_bits ((int32_t) q) - 1;
        out.e10 = (int32_t) q;
        out.vr = s_mul_shift (mv, s_pow5_inv [q], shift);
        out.vp = s_mul_shift (mp, s_pow5_inv [q], shift);
        out.vm = s_mul_shift (mm, s_pow5_inv [q], shift);
        //  Dividing by 10^q lost nothing only if 5^q divides; past 10^21
        //  no 55-bit number is divisible. At most one of mm, mv, mp is a
        //  multiple of 5.
        if (q <= 21) {
            if (mv % 5 == 0)
                out.vr_exact = s_multiple_of_pow5 (mv, q);
            else
            if (out.accept_bounds)
                out.vm_exact = s_multiple_of_pow5 (mm, q);
            else                //  An exact, excluded upper bound: step below it
                out.vp -= s_multiple_of_pow5 (mp, q);
        }
    }
    else {
        //  Multiply by 5^-e2 / 10^q: by 5^i, shifted
        uint32_t q = s_log10_pow5 (-e2) - (-e2 > 1);
        int32_t i = -e2 - (int32_t) q;
        int32_t shift = (int32_t) q - (s_pow5_bits (i) - S_POW5_BITCOUNT);
        out.e10 = (int32_t) q + e2;
        out.vr = s_mul_shift (mv, s_pow5 [i], shift);
        out.vp = s_mul_shift (mp, s_pow5 [i], shift);
        out.vm = s_mul_shift (mm, s_pow5 [i], shift);
        //  Exact when 2^q divides: mv has two trailing zero bits, mp one,
        //  mm one when mm_shift is 1
        if (q <= 1) {
            out.vr_exact = true;
            if (out.accept_bounds)
                out.vm_exact = mm_shift == 1;
            else
                out.vp--;
        }
        else
        if (q < 63)
            out.vr_exact = s_multiple_of_pow2 (mv, q);
    }
    return out;
}

//  Step 3: the shortest decimal in the interval, nearest to the value
static s_decimal_t
s_trim (s_scaled_t s)
{
    int32_t removed = 0;
    uint64_t last = 0;          //  The last digit removed from vr
    if (s.vm_exact || s.vr_exact) {
        //  Rare: a bound or the value has trailing decimal zeros
        while (s.vp / 10 > s.vm / 10) {
            s.vm_exact &= s.vm % 10 == 0;
            s.vr_exact &= last == 0;
            last = s.vr % 10;
            s.vr /= 10; s.vp /= 10; s.vm /= 10;
            removed++;
        }
        if (s.vm_exact && s.accept_bounds)
            while (s.vm % 10 == 0) {
                //  vm itself is in the interval: shorten to it
                s.vr_exact &= last == 0;
                last = s.vr % 10;
                s.vr /= 10; s.vp /= 10; s.vm /= 10;
                removed++;
            }
        if (s.vr_exact && last == 5 && s.vr % 2 == 0)
            last = 4;           //  Exactly halfway: round to even
        bool vm_in = s.vm_exact && s.accept_bounds;
        uint64_t digits = s.vr + ((s.vr == s.vm && !vm_in) || last >= 5);
        return (s_decimal_t) { digits, s.e10 + removed };
    }
    //  Common: only the last removed digit matters for rounding; take two
    //  digits at a time while that is possible (most doubles lose ~2)
    if (s.vp / 100 > s.vm / 100) {
        last = s.vr % 100 >= 50;
        s.vr /= 100; s.vp /= 100; s.vm /= 100;
        removed += 2;
    }
    while (s.vp / 10 > s.vm / 10) {
        last = s.vr % 10 >= 5;
        s.vr /= 10; s.vp /= 10; s.vm /= 10;
        removed++;
    }
    //  vm is outside the interval here (digits were lost below it)
    uint64_t digits = s.vr + (s.vr == s.vm || last);
    return (s_decimal_t) { digits, s.e10 + removed };
}

//  Write decimal as Python's repr does (see act_dtoa.h); returns length
static size_t
s_format (s_decimal_t decimal, char *out)
{
    char digits [20];
    int count = 0;
    char *first = digits + sizeof digits;
    for (uint64_t left = decimal.digits; left; left /= 10, count++)
        *--first = (char) ('0' + left % 10);
    int point = decimal.exponent + count;   //  value = 0.DIGITS * 10^point
    char *cursor = out;
    if (point <= -4 || point > 16) {
        *cursor++ = first [0];
        if (count > 1) {
            *cursor++ = '.';
            memcpy (cursor, first + 1, (size_t) count - 1);
            cursor += count - 1;
        }
        int exponent = point - 1;
        *cursor++ = 'e';
        *cursor++ = exponent < 0? '-': '+';
        if (exponent < 0)
            exponent = -exponent;
        if (exponent >= 100)
            *cursor++ = (char) ('0' + exponent / 100);
        *cursor++ = (char) ('0' + exponent / 10 % 10);
        *cursor++ = (char) ('0' + exponent % 10);
    }
    else
    if (point <= 0) {
        memcpy (cursor, "0.", 2);
        memset (cursor + 2, '0', (size_t) -point);
        cursor += 2 - point;
        memcpy (cursor, first, (size_t) count);
        cursor += count;
    }
    else
    if (point < count) {
        memcpy (cursor, first, (size_t) point);
        cursor [point] = '.';
        memcpy (cursor + point + 1, first + point, (size_t) (count - point));
        cursor += count + 1;
    }
    else {
        memcpy (cursor, first, (size_t) count);
        memset (cursor + count, '0', (size_t) (point - count));
        cursor += point;
        memcpy (cursor, ".0", 2);
        cursor += 2;
    }
    *cursor = 0;
    return (size_t) (cursor - out);
}

size_t
act_dtoa (double value, char *buffer)
{
    uint64_t bits;
    memcpy (&bits, &value, sizeof bits);
    uint64_t mantissa = bits & ((1ULL << S_MANTISSA_BITS) - 1);
    uint32_t exponent = (uint32_t) (bits >> S_MANTISSA_BITS) & 0x7FF;
    bool negative = bits >> 63;
    const char *special = exponent == 0x7FF? (mantissa? "nan": negative? "-inf": "inf")
                        : exponent == 0 && mantissa == 0? (negative? "-0.0": "0.0")
                        : NULL;
    if (special) {
        size_t length = strlen (special);
        memcpy (buffer, special, length + 1);
        return length;
    }
    //  Subnormals have no implicit bit and the exponent of the smallest
    //  normal; the 2 is for the quarter units of the interval's bounds
    uint64_t m2 = exponent? (1ULL << S_MANTISSA_BITS) | mantissa: mantissa;
    int32_t e2 = (int32_t) (exponent? exponent: 1) - S_EXPONENT_BIAS - S_MANTISSA_BITS - 2;
    //  The lower neighbour is twice as near at a power of two (but not at
    //  the smallest normal: the subnormals below are as close as above)
    uint32_t mm_shift = mantissa != 0 || exponent <= 1;
    s_decimal_t decimal = s_trim (s_scale (m2, e2, mm_shift));
    if (negative)
        *buffer = '-';
    return negative + s_format (decimal, buffer + negative);
}
