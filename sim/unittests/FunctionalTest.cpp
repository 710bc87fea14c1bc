//===- FunctionalTest.cpp - pimsim functional mode ------------------------===//
//
// GEMV, attention-score and whole attention-head kernels (score GEMV ->
// mv_sb -> sfm -> mv_gb -> context GEMV) run functionally on the shipped
// targets and are compared bit for bit with naive C++ references that follow
// the numerics of docs/pimsim-isa.md ("Functional model"); functional and
// timing runs give identical cycles and statistics; repeated runs are
// identical.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace llvm;
using namespace pimsim;
using namespace pimsim::test;

namespace {

// GEMV y = W x, W [128 x 1024] fp16, on one hbm3-pim channel ("lanes").
// Placement: output n in flat bank n % 64, DRAM rows 2 * (n / 64) + j for
// K chunk j (512 elements = one 1 KB row each); element k of the chunk in
// column k / 16, lane k % 16. Each chunk of x is written to the global
// buffer at offset 0 (the MAC of column c reads GB elements 16 c ..).
TEST(FunctionalTest, GemvHbm3PimMatchesReferenceBitForBit) {
  Target t = loadShipped("hbm3-pim.json");
  ASSERT_EQ(t.pim.reduction, "lanes");
  const int N = 128, K = 1024, banks = 64, chunk = 512;
  std::string text = header(t) + R"(
.region w kind=weights channels=0 banks=0-63 rows=0-3 bytes=262144
.region x kind=activations channels=0 banks=0-63 rows=100 bytes=2048
.region y kind=activations channels=0 banks=0-63 rows=101 bytes=512
.stream gemv channels=0
  loop i 2 {
    loop j 2 {
      wr_gb offset=0 bytes=1024 data=x+1024*j
      barrier
      mac_ab row=2*i+j col=0 count=32
      barrier
    }
    rd_acc count=8 data=y+256*i
    barrier
  }
.entry decode = gemv
)";
  Program program = assemble(text);
  std::mt19937 rng(42);
  std::vector<uint16_t> W = randomHalves(N * K, false, rng);
  std::vector<uint16_t> x = randomHalves(K, false, rng);

  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  writeGemvWeights(sim, W, N, K, banks, /*perChannel=*/N, chunk);
  ASSERT_FALSE(bool(sim.writeRegion("x", 0, bytesOf(x))));

  // Reference: per-lane fp32 accumulation in program order, then the tree.
  std::vector<float> ref = refGemvLanes(W.data(), x.data(), N, K, false);

  auto first = sim.run("decode");
  ASSERT_TRUE(bool(first)) << toString(first.takeError());
  auto y = sim.readRegion("y", 0, 4 * N);
  ASSERT_TRUE(bool(y));
  ASSERT_TRUE(sameBits(floatsOf(*y), ref, "y"));

  // Repeated runs: same cycles, same results (rd_acc cleared the
  // accumulators).
  ASSERT_FALSE(bool(sim.writeRegion("y", 0, std::vector<uint8_t>(4 * N))));
  auto second = sim.run("decode");
  ASSERT_TRUE(bool(second));
  EXPECT_EQ(second->pim.cycles, first->pim.cycles);
  EXPECT_EQ(statsText(*second, t), statsText(*first, t));
  EXPECT_EQ(*sim.readRegion("y", 0, 4 * N), *y);
  expectSameTiming(t, program, *first);
}

// GEMV y = W x, W [128 x 1024] bf16, on gddr6-aim channels 0-1 ("tree").
// Placement: output n on channel n / 64; m = n % 64 in flat bank m % 16,
// DRAM row m / 16 (one 2 KB row = all 1024 elements; element k in column
// k / 16, lane k % 16). x fills the 2 KB global buffer.
TEST(FunctionalTest, GemvGddr6AimMatchesReferenceBitForBit) {
  Target t = loadShipped("gddr6-aim.json");
  ASSERT_EQ(t.pim.reduction, "tree");
  const int N = 128, K = 1024, banks = 16, perChannel = 64;
  std::string text = header(t) + R"(
.region w kind=weights channels=0-1 banks=0-15 rows=0-3 bytes=131072
.region x kind=activations channels=0-1 banks=0-15 rows=100 bytes=2048
.region y kind=activations channels=0-1 banks=0-15 rows=101 bytes=512
.stream gemv channels=0-1
  wr_gb offset=0 bytes=2048 data=x
  barrier
  loop i 4 {
    mac_ab row=i col=0 count=64
    barrier
    rd_acc count=2 data=y+256*ch+64*i
    barrier
  }
.entry decode = gemv
)";
  Program program = assemble(text);
  std::mt19937 rng(7);
  std::vector<uint16_t> W = randomHalves(N * K, true, rng);
  std::vector<uint16_t> x = randomHalves(K, true, rng);

  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  writeGemvWeights(sim, W, N, K, banks, perChannel, /*chunk=*/K);
  ASSERT_FALSE(bool(sim.writeRegion("x", 0, bytesOf(x))));

  // Reference: each MAC's 16 products through the tree, then one fp32 sum.
  std::vector<float> ref = refGemvTree(W.data(), x.data(), N, K, true);

  auto first = sim.run("decode");
  ASSERT_TRUE(bool(first)) << toString(first.takeError());
  auto y = sim.readRegion("y", 0, 4 * N);
  ASSERT_TRUE(bool(y));
  ASSERT_TRUE(sameBits(floatsOf(*y), ref, "y"));

  auto second = sim.run("decode");
  ASSERT_TRUE(bool(second));
  EXPECT_EQ(second->pim.cycles, first->pim.cycles);
  EXPECT_EQ(*sim.readRegion("y", 0, 4 * N), *y);
  expectSameTiming(t, program, *first);
}

