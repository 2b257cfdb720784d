/* The corpus's one host program: reads a corpus entry's spec (tests/corpus/README.md has the
 * format), builds its program, fills its buffers with deterministic pseudo-random data, runs its
 * kernels for the given iterations and prints, on stdout, every return code and a checksum of
 * every buffer it reads back. Everything on stdout is deterministic, so that a run under clayout
 * can be compared byte for byte with a plain run; times and device names go to stderr only.
 *
 *   driver [--scale N] [--platform NAME] ENTRY.spec
 *
 * Plain OpenCL 1.2 host API (plus clCompileProgram/clLinkProgram), linked with -lOpenCL. */
#define CL_TARGET_OPENCL_VERSION 120
#define _GNU_SOURCE
#include <CL/cl.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXN 64
#define MAXARGS 32
#define MAXFIELDS 32
#define MAXSTEPS 64

static const char *spec_path;
static int spec_line;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", spec_path, spec_line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    /* A spec error is the corpus's fault, not the OpenCL implementation's: exit 3 says so. */
    exit(3);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu x %zu bytes)\n", n, size);
        exit(3);
    }
    return p;
}

/* ---- integer expressions: lets, SCALE, LARGE, SQRTSCALE, ITER --------------------------------- */

static struct {
    char name[64];
    long long value;
} vars[MAXN * 2];
static int nvars;

static void set_var(const char *name, long long v)
{
    for (int i = 0; i < nvars; i++)
        if (!strcmp(vars[i].name, name)) {
            vars[i].value = v;
            return;
        }
    if (nvars == MAXN * 2)
        die("too many names");
    snprintf(vars[nvars].name, sizeof vars[nvars].name, "%s", name);
    vars[nvars++].value = v;
}

static int get_var(const char *name, long long *v)
{
    for (int i = 0; i < nvars; i++)
        if (!strcmp(vars[i].name, name)) {
            *v = vars[i].value;
            return 1;
        }
    return 0;
}

static const char *ep; /* cursor of the expression being read */

static long long expr_add(void);

static void skip_ws(void)
{
    while (*ep == ' ' || *ep == '\t')
        ep++;
}

static long long expr_atom(void)
{
    skip_ws();
    if (*ep == '(') {
        ep++;
        long long v = expr_add();
        skip_ws();
        if (*ep != ')')
            die("`)` expected in expression");
        ep++;
        return v;
    }
    if (*ep == '-') {
        ep++;
        return -expr_atom();
    }
    if (isdigit((unsigned char)*ep)) {
        char *end;
        long long v = strtoll(ep, &end, 0);
        ep = end;
        return v;
    }
    if (isalpha((unsigned char)*ep) || *ep == '_') {
        char name[64];
        int n = 0;
        while ((isalnum((unsigned char)*ep) || *ep == '_') && n < 63)
            name[n++] = *ep++;
        name[n] = 0;
        long long v;
        if (!get_var(name, &v))
            die("unknown name `%s` in expression", name);
        return v;
    }
    die("cannot read expression at `%s`", ep);
    return 0;
}

static long long expr_mul(void)
{
    long long v = expr_atom();
    for (;;) {
        skip_ws();
        char op = *ep;
        if (op != '*' && op != '/' && op != '%')
            return v;
        ep++;
        long long r = expr_atom();
        if (op != '*' && r == 0)
            die("division by zero in expression");
        v = op == '*' ? v * r : op == '/' ? v / r : v % r;
    }
}

static long long expr_add(void)
{
    long long v = expr_mul();
    for (;;) {
        skip_ws();
        char op = *ep;
        if (op != '+' && op != '-')
            return v;
        ep++;
        long long r = expr_mul();
        v = op == '+' ? v + r : v - r;
    }
}

static long long eval(const char *text)
{
    ep = text;
    long long v = expr_add();
    skip_ws();
    if (*ep)
        die("trailing `%s` in expression `%s`", ep, text);
    return v;
}

/* ---- the spec ------------------------------------------------------------------------------- */

typedef enum { F_FLOAT, F_DOUBLE, F_FLOAT_CONST, F_DOUBLE_CONST, F_ZERO, F_SEQ, F_INT_CONST, F_INT } fieldcode_t;

/* One field of a buffer's element, repeated `rep` times. */
typedef struct {
    fieldcode_t code;
    int size;
    double lo, hi;
    long long ilo, ihi;
    int rep;
} field_t;

