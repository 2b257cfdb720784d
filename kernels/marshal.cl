/* clayout in-place layout conversion kernels (OpenCL C 1.2).
 *
 * Prepended by the host: the macro text of clayout::layout::asta_macros (CLAYOUT_TILE,
 * CLAYOUT_ASTA_INDEX, ...). Specialized with the -D options of the table DEFINES
 * (src/marshal/defines.rs; a unit test keeps the two equal):
 *   WORD          uint or ulong (the word, w = 4 or 8 bytes)
 *   WORD_IS_ULONG defined (bare) when WORD is ulong
 *   S_            words per structure
 *   VEC           words per vector access of the BS kernels (1, 2 or 4; 16 bytes when > 1)
 *   BS_ENABLED    1 to compile the BS kernels (0 when a tile does not fit local memory)
 *   BS_K          tiles per work-group of the BS kernels
 *   BS_L          work-group size of the BS kernels
 *   PADW          local-memory padding period of the BS kernels, in words (one pad word each)
 *   P010_L        work-group size of the PTTWAC 010 kernels
 *   P010_BPW      flag bits per local 32-bit word (32 / spreading factor) of PTTWAC 010
 *   P010_FW       local flag words of PTTWAC 010 (padding included)
 *   P100_PV       words per vector access of the work-item PTTWAC 100 kernels (1, 2 or 4)
 *   P100_L        work-group size of the warp-centric PTTWAC 100 kernel
 *   P100_SPEC     1: p100_wi reads the next super-element while claiming it; 0: after
 *   P100_RUN      the one PTTWAC 100 kernel compiled: 0 p100_wi, 1 p100_wiv, 2 p100_wp, 3 p100_wg
 *
 * The tile T is CLAYOUT_TILE. A tile of the AoS layout is T x S words ([i][s]); the same
 * tile in ASTA is S x T ([s][i]); both occupy the same T*S contiguous words.
 */

#define T_ CLAYOUT_TILE
#define TS ((uint)T_ * (uint)S_)

#if VEC == 4
#  define VT uint4
#  if defined(WORD_IS_ULONG)
#    error "VEC 4 needs 4-byte words"
#  endif
#elif VEC == 2
#  if defined(WORD_IS_ULONG)
#    define VT ulong2
#  else
#    define VT uint2
#  endif
#else
#  define VT WORD
#endif

#if P100_PV == 4
#  define PT uint4
#elif P100_PV == 2
#  if defined(WORD_IS_ULONG)
#    define PT ulong2
#  else
#    define PT uint2
#  endif
#else
#  define PT WORD
#endif

typedef union { VT v; WORD a[VEC]; } vword;

/* FOLD*(x): a uint computed from every bit of x. `flag_index + (FOLD(x) & zero)`, with the
 * kernel argument zero = 0 (unknown to the compiler), makes a flag access address-dependent
 * on loaded data: the hardware cannot perform it before those loads have returned, which
 * orders "read the start, then test its done bit" without relying on mem_fence (OpenCL 1.2
 * atomics are relaxed, and mem_fence is not a device-scope fence everywhere). */
#if defined(WORD_IS_ULONG)
#  define FOLDW(x) ((uint)(x) ^ (uint)((x) >> 32))
#else
#  define FOLDW(x) ((uint)(x))
#endif
#if P100_PV == 4
#  define FOLDP(v) ((v).x ^ (v).y ^ (v).z ^ (v).w)
#elif P100_PV == 2
#  define FOLDP(v) (FOLDW((v).x) ^ FOLDW((v).y))
#else
#  define FOLDP(v) FOLDW(v)
#endif

/* ---------------------------------------------------------------------------------------
 * BS: barrier-synchronized transposition of BS_K whole tiles per work-group through local
 * memory. Reads and writes are contiguous (the tiles of a group are contiguous in both
 * layouts), in VEC-word vectors. Local index j is stored at PAD(j) = j + j/PADW so that the
 * strided (stride S or T) local reads of the transposition spread over the banks.
 * ------------------------------------------------------------------------------------- */