// Attention scores s = K q for 128 keys of head dim 128 (fp16), one head
// per hbm3-pim channel (channels 0-1). Placement: key t of head h on
// channel h, flat bank t % 64, DRAM row 40, columns 8 (t / 64) .. +7 (16
// elements each). The global buffer holds q twice (offsets 0 and 256), so
// columns 8 g .. read q for either key group g.
TEST(FunctionalTest, AttentionScoreHbm3PimMatchesReferenceBitForBit) {
  Target t = loadShipped("hbm3-pim.json");
  const int T = 128, D = 128, H = 2, banks = 64;
  std::string text = header(t) + R"(
.region kv kind=kv_cache channels=0-1 banks=0-63 rows=40 bytes=65536
.region q kind=activations channels=0-1 banks=0-63 rows=100 bytes=512
.region s kind=activations channels=0-1 banks=0-63 rows=101 bytes=1024
.stream score channels=0-1
  set_model
  set_head value=ch
  wr_gb offset=0 bytes=256 data=q+256*ch
  wr_gb offset=256 bytes=256 data=q+256*ch
  barrier
  loop g 2 {
    mac_ab row=40 col=8*g count=8
    barrier
    rd_acc count=8 data=s+512*ch+256*g
    barrier
  }
.entry decode = score
)";
  Program program = assemble(text);
  std::mt19937 rng(1234);
  std::vector<uint16_t> Kc = randomHalves(H * T * D, false, rng);
  std::vector<uint16_t> q = randomHalves(H * D, false, rng);

  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  for (int h = 0; h < H; ++h)
    for (int tk = 0; tk < T; ++tk)
      for (int d = 0; d < D; d += 16)
        writeColumn(sim, h, tk % banks, 40, 8 * (tk / banks) + d / 16,
                    ArrayRef(&Kc[(h * T + tk) * D + d], 16));
  ASSERT_FALSE(bool(sim.writeRegion("q", 0, bytesOf(q))));

  std::vector<float> ref;
  for (int h = 0; h < H; ++h) {
    std::vector<float> s = refGemvLanes(&Kc[h * T * D], &q[h * D], T, D, false);
    ref.insert(ref.end(), s.begin(), s.end());
  }

  auto first = sim.run("decode");
  ASSERT_TRUE(bool(first)) << toString(first.takeError());
  auto s = sim.readRegion("s", 0, 4 * H * T);
  ASSERT_TRUE(bool(s));
  ASSERT_TRUE(sameBits(floatsOf(*s), ref, "s"));

  auto second = sim.run("decode");
  ASSERT_TRUE(bool(second));
  EXPECT_EQ(second->pim.cycles, first->pim.cycles);
  EXPECT_EQ(*sim.readRegion("s", 0, 4 * H * T), *s);
  expectSameTiming(t, program, *first);
}