typedef struct {
    char name[64];
    long long count;
    size_t elem;
    field_t fields[MAXFIELDS];
    int nfields;
    cl_mem mem;
    unsigned char *init; /* the initial bytes, to count changed elements */
    int has_float;
    uint64_t running; /* checksum of the reads inside the loop */
    int reads_in_loop;
} buffer_t;

typedef enum { A_BUF, A_INT, A_UINT, A_LONG, A_ULONG, A_FLOAT, A_DOUBLE, A_LOCAL } argkind_t;

typedef struct {
    argkind_t kind;
    char text[128]; /* buffer name, or expression (evaluated at each launch: ITER may change) */
} arg_t;

typedef struct {
    char label[64];
    char name[64];
    arg_t args[MAXARGS];
    int nargs;
    char global[3][64], local[3][64];
    int dims, ldims;
    cl_kernel k;
    cl_int create_rc;
    long launches;
    cl_int first_bad_rc;
} kernel_t;

typedef enum { S_LAUNCH, S_SWAP, S_READ } stepkind_t;
typedef struct {
    stepkind_t kind;
    char a[64], b[64];
} step_t;

static char *sources[MAXN];
static int nsources;
static char options[4096];
static struct {
    char file[256];
    char options[1024];
} units[MAXN];
static int nunits;
static struct {
    char name[256];
    char file[256];
} headers[MAXN];
static int nheaders;
static char link_options[1024];
static int link_mode;
static buffer_t buffers[MAXN];
static int nbuffers;
static kernel_t kernels[MAXN];
static int nkernels;
static step_t once[MAXSTEPS], steps[MAXSTEPS];
static int nonce, nsteps;
static long long iters = 1;
static char reads[MAXN][64];
static int nreads;

static buffer_t *find_buffer(const char *name)
{
    for (int i = 0; i < nbuffers; i++)
        if (!strcmp(buffers[i].name, name))
            return &buffers[i];
    die("no buffer `%s`", name);
    return NULL;
}

static kernel_t *find_kernel(const char *label)
{
    for (int i = 0; i < nkernels; i++)
        if (!strcmp(kernels[i].label, label))
            return &kernels[i];
    die("no kernel `%s`", label);
    return NULL;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = xcalloc(n + 1, 1);
    if (fread(buf, 1, n, f) != (size_t)n)
        die("cannot read %s", path);
    fclose(f);
    return buf;
}

/* `$NAME` in build options becomes the value of NAME; `$DIR` the entry's directory. */
static void substitute(char *out, size_t size, const char *in, const char *dir)
{
    size_t o = 0;
    while (*in && o + 1 < size) {
        if (*in == '$' && (isalpha((unsigned char)in[1]) || in[1] == '_')) {
            char name[64];
            int n = 0;
            in++;
            while ((isalnum((unsigned char)*in) || *in == '_') && n < 63)
                name[n++] = *in++;
            name[n] = 0;
            char val[4096];
            long long v;
            if (!strcmp(name, "DIR"))
                snprintf(val, sizeof val, "%s", dir);
            else if (get_var(name, &v))
                snprintf(val, sizeof val, "%lld", v);
            else
                die("unknown name `$%s` in options", name);
            for (char *c = val; *c && o + 1 < size; c++)
                out[o++] = *c;
        } else
            out[o++] = *in++;
    }
    out[o] = 0;
}

/* The rest of the line after the first word, without leading blanks. */
static char *rest_after(char *line, int words)
{
    char *p = line;
    for (int w = 0; w < words; w++) {
        while (*p && isspace((unsigned char)*p))
            p++;
        while (*p && !isspace((unsigned char)*p))
            p++;
    }
    while (*p && isspace((unsigned char)*p))
        p++;
    return p;
}

