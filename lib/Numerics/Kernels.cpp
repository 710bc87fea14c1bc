//===- Kernels.cpp - numeric kernels of the reference interpreter ---------===//
//
// The interpreter is the oracle every other backend is checked against, so
// the numerics follow Hugging Face's float32 evaluation order where that is
// observable (RoPE frequencies, norms, attention). It also has to run real
// checkpoints, so linear() is written for speed: the compiler is only allowed
// baseline x86-64 and GCC's "very cheap" -O2 vectorizer, which vectorizes
// loops of a fixed trip count; the hot loops are therefore written as
// fixed-width lanes of independent partial sums.
//
//===----------------------------------------------------------------------===//

#include "pimc/Numerics/Kernels.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Parallel.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

using namespace llvm;

namespace pimc::ref {

namespace {

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint32_t floatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

inline float widenBf16(uint16_t bits) {
  return bitsToFloat(uint32_t(bits) << 16);
}

// Branchless (hence vectorizable) binary16 -> binary32, after Maratyszcza's
// FP16 library: normals and inf/NaN are rebiased by a multiply by 2^-112,
// subnormals are produced exactly by a magic-number subtraction.
inline float widenF16(uint16_t bits) {
  uint32_t w = uint32_t(bits) << 16;
  uint32_t sign = w & 0x80000000u;
  uint32_t twoW = w + w;
  uint32_t normalized =
      floatToBits(bitsToFloat((twoW >> 4) + (0xE0u << 23)) * 0x1.0p-112f);
  uint32_t denormalized =
      floatToBits(bitsToFloat((twoW >> 17) | (126u << 23)) - 0.5f);
  // A mask select rather than ?: keeps GCC from emitting a branch, which
  // would stop the loops below from vectorizing.
  uint32_t isDenormal = 0u - uint32_t(twoW < (1u << 27));
  return bitsToFloat(sign | (denormalized & isDenormal) |
                     (normalized & ~isDenormal));
}

struct WidenF32 {
  static float apply(float v) { return v; }
};
struct WidenF16 {
  static float apply(uint16_t v) { return widenF16(v); }
};
struct WidenBf16 {
  static float apply(uint16_t v) { return widenBf16(v); }
};

int64_t storageBytes(StorageType storage) {
  return storage == StorageType::F32 ? 4 : 2;
}

// Lanes of independent partial sums. Eight f32 lanes are two SSE registers;
// the 4-row kernel below keeps 4 x 8 sums live, which still fits the 16
// registers of baseline x86-64.
constexpr int kLanes = 8;

float sumLanes(const float (&acc)[kLanes]) {
  float s = 0.0f;
  for (int j = 0; j < kLanes; ++j)
    s += acc[j];
  return s;
}

/// sum_k x[k] * widen(w[k]) for one row.
template <typename Elem, typename Widen>
float dotRow(const float *__restrict x, const Elem *__restrict w, int64_t K) {
  float acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes)
    for (int j = 0; j < kLanes; ++j)
      acc[j] += x[k + j] * Widen::apply(w[k + j]);
  float tail = 0.0f;
  for (; k < K; ++k)
    tail += x[k] * Widen::apply(w[k]);
  return sumLanes(acc) + tail;
}

/// Four rows (stride ldw) against one x: every x element is loaded once for
/// four weight rows, so the loop is bound by streaming the weights.
template <typename Elem, typename Widen>
void dotFourRows(const float *__restrict x, const Elem *__restrict w,
                 int64_t ldw, int64_t K, float *out) {
  const Elem *w0 = w, *w1 = w + ldw, *w2 = w + 2 * ldw, *w3 = w + 3 * ldw;
  float a0[kLanes] = {}, a1[kLanes] = {}, a2[kLanes] = {}, a3[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      float xj = x[k + j];
      a0[j] += xj * Widen::apply(w0[k + j]);
      a1[j] += xj * Widen::apply(w1[k + j]);
      a2[j] += xj * Widen::apply(w2[k + j]);
      a3[j] += xj * Widen::apply(w3[k + j]);
    }
  }
  float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
  for (; k < K; ++k) {
    t0 += x[k] * Widen::apply(w0[k]);
    t1 += x[k] * Widen::apply(w1[k]);
    t2 += x[k] * Widen::apply(w2[k]);
    t3 += x[k] * Widen::apply(w3[k]);
  }
  out[0] = sumLanes(a0) + t0;
  out[1] = sumLanes(a1) + t1;
  out[2] = sumLanes(a2) + t2;
  out[3] = sumLanes(a3) + t3;
}

float dotF32(const float *a, const float *b, int64_t n) {
  return dotRow<float, WidenF32>(a, b, n);
}

/// y[n] += a * x[n].
void accumulateScaled(float a, const float *__restrict x, float *__restrict y,
                      int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j)
      y[i + j] += a * x[i + j];
  for (; i < n; ++i)
    y[i] += a * x[i];
}

template <typename Elem, typename Widen>
void widenRange(const Elem *__restrict in, int64_t count,
                float *__restrict out) {
  constexpr int kBlock = 16;
  int64_t i = 0;
  for (; i + kBlock <= count; i += kBlock)
    for (int j = 0; j < kBlock; ++j)
      out[i + j] = Widen::apply(in[i + j]);
  for (; i < count; ++i)
    out[i] = Widen::apply(in[i]);
}

