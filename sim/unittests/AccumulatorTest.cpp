//===- AccumulatorTest.cpp - accumulator registers (program format 1.3) ---===//
//
// The `reg` field of mac_ab / mac_sb / mac_pb / rd_acc / mv_sb: text and
// binary round trips, validation against pim_unit.accumulators, and
// functional kernels that keep several independent dot products per PIM
// unit (8 GEMV output rows from one global-buffer broadcast; 4 attention
// key groups before mv_sb), compared bit for bit with naive C++ references
// that follow docs/pimsim-isa.md ("Functional model"). `reg` costs nothing
// in timing: functional and timing cycles agree, and so do the cycles of
// the same program with every `reg` dropped.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

using namespace llvm;
using namespace pimsim;
using namespace pimsim::test;

namespace {

/// Every `reg` (and its strides) dropped: the program a single-accumulator
/// compiler would time the same way.
Program withoutRegisters(Program p) {
  std::function<void(std::vector<Instruction> &)> strip =
      [&](std::vector<Instruction> &body) {
        for (Instruction &inst : body) {
          if (inst.op != Opcode::SetCfr) {
            inst.reg = 0;
            llvm::erase_if(inst.strides, [](const Stride &s) {
              return s.field == Field::Reg;
            });
          }
          strip(inst.body);
        }
      };
  for (Stream &s : p.streams)
    strip(s.body);
  return p;
}

/// Timing mode gives the functional run's cycles and statistics, and `reg`
/// costs nothing: the program without registers times the same.
void expectSameTimingWithoutRegisters(const Target &t, const Program &program,
                                      const RunReport &functional) {
  for (const Program &p : {program, withoutRegisters(program)})
    expectSameTiming(t, p, functional);
}

//===----------------------------------------------------------------------===//
// Format
//===----------------------------------------------------------------------===//

TEST(AccumulatorTest, RegRoundTripsThroughTextAndBinary) {
  Target t = loadShipped("hbm3-pim.json");
  EXPECT_EQ(t.pim.accumulators, 8);
  EXPECT_GE(kProgramVersion.major, 2); // 1.3 added reg
  for (Opcode op : {Opcode::MacAB, Opcode::MacSB, Opcode::MacPB, Opcode::RdAcc,
                    Opcode::MvSB}) {
    EXPECT_TRUE(opcodeHasField(op, Field::Reg)) << opcodeName(op).str();
    EXPECT_TRUE(isStridable(op, Field::Reg)) << opcodeName(op).str();
    EXPECT_TRUE(isParamStridable(op, Field::Reg)) << opcodeName(op).str();
  }
  for (Opcode op : {Opcode::WrGB, Opcode::MvGB, Opcode::RdAf, Opcode::WrBias})
    EXPECT_FALSE(opcodeHasField(op, Field::Reg)) << opcodeName(op).str();
  // set_cfr keeps a required, fixed register number.
  EXPECT_TRUE(opcodeHasField(Opcode::SetCfr, Field::Reg));
  EXPECT_FALSE(isStridable(Opcode::SetCfr, Field::Reg));
  EXPECT_FALSE(isParamStridable(Opcode::SetCfr, Field::Reg));

  std::string text = header(t) + R"(.param g min=0 max=7
.region act kind=activations channels=0-15 banks=0-63 rows=0 bytes=65536
.stream s channels=0-7
  mac_ab row=1 col=0 count=4 reg=3
  mac_ab row=1 col=0 count=4 reg=0
  mac_sb bank=2 row=1 col=0 count=4 offset=32 reg=7
  mac_pb bank=2 row=1 col=0 count=4 reg=g
  loop r 8 {
    mac_ab row=r col=0 count=32 reg=r
  }
  loop i 2 {
    rd_acc count=8 data=act+256*i reg=5-2*i
  }
  mv_sb bank=0 row=40 count=8 reg=ch
  set_cfr reg=0 value=1
  set_cfr reg=3 value=1
.entry decode = s
)";
  Program p = assemble(text);
  ASSERT_FALSE(p.streams.empty());
  const std::vector<Instruction> &b = p.streams[0].body;
  EXPECT_EQ(b[0].reg, 3);
  EXPECT_EQ(b[2].reg, 7);
  EXPECT_EQ(b[3].strides.size(), 1u);
  EXPECT_EQ(b[3].at(Field::Reg, {}, 0, {6}), 6);
  EXPECT_EQ(b[4].body[0].at(Field::Reg, {5}), 5);
  EXPECT_EQ(b[5].body[0].at(Field::Reg, {1}), 3);
  EXPECT_EQ(b[6].at(Field::Reg, {}, 4), 4);
  EXPECT_FALSE(bool(validateProgram(p, t)));

