//===- KernelsTest.cpp - reference interpreter numeric kernels ------------===//
//
// Every kernel is checked against an independent formulation: conversions
// against llvm::APFloat, RoPE against the spec's section 7 vectors and a
// double-precision rotation, attention and linear against naive
// double-precision loops, GPTQ unpacking against hand-packed words.
//
//===----------------------------------------------------------------------===//

#include "pimc/Numerics/Kernels.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace pimc::ref;
using llvm::APFloat;
using llvm::APInt;

namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// Decode a 16-bit format with APFloat (independent of the kernels).
float apDecode(const llvm::fltSemantics &sem, uint16_t bits) {
  APFloat v(sem, APInt(16, bits));
  bool lost;
  v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
  return v.convertToFloat();
}

uint16_t apEncode(const llvm::fltSemantics &sem, float f) {
  APFloat v(f);
  bool lost;
  v.convert(sem, APFloat::rmNearestTiesToEven, &lost);
  return uint16_t(v.bitcastToAPInt().getZExtValue());
}

/// Reference element read: 16-bit formats decoded by APFloat.
double refLoad(StorageType st, const void *data, int64_t i) {
  switch (st) {
  case StorageType::F32:
    return static_cast<const float *>(data)[i];
  case StorageType::F16:
    return apDecode(APFloat::IEEEhalf(),
                    static_cast<const uint16_t *>(data)[i]);
  case StorageType::BF16:
    return apDecode(APFloat::BFloat(), static_cast<const uint16_t *>(data)[i]);
  }
  return 0;
}

std::vector<float> randomFloats(std::mt19937 &rng, size_t n, float lo = -1.0f,
                                float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &f : v)
    f = dist(rng);
  return v;
}

/// A weight buffer in `st` holding (a rounding of) `values`.
struct StoredMatrix {
  std::vector<float> f32;
  std::vector<uint16_t> half;
  DenseMatrix view(StorageType st, int64_t rows, int64_t cols) const {
    DenseMatrix m;
    m.storage = st;
    m.data = st == StorageType::F32 ? static_cast<const void *>(f32.data())
                                    : static_cast<const void *>(half.data());
    m.rows = rows;
    m.cols = cols;
    return m;
  }
};

StoredMatrix storeAs(StorageType st, const std::vector<float> &values) {
  StoredMatrix m;
  if (st == StorageType::F32) {
    m.f32 = values;
    return m;
  }
  const auto &sem =
      st == StorageType::F16 ? APFloat::IEEEhalf() : APFloat::BFloat();
  for (float f : values)
    m.half.push_back(apEncode(sem, f));
  return m;
}

const char *storageName(StorageType st) {
  switch (st) {
  case StorageType::F32:
    return "f32";
  case StorageType::F16:
    return "f16";
  case StorageType::BF16:
    return "bf16";
  }
  return "?";
}

//===-- Scalar formats ----------------------------------------------------===//

TEST(Bf16, SpecRoundToNearestEvenVectors) {
  struct {
    float in;
    uint16_t out;
  } cases[] = {
      {1.0f, 0x3F80},          {1.00390625f, 0x3F80}, // tie -> even
      {1.01171875f, 0x3F82},                          // tie -> even (up)
      {3.14159265f, 0x4049},   {59.866518f, 0x426F},
      {65504.0f, 0x4780},      {1e-40f, 0x0001}, // subnormal kept
      {3.3895314e38f, 0x7F7F}, {-2.0f, 0xC000},
  };
  for (const auto &c : cases)
    EXPECT_EQ(floatToBf16(c.in), c.out) << "input " << c.in;
}

TEST(Bf16, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(floatToBf16(inf), 0x7F80);
  EXPECT_EQ(floatToBf16(-inf), 0xFF80);
  EXPECT_EQ(floatToBf16(floatOf(0x7F7FFFFF)), 0x7F80); // overflows to inf
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  // A signalling NaN whose payload lives in the dropped half must stay NaN.
  EXPECT_EQ(floatToBf16(floatOf(0x7F800001)), 0x7FC0);
  EXPECT_EQ(floatToBf16(floatOf(0xFFC12345)), 0xFFC1);
  EXPECT_TRUE(std::isnan(bf16ToFloat(0x7FC1)));
  EXPECT_EQ(bf16ToFloat(0x0001), floatOf(0x00010000)); // subnormal
}

TEST(Bf16, ExhaustiveRoundTripAndRandomAgainstAPFloat) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = bf16ToFloat(uint16_t(b));
    ASSERT_EQ(bitsOf(f), b << 16) << "bf16 0x" << std::hex << b;
    if (!std::isnan(f)) {
      ASSERT_EQ(floatToBf16(f), b) << "bf16 0x" << std::hex << b;
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    float f = floatOf(uint32_t(rng()));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(floatToBf16(f), apEncode(APFloat::BFloat(), f))
        << "bits 0x" << std::hex << bitsOf(f);
  }
}

TEST(F16, WidenExhaustiveAgainstAPFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float got = f16ToFloat(uint16_t(h));
    float want = apDecode(APFloat::IEEEhalf(), uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << "f16 0x" << std::hex << h;
      if (h & 0x200) { // quiet NaN: payload must carry over unchanged
        ASSERT_EQ(bitsOf(got), bitsOf(want)) << "f16 0x" << std::hex << h;
      }
      continue;
    }
    ASSERT_EQ(bitsOf(got), bitsOf(want)) << "f16 0x" << std::hex << h;
    uint16_t stored = uint16_t(h);
    ASSERT_EQ(bitsOf(loadElement(StorageType::F16, &stored, 0)), bitsOf(got));
  }
}

TEST(F16, NarrowAgainstAPFloatAtValuesAndMidpoints) {
  auto check = [](float f) {
    ASSERT_EQ(floatToF16(f), apEncode(APFloat::IEEEhalf(), f))
        << "input " << f << " bits 0x" << std::hex << bitsOf(f);
  };
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      float a = f16ToFloat(uint16_t(h | sign));
      float b = f16ToFloat(uint16_t((h + 1) | sign)); // next, may be inf
      check(a);
      if (std::isinf(b))
        b = sign ? -65536.0f : 65536.0f;              // the would-be next value
      float mid = float((double(a) + double(b)) / 2); // exact in f32
      check(mid);
      check(std::nextafter(mid, 0.0f));
      check(std::nextafter(mid, sign ? -1e30f : 1e30f));
    }
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 1000000; ++i) {
    float f = floatOf(uint32_t(rng()));
    if (!std::isnan(f))
      check(f);
  }
  EXPECT_EQ(floatToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToF16(65519.99f), 0x7BFF);
  EXPECT_EQ(floatToF16(65520.0f), 0x7C00);              // tie to even overflows
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000); // tie to zero
  EXPECT_EQ(floatToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  uint16_t nan = floatToF16(floatOf(0x7F800001));
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x3FF, 0);
}

TEST(Widen, AllStoragesAgreeWithLoadElement) {
  std::mt19937 rng(3);
  std::vector<float> values = randomFloats(rng, 37, -100.0f, 100.0f);
  for (StorageType st :
       {StorageType::F32, StorageType::F16, StorageType::BF16}) {
    StoredMatrix m = storeAs(st, values);
    const void *data = m.view(st, 1, 37).data;
    std::vector<float> out(37);
    widenToF32(st, data, 37, out.data());
    for (int64_t i = 0; i < 37; ++i) {
      EXPECT_EQ(out[i], loadElement(st, data, i)) << storageName(st) << i;
      EXPECT_EQ(double(out[i]), refLoad(st, data, i)) << storageName(st) << i;
    }
  }
}

//===-- Rotary frequencies ------------------------------------------------===//

std::vector<float> frequencies(const RopeParams &p, int64_t seqLen,
                               float *attentionFactor = nullptr) {
  std::vector<float> inv;
  float af = -1.0f;
  ropeFrequencies(p, seqLen, inv, af);
  if (attentionFactor)
    *attentionFactor = af;
  return inv;
}

