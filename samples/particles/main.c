/* Charged particles in a box under a fixed field of attractors, the way a legacy OpenCL code
 * keeps them: one array of particle structures (8 floats: position, velocity, mass, charge),
 * three kernels per time step on that one buffer (accelerate, drift, bounce), the result read
 * back at the end.
 *   particles [-n PARTICLES] [-i STEPS] [--platform NAME] [--soa | --asta] [--kernels DIR]
 * --soa runs the hand-written discrete-array peer (one buffer of 8 arrays); --asta runs the
 * kernels written by hand for ASTA addressing (particles_asta.cl), which work only under clayout:
 * clayout converts the buffer to ASTA before the first launch and back for the read.
 * Prints a checksum of the particles in AoS order (equal checksums = identical bits), the mean
 * position and the kinetic energy, the kernel time (the time-step loop, between clFinish calls)
 * and the total time (writes, loop and reads). */
#include "../common/sample.h"

typedef struct {
    float x, y, z, vx, vy, vz, mass, charge;
} particle_t;
#define NF 8
#define NATTR 16

int main(int argc, char **argv)
{
    size_t n = 1 << 20;
    int iters = 10, soa = 0, asta = 0;
    const char *platform = getenv("SAMPLE_PLATFORM"), *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--platform") && i + 1 < argc) platform = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--soa")) soa = 1;
        else if (!strcmp(argv[i], "--asta")) asta = 1;
        else { fprintf(stderr, "usage: %s [-n PARTICLES] [-i STEPS] [--platform NAME] [--soa | --asta] [--kernels DIR]\n", argv[0]); return 2; }
    }
    if (soa && asta) { fprintf(stderr, "--soa and --asta exclude each other\n"); return 2; }
    const char *variant = soa ? "soa" : asta ? "asta" : "aos";
    char path[4096];
    sample_kernel_path(path, sizeof path, argv[0], dir, "particles", variant);

    particle_t *p = malloc(n * sizeof *p);
    if (!p) { fprintf(stderr, "out of host memory\n"); return 1; }
    uint64_t seed = 1234;
    cl_float4 attr[NATTR];
    for (int j = 0; j < NATTR; j++) {
        attr[j].s[0] = sample_uniform(&seed, -0.8f, 0.8f);
        attr[j].s[1] = sample_uniform(&seed, -0.8f, 0.8f);
        attr[j].s[2] = sample_uniform(&seed, -0.8f, 0.8f);
        attr[j].s[3] = sample_uniform(&seed, 0.05f, 0.2f);
    }
    for (size_t i = 0; i < n; i++) {
        p[i].x = sample_uniform(&seed, -1.0f, 1.0f);
        p[i].y = sample_uniform(&seed, -1.0f, 1.0f);
        p[i].z = sample_uniform(&seed, -1.0f, 1.0f);
        p[i].vx = sample_uniform(&seed, -0.1f, 0.1f);
        p[i].vy = sample_uniform(&seed, -0.1f, 0.1f);
        p[i].vz = sample_uniform(&seed, -0.1f, 0.1f);
        p[i].mass = sample_uniform(&seed, 0.5f, 2.0f);
        p[i].charge = sample_uniform(&seed, -1.0f, 1.0f);
    }

    sample_cl s;
    sample_open(&s, platform);
    cl_program prog = sample_build(&s, path, "");
    cl_kernel ka = sample_kernel(prog, "particles_accelerate");
    cl_kernel kd = sample_kernel(prog, "particles_drift");
    cl_kernel kb = sample_kernel(prog, "particles_bounce");

    /* The SoA peer keeps its fields apart on the host too: split them before the clock starts. */
    float *host = (float *)p;
    if (soa) {
        host = malloc(n * sizeof *p);
        for (int f = 0; f < NF; f++)
            for (size_t i = 0; i < n; i++) host[f * n + i] = ((float *)&p[i])[f];
    }
    size_t bytes = n * sizeof *p;
    cl_uint nn = (cl_uint)n, nattr = NATTR;
    float dt = 0.001f, box = 1.0f, damping = 0.9f;

    double t0 = sample_now_ms();
    cl_mem buf = sample_buffer(&s, bytes), abuf = sample_buffer(&s, sizeof attr);
    CHECK(clEnqueueWriteBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(s.queue, abuf, CL_TRUE, 0, sizeof attr, attr, 0, NULL, NULL));
    ARG(ka, 0, buf);
    ARG(ka, 1, abuf);
    ARG(ka, 2, nattr);
    ARG(ka, 3, nn);
    ARG(ka, 4, dt);
    ARG(kd, 0, buf);
    ARG(kd, 1, nn);
    ARG(kd, 2, dt);
    ARG(kb, 0, buf);
    ARG(kb, 1, nn);
    ARG(kb, 2, box);
    ARG(kb, 3, damping);
    CHECK(clFinish(s.queue));
    double tk = sample_now_ms();
    for (int it = 0; it < iters; it++) {
        sample_launch(&s, ka, n, 128);
        sample_launch(&s, kd, n, 128);
        sample_launch(&s, kb, n, 128);
    }
    CHECK(clFinish(s.queue));
    double t1 = sample_now_ms();
    CHECK(clEnqueueReadBuffer(s.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    double t2 = sample_now_ms();
    if (soa) {
        for (int f = 0; f < NF; f++)
            for (size_t i = 0; i < n; i++) ((float *)&p[i])[f] = host[f * n + i];
        free(host);
    }

    uint64_t h = sample_fnv(p, bytes, SAMPLE_FNV_INIT);
    double cx = 0, cy = 0, cz = 0, ek = 0;
    for (size_t i = 0; i < n; i++) {
        cx += p[i].x;
        cy += p[i].y;
        cz += p[i].z;
        ek += 0.5 * p[i].mass * ((double)p[i].vx * p[i].vx + (double)p[i].vy * p[i].vy + (double)p[i].vz * p[i].vz);
    }
    printf("particles %s: %zu particles, %d attractors, %d steps on %s\n", variant, n, NATTR, iters, s.device_name);
    printf("checksum: %016llx (mean position %.6f %.6f %.6f, kinetic energy %.6e)\n", (unsigned long long)h,
           n ? cx / n : 0, n ? cy / n : 0, n ? cz / n : 0, ek);
    printf("kernel_ms: %.3f\n", t1 - tk);
    printf("total_ms: %.3f\n", t2 - t0);

    clReleaseMemObject(buf);
    clReleaseMemObject(abuf);
    clReleaseKernel(ka);
    clReleaseKernel(kd);
    clReleaseKernel(kb);
    clReleaseProgram(prog);
    sample_release(&s);
    free(p);
    return 0;
}
