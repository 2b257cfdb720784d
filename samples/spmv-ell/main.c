/* Power iteration with a sparse matrix in ELL format: y = A x, x = y / ||y||, N times, the way a
 * legacy OpenCL code keeps its matrix: every row padded to K entries, the column indices and
 * values of row r stored as a structure of K words (row-major ELL: cols[r*K + k]).
 *   spmv-ell [-n ROWS] [-k K] [-i ITERATIONS] [--mtx FILE] [--platform NAME]
 *            [--rowmajor | --soa | --colmajor] [--asta] [--kernels DIR]
 * The matrix is generated (banded, random entries from a seeded PRNG, rows of K-3 to K entries)
 * or read from a Matrix Market file (square, coordinate; symmetric files are expanded).
 * Host layouts: --rowmajor (the default) keeps the matrix row-major, AoS(K) in clayout's terms;
 * --soa (or --colmajor) keeps it as the standard column-major ELL (cols[k*n + r]: K arrays of n
 * words, SoA(K)), the hand-written coalesced peer. --asta runs the kernel written by hand for
 * ASTA addressing (spmv_asta.cl, K = 32 only), which works only under clayout: clayout converts
 * the matrix from the host layout (row-major, or column-major with --soa) to ASTA before the
 * first launch.
 * Prints a checksum of the last y (equal checksums = identical bits), its norm (the estimate of
 * the dominant eigenvalue), the kernel time (the iteration loop, between clFinish calls) and the
 * total time (writes, loop and reads). */
#include "../common/sample.h"

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-n ROWS] [-k K] [-i ITERATIONS] [--mtx FILE] [--platform NAME] "
                    "[--rowmajor | --soa | --colmajor] [--asta] [--kernels DIR]\n", argv0);
    exit(2);
}

/* Reads a square Matrix Market coordinate matrix into row-major ELL with K entries per row. */
static void read_mtx(const char *file, size_t *pn, unsigned *pk, int **pcols, float **pvals)
{
    FILE *f = fopen(file, "r");
    if (!f) { fprintf(stderr, "cannot open %s\n", file); exit(1); }
    char line[4096];
    int pattern = 0, symmetric = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, "%%MatrixMarket matrix coordinate", 32)) {
        fprintf(stderr, "%s: not a Matrix Market coordinate matrix\n", file);
        exit(1);
    }
    pattern = strstr(line, "pattern") != NULL;
    symmetric = strstr(line, "symmetric") != NULL || strstr(line, "hermitian") != NULL;
    if (strstr(line, "complex")) { fprintf(stderr, "%s: complex matrices are not supported\n", file); exit(1); }
    do {
        if (!fgets(line, sizeof line, f)) { fprintf(stderr, "%s: no size line\n", file); exit(1); }
    } while (line[0] == '%');
    unsigned long rows, cols, nnz;
    if (sscanf(line, "%lu %lu %lu", &rows, &cols, &nnz) != 3 || rows != cols || rows == 0) {
        fprintf(stderr, "%s: need a square matrix\n", file);
        exit(1);
    }
    unsigned long *r = malloc(2 * nnz * sizeof *r), *c = malloc(2 * nnz * sizeof *c);
    float *v = malloc(2 * nnz * sizeof *v);
    size_t *len = calloc(rows, sizeof *len), m = 0;
    for (unsigned long e = 0; e < nnz; e++) {
        double val = 1.0;
        unsigned long ri, ci;
        if (!fgets(line, sizeof line, f) || sscanf(line, "%lu %lu %lf", &ri, &ci, &val) < 2 + !pattern ||
            ri < 1 || ri > rows || ci < 1 || ci > cols) {
            fprintf(stderr, "%s: bad entry %lu\n", file, e + 1);
            exit(1);
        }
        r[m] = ri - 1, c[m] = ci - 1, v[m] = (float)val, len[ri - 1]++, m++;
        if (symmetric && ri != ci)
            r[m] = ci - 1, c[m] = ri - 1, v[m] = (float)val, len[ci - 1]++, m++;
    }
    fclose(f);
    size_t kmax = 0;
    for (size_t i = 0; i < rows; i++) if (len[i] > kmax) kmax = len[i];
    if (kmax > *pk) {
        fprintf(stderr, "%s: rows of up to %zu entries; pass -k %zu or more (the ASTA kernel and the side file assume 32)\n", file, kmax, kmax);
        exit(1);
    }
    unsigned K = *pk;
    int *ec = malloc(rows * K * sizeof *ec);
    float *ev = malloc(rows * K * sizeof *ev);
    for (size_t i = 0; i < rows; i++)
        for (unsigned k = 0; k < K; k++) ec[i * K + k] = (int)i, ev[i * K + k] = 0.0f;
    memset(len, 0, rows * sizeof *len);
    for (size_t e = 0; e < m; e++) {
        size_t at = r[e] * K + len[r[e]]++;
        ec[at] = (int)c[e], ev[at] = v[e];
    }
    free(r), free(c), free(v), free(len);
    *pn = rows, *pcols = ec, *pvals = ev;
}

