/* Shared by the units of the gravity library (embedded header of clCompileProgram). */
#ifndef BODY_H
#define BODY_H
typedef struct {
    float4 pos; /* w: mass */
    float4 vel; /* w: age */
} Body;

float4 accel_on(__global const Body *bodies, int n, int i, float eps2);
void kick_drift(__global Body *b, float4 a, float dt);
#endif