/// Columns [k0, k0 + count) of row n of a quantized matrix in f32:
/// scale * (q - zero), group by group.
void dequantizeRange(const QuantMatrix &w, int64_t n, int64_t k0, int64_t count,
                     float *__restrict out) {
  const int64_t K = w.cols, G = w.groupSize, groups = K / G;
  const uint8_t *__restrict q = w.codes.data() + n * K;
  for (int64_t k = k0, end = k0 + count; k < end;) {
    int64_t g = k / G, groupEnd = std::min(end, (g + 1) * G);
    float scale = w.scales[n * groups + g];
    int32_t zero = w.zeros[n * groups + g];
    constexpr int kBlock = 16;
    for (; k + kBlock <= groupEnd; k += kBlock)
      for (int j = 0; j < kBlock; ++j)
        out[k - k0 + j] = scale * float(int32_t(q[k + j]) - zero);
    for (; k < groupEnd; ++k)
      out[k - k0] = scale * float(int32_t(q[k]) - zero);
  }
}

// Rows of a linear are handed to parallelFor in tasks of at most this many
// multiply-adds (128 KiB of bf16 weights at T = 1): LLVM's task dispatch
// costs about a microsecond, a task of this size several. Smaller matrices
// are still cut into kMinTasks tasks so that two threads stay balanced when
// one of them is briefly descheduled.
constexpr int64_t kMacsPerTask = int64_t(1) << 16;
constexpr int64_t kMinTasks = 32;
// Weights that need converting (f16, quantized) or are reused by several
// tokens are processed kRowBlock rows by kChunk columns at a time: 32 KiB
// of f32, so the converted tile and the x chunks it meets stay in L1.
constexpr int64_t kRowBlock = 16;
constexpr int64_t kChunk = 512;

/// Runs rowFn(n0, n1) over [0, N) in tasks, in parallel when there is enough
/// work for more than one task.
template <typename RowFn>
void forEachRowTask(int64_t N, int64_t K, int64_t T, RowFn rowFn) {
  int64_t macsPerRow = std::max<int64_t>(1, K * T);
  int64_t rows = std::max<int64_t>(1, kMacsPerTask / macsPerRow);
  rows = std::min(rows, (N + kMinTasks - 1) / kMinTasks);
  rows = (rows + kRowBlock - 1) / kRowBlock * kRowBlock;
  int64_t tasks = (N + rows - 1) / rows;
  if (tasks <= 1) {
    rowFn(int64_t(0), N);
    return;
  }
  parallelFor(0, tasks, [&](size_t task) {
    int64_t n0 = int64_t(task) * rows;
    rowFn(n0, std::min(N, n0 + rows));
  });
}

/// y rows [n0, n1) for all T tokens, one tile at a time. tile(b0, rows, k0,
/// kc, buf) returns rows [b0, b0 + rows) x columns [k0, k0 + kc) of W in f32
/// together with its row stride, converting into `buf` if it has to.
template <typename TileFn>
void linearTiled(const float *x, int64_t T, int64_t N, int64_t K, int64_t n0,
                 int64_t n1, const float *bias, float *y, TileFn tile) {
  float buf[kRowBlock * kChunk];
  for (int64_t b0 = n0; b0 < n1; b0 += kRowBlock) {
    const int64_t b1 = std::min(n1, b0 + kRowBlock);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t n = b0; n < b1; ++n)
        y[t * N + n] = bias ? bias[n] : 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
      const int64_t kc = std::min(kChunk, K - k0);
      auto [wf, ld] = tile(b0, b1 - b0, k0, kc, buf);
      for (int64_t t = 0; t < T; ++t) {
        const float *xt = x + t * K + k0;
        float *yt = y + t * N;
        int64_t n = b0;
        for (; n + 4 <= b1; n += 4) {
          float part[4];
          dotFourRows<float, WidenF32>(xt, wf + (n - b0) * ld, ld, kc, part);
          for (int r = 0; r < 4; ++r)
            yt[n + r] += part[r];
        }
        for (; n < b1; ++n)
          yt[n] += dotF32(xt, wf + (n - b0) * ld, kc);
      }
    }
  }
}

/// Whether decode widens inside the 4-row dot. bf16 widening is a shift and
/// fuses well; GCC does not vectorize the f16 conversion inside the 4-row
/// dot (measured 2.5 vs 6 GB/s), so f16 goes through a converted tile.
template <typename Widen> constexpr bool kFusedDecode = true;
template <> constexpr bool kFusedDecode<WidenF16> = false;

template <typename Elem, typename Widen>
void linearDense(const float *x, int64_t T, const Elem *w, int64_t N, int64_t K,
                 const float *bias, float *y) {
  forEachRowTask(N, K, T, [&](int64_t n0, int64_t n1) {
    if (T == 1 && kFusedDecode<Widen>) {
      // Decode: the weights stream through the dot exactly once.
      int64_t n = n0;
      for (; n + 4 <= n1; n += 4)
        dotFourRows<Elem, Widen>(x, w + n * K, K, K, y + n);
      for (; n < n1; ++n)
        y[n] = dotRow<Elem, Widen>(x, w + n * K, K);
      if (bias)
        for (n = n0; n < n1; ++n)
          y[n] += bias[n];
      return;
    }
    linearTiled(x, T, N, K, n0, n1, bias, y,
                [&](int64_t b0, int64_t rows, int64_t k0, int64_t kc,
                    float *buf) -> std::pair<const float *, int64_t> {
                  if constexpr (std::is_same_v<Elem, float>) {
                    return {w + b0 * K + k0, K};
                  } else {
                    for (int64_t r = 0; r < rows; ++r)
                      widenRange<Elem, Widen>(w + (b0 + r) * K + k0, kc,
                                              buf + r * kChunk);
                    return {buf, kChunk};
                  }
                });
  });
}

} // namespace

//===-- Scalar formats ----------------------------------------------------===//

float bf16ToFloat(uint16_t bits) { return widenBf16(bits); }

