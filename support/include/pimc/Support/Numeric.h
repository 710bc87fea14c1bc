//===- Numeric.h - defined conversions from double ------------------------===//
//
// Values read from model files (inline constants, folded arithmetic) arrive
// as doubles. A plain conversion of an out-of-range double to int64 or float
// is undefined behaviour; the importers convert through these instead.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_SUPPORT_NUMERIC_H
#define PIMC_SUPPORT_NUMERIC_H

#include <cmath>
#include <cstdint>
#include <limits>

namespace pimc {

/// True if `d` is an integer that an int64 holds.
inline bool isInt64(double d) {
  return d >= -0x1p63 && d < 0x1p63 && d == std::trunc(d);
}

/// `d` truncated toward zero to int64, saturating where an int64 cannot
/// hold it (NaN is 0).
inline int64_t saturatingInt64(double d) {
  if (std::isnan(d))
    return 0;
  if (d >= 0x1p63)
    return std::numeric_limits<int64_t>::max();
  if (d < -0x1p63)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

/// `d` rounded to f32 as IEEE conversion does: from the midpoint between the
/// largest float and 2^128 on it is an infinity.
inline float f32Of(double d) {
  if (std::isfinite(d) && std::fabs(d) >= 0x1.ffffffp127)
    return d > 0 ? std::numeric_limits<float>::infinity()
                 : -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);
}

} // namespace pimc

#endif // PIMC_SUPPORT_NUMERIC_H
