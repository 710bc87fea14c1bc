//===- NearMemoryTest.cpp - host kernels on near-memory units (1.2) -------===//
//
// Target `near_memory[].functions`, HostKernel::unit / elements in the text
// and binary forms, validation against the target's units, and the timing
// of a kernel on a unit (latency + ceil(elements / elements_per_cycle)
// memory cycles, reported as near-memory time, not host time).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "pimsim/program_generated.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace llvm;
using namespace pimsim;
using namespace pimsim::test;

namespace {

/// The error of loading `file` after `edit` changes near_memory[unit], or
/// "<loaded>".
std::string unitError(StringRef file, size_t unit,
                      function_ref<void(json::Object &)> edit) {
  auto buf = MemoryBuffer::getFile(targetPath(file));
  if (!buf)
    return "<unreadable>";
  auto v = json::parse((*buf)->getBuffer());
  if (!v)
    return toString(v.takeError());
  json::Array *units = v->getAsObject()->getArray("near_memory");
  if (!units || unit >= units->size())
    return "<no such unit>";
  edit(*(*units)[unit].getAsObject());
  auto t = parseTarget(formatv("{0:2}", *v).str(), "targets/x.json");
  if (t)
    return "<loaded>";
  return toString(t.takeError());
}

const NearMemoryUnit *findUnit(const Target &t, StringRef name) {
  for (const NearMemoryUnit &u : t.nearMemory)
    if (u.name == name)
      return &u;
  return nullptr;
}

const std::vector<std::string> kVectorFunctions = {
    "rms_norm", "layer_norm", "add",    "rope", "gated_act",    "pack",
    "v_stage",  "embedding",  "logits", "sum",  "attn_combine", "moe_route"};

/// A program with a near-memory kernel `norm` (4096 elements on `unit`), a
/// host kernel `gemm` and a stream `s` that calls `add` (on `unit` too).
std::string program(const Target &t, StringRef unit = "vector",
                    ProgramVersion version = kProgramVersion) {
  return header(t, version) +
         ".region x kind=activations channels=0-15 banks=0-63 "
         "rows=16380-16381 bytes=8192\n" +
         formatv(".kernel norm kind=rmsnorm m=1 n=4096 flops=12288 "
                 "bytes=16384 in=x[0:8192] unit={0} elements=4096\n"
                 ".kernel gemm kind=gemm m=1 n=64 k=64 flops=8192 bytes=8192\n"
                 ".kernel add kind=elementwise m=1 n=1000 unit={0} "
                 "elements=1000\n",
                 unit)
             .str() +
         ".stream s channels=0-1\n"
         "  mac_ab row=0 col=0 count=32\n"
         "  call add\n"
         "  mac_ab row=1 col=0 count=32\n"
         ".entry decode = norm, s\n"
         ".entry host = gemm, norm\n";
}

double unitSeconds(const Target &t, const NearMemoryUnit &u, int64_t elements) {
  double cycles = u.latencyCycles + std::ceil(elements / u.elementsPerCycle);
  return cycles * t.tCKps * 1e-12;
}

TEST(NearMemoryTarget, ShippedVectorUnits) {
  for (auto [file, epc] : {std::pair<StringRef, double>{"hbm3-pim.json", 64},
                           {"gddr6-aim.json", 32}}) {
    Target t = loadShipped(file);
    const NearMemoryUnit *u = findUnit(t, "vector");
    ASSERT_NE(u, nullptr) << file.str();
    EXPECT_EQ(u->placement, "controller");
    EXPECT_DOUBLE_EQ(u->elementsPerCycle, epc);
    EXPECT_EQ(u->latencyCycles, 200);
    EXPECT_EQ(u->functions, kVectorFunctions);
    const NearMemoryUnit *softmax = findUnit(t, "softmax");
    ASSERT_NE(softmax, nullptr);
    EXPECT_TRUE(softmax->functions.empty());
  }
  // gddr6-aim keeps its rmsnorm unit alongside.
  EXPECT_NE(findUnit(loadShipped("gddr6-aim.json"), "rmsnorm"), nullptr);
}

TEST(NearMemoryTarget, FunctionsValidation) {
  EXPECT_EQ(unitError("hbm3-pim.json", 0,
                      [](json::Object &u) {
                        u["functions"] = json::Array{"softmax"};
                      }),
            "<loaded>");
  EXPECT_EQ(unitError("hbm3-pim.json", 0,
                      [](json::Object &u) { u["functions"] = json::Array{}; }),
            "<loaded>");
  EXPECT_EQ(unitError("hbm3-pim.json", 1,
                      [](json::Object &u) { u["functions"] = "rms_norm"; }),
            "targets/x.json: near_memory[1].functions: expected an array, got "
            "a string");
  EXPECT_EQ(unitError("hbm3-pim.json", 1,
                      [](json::Object &u) {
                        u["functions"] = json::Array{"add", 3};
                      }),
            "targets/x.json: near_memory[1].functions[1]: expected a string, "
            "got a number");
  EXPECT_EQ(unitError("hbm3-pim.json", 1,
                      [](json::Object &u) {
                        u["functions"] = json::Array{"add", ""};
                      }),
            "targets/x.json: near_memory[1].functions[1]: empty function name");
  EXPECT_EQ(unitError("gddr6-aim.json", 2,
                      [](json::Object &u) {
                        u["functions"] = json::Array{"add", "rope", "add"};
                      }),
            "targets/x.json: near_memory[2].functions[2]: 'add' listed twice");
  EXPECT_NE(unitError("hbm3-pim.json", 1,
                      [](json::Object &u) { u["function"] = json::Array{}; })
                .find("near_memory[1].function: unknown key"),
            std::string::npos);
}

TEST(NearMemoryProgram, TextAndBinaryRoundTrip) {
  Target t = loadShipped("hbm3-pim.json");
  auto p = parseProgramText(program(t, "vector"), "nm.pimasm");
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  ASSERT_EQ(p->kernels.size(), 3u);
  EXPECT_EQ(p->kernels[0].unit, "vector");
  EXPECT_EQ(p->kernels[0].elements, 4096);
  EXPECT_TRUE(p->kernels[0].onNearMemory());
  EXPECT_EQ(p->kernels[1].unit, "");
  EXPECT_EQ(p->kernels[1].elements, 0);
  EXPECT_FALSE(p->kernels[1].onNearMemory());

  std::string text = textOf(*p);
  EXPECT_NE(text.find(".kernel norm kind=rmsnorm m=1 n=4096 k=0 flops=12288 "
                      "bytes=16384 in=x[0:8192] unit=vector elements=4096\n"),
            std::string::npos)
      << text;
  // Defaults are not printed.
  EXPECT_NE(text.find(".kernel gemm kind=gemm m=1 n=64 k=64 flops=8192 "
                      "bytes=8192\n"),
            std::string::npos)
      << text;
  auto again = parseProgramText(text, "again.pimasm");
  ASSERT_TRUE(bool(again)) << toString(again.takeError());
  EXPECT_TRUE(*again == *p);

  auto bytes = serializeProgram(*p);
  ASSERT_TRUE(bool(bytes)) << toString(bytes.takeError());
  auto read = parseProgramBuffer(*bytes, "nm.pimb");
  ASSERT_TRUE(bool(read)) << toString(read.takeError());
  EXPECT_EQ(read->version.major, kProgramVersion.major);
  EXPECT_EQ(read->version.minor, kProgramVersion.minor); // writers stamp it
  p->version = kProgramVersion;
  EXPECT_TRUE(*read == *p);
  auto bytes2 = serializeProgram(*read);
  ASSERT_TRUE(bool(bytes2));
  EXPECT_EQ(*bytes2, *bytes);

  // Differs from a program without the unit.
  Program q = *p;
  q.kernels[0].unit.clear();
  EXPECT_FALSE(q == *p);
}

TEST(NearMemoryProgram, Validation) {
  Target t = loadShipped("hbm3-pim.json");
  auto good = parseProgramText(program(t), "nm.pimasm");
  ASSERT_TRUE(bool(good)) << toString(good.takeError());
  EXPECT_EQ(errorOf(validateProgram(*good, t)), "<success>");

  auto bad = parseProgramText(program(t, "tensor_core"), "nm.pimasm");
  ASSERT_TRUE(bool(bad)) << toString(bad.takeError());
  std::string err = errorOf(validateProgram(*bad, t));
  EXPECT_NE(err.find("kernel 0 (norm): target 'hbm3-pim' has no near-memory "
                     "unit 'tensor_core'"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("kernel 2 (add): target 'hbm3-pim' has no near-memory "
                     "unit 'tensor_core'"),
            std::string::npos)
      << err;
  Simulator sim(t, SimMode::Timing);
  EXPECT_NE(errorOf(sim.loadProgram(*bad)).find("no near-memory unit"),
            std::string::npos);

  // Structure: a negative element count; a unit that is not an identifier.
  Program p = *good;
  p.kernels[0].elements = -1;
  EXPECT_NE(errorOf(checkProgram(p))
                .find("kernel 0 (norm): negative element count -1"),
            std::string::npos);
  p = *good;
  p.kernels[0].unit = "a b";
  EXPECT_NE(errorOf(checkProgram(p))
                .find("kernel 0 (norm): unit 'a b' is not an identifier"),
            std::string::npos);
  EXPECT_NE(
      errorOf(parseProgramText(header(t) + ".kernel k kind=other elements=x\n",
                               "t.pimasm"))
          .find("t.pimasm:4:"),
      std::string::npos);
}

TEST(NearMemoryTiming, UnitKernelIsNearMemoryTime) {
  Target t = loadShipped("hbm3-pim.json");
  const NearMemoryUnit *u = findUnit(t, "vector");
  ASSERT_NE(u, nullptr);
  auto p = parseProgramText(program(t), "nm.pimasm");
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  Simulator sim(t, SimMode::Timing);
  ASSERT_FALSE(bool(sim.loadProgram(*p)));

  std::vector<std::pair<int64_t, std::string>> calls;
  HostKernelRunner runner = [&](int64_t index, const HostKernel &k,
                                ArrayRef<int64_t>) -> Error {
    calls.push_back({index, k.unit});
    return Error::success();
  };
  auto r = sim.run("decode", {}, runner);
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  // The runner sees the call (add), then the kernel step (norm).
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], (std::pair<int64_t, std::string>{2, "vector"}));
  EXPECT_EQ(calls[1], (std::pair<int64_t, std::string>{0, "vector"}));

