//===- ParamsTest.cpp - program format 1.1 --------------------------------===//
//
// Runtime parameters (text and binary forms, resolveParams, validation at
// the parameters' extremes), the MAC global-buffer base, masking sfm, the
// typed host ops in the text form and the host kernel runner. Functional
// results are compared bit for bit with naive references (docs/pimsim-isa.md).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "pimsim/program_generated.h"

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

/// A program using every 1.1 feature of the text form.
const char *kParamProgram = R"(
.param pos min=0 max=4095
.param token min=0 max=32000
.param kv_len src=pos add=1 min=1 max=4096
.param kgrp src=pos div=512 min=1 max=8
.param slot src=pos mod=4 min=0 max=3
.param vrows src=pos add=511 div=512 mod=9 min=1 max=8
.region w kind=weights channels=0-15 banks=0-63 rows=0-99 bytes=1048576
.region act kind=activations channels=0-15 banks=0-63 rows=16000-16383 bytes=1048576
.weight "layers.0.q.weight" region=w format=fp16 shape=64x512 rows=0-1 bytes=65536 layout=opaque
.host_tensor "emb" shape=32001x64
.kernel embed kind=embedding bytes=8192 out=act[0:8192]
  embedding table="emb" out=f32[64]@0
.stream attn channels=0-15
  mac_ab row=40+kgrp col=0 count=32 offset=1024*slot
  loop i kgrp {
    mac_sb bank=3 row=40+i col=0 count=4*vrows-3 offset=32+32*slot
    wr_gb offset=0 bytes=32*vrows data=act+64*kgrp+4*i
  }
  mv_sb count=vrows
  sfm length=kv_len
  mv_gb count=kgrp+1
  rd_acc count=vrows data=act+256*ch
.entry decode = embed, barrier, attn
)";
} // namespace

//===----------------------------------------------------------------------===//
// Text and binary forms
//===----------------------------------------------------------------------===//

TEST(ParamsTest, TextAndBinaryRoundTrip) {
  Target t = loadShipped("hbm3-pim.json");
  Program p = assemble(header(t) + kParamProgram);
  ASSERT_EQ(p.params.size(), 6u);
  EXPECT_EQ(p.params[2].src, 0);
  EXPECT_EQ(p.params[5].div, 512);
  ASSERT_EQ(p.kernels[0].ops.size(), 1u);
  EXPECT_EQ(p.kernels[0].ops[0].tensor, 0);
  EXPECT_EQ(p.weights[0].layout, "opaque");
  const Instruction &loop = p.streams[0].body[1];
  ASSERT_EQ(loop.op, Opcode::Loop);
  ASSERT_EQ(loop.strides.size(), 1u);
  EXPECT_EQ(loop.strides[0].loop, kParamBase + 3);
  EXPECT_EQ(loop.count, 0);

  std::string text = textOf(p);
  for (StringRef want : {
           ".param pos min=0 max=4095\n",
           ".param kv_len src=pos add=1 min=1 max=4096\n",
           ".param vrows src=pos add=511 div=512 mod=9 min=1 max=8\n",
           "bytes=65536 layout=opaque\n",
           ".host_tensor \"emb\" shape=32001x64\n",
           "out=act[0:8192]\n  embedding table=\"emb\" out=f32[64]@0\n",
           "  mac_ab row=40+kgrp col=0 count=32 offset=1024*slot\n",
           "  loop i kgrp {\n",
           "    mac_sb bank=3 row=40+i col=0 count=-3+4*vrows "
           "offset=32+32*slot\n",
           "    wr_gb offset=0 bytes=32*vrows data=act+4*i+64*kgrp\n",
           "  sfm length=kv_len\n",
           "  mv_gb count=1+kgrp\n",
       })
    EXPECT_NE(text.find(want.str()), std::string::npos) << want.str() << "\n"
                                                        << text;
  // .param lines come right after .org.
  EXPECT_LT(text.find(".org"), text.find(".param pos"));
  EXPECT_LT(text.find(".param slot"), text.find(".region"));

  auto again = parseProgramText(text, "again.pimasm");
  ASSERT_TRUE(bool(again)) << toString(again.takeError());
  EXPECT_TRUE(*again == p);
  EXPECT_EQ(textOf(*again), text);

  auto bytes = serializeProgram(p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto read = parseProgramBuffer(*bytes, "p.pimb");
  ASSERT_TRUE(bool(read)) << toString(read.takeError());
  EXPECT_EQ(read->version.major, kProgramVersion.major);
  EXPECT_EQ(read->version.minor, kProgramVersion.minor);
  p.version = kProgramVersion;
  EXPECT_TRUE(*read == p);
  auto bytes2 = serializeProgram(*read);
  ASSERT_TRUE(bool(bytes2));
  EXPECT_EQ(*bytes2, *bytes);
  EXPECT_FALSE(bool(validateProgram(p, t))) << errorOf(validateProgram(p, t));
}

// A 1.x buffer (JSON host ops) is refused by name: recompile it.
TEST(ParamsTest, Version1BuffersAreRefused) {
  flatbuffers::FlatBufferBuilder fbb;
  auto kname = fbb.CreateString("k");
  std::vector<flatbuffers::Offset<fb::HostKernel>> kernels = {
      fb::CreateHostKernel(fbb, kname, fb::KernelKind::Gemm, 1, 2, 3, 12, 24)};
  fb::Version v(1, 6);
  fb::FinishProgramBuffer(
      fbb, fb::CreateProgram(fbb, &v, 0, 0, 0, fbb.CreateVector(kernels)));
  auto p = parseProgramBuffer(
      ArrayRef<uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()), "old.pimb");
  EXPECT_EQ(errorOf(p.takeError()),
            "old.pimb: program version 1.6, this pimsim reads 2.x");
  Target t = loadShipped("hbm3-pim.json");
  EXPECT_EQ(errorOf(parseProgramText(header(t, {1, 6}), "old.pimasm")),
            "old.pimasm:1:10: program version 1.6, this pimsim reads 2.x");
}

