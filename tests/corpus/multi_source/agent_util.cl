/* String 2: helpers on the trail map (a plain float grid) and on vectors. */
inline int wrapi(int v, int n) { return ((v % n) + n) % n; }

inline float sample_trail(__global const float *trail, float2 p, int w, int h)
{
    return trail[wrapi((int)p.y, h) * w + wrapi((int)p.x, w)];
}

inline float2 rotate2(float2 v, float a)
{
    const float c = cos(a), s = sin(a);
    return (float2)(c * v.x - s * v.y, s * v.x + c * v.y);
}