  double norm = unitSeconds(t, *u, 4096); // 200 + 64 cycles
  double add = unitSeconds(t, *u, 1000);  // 200 + ceil(15.625) = 216 cycles
  EXPECT_DOUBLE_EQ(norm, 264 * t.tCKps * 1e-12);
  EXPECT_DOUBLE_EQ(add, 216 * t.tCKps * 1e-12);
  ASSERT_EQ(r->phases.size(), 1u);
  const PhaseReport &ph = r->phases[0];
  EXPECT_EQ(ph.kernels, (std::vector<int64_t>{2, 0}));
  ASSERT_EQ(ph.kernelSeconds.size(), 2u);
  EXPECT_DOUBLE_EQ(ph.kernelSeconds[0], add);
  EXPECT_DOUBLE_EQ(ph.kernelSeconds[1], norm);
  EXPECT_EQ(ph.hostKernels, 0);
  EXPECT_EQ(ph.nearMemoryKernels, 2);
  EXPECT_DOUBLE_EQ(ph.hostSeconds, 0);
  EXPECT_DOUBLE_EQ(ph.nearMemorySeconds, add + norm);
  EXPECT_DOUBLE_EQ(r->hostSeconds, 0);
  EXPECT_DOUBLE_EQ(r->nearMemorySeconds, add + norm);
  // The call is on the streams' critical path; the kernel step overlaps.
  EXPECT_DOUBLE_EQ(r->seconds, std::max(ph.pimSeconds + add, norm));