// Attention scores s = K q for 64 keys of head dim 128 (bf16, "tree"), one
// head per gddr6-aim channel (channels 0-1). Placement: key t of head h on
// channel h, flat bank t % 16, DRAM row 40, columns 8 (t / 16) .. +7 (16
// elements each). Column c reads global-buffer elements 16 c .. (mod 1024),
// so q is written four times (offsets 0, 256, 512, 768) and columns 8 g ..
// read q for every key group g.
TEST(FunctionalTest, AttentionScoreGddr6AimMatchesReferenceBitForBit) {
  Target t = loadShipped("gddr6-aim.json");
  ASSERT_EQ(t.pim.reduction, "tree");
  const int T = 64, D = 128, H = 2, banks = 16;
  std::string text = header(t) + R"(
.region kv kind=kv_cache channels=0-1 banks=0-15 rows=40 bytes=65536
.region q kind=activations channels=0-1 banks=0-15 rows=100 bytes=512
.region s kind=activations channels=0-1 banks=0-15 rows=101 bytes=512
.stream score channels=0-1
  set_model
  set_head value=ch
  wr_gb offset=0 bytes=256 data=q+256*ch
  wr_gb offset=256 bytes=256 data=q+256*ch
  wr_gb offset=512 bytes=256 data=q+256*ch
  wr_gb offset=768 bytes=256 data=q+256*ch
  barrier
  loop g 4 {
    mac_ab row=40 col=8*g count=8
    barrier
    rd_acc count=2 data=s+256*ch+64*g
    barrier
  }
.entry decode = score
)";
  Program program = assemble(text);
  std::mt19937 rng(4321);
  std::vector<uint16_t> Kc = randomHalves(H * T * D, true, rng);
  std::vector<uint16_t> q = randomHalves(H * D, true, rng);

  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  for (int h = 0; h < H; ++h)
    for (int tk = 0; tk < T; ++tk)
      for (int d = 0; d < D; d += 16)
        writeColumn(sim, h, tk % banks, 40, 8 * (tk / banks) + d / 16,
                    ArrayRef(&Kc[(h * T + tk) * D + d], 16));
  ASSERT_FALSE(bool(sim.writeRegion("q", 0, bytesOf(q))));

  // Reference: each MAC's 16 products through the tree, then one fp32 sum.
  std::vector<float> ref;
  for (int h = 0; h < H; ++h) {
    std::vector<float> s = refGemvTree(&Kc[h * T * D], &q[h * D], T, D, true);
    ref.insert(ref.end(), s.begin(), s.end());
  }

  auto first = sim.run("decode");
  ASSERT_TRUE(bool(first)) << toString(first.takeError());
  auto s = sim.readRegion("s", 0, 4 * H * T);
  ASSERT_TRUE(bool(s));
  ASSERT_TRUE(sameBits(floatsOf(*s), ref, "s"));

  auto second = sim.run("decode");
  ASSERT_TRUE(bool(second));
  EXPECT_EQ(second->pim.cycles, first->pim.cycles);
  EXPECT_EQ(*sim.readRegion("s", 0, 4 * H * T), *s);
  expectSameTiming(t, program, *first);
}

/// One attention head per hbm3-pim channel (channels 0-1): T = 64 keys,
/// head dim D = 64, value head dim 64, fp16. Placement: key t in flat bank
/// t, DRAM row 40, columns 0..3 (element d in column d / 16, lane d % 16);
/// V: output dim d in flat bank d, row 41, column c lane l = V[16 c + l][d].
/// q goes to global-buffer offset 0; the score GEMV leaves score t in PIM
/// unit t; `mv_sb count=8` moves units 0..63 in order into the softmax
/// buffer; `sfm` runs over the 64 values; `mv_gb count=4` writes the 64
/// probabilities (fp16) to global-buffer bytes 0..127, which the context
/// GEMV (columns 0..3 of row 41) reads as its input.
/// With `stats` (1.4, fn=softmax), the sfm also writes its [max, sum] to
/// region st (8 bytes per channel), checked bit for bit too.
/// With `cap` (2.2), the sfm caps each score first: c * tanh(s / c).
/// With `alibi` (2.2), channel ch's head gets ALiBi slope slopes[ch] (sfm
/// alibi= head=ch key0= alibi_scale=): score i += bf16(m * bf16(key0 + i))
/// * scale before the cap and the softmax.
struct AlibiCase {
  float slopes[2];
  int64_t key0;
  float scale;
};

/// x rounded to bfloat16 (nearest, ties to even), written out here rather
/// than through the simulator's conversion.
float refRoundBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint32_t lsb = (bits >> 16) & 1u;
  bits = (bits + 0x7fffu + lsb) & 0xffff0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

/// The sfm fields of `a`, every float printed exactly (%.9g).
std::string alibiText(const AlibiCase &a) {
  std::string out;
  raw_string_ostream os(out);
  os << format(" alibi=%.9g,%.9g head=ch key0=%lld alibi_scale=%.9g",
               double(a.slopes[0]), double(a.slopes[1]),
               static_cast<long long>(a.key0), double(a.scale));
  return out;
}

void runAttentionHead(StringRef fn, unsigned seed, int qExpBase,
                      bool stats = false, float cap = 0.0f,
                      const AlibiCase *alibi = nullptr) {
  Target t = loadShipped("hbm3-pim.json");
  ASSERT_EQ(t.pim.inputFormat, "fp16");
  const int T = 64, D = 64, H = 2;
  std::string text = header(t) + R"(
.region kv kind=kv_cache channels=0-1 banks=0-63 rows=40-41 bytes=262144
.region q kind=activations channels=0-1 banks=0-63 rows=100 bytes=256
.region o kind=activations channels=0-1 banks=0-63 rows=101 bytes=512
.region st kind=activations channels=0-1 banks=0-63 rows=102 bytes=16
.stream head channels=0-1
  set_model
  set_head value=ch
  wr_gb offset=0 bytes=128 data=q+128*ch
  barrier
  mac_ab row=40 col=0 count=4
  barrier
  mv_sb bank=0 row=40 count=8
  barrier
  sfm length=64 fn=)" +
                     fn.str() + (stats ? " data=st+8*ch" : "") +
                     (cap != 0.0f ? " cap=" + std::to_string(cap) : "") +
                     (alibi ? alibiText(*alibi) : "") +
                     R"(
  barrier
  mv_gb row=41 count=4
  barrier
  mac_ab row=41 col=0 count=4
  barrier
  rd_acc count=8 data=o+256*ch