static void parse_field(buffer_t *b, const char *tok)
{
    if (b->nfields == MAXFIELDS)
        die("too many fields");
    field_t *f = &b->fields[b->nfields++];
    memset(f, 0, sizeof *f);
    f->rep = 1;
    char kind[8] = "";
    int n = 0;
    while (isalpha((unsigned char)tok[n]) && n < 7) {
        kind[n] = tok[n];
        n++;
    }
    kind[n] = 0;
    const char *p = tok + n;
    if (*p != '(')
        die("field `%s`: `(` expected", tok);
    const char *close = strchr(p, ')');
    if (!close)
        die("field `%s`: `)` expected", tok);
    char argsbuf[256];
    snprintf(argsbuf, sizeof argsbuf, "%.*s", (int)(close - p - 1), p + 1);
    if (close[1] == '*')
        f->rep = (int)eval(close + 2);
    else if (close[1])
        die("field `%s`: unexpected `%s`", tok, close + 1);
    char *comma = strchr(argsbuf, ',');
    char *a2 = NULL;
    if (comma) {
        *comma = 0;
        a2 = comma + 1;
    }
    if (!strcmp(kind, "f") || !strcmp(kind, "d")) {
        if (!a2)
            die("field `%s`: (lo,hi) expected", tok);
        f->size = kind[0] == 'f' ? 4 : 8;
        f->code = kind[0] == 'f' ? F_FLOAT : F_DOUBLE;
        f->lo = strtod(argsbuf, NULL);
        f->hi = strtod(a2, NULL);
        b->has_float = 1;
    } else if (!strcmp(kind, "fk")) {
        f->size = 4;
        f->code = F_FLOAT_CONST;
        f->lo = f->hi = strtod(argsbuf, NULL);
        b->has_float = 1;
    } else if (!strcmp(kind, "dk")) {
        f->size = 8;
        f->code = F_DOUBLE_CONST;
        f->lo = f->hi = strtod(argsbuf, NULL);
        b->has_float = 1;
    } else if (!strcmp(kind, "z")) {
        f->size = (int)eval(argsbuf);
        f->code = F_ZERO;
    } else if (!strcmp(kind, "seq")) {
        f->size = 4;
        f->code = F_SEQ;
        f->ilo = eval(argsbuf);
    } else if (!strcmp(kind, "ik")) {
        f->size = 4;
        f->code = F_INT_CONST;
        f->ilo = eval(argsbuf);
    } else {
        if (!a2)
            die("field `%s`: (lo,hi) expected", tok);
        f->code = F_INT;
        f->ilo = eval(argsbuf);
        f->ihi = eval(a2);
        if (f->ihi <= f->ilo)
            die("field `%s`: empty range", tok);
        if (!strcmp(kind, "i") || !strcmp(kind, "u"))
            f->size = 4;
        else if (!strcmp(kind, "c") || !strcmp(kind, "uc"))
            f->size = 1;
        else if (!strcmp(kind, "s") || !strcmp(kind, "us"))
            f->size = 2;
        else if (!strcmp(kind, "l"))
            f->size = 8;
        else
            die("field `%s`: unknown kind `%s`", tok, kind);
    }
    b->elem += (size_t)f->size * f->rep;
}

static void parse_arg(kernel_t *k, char *line)
{
    if (k->nargs == MAXARGS)
        die("too many arguments");
    arg_t *a = &k->args[k->nargs++];
    char kind[32] = "";
    sscanf(line, "%*s %31s", kind);
    char *rest = rest_after(line, 2);
    static const struct {
        const char *word;
        argkind_t kind;
    } kinds[] = { { "buf", A_BUF },     { "int", A_INT },       { "uint", A_UINT },   { "long", A_LONG },
                  { "ulong", A_ULONG }, { "float", A_FLOAT },   { "double", A_DOUBLE }, { "local", A_LOCAL } };
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(kind, kinds[i].word)) {
            a->kind = kinds[i].kind;
            if (!*rest)
                die("arg %s: value expected", kind);
            snprintf(a->text, sizeof a->text, "%s", rest);
            return;
        }
    die("unknown argument kind `%s`", kind);
}

static void parse_step(step_t *s, char *line)
{
    char w[32] = "", a[64] = "", b[64] = "";
    sscanf(line, "%31s %63s %63s", w, a, b);
    if (!strcmp(w, "step")) {
        s->kind = S_LAUNCH;
        find_kernel(a);
    } else if (!strcmp(w, "swap")) {
        s->kind = S_SWAP;
        find_buffer(a);
        find_buffer(b);
    } else if (!strcmp(w, "readback")) {
        s->kind = S_READ;
        find_buffer(a)->reads_in_loop = 1;
    }
    snprintf(s->a, sizeof s->a, "%s", a);
    snprintf(s->b, sizeof s->b, "%s", b);
}