  // reg is printed only when non-zero or strided; set_cfr always prints it.
  std::string printed = textOf(p);
  for (StringRef line :
       {"  mac_ab row=1 col=0 count=4 reg=3\n",
        "  mac_ab row=1 col=0 count=4\n",
        "  mac_sb bank=2 row=1 col=0 count=4 offset=32 reg=7\n",
        "  mac_pb bank=2 row=1 col=0 count=4 reg=g\n",
        "    mac_ab row=i col=0 count=32 reg=i\n",
        "    rd_acc count=8 data=act+256*i reg=5-2*i\n",
        "  mv_sb row=40 count=8 reg=ch\n", "  set_cfr reg=0 value=1\n",
        "  set_cfr reg=3 value=1\n"})
    EXPECT_NE(printed.find(line.str()), std::string::npos)
        << line.str() << "in:\n"
        << printed;
  auto again = parseProgramText(printed, "again.pimasm");
  ASSERT_TRUE(bool(again)) << toString(again.takeError());
  EXPECT_EQ(*again, p);
  EXPECT_EQ(textOf(*again), printed);

  // Binary: reg is the instruction table's existing `reg` field; writers
  // stamp the current version.
  auto bytes = serializeProgram(p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto read = parseProgramBuffer(*bytes, "t.pimb");
  ASSERT_TRUE(bool(read)) << toString(read.takeError());
  EXPECT_EQ(read->version.major, kProgramVersion.major);
  EXPECT_EQ(read->version.minor, kProgramVersion.minor);
  EXPECT_EQ(*read, p);
  EXPECT_EQ(textOf(*read), printed);
}

TEST(AccumulatorTest, RegSyntaxErrors) {
  Target t = loadShipped("hbm3-pim.json");
  std::string h = header(t) +
                  ".region act kind=activations channels=0-15 banks=0-63 "
                  "rows=0 bytes=4096\n.param p min=0 max=1\n"
                  ".stream s channels=0\n";
  auto err = [&](const std::string &body) {
    return errorOf(parseProgramText(h + body, "t.pimasm"));
  };
  EXPECT_EQ(err("  wr_gb offset=0 bytes=32 reg=1\n"),
            "t.pimasm:7:27: wr_gb has no field 'reg' (fields: offset, bytes, "
            "bank, row, data, channels)");
  EXPECT_EQ(err("  mv_gb count=1 reg=1\n"),
            "t.pimasm:7:17: mv_gb has no field 'reg' (fields: bank, row, "
            "count, channels)");
  EXPECT_EQ(err("  loop i 2 {\n    set_cfr reg=i value=0\n  }\n"),
            "t.pimasm:8:17: 'reg' cannot depend on a loop variable");
  EXPECT_EQ(err("  set_cfr reg=p value=0\n"),
            "t.pimasm:7:15: 'reg' cannot depend on a parameter");
  // checkProgram: a stride on set_cfr's reg, reg on an op without it.
  Program p = assemble(h + "  set_cfr reg=1 value=0\n  wr_gb offset=0 "
                           "bytes=32\n.entry decode = s\n");
  p.streams[0].body[0].addStride(Field::Reg, kChannelIndex, 1);
  p.streams[0].body[1].reg = 2;
  std::string msg = errorOf(checkProgram(p));
  EXPECT_NE(msg.find("stream 0 (s), instruction 0 (set_cfr): field 'reg' "
                     "cannot take a loop stride"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("stream 0 (s), instruction 1 (wr_gb): field 'reg' is "
                     "not used by wr_gb"),
            std::string::npos)
      << msg;
}

TEST(AccumulatorTest, RegOutOfRangeIsAValidationError) {
  Target t = loadShipped("hbm3-pim.json");
  std::string h = header(t) +
                  ".region act kind=activations channels=0-15 banks=0-63 "
                  "rows=0 bytes=4096\n";
  auto validate = [&](const Target &target, const std::string &body) {
    Program p = assemble(h + body + ".entry decode = s\n");
    return errorOf(validateProgram(p, target));
  };
  EXPECT_EQ(validate(t, ".stream s channels=0\n  mac_ab row=0 col=0 count=1 "
                        "reg=8\n"),
            "stream 0 (s), instruction 0 (mac_ab): reg 8 is out of range "
            "(target has 8 accumulators per PIM unit)");
  EXPECT_EQ(validate(t, ".stream s channels=0\n  mac_sb bank=0 row=0 col=0 "
                        "count=1 reg=-1\n"),
            "stream 0 (s), instruction 0 (mac_sb): reg -1 is out of range "
            "(target has 8 accumulators per PIM unit)");
  // A loop stride: the last iteration.
  EXPECT_EQ(validate(t, ".stream s channels=0\n  loop r 9 {\n    rd_acc "
                        "count=1 data=act reg=r\n  }\n"),
            "stream 0 (s), instruction 1 (rd_acc): reg 8 is out of range "
            "(target has 8 accumulators per PIM unit)");
  // The channel index: the stream's ninth channel.
  EXPECT_EQ(validate(t, ".stream s channels=0-8\n  mv_sb count=1 reg=ch\n"),
            "stream 0 (s), instruction 0 (mv_sb): reg 8 is out of range "
            "(target has 8 accumulators per PIM unit)");
  // A parameter corner.
  EXPECT_EQ(validate(t, ".param g min=0 max=8\n.stream s channels=0\n  "
                        "mac_pb bank=0 row=0 col=0 count=1 reg=g\n"),
            "stream 0 (s), instruction 0 (mac_pb): reg 8 is out of range "
            "(target has 8 accumulators per PIM unit) (at g=8)");
  EXPECT_EQ(validate(t, ".stream s channels=0\n  loop r 8 {\n    mac_ab "
                        "row=r col=0 count=1 reg=r\n  }\n  mv_sb count=8 "
                        "reg=7\n"),
            "<success>");
  // gddr6-aim: one MAC register per bank.
  Target aim = loadShipped("gddr6-aim.json");
  EXPECT_EQ(aim.pim.accumulators, 1);
  h = header(aim) + ".region act kind=activations channels=0-1 banks=0-15 "
                    "rows=0 bytes=4096\n";
  EXPECT_EQ(validate(aim, ".stream s channels=0\n  mac_ab row=0 col=0 count=1 "
                          "reg=1\n"),
            "stream 0 (s), instruction 0 (mac_ab): reg 1 is out of range "
            "(target has 1 accumulators per PIM unit)");
  EXPECT_EQ(validate(aim, ".stream s channels=0\n  mac_ab row=0 col=0 count=1 "
                          "reg=0\n"),
            "<success>");
}

//===----------------------------------------------------------------------===//
// Functional
//===----------------------------------------------------------------------===//

// GEMV y = W x with 8 output rows per bank, W [512 x 512] fp16, on one
// hbm3-pim channel ("lanes"), from ONE wr_gb broadcast of x. Placement:
// output n in flat bank n % 64, register and DRAM row r = n / 64 (512
// elements = one 1 KB row: element k in column k / 16, lane k % 16). The
// MACs interleave the registers (column block c of every row r, then the
// next block), then rd_acc reg=r reads the 64 outputs of register r.
TEST(AccumulatorTest, GemvEightRowsPerBankHbm3PimMatchesReferenceBitForBit) {
  Target t = loadShipped("hbm3-pim.json");
  ASSERT_EQ(t.pim.reduction, "lanes");
  ASSERT_EQ(t.pim.accumulators, 8);
  const int R = 8, banks = 64, N = R * banks, K = 512;
  std::string text = header(t) + R"(
.region w kind=weights channels=0 banks=0-63 rows=0-7 bytes=524288
.region x kind=activations channels=0 banks=0-63 rows=100 bytes=1024
.region y kind=activations channels=0 banks=0-63 rows=101 bytes=2048
.stream gemv channels=0
  wr_gb offset=0 bytes=1024 data=x
  barrier
  loop c 4 {
    loop r 8 {
      mac_ab row=r col=8*c count=8 reg=r
    }
  }
  barrier
  loop r 8 {
    rd_acc count=8 data=y+256*r reg=r
  }
.entry decode = gemv
)";
  Program program = assemble(text);
  std::mt19937 rng(808);
  std::vector<uint16_t> W = randomHalves(N * K, false, rng);
  std::vector<uint16_t> x = randomHalves(K, false, rng);

  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  writeGemvWeights(sim, W, N, K, banks, /*perChannel=*/N, /*chunk=*/K);
  ASSERT_FALSE(bool(sim.writeRegion("x", 0, bytesOf(x))));

  // Reference: per-lane fp32 accumulation in k order, then the tree.
  std::vector<float> ref = refGemvLanes(W.data(), x.data(), N, K, false);

  auto first = sim.run("decode");
  ASSERT_TRUE(bool(first)) << toString(first.takeError());
  auto y = sim.readRegion("y", 0, 4 * N);
  ASSERT_TRUE(bool(y));
  ASSERT_TRUE(sameBits(floatsOf(*y), ref, "y"));

  // rd_acc cleared every register it read: a second run gives the same.
  ASSERT_FALSE(bool(sim.writeRegion("y", 0, std::vector<uint8_t>(4 * N))));
  auto second = sim.run("decode");
  ASSERT_TRUE(bool(second));
  EXPECT_EQ(second->pim.cycles, first->pim.cycles);
  EXPECT_EQ(statsText(*second, t), statsText(*first, t));
  EXPECT_EQ(*sim.readRegion("y", 0, 4 * N), *y);
  expectSameTimingWithoutRegisters(t, program, *first);
}

// The same with the adder-tree reduction: gddr6-aim with 4 accumulators per
// unit (the shipped file has 1), bf16, channels 0-1, K = 1024 (the whole
// 2 KB global buffer). Output n: channel n / 64, m = n % 64 in flat bank
// m % 16, register and DRAM row m / 16.
TEST(AccumulatorTest, GemvFourRowsPerBankTreeMatchesReferenceBitForBit) {
  Target t = loadShipped("gddr6-aim.json");
  ASSERT_EQ(t.pim.reduction, "tree");
  t.pim.accumulators = 4;
  const int banks = 16, perChannel = 64, N = 128, K = 1024;
  std::string text = header(t) + R"(
.region w kind=weights channels=0-1 banks=0-15 rows=0-3 bytes=131072
.region x kind=activations channels=0-1 banks=0-15 rows=100 bytes=2048
.region y kind=activations channels=0-1 banks=0-15 rows=101 bytes=512
.stream gemv channels=0-1
  wr_gb offset=0 bytes=2048 data=x
  barrier
  loop r 4 {
    mac_ab row=r col=0 count=64 reg=r
  }
  barrier
  loop r 4 {
    rd_acc count=2 data=y+256*ch+64*r reg=r
  }
.entry decode = gemv
)";
  Program program = assemble(text);
  std::mt19937 rng(99);
  std::vector<uint16_t> W = randomHalves(N * K, true, rng);
  std::vector<uint16_t> x = randomHalves(K, true, rng);

  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  writeGemvWeights(sim, W, N, K, banks, perChannel, /*chunk=*/K);
  ASSERT_FALSE(bool(sim.writeRegion("x", 0, bytesOf(x))));