.entry decode = head
)";
  Program program = assemble(text);
  std::mt19937 rng(seed);
  std::vector<uint16_t> Kc = randomHalves(H * T * D, false, rng);
  std::vector<uint16_t> V = randomHalves(H * T * D, false, rng); // [h][t][d]
  // magnitude 2^(qExpBase-15) .. x8
  std::vector<uint16_t> q =
      randomHalves(H * D, false, rng, qExpBase, /*expSpan=*/4);

  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  writeKeys(sim, Kc, H, T, D, 40);
  writeValues(sim, V, H, T, D, 41);
  ASSERT_FALSE(bool(sim.writeRegion("q", 0, bytesOf(q))));

  // Reference, following docs/pimsim-isa.md: per-lane scores, tree; softmax
  // (max-subtracted, sum in index order) or exp in fp32; fp16 round to
  // nearest even; per-lane context, tree.
  std::vector<float> ref, refStats;
  for (int h = 0; h < H; ++h) {
    std::vector<float> s = refGemvLanes(&Kc[h * T * D], &q[h * D], T, D, false);
    if (alibi) {
      float lo = s[0], hi = s[0];
      for (int i = 0; i < T; ++i) {
        float m = alibi->slopes[h];
        float key = refRoundBf16(float(alibi->key0 + i));
        s[i] += refRoundBf16(m * key) * alibi->scale;
        lo = std::min(lo, s[i]);
        hi = std::max(hi, s[i]);
      }
      EXPECT_GT(hi - lo, 1.0f) << "head " << h; // the bias spreads the scores
    }
    if (cap != 0.0f) {
      int bitten = 0; // the cap changes the scores noticeably
      for (float &v : s) {
        float c = std::tanh(v / cap) * cap;
        bitten += std::fabs(c - v) > 0.05f * std::fabs(v);
        v = c;
      }
      EXPECT_GE(bitten, 8) << "head " << h;
    }
    std::vector<float> p(T);
    if (fn == "exp") {
      for (int i = 0; i < T; ++i)
        p[i] = expf(s[i]);
    } else {
      float ms[2];
      p = refSoftmax(s, ms);
      refStats.insert(refStats.end(), ms, ms + 2);
    }
    int spread = 0; // the data exercise the unit: no one-hot softmax
    for (int i = 0; i < T; ++i) {
      p[i] = refRoundFp16(p[i]);
      spread += fn == "exp" ? std::fabs(p[i] - 1.0f) > 0.05f
                            : p[i] > 1e-3f && p[i] < 0.5f;
    }
    EXPECT_GE(spread, 8) << "head " << h;
    std::vector<float> o = refContext(&V[h * T * D], p.data(), D, T / 16);
    ref.insert(ref.end(), o.begin(), o.end());
  }

  auto first = sim.run("decode");
  ASSERT_TRUE(bool(first)) << toString(first.takeError());
  auto o = sim.readRegion("o", 0, 4 * H * D);
  ASSERT_TRUE(bool(o));
  for (int i = 0; i < H * D; ++i)
    ASSERT_TRUE(std::isfinite(ref[i])) << i;
  ASSERT_TRUE(sameBits(floatsOf(*o), ref, "o"));
  auto st = sim.readRegion("st", 0, 8 * H);
  ASSERT_TRUE(bool(st));
  if (stats) {
    ASSERT_TRUE(sameBits(floatsOf(*st), refStats, "stats"));
    EXPECT_GT(refStats[1], 1.0f); // more than one key contributes
  } else {
    EXPECT_EQ(*st, std::vector<uint8_t>(8 * H)); // no data=: nothing written
  }

  // A second run starts a fresh softmax buffer (the first mv_sb after an
  // sfm) and mv_gb writes from offset 0 again (reset by sfm): same results.
  ASSERT_FALSE(bool(sim.writeRegion("o", 0, std::vector<uint8_t>(4 * H * D))));
  auto second = sim.run("decode");
  ASSERT_TRUE(bool(second)) << toString(second.takeError());
  EXPECT_EQ(second->pim.cycles, first->pim.cycles);
  EXPECT_EQ(statsText(*second, t), statsText(*first, t));
  EXPECT_EQ(*sim.readRegion("o", 0, 4 * H * D), *o);
  expectSameTiming(t, program, *first);
}

TEST(FunctionalTest, AttentionHeadSoftmaxHbm3PimMatchesReferenceBitForBit) {
  runAttentionHead("softmax", 2024, 9); // q about 2^-6 .. 2^-2
}

TEST(FunctionalTest, AttentionHeadSoftmaxStatsMatchReferenceBitForBit) {
  // 1.4: `sfm data=` writes [max, sum]; the other results are unchanged.
  runAttentionHead("softmax", 2024, 9, /*stats=*/true);
  runAttentionHead("softmax", 2025, 9, /*stats=*/true);
}

