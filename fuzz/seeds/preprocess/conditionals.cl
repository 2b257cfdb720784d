#if (1 << 63) < 0 || 0x7fffffffffffffff + 1 > 0
a
#elif defined X && 'a' == 97
b
#else
c
#endif
#ifdef __SPIR__
#elifndef M_PI
#endif
#if 1 ? 2u : -1
d __LINE__
#endif
_Pragma("unroll") __COUNTER__ __COUNTER__
#error stop