TEST(RopeFrequencies, DefaultAndLinear) {
  RopeParams p;
  p.rotaryDim = 128;
  p.theta = 10000.0;
  float af;
  std::vector<float> inv = frequencies(p, 16, &af);
  ASSERT_EQ(inv.size(), 64u);
  EXPECT_EQ(af, 1.0f);
  EXPECT_EQ(inv[0], 1.0f);
  for (int i = 0; i < 64; ++i)
    EXPECT_NEAR(inv[i], std::pow(10000.0, -2.0 * i / 128), 1e-6 * inv[i]);

  p.kind = RopeParams::Kind::Linear;
  p.factor = 8.0;
  std::vector<float> scaled = frequencies(p, 16);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(scaled[i], inv[i] / 8.0f);
}

RopeParams llama31() {
  RopeParams p;
  p.kind = RopeParams::Kind::Llama3;
  p.rotaryDim = 128;
  p.theta = 500000.0;
  p.factor = 8.0;
  p.lowFreqFactor = 1.0;
  p.highFreqFactor = 4.0;
  p.originalMaxPositionEmbeddings = 8192;
  p.maxPositionEmbeddings = 131072;
  return p;
}

TEST(RopeFrequencies, Llama31Bands) {
  RopeParams p = llama31();
  std::vector<float> inv = frequencies(p, 1);
  RopeParams plain = p;
  plain.kind = RopeParams::Kind::Default;
  std::vector<float> base = frequencies(plain, 1);
  ASSERT_EQ(inv.size(), 64u);
  int unchanged = 0, smoothed = 0, divided = 0;
  for (int i = 0; i < 64; ++i) {
    if (inv[i] == base[i])
      ++unchanged;
    else if (inv[i] == base[i] / 8.0f)
      ++divided;
    else
      ++smoothed;
  }
  EXPECT_EQ(unchanged, 29);
  EXPECT_EQ(smoothed, 6);
  EXPECT_EQ(divided, 29);
  EXPECT_NEAR(base[30], 2.131120e-3, 5e-6 * 2.131120e-3);
  EXPECT_NEAR(inv[30], 1.371894e-3, 5e-6 * 1.371894e-3);
  EXPECT_NEAR(base[40], 2.742482e-4, 5e-6 * 2.742482e-4);
  EXPECT_NEAR(inv[40], 3.428102e-5, 5e-6 * 3.428102e-5);
}

TEST(RopeFrequencies, Llama3EmptyBandHasNoNaN) {
  // Llama-4-Scout style: low == high frequency factor.
  RopeParams p = llama31();
  p.factor = 16.0;
  p.highFreqFactor = 1.0;
  std::vector<float> inv = frequencies(p, 1);
  RopeParams plain = p;
  plain.kind = RopeParams::Kind::Default;
  std::vector<float> base = frequencies(plain, 1);
  for (size_t i = 0; i < inv.size(); ++i) {
    ASSERT_TRUE(std::isfinite(inv[i])) << i;
    EXPECT_TRUE(inv[i] == base[i] || inv[i] == base[i] / 16.0f) << i;
  }
}

RopeParams yarn(int64_t d, double base, double factor, int64_t l0) {
  RopeParams p;
  p.kind = RopeParams::Kind::Yarn;
  p.rotaryDim = d;
  p.theta = base;
  p.factor = factor;
  p.originalMaxPositionEmbeddings = l0;
  p.maxPositionEmbeddings = int64_t(factor * double(l0));
  return p;
}

TEST(RopeFrequencies, YarnDeepSeekV3) {
  RopeParams p = yarn(64, 1e4, 40, 4096);
  p.mscale = 1.0;
  p.mscaleAllDim = 1.0;
  float af;
  std::vector<float> inv = frequencies(p, 1, &af);
  ASSERT_EQ(inv.size(), 32u);
  EXPECT_EQ(inv[0], 1.0f);
  EXPECT_NEAR(inv[31], 3.33380e-6, 2e-5 * 3.33380e-6);
  EXPECT_EQ(af, 1.0f);
  // lo, hi = 10, 23: pure extrapolation up to 10, pure interpolation from 23.
  for (int i = 0; i < 32; ++i) {
    double theta = std::pow(1e4, -2.0 * i / 64);
    if (i <= 10)
      EXPECT_NEAR(inv[i], theta, 1e-6 * theta) << i;
    else if (i >= 23)
      EXPECT_NEAR(inv[i], theta / 40, 1e-6 * theta / 40) << i;
    else
      EXPECT_TRUE(inv[i] < theta && inv[i] > theta / 40) << i;
  }
}

double yarnBlend(int i, double lo, double hi, double d, double base, double s) {
  double theta = std::pow(base, -2.0 * i / d);
  double ramp = std::clamp((i - lo) / (hi - lo), 0.0, 1.0);
  return theta / s * ramp + theta * (1 - ramp);
}

TEST(RopeFrequencies, YarnGptOssNoTruncation) {
  RopeParams p = yarn(64, 150000.0, 32, 4096);
  p.truncate = false;
  float af;
  std::vector<float> inv = frequencies(p, 1, &af);
  EXPECT_NEAR(af, 1.34657359, 1e-6);
  for (int i : {0, 8, 9, 12, 17, 18, 31})
    EXPECT_NEAR(inv[i], yarnBlend(i, 8.0927791, 17.3980245, 64, 150000, 32),
                2e-6 * inv[i])
        << i;
  // With truncation the band becomes [8, 18] and the blend changes.
  p.truncate = true;
  std::vector<float> truncated = frequencies(p, 1);
  EXPECT_NEAR(truncated[12], yarnBlend(12, 8, 18, 64, 150000, 32),
              2e-6 * truncated[12]);
  EXPECT_GT(std::abs(truncated[12] - inv[12]), 1e-3 * inv[12]);
}

TEST(RopeFrequencies, YarnAttentionFactorRules) {
  auto mscale = [](double s, double m) { return 0.1 * m * std::log(s) + 1; };
  RopeParams p = yarn(64, 1e4, 40, 4096);
  float af;
  frequencies(p, 1, &af);
  EXPECT_FLOAT_EQ(af, float(mscale(40, 1))); // neither mscale given

  p.mscale = 1.0; // only one of the pair: still get_mscale(factor)
  frequencies(p, 1, &af);
  EXPECT_FLOAT_EQ(af, float(mscale(40, 1)));

  p.mscaleAllDim = 0.5;
  frequencies(p, 1, &af);
  EXPECT_FLOAT_EQ(af, float(mscale(40, 1) / mscale(40, 0.5)));

  p.mscale = 0.707;
  p.mscaleAllDim = 0.707;
  frequencies(p, 1, &af);
  EXPECT_FLOAT_EQ(af, 1.0f);

  p.attentionFactor = 0.25;
  frequencies(p, 1, &af);
  EXPECT_EQ(af, 0.25f);

  // Factor unset: inferred as max_position_embeddings / L0.
  RopeParams inferred = yarn(64, 1e4, 40, 4096);
  inferred.factor = 0.0;
  std::vector<float> inv = frequencies(inferred, 1, &af);
  EXPECT_FLOAT_EQ(af, float(mscale(40, 1)));
  EXPECT_NEAR(inv[31], 3.33380e-6, 2e-5 * 3.33380e-6);

  // L0 falls back to max_position_embeddings when no original is given.
  RopeParams noOriginal = yarn(64, 1e4, 40, 4096);
  noOriginal.originalMaxPositionEmbeddings = 0;
  noOriginal.maxPositionEmbeddings = 4096;
  EXPECT_EQ(frequencies(noOriginal, 1),
            frequencies(yarn(64, 1e4, 40, 4096), 1));
}

TEST(RopeFrequencies, DynamicNtk) {
  RopeParams p;
  p.kind = RopeParams::Kind::Dynamic;
  p.rotaryDim = 128;
  p.theta = 1e4;
  p.factor = 2.0;
  p.maxPositionEmbeddings = 4096;
  std::vector<float> inv = frequencies(p, 8192);
  double scaledBase = 30527.737;
  EXPECT_NEAR(inv[1], std::pow(scaledBase, -2.0 / 128), 1e-6 * inv[1]);
  EXPECT_NEAR(inv[63], std::pow(scaledBase, -126.0 / 128), 1e-5 * inv[63]);

  RopeParams plain = p;
  plain.kind = RopeParams::Kind::Default;
  EXPECT_EQ(frequencies(p, 4096), frequencies(plain, 4096));
  EXPECT_EQ(frequencies(p, 10), frequencies(plain, 10));
}