uint16_t floatToBf16(float value) {
  uint32_t u = floatToBits(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return uint16_t((u >> 16) | 0x40); // quiet the NaN, keep its payload top
  // Adding 0x7FFF plus the lsb of the kept half rounds to nearest even; a
  // carry out of the mantissa correctly bumps the exponent (up to inf).
  return uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float f16ToFloat(uint16_t bits) { return widenF16(bits); }

float roundToBf16(float value) { return bf16ToFloat(floatToBf16(value)); }
float roundToF16(float value) { return f16ToFloat(floatToF16(value)); }

uint16_t floatToF16(float value) {
  uint32_t u = floatToBits(value);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u) // NaN: quiet, keep the top payload bits
    return uint16_t(sign | 0x7E00u | ((u >> 13) & 0x3FFu));
  // 65520 = 65504 + half an ulp; ties go to the odd 0x7BFF's even neighbour,
  // which is inf.
  if (u >= 0x477FF000u)
    return uint16_t(sign | 0x7C00u);
  if (u >= 0x38800000u) {          // normal in f16 (>= 2^-14)
    uint32_t t = u - (112u << 23); // rebias exponent 127 -> 15
    return uint16_t(sign | ((t + 0xFFFu + ((t >> 13) & 1u)) >> 13));
  }
  // Subnormal (or zero) in f16: mantissa = round(|value| * 2^24).
  uint32_t exp = u >> 23;
  if (exp < 102) // below 2^-25: rounds to zero (2^-25 itself ties to zero)
    return sign;
  uint32_t mant = (u & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 126 - exp; // 14 ... 24
  uint32_t result = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (result & 1u)))
    ++result; // may carry into the smallest normal, which is correct
  return uint16_t(sign | result);
}

//===-- Weights -----------------------------------------------------------===//

float loadElement(StorageType storage, const void *data, int64_t i) {
  switch (storage) {
  case StorageType::F32:
    return static_cast<const float *>(data)[i];
  case StorageType::F16:
    return widenF16(static_cast<const uint16_t *>(data)[i]);
  case StorageType::BF16:
    return widenBf16(static_cast<const uint16_t *>(data)[i]);
  }
  return 0.0f;
}

void widenToF32(StorageType storage, const void *data, int64_t count,
                float *out) {
  switch (storage) {
  case StorageType::F32:
    std::memcpy(out, data, size_t(count) * sizeof(float));
    return;
  case StorageType::F16:
    widenRange<uint16_t, WidenF16>(static_cast<const uint16_t *>(data), count,
                                   out);
    return;
  case StorageType::BF16:
    widenRange<uint16_t, WidenBf16>(static_cast<const uint16_t *>(data), count,
                                    out);
    return;
  }
}

Expected<QuantMatrix> unpackGptq(const int32_t *qweight, const int32_t *qzeros,
                                 const void *scales, StorageType scaleStorage,
                                 int64_t N, int64_t K, int64_t groupSize,
                                 int bits, bool zeroMinusOne) {
  auto fail = [](const Twine &msg) {
    return createStringError("GPTQ unpack: " + msg);
  };
  if (bits != 4 && bits != 8)
    return fail("unsupported bit width " + Twine(bits) + " (expected 4 or 8)");
  if (N <= 0 || K <= 0)
    return fail("invalid shape N=" + Twine(N) + ", K=" + Twine(K));
  if (groupSize <= 0)
    return fail("group size " + Twine(groupSize) +
                " must be positive (pass K for one group per row)");
  if (K % groupSize != 0)
    return fail("in_features K=" + Twine(K) +
                " is not a multiple of the group size " + Twine(groupSize));
  if (K * bits % 32 != 0)
    return fail("K=" + Twine(K) + " at " + Twine(bits) +
                " bits does not fill whole int32 words of qweight");
  if (N * bits % 32 != 0)
    return fail("N=" + Twine(N) + " at " + Twine(bits) +
                " bits does not fill whole int32 words of qzeros");
  if (!qweight || !qzeros || !scales)
    return fail("missing qweight, qzeros or scales data");

  const int64_t perWord = 32 / bits, groups = K / groupSize;
  const uint32_t mask = (1u << bits) - 1;
  QuantMatrix m;
  m.rows = N;
  m.cols = K;
  m.groupSize = groupSize;
  m.bits = bits;
  m.codes.resize(size_t(N * K));
  m.scales.resize(size_t(N * groups));
  m.zeros.resize(size_t(N * groups));
  // qweight [K/perWord, N]: code (k, n) sits in word (k / perWord, n).
  for (int64_t kw = 0; kw < K / perWord; ++kw) {
    for (int64_t n = 0; n < N; ++n) {
      uint32_t word = uint32_t(qweight[kw * N + n]);
      for (int64_t j = 0; j < perWord; ++j)
        m.codes[size_t(n * K + kw * perWord + j)] =
            uint8_t((word >> (bits * j)) & mask);
    }
  }
  // qzeros [groups, N/perWord]: zero (g, n) sits in word (g, n / perWord).
  const int64_t zeroWords = N / perWord;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t n = 0; n < N; ++n) {
      uint32_t word = uint32_t(qzeros[g * zeroWords + n / perWord]);
      // "gptq" stores z - 1; an all-ones field therefore means z = 2^bits,
      // as in the AutoGPTQ dequantizer (no wrap-around).
      int32_t z = int32_t((word >> (bits * (n % perWord))) & mask);
      m.zeros[size_t(n * groups + g)] = zeroMinusOne ? z + 1 : z;
      m.scales[size_t(n * groups + g)] =
          loadElement(scaleStorage, scales, g * N + n);
    }
  }
  return m;
}

//===-- Linear / embedding ------------------------------------------------===//

