//===- TestUtil.h - shared helpers of the pimsim unit tests -----*- C++ -*-===//
//
// Loading the shipped targets, assembling and printing programs, error
// strings, and the naive C++ references (docs/pimsim-isa.md, "Functional
// model") and memory set-up that the functional tests share. Header-only:
// every function is inline.
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_UNITTESTS_TESTUTIL_H
#define PIMSIM_UNITTESTS_TESTUTIL_H

#include "pimsim/Functional.h"
#include "pimsim/Program.h"
#include "pimsim/Simulator.h"
#include "pimsim/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace pimsim::test {

//===----------------------------------------------------------------------===//
// Targets and programs
//===----------------------------------------------------------------------===//

/// The path of a shipped target file, e.g. "hbm3-pim.json".
inline std::string targetPath(llvm::StringRef file) {
  return (llvm::Twine(PIMSIM_TARGETS_DIR) + "/" + file).str();
}

/// A shipped target; a test failure (and an empty target) if it does not
/// load.
inline Target loadShipped(llvm::StringRef file) {
  llvm::Expected<Target> t = loadTarget(targetPath(file));
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return Target();
  }
  return std::move(*t);
}

/// The `.version / .target / .org` lines of a program text for `t`.
inline std::string header(const Target &t,
                          ProgramVersion version = kProgramVersion) {
  const Organization &o = t.org;
  return llvm::formatv(".version {10}.{11}\n.target {0} hash=sha256:0\n"
                       ".org stacks={1} channels={2} pseudo_channels={3} "
                       "sids={4} bank_groups={5} banks={6} rows={7} "
                       "columns={8} access_bytes={9}\n",
                       t.name, o.stacks, o.channels, o.pseudoChannels, o.sids,
                       o.bankGroups, o.banks, o.rows, o.columns, o.accessBytes,
                       version.major, version.minor)
      .str();
}

/// Parses a program text; a test failure (and an empty program) if it does
/// not parse.
inline Program assemble(const std::string &text) {
  auto p = parseProgramText(text, "test.pimasm");
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return Program();
  }
  return std::move(*p);
}

/// The error text, or "<success>".
template <typename T> std::string errorOf(llvm::Expected<T> e) {
  if (e)
    return "<success>";
  return llvm::toString(e.takeError());
}
inline std::string errorOf(llvm::Error e) {
  return e ? llvm::toString(std::move(e)) : "<success>";
}

/// The text form of a program.
inline std::string textOf(const Program &p) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printProgram(p, os);
  return s;
}

//===----------------------------------------------------------------------===//
// Naive reference numerics, independent of the library's helpers
//===----------------------------------------------------------------------===//