  std::vector<float> ref = refGemvTree(W.data(), x.data(), N, K, true);

  auto first = sim.run("decode");
  ASSERT_TRUE(bool(first)) << toString(first.takeError());
  auto y = sim.readRegion("y", 0, 4 * N);
  ASSERT_TRUE(bool(y));
  ASSERT_TRUE(sameBits(floatsOf(*y), ref, "y"));
  expectSameTimingWithoutRegisters(t, program, *first);
}

// One attention head per hbm3-pim channel (channels 0-1): T = 256 keys in
// 4 groups of 64, head dim 64, fp16. Key t: group g = t / 64 in register g
// and DRAM row 40 + g, flat bank t % 64, columns 0..3. One wr_gb of q feeds
// all four score GEMVs; `mv_sb count=8 reg=g` then moves group g's 64
// scores (units 0..63) into the softmax buffer, so it holds the scores in
// key order; sfm softmax over 256; mv_gb count=16 writes the probabilities
// (fp16) to global-buffer bytes 0..511; the context GEMV (V: output dim d
// in flat bank d, row 44, column c lane l = V[16 c + l][d]) reads them and
// rd_acc reads the 64 outputs.
TEST(AccumulatorTest, AttentionFourKeyGroupsHbm3PimMatchesReferenceBitForBit) {
  Target t = loadShipped("hbm3-pim.json");
  const int G = 4, T = 64 * G, D = 64, H = 2;
  std::string text = header(t) + R"(
.region kv kind=kv_cache channels=0-1 banks=0-63 rows=40-44 bytes=655360
.region q kind=activations channels=0-1 banks=0-63 rows=100 bytes=256
.region o kind=activations channels=0-1 banks=0-63 rows=101 bytes=512
.stream head channels=0-1
  set_model
  set_head value=ch
  wr_gb offset=0 bytes=128 data=q+128*ch
  barrier
  loop g 4 {
    mac_ab row=40+g col=0 count=4 reg=g
  }
  barrier
  loop g 4 {
    mv_sb bank=0 row=40 count=8 reg=g
  }
  barrier
  sfm length=256
  barrier
  mv_gb row=44 count=16
  barrier
  mac_ab row=44 col=0 count=16
  barrier
  rd_acc count=8 data=o+256*ch
.entry decode = head
)";
  Program program = assemble(text);
  std::mt19937 rng(31337);
  std::vector<uint16_t> Kc = randomHalves(H * T * D, false, rng);
  std::vector<uint16_t> V = randomHalves(H * T * D, false, rng); // [h][t][d]
  // magnitude 2^-6 .. 2^-2
  std::vector<uint16_t> q = randomHalves(H * D, false, rng, 9, /*expSpan=*/4);

  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  for (int h = 0; h < H; ++h)
    for (int tk = 0; tk < T; ++tk)
      for (int d = 0; d < D; d += 16)
        writeColumn(sim, h, tk % 64, 40 + tk / 64, d / 16,
                    ArrayRef(&Kc[(h * T + tk) * D + d], 16));
  writeValues(sim, V, H, T, D, 44);
  ASSERT_FALSE(bool(sim.writeRegion("q", 0, bytesOf(q))));

  std::vector<float> ref;
  for (int h = 0; h < H; ++h) {
    std::vector<float> s = refGemvLanes(&Kc[h * T * D], &q[h * D], T, D, false);
    std::vector<float> p = refSoftmax(s);
    int spread = 0;
    for (int i = 0; i < T; ++i) {
      p[i] = refRoundFp16(p[i]);
      spread += p[i] > 1e-4f && p[i] < 0.5f;
    }
    EXPECT_GE(spread, 16) << "head " << h;
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

  // mv_sb cleared registers 0..3 and rd_acc register 0: same again.
  auto second = sim.run("decode");
  ASSERT_TRUE(bool(second)) << toString(second.takeError());
  EXPECT_EQ(second->pim.cycles, first->pim.cycles);
  EXPECT_EQ(*sim.readRegion("o", 0, 4 * H * D), *o);
  expectSameTimingWithoutRegisters(t, program, *first);
}