TEST(FunctionalTest, AttentionHeadSoftcapMatchesReferenceBitForBit) {
  // 2.2: `sfm cap=` caps each score (f32 tanh) before the softmax, and the
  // statistics are those of the capped scores.
  runAttentionHead("softmax", 2024, 9, /*stats=*/true, /*cap=*/0.5f);
  runAttentionHead("softmax", 2026, 9, /*stats=*/false, /*cap=*/0.75f);
}

TEST(FunctionalTest, AttentionHeadAlibiMatchesReferenceBitForBit) {
  // 2.2: `sfm alibi=` adds bf16(m_head * bf16(key0 + i)) * alibi_scale to score
  // i before the softmax: powers of two and a slope that is not one
  // (bf16(2^-0.25)), keys far enough (1000+) that the bf16 rounding of the
  // product shows; then with the cap after the bias.
  AlibiCase far{{0.5f, 0.83984375f}, 1000, 0.125f};
  runAttentionHead("softmax", 2024, 9, /*stats=*/true, 0.0f, &far);
  AlibiCase capped{{0.25f, 0.0625f}, 3, 0.0883883476f};
  runAttentionHead("softmax", 2027, 9, /*stats=*/false, /*cap=*/0.75f, &capped);
}

TEST(FunctionalTest, AlibiFormAndChecks) {
  Target t = loadShipped("hbm3-pim.json");
  auto program = [&](StringRef sfm) {
    return assemble(header(t) + R"(
.stream s channels=0-3
  mv_sb count=2
  barrier
  )" + sfm.str() + R"(
.entry decode = s
)");
  };
  Program p = program("sfm length=16 alibi=0.5,0.25,0.125,0.0625 head=ch "
                      "key0=7 alibi_scale=0.125");
  const Instruction &sfm = p.streams[0].body[2];
  EXPECT_EQ(sfm.alibi, (std::vector<float>{0.5f, 0.25f, 0.125f, 0.0625f}));
  EXPECT_EQ(sfm.key0, 7);
  EXPECT_EQ(sfm.at(Field::Head, {}, 3), 3);
  EXPECT_FLOAT_EQ(sfm.alibiScale, 0.125f);
  // Text and binary round trips.
  EXPECT_NE(textOf(p).find("  sfm length=16 alibi=0.5,0.25,0.125,0.0625 "
                           "head=ch key0=7 alibi_scale=0.125\n"),
            std::string::npos)
      << textOf(p);
  EXPECT_EQ(assemble(textOf(p)), p);
  auto bytes = serializeProgram(p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto read = parseProgramBuffer(*bytes, "s.pimb");
  ASSERT_TRUE(bool(read)) << toString(read.takeError());
  EXPECT_EQ(*read, p);
  EXPECT_EQ(errorOf(validateProgram(p, t)), "<success>");
  // Timing: one more PIM_SFM (the bias pass) than the plain sfm.
  Program plain = program("sfm length=16");
  Simulator a(t, SimMode::Timing), b(t, SimMode::Timing);
  ASSERT_FALSE(bool(a.loadProgram(p)));
  ASSERT_FALSE(bool(b.loadProgram(plain)));
  auto ra = a.run("decode"), rb = b.run("decode");
  ASSERT_TRUE(bool(ra) && bool(rb));
  EXPECT_EQ(ra->pim.commandCounts[static_cast<size_t>(Command::SFM)], 8);
  EXPECT_EQ(ra->pim.requests, rb->pim.requests + 4);
  // Errors: softmax only; a head outside the slopes; fields without slopes;
  // a scale that is not positive; a target without the feature.
  auto problem = [&](StringRef sfm) {
    return errorOf(validateProgram(program(sfm), t));
  };
  EXPECT_NE(problem("sfm length=16 fn=exp alibi=1 alibi_scale=1")
                .find("only fn=softmax takes ALiBi biases (alibi=)"),
            std::string::npos);
  EXPECT_NE(problem("sfm length=16 alibi=1,2,3 head=ch alibi_scale=1")
                .find("head spans [0, 3], outside the 3 alibi slopes"),
            std::string::npos);
  EXPECT_NE(problem("sfm length=16 alibi=1,2,3,4 head=ch key0=-1 "
                    "alibi_scale=1")
                .find("key0 reaches -1"),
            std::string::npos);
  auto noSlopes = parseProgramText(
      header(t) + ".stream s channels=0\n  sfm length=16 head=1\n.entry "
                  "decode = s\n",
      "t.s");
  EXPECT_NE(errorOf(std::move(noSlopes))
                .find("head=, key0= and alibi_scale= need alibi= slopes"),
            std::string::npos);
  Program zero = p;
  zero.streams[0].body[2].alibiScale = 0.0f;
  EXPECT_NE(errorOf(validateProgram(zero, t))
                .find("alibi_scale 0 must be positive and finite"),
            std::string::npos);
  auto parsed = parseProgramText(header(t) + ".stream s channels=0\n  sfm "
                                             "length=16 alibi=1,x\n.entry "
                                             "decode = s\n",
                                 "t.s");
  EXPECT_NE(
      errorOf(std::move(parsed)).find("alibi slopes must be finite numbers"),
      std::string::npos);
  Target noAlibi = t;
  noAlibi.nearMemory[0].features = {"softcap"};
  noAlibi.name = "no-alibi";
  EXPECT_NE(errorOf(validateProgram(p, noAlibi))
                .find("target 'no-alibi': its softmax near-memory unit has "
                      "no feature 'alibi' (alibi=)"),
            std::string::npos);
}

TEST(FunctionalTest, SoftcapFormAndChecks) {
  Target t = loadShipped("hbm3-pim.json");
  auto program = [&](StringRef sfm) {
    return assemble(header(t) + R"(
.stream s channels=0-3
  mv_sb count=2
  barrier
  )" + sfm.str() + R"(
.entry decode = s
)");
  };
  Program p = program("sfm length=16 cap=50");
  EXPECT_FLOAT_EQ(p.streams[0].body[2].cap, 50.0f);
  // Text and binary round trips; the shortest text that reads back.
  EXPECT_NE(textOf(p).find("  sfm length=16 cap=50\n"), std::string::npos)
      << textOf(p);
  Program odd = program("sfm length=16 cap=0.1");
  EXPECT_NE(textOf(odd).find("  sfm length=16 cap=0.1\n"), std::string::npos);
  EXPECT_EQ(assemble(textOf(odd)), odd);
  auto bytes = serializeProgram(odd);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto read = parseProgramBuffer(*bytes, "s.pimb");
  ASSERT_TRUE(bool(read)) << toString(read.takeError());
  EXPECT_EQ(*read, odd);
  EXPECT_EQ(read->streams[0].body[2].cap, 0.1f);
  EXPECT_EQ(errorOf(validateProgram(p, t)), "<success>");
  // Functional: 16 zero scores stay 0 under the cap: max 0, each 1/16.
  // Timing: one more PIM_SFM (the cap pass) than the plain sfm.
  Program plain = program("sfm length=16");
  Simulator a(t, SimMode::Timing), b(t, SimMode::Timing);
  ASSERT_FALSE(bool(a.loadProgram(p)));
  ASSERT_FALSE(bool(b.loadProgram(plain)));
  auto ra = a.run("decode"), rb = b.run("decode");
  ASSERT_TRUE(bool(ra) && bool(rb));
  auto sfms = [](const RunReport &r) {
    return r.pim.commandCounts[static_cast<size_t>(Command::SFM)];
  };
  EXPECT_EQ(sfms(*ra), 8); // two per channel
  EXPECT_EQ(sfms(*rb), 4);
  EXPECT_EQ(ra->pim.requests, rb->pim.requests + 4);
  EXPECT_GE(ra->pim.cycles, rb->pim.cycles);
  Simulator f(t, SimMode::Functional);
  ASSERT_FALSE(bool(f.loadProgram(p)));
  auto rf = f.run("decode");
  ASSERT_TRUE(bool(rf)) << toString(rf.takeError());
  EXPECT_EQ(statsText(*rf, t), statsText(*ra, t));
  // Errors: only softmax takes a cap; a cap is positive and finite; the
  // target must declare the feature.
  EXPECT_NE(errorOf(validateProgram(program("sfm length=16 fn=exp cap=2"), t))
                .find("only fn=softmax takes a logit softcap (cap=)"),
            std::string::npos);
  for (StringRef bad : {"cap=0", "cap=-1", "cap=inf", "cap=x", "cap=1e40"}) {
    auto parsed = parseProgramText(header(t) +
                                       ".stream s channels=0\n  sfm "
                                       "length=16 " +
                                       bad.str() +
                                       "\n.entry "
                                       "decode = s\n",
                                   "t.s");
    EXPECT_NE(errorOf(std::move(parsed))
                  .find("cap must be a positive finite "
                        "number"),
              std::string::npos)
        << bad.str();
  }
  Program nan = p;
  nan.streams[0].body[2].cap = -2.0f;
  EXPECT_NE(errorOf(validateProgram(nan, t))
                .find("cap -2 must be positive and finite"),
            std::string::npos)
      << errorOf(validateProgram(nan, t));
  Target plainUnit = t;
  plainUnit.nearMemory[0].features.clear();
  plainUnit.name = "no-softcap";
  EXPECT_NE(errorOf(validateProgram(p, plainUnit))
                .find("target 'no-softcap': its softmax near-memory unit has "
                      "no feature 'softcap' (cap=)"),
            std::string::npos);
}

TEST(FunctionalTest, SoftmaxStatsFormAndChecks) {
  Target t = loadShipped("hbm3-pim.json");
  std::string body = R"(
.region st kind=activations channels=0-3 banks=0-63 rows=102 bytes=32
.stream s channels=0-3
  mv_sb count=2
  barrier
  sfm length=16 data=st+8*ch
.entry decode = s
)";
  Program p = assemble(header(t) + body);
  // Text round trip keeps data= on sfm; writers stamp the current version.
  std::string text = textOf(p);
  EXPECT_NE(text.find("  sfm length=16 data=st+8*ch\n"), std::string::npos)
      << text;
  EXPECT_EQ(p.version.minor, kProgramVersion.minor);
  auto bytes = serializeProgram(p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto read = parseProgramBuffer(*bytes, "s.pimb");
  ASSERT_TRUE(bool(read)) << toString(read.takeError());
  EXPECT_EQ(*read, p);
  EXPECT_EQ(errorOf(validateProgram(p, t)), "<success>");
  // Timing: the statistics ride on the SFM; no extra request or cycle.
  Program plain = assemble(header(t) + R"(
.region st kind=activations channels=0-3 banks=0-63 rows=102 bytes=32
.stream s channels=0-3
  mv_sb count=2
  barrier
  sfm length=16
.entry decode = s
)");
  Simulator a(t, SimMode::Timing), b(t, SimMode::Timing);
  ASSERT_FALSE(bool(a.loadProgram(p)));
  ASSERT_FALSE(bool(b.loadProgram(plain)));
  auto ra = a.run("decode"), rb = b.run("decode");
  ASSERT_TRUE(bool(ra) && bool(rb));
  EXPECT_EQ(ra->pim.cycles, rb->pim.cycles);
  EXPECT_EQ(statsText(*ra, t), statsText(*rb, t));
  // Functional: all four channels write their stats; 16 zero scores give
  // max 0 and sum 16.
  Simulator f(t, SimMode::Functional);
  ASSERT_FALSE(bool(f.loadProgram(p)));
  auto rf = f.run("decode");
  ASSERT_TRUE(bool(rf)) << toString(rf.takeError());
  std::vector<float> st = floatsOf(*f.readRegion("st", 0, 32));
  EXPECT_EQ(st, (std::vector<float>{0, 16, 0, 16, 0, 16, 0, 16}));
  // Only softmax has statistics.
  Program bad = assemble(header(t) + R"(
.region st kind=activations channels=0 banks=0-63 rows=102 bytes=8
.stream s channels=0
  sfm length=16 fn=exp data=st
.entry decode = s
)");
  EXPECT_NE(errorOf(validateProgram(bad, t))
                .find("only fn=softmax writes statistics (data=)"),
            std::string::npos);
  // The stats must fit the region.
  Program out = assemble(header(t) + R"(
.region st kind=activations channels=0 banks=0-63 rows=102 bytes=8
.stream s channels=0
  mv_sb count=2
  barrier
  sfm length=16 data=st+4
.entry decode = s
)");
  std::string msg = errorOf(validateProgram(out, t));
  EXPECT_NE(msg.find("data bytes [4, 12) is outside region 'st' (8 bytes)"),
            std::string::npos)
      << msg;
}

TEST(FunctionalTest, AttentionHeadExpHbm3PimMatchesReferenceBitForBit) {
  // Small scores (q about 2^-9 .. 2^-5) so exp stays well inside fp16.
  runAttentionHead("exp", 77, 6);
}

TEST(FunctionalTest, SoftmaxBufferErrors) {
  Target t = loadShipped("hbm3-pim.json");
  auto runText = [&](const std::string &body) -> std::string {
    Program program = assemble(header(t) + body);
    Simulator sim(t, SimMode::Functional);
    if (Error e = sim.loadProgram(program))
      return toString(std::move(e));
    auto r = sim.run("decode");
    return r ? std::string() : toString(r.takeError());
  };
  // sfm over more values than mv_sb moved in.
  std::string msg = runText(R"(
.stream s channels=0
  mv_sb count=2
  barrier
  sfm length=32
.entry decode = s
)");
  EXPECT_NE(msg.find("sfm length=32, but the softmax buffer of channel 0 "
                     "holds 16 values"),
            std::string::npos)
      << msg;
  // mv_sb past the channel's PIM units (64 on hbm3-pim).
  msg = runText(R"(
.stream s channels=0
  mv_sb bank=60 count=1
.entry decode = s
)");
  EXPECT_NE(msg.find("moves PIM units 60..67, but a channel has 64"),
            std::string::npos)
      << msg;
  // mv_gb past the end of the global buffer (4096 B = 128 bursts).
  msg = runText(R"(
.stream s channels=0
  mv_sb count=8
  barrier
  sfm length=64
  barrier
  mv_gb count=64
  barrier
  mv_gb count=65
.entry decode = s
)");
  EXPECT_NE(msg.find("mv_gb"), std::string::npos) << msg;
  // Format 1.1: the buffer holds at least the global buffer's 2048
  // elements.
  EXPECT_NE(msg.find("softmax-buffer values 2048..2063, but the buffer holds "
                     "2048"),
            std::string::npos)
      << msg;
}

// ld / st move columns between DRAM and a region.
TEST(FunctionalTest, LoadStoreCopyBetweenDramAndRegions) {
  Target t = loadShipped("gddr6-aim.json");
  std::string text = header(t) + R"(
.region a kind=scratch channels=0 banks=0-15 rows=200 bytes=256
.region b kind=scratch channels=0 banks=0-15 rows=201 bytes=256
.stream s channels=0
  st bank=3 row=300 col=5 count=4 data=a+64
.stream l channels=0
  ld bank=3 row=300 col=5 count=4 data=b
.entry decode = s, barrier, l
)";
  Program program = assemble(text);
  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  std::vector<uint8_t> data(128);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = uint8_t(i * 7 + 1);
  ASSERT_FALSE(bool(sim.writeRegion("a", 64, data)));
  auto r = sim.run("decode");
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  EXPECT_EQ(*sim.readRegion("b", 0, 128), data);
  uint64_t addr = encodeAddress(t, bankAddress(t.org, 0, 3, 300, 5));
  EXPECT_EQ(*sim.readMemory(addr, 32),
            std::vector<uint8_t>(data.begin(), data.begin() + 32));
  expectSameTiming(t, program, *r);
}

