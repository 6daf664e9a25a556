/*  =========================================================================
    numbers_sample.h - the doubles test_numbers.c and numbers_print.c (for
    test_dtoa_repr.py) check: edge cases, every power of two (where the
    rounding interval is asymmetric), then random bit patterns of every
    exponent, subnormals included, from a fixed seed.
    ========================================================================= */

#include <float.h>
#include <stdint.h>
#include <string.h>

#define S_RANDOM_COUNT  100000
#define S_POWERS_OF_TWO 2098    //  2^-1074 .. 2^1023, each with both signs

static const double s_edge_cases [] = {
    0.0, -0.0, 0.1, 0.2, 0.3, 3.14, -2.5, 1.0 / 3, 2.0 / 3, 100.0, 1e15, 1e16, 1e17,
    1e21, 1e22, 1e23, 1e300, 1e308, -1e308, 1e-4, 1e-5, 9.5e-5, 0.000123456789,
    123456789.125, 9007199254740992.0, 9007199254740993.0, 18446744073709551616.0,
    5e-324, -5e-324, 1e-323, DBL_MIN, -DBL_MIN, DBL_MAX, -DBL_MAX, DBL_EPSILON,
    2.2250738585072009e-308,            //  The largest subnormal
    2.2250738585072011e-308,            //  strtod's famous hard case
    1.7976931348623157e308 / 3, 5e-324 * 3, 4.35e-322, 2.98023223876953125e-8,
    1.2345678901234567e-300, 9.999999999999999e22, 299792458.0, 6.02214076e23
};

#define S_EDGE_COUNT    (sizeof s_edge_cases / sizeof s_edge_cases [0])
#define S_SAMPLE_COUNT  (S_EDGE_COUNT + S_POWERS_OF_TWO + S_RANDOM_COUNT)

//  xorshift64*: fixed seeds make every failure reproducible
static uint64_t
s_sample_next (uint64_t *rng)
{
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    return *rng * 2685821657736338717ULL;
}

//  Sample index (0 <= index < S_SAMPLE_COUNT); rng starts at 0 and is
//  advanced by the random samples, which must be asked for in order
static double
s_sample (size_t index, uint64_t *rng)
{
    if (index < S_EDGE_COUNT)
        return s_edge_cases [index];
    index -= S_EDGE_COUNT;
    uint64_t bits;
    if (index < S_POWERS_OF_TWO) {
        //  2^(index/2 - 1074): the subnormal ones first, then the normal
        int power = (int) (index / 2) - 1074;
        bits = power < -1022? 1ULL << (power + 1074)
                            : (uint64_t) (power + 1023) << 52;
        bits |= (uint64_t) (index % 2) << 63;
    }
    else {
        if (*rng == 0)
            *rng = 0x243F6A8885A308D3ULL;
        do                      //  Not a NaN or an infinity
            bits = s_sample_next (rng);
        while (((bits >> 52) & 0x7FF) == 0x7FF);
        if (bits % 16 == 0)     //  A subnormal, 1 in 16
            bits &= (1ULL << 63) | ((1ULL << 52) - 1);
    }
    double value;
    memcpy (&value, &bits, sizeof value);
    return value;
}