/// Phi-3.5-mini's shape: the short divisors up to L0, the long ones beyond,
/// and sqrt(1 + ln(factor) / ln(L0)) on cos and sin either way.
TEST(RopeFrequencies, LongRopeSwitchesAtL0) {
  RopeParams p;
  p.kind = RopeParams::Kind::LongRope;
  p.rotaryDim = 4;
  p.theta = 1e4;
  p.factor = 32.0;
  p.originalMaxPositionEmbeddings = 4096;
  p.shortFactor = {1.0, 1.5};
  p.longFactor = {2.0, 40.0};
  EXPECT_EQ(ropeParamsProblem(p), "");
  std::vector<float> inv;
  float af = 0;
  ropeFrequencies(p, 4096, inv, af);
  EXPECT_FLOAT_EQ(inv[0], 1.0f);
  EXPECT_FLOAT_EQ(inv[1], 1.0f / (1.5f * 100.0f));
  EXPECT_FLOAT_EQ(af,
                  float(std::sqrt(1.0 + std::log(32.0) / std::log(4096.0))));
  ropeFrequencies(p, 4097, inv, af);
  EXPECT_FLOAT_EQ(inv[0], 0.5f);
  EXPECT_FLOAT_EQ(inv[1], 1.0f / (40.0f * 100.0f));
  p.attentionFactor = 1.25;
  ropeFrequencies(p, 1, inv, af);
  EXPECT_FLOAT_EQ(af, 1.25f);

  // The call's length, not the token's position, picks the table.
  std::vector<float> a(4, 1.0f), b = a;
  applyRope(a.data(), 1, 1, 4, 100, p);
  applyRope(b.data(), 1, 1, 4, 100, p, /*callLength=*/5000);
  EXPECT_NE(a, b);

  RopeParams bad = p;
  bad.longFactor.pop_back();
  EXPECT_EQ(ropeParamsProblem(bad),
            "longrope's long_factor has 1 values; rotary_dim 4 needs 2");
  bad = p;
  bad.shortFactor[1] = 0;
  EXPECT_EQ(ropeParamsProblem(bad),
            "longrope's short_factor[1] must be positive, got 0.00");
  bad = p;
  bad.originalMaxPositionEmbeddings = 0;
  EXPECT_EQ(ropeParamsProblem(bad),
            "longrope needs original_max_position_embeddings > 0");
}

TEST(RopeFrequencies, LongRopeRecomputesOnceAtTheCrossing) {
  EXPECT_FALSE(longRopeRecomputes(0, 16, 1));  // no longrope
  EXPECT_FALSE(longRopeRecomputes(16, 0, 20)); // a first call: nothing cached
  EXPECT_FALSE(longRopeRecomputes(16, 15, 1)); // ends at 16 = L0
  EXPECT_TRUE(longRopeRecomputes(16, 16, 1));  // the sequence reaches 17
  EXPECT_TRUE(longRopeRecomputes(16, 10, 7));
  EXPECT_FALSE(longRopeRecomputes(16, 17, 1)); // already long
}

//===-- RoPE rotation -----------------------------------------------------===//

/// Rotation in double from the kernel's own frequencies.
std::vector<float> naiveRope(const std::vector<float> &x, int64_t T, int64_t H,
                             int64_t hd, int64_t offset, const RopeParams &p) {
  std::vector<float> inv;
  float af;
  ropeFrequencies(p, offset + T, inv, af);
  const int64_t d = p.rotaryDim, half = d / 2;
  std::vector<float> y = x;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < half; ++i) {
        double angle = double(offset + t) * double(inv[i]);
        double c = std::cos(angle) * af, s = std::sin(angle) * af;
        int64_t base = (t * H + h) * hd;
        int64_t ia = p.interleaved ? base + 2 * i : base + i;
        int64_t ib = p.interleaved ? ia + 1 : ia + half;
        double a = x[ia], b = x[ib];
        y[ia] = float(a * c - b * s);
        y[ib] = float(b * c + a * s);
      }
  return y;
}

void expectRopeMatchesNaive(const RopeParams &p, int64_t hd, int64_t offset) {
  const int64_t T = 3, H = 2;
  std::mt19937 rng(5);
  std::vector<float> x = randomFloats(rng, size_t(T * H * hd));
  std::vector<float> want = naiveRope(x, T, H, hd, offset, p);
  std::vector<float> got = x;
  applyRope(got.data(), T, H, hd, offset, p);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-5) << "element " << i;
    if (int64_t(i % hd) >= p.rotaryDim) { // pass-through dims, bit exact
      ASSERT_EQ(bitsOf(got[i]), bitsOf(x[i])) << "element " << i;
    }
  }
}

TEST(ApplyRope, HalfSplitMatchesNaive) {
  RopeParams p;
  p.rotaryDim = 16;
  expectRopeMatchesNaive(p, 16, 0);
  expectRopeMatchesNaive(p, 16, 37);
}

TEST(ApplyRope, InterleavedMatchesNaive) {
  RopeParams p;
  p.rotaryDim = 16;
  p.interleaved = true;
  expectRopeMatchesNaive(p, 16, 37);
}

TEST(ApplyRope, PartialRotaryPassesTailThrough) {
  for (bool interleaved : {false, true}) {
    RopeParams p;
    p.rotaryDim = 8;
    p.interleaved = interleaved;
    expectRopeMatchesNaive(p, 24, 11);
  }
}

TEST(ApplyRope, YarnScalesRotatedDims) {
  RopeParams p = yarn(16, 150000.0, 32, 4096);
  p.truncate = false;
  expectRopeMatchesNaive(p, 16, 100);
}

TEST(ApplyRope, HalfSplitDiffersFromInterleaved) {
  RopeParams p;
  p.rotaryDim = 8;
  std::mt19937 rng(9);
  std::vector<float> a = randomFloats(rng, 8), b = a;
  applyRope(a.data(), 1, 1, 8, 5, p);
  p.interleaved = true;
  applyRope(b.data(), 1, 1, 8, 5, p);
  EXPECT_GT(std::abs(a[1] - b[1]), 1e-3);
}

TEST(ApplyRope, PreservesPairNormsAndIdentityAtZero) {
  for (bool interleaved : {false, true}) {
    RopeParams p;
    p.rotaryDim = 64;
    p.interleaved = interleaved;
    const int64_t T = 4, H = 3, hd = 64, half = 32;
    std::mt19937 rng(13);
    std::vector<float> x = randomFloats(rng, size_t(T * H * hd)), y = x;
    applyRope(y.data(), T, H, hd, 1000, p);
    for (int64_t r = 0; r < T * H; ++r)
      for (int64_t i = 0; i < half; ++i) {
        int64_t a = r * hd + (interleaved ? 2 * i : i);
        int64_t b = interleaved ? a + 1 : a + half;
        double before = std::hypot(x[a], x[b]), after = std::hypot(y[a], y[b]);
        ASSERT_NEAR(after, before, 1e-6 + 1e-6 * before) << r << " " << i;
      }
    std::vector<float> z = x;
    applyRope(z.data(), 1, H, hd, 0, p); // position 0 rotates by 0
    for (int64_t i = 0; i < H * hd; ++i)
      ASSERT_EQ(z[i], x[i]);
  }
}

//===-- Attention ---------------------------------------------------------===//

std::vector<double>
naiveAttention(const std::vector<float> &q, const std::vector<float> &k,
               const std::vector<float> &v, int64_t T, int64_t S, int64_t nh,
               int64_t nkv, int64_t hd, int64_t hdv, const AttentionParams &p) {
  std::vector<double> out(size_t(T * nh * hdv), 0.0);
  for (int64_t h = 0; h < nh; ++h) {
    int64_t g = h / (nh / nkv);
    for (int64_t t = 0; t < T; ++t) {
      int64_t pos = S - T + t;
      std::vector<double> w(size_t(S), 0.0);
      std::vector<bool> visible(static_cast<size_t>(S));
      double mx = -1e300;
      for (int64_t s = 0; s < S; ++s) {
        visible[s] = (!p.causal || s <= pos) &&
                     (p.slidingWindow <= 0 || s > pos - p.slidingWindow);
        if (!visible[s])
          continue;
        double dot = 0;
        for (int64_t j = 0; j < hd; ++j)
          dot += double(q[(t * nh + h) * hd + j]) * k[(s * nkv + g) * hd + j];
        if (!p.alibiSlopes.empty()) // exact here: small keys, 2^-k slopes
          dot += double(p.alibiSlopes[size_t(h)]) * double(s);
        dot *= p.scale;
        if (p.logitSoftcap != 0)
          dot = p.logitSoftcap * std::tanh(dot / p.logitSoftcap);
        w[s] = dot;
        mx = std::max(mx, dot);
      }
      double sum = 0;
      for (int64_t s = 0; s < S; ++s)
        if (visible[s])
          sum += (w[s] = std::exp(w[s] - mx));
      for (int64_t s = 0; s < S; ++s)
        if (visible[s])
          for (int64_t j = 0; j < hdv; ++j)
            out[(t * nh + h) * hdv + j] +=
                w[s] / sum * v[(s * nkv + g) * hdv + j];
    }
  }
  return out;
}