#define PAD(j) ((j) + (j) / PADW)
#define BS_WORDS (BS_K * TS)
#define BS_NV (BS_WORDS / VEC)
#define BS_PER_WI ((BS_NV + BS_L - 1) / BS_L)

/* in-tile source index of output word q: AoS -> ASTA reads [i][s] for output [s][i] */
#define SRC_TO_ASTA(q) (((q) % T_) * S_ + (q) / T_)
#define SRC_TO_AOS(q) (((q) % S_) * T_ + (q) / S_)

#if BS_ENABLED
inline void bs_body(__global WORD* data, ulong base, uint ntiles, __local WORD* lm,
                    const int to_asta)
{
    const uint lid = get_local_id(0);
    const uint tile0 = get_group_id(0) * BS_K;
    const uint nt = min((uint)BS_K, ntiles - tile0);
    const uint nv = nt * TS / VEC;
    __global VT* p = (__global VT*)(data + base + (ulong)tile0 * TS);
    vword r[BS_PER_WI];
    for (uint k = 0; k < BS_PER_WI; ++k) {
        const uint v = lid + k * BS_L;
        if (v < nv) r[k].v = p[v];
    }
    for (uint k = 0; k < BS_PER_WI; ++k) {
        const uint v = lid + k * BS_L;
        if (v < nv) {
            for (uint c = 0; c < VEC; ++c) lm[PAD(v * VEC + c)] = r[k].a[c];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = 0; k < BS_PER_WI; ++k) {
        const uint v = lid + k * BS_L;
        if (v < nv) {
            vword o;
            for (uint c = 0; c < VEC; ++c) {
                const uint q = v * VEC + c;
                const uint t = q / TS, e = q % TS;
                const uint src = to_asta ? SRC_TO_ASTA(e) : SRC_TO_AOS(e);
                o.a[c] = lm[PAD(t * TS + src)];
            }
            p[v] = o.v;
        }
    }
}

__kernel __attribute__((reqd_work_group_size(BS_L, 1, 1)))
void bs_aos_to_asta(__global WORD* data, ulong base, uint ntiles)
{
    __local WORD lm[PAD(BS_WORDS) + 1];
    bs_body(data, base, ntiles, lm, 1);
}

__kernel __attribute__((reqd_work_group_size(BS_L, 1, 1)))
void bs_asta_to_aos(__global WORD* data, ulong base, uint ntiles)
{
    __local WORD lm[PAD(BS_WORDS) + 1];
    bs_body(data, base, ntiles, lm, 0);
}
#endif /* BS_ENABLED */

/* ---------------------------------------------------------------------------------------
 * PTTWAC 010 (thesis Algorithm 1, section 4.5): one work-group per tile, for tiles too big
 * for local memory. The tile is an n = T*S word permutation p -> p*MUL mod (n-1) (0 and
 * n-1 fixed), MUL = T for AoS -> ASTA ([T][S] -> [S][T]) and S for the inverse. One done
 * bit per element in local memory, with spreading (P010_BPW bits per word, section 4.5.1)
 * and padding (one word each 32, so consecutive flag words of a spread map to distinct
 * banks and atomic locks).
 *
 * Correctness of the start: a work-item reads its start element BEFORE testing the start's
 * done bit (the thesis tests first), and the test is address-dependent on the value read
 * (FOLD above) so that neither compiler nor hardware can perform it earlier. The only writer of element e is the work-item that set
 * done[e], and it sets the bit before writing; so if the start's bit is still clear after
 * the read, the value read is the original one, which is also exactly what any carrier
 * racing into e holds; whichever of them wins the next bit stores it.
 * ------------------------------------------------------------------------------------- */
#define P010_WORD(e) (((e) / P010_BPW) + ((e) / P010_BPW) / 32)
#define P010_BIT(e) (1u << ((e) % P010_BPW))

#define P010_KERNEL(NAME, MUL)                                                               \
__kernel __attribute__((reqd_work_group_size(P010_L, 1, 1)))                                \
void NAME(__global WORD* data, ulong base, uint zero)                                       \
{                                                                                           \
    __local volatile uint flags[P010_FW];                                                   \
    const uint lid = get_local_id(0);                                                       \
    for (uint k = lid; k < P010_FW; k += P010_L) flags[k] = 0;                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                                           \
    __global volatile WORD* a = data + base + (ulong)get_group_id(0) * TS;                  \
    const uint mod = TS - 1;                                                                \
    for (uint i = lid + 1; i < mod; i += P010_L) {                                          \
        uint next = (uint)(((ulong)i * (MUL)) % mod);                                       \
        if (next == i) continue;                                                            \
        if (flags[P010_WORD(i)] & P010_BIT(i)) continue;                                    \
        WORD r1 = a[i];                                                                     \
        if (atomic_or(&flags[P010_WORD(i) + (FOLDW(r1) & zero)], 0u) & P010_BIT(i)) continue; \
        for (;;) {                                                                          \
            WORD r2 = a[next];                                                              \
            if (atomic_or(&flags[P010_WORD(next)], P010_BIT(next)) & P010_BIT(next)) break; \
            mem_fence(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);                          \
            a[next] = r1;                                                                   \
            r1 = r2;                                                                        \
            next = (uint)(((ulong)next * (MUL)) % mod);                                     \
        }                                                                                   \
    }                                                                                       \
}

/* Only where the BS kernels cannot run: a program holds the kernels its plan launches, since
 * on NVIDIA each kernel adds to what loading the program takes (docs/cost-model.md). */
#if !BS_ENABLED
P010_KERNEL(p010_aos_to_asta, T_)
P010_KERNEL(p010_asta_to_aos, S_)
#endif

/* ---------------------------------------------------------------------------------------
 * PTTWAC 100 (thesis Algorithm 2, section 4.6): transposition of T-word super-elements,
 * an A x B array of them becomes B x A: super-element p -> p*A mod (A*B-1). One done bit
 * per super-element in the global `flags` (zeroed by the host before the launch). Same
 * start ordering as PTTWAC 010 above (read the start, then test its bit).
 *
 * p100_wi: one work-item per start super-element, the whole super-element in registers
 *   (T/P100_PV vectors of P100_PV words): no barrier, no broadcast, any work-group size,
 *   many independent chains in flight per compute unit.
 * p100_wg: warp/wavefront-centric (section 4.6.1): one work-group of P100_L work-items (a
 *   warp or wavefront) per start super-element, each lane holding T/P100_L words in
 *   registers (register tiling); the done bit is set by lane 0 and broadcast through local
 *   memory.
 * ------------------------------------------------------------------------------------- */
#define P100_NV (T_ / P100_PV)
#define FLAG_MASK(p) (1u << (uint)((p) & 31))

/* Reads the start super-element p into r1 and tests p's done bit after the read (address
 * dependency, see FOLD); runs ON_DONE when p's original was already taken by a chain. */
#define P100_TAKE_START(a, p, r1, ON_DONE)                                                  \
    {                                                                                       \
        uint dep_ = 0;                                                                      \
        for (uint k = 0; k < P100_NV; ++k) {                                                \
            r1[k] = a[(p) * P100_NV + k];                                                   \
            dep_ ^= FOLDP(r1[k]);                                                           \
        }                                                                                   \
        if (atomic_or(&flags[((p) >> 5) + (dep_ & zero)], 0u) & FLAG_MASK(p)) { ON_DONE; }  \
    }

/* One hop of a chain carrying r1 to `next`: claims `next`, reads its original, writes r1
 * there and advances; runs ON_LOST (and writes nothing) when another chain claimed it. */
#if P100_SPEC
/* speculative: read the next super-element while claiming it */
#  define P100_HOP(a, next, r1, ON_LOST)                                                    \
    {                                                                                       \
        PT r2[P100_NV];                                                                     \
        for (uint k = 0; k < P100_NV; ++k) r2[k] = a[(next) * P100_NV + k];                 \
        if (atomic_or(&flags[(next) >> 5], FLAG_MASK(next)) & FLAG_MASK(next)) { ON_LOST; } \
        P100_HOP_STORE(a, next, r1, r2)                                                     \
    }
#else
/* claim first, then read: a lost claim costs no read of T words */
#  define P100_HOP(a, next, r1, ON_LOST)                                                    \
    {                                                                                       \
        if (atomic_or(&flags[(next) >> 5], FLAG_MASK(next)) & FLAG_MASK(next)) { ON_LOST; } \
        PT r2[P100_NV];                                                                     \
        for (uint k = 0; k < P100_NV; ++k) r2[k] = a[(next) * P100_NV + k];                 \
        P100_HOP_STORE(a, next, r1, r2)                                                     \
    }
#endif
/* only the claimer of `next` ever writes it, and only after reading it */
#define P100_HOP_STORE(a, next, r1, r2)                                                     \
    for (uint k = 0; k < P100_NV; ++k) {                                                    \
        a[(next) * P100_NV + k] = r1[k];                                                    \
        r1[k] = r2[k];                                                                      \
    }                                                                                       \
    next = ((next) * A) % mod;

#define P100_WI_KERNEL(NAME, QUAL)                                                          \
__kernel void NAME(__global WORD* data, ulong base, __global volatile uint* flags,          \
                   uint A, uint B, uint zero)                                               \
{                                                                                           \
    const ulong mod = (ulong)A * B - 1;                                                     \
    const ulong p = get_global_id(0);                                                       \
    if (p == 0 || p >= mod) return;                                                         \
    ulong next = (p * A) % mod;                                                             \
    if (next == p) return;                                                                  \
    if (flags[p >> 5] & FLAG_MASK(p)) return;                                               \
    __global QUAL PT* a = (__global QUAL PT*)(data + base);                                 \
    PT r1[P100_NV];                                                                         \
    P100_TAKE_START(a, p, r1, return)                                                       \
    for (;;) P100_HOP(a, next, r1, break)                                                   \
}

/* One PTTWAC 100 kernel per program, the one P100_RUN names. */
#if P100_RUN == 0
P100_WI_KERNEL(p100_wi, )
#endif
/* p100_wiv: p100_wi with volatile data accesses (bypassing non-coherent L1 caches); a
 * diagnostic variant. */
#if P100_RUN == 1
P100_WI_KERNEL(p100_wiv, volatile)
#endif

/* p100_wp: p100_wi with persistent work-items. Each of the launched work-items takes the
 * starts gid+1, gid+1+G, ... (G = global size) in turn, one step per loop iteration: either
 * the next candidate start or the next hop of the chain it carries. With one work-item per
 * start, on structures of odd S (a few very long cycles) nearly every start is read before a
 * chain reaches it, and the chain that does reach it reads it again and then reads one more
 * super-element it loses: about three reads per write. Here only G chains start at first;
 * a work-item whose chain ends takes later starts, most of which are already done (one
 * flag-word read each), so the wasted reads are about two per chain, not per super-element. */
#if P100_RUN == 2
__kernel void p100_wp(__global WORD* data, ulong base, __global volatile uint* flags,
                      uint A, uint B, uint zero)
{
    const ulong mod = (ulong)A * B - 1;
    const ulong G = get_global_size(0);
    __global PT* a = (__global PT*)(data + base);
    PT r1[P100_NV];
    ulong cand = get_global_id(0) + 1;
    ulong next = 0;
    bool carrying = false;
    for (;;) {
        if (carrying) {
            P100_HOP(a, next, r1, carrying = false; continue)
        } else {
            if (cand >= mod) return;
            const ulong p = cand;
            cand += G;
            next = (p * A) % mod;
            if (next == p) continue;
            if (flags[p >> 5] & FLAG_MASK(p)) continue;
            P100_TAKE_START(a, p, r1, continue)
            carrying = true;
        }
    }
}
#endif /* P100_RUN == 2 */

#define P100_PER ((T_ + P100_L - 1) / P100_L)

#if P100_RUN == 3
__kernel __attribute__((reqd_work_group_size(P100_L, 1, 1)))
void p100_wg(__global WORD* data, ulong base, __global volatile uint* flags, uint A, uint B,
             uint zero)
{
    __local volatile int decision;
    __local uint deps[P100_L];
    const ulong nse = (ulong)A * B;
    const ulong mod = nse - 1;
    const ulong p = get_group_id(0);
    const uint lid = get_local_id(0);
    if (p == 0 || p >= mod) return;
    ulong next = (p * A) % mod;
    if (next == p) return;
    __global WORD* a = data + base;
    WORD r1[P100_PER], r2[P100_PER];
    uint dep = 0;
    #pragma unroll
    for (uint j = 0; j < P100_PER; ++j) {
        const uint k = lid + j * P100_L;
        if (k < T_) {
            r1[j] = a[p * T_ + k];
            dep ^= FOLDW(r1[j]);
        }
    }
    deps[lid] = dep;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) {
        for (uint j = 1; j < P100_L; ++j) dep ^= deps[j];
        decision = (atomic_or(&flags[(p >> 5) + (dep & zero)], 0u) & FLAG_MASK(p)) != 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (decision) return;
    for (;;) {
        #pragma unroll
        for (uint j = 0; j < P100_PER; ++j) {
            const uint k = lid + j * P100_L;
            if (k < T_) r2[j] = a[next * T_ + k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) decision = (atomic_or(&flags[next >> 5], FLAG_MASK(next)) & FLAG_MASK(next)) != 0;
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (decision) break;
        #pragma unroll
        for (uint j = 0; j < P100_PER; ++j) {
            const uint k = lid + j * P100_L;
            if (k < T_) a[next * T_ + k] = r1[j];
            r1[j] = r2[j];
        }
        next = (next * A) % mod;
    }
}

#endif /* P100_RUN == 3 */

/* ---------------------------------------------------------------------------------------
 * Helpers for the partial tile (exact, not tuned): row copies between the buffer and the
 * scratch, a transposing copy, and a range reversal (rotations for the SoA compaction).
 * ------------------------------------------------------------------------------------- */

/* dst[doff + row*dstride + j] = src[soff + row*sstride + j], row < rows, j < rowlen */
__kernel void copy_rows(__global WORD* dst, ulong doff, __global const WORD* src, ulong soff,
                        ulong rows, ulong rowlen, ulong dstride, ulong sstride)
{
    const ulong e = get_global_id(0);
    if (e >= rows * rowlen) return;
    const ulong row = e / rowlen, j = e % rowlen;
    dst[doff + row * dstride + j] = src[soff + row * sstride + j];
}

/* dst (C x R, row-major) = transpose of src (R x C, row-major) */
__kernel void copy_transpose(__global WORD* dst, ulong doff, __global const WORD* src,
                             ulong soff, ulong R, ulong C)
{
    const ulong e = get_global_id(0);
    if (e >= R * C) return;
    const ulong c = e / R, rr = e % R;
    dst[doff + e] = src[soff + rr * C + c];
}

/* reverses data[start .. start+len) in place: each work-item swaps one pair */
__kernel void reverse_range(__global WORD* data, ulong start, ulong len)
{
    const ulong k = get_global_id(0);
    if (k >= len / 2) return;
    const ulong x = start + k, y = start + len - 1 - k;
    const WORD a = data[x];
    const WORD b = data[y];
    data[x] = b;
    data[y] = a;
}