TEST(ParamsTest, AssemblerAndStructureErrors) {
  Target t = loadShipped("hbm3-pim.json");
  std::string h = header(t) +
                  ".region act kind=activations channels=0-15 banks=0-63 "
                  "rows=0 bytes=4096\n";
  auto err = [&](const std::string &body) {
    return errorOf(parseProgramText(h + body, "t.pimasm"));
  };
  EXPECT_EQ(err(".param p min=0\n"), "t.pimasm:5:1: .param needs 'max='");
  EXPECT_EQ(err(".param p src=q min=0 max=1\n"),
            "t.pimasm:5:14: unknown parameter 'q'");
  EXPECT_EQ(err(".param p min=0 max=1\n.param p min=0 max=1\n"),
            "t.pimasm:6:8: parameter 'p' is defined twice");
  EXPECT_EQ(err(".param p div=2 min=0 max=1\n"),
            "t.pimasm:5:10: 'div' needs 'src='");
  EXPECT_EQ(err(".param p min=0 max=1\n.stream s channels=0\n"
                "  set_cfr reg=p value=p\n"),
            "t.pimasm:7:15: 'reg' cannot depend on a parameter");
  EXPECT_EQ(err(".stream s channels=0\n  loop i 2 {\n"
                "    rd_acc count=i\n  }\n"),
            "t.pimasm:7:18: 'count' cannot depend on a loop variable");
  EXPECT_EQ(err(".param p min=0 max=1\n.stream s channels=0\n"
                "  loop p 2 {\n    barrier\n  }\n"),
            "t.pimasm:7:8: 'p' is a parameter, not a loop variable name");
  std::string msg = err(".param i min=0 max=1\n");
  EXPECT_NE(msg.find("'i' is reserved for loop variables"), std::string::npos)
      << msg;
  msg = err(".param p min=3 max=1\n");
  EXPECT_NE(msg.find("parameter 0 (p): min 3 is above max 1"),
            std::string::npos)
      << msg;

  // Structure: a derived parameter refers to an earlier one; strides name
  // existing parameters on fields that take them.
  Program p = assemble(h + ".param a min=0 max=9\n.param b src=a min=0 "
                           "max=9\n.stream s channels=0\n  sfm length=a\n");
  p.params[1].src = 1;
  p.params[0].div = 0;
  msg = errorOf(checkProgram(p));
  EXPECT_NE(msg.find("parameter 1 (b): derived from parameter 1, which is not "
                     "an earlier parameter"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("parameter 0 (a): div 0 must be >= 1"), std::string::npos)
      << msg;
  p = assemble(h + ".param a min=0 max=9\n.stream s channels=0\n"
                   "  sfm length=a\n");
  p.streams[0].body[0].strides[0].loop = kParamBase + 5;
  msg = errorOf(checkProgram(p));
  EXPECT_NE(msg.find("stride refers to parameter 5, but the program has 1 "
                     "parameters"),
            std::string::npos)
      << msg;
  p = assemble(h + ".param a min=0 max=9\n.stream s channels=0\n"
                   "  sfm length=a\n");
  p.streams[0].body[0].strides[0].field = Field::Fn;
  msg = errorOf(checkProgram(p));
  EXPECT_NE(msg.find("field 'fn' cannot take a parameter stride"),
            std::string::npos)
      << msg;
}

//===----------------------------------------------------------------------===//
// resolveParams
//===----------------------------------------------------------------------===//

TEST(ParamsTest, ResolveParams) {
  Target t = loadShipped("hbm3-pim.json");
  Program p = assemble(header(t) + kParamProgram);
  // kv_len = pos + 1; kgrp = pos / 512 clamped to [1, 8]; slot = pos % 4;
  // vrows = ceil((pos + 1) / 512) % 9 clamped to [1, 8].
  auto v = resolveParams(p, {{"pos", 1000}, {"token", 7}});
  ASSERT_TRUE(bool(v)) << toString(v.takeError());
  EXPECT_EQ(*v, (std::vector<int64_t>{1000, 7, 1001, 1, 0, 2}));
  v = resolveParams(p, {{"pos", 4095}, {"token", 0}});
  ASSERT_TRUE(bool(v));
  EXPECT_EQ(*v, (std::vector<int64_t>{4095, 0, 4096, 7, 3, 8}));
  v = resolveParams(p, {{"pos", 0}, {"token", 0}});
  ASSERT_TRUE(bool(v));
  // kgrp: 0 clamped up to 1; vrows: (0 + 511) / 512 = 0, % 9 = 0, clamped
  // up to 1.
  EXPECT_EQ(*v, (std::vector<int64_t>{0, 0, 1, 1, 0, 1}));
  const Instruction &mac = p.streams[0].body[0];
  EXPECT_EQ(mac.at(Field::Row, {}, 0, *v), 41);

  // Floor division and a non-negative modulo for negative values.
  Program q;
  q.params = {{"x", -100, 100},
              {"d", -100, 100, 0, 0, 3, 0},
              {"m", -100, 100, 0, 0, 1, 4},
              {"c", 0, 5, 0, 10, 1, 0}};
  v = resolveParams(q, {{"x", -7}});
  ASSERT_TRUE(bool(v)) << toString(v.takeError());
  EXPECT_EQ(*v, (std::vector<int64_t>{-7, -3, 1, 3}));
  v = resolveParams(q, {{"x", 50}});
  ASSERT_TRUE(bool(v));
  EXPECT_EQ(*v, (std::vector<int64_t>{50, 16, 2, 5}));

  EXPECT_EQ(errorOf(resolveParams(p, {{"token", 1}})),
            "entry needs parameter 'pos'");
  EXPECT_EQ(errorOf(resolveParams(p, {{"pos", 1}, {"token", 1}, {"tok", 1}})),
            "program has no parameter 'tok'");
  EXPECT_EQ(errorOf(resolveParams(p, {{"pos", 1}, {"token", 1}, {"kgrp", 1}})),
            "parameter 'kgrp' is derived from 'pos', not an input");
  EXPECT_EQ(errorOf(resolveParams(p, {{"pos", 4096}, {"token", 1}})),
            "parameter 'pos' = 4096 is out of range [0, 4095]");
  EXPECT_EQ(errorOf(resolveParams(p, {{"pos", -1}, {"token", 1}})),
            "parameter 'pos' = -1 is out of range [0, 4095]");

  // Instruction::at evaluates parameter strides.
  auto w = resolveParams(p, {{"pos", 1601}, {"token", 1}});
  ASSERT_TRUE(bool(w));
  EXPECT_EQ(mac.at(Field::Row, {}, 0, *w), 43);
  EXPECT_EQ(mac.at(Field::Offset, {}, 0, *w), 1024);
  EXPECT_EQ(mac.at(Field::Row, {}), 40); // no parameter values: 0
}

//===----------------------------------------------------------------------===//
// validateProgram at the parameters' extremes
//===----------------------------------------------------------------------===//

TEST(ParamsTest, ValidateChecksParameterExtremes) {
  Target t = loadShipped("hbm3-pim.json");
  std::string h = header(t) +
                  ".region act kind=activations channels=0-15 banks=0-63 "
                  "rows=0 bytes=4096\n";
  auto check = [&](const std::string &body) {
    Program p = assemble(h + body);
    return errorOf(validateProgram(p, t));
  };
  // Row 16000 + p is in range for p <= 383 only.
  EXPECT_EQ(check(".param p min=0 max=383\n.stream s channels=0\n"
                  "  mac_ab row=16000+p col=0 count=1\n"),
            "<success>");
  EXPECT_EQ(check(".param p min=0 max=384\n.stream s channels=0\n"
                  "  mac_ab row=16000+p col=0 count=1\n"),
            "stream 0 (s), instruction 0 (mac_ab): row 16384 is out of range "
            "(target has 16384 rows) (at p=384)");
  // A negative step: the bad end is the parameter's minimum.
  EXPECT_EQ(check(".param p min=0 max=10\n.stream s channels=0\n"
                  "  mac_ab row=5-p col=0 count=1\n"),
            "stream 0 (s), instruction 0 (mac_ab): row -5 is out of range "
            "(target has 16384 rows) (at p=10)");
  // Loop counts from a parameter: >= 1 at every corner, and the loop index
  // reaches count - 1 at the parameter's maximum.
  EXPECT_EQ(check(".param n min=0 max=4\n.stream s channels=0\n"
                  "  loop i n {\n    barrier\n  }\n"),
            "stream 0 (s), instruction 0 (loop): loop count 0 must be "
            "positive (at n=0)");
  EXPECT_EQ(check(".param n min=1 max=8\n.stream s channels=0\n"
                  "  loop i n {\n    mac_ab row=16380+i col=0 count=1\n  }\n"),
            "stream 0 (s), instruction 1 (mac_ab): row 16387 is out of range "
            "(target has 16384 rows) (at n=8)");
  // col + count at two parameters' corners: only a and b both at max fail.
  EXPECT_EQ(check(".param a min=0 max=16\n.param b min=1 max=17\n"
                  ".stream s channels=0\n  mac_ab row=0 col=a count=b\n"),
            "stream 0 (s), instruction 0 (mac_ab): columns 16..32 are out of "
            "range (target has 32 columns) (at a=16, b=17)");
  // Counts, lengths and bytes from parameters.
  EXPECT_EQ(check(".param n min=0 max=2\n.stream s channels=0\n"
                  "  rd_acc count=n data=act\n"),
            "stream 0 (s), instruction 0 (rd_acc): count 0 must be positive "
            "(at n=0)");
  EXPECT_EQ(check(".param n min=1 max=200\n.stream s channels=0\n"
                  "  wr_gb offset=0 bytes=32*n data=act\n"),
            "stream 0 (s), instruction 0 (wr_gb): global-buffer bytes [0, "
            "6400) are out of range (target has 4096 bytes) (at n=200)\n"
            "stream 0 (s), instruction 0 (wr_gb): data bytes [0, 6400) is "
            "outside region 'act' (4096 bytes) (at n=200)");
  // mac offset: aligned and inside the global buffer.
  EXPECT_EQ(check(".stream s channels=0\n"
                  "  mac_ab row=0 col=0 count=1 offset=4096\n"),
            "stream 0 (s), instruction 0 (mac_ab): global-buffer bytes "
            "[4096, 4128) are out of range (target has 4096 bytes)");
  EXPECT_EQ(check(".stream s channels=0\n"
                  "  mac_sb bank=0 row=0 col=0 count=1 offset=2\n"),
            "stream 0 (s), instruction 0 (mac_sb): offset is not a multiple "
            "of 32 bytes");
}

//===----------------------------------------------------------------------===//
// Functional model
//===----------------------------------------------------------------------===//

// GEMV y = W x, W [128 x 1024] fp16 on hbm3-pim channel 0, with x in the
// second half of the 4 KiB global buffer: `mac_ab ... offset=2048+1024*j`
// reads elements 1024 + 512 j + 16 c + l. The first half holds other data.
TEST(ParamsTest, GemvWithMacOffsetMatchesReference) {
  Target t = loadShipped("hbm3-pim.json");
  const int N = 128, K = 1024, banks = 64, chunk = 512;
  std::string text = header(t) + R"(
.region x kind=activations channels=0 banks=0-63 rows=100 bytes=4096
.region y kind=activations channels=0 banks=0-63 rows=101 bytes=512
.stream gemv channels=0
  wr_gb offset=0 bytes=4096 data=x
  barrier
  loop i 2 {
    loop j 2 {
      mac_ab row=2*i+j col=0 count=32 offset=2048+1024*j
      barrier
    }
    rd_acc count=8 data=y+256*i
    barrier
  }
.entry decode = gemv
)";
  Program program = assemble(text);
  std::mt19937 rng(7);
  std::vector<uint16_t> W = randomHalves(N * K, false, rng);
  std::vector<uint16_t> junk = randomHalves(K, false, rng);
  std::vector<uint16_t> x = randomHalves(K, false, rng);
  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  writeGemvWeights(sim, W, N, K, banks, /*perChannel=*/N, chunk);
  ASSERT_FALSE(bool(sim.writeRegion("x", 0, bytesOf(junk))));
  ASSERT_FALSE(bool(sim.writeRegion("x", 2048, bytesOf(x))));
  auto r = sim.run("decode");
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  std::vector<float> got = floatsOf(*sim.readRegion("y", 0, 4 * N));
  ASSERT_TRUE(
      sameBits(got, refGemvLanes(W.data(), x.data(), N, K, false), "y"));
}

