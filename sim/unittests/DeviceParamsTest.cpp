//===- DeviceParamsTest.cpp - program format 2.3: device parameters -------===//
//
// A device parameter is set during the run by the kernels that list it
// (HostKernel::sets), from an int32 they leave in a region: the MoE router
// writes the expert it selected and the next phase's GEMV streams that
// expert's rows. Text and binary forms, validation (only after a barrier
// that follows a setting kernel), the run (functional: the value read, the
// range checked, derived parameters updated; timing: the timing value) and
// a GEMV whose row comes from the device, bit for bit against the same GEMV
// at a fixed row.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <random>

using namespace llvm;
using namespace pimsim;
using namespace pimsim::test;

namespace {

/// `route` selects an expert (the runner writes its index to `sel`); the
/// next phase's GEMV reads that expert's weights (DRAM row `e`) on channel
/// 0: y = W_e x. `after` sees the parameters the GEMV ran with.
const char *kRouted = R"(
.param pos min=0 max=9
.param e from=device timing=0 min=0 max=3
.param e2 src=e add=1 min=1 max=4
.region w kind=weights channels=0 banks=0-63 rows=0-3 bytes=262144
.region x kind=activations channels=0 banks=0-63 rows=100 bytes=1024
.region y kind=activations channels=0 banks=0-63 rows=101 bytes=256
.region sel kind=activations channels=0 banks=0-63 rows=102 bytes=64
.kernel route kind=other set=e@sel+8
.kernel after kind=other
.stream g channels=0
  wr_gb offset=0 bytes=1024 data=x
  barrier
  mac_ab row=e col=0 count=32
  barrier
  rd_acc count=8 data=y
.entry decode = route, barrier, g, after
)";

/// The same GEMV at a fixed row.
std::string fixedRow(int row) {
  return formatv(R"(
.region w kind=weights channels=0 banks=0-63 rows=0-3 bytes=262144
.region x kind=activations channels=0 banks=0-63 rows=100 bytes=1024
.region y kind=activations channels=0 banks=0-63 rows=101 bytes=256
.stream g channels=0
  wr_gb offset=0 bytes=1024 data=x
  barrier
  mac_ab row={0} col=0 count=32
  barrier
  rd_acc count=8 data=y
.entry decode = g
)",
                 row);
}

/// Expert r's 64 x 512 weights in DRAM row r of channel 0 (output n in
/// bank n, K in columns).
void writeExpert(Simulator &sim, const std::vector<uint16_t> &W, int row) {
  for (int n = 0; n < 64; ++n)
    for (int k = 0; k < 512; k += 16)
      writeColumn(sim, 0, n, row, k / 16, ArrayRef(&W[n * 512 + k], 16));
}

std::vector<uint8_t> int32Bytes(int32_t v) {
  std::vector<uint8_t> b(4);
  for (int i = 0; i < 4; ++i)
    b[i] = uint8_t(uint32_t(v) >> (8 * i));
  return b;
}

struct Experts {
  std::vector<std::vector<uint16_t>> W;
  std::vector<uint16_t> x;
  Experts() {
    std::mt19937 rng(11);
    for (int e = 0; e < 4; ++e)
      W.push_back(randomHalves(64 * 512, false, rng));
    x = randomHalves(512, false, rng);
  }
  void load(Simulator &sim) const {
    for (int e = 0; e < 4; ++e)
      writeExpert(sim, W[e], e);
    ASSERT_FALSE(bool(sim.writeRegion("x", 0, bytesOf(x))));
  }
};

} // namespace