  json::Value j = r->toJSON(t);
  const json::Object *o = j.getAsObject();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->getNumber("near_memory_seconds"), add + norm);
  EXPECT_EQ(o->getNumber("host_seconds"), 0.0);
  const json::Object *jp = (*o->getArray("phases"))[0].getAsObject();
  EXPECT_EQ(jp->getNumber("near_memory_seconds"), add + norm);
  EXPECT_EQ(jp->getInteger("near_memory_kernels"), 2);
  EXPECT_EQ(jp->getInteger("host_kernels"), 0);
}

TEST(NearMemoryTiming, ConcurrentWithHostSerialOnAUnit) {
  Target t = loadShipped("hbm3-pim.json");
  const NearMemoryUnit *u = findUnit(t, "vector");
  ASSERT_NE(u, nullptr);
  // Two kernels on `vector`, one on `softmax` (buffer die), one host kernel.
  std::string text = header(t) +
                     ".kernel a kind=rmsnorm unit=vector elements=6400\n"
                     ".kernel b kind=rope unit=vector elements=640\n"
                     ".kernel c kind=softmax unit=softmax elements=1600\n"
                     ".kernel h kind=gemm m=1 n=64 k=64 flops=8192 "
                     "bytes=8192\n"
                     ".entry nm = a, b, c\n"
                     ".entry mixed = a, h\n";
  auto p = parseProgramText(text, "nm.pimasm");
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  Simulator sim(t, SimMode::Timing);
  ASSERT_FALSE(bool(sim.loadProgram(*p)));
  int runs = 0;
  HostKernelRunner runner = [&](int64_t, const HostKernel &,
                                ArrayRef<int64_t>) -> Error {
    ++runs;
    return Error::success();
  };
  const NearMemoryUnit *sm = findUnit(t, "softmax");
  double a = unitSeconds(t, *u, 6400), b = unitSeconds(t, *u, 640),
         c = unitSeconds(t, *sm, 1600);
  auto r = sim.run("nm", {}, runner);
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  EXPECT_EQ(runs, 3);
  EXPECT_DOUBLE_EQ(r->nearMemorySeconds, a + b + c);
  EXPECT_DOUBLE_EQ(r->seconds, std::max(a + b, c)); // units concurrent
  EXPECT_DOUBLE_EQ(r->hostSeconds, 0);

  auto m = sim.run("mixed", {}, runner);
  ASSERT_TRUE(bool(m)) << toString(m.takeError());
  EXPECT_EQ(runs, 5);
  double h = t.host.launchNs * 1e-9 +
             std::max(8192 / t.host.flops, 8192 / t.host.bandwidthBytes);
  EXPECT_DOUBLE_EQ(m->hostSeconds, h);
  EXPECT_DOUBLE_EQ(m->nearMemorySeconds, a);
  EXPECT_EQ(m->phases[0].hostKernels, 1);
  EXPECT_EQ(m->phases[0].nearMemoryKernels, 1);
  EXPECT_DOUBLE_EQ(m->seconds, std::max(a, h)); // host || near memory
}

} // namespace