static void parse_spec(const char *path, long long scale)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        exit(3);
    }
    set_var("SCALE", scale);
    set_var("LARGE", scale > 1);
    long long r = 1;
    while ((r + 1) * (r + 1) <= scale)
        r++;
    set_var("SQRTSCALE", r);
    set_var("ITER", 0);
    char line[4096];
    kernel_t *cur = NULL;
    int after_iters = 0;
    while (fgets(line, sizeof line, f)) {
        spec_line++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        size_t len = strlen(line);
        while (len && isspace((unsigned char)line[len - 1]))
            line[--len] = 0;
        char w[32] = "";
        if (sscanf(line, "%31s", w) != 1)
            continue;
        char *rest = rest_after(line, 1);
        if (!strcmp(w, "let")) {
            char name[64];
            char *eq = strchr(rest, '=');
            if (!eq || sscanf(rest, "%63[A-Za-z0-9_]", name) != 1)
                die("let NAME = EXPR expected");
            set_var(name, eval(eq + 1));
        } else if (!strcmp(w, "source")) {
            if (nsources == MAXN)
                die("too many sources");
            sources[nsources++] = read_file(rest);
        } else if (!strcmp(w, "options")) {
            snprintf(options, sizeof options, "%s", rest);
        } else if (!strcmp(w, "unit")) {
            if (nunits == MAXN)
                die("too many units");
            sscanf(rest, "%255s", units[nunits].file);
            snprintf(units[nunits].options, sizeof units[nunits].options, "%s", rest_after(rest, 1));
            nunits++;
            link_mode = 1;
        } else if (!strcmp(w, "header")) {
            if (nheaders == MAXN || sscanf(rest, "%255s %255s", headers[nheaders].name, headers[nheaders].file) != 2)
                die("header NAME FILE expected");
            nheaders++;
        } else if (!strcmp(w, "link")) {
            snprintf(link_options, sizeof link_options, "%s", rest);
            link_mode = 1;
        } else if (!strcmp(w, "buffer")) {
            if (nbuffers == MAXN)
                die("too many buffers");
            buffer_t *b = &buffers[nbuffers++];
            char count[256];
            if (sscanf(rest, "%63s %255s", b->name, count) != 2)
                die("buffer NAME COUNT FIELD... expected");
            b->count = eval(count);
            char *fl = rest_after(rest, 2), *save = NULL;
            for (char *tok = strtok_r(fl, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
                parse_field(b, tok);
            if (!b->nfields)
                die("buffer %s has no fields", b->name);
        } else if (!strcmp(w, "kernel")) {
            if (nkernels == MAXN)
                die("too many kernels");
            cur = &kernels[nkernels++];
            char label[64] = "";
            if (sscanf(rest, "%63s %63s", cur->name, label) < 1)
                die("kernel NAME [LABEL] expected");
            snprintf(cur->label, sizeof cur->label, "%s", *label ? label : cur->name);
        } else if (!strcmp(w, "arg") || !strcmp(w, "global") || !strcmp(w, "local")) {
            if (!cur)
                die("`%s` outside a kernel block", w);
            if (!strcmp(w, "arg"))
                parse_arg(cur, line);
            else {
                char d[3][64];
                int n = sscanf(rest, "%63s %63s %63s", d[0], d[1], d[2]);
                if (n < 1)
                    die("%s needs 1 to 3 sizes", w);
                for (int i = 0; i < n; i++)
                    snprintf(w[0] == 'g' ? cur->global[i] : cur->local[i], 64, "%s", d[i]);
                if (w[0] == 'g')
                    cur->dims = n;
                else
                    cur->ldims = n;
            }
        } else if (!strcmp(w, "once")) {
            if (nonce == MAXSTEPS)
                die("too many steps");
            parse_step(&once[nonce++], rest_after(line, 1));
        } else if (!strcmp(w, "iters")) {
            char a[64] = "", b[64] = "";
            int n = sscanf(rest, "%63s %63s", a, b);
            iters = eval(a);
            if (n == 2 && scale > 1)
                iters = eval(b);
            after_iters = 1;
        } else if (!strcmp(w, "step") || !strcmp(w, "swap") || !strcmp(w, "readback")) {
            if (!after_iters)
                die("`%s` before `iters` (use `once` for steps before the loop)", w);
            if (nsteps == MAXSTEPS)
                die("too many steps");
            parse_step(&steps[nsteps++], line);
        } else if (!strcmp(w, "read")) {
            if (nreads == MAXN)
                die("too many reads");
            find_buffer(rest);
            snprintf(reads[nreads++], 64, "%s", rest);
        } else
            die("unknown directive `%s`", w);
    }
    fclose(f);
    for (int i = 0; i < nkernels; i++)
        if (!kernels[i].dims)
            die("kernel %s has no global size", kernels[i].label);
    if (!nsources && !nunits)
        die("no source");
}

/* ---- data ------------------------------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static uint64_t fnv(const void *data, size_t n, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

/* FNV-1a over 8-byte words (then the tail bytes): the same idea as byte-wise FNV-1a, eight
 * times fewer steps, which matters for buffers of a GiB. */
static uint64_t hash_words(const unsigned char *data, size_t n, uint64_t h)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, data + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return fnv(data + i, n - i, h);
}