TEST(FunctionalTest, UnmodelledOpsAreRejected) {
  Target t = loadShipped("hbm3-pim.json");
  std::string text = header(t) + R"(
.stream s channels=0
  ew_mul row=0 col=0 count=1
.entry decode = s
)";
  Program program = assemble(text);
  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  auto r = sim.run("decode");
  ASSERT_FALSE(bool(r));
  std::string msg = toString(r.takeError());
  EXPECT_NE(msg.find("functional mode does not model 'ew_mul' yet"),
            std::string::npos)
      << msg;

  // The same program runs in timing mode.
  Simulator timing(t, SimMode::Timing);
  ASSERT_FALSE(bool(timing.loadProgram(program)));
  auto tr = timing.run("decode");
  EXPECT_TRUE(bool(tr)) << (tr ? "" : toString(tr.takeError()));
}

TEST(FunctionalTest, RegionAccessErrors) {
  Target t = loadShipped("hbm3-pim.json");
  std::string text = header(t) + R"(
.region act kind=activations channels=0 banks=0-63 rows=100 bytes=1024
.stream s channels=0
  barrier
.entry decode = s
)";
  Program program = assemble(text);
  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  Error e = sim.writeRegion("act", 1000, std::vector<uint8_t>(32));
  ASSERT_TRUE(bool(e));
  std::string msg = toString(std::move(e));
  EXPECT_NE(msg.find("region 'act'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1024 bytes"), std::string::npos) << msg;
  auto rd = sim.readRegion("act", 1024, 1);
  ASSERT_FALSE(bool(rd));
  EXPECT_NE(toString(rd.takeError()).find("region 'act'"), std::string::npos);
  Error nope = sim.writeRegion("nope", 0, std::vector<uint8_t>(1));
  EXPECT_NE(toString(std::move(nope)).find("no region 'nope'"),
            std::string::npos);
  // Fresh regions read as zero; timing mode holds no data.
  EXPECT_EQ(*sim.readRegion("act", 0, 16), std::vector<uint8_t>(16));
  Simulator timing(t, SimMode::Timing);
  ASSERT_FALSE(bool(timing.loadProgram(program)));
  Error te = timing.writeRegion("act", 0, std::vector<uint8_t>(1));
  EXPECT_TRUE(bool(te));
  consumeError(std::move(te));
}