namespace {
/// One attention head per hbm3-pim channel (channels 0-1), head dim 64,
/// value dim 64, up to 64 keys of which the first kv_len = pos + 1 count.
/// Keys in flat bank t, row 40 (columns 0..3); V^T: dim d in flat bank d,
/// row 41, column c lane l = V[16 c + l][d]. Every key slot holds data, so
/// the scores past kv_len are not zero: masking must remove them.
///   kv8 = ceil(kv_len / 8) mv_sb groups (one per loop iteration), so the
///   softmax buffer holds 8 kv8 >= kv_len values; sfm length=kv_len zeroes
///   the rest; kv16 = ceil(kv_len / 16) mv_gb bursts and V columns.
/// The rd_acc drains the scores of the unused key slots.
/// With `fixedMvGb`, mv_gb always moves 4 bursts (64 values) and the
/// context GEMV reads all 4 columns: the values past kv_len must be zero.
const char *kHeadProgram = R"(
.param pos min=0 max=63
.param kv_len src=pos add=1 min=1 max=64
.param kv8 src=pos add=8 div=8 min=1 max=8
.param kv16 src=pos add=16 div=16 min=1 max=4
.region kv kind=kv_cache channels=0-1 banks=0-63 rows=40-41 bytes=262144
.region q kind=activations channels=0-1 banks=0-63 rows=100 bytes=256
.region o kind=activations channels=0-1 banks=0-63 rows=101 bytes=512
.stream head channels=0-1
  wr_gb offset=0 bytes=128 data=q+128*ch
  barrier
  mac_ab row=40 col=0 count=4
  barrier
  loop i kv8 {
    mv_sb bank=8*i row=40
    barrier
  }
  rd_acc count=8 data=o+256*ch
  barrier
  sfm length=kv_len
  barrier
)";