TEST(DeviceParamsTest, TextAndBinaryRoundTrip) {
  Target t = loadShipped("hbm3-pim.json");
  Program p = assemble(header(t) + kRouted);
  ASSERT_EQ(p.params.size(), 3u);
  EXPECT_TRUE(p.params[1].device);
  EXPECT_EQ(p.params[1].timing, 0);
  EXPECT_FALSE(p.params[1].isInput());
  ASSERT_EQ(p.kernels[0].sets.size(), 1u);
  EXPECT_EQ(p.kernels[0].sets[0], (ParamSet{1, 3, 8}));
  std::string text = textOf(p);
  EXPECT_NE(text.find(".param e from=device timing=0 min=0 max=3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(".kernel route kind=other m=0 n=0 k=0 flops=0 bytes=0 "
                      "set=e@sel+8\n"),
            std::string::npos)
      << text;
  auto bytes = serializeProgram(p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto back = parseProgramBuffer(*bytes, "routed.pimb");
  ASSERT_TRUE(bool(back)) << toString(back.takeError());
  EXPECT_TRUE(*back == p);
  EXPECT_FALSE(bool(validateProgram(p, t)));
}

TEST(DeviceParamsTest, AssemblerErrors) {
  Target t = loadShipped("hbm3-pim.json");
  auto bad = [&](const std::string &body) {
    return errorOf(parseProgramText(header(t) + body, "bad.pimasm"));
  };
  EXPECT_NE(bad(".param e from=host min=0 max=3\n")
                .find("unknown parameter source 'host' (expected device)"),
            std::string::npos);
  EXPECT_NE(bad(".param e timing=1 min=0 max=3\n")
                .find("'timing' needs 'from=device'"),
            std::string::npos);
  EXPECT_NE(bad(".param p min=0 max=3\n.param e from=device src=p min=0 "
                "max=3\n")
                .find("a device parameter has no 'src'"),
            std::string::npos);
  const std::string region =
      ".region sel kind=activations channels=0 banks=0-63 rows=102 "
      "bytes=64\n";
  EXPECT_NE(bad(".param e from=device min=0 max=3\n" + region +
                ".kernel k kind=other set=e\n")
                .find("expected set=PARAM@REGION+OFFSET, found 'e'"),
            std::string::npos);
  EXPECT_NE(bad(".param e from=device min=0 max=3\n" + region +
                ".kernel k kind=other set=f@sel+0\n")
                .find("unknown parameter 'f'"),
            std::string::npos);
  EXPECT_NE(bad(".param e from=device min=0 max=3\n" + region +
                ".kernel k kind=other set=e@act+0\n")
                .find("unknown region 'act'"),
            std::string::npos);
}

TEST(DeviceParamsTest, ValidationErrors) {
  Target t = loadShipped("hbm3-pim.json");
  auto problems = [&](Program p) { return errorOf(validateProgram(p, t)); };
  Program p = assemble(header(t) + kRouted);
  {
    // The GEMV in the phase whose kernel sets its row: already expanded.
    Program q = p;
    q.entries[0].steps = {q.entries[0].steps[0], q.entries[0].steps[2]};
    EXPECT_NE(problems(q).find("entry 'decode', step 1 (stream g): uses device "
                               "parameter 'e' before a kernel has set it in an "
                               "earlier phase"),
              std::string::npos)
        << problems(q);
  }
  {
    Program q = p;
    q.kernels[0].sets.clear();
    EXPECT_NE(problems(q).find("parameter 1 (e): a device parameter that no "
                               "kernel sets"),
              std::string::npos)
        << problems(q);
  }
  {
    Program q = p;
    q.kernels[0].sets[0].param = 0; // pos is an input
    EXPECT_NE(problems(q).find("kernel 0 (route), set 0: parameter 'pos' is "
                               "not a device parameter"),
              std::string::npos)
        << problems(q);
  }
  {
    Program q = p;
    q.kernels[0].sets[0].offset = 62; // the int32 must fit, aligned
    EXPECT_NE(problems(q).find("offset 62 is not a 4-byte aligned int32 "
                               "inside region 'sel' (64 bytes)"),
              std::string::npos)
        << problems(q);
  }
  {
    Program q = p;
    q.params[1].timing = 7;
    EXPECT_NE(problems(q).find("parameter 1 (e): timing value 7 is outside "
                               "[0, 3]"),
              std::string::npos)
        << problems(q);
  }
}

TEST(DeviceParamsTest, ResolveGivesTimingValuesAndRefusesInputs) {
  Target t = loadShipped("hbm3-pim.json");
  Program p = assemble(header(t) + kRouted);
  p.params[1].timing = 2;
  auto v = resolveParams(p, {{"pos", 4}});
  ASSERT_TRUE(bool(v)) << toString(v.takeError());
  EXPECT_EQ(*v, (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(errorOf(resolveParams(p, {{"pos", 4}, {"e", 1}})),
            "parameter 'e' is set by the device during the run, not an input");
  std::vector<int64_t> values = *v;
  values[1] = 0;
  updateDerivedParams(p, values);
  EXPECT_EQ(values, (std::vector<int64_t>{4, 0, 1}));
}

TEST(DeviceParamsTest, GemvReadsTheExpertTheKernelSelected) {
  Target t = loadShipped("hbm3-pim.json");
  Experts ex;
  for (int32_t chosen : {2, 3, 0}) {
    Simulator sim(t, SimMode::Functional);
    ASSERT_FALSE(bool(sim.loadProgram(assemble(header(t) + kRouted))));
    ex.load(sim);
    std::vector<std::vector<int64_t>> seen;
    HostKernelRunner runner = [&](int64_t, const HostKernel &k,
                                  ArrayRef<int64_t> params) -> Error {
      seen.push_back(params.vec());
      if (k.name == "route")
        return sim.writeRegion("sel", 8, int32Bytes(chosen));
      return Error::success();
    };
    auto r = sim.run("decode", {{"pos", 5}}, runner);
    ASSERT_TRUE(bool(r)) << toString(r.takeError());
    // route ran with the timing value; after, with the chosen expert (and
    // the parameter derived from it).
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0], (std::vector<int64_t>{5, 0, 1}));
    EXPECT_EQ(seen[1], (std::vector<int64_t>{5, chosen, chosen + 1}));
    std::vector<float> y = floatsOf(*sim.readRegion("y", 0, 256));

    Simulator ref(t, SimMode::Functional);
    ASSERT_FALSE(bool(ref.loadProgram(assemble(header(t) + fixedRow(chosen)))));
    ex.load(ref);
    ASSERT_TRUE(bool(ref.run("decode")));
    std::vector<float> want = floatsOf(*ref.readRegion("y", 0, 256));
    for (int n = 0; n < 64; ++n)
      ASSERT_EQ(bitsOf(y[n]), bitsOf(want[n]))
          << "expert " << chosen << " " << n;
  }
}

TEST(DeviceParamsTest, AValueOutsideTheRangeIsARunError) {
  Target t = loadShipped("hbm3-pim.json");
  Simulator sim(t, SimMode::Functional);
  ASSERT_FALSE(bool(sim.loadProgram(assemble(header(t) + kRouted))));
  HostKernelRunner runner = [&](int64_t, const HostKernel &k,
                                ArrayRef<int64_t>) -> Error {
    if (k.name == "route")
      return sim.writeRegion("sel", 8, int32Bytes(-1));
    return Error::success();
  };
  EXPECT_EQ(errorOf(sim.run("decode", {{"pos", 0}}, runner)),
            "host kernel 'route' sets parameter 'e' to -1, outside [0, 3] "
            "(read from region 'sel' at 8)");
}

TEST(DeviceParamsTest, TimingModeKeepsTheTimingValue) {
  Target t = loadShipped("hbm3-pim.json");
  Program p = assemble(header(t) + kRouted);
  p.params[1].timing = 3;
  Simulator sim(t, SimMode::Timing);
  ASSERT_FALSE(bool(sim.loadProgram(p)));
  std::vector<std::vector<int64_t>> seen;
  auto r = sim.run(
      "decode", {{"pos", 1}},
      [&](int64_t, const HostKernel &, ArrayRef<int64_t> params) -> Error {
        seen.push_back(params.vec());
        return Error::success();
      });
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], (std::vector<int64_t>{1, 3, 4}));
  EXPECT_GT(r->pim.cycles, 0);
}