void linear(const float *x, int64_t T, const DenseMatrix &w, const float *bias,
            float *y) {
  const int64_t N = w.rows, K = w.cols;
  if (T <= 0 || N <= 0)
    return;
  switch (w.storage) {
  case StorageType::F32:
    linearDense<float, WidenF32>(x, T, static_cast<const float *>(w.data), N, K,
                                 bias, y);
    return;
  case StorageType::F16:
    linearDense<uint16_t, WidenF16>(x, T, static_cast<const uint16_t *>(w.data),
                                    N, K, bias, y);
    return;
  case StorageType::BF16:
    linearDense<uint16_t, WidenBf16>(
        x, T, static_cast<const uint16_t *>(w.data), N, K, bias, y);
    return;
  }
}

void linear(const float *x, int64_t T, const QuantMatrix &w, const float *bias,
            float *y) {
  const int64_t N = w.rows, K = w.cols;
  if (T <= 0 || N <= 0)
    return;
  assert(w.groupSize > 0 && K % w.groupSize == 0 && "malformed QuantMatrix");
  // Dequantizing a tile into L1 and reusing the f32 kernel keeps the group
  // bookkeeping out of the inner loop.
  forEachRowTask(N, K, T, [&](int64_t n0, int64_t n1) {
    linearTiled(x, T, N, K, n0, n1, bias, y,
                [&](int64_t b0, int64_t rows, int64_t k0, int64_t kc,
                    float *buf) -> std::pair<const float *, int64_t> {
                  for (int64_t r = 0; r < rows; ++r)
                    dequantizeRange(w, b0 + r, k0, kc, buf + r * kChunk);
                  return {buf, kChunk};
                });
  });
}

Error embedding(const DenseMatrix &table, const int64_t *ids, int64_t T,
                float *out) {
  const int64_t bytes = storageBytes(table.storage);
  for (int64_t t = 0; t < T; ++t) {
    int64_t id = ids[t];
    if (id < 0 || id >= table.rows)
      return createStringError(
          "embedding: token id " + Twine(id) + " at position " + Twine(t) +
          " is outside the table of " + Twine(table.rows) + " rows");
    const char *row =
        static_cast<const char *>(table.data) + id * table.cols * bytes;
    widenToF32(table.storage, row, table.cols, out + t * table.cols);
  }
  return Error::success();
}

//===-- Norms and activations ---------------------------------------------===//

void rmsNorm(const float *x, int64_t rows, int64_t n, const float *w, float eps,
             bool gemmaStyle, float *y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    float meanSquare = dotF32(xr, xr, n) / float(n);
    float inv = 1.0f / std::sqrt(meanSquare + eps);
    // Both styles normalize first; they differ in the weight (w vs 1 + w).
    // A null w is the weightless (L2) norm.
    for (int64_t i = 0; i < n; ++i) {
      float normed = xr[i] * inv;
      if (!w)
        yr[i] = normed;
      else if (gemmaStyle)
        yr[i] = normed * (1.0f + w[i]);
      else
        yr[i] = w[i] * normed;
    }
  }
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float silu(float x) { return x * sigmoid(x); }

float geluErf(float x) {
  return 0.5f * x * (1.0f + std::erf(x * numbers::inv_sqrt2f));
}

float floorOrTruncMod(float x, float y, bool fmod) {
  float r = std::fmod(x, y);
  if (fmod || std::isnan(r))
    return r;
  if (r == 0)
    return std::copysign(0.0f, y);
  return std::signbit(r) != std::signbit(y) ? r + y : r;
}

float geluTanh(float x) {
  const float k = float(std::sqrt(2.0 / numbers::pi));
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

void softmaxRows(float *x, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float *xr = x + r * n;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i)
      mx = std::max(mx, xr[i]);
    if (mx == -std::numeric_limits<float>::infinity()) {
      // Every entry masked: give the row no weight rather than 0/0 = NaN.
      std::fill(xr, xr + n, 0.0f);
      continue;
    }
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      xr[i] = std::exp(xr[i] - mx);
      sum += xr[i];
    }
    for (int64_t i = 0; i < n; ++i)
      xr[i] /= sum;
  }
}

//===-- Rotary embedding --------------------------------------------------===//

namespace {

/// HF's default inv_freq = 1 / base ** (arange(0, d, 2).float() / d), all f32.
std::vector<float> defaultInvFreq(float base, int64_t d) {
  std::vector<float> inv(static_cast<size_t>(d / 2));
  for (int64_t i = 0; i < d / 2; ++i) {
    float exponent = float(2 * i) / float(d);
    inv[size_t(i)] = 1.0f / std::pow(base, exponent);
  }
  return inv;
}

double yarnMscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

std::string longRopeProblem(const RopeParams &p) {
  if (p.originalMaxPositionEmbeddings <= 0)
    return "longrope needs original_max_position_embeddings > 0";
  size_t n = size_t(p.rotaryDim / 2);
  for (auto [name, list] : {std::pair{"short_factor", &p.shortFactor},
                            std::pair{"long_factor", &p.longFactor}}) {
    if (list->size() != n)
      return formatv("longrope's {0} has {1} values; rotary_dim {2} needs {3}",
                     name, list->size(), p.rotaryDim, n);
    for (auto [i, v] : llvm::enumerate(*list))
      if (!std::isfinite(v) || v <= 0)
        return formatv("longrope's {0}[{1}] must be positive, got {2}", name, i,
                       v);
  }
  if (p.attentionFactor &&
      !(std::isfinite(*p.attentionFactor) && *p.attentionFactor > 0))
    return formatv("longrope's attention_factor must be positive, got {0}",
                   *p.attentionFactor);
  return "";
}

/// HF _compute_longrope_parameters: the long divisors once the sequence
/// exceeds L0, and the attention factor from factor (or its override).
void longRopeFrequencies(const RopeParams &p, int64_t seqLen,
                         std::vector<float> &invFreq, float &attentionFactor) {
  const int64_t d = p.rotaryDim;
  const double l0 = double(p.originalMaxPositionEmbeddings);
  double af = 1.0;
  if (p.attentionFactor)
    af = *p.attentionFactor;
  else if (p.factor > 1.0)
    af = std::sqrt(1.0 + std::log(p.factor) / std::log(l0));
  attentionFactor = float(af);
  const std::vector<double> &ext =
      seqLen > p.originalMaxPositionEmbeddings ? p.longFactor : p.shortFactor;
  const float base = float(p.theta);
  invFreq.resize(size_t(d / 2));
  for (int64_t i = 0; i < d / 2; ++i) {
    float posFreq = std::pow(base, float(2 * i) / float(d));
    invFreq[size_t(i)] = 1.0f / (float(ext[size_t(i)]) * posFreq);
  }
}

} // namespace