struct HeadData {
  std::vector<uint16_t> K, V, q; // [h][t][d], [h][t][d], [h][d]
};

std::vector<float> referenceHead(const HeadData &d, int kvLen, int columns) {
  const int T = 64, D = 64, H = 2;
  std::vector<float> out(H * D);
  for (int h = 0; h < H; ++h) {
    std::vector<float> s =
        refGemvLanes(&d.K[h * T * D], &d.q[h * D], kvLen, D, false);
    std::vector<float> softmax = refSoftmax(s);
    float p[T] = {};
    for (int i = 0; i < kvLen; ++i)
      p[i] = refRoundFp16(softmax[i]);
    std::vector<float> o = refContext(&d.V[h * T * D], p, D, columns);
    std::copy(o.begin(), o.end(), out.begin() + h * D);
  }
  return out;
}

void runParamHead(bool fixedMvGb) {
  Target t = loadShipped("hbm3-pim.json");
  const int T = 64, D = 64, H = 2;
  std::string text = header(t) + kHeadProgram +
                     (fixedMvGb ? "  mv_gb row=41 count=4\n  barrier\n"
                                  "  mac_ab row=41 col=0 count=4\n"
                                : "  mv_gb row=41 count=kv16\n  barrier\n"
                                  "  mac_ab row=41 col=0 count=kv16\n") +
                     "  barrier\n  rd_acc count=8 data=o+256*ch\n"
                     ".entry decode = head\n";
  Program program = assemble(text);
  ASSERT_FALSE(bool(validateProgram(program, t)))
      << errorOf(validateProgram(program, t));
  std::mt19937 rng(fixedMvGb ? 11 : 12);
  HeadData d;
  d.K = randomHalves(H * T * D, false, rng);
  d.V = randomHalves(H * T * D, false, rng);
  d.q = randomHalves(H * D, false, rng, 7);

  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  writeKeys(sim, d.K, H, T, D, 40);
  writeValues(sim, d.V, H, T, D, 41);
  ASSERT_FALSE(bool(sim.writeRegion("q", 0, bytesOf(d.q))));

  int64_t lastRequests = -1;
  for (int pos : {19, 44, 63, 0}) {
    int kvLen = pos + 1;
    auto r = sim.run("decode", {{"pos", pos}});
    ASSERT_TRUE(bool(r)) << toString(r.takeError());
    std::vector<float> got = floatsOf(*sim.readRegion("o", 0, 4 * H * D));
    std::vector<float> ref =
        referenceHead(d, kvLen, fixedMvGb ? 4 : (kvLen + 15) / 16);
    ASSERT_TRUE(sameBits(got, ref, "o")) << "pos " << pos;
    // The parameter changes the work: one mv_sb (and barrier) per 8 keys.
    EXPECT_NE(r->pim.requests, lastRequests) << "pos " << pos;
    lastRequests = r->pim.requests;

    // Timing mode: the same cycles and statistics.
    Simulator timing(t, SimMode::Timing);
    ASSERT_FALSE(bool(timing.loadProgram(program)));
    auto tr = timing.run("decode", {{"pos", pos}});
    ASSERT_TRUE(bool(tr)) << toString(tr.takeError());
    EXPECT_EQ(statsText(*tr, t), statsText(*r, t));
  }
}
} // namespace