/// fp16 (normal numbers only) or bf16 to float.
inline float refHalf(uint16_t h, bool bf16 = false) {
  if (bf16) {
    uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v = std::ldexp(1.0f + man / 1024.0f, exp - 15);
  return (h & 0x8000) ? -v : v;
}

/// ((a0+a1)+(a2+a3))+... for a power-of-two count.
inline float refTree(const float *v, int n) {
  if (n == 1)
    return v[0];
  return refTree(v, n / 2) + refTree(v + n / 2, n / 2);
}

/// fp32 -> fp16 round to nearest even, by scaling to an integer in double
/// (exact) and rounding with nearbyint (the default mode: ties to even).
inline float refRoundFp16(float x) {
  if (x == 0 || std::isnan(x) || std::isinf(x))
    return x;
  double a = std::fabs(double(x));
  int e;
  std::frexp(a, &e);             // a in [2^(e-1), 2^e)
  int ex = std::max(e - 1, -14); // fp16 subnormals: quantum 2^-24
  double quantum = std::ldexp(1.0, ex - 10);
  double r = std::nearbyint(a / quantum) * quantum;
  if (r >= 65536.0)
    r = INFINITY;
  return float(std::copysign(r, double(x)));
}

/// Random normal values: bf16 of magnitude about 2^-6 .. 2^2, or fp16 with
/// exponent fp16ExpBase .. fp16ExpBase + expSpan - 1 (by default about
/// 2^-6 .. 2^2).
inline std::vector<uint16_t> randomHalves(size_t n, bool bf16,
                                          std::mt19937 &rng,
                                          int fp16ExpBase = 9,
                                          int expSpan = 8) {
  std::vector<uint16_t> v(n);
  for (uint16_t &h : v) {
    uint32_t sign = rng() & 1;
    if (bf16)
      h = uint16_t(sign << 15 | (121 + rng() % 8) << 7 | (rng() & 0x7f));
    else
      h = uint16_t(sign << 15 | (fp16ExpBase + rng() % expSpan) << 10 |
                   (rng() & 0x3ff));
  }
  return v;
}

/// y = W x, W [N x K] row-major, per-lane fp32 accumulation in k order (16
/// lanes), then the tree: the "lanes" reduction.
inline std::vector<float> refGemvLanes(const uint16_t *W, const uint16_t *x,
                                       int N, int K, bool bf16) {
  std::vector<float> ref(N);
  for (int n = 0; n < N; ++n) {
    float acc[16] = {};
    for (int k = 0; k < K; k += 16)
      for (int l = 0; l < 16; ++l)
        acc[l] += refHalf(W[n * K + k + l], bf16) * refHalf(x[k + l], bf16);
    ref[n] = refTree(acc, 16);
  }
  return ref;
}

/// y = W x, W [N x K] row-major, each MAC's 16 products through the tree,
/// then one fp32 sum in k order: the "tree" reduction.
inline std::vector<float> refGemvTree(const uint16_t *W, const uint16_t *x,
                                      int N, int K, bool bf16) {
  std::vector<float> ref(N);
  for (int n = 0; n < N; ++n) {
    float acc = 0;
    for (int k = 0; k < K; k += 16) {
      float p[16];
      for (int l = 0; l < 16; ++l)
        p[l] = refHalf(W[n * K + k + l], bf16) * refHalf(x[k + l], bf16);
      acc += refTree(p, 16);
    }
    ref[n] = acc;
  }
  return ref;
}

/// Softmax in fp32: max-subtracted, the sum in index order (not rounded).
inline std::vector<float> refSoftmax(llvm::ArrayRef<float> s,
                                     float *stats = nullptr) {
  std::vector<float> p(s.size());
  float m = s[0];
  for (size_t i = 1; i < s.size(); ++i)
    m = s[i] > m ? s[i] : m;
  float sum = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    p[i] = expf(s[i] - m);
    sum += p[i];
  }
  for (size_t i = 0; i < s.size(); ++i)
    p[i] = p[i] / sum;
  if (stats) { // what `sfm data=` writes (1.4): [max, sum]
    stats[0] = m;
    stats[1] = sum;
  }
  return p;
}