// rd_acc / mv_sb clear only the register they read: register 1 keeps
// accumulating across runs while register 0 is read out each run.
TEST(AccumulatorTest, ReadoutClearsOnlyItsRegister) {
  Target t = loadShipped("hbm3-pim.json");
  std::string text = header(t) + R"(
.region w kind=weights channels=0 banks=0-63 rows=0 bytes=65536
.region x kind=activations channels=0 banks=0-63 rows=100 bytes=32
.region y kind=activations channels=0 banks=0-63 rows=101 bytes=512
.stream s channels=0
  wr_gb offset=0 bytes=32 data=x
  barrier
  mac_ab row=0 col=0 count=1 reg=0
  mac_ab row=0 col=0 count=1 reg=1
  barrier
  rd_acc count=8 data=y reg=0
.entry decode = s
.stream r channels=0
  rd_acc count=8 data=y+256 reg=1
.entry read1 = r
)";
  Program program = assemble(text);
  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(program)));
  // Every weight and input 1.0 (fp16 0x3c00): a MAC adds 16 per unit.
  std::vector<uint16_t> ones(16, 0x3c00);
  for (int b = 0; b < 64; ++b)
    writeColumn(sim, 0, b, 0, 0, ones);
  ASSERT_FALSE(bool(sim.writeRegion("x", 0, bytesOf(ones))));
  for (int run = 0; run < 3; ++run) {
    auto r = sim.run("decode");
    ASSERT_TRUE(bool(r)) << toString(r.takeError());
  }
  auto r = sim.run("read1");
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  std::vector<float> got = floatsOf(*sim.readRegion("y", 0, 512));
  for (int u = 0; u < 64; ++u) {
    EXPECT_EQ(got[u], 16.0f) << "reg 0, unit " << u;
    EXPECT_EQ(got[64 + u], 48.0f) << "reg 1, unit " << u;
  }
}

} // namespace
