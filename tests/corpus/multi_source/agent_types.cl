/* String 1 of the program: types and tunables. */
typedef struct {
    float2 pos;
    float2 heading;
    float energy;
    float speed;
    int species;
    int ticks;
} Agent;

#define SENSOR_ANGLE 0.6f
#define SENSOR_DIST 3.0f
#define TURN_RATE 0.3f