/* The data are generated in chunks of FILL_CHUNK elements, each chunk from its own seed, so
 * that several threads can fill a large buffer and the bytes do not depend on how many. */
#define FILL_CHUNK 65536

static void fill_chunk(buffer_t *b, long long chunk)
{
    uint64_t seed = fnv(b->name, strlen(b->name), FNV_INIT) ^ ((uint64_t)chunk * 0x9e3779b97f4a7c15ull);
    const long long e0 = chunk * FILL_CHUNK, e1 = e0 + FILL_CHUNK < b->count ? e0 + FILL_CHUNK : b->count;
    unsigned char *p = b->init + e0 * b->elem;
    for (long long e = e0; e < e1; e++)
        for (int fi = 0; fi < b->nfields; fi++) {
            const field_t *f = &b->fields[fi];
            for (int r = 0; r < f->rep; r++) {
                switch (f->code) {
                case F_FLOAT: {
                    float v = (float)(f->lo + (f->hi - f->lo) * ((rng_next(&seed) & 0xffffff) / 16777216.0));
                    memcpy(p, &v, 4);
                    break;
                }
                case F_DOUBLE: {
                    double v = f->lo + (f->hi - f->lo) * ((rng_next(&seed) & 0xffffff) / 16777216.0);
                    memcpy(p, &v, 8);
                    break;
                }
                case F_FLOAT_CONST: {
                    float v = (float)f->lo;
                    memcpy(p, &v, 4);
                    break;
                }
                case F_DOUBLE_CONST:
                    memcpy(p, &f->lo, 8);
                    break;
                case F_ZERO:
                    memset(p, 0, f->size);
                    break;
                case F_SEQ:
                case F_INT_CONST: {
                    int32_t v = (int32_t)(f->code == F_SEQ ? e * f->ilo : f->ilo);
                    memcpy(p, &v, 4);
                    break;
                }
                case F_INT: {
                    const long long iv = f->ilo + (long long)(rng_next(&seed) % (uint64_t)(f->ihi - f->ilo));
                    if (f->size == 1) {
                        int8_t v = (int8_t)iv;
                        memcpy(p, &v, 1);
                    } else if (f->size == 2) {
                        int16_t v = (int16_t)iv;
                        memcpy(p, &v, 2);
                    } else if (f->size == 4) {
                        int32_t v = (int32_t)iv;
                        memcpy(p, &v, 4);
                    } else {
                        int64_t v = iv;
                        memcpy(p, &v, 8);
                    }
                    break;
                }
                }
                p += f->size;
            }
        }
}

typedef struct {
    buffer_t *b;
    long long next, chunks;
    pthread_mutex_t lock;
} fill_job_t;

static void *fill_worker(void *arg)
{
    fill_job_t *job = arg;
    for (;;) {
        pthread_mutex_lock(&job->lock);
        const long long c = job->next++;
        pthread_mutex_unlock(&job->lock);
        if (c >= job->chunks)
            return NULL;
        fill_chunk(job->b, c);
    }
}

static void fill(buffer_t *b)
{
    b->init = xcalloc(b->count, b->elem);
    fill_job_t job = { b, 0, (b->count + FILL_CHUNK - 1) / FILL_CHUNK, PTHREAD_MUTEX_INITIALIZER };
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nthreads = job.chunks < 2 ? 0 : (int)(cpus < 2 ? 0 : cpus > 16 ? 16 : cpus);
    pthread_t threads[16];
    int started = 0;
    for (int t = 0; t < nthreads; t++)
        started += pthread_create(&threads[started], NULL, fill_worker, &job) == 0;
    fill_worker(&job);
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
}

/* Non-finite float/double words of the buffer's float fields. */
static long long nonfinite(const buffer_t *b, const unsigned char *data)
{
    long long bad = 0;
    const unsigned char *p = data;
    for (long long e = 0; e < b->count; e++)
        for (int fi = 0; fi < b->nfields; fi++) {
            const field_t *f = &b->fields[fi];
            for (int r = 0; r < f->rep; r++) {
                if (f->code == F_FLOAT || f->code == F_FLOAT_CONST) {
                    float v;
                    memcpy(&v, p, 4);
                    bad += !isfinite(v);
                } else if (f->code == F_DOUBLE || f->code == F_DOUBLE_CONST) {
                    double v;
                    memcpy(&v, p, 8);
                    bad += !isfinite(v);
                }
                p += f->size;
            }
        }
    return bad;
}