int main(int argc, char **argv)
{
    size_t n = 1 << 20;
    unsigned K = 32;
    int iters = 10, colmajor = 0, asta = 0;
    const char *platform = getenv("SAMPLE_PLATFORM"), *dir = NULL, *mtx = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-k") && i + 1 < argc) K = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mtx") && i + 1 < argc) mtx = argv[++i];
        else if (!strcmp(argv[i], "--platform") && i + 1 < argc) platform = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--soa") || !strcmp(argv[i], "--colmajor")) colmajor = 1;
        else if (!strcmp(argv[i], "--rowmajor")) colmajor = 0;
        else if (!strcmp(argv[i], "--asta")) asta = 1;
        else usage(argv[0]);
    }
    if (K < 1) usage(argv[0]);
    if (asta && K != 32) {
        fprintf(stderr, "--asta needs K = 32: spmv_asta.cl's annotations say AoS(32) and SoA(32)\n");
        return 2;
    }
    char path[4096];
    sample_kernel_path(path, sizeof path, argv[0], dir, "spmv", asta ? "asta" : colmajor ? "soa" : "aos");
    const char *kname = asta ? (colmajor ? "ell_spmv_asta_cm" : "ell_spmv_asta_rm")
                             : (colmajor ? "ell_spmv_colmajor" : "ell_spmv_rowmajor");

    /* The matrix, row-major (entry k of row r at r*K + k); padding: column r, value 0. */
    int *cols;
    float *vals;
    uint64_t seed = 2024;
    if (mtx)
        read_mtx(mtx, &n, &K, &cols, &vals);
    else {
        cols = malloc(n * K * sizeof *cols);
        vals = malloc(n * K * sizeof *vals);
        if (!cols || !vals) { fprintf(stderr, "out of host memory\n"); return 1; }
        size_t band = n < 8192 ? n / 2 : 4096;
        for (size_t r = 0; r < n; r++) {
            unsigned len = K > 3 ? K - sample_rand(&seed) % 4 : K;
            for (unsigned k = 0; k < K; k++) {
                size_t at = r * K + k;
                if (k == 0) cols[at] = (int)r, vals[at] = sample_uniform(&seed, 1.0f, 2.0f);
                else if (k < len) {
                    size_t off = sample_rand(&seed) % (2 * band + 1);
                    cols[at] = (int)((r + n + off - band) % n);
                    vals[at] = sample_uniform(&seed, 0.0f, 1.0f);
                } else
                    cols[at] = (int)r, vals[at] = 0.0f;
            }
        }
    }
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) x[i] = sample_uniform(&seed, 0.5f, 1.5f);

    sample_cl s;
    sample_open(&s, platform);
    cl_program prog = sample_build(&s, path, "");
    cl_kernel kspmv = sample_kernel(prog, kname);
    cl_kernel kpart = sample_kernel(prog, "ell_sumsq_partial");
    cl_kernel kfin = sample_kernel(prog, "ell_sumsq_final");
    cl_kernel kscale = sample_kernel(prog, "ell_scale");

    /* The column-major peer keeps its matrix that way on the host: transpose before the clock. */
    int *hc = cols;
    float *hv = vals;
    if (colmajor) {
        hc = malloc(n * K * sizeof *hc);
        hv = malloc(n * K * sizeof *hv);
        for (size_t r = 0; r < n; r++)
            for (unsigned k = 0; k < K; k++) hc[k * n + r] = cols[r * K + k], hv[k * n + r] = vals[r * K + k];
    }
    size_t mbytes = n * K * sizeof(float);
    cl_uint nn = (cl_uint)n, kk = K, ngroups = (cl_uint)((n + 255) / 256);
    float norm = 0;

    double t0 = sample_now_ms();
    cl_mem bc = sample_buffer(&s, mbytes), bv = sample_buffer(&s, mbytes);
    cl_mem bx = sample_buffer(&s, n * sizeof(float)), by = sample_buffer(&s, n * sizeof(float));
    cl_mem bp = sample_buffer(&s, ngroups * sizeof(float)), bn = sample_buffer(&s, sizeof(float));
    CHECK(clEnqueueWriteBuffer(s.queue, bc, CL_TRUE, 0, mbytes, hc, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(s.queue, bv, CL_TRUE, 0, mbytes, hv, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(s.queue, bx, CL_TRUE, 0, n * sizeof(float), x, 0, NULL, NULL));
    ARG(kspmv, 0, bc);
    ARG(kspmv, 1, bv);
    ARG(kspmv, 2, bx);
    ARG(kspmv, 3, by);
    ARG(kspmv, 4, nn);
    ARG(kspmv, 5, kk);
    ARG(kpart, 0, by);
    ARG(kpart, 1, bp);
    ARG(kpart, 2, nn);
    ARG(kfin, 0, bp);
    ARG(kfin, 1, bn);
    ARG(kfin, 2, ngroups);
    ARG(kscale, 0, by);
    ARG(kscale, 1, bn);
    ARG(kscale, 2, bx);
    ARG(kscale, 3, nn);
    CHECK(clFinish(s.queue));
    double tk = sample_now_ms();
    for (int it = 0; it < iters; it++) {
        sample_launch(&s, kspmv, n, 128);
        sample_launch(&s, kpart, n, 256);
        sample_launch(&s, kfin, 256, 256);
        if (it + 1 < iters)
            sample_launch(&s, kscale, n, 128);
    }
    CHECK(clFinish(s.queue));
    double t1 = sample_now_ms();
    CHECK(clEnqueueReadBuffer(s.queue, by, CL_TRUE, 0, n * sizeof(float), y, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(s.queue, bn, CL_TRUE, 0, sizeof norm, &norm, 0, NULL, NULL));
    double t2 = sample_now_ms();

    uint64_t h = sample_fnv(y, n * sizeof *y, SAMPLE_FNV_INIT);
    h = sample_fnv(&norm, sizeof norm, h);
    printf("spmv-ell %s%s: %zu rows, K = %u%s%s, %d iterations on %s\n", asta ? "asta from " : "",
           colmajor ? "column-major" : "row-major", n, K, mtx ? ", " : "", mtx ? mtx : "", iters, s.device_name);
    printf("checksum: %016llx (norm of y %.6e)\n", (unsigned long long)h, iters ? norm : 0.0f);
    printf("kernel_ms: %.3f\n", t1 - tk);
    printf("total_ms: %.3f\n", t2 - t0);

    cl_mem all[] = { bc, bv, bx, by, bp, bn };
    for (int i = 0; i < 6; i++) clReleaseMemObject(all[i]);
    cl_kernel ks[] = { kspmv, kpart, kfin, kscale };
    for (int i = 0; i < 4; i++) clReleaseKernel(ks[i]);
    clReleaseProgram(prog);
    sample_release(&s);
    if (colmajor) free(hc), free(hv);
    free(cols), free(vals), free(x), free(y);
    return 0;
}