std::string ropeParamsProblem(const RopeParams &p) {
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  using Kind = RopeParams::Kind;
  if (p.rotaryDim <= 0 || p.rotaryDim % 2)
    return formatv("rotary_dim must be positive and even, got {0}",
                   p.rotaryDim);
  if (!positive(p.theta))
    return formatv("theta must be positive, got {0}", p.theta);
  if (p.kind != Kind::Default && !positive(p.factor))
    return formatv("factor must be positive, got {0}", p.factor);
  switch (p.kind) {
  case Kind::Default:
  case Kind::Linear:
    return "";
  case Kind::Dynamic:
    if (p.maxPositionEmbeddings <= 0)
      return "dynamic needs max_position_embeddings > 0";
    return "";
  case Kind::Yarn:
    if (p.originalMaxPositionEmbeddings <= 0 && p.maxPositionEmbeddings <= 0)
      return "yarn needs original_max_position_embeddings or "
             "max_position_embeddings > 0";
    if (!std::isfinite(p.betaFast) || !std::isfinite(p.betaSlow))
      return "yarn's beta_fast and beta_slow must be finite";
    return "";
  case Kind::Llama3:
    if (p.originalMaxPositionEmbeddings <= 0)
      return "llama3 needs original_max_position_embeddings > 0";
    if (!positive(p.lowFreqFactor) || !positive(p.highFreqFactor))
      return "llama3's low_freq_factor and high_freq_factor must be positive";
    // Equal factors are legal (Llama 4 Scout): the smoothing band is empty.
    if (p.lowFreqFactor > p.highFreqFactor)
      return formatv("llama3's low_freq_factor ({0}) must not exceed "
                     "high_freq_factor ({1})",
                     p.lowFreqFactor, p.highFreqFactor);
    return "";
  case Kind::LongRope:
    return longRopeProblem(p);
  }
  return "unknown rope kind";
}

void ropeFrequencies(const RopeParams &p, int64_t seqLen,
                     std::vector<float> &invFreq, float &attentionFactor) {
  const int64_t d = p.rotaryDim;
  attentionFactor = 1.0f;
  invFreq.clear();
  if (d <= 0)
    return;
  const float base = float(p.theta);

  switch (p.kind) {
  case RopeParams::Kind::Default:
    invFreq = defaultInvFreq(base, d);
    return;

  case RopeParams::Kind::Linear:
    invFreq = defaultInvFreq(base, d);
    for (float &f : invFreq)
      f /= float(p.factor);
    return;

  case RopeParams::Kind::Dynamic: {
    if (p.maxPositionEmbeddings <= 0 || seqLen <= p.maxPositionEmbeddings ||
        d <= 2) {
      invFreq = defaultInvFreq(base, d);
      return;
    }
    // HF evaluates the new base on a 0-d f32 tensor (seq_len comes from
    // position_ids), so every step rounds to f32.
    float ratio =
        float(p.factor) * float(seqLen) / float(p.maxPositionEmbeddings) -
        float(p.factor - 1.0);
    float scaledBase = base * std::pow(ratio, float(double(d) / double(d - 2)));
    invFreq = defaultInvFreq(scaledBase, d);
    return;
  }

  case RopeParams::Kind::Llama3: {
    invFreq = defaultInvFreq(base, d);
    const double l0 = double(p.originalMaxPositionEmbeddings > 0
                                 ? p.originalMaxPositionEmbeddings
                                 : p.maxPositionEmbeddings);
    const float lowFreqWavelen = float(l0 / p.lowFreqFactor);
    const float highFreqWavelen = float(l0 / p.highFreqFactor);
    const float factor = float(p.factor);
    const float twoPi = float(2.0 * numbers::pi);
    for (float &f : invFreq) {
      // torch evaluates scalar / tensor as tensor.reciprocal() * scalar.
      float wavelen = (1.0f / f) * twoPi;
      if (wavelen < highFreqWavelen)
        continue;
      if (wavelen > lowFreqWavelen) {
        f = f / factor;
        continue;
      }
      // Only inside the band: with low == high frequency factor the band is
      // empty and the smoothing formula would divide by zero.
      float smooth = ((1.0f / wavelen) * float(l0) - float(p.lowFreqFactor)) /
                     float(p.highFreqFactor - p.lowFreqFactor);
      f = (1.0f - smooth) * f / factor + smooth * f;
    }
    return;
  }

  case RopeParams::Kind::Yarn: {
    const double l0 = double(p.originalMaxPositionEmbeddings > 0
                                 ? p.originalMaxPositionEmbeddings
                                 : p.maxPositionEmbeddings);
    double factor = p.factor;
    if (factor <= 0.0 && l0 > 0.0)
      factor = double(p.maxPositionEmbeddings) / l0;
    if (factor <= 0.0)
      factor = 1.0; // nothing to infer from: no scaling

    double af;
    if (p.attentionFactor)
      af = *p.attentionFactor;
    else if (p.mscale && *p.mscale != 0.0 && p.mscaleAllDim &&
             *p.mscaleAllDim != 0.0)
      af = yarnMscale(factor, *p.mscale) / yarnMscale(factor, *p.mscaleAllDim);
    else
      af = yarnMscale(factor, 1.0);
    attentionFactor = float(af);

    // The correction range is plain Python float (double) math in HF.
    const double betaFast = p.betaFast != 0.0 ? p.betaFast : 32.0;
    const double betaSlow = p.betaSlow != 0.0 ? p.betaSlow : 1.0;
    auto correctionDim = [&](double rotations) {
      return double(d) * std::log(l0 / (rotations * 2.0 * numbers::pi)) /
             (2.0 * std::log(p.theta));
    };
    double lo = correctionDim(betaFast), hi = correctionDim(betaSlow);
    if (p.truncate) {
      lo = std::floor(lo);
      hi = std::ceil(hi);
    }
    lo = std::max(lo, 0.0);
    hi = std::min(hi, double(d - 1));
    if (lo == hi)
      hi += 0.001;

    const float fFactor = float(factor), fLo = float(lo),
                fRange = float(hi - lo);
    invFreq.resize(size_t(d / 2));
    for (int64_t i = 0; i < d / 2; ++i) {
      float posFreq = std::pow(base, float(2 * i) / float(d));
      float extrapolation = 1.0f / posFreq;
      float interpolation = 1.0f / (fFactor * posFreq);
      float ramp = std::clamp((float(i) - fLo) / fRange, 0.0f, 1.0f);
      float extrapolationWeight = 1.0f - ramp;
      invFreq[size_t(i)] = interpolation * (1.0f - extrapolationWeight) +
                           extrapolation * extrapolationWeight;
    }
    return;
  }

  case RopeParams::Kind::LongRope:
    longRopeFrequencies(p, seqLen, invFreq, attentionFactor);
    return;
  }
}