/* ---- OpenCL ---------------------------------------------------------------------------------- */

static cl_device_id device;
static cl_context context;
static cl_command_queue queue;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void open_device(const char *want)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    cl_int rc = clGetPlatformIDs(16, ps, &np);
    if (rc != CL_SUCCESS || !np) {
        printf("rc clGetPlatformIDs %d\n", rc);
        exit(1);
    }
    cl_platform_id platform = NULL;
    for (cl_uint i = 0; i < np && !platform; i++) {
        char name[256] = "";
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (!want || !*want || strstr(name, want))
            platform = ps[i];
    }
    if (!platform) {
        fprintf(stderr, "no OpenCL platform matches \"%s\"\n", want);
        exit(1);
    }
    rc = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
    if (rc != CL_SUCCESS) {
        printf("rc clGetDeviceIDs %d\n", rc);
        exit(1);
    }
    char name[256] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL);
    fprintf(stderr, "corpus-device: %s\n", name);
    context = clCreateContext(NULL, 1, &device, NULL, NULL, &rc);
    if (rc != CL_SUCCESS) {
        printf("rc clCreateContext %d\n", rc);
        exit(1);
    }
    queue = clCreateCommandQueue(context, device, 0, &rc);
    if (rc != CL_SUCCESS) {
        printf("rc clCreateCommandQueue %d\n", rc);
        exit(1);
    }
}

static void build_log(cl_program p, const char *what)
{
    size_t n = 0;
    clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = xcalloc(n + 1, 1);
    clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    fprintf(stderr, "build log of %s:\n%s\n", what, log);
    free(log);
}

static cl_program build(const char *dir)
{
    cl_int rc;
    char opts[8192];
    if (!link_mode) {
        cl_program p = clCreateProgramWithSource(context, nsources, (const char **)sources, NULL, &rc);
        printf("rc clCreateProgramWithSource %d (%d strings)\n", rc, nsources);
        if (rc != CL_SUCCESS)
            exit(1);
        substitute(opts, sizeof opts, options, dir);
        fprintf(stderr, "corpus-options: %s\n", opts);
        rc = clBuildProgram(p, 1, &device, opts, NULL, NULL);
        printf("rc clBuildProgram %d\n", rc);
        if (rc != CL_SUCCESS) {
            build_log(p, "the program");
            exit(1);
        }
        return p;
    }
    cl_program hdr[MAXN];
    const char *hdr_names[MAXN];
    for (int i = 0; i < nheaders; i++) {
        char *src = read_file(headers[i].file);
        hdr[i] = clCreateProgramWithSource(context, 1, (const char **)&src, NULL, &rc);
        printf("rc clCreateProgramWithSource %d (header %s)\n", rc, headers[i].name);
        if (rc != CL_SUCCESS)
            exit(1);
        hdr_names[i] = headers[i].name;
        free(src);
    }
    cl_program objs[MAXN];
    for (int i = 0; i < nunits; i++) {
        char *src = read_file(units[i].file);
        objs[i] = clCreateProgramWithSource(context, 1, (const char **)&src, NULL, &rc);
        printf("rc clCreateProgramWithSource %d (unit %s)\n", rc, units[i].file);
        if (rc != CL_SUCCESS)
            exit(1);
        substitute(opts, sizeof opts, units[i].options, dir);
        rc = clCompileProgram(objs[i], 1, &device, opts, nheaders, nheaders ? hdr : NULL,
                              nheaders ? hdr_names : NULL, NULL, NULL);
        printf("rc clCompileProgram %d (unit %s)\n", rc, units[i].file);
        if (rc != CL_SUCCESS) {
            build_log(objs[i], units[i].file);
            exit(1);
        }
        free(src);
    }
    substitute(opts, sizeof opts, link_options, dir);
    cl_program p = clLinkProgram(context, 1, &device, opts, nunits, objs, NULL, NULL, &rc);
    printf("rc clLinkProgram %d\n", rc);
    if (rc != CL_SUCCESS) {
        if (p)
            build_log(p, "the linked program");
        exit(1);
    }
    for (int i = 0; i < nunits; i++)
        clReleaseProgram(objs[i]);
    for (int i = 0; i < nheaders; i++)
        clReleaseProgram(hdr[i]);
    return p;
}