TEST(ParamsTest, AttentionHeadWithParameterKeyCount) { runParamHead(false); }

TEST(ParamsTest, SfmMaskingZeroesValuesPastLength) { runParamHead(true); }

TEST(ParamsTest, RunWithoutNeededParameterFails) {
  Target t = loadShipped("hbm3-pim.json");
  Program p = assemble(header(t) + kHeadProgram + ".entry decode = head\n");
  Simulator sim(t, SimMode::Timing);
  ASSERT_FALSE(bool(sim.loadProgram(p)));
  EXPECT_EQ(errorOf(sim.run("decode")), "entry needs parameter 'pos'");
  EXPECT_EQ(errorOf(sim.run("decode", {{"pos", 64}})),
            "parameter 'pos' = 64 is out of range [0, 63]");
}

//===----------------------------------------------------------------------===//
// Host kernel runner
//===----------------------------------------------------------------------===//

namespace {
/// y = W x on channel 0 (64 outputs, K = 512), then host kernels. The
/// runner doubles x after the first phase, so the second GEMV gives 2 y.
const char *kRunnerProgram = R"(
.param pos min=0 max=9
.region x kind=activations channels=0 banks=0-63 rows=100 bytes=1024
.region y kind=activations channels=0 banks=0-63 rows=101 bytes=512
.kernel ka kind=other flops=1000000
.kernel kb kind=other bytes=1000000
.kernel kc kind=other
.kernel kd kind=other
.stream g1 channels=0
  wr_gb offset=0 bytes=1024 data=x
  barrier
  mac_ab row=0 col=0 count=32
  barrier
  rd_acc count=8 data=y
.stream g2 channels=0
  wr_gb offset=0 bytes=1024 data=x
  barrier
  mac_ab row=0 col=0 count=32
  barrier
  call kd
  rd_acc count=8 data=y+256
.entry decode = g1, ka, kb, barrier, kc, g2
)";
} // namespace