struct AttentionCase {
  int64_t T, S, nh, nkv, hd, hdv;
  AttentionParams p;
};

void expectAttentionMatchesNaive(const AttentionCase &c, float qkRange = 1.0f) {
  std::mt19937 rng(17);
  auto q = randomFloats(rng, size_t(c.T * c.nh * c.hd), -qkRange, qkRange);
  auto k = randomFloats(rng, size_t(c.S * c.nkv * c.hd), -qkRange, qkRange);
  auto v = randomFloats(rng, size_t(c.S * c.nkv * c.hdv));
  std::vector<float> out(size_t(c.T * c.nh * c.hdv), -7.0f);
  attention(q.data(), k.data(), v.data(), c.T, c.S, c.nh, c.nkv, c.hd, c.hdv,
            c.p, out.data());
  auto want = naiveAttention(q, k, v, c.T, c.S, c.nh, c.nkv, c.hd, c.hdv, c.p);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 2e-5)
        << "T=" << c.T << " S=" << c.S << " nh=" << c.nh << " nkv=" << c.nkv
        << " element " << i;
}

TEST(Attention, MatchesNaiveForMhaGqaMqa) {
  for (auto [nh, nkv] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}, {4, 1}}) {
    for (auto [T, S] : {std::pair<int64_t, int64_t>{6, 6}, {1, 9}, {3, 10}}) {
      for (bool causal : {true, false}) {
        AttentionCase c{T, S, nh, nkv, 8, 6, {}};
        c.p.scale = 1.0f / std::sqrt(8.0f);
        c.p.causal = causal;
        expectAttentionMatchesNaive(c);
      }
    }
  }
}

TEST(Attention, LargeProblemUsesThreadsAndMatches) {
  AttentionCase c{16, 80, 8, 2, 64, 64, {}};
  c.p.scale = 0.125f;
  expectAttentionMatchesNaive(c);
}

TEST(Attention, SlidingWindowMatchesNaive) {
  for (bool causal : {true, false}) {
    AttentionCase c{4, 10, 4, 2, 8, 8, {}};
    c.p.scale = 0.35f;
    c.p.causal = causal;
    c.p.slidingWindow = 3;
    expectAttentionMatchesNaive(c);
  }
}

TEST(Attention, KeysOutsideTheWindowGetExactlyZeroWeight) {
  // One query at position 9 with window 3 sees keys 7, 8, 9 only; every
  // other value is huge, so any leaked weight would show.
  const int64_t S = 10, hd = 4;
  std::vector<float> q(hd, 1.0f), k(size_t(S * hd), 0.5f), v(size_t(S * hd));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < hd; ++j)
      v[s * hd + j] = s >= 7 ? float(s) : 1e30f;
  AttentionParams p;
  p.scale = 1.0f;
  p.slidingWindow = 3;
  std::vector<float> out(hd);
  attention(q.data(), k.data(), v.data(), 1, S, 1, 1, hd, hd, p, out.data());
  for (float o : out)
    EXPECT_NEAR(o, 8.0f, 1e-5); // equal scores: mean of 7, 8, 9

  // Causal: a key in a prefill query's future is invisible to it.
  std::vector<float> q2(size_t(2 * hd), 1.0f), out2(size_t(2 * hd));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < hd; ++j)
      v[s * hd + j] = s == 9 ? 1e30f : float(s);
  p.slidingWindow = 0;
  attention(q2.data(), k.data(), v.data(), 2, S, 1, 1, hd, hd, p, out2.data());
  for (int64_t j = 0; j < hd; ++j) {
    EXPECT_NEAR(out2[j], 4.0f, 1e-5); // position 8: mean of keys 0..8
    EXPECT_GT(out2[hd + j], 1e28f);   // position 9 sees key 9
  }
}

TEST(Attention, SoftcapMatchesNaive) {
  AttentionCase c{5, 12, 4, 2, 16, 8, {}};
  c.p.scale = 1.0f;
  c.p.logitSoftcap = 5.0f;
  expectAttentionMatchesNaive(c, 2.0f); // logits well beyond the cap
  // The cap must change the result, or the test above proves nothing.
  AttentionCase uncapped = c;
  uncapped.p.logitSoftcap = 0.0f;
  std::mt19937 rng(17);
  auto q = randomFloats(rng, size_t(c.T * c.nh * c.hd), -2.0f, 2.0f);
  auto k = randomFloats(rng, size_t(c.S * c.nkv * c.hd), -2.0f, 2.0f);
  auto v = randomFloats(rng, size_t(c.S * c.nkv * c.hdv));
  auto a = naiveAttention(q, k, v, c.T, c.S, c.nh, c.nkv, c.hd, c.hdv, c.p);
  auto b =
      naiveAttention(q, k, v, c.T, c.S, c.nh, c.nkv, c.hd, c.hdv, uncapped.p);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, std::abs(a[i] - b[i]));
  EXPECT_GT(diff, 1e-2);
}

TEST(Attention, AlibiMatchesNaive) {
  // Slopes of 4 heads (2^-2 .. 2^-8): the bias bf16(m * s) is exact for
  // these keys, so the naive double version needs no rounding.
  for (auto [nh, nkv] : {std::pair<int64_t, int64_t>{4, 4}, {4, 2}}) {
    AttentionCase c{3, 11, nh, nkv, 8, 8, {}};
    c.p.scale = 1.0f / std::sqrt(8.0f);
    c.p.alibiSlopes = alibiSlopes(4);
    expectAttentionMatchesNaive(c);
  }
}

TEST(Attention, AlibiSlopesAndBiasAsTransformers) {
  // build_alibi_tensor's slopes (transformers 5.24, bf16): a power of two
  // of heads, and 12 heads (8 + the odd powers of 2^(-4/8) for 4 more).
  EXPECT_EQ(alibiSlopes(4),
            (std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f}));
  std::vector<float> s12 = alibiSlopes(12);
  ASSERT_EQ(s12.size(), 12u);
  EXPECT_EQ(s12[0], 0.5f);
  EXPECT_EQ(s12[7], 0.00390625f);
  EXPECT_EQ(s12[8], 0.70703125f);             // bf16(2^-0.5)
  EXPECT_EQ(s12[9], 0.353515625f);            // bf16(2^-1.5)
  EXPECT_EQ(s12[11], 0.08837890625f);         // bf16(2^-3.5)
  EXPECT_EQ(alibiSlopes(32)[0], 0.83984375f); // bf16(2^-0.25)
  EXPECT_TRUE(alibiSlopes(0).empty());
  // The position becomes bf16 first (257 -> 256), then the product is
  // rounded: 0.83984375 * 256 = 215 (the exact 215.84 would give 216), as
  // build_alibi_tensor gives for 32 heads at key 257.
  EXPECT_EQ(alibiBias(0.83984375f, 257), 215.0f);
  EXPECT_EQ(alibiBias(0.83984375f, 1001), 840.0f); // 1000 * m = 839.84
  EXPECT_EQ(alibiBias(0.5f, 37), 18.5f);
}

//===-- Linear ------------------------------------------------------------===//

void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 const std::vector<double> &magnitude, const char *what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6 + 2e-6 * magnitude[i])
        << what << " element " << i;
}