static cl_int set_args(kernel_t *k)
{
    for (int i = 0; i < k->nargs; i++) {
        arg_t *a = &k->args[i];
        cl_int rc;
        switch (a->kind) {
        case A_BUF:
            rc = clSetKernelArg(k->k, i, sizeof(cl_mem), &find_buffer(a->text)->mem);
            break;
        case A_INT: {
            cl_int v = (cl_int)eval(a->text);
            rc = clSetKernelArg(k->k, i, sizeof v, &v);
            break;
        }
        case A_UINT: {
            cl_uint v = (cl_uint)eval(a->text);
            rc = clSetKernelArg(k->k, i, sizeof v, &v);
            break;
        }
        case A_LONG: {
            cl_long v = eval(a->text);
            rc = clSetKernelArg(k->k, i, sizeof v, &v);
            break;
        }
        case A_ULONG: {
            cl_ulong v = (cl_ulong)eval(a->text);
            rc = clSetKernelArg(k->k, i, sizeof v, &v);
            break;
        }
        case A_FLOAT: {
            cl_float v = strtof(a->text, NULL);
            rc = clSetKernelArg(k->k, i, sizeof v, &v);
            break;
        }
        case A_DOUBLE: {
            cl_double v = strtod(a->text, NULL);
            rc = clSetKernelArg(k->k, i, sizeof v, &v);
            break;
        }
        case A_LOCAL:
            rc = clSetKernelArg(k->k, i, (size_t)eval(a->text), NULL);
            break;
        default:
            rc = CL_INVALID_VALUE;
        }
        if (rc != CL_SUCCESS)
            return rc;
    }
    return CL_SUCCESS;
}

static void launch(kernel_t *k)
{
    size_t g[3], l[3];
    for (int d = 0; d < k->dims; d++)
        g[d] = (size_t)eval(k->global[d]);
    for (int d = 0; d < k->ldims; d++)
        l[d] = (size_t)eval(k->local[d]);
    cl_int rc = k->k ? set_args(k) : k->create_rc;
    if (rc == CL_SUCCESS)
        rc = clEnqueueNDRangeKernel(queue, k->k, k->dims, NULL, g, k->ldims ? l : NULL, 0, NULL, NULL);
    k->launches++;
    if (rc != CL_SUCCESS && k->first_bad_rc == CL_SUCCESS)
        k->first_bad_rc = rc;
}

static void run_steps(step_t *list, int n)
{
    for (int i = 0; i < n; i++) {
        step_t *s = &list[i];
        if (s->kind == S_LAUNCH)
            launch(find_kernel(s->a));
        else if (s->kind == S_SWAP) {
            buffer_t *a = find_buffer(s->a), *b = find_buffer(s->b);
            cl_mem t = a->mem;
            a->mem = b->mem;
            b->mem = t;
        } else {
            buffer_t *b = find_buffer(s->a);
            size_t bytes = b->count * b->elem;
            unsigned char *data = xcalloc(bytes, 1);
            cl_int rc = clEnqueueReadBuffer(queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, NULL);
            b->running = fnv(&rc, sizeof rc, hash_words(data, bytes, b->running ? b->running : FNV_INIT));
            free(data);
        }
    }
}