/// The context GEMV of one head: out[d] = sum over keys t < 16 columns of
/// V[t][d] p[t], V [T x D] fp16 row-major, per-lane (t % 16) accumulation,
/// then the tree.
inline std::vector<float> refContext(const uint16_t *V, const float *p, int D,
                                     int columns) {
  std::vector<float> out(D);
  for (int d = 0; d < D; ++d) {
    float acc[16] = {};
    for (int c = 0; c < columns; ++c)
      for (int l = 0; l < 16; ++l)
        acc[l] += refHalf(V[(16 * c + l) * D + d], false) * p[16 * c + l];
    out[d] = refTree(acc, 16);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Memory and results
//===----------------------------------------------------------------------===//

inline std::vector<uint8_t> bytesOf(llvm::ArrayRef<uint16_t> halves) {
  std::vector<uint8_t> out;
  for (uint16_t h : halves) {
    out.push_back(uint8_t(h));
    out.push_back(uint8_t(h >> 8));
  }
  return out;
}

inline std::vector<float> floatsOf(llvm::ArrayRef<uint8_t> bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

inline uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

/// `got` equals `ref` bit for bit; the first difference names `name`[i].
inline ::testing::AssertionResult sameBits(llvm::ArrayRef<float> got,
                                           llvm::ArrayRef<float> ref,
                                           llvm::StringRef name) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << name.str() << ": " << got.size()
                                         << " values, reference " << ref.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (bitsOf(got[i]) != bitsOf(ref[i]))
      return ::testing::AssertionFailure()
             << name.str() << "[" << i << "] = " << got[i] << ", reference "
             << ref[i];
  return ::testing::AssertionSuccess();
}

/// Writes one 32 B column (16 halves) of bank `bank`, row, col.
inline void writeColumn(Simulator &sim, int64_t channel, int64_t bank,
                        int64_t row, int64_t col,
                        llvm::ArrayRef<uint16_t> lanes) {
  const Target &t = sim.target();
  uint64_t addr = encodeAddress(t, bankAddress(t.org, channel, bank, row, col));
  ASSERT_FALSE(bool(sim.writeMemory(addr, bytesOf(lanes))));
}

/// Writes GEMV weights W [N x K] (row-major): output n on channel
/// n / perChannel; m = n % perChannel in flat bank m % banks; K in chunks of
/// `chunk` elements (one DRAM row each), chunk j of output n in DRAM row
/// (K / chunk) (m / banks) + j; element k of a chunk in column k / 16, lane
/// k % 16.
inline void writeGemvWeights(Simulator &sim, const std::vector<uint16_t> &W,
                             int N, int K, int banks, int perChannel,
                             int chunk) {
  for (int n = 0; n < N; ++n) {
    int m = n % perChannel;
    for (int k = 0; k < K; k += 16)
      writeColumn(sim, n / perChannel, m % banks,
                  (K / chunk) * (m / banks) + k / chunk, (k % chunk) / 16,
                  llvm::ArrayRef(&W[n * K + k], 16));
  }
}

/// Writes keys K [H][T][D]: head h on channel h, key t in flat bank t, DRAM
/// row `row`, element d in column d / 16, lane d % 16.
inline void writeKeys(Simulator &sim, const std::vector<uint16_t> &Kc, int H,
                      int T, int D, int64_t row) {
  for (int h = 0; h < H; ++h)
    for (int tk = 0; tk < T; ++tk)
      for (int d = 0; d < D; d += 16)
        writeColumn(sim, h, tk, row, d / 16,
                    llvm::ArrayRef(&Kc[(h * T + tk) * D + d], 16));
}

/// Writes values V [H][T][D] transposed: head h on channel h, output dim d
/// in flat bank d, DRAM row `row`, column c lane l = V[16 c + l][d].
inline void writeValues(Simulator &sim, const std::vector<uint16_t> &V, int H,
                        int T, int D, int64_t row) {
  for (int h = 0; h < H; ++h)
    for (int d = 0; d < D; ++d)
      for (int c = 0; c < T / 16; ++c) {
        uint16_t col[16];
        for (int l = 0; l < 16; ++l)
          col[l] = V[(h * T + 16 * c + l) * D + d];
        writeColumn(sim, h, d, row, c, col);
      }
}

inline std::string statsText(const RunReport &r, const Target &t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << r.toJSON(t);
  return s;
}

/// Runs `program` in timing mode and checks it matches the functional run's
/// cycles and statistics.
inline void expectSameTiming(const Target &t, const Program &program,
                             const RunReport &functional) {
  Simulator timing(t, SimMode::Timing);
  ASSERT_FALSE(bool(timing.loadProgram(program)));
  auto r = timing.run("decode");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->pim.cycles, functional.pim.cycles);
  EXPECT_EQ(statsText(*r, t), statsText(functional, t));
  EXPECT_GT(r->pim.cycles, 0);
}

} // namespace pimsim::test

#endif // PIMSIM_UNITTESTS_TESTUTIL_H