TEST(FunctionalTest, Numerics) {
  EXPECT_EQ(fp16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(fp16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(fp16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16ToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(fp16ToFloat(0x7c00)));
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xc040), -3.0f);
  float v[4] = {1e8f, 1.0f, -1e8f, 1.0f};
  // (1e8 + 1) + (-1e8 + 1) = 1e8 + -1e8 = 0 in fp32.
  EXPECT_EQ(pairwiseSum(v), 0.0f);

  // fp32 -> fp16 / bf16, round to nearest even.
  EXPECT_EQ(floatToFp16(1.0f), 0x3c00);
  EXPECT_EQ(floatToFp16(-2.0f), 0xc000);
  EXPECT_EQ(floatToFp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00); // tie, even
  EXPECT_EQ(floatToFp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToFp16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToFp16(65519.0f), 0x7bff);
  EXPECT_EQ(floatToFp16(65520.0f), 0x7c00); // tie above the largest: inf
  EXPECT_EQ(floatToFp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToFp16(std::ldexp(1.0f, -25)), 0x0000); // tie, even
  EXPECT_EQ(floatToFp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToFp16(std::ldexp(1023.5f, -24)), 0x0400); // to normal
  EXPECT_EQ(floatToFp16(1e-30f), 0x0000);
  EXPECT_EQ(floatToFp16(-INFINITY), 0xfc00);
  EXPECT_EQ(floatToFp16(NAN) & 0x7e00, 0x7e00);
  for (uint32_t h = 0; h < 0x10000; ++h) { // every non-NaN half round-trips
    if ((h & 0x7c00) != 0x7c00 || (h & 0x3ff) == 0) {
      ASSERT_EQ(floatToFp16(fp16ToFloat(uint16_t(h))), h) << h;
    }
  }
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80); // tie, even
  EXPECT_EQ(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(floatToBf16(3.4e38f), 0x7f80); // rounds past the largest: inf
  EXPECT_EQ(floatToBf16(NAN) & 0x7fc0, 0x7fc0);
}

} // namespace