int main(int argc, char **argv)
{
    long long scale = 1;
    int dry = 0;
    const char *platform = getenv("CORPUS_PLATFORM");
    if (!platform)
        platform = getenv("SAMPLE_PLATFORM");
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scale") && i + 1 < argc)
            scale = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--platform") && i + 1 < argc)
            platform = argv[++i];
        else if (!strcmp(argv[i], "--dry-run"))
            dry = 1;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(stderr, "usage: %s [--scale N] [--platform NAME] [--dry-run] ENTRY.spec\n", argv[0]);
            return 2;
        }
    }
    if (!path || scale < 1) {
        fprintf(stderr, "usage: %s [--scale N] [--platform NAME] [--dry-run] ENTRY.spec\n", argv[0]);
        return 2;
    }
    /* Sources, headers and -I paths are relative to the entry's directory, as a program's are to
     * where it runs. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    static char base[1024];
    snprintf(base, sizeof base, "%s", slash ? slash + 1 : path);
    if (slash) {
        *slash = 0;
        if (chdir(dir) != 0) {
            fprintf(stderr, "cannot enter %s: %s\n", dir, strerror(errno));
            return 3;
        }
    }
    if (!getcwd(dir, sizeof dir))
        return 3;
    spec_path = base;
    parse_spec(base, scale);
    spec_line = 0;
    if (dry) {
        /* What the entry would allocate and launch at this scale, without OpenCL. */
        double total = 0;
        for (int i = 0; i < nbuffers; i++) {
            double mb = buffers[i].count * (double)buffers[i].elem / 1048576.0;
            total += mb;
            printf("buffer %s: %lld x %zu bytes = %.1f MiB\n", buffers[i].name, buffers[i].count, buffers[i].elem, mb);
        }
        for (int i = 0; i < nkernels; i++) {
            printf("kernel %s: global", kernels[i].label);
            for (int d = 0; d < kernels[i].dims; d++)
                printf(" %lld", eval(kernels[i].global[d]));
            printf("\n");
        }
        printf("iterations %lld, buffers %.1f MiB in all\n", iters, total);
        return 0;
    }

    open_device(platform);
    cl_program prog = build(dir);
    for (int i = 0; i < nkernels; i++) {
        kernels[i].k = clCreateKernel(prog, kernels[i].name, &kernels[i].create_rc);
        printf("rc clCreateKernel %d (%s)\n", kernels[i].create_rc, kernels[i].name);
    }
    double tf = now_ms();
    for (int i = 0; i < nbuffers; i++) {
        buffer_t *b = &buffers[i];
        fill(b);
        size_t bytes = b->count * b->elem;
        cl_int rc;
        b->mem = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &rc);
        if (rc == CL_SUCCESS && bytes)
            rc = clEnqueueWriteBuffer(queue, b->mem, CL_TRUE, 0, bytes, b->init, 0, NULL, NULL);
        printf("buffer %s: %lld x %zu bytes, rc %d\n", b->name, b->count, b->elem, rc);
        if (rc != CL_SUCCESS)
            return 1;
    }

    fprintf(stderr, "corpus-setup: fill_and_write_ms=%.1f\n", now_ms() - tf);
    double t0 = now_ms();
    run_steps(once, nonce);
    double t1 = 0;
    for (long long it = 0; it < iters; it++) {
        set_var("ITER", it);
        run_steps(steps, nsteps);
        if (it == 0) {
            clFinish(queue);
            t1 = now_ms();
        }
    }
    cl_int finish_rc = clFinish(queue);
    double t2 = now_ms();
    printf("rc clFinish %d\n", finish_rc);
    for (int i = 0; i < nkernels; i++)
        printf("launches %s: %ld, first error %d\n", kernels[i].label, kernels[i].launches, kernels[i].first_bad_rc);
    for (int i = 0; i < nbuffers; i++)
        if (buffers[i].reads_in_loop)
            printf("reads in the loop of %s: fnv %016llx\n", buffers[i].name, (unsigned long long)buffers[i].running);
    for (int r = 0; r < nreads; r++) {
        buffer_t *b = find_buffer(reads[r]);
        size_t bytes = b->count * b->elem;
        unsigned char *data = xcalloc(bytes, 1);
        cl_int rc = clEnqueueReadBuffer(queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, NULL);
        long long changed = 0;
        for (long long e = 0; e < b->count; e++)
            changed += memcmp(data + e * b->elem, b->init + e * b->elem, b->elem) != 0;
        printf("read %s: rc %d, fnv %016llx, changed %lld of %lld, nonfinite %lld\n", b->name, rc,
               (unsigned long long)hash_words(data, bytes, FNV_INIT), changed, b->count, b->has_float ? nonfinite(b, data) : 0);
        /* CORPUS_DUMP=PREFIX writes the bytes read to PREFIX.NAME, to find where two runs differ. */
        const char *dump = getenv("CORPUS_DUMP");
        if (dump && *dump) {
            char path[4096];
            snprintf(path, sizeof path, "%s.%s", dump, b->name);
            FILE *f = fopen(path, "wb");
            if (f) {
                fwrite(data, 1, bytes, f);
                fclose(f);
            }
        }
        free(data);
    }
    double t3 = now_ms();
    /* The loop's time includes the first iteration (where clayout converts the buffers); the
     * steady time leaves it out; total adds the reads (where clayout converts them back). */
    fprintf(stderr, "corpus-time: loop_ms=%.3f first_ms=%.3f steady_ms=%.3f total_ms=%.3f iters=%lld\n", t2 - t0,
            t1 - t0, t2 - t1, t3 - t0, iters);
    for (int i = 0; i < nkernels; i++)
        if (kernels[i].k)
            clReleaseKernel(kernels[i].k);
    for (int i = 0; i < nbuffers; i++)
        clReleaseMemObject(buffers[i].mem);
    clReleaseProgram(prog);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    return 0;
}
