/* sin(x + shift * pi / 2) of an array, in loops the C compiler vectorises: the tape
   replay's sin and cos columns (sin, cos, -sin, -cos for shift 0, 1, 2, 3).

   glibc's sin and cos are scalar calls (about 10 ns an element on AVX2, NumPy's float64
   loop calls them too); these loops are branch-free arithmetic in double:

   - reduction: k = x * 2/pi rounded to the nearest integer (by adding and subtracting
     1.5 * 2^52), r = x - k * pi/2 with pi/2 in four parts (fdlibm's pio2_1, pio2_2,
     pio2_3 of 33 bits each, pio2_3t), kept as a double-double hi + lo. For |k| < 2^20
     each k * pio2_i (i < 3) is exact, x - k * pio2_1 is exact (Sterbenz), and the two
     next subtractions are exact two-sums: the error of hi + lo is about 2^-106, and
     k == 0 takes r = x itself (exact, -0 kept);
   - kernels: fdlibm's __kernel_sin and __kernel_cos (FreeBSD msun k_sin.c, k_cos.c,
     below 1 ulp on [-pi/4, pi/4] with the tail lo), both computed, the quadrant
     (k + shift) mod 4 choosing one and its sign;
   - an element the reduction does not serve, |x| > 2^19, inf, NaN, or an r so close
     to 0 (below 2^-40, k != 0) that the reduction's error would show, sets a flag, and
     a scalar pass afterwards recomputes such elements with libm (rare: never for finite
     |x| <= 2^19 but within 2^-40 of a multiple of pi/2).

   float arrays are computed in double and rounded once. Each loop has a copy built for
   AVX2 with FMA (gcc's target attribute, chosen per call by __builtin_cpu_supports, as
   the CPU allows) beside the baseline one; cyad_sine_baseline, set, forces the baseline
   (for tests). The FMA copy contracts the kernels' products and sums: both copies are
   tested against libm. */
#ifndef CYAD_VECTOR_SINE_H
#define CYAD_VECTOR_SINE_H

#include <math.h>
#include <stddef.h>
#include <Python.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CYAD_SINE_FMA_COPY 1
#define CYAD_SINE_TARGET_FMA __attribute__((target("avx2,fma")))
#else
#define CYAD_SINE_FMA_COPY 0
#define CYAD_SINE_TARGET_FMA
#endif

static int cyad_sine_baseline = 0;

#define CYAD_SINE_BOUND 524288.0               /* 2^19: |k| < 2^20 */
#define CYAD_SINE_CLOSE 9.094947017729282e-13  /* 2^-40 */
#define CYAD_SINE_ROUND 6755399441055744.0     /* 1.5 * 2^52 */

/* sin(x + shift * pi/2) of r's sin_r and cos_r, k the quadrant of x; NaN where libm must
   answer instead (close) */
static inline __attribute__((always_inline)) double
cyad_sine_select(double k, double shift, double sin_r, double cos_r, double close) {
    double q, result;
    /* the quadrant k + shift, as q in {-2, -1, 0, 1, 2} (mod 4) */
    k += shift;
    q = k - 4.0 * ((k * 0.25 + CYAD_SINE_ROUND) - CYAD_SINE_ROUND);
    result = fabs(q) == 1.0 ? cos_r : sin_r;
    result = q == -1.0 ? -result : result;
    result = fabs(q) == 2.0 ? -result : result;
    return close < CYAD_SINE_CLOSE ? NAN : result;
}

/* sin(x + shift * pi/2), and sin(x + shift2 * pi/2) in *second, of one number, from one
   reduction and the two kernels; NaN where libm must answer instead */
static inline __attribute__((always_inline)) double
cyad_sine_pair(double x, double shift, double shift2, double* second) {
    static const double two_over_pi = 6.36619772367581382433e-01,
        pio2_1 = 1.57079632673412561417e+00, pio2_2 = 6.07710050630396597660e-11,
        pio2_3 = 2.02226624871116645580e-21, pio2_3t = 8.47842766036889956997e-32,
        S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
        S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
        S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10,
        C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
        C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
        C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
    double k = (x * two_over_pi + CYAD_SINE_ROUND) - CYAD_SINE_ROUND;
    /* r = x - k pi/2 as hi + lo */
    double r1 = x - k * pio2_1;
    double b = -(k * pio2_2);
    double s = r1 + b, bb = s - r1;
    double e1 = (r1 - (s - bb)) + (b - bb);
    double c = -(k * pio2_3);
    double s2 = s + c, cc = s2 - s;
    double e2 = (s - (s2 - cc)) + (c - cc);
    double lo = (e1 + e2) - k * pio2_3t;
    double hi = s2 + lo;
    lo = lo - (hi - s2);
    double close, z, w, v, p, sin_r, cos_r, hz, w1;
    /* (one comparison: gcc's SSE2 vectoriser does not combine masks) */
    close = k != 0.0 ? fabs(hi) : 1.0;
    close = fabs(x) <= CYAD_SINE_BOUND ? close : 0.0;
    hi = k == 0.0 ? x : hi;
    lo = k == 0.0 ? 0.0 : lo;
    /* __kernel_sin(hi, lo, 1) and __kernel_cos(hi, lo) */
    z = hi * hi;
    w = z * z;
    p = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
    v = z * hi;
    sin_r = hi - ((z * (0.5 * lo - v * p) - lo) - v * S1);
    p = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
    hz = 0.5 * z;
    w1 = 1.0 - hz;
    cos_r = w1 + (((1.0 - w1) - hz) + (z * p - hi * lo));
    *second = cyad_sine_select(k, shift2, sin_r, cos_r, close);
    return cyad_sine_select(k, shift, sin_r, cos_r, close);
}

