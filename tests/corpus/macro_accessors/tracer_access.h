/* Accessors for tracer records, written once and used by every kernel of the advection code. */
#ifndef TRACER_ACCESS_H
#define TRACER_ACCESS_H

typedef struct {
    float x, y, z, age;
    float vx, vy, vz, life;
} Tracer;

#define GID ((int)get_global_id(0))
#define TRACER(buf, i) ((buf)[(i)])
#define POS_X(buf, i) TRACER(buf, i).x
#define POS_Y(buf, i) TRACER(buf, i).y
#define POS_Z(buf, i) TRACER(buf, i).z
#define VEL(buf, i, c) TRACER(buf, i).v##c

/* flat view: word k of record i in a float array */
#define TRACER_WORDS 8
#define WORD(p, i, k) (p)[(i) * TRACER_WORDS + (k)]
#define W_AGE 3
#define W_LIFE 7

#endif