TEST(Linear, DenseMatchesNaive) {
  std::mt19937 rng(21);
  for (StorageType st :
       {StorageType::F32, StorageType::F16, StorageType::BF16}) {
    for (auto [N, K] :
         {std::pair<int64_t, int64_t>{37, 70}, {301, 1000}, {1003, 300}}) {
      StoredMatrix w = storeAs(st, randomFloats(rng, size_t(N * K)));
      DenseMatrix m = w.view(st, N, K);
      std::vector<float> bias = randomFloats(rng, size_t(N));
      for (int64_t T : {1, 5}) {
        for (bool withBias : {false, true}) {
          std::vector<float> x = randomFloats(rng, size_t(T * K));
          std::vector<float> y(size_t(T * N), -3.0f);
          linear(x.data(), T, m, withBias ? bias.data() : nullptr, y.data());
          std::vector<double> want(y.size()), mag(y.size());
          for (int64_t t = 0; t < T; ++t)
            for (int64_t n = 0; n < N; ++n) {
              double s = withBias ? bias[n] : 0.0, a = std::abs(s);
              for (int64_t kk = 0; kk < K; ++kk) {
                double p = x[t * K + kk] * refLoad(st, m.data, n * K + kk);
                s += p;
                a += std::abs(p);
              }
              want[t * N + n] = s;
              mag[t * N + n] = a;
            }
          std::string what = std::string(storageName(st)) +
                             " N=" + std::to_string(N) +
                             " T=" + std::to_string(T);
          expectClose(y, want, mag, what.c_str());
        }
      }
    }
  }
}

QuantMatrix randomQuant(std::mt19937 &rng, int64_t N, int64_t K, int64_t G,
                        int bits) {
  QuantMatrix q;
  q.rows = N;
  q.cols = K;
  q.groupSize = G;
  q.bits = bits;
  uint32_t maxq = (1u << bits) - 1;
  for (int64_t i = 0; i < N * K; ++i)
    q.codes.push_back(uint8_t(rng() % (maxq + 1)));
  for (int64_t i = 0; i < N * (K / G); ++i) {
    q.scales.push_back(0.001f + float(rng() % 1000) * 1e-5f);
    q.zeros.push_back(int32_t(rng() % (maxq + 2))); // includes maxq + 1
  }
  return q;
}

/// W[n, k] in f32 exactly as the header defines it.
float dequantRef(const QuantMatrix &q, int64_t n, int64_t k) {
  int64_t groups = q.cols / q.groupSize, g = k / q.groupSize;
  return q.scales[n * groups + g] *
         float(int32_t(q.codes[n * q.cols + k]) - q.zeros[n * groups + g]);
}

TEST(Linear, QuantMatchesNaive) {
  std::mt19937 rng(23);
  struct {
    int64_t N, K, G;
    int bits;
  } shapes[] = {
      {37, 96, 32, 4}, {37, 96, 96, 8}, {301, 1024, 128, 4}, {45, 40, 40, 4}};
  for (const auto &sh : shapes) {
    QuantMatrix q = randomQuant(rng, sh.N, sh.K, sh.G, sh.bits);
    std::vector<float> bias = randomFloats(rng, size_t(sh.N));
    for (int64_t T : {1, 5}) {
      std::vector<float> x = randomFloats(rng, size_t(T * sh.K));
      std::vector<float> y(size_t(T * sh.N));
      linear(x.data(), T, q, bias.data(), y.data());
      std::vector<double> want(y.size()), mag(y.size());
      for (int64_t t = 0; t < T; ++t)
        for (int64_t n = 0; n < sh.N; ++n) {
          double s = bias[n], a = std::abs(s);
          for (int64_t k = 0; k < sh.K; ++k) {
            double p = double(x[t * sh.K + k]) * dequantRef(q, n, k);
            s += p;
            a += std::abs(p);
          }
          want[t * sh.N + n] = s;
          mag[t * sh.N + n] = a;
        }
      std::string what = "quant N=" + std::to_string(sh.N) +
                         " G=" + std::to_string(sh.G) +
                         " T=" + std::to_string(T);
      expectClose(y, want, mag, what.c_str());
    }
  }
}

//===-- GPTQ unpacking ----------------------------------------------------===//

/// Packs codes [K, N] and zeros [K/G, N] the way AutoGPTQ's QuantLinear.pack
/// does (spec section 5.2), written independently of the kernel.
struct GptqPacked {
  std::vector<int32_t> qweight, qzeros;
  std::vector<uint16_t> scales; // f16 [K/G, N]
};

GptqPacked packGptq(const std::vector<std::vector<uint32_t>> &codesKN,
                    const std::vector<std::vector<int32_t>> &zerosGN,
                    const std::vector<std::vector<float>> &scalesGN, int bits,
                    bool zeroMinusOne) {
  const size_t K = codesKN.size(), N = codesKN[0].size(), G = zerosGN.size();
  const size_t perWord = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  GptqPacked p;
  std::vector<uint32_t> qw(K / perWord * N, 0), qz(G * (N / perWord), 0);
  for (size_t k = 0; k < K; ++k)
    for (size_t n = 0; n < N; ++n)
      qw[(k / perWord) * N + n] |= codesKN[k][n] << (bits * (k % perWord));
  for (size_t g = 0; g < G; ++g)
    for (size_t n = 0; n < N; ++n) {
      uint32_t stored = uint32_t(zerosGN[g][n] - (zeroMinusOne ? 1 : 0));
      qz[g * (N / perWord) + n / perWord] |= (stored & mask)
                                             << (bits * (n % perWord));
      p.scales.push_back(apEncode(APFloat::IEEEhalf(), scalesGN[g][n]));
    }
  for (uint32_t w : qw)
    p.qweight.push_back(int32_t(w));
  for (uint32_t w : qz)
    p.qzeros.push_back(int32_t(w));
  return p;
}

void expectUnpackRoundTrip(int64_t N, int64_t K, int64_t G, int bits, bool sym,
                           bool zeroMinusOne, unsigned seed) {
  std::mt19937 rng(seed);
  const uint32_t maxq = (1u << bits) - 1;
  std::vector<std::vector<uint32_t>> codes(K, std::vector<uint32_t>(N));
  std::vector<std::vector<int32_t>> zeros(K / G, std::vector<int32_t>(N));
  std::vector<std::vector<float>> scales(K / G, std::vector<float>(N));
  for (auto &row : codes)
    for (auto &c : row)
      c = rng() % (maxq + 1);
  for (int64_t g = 0; g < K / G; ++g)
    for (int64_t n = 0; n < N; ++n) {
      // Symmetric GPTQ uses z = (maxq + 1) / 2; asymmetric any in [1, maxq].
      zeros[g][n] = sym ? int32_t((maxq + 1) / 2) : int32_t(1 + rng() % maxq);
      scales[g][n] = 0.01f * float(1 + rng() % 50);
    }
  GptqPacked packed = packGptq(codes, zeros, scales, bits, zeroMinusOne);
  if (sym && bits == 4 && zeroMinusOne) {
    for (int32_t w : packed.qzeros)
      ASSERT_EQ(uint32_t(w), 0x77777777u); // spec 5.2: stored 7s
  }

  auto m = unpackGptq(packed.qweight.data(), packed.qzeros.data(),
                      packed.scales.data(), StorageType::F16, N, K, G, bits,
                      zeroMinusOne);
  ASSERT_TRUE(static_cast<bool>(m)) << llvm::toString(m.takeError());
  ASSERT_EQ(m->rows, N);
  ASSERT_EQ(m->cols, K);
  ASSERT_EQ(m->groupSize, G);
  ASSERT_EQ(m->bits, bits);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      int64_t g = k / G;
      ASSERT_EQ(m->codes[n * K + k], codes[k][n]) << n << "," << k;
      ASSERT_EQ(m->zeros[n * (K / G) + g], zeros[g][n]) << n << "," << g;
      float scale = apDecode(APFloat::IEEEhalf(), packed.scales[g * N + n]);
      ASSERT_EQ(m->scales[n * (K / G) + g], scale);
      ASSERT_EQ(dequantRef(*m, n, k),
                scale * float(int32_t(codes[k][n]) - zeros[g][n]));
    }
}

TEST(UnpackGptq, RoundTrip4BitAsymmetric) {
  expectUnpackRoundTrip(16, 64, 32, 4, /*sym=*/false, /*zeroMinusOne=*/true, 1);
}