bool longRopeRecomputes(int64_t l0, int64_t past, int64_t T) {
  return l0 > 0 && past > 0 && past <= l0 && past + T > l0;
}

void applyRope(float *x, int64_t T, int64_t H, int64_t headDim, int64_t offset,
               const RopeParams &p, int64_t callLength) {
  RopeParams params = p;
  if (params.rotaryDim <= 0)
    params.rotaryDim = headDim;
  const int64_t d = params.rotaryDim, half = d / 2;
  assert(d <= headDim && d % 2 == 0 && "rotary dim must be even, <= headDim");

  std::vector<float> invFreq;
  float attentionFactor;
  ropeFrequencies(params, std::max(offset + T, callLength), invFreq,
                  attentionFactor);

  std::vector<float> cosv(static_cast<size_t>(half)), sinv(cosv.size());
  for (int64_t t = 0; t < T; ++t) {
    const float pos = float(offset + t);
    for (int64_t i = 0; i < half; ++i) {
      float angle = pos * invFreq[size_t(i)];
      cosv[size_t(i)] = std::cos(angle) * attentionFactor;
      sinv[size_t(i)] = std::sin(angle) * attentionFactor;
    }
    for (int64_t h = 0; h < H; ++h) {
      float *v = x + (t * H + h) * headDim;
      // Element j pairs with j + d/2 (half-split) or 2j with 2j+1.
      const int64_t stride = params.interleaved ? 2 : 1;
      const int64_t partner = params.interleaved ? 1 : half;
      for (int64_t i = 0; i < half; ++i) {
        float &a = v[i * stride], &b = v[i * stride + partner];
        float c = cosv[size_t(i)], s = sinv[size_t(i)];
        float ra = a * c - b * s;
        float rb = b * c + a * s;
        a = ra;
        b = rb;
      }
    }
  }
}

//===-- Attention ---------------------------------------------------------===//

std::vector<float> alibiSlopes(int64_t heads) {
  std::vector<float> slopes;
  if (heads <= 0)
    return slopes;
  int64_t n = int64_t(1) << llvm::Log2_64(uint64_t(heads));
  for (int64_t h = 1; h <= n; ++h)
    slopes.push_back(roundToBf16(float(std::exp2(-8.0 * double(h) / n))));
  for (int64_t h = 1; int64_t(slopes.size()) < heads; h += 2)
    slopes.push_back(roundToBf16(float(std::exp2(-4.0 * double(h) / n))));
  return slopes;
}

float alibiBias(float slope, int64_t key) {
  // bf16 slopes times the positions as a bf16 tensor: the position is
  // converted to bf16 first, the product rounded again.
  return roundToBf16(slope * roundToBf16(float(key)));
}

float attentionTemperature(int64_t pos, int64_t floorScale, float scale) {
  float steps = std::floor((float(pos) + 1.0f) / float(floorScale));
  return std::log1p(steps) * scale + 1.0f;
}