TEST(ParamsTest, RunnerRunsKernelsAfterTheirPhase) {
  Target t = loadShipped("hbm3-pim.json");
  Program program = assemble(header(t) + kRunnerProgram);
  std::mt19937 rng(5);
  std::vector<uint16_t> W = randomHalves(64 * 512, false, rng);
  std::vector<uint16_t> x = randomHalves(512, false, rng);
  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  writeGemvWeights(sim, W, 64, 512, /*banks=*/64, /*perChannel=*/64,
                   /*chunk=*/512);
  ASSERT_FALSE(bool(sim.writeRegion("x", 0, bytesOf(x))));

  std::vector<std::string> calls;
  std::vector<float> y1;
  HostKernelRunner runner = [&](int64_t index, const HostKernel &k,
                                ArrayRef<int64_t> params) -> Error {
    calls.push_back(k.name);
    EXPECT_EQ(program.kernels[index].name, k.name);
    EXPECT_EQ(params.vec(), std::vector<int64_t>{3});
    if (k.name == "ka") {
      // The phase's streams have completed: y holds W x.
      y1 = floatsOf(*sim.readRegion("y", 0, 256));
      EXPECT_NE(y1[0], 0.0f);
      std::vector<uint16_t> x2(x);
      for (uint16_t &h : x2)
        h = uint16_t(h + (1 << 10)); // times two: exponent + 1
      return sim.writeRegion("x", 0, bytesOf(x2));
    }
    if (k.name == "kd") { // the call in g2: after the MAC, before rd_acc
      EXPECT_EQ(floatsOf(*sim.readRegion("y", 256, 256))[0], 0.0f);
    }
    return Error::success();
  };
  auto r = sim.run("decode", {{"pos", 3}}, runner);
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  // A call runs at its rendezvous; entry kernels after the phase's streams.
  EXPECT_EQ(calls, (std::vector<std::string>{"ka", "kb", "kd", "kc"}));
  std::vector<float> y2 = floatsOf(*sim.readRegion("y", 256, 256));
  for (int n = 0; n < 64; ++n)
    ASSERT_EQ(bitsOf(y2[n]), bitsOf(2 * y1[n])) << n;

  ASSERT_EQ(r->phases.size(), 2u);
  const PhaseReport &p0 = r->phases[0], &p1 = r->phases[1];
  EXPECT_EQ(p0.streams, std::vector<int64_t>{0});
  EXPECT_EQ(p0.kernels, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p1.streams, std::vector<int64_t>{1});
  EXPECT_EQ(p1.kernels, (std::vector<int64_t>{3, 2}));
  ASSERT_EQ(p0.kernelSeconds.size(), 2u);
  EXPECT_GT(p0.kernelSeconds[0], 0);
  EXPECT_DOUBLE_EQ(p0.kernelSeconds[0] + p0.kernelSeconds[1], p0.hostSeconds);
  ASSERT_EQ(p0.streamCycles.size(), 1u);
  EXPECT_GT(p0.streamCycles[0], 0);
  EXPECT_LE(p0.streamCycles[0], p0.pimCycles);
  ASSERT_EQ(p1.streamCycles.size(), 1u);
  // g2's rd_acc runs after the call: its last command is past the kernel.
  EXPECT_GT(p1.streamCycles[0], p1.pimCycles);
  std::string json = statsText(*r, t);
  for (StringRef key : {"\"streams\":[0]", "\"kernels\":[0,1]",
                        "\"kernel_seconds\":[", "\"stream_cycles\":["})
    EXPECT_NE(json.find(key.str()), std::string::npos) << key.str() << "\n"
                                                       << json;

  // Timing mode calls the runner too, and gives the same report.
  Simulator timing(t, SimMode::Timing);
  ASSERT_FALSE(bool(timing.loadProgram(program)));
  std::vector<std::string> timingCalls;
  auto tr =
      timing.run("decode", {{"pos", 3}},
                 [&](int64_t, const HostKernel &k, ArrayRef<int64_t>) -> Error {
                   timingCalls.push_back(k.name);
                   return Error::success();
                 });
  ASSERT_TRUE(bool(tr)) << toString(tr.takeError());
  EXPECT_EQ(timingCalls, calls);
  EXPECT_EQ(statsText(*tr, t), statsText(*r, t));
}

TEST(ParamsTest, RunnerErrorAbortsTheRun) {
  Target t = loadShipped("hbm3-pim.json");
  Program program = assemble(header(t) + kRunnerProgram);
  Simulator sim(t, SimMode::Timing);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  std::vector<std::string> calls;
  auto r =
      sim.run("decode", {{"pos", 0}},
              [&](int64_t, const HostKernel &k, ArrayRef<int64_t>) -> Error {
                calls.push_back(k.name);
                if (k.name == "kb")
                  return make_error<StringError>("no such op",
                                                 inconvertibleErrorCode());
                return Error::success();
              });
  EXPECT_EQ(errorOf(std::move(r)), "host kernel 'kb': no such op");
  EXPECT_EQ(calls, (std::vector<std::string>{"ka", "kb"}));
}