TEST(UnpackGptq, RoundTrip4BitSymmetric) {
  expectUnpackRoundTrip(24, 128, 64, 4, /*sym=*/true, /*zeroMinusOne=*/true, 2);
}

TEST(UnpackGptq, RoundTrip8BitPerChannel) {
  expectUnpackRoundTrip(12, 40, 40, 8, /*sym=*/false, /*zeroMinusOne=*/false,
                        3);
  expectUnpackRoundTrip(8, 32, 32, 8, /*sym=*/false, /*zeroMinusOne=*/true, 4);
}

TEST(UnpackGptq, HandPackedWords) {
  // 4-bit, K = 8, N = 8, one group: column n holds codes (n + k) % 16 down
  // K, least significant nibble first.
  std::vector<int32_t> qweight = {int32_t(0x76543210), int32_t(0x87654321),
                                  int32_t(0x98765432), int32_t(0xA9876543),
                                  int32_t(0xBA987654), int32_t(0xCBA98765),
                                  int32_t(0xDCBA9876), int32_t(0xEDCBA987)};
  std::vector<int32_t> qzeros = {int32_t(0xF0123456)}; // n = 0 lowest
  std::vector<float> scales(8, 0.5f);
  auto m = unpackGptq(qweight.data(), qzeros.data(), scales.data(),
                      StorageType::F32, 8, 8, 8, 4, /*zeroMinusOne=*/true);
  ASSERT_TRUE(static_cast<bool>(m)) << llvm::toString(m.takeError());
  for (int n = 0; n < 8; ++n)
    for (int k = 0; k < 8; ++k)
      EXPECT_EQ(m->codes[n * 8 + k], (n + k) % 16) << n << "," << k;
  const int32_t wantZeros[8] = {7, 6, 5, 4, 3, 2, 1, 16}; // stored + 1
  for (int n = 0; n < 8; ++n)
    EXPECT_EQ(m->zeros[n], wantZeros[n]) << n;

  // 8-bit, K = 4, N = 4, gptq_v2 (zeros stored as is).
  std::vector<int32_t> qweight8 = {int32_t(0x04030201), int32_t(0x08070605),
                                   int32_t(0x0C0B0A09), int32_t(0xFF0F0E0D)};
  std::vector<int32_t> qzeros8 = {int32_t(0x80818283)};
  std::vector<float> scales8 = {1.0f, 2.0f, 3.0f, 4.0f};
  auto m8 = unpackGptq(qweight8.data(), qzeros8.data(), scales8.data(),
                       StorageType::F32, 4, 4, 4, 8, /*zeroMinusOne=*/false);
  ASSERT_TRUE(static_cast<bool>(m8)) << llvm::toString(m8.takeError());
  const uint8_t wantCodes[4][4] = {{0x01, 0x02, 0x03, 0x04},
                                   {0x05, 0x06, 0x07, 0x08},
                                   {0x09, 0x0A, 0x0B, 0x0C},
                                   {0x0D, 0x0E, 0x0F, 0xFF}}; // [n][k]
  for (int n = 0; n < 4; ++n) {
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(m8->codes[n * 4 + k], wantCodes[n][k]) << n << "," << k;
    EXPECT_EQ(m8->zeros[n], 0x83 - n);
    EXPECT_EQ(m8->scales[n], float(n + 1));
  }
}

std::string unpackError(int64_t N, int64_t K, int64_t G, int bits) {
  std::vector<int32_t> words(4096, 0);
  std::vector<float> scales(4096, 1.0f);
  auto m = unpackGptq(words.data(), words.data(), scales.data(),
                      StorageType::F32, N, K, G, bits, true);
  if (m)
    return "";
  return llvm::toString(m.takeError());
}

TEST(UnpackGptq, RejectsBadShapes) {
  EXPECT_NE(unpackError(8, 64, 32, 3).find("bit width 3"), std::string::npos);
  EXPECT_NE(unpackError(8, 64, 32, 2).find("bit width 2"), std::string::npos);
  std::string group = unpackError(8, 96, 64, 4);
  EXPECT_NE(group.find("K=96"), std::string::npos) << group;
  EXPECT_NE(group.find("group size 64"), std::string::npos) << group;
  EXPECT_NE(unpackError(8, 64, 0, 4).find("group size 0"), std::string::npos);
  std::string kPack = unpackError(8, 4, 4, 4);
  EXPECT_NE(kPack.find("K=4"), std::string::npos) << kPack;
  EXPECT_NE(kPack.find("qweight"), std::string::npos) << kPack;
  std::string nPack = unpackError(4, 64, 32, 4);
  EXPECT_NE(nPack.find("N=4"), std::string::npos) << nPack;
  EXPECT_NE(nPack.find("qzeros"), std::string::npos) << nPack;
  EXPECT_EQ(unpackError(8, 64, 32, 4), "");
  EXPECT_EQ(unpackError(4, 8, 8, 8), "");
}

//===-- Embedding ---------------------------------------------------------===//

TEST(Embedding, GathersRowsAndNamesBadIds) {
  std::mt19937 rng(29);
  std::vector<float> values = randomFloats(rng, 7 * 5);
  StoredMatrix stored = storeAs(StorageType::BF16, values);
  DenseMatrix table = stored.view(StorageType::BF16, 7, 5);
  int64_t ids[] = {6, 0, 3};
  std::vector<float> out(3 * 5);
  ASSERT_FALSE(bool(embedding(table, ids, 3, out.data())));
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < 5; ++j)
      EXPECT_EQ(double(out[t * 5 + j]),
                refLoad(StorageType::BF16, table.data, ids[t] * 5 + j));

  for (int64_t bad : {int64_t(7), int64_t(123456), int64_t(-1)}) {
    int64_t badIds[] = {1, bad};
    llvm::Error err = embedding(table, badIds, 2, out.data());
    ASSERT_TRUE(bool(err));
    std::string msg = llvm::toString(std::move(err));
    EXPECT_NE(msg.find("token id " + std::to_string(bad)), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("7 rows"), std::string::npos) << msg;
  }
}

//===-- Norms, activations, softmax ---------------------------------------===//

TEST(RmsNorm, LlamaAndGemmaStyles) {
  std::mt19937 rng(31);
  const int64_t rows = 3, n = 67;
  std::vector<float> x = randomFloats(rng, size_t(rows * n), -3.0f, 3.0f);
  std::vector<float> w = randomFloats(rng, size_t(n));
  const float eps = 1e-5f;
  for (int style = 0; style < 3; ++style) {
    bool gemma = style == 1;
    const float *wp = style == 2 ? nullptr : w.data();
    std::vector<float> y(x.size());
    rmsNorm(x.data(), rows, n, wp, eps, gemma, y.data());
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i)
        ss += double(x[r * n + i]) * x[r * n + i];
      double inv = 1.0 / std::sqrt(ss / n + eps);
      for (int64_t i = 0; i < n; ++i) {
        double weight = !wp ? 1.0 : gemma ? 1.0 + w[i] : w[i];
        EXPECT_NEAR(y[r * n + i], x[r * n + i] * inv * weight, 1e-5)
            << "style " << style << " " << r << "," << i;
      }
    }
  }
}

TEST(Activations, KnownValues) {
  EXPECT_FLOAT_EQ(sigmoid(0.0f), 0.5f);
  EXPECT_NEAR(sigmoid(2.0f), 0.880797078, 1e-7);
  EXPECT_EQ(sigmoid(-200.0f), 0.0f);
  EXPECT_EQ(sigmoid(200.0f), 1.0f);
  EXPECT_NEAR(silu(1.0f), 0.731058579, 1e-7);
  EXPECT_NEAR(silu(-3.0f), -0.142277620, 1e-7);
  EXPECT_FALSE(std::isnan(silu(-200.0f)));
  EXPECT_NEAR(geluErf(1.0f), 0.841344746, 1e-7);
  EXPECT_NEAR(geluErf(-1.5f), -0.100210802, 1e-7);
  EXPECT_NEAR(geluTanh(1.0f), 0.841191990, 1e-7);
  EXPECT_NEAR(geluTanh(-1.5f), -0.100428423, 1e-7);
  // The two GELUs are different functions.
  EXPECT_GT(std::abs(geluErf(1.0f) - geluTanh(1.0f)), 1e-4);
}

