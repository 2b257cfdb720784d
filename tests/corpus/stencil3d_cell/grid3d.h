/* Grid geometry, given at build time (-DNX=.. -DNY=.. -DNZ=..). */
#ifndef GRID3D_H
#define GRID3D_H
#ifndef NX
#error "build with -DNX=<cells> -DNY=<cells> -DNZ=<cells>"
#endif
#define IDX3(x, y, z) (((z) * NY + (y)) * NX + (x))
#define INTERIOR(x, y, z) ((x) > 0 && (y) > 0 && (z) > 0 && (x) < NX - 1 && (y) < NY - 1 && (z) < NZ - 1)
#endif
