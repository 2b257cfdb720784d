/* Shared between the host code (built as C++ for a CPU fallback path) and the OpenCL kernels:
 * the spark record and the emitter constants. */
#ifndef SPARKS_SHARED_H
#define SPARKS_SHARED_H

#ifdef __OPENCL_VERSION__
typedef float cl_float;
typedef uint cl_uint;
#endif

typedef struct {
    cl_float x, y, z, heat;
    cl_float vx, vy, vz, age;
} Spark;

#define SPARK_DRAG 0.985f
#define SPARK_COOLING 0.97f
#define SPARK_GRAVITY (-9.81f)

#endif