TEST(Softmax, StableAndNormalized) {
  std::vector<float> x = {1000.0f, 1001.0f, 1002.0f, -1.0f, 0.0f, 1.0f};
  softmaxRows(x.data(), 2, 3);
  double e = std::exp(1.0), z = 1 + e + e * e;
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(x[r * 3 + 0], 1 / z, 1e-6);
    EXPECT_NEAR(x[r * 3 + 1], e / z, 1e-6);
    EXPECT_NEAR(x[r * 3 + 2], e * e / z, 1e-6);
  }
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> masked = {ninf, 0.0f, ninf, ninf};
  softmaxRows(masked.data(), 2, 2);
  EXPECT_EQ(masked[0], 0.0f);
  EXPECT_EQ(masked[1], 1.0f);
  EXPECT_EQ(masked[2], 0.0f); // fully masked row: no NaN
  EXPECT_EQ(masked[3], 0.0f);
}

} // namespace

//===----------------------------------------------------------------------===//
// Primitive ops of the graph frontends
//===----------------------------------------------------------------------===//

namespace {

TEST(Topk, SortedWithTiesToTheLowerIndex) {
  // One row of 6 with ties at 3.0 (indices 1, 4) and 1.0 (indices 0, 5).
  const std::vector<float> x = {1.0f, 3.0f, -2.0f, 0.5f, 3.0f, 1.0f};
  float v[4];
  int64_t i[4];
  topk(x.data(), 1, 6, 1, 4, /*largest=*/true, v, i);
  EXPECT_EQ(std::vector<float>(v, v + 4),
            (std::vector<float>{3.0f, 3.0f, 1.0f, 1.0f}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 4), (std::vector<int64_t>{1, 4, 0, 5}));
  topk(x.data(), 1, 6, 1, 3, /*largest=*/false, v, i);
  EXPECT_EQ(std::vector<float>(v, v + 3),
            (std::vector<float>{-2.0f, 0.5f, 1.0f}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 3), (std::vector<int64_t>{2, 3, 0}));
}

TEST(Topk, NaNIsLargest) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {1.0f, nan, 2.0f};
  float v[2];
  int64_t i[2];
  topk(x.data(), 1, 3, 1, 2, /*largest=*/true, v, i);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(i[0], 1);
  EXPECT_EQ(v[1], 2.0f);
  topk(x.data(), 1, 3, 1, 2, /*largest=*/false, v, i);
  EXPECT_EQ(i[0], 0);
  EXPECT_EQ(i[1], 2);
}

TEST(Topk, AlongAMiddleAxis) {
  // x [2, 3, 2] (outer 2, n 3, inner 2): top-1 along the middle axis.
  const std::vector<float> x = {0, 5, 4, 1, 2, 9, /**/ 7, 7, 7, 8, 6, 7};
  float v[4];
  int64_t i[4];
  topk(x.data(), 2, 3, 2, 1, /*largest=*/true, v, i);
  EXPECT_EQ(std::vector<float>(v, v + 4), (std::vector<float>{4, 9, 7, 8}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 4), (std::vector<int64_t>{1, 2, 0, 1}));
}

TEST(LayerNorm, BiasedVarianceWeightAndBias) {
  // Row [1, 2, 3, 4]: mean 2.5, biased variance 1.25.
  const std::vector<float> x = {1, 2, 3, 4, /**/ 2, 2, 2, 2};
  const std::vector<float> w = {1, 2, 0.5f, -1}, b = {0, 1, 0, 0.25f};
  std::vector<float> y(8), plain(8);
  const float eps = 1e-5f;
  layerNorm(x.data(), 2, 4, w.data(), b.data(), eps, y.data());
  layerNorm(x.data(), 2, 4, nullptr, nullptr, eps, plain.data());
  double inv = 1.0 / std::sqrt(1.25 + eps);
  for (int j = 0; j < 4; ++j) {
    double n = (x[j] - 2.5) * inv;
    EXPECT_NEAR(plain[j], n, 1e-6) << j;
    EXPECT_NEAR(y[j], n * w[j] + b[j], 1e-6) << j;
    // A constant row normalises to 0 (then the bias).
    EXPECT_EQ(plain[4 + j], 0.0f);
    EXPECT_EQ(y[4 + j], b[j]);
  }
}

TEST(MoERouting, ScoringOrdersRenormalisationAndScaling) {
  // Logits over 4 experts; the top 2 are experts 1 (2.0) and 2 (1.0).
  const float logits[4] = {0.0f, 2.0f, 1.0f, -1.0f};
  const double e = std::exp(1.0), e2 = std::exp(2.0);
  const double Z = 1 + e2 + e + std::exp(-1.0);
  MoEParams p;
  p.topK = 2;
  MoERoute r = routeToken(logits, 4, p); // softmax over all, no renormalise
  EXPECT_EQ(r.experts, (std::vector<int64_t>{1, 2}));
  EXPECT_NEAR(r.weights[0], e2 / Z, 1e-6);
  EXPECT_NEAR(r.weights[1], e / Z, 1e-6);

  p.renormalize = true; // Mixtral: p_e / sum over the top-k
  r = routeToken(logits, 4, p);
  EXPECT_NEAR(r.weights[0], e2 / (e2 + e), 1e-6);
  EXPECT_NEAR(r.weights[1], e / (e2 + e), 1e-6);

  p.renormalize = false; // gpt-oss: softmax over the selected logits
  p.topkThenScore = true;
  r = routeToken(logits, 4, p);
  EXPECT_NEAR(r.weights[0], e2 / (e2 + e), 1e-6);

  p.topkThenScore = false; // sigmoid scores, renormalised, scaled
  p.sigmoidScoring = true;
  p.renormalize = true;
  p.routedScalingFactor = 2.5f;
  r = routeToken(logits, 4, p);
  double s1 = 1 / (1 + std::exp(-2.0)), s2 = 1 / (1 + std::exp(-1.0));
  EXPECT_NEAR(r.weights[0], 2.5 * s1 / (s1 + s2), 1e-6);
  EXPECT_NEAR(r.weights[1], 2.5 * s2 / (s1 + s2), 1e-6);

  // Ties between experts go to the lower index; experts come out ascending
  // even when the higher-scored one has the higher index.
  const float tied[4] = {1.0f, 3.0f, 0.0f, 3.0f};
  MoEParams one;
  one.topK = 1;
  EXPECT_EQ(routeToken(tied, 4, one).experts, (std::vector<int64_t>{1}));
  const float rev[3] = {1.0f, 0.0f, 5.0f};
  MoEParams two;
  two.topK = 2;
  EXPECT_EQ(routeToken(rev, 3, two).experts, (std::vector<int64_t>{0, 2}));
}

/// Naive double-precision gated MLP (silu) of one token.
std::vector<double> naiveExpert(const float *x, int64_t H, int64_t I,
                                const std::vector<float> &g,
                                const std::vector<float> &u,
                                const std::vector<float> &d, double scale) {
  std::vector<double> h(I), y(H, 0.0);
  for (int64_t i = 0; i < I; ++i) {
    double a = 0, b = 0;
    for (int64_t k = 0; k < H; ++k) {
      a += g[i * H + k] * scale * x[k];
      b += u[i * H + k] * scale * x[k];
    }
    h[i] = a / (1 + std::exp(-a)) * b;
  }
  for (int64_t n = 0; n < H; ++n)
    for (int64_t i = 0; i < I; ++i)
      y[n] += d[n * I + i] * h[i];
  return y;
}