void attention(const float *q, const float *k, const float *v, int64_t T,
               int64_t S, int64_t nh, int64_t nkv, int64_t hd, int64_t hdv,
               const AttentionParams &p, float *out) {
  assert(nkv > 0 && nh % nkv == 0 && "query heads must group onto kv heads");
  const int64_t rep = nh / nkv;

  auto head = [&](size_t hIdx) {
    const int64_t h = int64_t(hIdx), g = h / rep;
    std::vector<float> scores(static_cast<size_t>(std::max<int64_t>(S, 1)));
    // The temperature-tuned query (Llama 4), reused across positions.
    std::vector<float> tuned(p.temperatureFloorScale > 0 ? size_t(hd) : 0);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t pos = S - T + t;
      // Visible keys are [lo, hi); everything else gets exactly zero weight.
      int64_t hi = p.causal ? std::min(S, pos + 1) : S;
      int64_t lo = p.slidingWindow > 0
                       ? std::max<int64_t>(0, pos - p.slidingWindow + 1)
                       : 0;
      if (p.chunkSize > 0) {
        lo = std::max(lo, pos / p.chunkSize * p.chunkSize);
        hi = std::min(hi, (pos / p.chunkSize + 1) * p.chunkSize);
      }
      const float *qv = q + (t * nh + h) * hd;
      if (p.temperatureFloorScale > 0) {
        float f = attentionTemperature(pos, p.temperatureFloorScale,
                                       p.temperatureScale);
        for (int64_t d = 0; d < hd; ++d)
          tuned[size_t(d)] = qv[d] * f;
        qv = tuned.data();
      }
      float *o = out + (t * nh + h) * hdv;
      std::fill(o, o + hdv, 0.0f);
      if (lo >= hi)
        continue;

      const bool sink = !p.sinks.empty();
      const float z = sink ? p.sinks[size_t(h)] : 0.0f;
      float mx = sink ? z : -std::numeric_limits<float>::infinity();
      for (int64_t s = lo; s < hi; ++s) {
        float sc = dotF32(qv, k + (s * nkv + g) * hd, hd);
        if (!p.alibiSlopes.empty()) // the bias before the scale
          sc += alibiBias(p.alibiSlopes[size_t(h)], s);
        sc *= p.scale;
        if (p.logitSoftcap != 0.0f)
          sc = std::tanh(sc / p.logitSoftcap) * p.logitSoftcap;
        scores[size_t(s)] = sc;
        mx = std::max(mx, sc);
      }
      float sum = 0.0f;
      for (int64_t s = lo; s < hi; ++s) {
        float e = std::exp(scores[size_t(s)] - mx);
        scores[size_t(s)] = e;
        sum += e;
      }
      if (sink) // the sink is the last column, as transformers concatenates it
        sum += std::exp(z - mx);
      for (int64_t s = lo; s < hi; ++s)
        accumulateScaled(scores[size_t(s)] / sum, v + (s * nkv + g) * hdv, o,
                         hdv);
    }
  };

  // Small problems (single-token decode on a short cache) are not worth
  // the thread dispatch.
  if (nh * T * S * (hd + hdv) < (int64_t(1) << 16)) {
    for (int64_t h = 0; h < nh; ++h)
      head(size_t(h));
    return;
  }
  parallelFor(0, size_t(nh), head);
}

//===----------------------------------------------------------------------===//
// Primitive ops of the graph frontends
//===----------------------------------------------------------------------===//

namespace {
/// Strict order for top-k: `a` before `b`. NaN sorts as the largest value,
/// as torch.topk does.
bool topkBefore(float a, float b, bool largest) {
  bool an = std::isnan(a), bn = std::isnan(b);
  if (an || bn)
    return largest ? (an && !bn) : (!an && bn);
  return largest ? a > b : a < b;
}
} // namespace

void topk(const float *x, int64_t outer, int64_t n, int64_t inner, int64_t k,
          bool largest, float *values, int64_t *indices) {
  std::vector<int64_t> order(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t j) { return x[(o * n + j) * inner + in]; };
      for (int64_t j = 0; j < n; ++j)
        order[j] = j;
      // stable: equal values keep increasing index order.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return topkBefore(at(a), at(b), largest);
      });
      for (int64_t j = 0; j < k; ++j) {
        values[(o * k + j) * inner + in] = at(order[j]);
        indices[(o * k + j) * inner + in] = order[j];
      }
    }
}

void layerNorm(const float *x, int64_t rows, int64_t n, const float *w,
               const float *b, float eps, float *y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i)
      sum += xr[i];
    float mean = sum / static_cast<float>(n);
    float sq = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      float d = xr[i] - mean;
      sq += d * d;
    }
    float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      float v = (xr[i] - mean) * inv;
      if (w)
        v *= w[i];
      if (b)
        v += b[i];
      yr[i] = v;
    }
  }
}

void linear(const float *x, int64_t T, const LinearWeight &w, const float *bias,
            float *y) {
  if (w.dense)
    linear(x, T, *w.dense, bias, y);
  else
    linear(x, T, *w.quant, bias, y);
}

float gateActivation(GateActivation act, float x) {
  switch (act) {
  case GateActivation::Silu:
    return silu(x);
  case GateActivation::Gelu:
    return geluErf(x);
  case GateActivation::GeluTanh:
    return geluTanh(x);
  case GateActivation::ClampedSwiglu: // needs up: GatedActivation
    break;
  }
  assert(false && "clamped_swiglu is not a function of the gate alone");
  return x;
}

float GatedActivation::operator()(float g, float u) const {
  if (fn != GateActivation::ClampedSwiglu)
    return gateActivation(fn, g) * u;
  g = std::min(g, limit);
  u = std::clamp(u, -limit, limit);
  return (u + 1.0f) * (g * sigmoid(alpha * g));
}

void gatedMLP(const float *x, int64_t T, const ExpertWeights &w,
              const GatedActivation &act, float *y) {
  int64_t I = w.gate.rows();
  std::vector<float> gate(T * I), up(T * I);
  linear(x, T, w.gate, w.gateBias, gate.data());
  linear(x, T, w.up, w.upBias, up.data());
  for (int64_t i = 0; i < T * I; ++i)
    gate[i] = act(gate[i], up[i]);
  linear(gate.data(), T, w.down, w.downBias, y);
}

void headLinear(const float *x, int64_t T, int64_t heads, int64_t K, int64_t N,
                const float *w, bool transposed, float *y) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      const float *xi = x + (t * heads + h) * K;
      const float *wh = w + h * N * K;
      float *yo = y + (t * heads + h) * N;
      for (int64_t n = 0; n < N; ++n) {
        float acc = 0.0f;
        for (int64_t k = 0; k < K; ++k)
          acc += xi[k] * (transposed ? wh[k * N + n] : wh[n * K + k]);
        yo[n] = acc;
      }
    }
}