static inline __attribute__((always_inline)) double cyad_sine_one(double x, double shift) {
    double unused;
    return cyad_sine_pair(x, shift, shift, &unused);
}

static double cyad_sine_libm(double x, int shift) {
    switch (shift) {
        case 0: return sin(x);
        case 1: return cos(x);
        case 2: return -sin(x);
        default: return -cos(x);
    }
}

/* in blocks of CYAD_SINE_BLOCK: the vectorised pass writes NaN where libm must answer;
   a sum of the block in eight accumulators (vectorised: each lane its own chain) finds
   any NaN, and a scalar pass then puts libm's results there (gcc vectorises neither a
   flag's reduction nor a branch in the first pass). A float block is converted to
   double and back in buffers on the stack (gcc's SSE2 vectoriser does not mix them).
   With out2 (not NULL), the same block of sin(x + shift2 * pi/2) as well. */
#define CYAD_SINE_BLOCK 512
#define CYAD_SINE_LOOPS(suffix, target) \
target static void cyad_sine_block_##suffix(Py_ssize_t n, const double* restrict x, \
                                            double* restrict out, double* restrict out2, \
                                            int shift, int shift2) { \
    const double shift_ = shift, shift2_ = shift2; \
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, total; \
    Py_ssize_t i; \
    if (out2 == NULL) { \
        for (i = 0; i < n; i++) \
            out[i] = cyad_sine_one(x[i], shift_); \
    } else { \
        for (i = 0; i < n; i++) { \
            double second; \
            out[i] = cyad_sine_pair(x[i], shift_, shift2_, &second); \
            out2[i] = second; \
        } \
    } \
    for (i = 0; i + 8 <= n; i += 8) \
        for (int t = 0; t < 8; t++) acc[t] += out[i + t]; \
    total = (acc[0] + acc[1] + acc[2] + acc[3]) + (acc[4] + acc[5] + acc[6] + acc[7]); \
    for (; i < n; i++) total += out[i]; \
    if (total != total) { \
        for (i = 0; i < n; i++) { \
            if (out[i] != out[i]) { \
                out[i] = cyad_sine_libm(x[i], shift); \
                if (out2 != NULL) out2[i] = cyad_sine_libm(x[i], shift2); \
            } \
        } \
    } \
} \
target static void cyad_sine_double_##suffix(Py_ssize_t n, const double* x, double* out, \
                                             double* out2, int shift, int shift2) { \
    for (Py_ssize_t start = 0; start < n; start += CYAD_SINE_BLOCK) \
        cyad_sine_block_##suffix(n - start < CYAD_SINE_BLOCK ? n - start : CYAD_SINE_BLOCK, \
                                 x + start, out + start, out2 ? out2 + start : NULL, \
                                 shift, shift2); \
} \
target static void cyad_sine_float_##suffix(Py_ssize_t n, const float* x, float* out, \
                                            float* out2, int shift, int shift2) { \
    double xd[CYAD_SINE_BLOCK], od[CYAD_SINE_BLOCK], od2[CYAD_SINE_BLOCK]; \
    for (Py_ssize_t start = 0; start < n; start += CYAD_SINE_BLOCK) { \
        Py_ssize_t m = n - start < CYAD_SINE_BLOCK ? n - start : CYAD_SINE_BLOCK, i; \
        for (i = 0; i < m; i++) xd[i] = x[start + i]; \
        cyad_sine_block_##suffix(m, xd, od, out2 ? od2 : NULL, shift, shift2); \
        for (i = 0; i < m; i++) out[start + i] = (float)od[i]; \
        if (out2 != NULL) \
            for (i = 0; i < m; i++) out2[start + i] = (float)od2[i]; \
    } \
}

CYAD_SINE_LOOPS(base, )
#if CYAD_SINE_FMA_COPY
CYAD_SINE_LOOPS(fma, CYAD_SINE_TARGET_FMA)
#endif

static int cyad_sine_fma(void) {
#if CYAD_SINE_FMA_COPY
    return !cyad_sine_baseline && __builtin_cpu_supports("avx2")
           && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

/* out[i] = sin(x[i] + shift * pi/2), shift 0..3, and where out2 is not NULL,
   out2[i] = sin(x[i] + shift2 * pi/2); x, out and out2 do not overlap.
   (The baseline copy computes a pair as two passes: in SSE2's 16 registers the pair's
   loop spills, and runs slower than two passes.) */
static void cyad_sine_double(Py_ssize_t n, const double* x, double* out, double* out2,
                             int shift, int shift2) {
#if CYAD_SINE_FMA_COPY
    if (cyad_sine_fma()) { cyad_sine_double_fma(n, x, out, out2, shift, shift2); return; }
#endif
    cyad_sine_double_base(n, x, out, NULL, shift, 0);
    if (out2 != NULL) cyad_sine_double_base(n, x, out2, NULL, shift2, 0);
}

static void cyad_sine_float(Py_ssize_t n, const float* x, float* out, float* out2,
                            int shift, int shift2) {
#if CYAD_SINE_FMA_COPY
    if (cyad_sine_fma()) { cyad_sine_float_fma(n, x, out, out2, shift, shift2); return; }
#endif
    cyad_sine_float_base(n, x, out, NULL, shift, 0);
    if (out2 != NULL) cyad_sine_float_base(n, x, out2, NULL, shift2, 0);
}

#endif