TEST(MoE, MatchesNaiveRoutingAndExperts) {
  const int64_t T = 5, H = 6, I = 4, E = 3;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  auto randn = [&](size_t n) {
    std::vector<float> v(n);
    for (float &f : v)
      f = dist(rng);
    return v;
  };
  std::vector<float> x = randn(T * H), router = randn(E * H), bias = randn(E);
  std::vector<std::vector<float>> g(E + 1), u(E + 1), d(E + 1);
  std::vector<DenseMatrix> mats;
  mats.reserve(3 * (E + 1));
  std::vector<ExpertWeights> experts;
  for (int64_t e = 0; e <= E; ++e) {
    g[e] = randn(I * H);
    u[e] = randn(I * H);
    d[e] = randn(H * I);
  }
  for (int64_t e = 0; e <= E; ++e) {
    mats.push_back({StorageType::F32, g[e].data(), I, H});
    mats.push_back({StorageType::F32, u[e].data(), I, H});
    mats.push_back({StorageType::F32, d[e].data(), H, I});
  }
  for (int64_t e = 0; e <= E; ++e)
    experts.push_back({{&mats[3 * e]}, {&mats[3 * e + 1]}, {&mats[3 * e + 2]}});
  ExpertWeights shared = experts.back();
  experts.pop_back();
  DenseMatrix routerMat{StorageType::F32, router.data(), E, H};
  // Qwen2-MoE's shared expert gate [1, H].
  std::vector<float> sharedGate = randn(H);
  DenseMatrix sharedGateMat{StorageType::F32, sharedGate.data(), 1, H};
  LinearWeight sharedGateW{&sharedGateMat};

  for (auto [onInput, gated] :
       {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
    MoEParams p;
    p.topK = 2;
    p.renormalize = true;
    p.weightOnInput = onInput;
    std::vector<float> y(T * H);
    moe(x.data(), T, H, {&routerMat}, bias.data(), experts, &shared, p,
        y.data(), gated ? &sharedGateW : nullptr);
    for (int64_t t = 0; t < T; ++t) {
      // Naive: logits, softmax, top-2, renormalise, experts, shared.
      std::vector<double> l(E);
      for (int64_t e = 0; e < E; ++e) {
        l[e] = bias[e];
        for (int64_t k = 0; k < H; ++k)
          l[e] += router[e * H + k] * x[t * H + k];
      }
      int64_t first = 0;
      for (int64_t e = 1; e < E; ++e)
        if (l[e] > l[first])
          first = e;
      int64_t second = first == 0 ? 1 : 0;
      for (int64_t e = 0; e < E; ++e)
        if (e != first && l[e] > l[second])
          second = e;
      // Renormalised softmax over the pair = softmax of the pair's logits.
      double w1 = 1 / (1 + std::exp(l[second] - l[first])), w2 = 1 - w1;
      std::vector<double> want =
          naiveExpert(&x[t * H], H, I, g[E], u[E], d[E], 1.0);
      if (gated) {
        double z = 0;
        for (int64_t k = 0; k < H; ++k)
          z += sharedGate[k] * x[t * H + k];
        for (double &v : want)
          v *= 1 / (1 + std::exp(-z));
      }
      for (auto [e, w] :
           {std::pair<int64_t, double>{first, w1}, {second, w2}}) {
        std::vector<double> o =
            naiveExpert(&x[t * H], H, I, g[e], u[e], d[e], onInput ? w : 1.0);
        for (int64_t h = 0; h < H; ++h)
          want[h] += onInput ? o[h] : w * o[h];
      }
      for (int64_t h = 0; h < H; ++h)
        EXPECT_NEAR(y[t * H + h], want[h], 1e-5)
            << "token " << t << " feature " << h << " onInput " << onInput
            << " gated " << gated;
    }
  }
}

// DeepSeek's selection (llm.moe, spec 4.4): sigmoid scores, 4 groups of 2,
// the 2 best groups by the sum of their top-2 choice scores, top-2 of
// their experts, the weights the scores renormalised (+ epsilon) and
// scaled. Ungrouped, experts 4 and 0 would win; grouped, group 2 (4, 5)
// loses to groups 1 and 0.
TEST(MoERouting, DeepSeekGroupsAndCorrectionBias) {
  const float logits[8] = {3, -2, 2, 2, 4, -4, -1, -1};
  auto sig = [](float l) { return 1.0f / (1.0f + std::exp(-l)); };
  MoEParams p;
  p.topK = 2;
  p.sigmoidScoring = true;
  p.renormalize = true;
  p.routedScalingFactor = 2.5f;
  p.renormalizeEpsilon = 1e-20f;
  MoERoute plain = routeToken(logits, 8, p);
  EXPECT_EQ(plain.experts, (std::vector<int64_t>{0, 4}));
  p.nGroup = 4;
  p.topkGroup = 2;
  p.groupScoreTopk = 2;
  MoERoute grouped = routeToken(logits, 8, p);
  // Experts 2 and 3 tie at sigmoid(2): the lower index wins.
  ASSERT_EQ(grouped.experts, (std::vector<int64_t>{0, 2}));
  float s0 = sig(3), s2 = sig(2);
  EXPECT_NEAR(grouped.weights[0], 2.5f * s0 / (s0 + s2), 1e-6);
  EXPECT_NEAR(grouped.weights[1], 2.5f * s2 / (s0 + s2), 1e-6);
  // The correction bias moves the choice to expert 3; its weight is still
  // its score, not score + bias.
  p.correctionBias = {0, 0, 0, 0.5f, 0, 0, 0, 0};
  MoERoute biased = routeToken(logits, 8, p);
  ASSERT_EQ(biased.experts, (std::vector<int64_t>{0, 3}));
  EXPECT_NEAR(biased.weights[1], 2.5f * s2 / (s0 + s2), 1e-6);
  // V2's group score is the group's maximum (group_score_topk 1): groups 2
  // (0.982) and 0 (0.953) stay, group 1 (0.881) goes, and experts 0 and 4
  // win. Keeping one group leaves group 2's experts 4 and 5.
  p.correctionBias.clear();
  p.groupScoreTopk = 1;
  EXPECT_EQ(routeToken(logits, 8, p).experts, (std::vector<int64_t>{0, 4}));
  p.topkGroup = 1;
  EXPECT_EQ(routeToken(logits, 8, p).experts, (std::vector<int64_t>{4, 5}));
}

} // namespace

// llm.head_linear: each head its own matrix, in [out, in] or (transposed)
// [in, out] layout; the two layouts of the same matrix agree.
TEST(HeadLinear, PerHeadMatricesInBothLayouts) {
  // x [T=1, heads=2, K=2]; head 0's matrix [[1, 2], [3, 4], [5, 6]] (N=3),
  // head 1's the identity padded with a zero row.
  const float x[4] = {1, -1, 2, 3};
  const float w[12] = {1, 2, 3, 4, 5, 6, 1, 0, 0, 1, 0, 0};
  float y[6];
  headLinear(x, 1, 2, 2, 3, w, /*transposed=*/false, y);
  EXPECT_EQ(std::vector<float>(y, y + 6),
            (std::vector<float>{-1, -1, -1, 2, 3, 0}));
  // The same matrices stored [heads, K, N].
  const float wt[12] = {1, 3, 5, 2, 4, 6, 1, 0, 0, 0, 1, 0};
  float yt[6];
  headLinear(x, 1, 2, 2, 3, wt, /*transposed=*/true, yt);
  EXPECT_EQ(std::vector<float>(yt, yt + 6), std::vector<float>(y, y + 6));
}

// Llama 4's chunked attention: a query sees only its own chunk's keys (here
// chunks of 2: the query at position 3 sees keys 2 and 3), and the
// temperature scales the query by log1p(floor((p + 1) / F)) * a + 1.
TEST(Attention, ChunksAndTemperature) {
  // One head of dim 1; keys 1, 2, 3, 4 and values 10, 20, 30, 40.
  const float k[4] = {1, 2, 3, 4}, v[4] = {10, 20, 30, 40};
  const float q[1] = {0.5f};
  AttentionParams p;
  p.chunkSize = 2;
  float out;
  attention(q, k, v, 1, 4, 1, 1, 1, 1, p, &out);
  float e2 = std::exp(0.5f * 3), e3 = std::exp(0.5f * 4);
  EXPECT_NEAR(out, (30 * e2 + 40 * e3) / (e2 + e3), 1e-4);
  // At position 3 with F = 2, a = 0.5: log1p(floor(4 / 2)) * 0.5 + 1.
  float t = attentionTemperature(3, 2, 0.5f);
  EXPECT_FLOAT_EQ(t, std::log1p(2.0f) * 0.5f + 1.0f);
  EXPECT_FLOAT_EQ(attentionTemperature(0, 2, 0.5f), 1.0f);
  p.temperatureFloorScale = 2;
  p.temperatureScale = 0.5f;
  attention(q, k, v, 1, 4, 1, 1, 1, 1, p, &out);
  float f2 = std::exp(0.5f * t * 3), f3 = std::exp(0.5f * t * 4);
  EXPECT_NEAR(out, (30 * f2 + 40 * f3) / (f2 + f3), 1e-4);
}