namespace {
/// Group-limited selection: each group of E / nGroup consecutive experts
/// scores the sum of its groupScoreTopk largest choice values (largest
/// first); the topkGroup best groups stay (ties to the lower group), the
/// other experts' choice values become -inf.
void maskGroups(std::vector<float> &choice, const MoEParams &p) {
  int64_t E = int64_t(choice.size()), G = p.nGroup, n = E / G;
  std::vector<float> groupScore(static_cast<size_t>(G));
  std::vector<float> top(static_cast<size_t>(p.groupScoreTopk));
  std::vector<int64_t> idx(
      static_cast<size_t>(std::max(p.groupScoreTopk, p.topkGroup)));
  for (int64_t g = 0; g < G; ++g) {
    topk(choice.data() + g * n, 1, n, 1, p.groupScoreTopk, /*largest=*/true,
         top.data(), idx.data());
    float s = 0.0f;
    for (float v : top)
      s += v;
    groupScore[size_t(g)] = s;
  }
  std::vector<float> keptScores(static_cast<size_t>(p.topkGroup));
  topk(groupScore.data(), 1, G, 1, p.topkGroup, /*largest=*/true,
       keptScores.data(), idx.data());
  std::vector<bool> kept(static_cast<size_t>(G), false);
  for (int64_t j = 0; j < p.topkGroup; ++j)
    kept[size_t(idx[size_t(j)])] = true;
  for (int64_t e = 0; e < E; ++e)
    if (!kept[size_t(e / n)])
      choice[size_t(e)] = -std::numeric_limits<float>::infinity();
}
} // namespace

MoERoute routeToken(const float *logits, int64_t E, const MoEParams &p) {
  int64_t k = p.topK;
  std::vector<float> scores(logits, logits + E);
  auto score = [&](float *v, int64_t n) {
    if (p.sigmoidScoring)
      for (int64_t i = 0; i < n; ++i)
        v[i] = sigmoid(v[i]);
    else
      softmaxRows(v, 1, n);
  };
  if (!p.topkThenScore)
    score(scores.data(), E);
  // What the experts are chosen on: the scores (+ DeepSeek's correction
  // bias), outside the kept groups -inf.
  std::vector<float> choice = scores;
  for (size_t e = 0; e < p.correctionBias.size(); ++e)
    choice[e] += p.correctionBias[e];
  if (p.nGroup > 1)
    maskGroups(choice, p);
  std::vector<float> topValues(k);
  std::vector<int64_t> topIndices(k);
  topk(choice.data(), 1, E, 1, k, /*largest=*/true, topValues.data(),
       topIndices.data());
  for (int64_t j = 0; j < k; ++j) // the weights are the scores, not choice
    topValues[j] = scores[topIndices[j]];
  if (p.topkThenScore)
    score(topValues.data(), k);
  if (p.renormalize) {
    float sum = 0.0f;
    for (float v : topValues)
      sum += v;
    sum += p.renormalizeEpsilon;
    for (float &v : topValues)
      v /= sum;
  }
  for (float &v : topValues)
    v *= p.routedScalingFactor;
  // Ascending expert index: the order the outputs are summed in.
  std::vector<int64_t> order(k);
  for (int64_t j = 0; j < k; ++j)
    order[j] = j;
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return topIndices[a] < topIndices[b];
  });
  MoERoute route;
  for (int64_t j : order) {
    route.experts.push_back(topIndices[j]);
    route.weights.push_back(topValues[j]);
  }
  return route;
}

void moe(const float *x, int64_t T, int64_t H, const LinearWeight &router,
         const float *routerBias, ArrayRef<ExpertWeights> experts,
         const ExpertWeights *shared, const MoEParams &p, float *y,
         const LinearWeight *sharedGate) {
  int64_t E = experts.size();
  std::vector<float> logits(T * E);
  linear(x, T, router, routerBias, logits.data());
  std::vector<MoERoute> routes(T);
  for (int64_t t = 0; t < T; ++t)
    routes[t] = routeToken(logits.data() + t * E, E, p);
  std::fill(y, y + T * H, 0.0f);
  // Each expert runs once on the tokens routed to it. Experts are visited
  // in increasing index, so every token's sum adds its experts in that
  // order, starting from 0.
  std::vector<float> in, out;
  std::vector<std::pair<int64_t, float>> rows; // (token, weight)
  for (int64_t e = 0; e < E; ++e) {
    rows.clear();
    for (int64_t t = 0; t < T; ++t)
      for (size_t j = 0; j < routes[t].experts.size(); ++j)
        if (routes[t].experts[j] == e)
          rows.push_back({t, routes[t].weights[j]});
    if (rows.empty())
      continue;
    int64_t n = rows.size();
    in.resize(n * H);
    out.resize(n * H);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t h = 0; h < H; ++h) {
        float v = x[rows[r].first * H + h];
        in[r * H + h] = p.weightOnInput ? rows[r].second * v : v;
      }
    gatedMLP(in.data(), n, experts[e], p.activation, out.data());
    for (int64_t r = 0; r < n; ++r)
      for (int64_t h = 0; h < H; ++h) {
        float v = out[r * H + h];
        y[rows[r].first * H + h] += p.weightOnInput ? v : rows[r].second * v;
      }
  }
  if (shared) {
    std::vector<float> s(T * H);
    gatedMLP(x, T, *shared, p.activation, s.data());
    std::vector<float> g;
    if (sharedGate) {
      g.resize(T);
      linear(x, T, *sharedGate, nullptr, g.data());
      for (float &v : g)
        v = sigmoid(v);
    }
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        y[t * H + h] += sharedGate ? g[t] * s[t * H + h] : s[t * H + h];
  }
}

} // namespace pimc::ref
