#pragma once
// Elementary functions computed with IEEE 754 basic operations only (+ - * /
// sqrt and exact scalings), so that results are bit-identical on every
// platform and compiler; libm's log/cbrt may differ in the last bit. Used
// where a seed must reproduce a start exactly (the lattice, the velocities).
// The translation units are built with -ffp-contract=off for the same reason.

namespace haloex::md {

// Natural logarithm of a positive finite x (within 1 ulp).
double portableLog(double x);
// Cube root of a positive finite x (within 1 ulp), by Newton's method.
double portableCbrt(double x);

}  // namespace haloex::md
