//===- SerializeTest.cpp - pim.program -> pimsim::Program -----------------===//
//
// Serialization builds the program directly from the pim dialect: each
// #pim.index field becomes pimsim's base plus strides, symbols become
// indices, and the result is a valid program that prints and re-assembles
// to itself.
//
//===----------------------------------------------------------------------===//
#include "pimc/Backend/Backend.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"
#include "pimsim/HostOp.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace pimc;

namespace {

pimsim::Target hbm3() {
  auto buf = llvm::MemoryBuffer::getFile(PIMC_TARGETS_DIR "/hbm3-pim.json");
  EXPECT_TRUE(bool(buf));
  auto t = pimsim::parseTarget((*buf)->getBuffer(), "hbm3-pim.json");
  EXPECT_TRUE(bool(t)) << llvm::toString(t.takeError());
  return std::move(*t);
}

constexpr const char *kProgram = R"mlir(
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0"} {
  pim.param @pos {min = 0 : i64, max = 2047 : i64}
  pim.param @kv_len {src = @pos, add = 1 : i64, min = 1 : i64, max = 2048 : i64}
  pim.param @kv_rows {src = @kv_len, add = 63 : i64, div = 64 : i64, min = 1 : i64, max = 32 : i64}
  pim.region @weights {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 4, 4>, bytes = 1048576 : i64}
  pim.region @act {kind = "activations", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 8, 1>, bytes = 4096 : i64}
  pim.weight "w" {region = @weights, format = "fp16", shape = array<i64: 512, 1024>, layout = #pim.gemv_rows<n0 = 0, ch0 = 0, nch = 4, row0 = 4, k_rows = 2, k0 = 0, k_len = 1024>, rows = array<i64: 4, 4>, bytes = 1048576 : i64}
  pim.kernel @norm attributes {kind = "rmsnorm", flops = 10 : i64, bytes = 10 : i64, unit = "vector", elements = 8 : i64} {
    pim.host_op "rms_norm" {in = {off = 0 : i64, n = 8 : i64, fmt = "f32"}, out = {off = 64 : i64, n = 8 : i64, fmt = "f32"}, weight = {tensor = "n", shape = [8]}, eps = 1.0e-5 : f64}
  }
  pim.stream @gemv attributes {channels = array<i64: 0, 4>} {
    pim.macro "wr_gb" {offset = 0 : i64, bytes = 1024 : i64, data = #pim.data<@act, 0 : i64>}
    pim.macro "barrier" {}
    pim.loop 2 : i64 {
      pim.macro "mac_ab" {row = #pim.index<(d0, d1) -> (4 + 2 * d1), []>, col = 0 : i64, count = 32 : i64, offset = 0 : i64}
      pim.macro "rd_acc" {count = 8 : i64, data = #pim.data<@act, #pim.index<(d0, d1) -> (1024 + 256 * d0 + 1024 * d1), []>>}
    }
    pim.loop #pim.index<()[s0] -> (s0), [@kv_rows]> {
      pim.macro "mv_sb" {bank = 0 : i64, count = 8 : i64}
    }
    pim.macro "sfm" {length = #pim.index<()[s0] -> (s0), [@kv_len]>, fn = "exp"}
  }
  pim.entry @decode [@norm, "barrier", @gemv]
}
)mlir";

struct SerializeTest : ::testing::Test {
  SerializeTest() { context.loadDialect<pim::PIMDialect>(); }

  pimsim::Program serialize(const char *text) {
    module = parseSourceString<ModuleOp>(text, &context);
    if (!module) {
      ADD_FAILURE() << "the test program does not parse";
      return {};
    }
    pim::ProgramOp program;
    module->walk([&](pim::ProgramOp p) { program = p; });
    auto p = backend::serialize(program, target);
    if (!p) {
      ADD_FAILURE() << llvm::toString(p.takeError());
      return {};
    }
    return std::move(*p);
  }

  /// Why serializing `text` fails, or nothing when it succeeds (or does not
  /// parse: a test failure of its own).
  std::optional<std::string> serializeError(StringRef text) {
    module = parseSourceString<ModuleOp>(text, &context);
    if (!module) {
      ADD_FAILURE() << "the test program does not parse";
      return std::nullopt;
    }
    pim::ProgramOp program;
    module->walk([&](pim::ProgramOp p) { program = p; });
    auto p = backend::serialize(program, target);
    if (p)
      return std::nullopt;
    return llvm::toString(p.takeError());
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  pimsim::Target target = hbm3();
};

TEST_F(SerializeTest, FieldsBecomeBasesAndStrides) {
  pimsim::Program p = serialize(kProgram);
  ASSERT_EQ(p.params.size(), 3u);
  EXPECT_EQ(p.params[2].src, 1);
  EXPECT_EQ(p.params[2].div, 64);
  ASSERT_EQ(p.streams.size(), 1u);
  const auto &body = p.streams[0].body;
  ASSERT_EQ(body.size(), 5u);
  EXPECT_EQ(body[0].dataRegion, 1); // @act
  const pimsim::Instruction &loop = body[2];
  ASSERT_EQ(loop.body.size(), 2u);
  // row = 4 + 2 * d1: d1 is loop depth 0.
  const pimsim::Instruction &mac = loop.body[0];
  EXPECT_EQ(mac.row, 4);
  EXPECT_EQ(mac.at(pimsim::Field::Row, {1}), 6);
  // data = act + 1024 + 256 * ch + 1024 * i.
  const pimsim::Instruction &rd = loop.body[1];
  EXPECT_EQ(rd.dataRegion, 1);
  EXPECT_EQ(rd.dataOffset, 1024);
  EXPECT_EQ(rd.at(pimsim::Field::Data, {1}, /*channelIndex=*/2),
            1024 + 512 + 1024);
  // The loop count and sfm length follow parameters.
  const pimsim::Instruction &byParam = body[3];
  EXPECT_EQ(byParam.at(pimsim::Field::Count, {}, 0, {100, 101, 2}), 2);
  EXPECT_EQ(body[4].at(pimsim::Field::Length, {}, 0, {100, 101, 2}), 101);
  EXPECT_EQ(body[4].fn, pimsim::Function::Exp);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].unit, "vector");
  EXPECT_EQ(p.kernels[0].elements, 8);
  ASSERT_EQ(p.entries.size(), 1u);
  ASSERT_EQ(p.entries[0].steps.size(), 3u);
  EXPECT_EQ(p.entries[0].steps[0].kind, pimsim::StepKind::Kernel);
  EXPECT_EQ(p.entries[0].steps[1].kind, pimsim::StepKind::Barrier);
  EXPECT_EQ(p.entries[0].steps[2].kind, pimsim::StepKind::Stream);
}

/// (2.3) A router kernel sets the device parameter @e0 from the int32 at
/// byte 8 of act; the next phase's MAC reads expert e0's rows.
constexpr const char *kRouted = R"mlir(
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0"} {
  pim.param @pos {min = 0 : i64, max = 2047 : i64}
  pim.param @e0 {device, timing = 1 : i64, min = 0 : i64, max = 3 : i64}
  pim.region @weights {kind = "weights", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 0, 8>, bytes = 2097152 : i64}
  pim.region @act {kind = "activations", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 8, 1>, bytes = 4096 : i64}
  pim.kernel @route attributes {kind = "other", flops = 0 : i64, bytes = 0 : i64, sets = [{param = @e0, data = #pim.data<@act, 8 : i64>}]} {
    pim.host_op "moe_route" {in = {off = 0 : i64, n = 4 : i64, fmt = "f32"}, out = {off = 64 : i64, n = 1 : i64, fmt = "f32"}, experts = {off = 8 : i64, n = 1 : i64, fmt = "i32"}, top_k = 1 : i64}
  }
  pim.stream @expert attributes {channels = array<i64: 0, 4>} {
    pim.macro "mac_ab" {row = #pim.index<()[s0] -> (s0 * 2), [@e0]>, col = 0 : i64, count = 32 : i64}
  }
  pim.entry @decode [@route, "barrier", @expert]
}
)mlir";

TEST_F(SerializeTest, DeviceParametersAndTheKernelsThatSetThem) {
  pimsim::Program p = serialize(kRouted);
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_TRUE(p.params[1].device);
  EXPECT_EQ(p.params[1].timing, 1);
  ASSERT_EQ(p.kernels.size(), 1u);
  ASSERT_EQ(p.kernels[0].sets.size(), 1u);
  EXPECT_EQ(p.kernels[0].sets[0], (pimsim::ParamSet{1, 1, 8}));
  EXPECT_EQ(p.kernels[0].ops[0].kind, pimsim::HostOpKind::MoeRoute);
  EXPECT_EQ(p.streams[0].body[0].at(pimsim::Field::Row, {}, 0, {0, 3}), 6);
  EXPECT_FALSE(bool(pimsim::validateProgram(p, target)));

  // The verifier: a device parameter is not derived; a set names its param
  // and an aligned int32.
  std::string bad = kRouted;
  bad.replace(bad.find("timing = 1"), 10, "timing = 9");
  EXPECT_FALSE(parseSourceString<ModuleOp>(bad, &context));
  bad = kRouted;
  bad.replace(bad.find("#pim.data<@act, 8 : i64>"), 24,
              "#pim.data<@act, 6 : i64>");
  EXPECT_FALSE(parseSourceString<ModuleOp>(bad, &context));
}

TEST_F(SerializeTest, GemvRowsLayoutIsTyped) {
  pimsim::Program p = serialize(kProgram);
  ASSERT_EQ(p.weights.size(), 1u);
  const pimsim::WeightBinding &w = p.weights[0];
  EXPECT_EQ(w.layout, "gemv_rows");
  ASSERT_TRUE(w.gemvRows.has_value());
  EXPECT_EQ(w.gemvRows->nch, 4);
  EXPECT_EQ(w.gemvRows->row0, 4);
  EXPECT_EQ(w.gemvRows->kRows, 2);
  EXPECT_EQ(w.gemvRows->k0, 0);
  EXPECT_EQ(w.gemvRows->kLen, 1024);
  EXPECT_EQ(w.gemvRows->source, pimsim::GemvRows::Source::Dense);
}

TEST_F(SerializeTest, PrintsAndReassemblesToItself) {
  pimsim::Program p = serialize(kProgram);
  std::string text;
  llvm::raw_string_ostream os(text);
  pimsim::printProgram(p, os);
  auto again = pimsim::parseProgramText(text, "<printed>");
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError()) << "\n" << text;
  EXPECT_EQ(*again, p) << text;
}

/// kProgram with `attrs` added to the stream's attributes.
std::string withStreamAttrs(StringRef attrs) {
  std::string text = kProgram;
  std::string at = "pim.stream @gemv attributes {channels = array<i64: 0, 4>";
  text.insert(text.find(at) + at.size(), (", " + attrs).str());
  return text;
}

// (2.1) pim-select-kernels' choice on the stream: a library kernel is
// recorded by name, the generated lowering not at all.
TEST_F(SerializeTest, StreamRecordsItsLibraryKernel) {
  std::string lib = withStreamAttrs("pim.kernel = \"library:gemv_fit\"");
  pimsim::Program p = serialize(lib.c_str());
  ASSERT_EQ(p.streams.size(), 1u);
  EXPECT_EQ(p.streams[0].info.kernel, "gemv_fit");
  std::string gen = withStreamAttrs("pim.kernel = \"generated\"");
  p = serialize(gen.c_str());
  ASSERT_EQ(p.streams.size(), 1u);
  EXPECT_EQ(p.streams[0].info.kernel, "");
  EXPECT_TRUE(p.streams[0].info.empty());

  for (auto [attrs, message] :
       {std::pair<StringRef, StringRef>{
            "pim.kernel = \"gemv_fit\"",
            "pim.kernel is 'gemv_fit', expected \"generated\" or "
            "\"library:<name>\""},
        {"pim.kernel = \"library:\"",
         "pim.kernel is 'library:', expected \"generated\" or "
         "\"library:<name>\""},
        {"pim.kernel = 3 : i64", "pim.kernel is not a string"},
        {"pim.kernel = \"library:gemv fit\"",
         "kernel 'gemv fit' is not a name"}}) {
    std::optional<std::string> error = serializeError(withStreamAttrs(attrs));
    ASSERT_TRUE(error) << attrs.str();
    EXPECT_NE(error->find(message.str()), std::string::npos) << *error;
  }
}

TEST_F(SerializeTest, InvalidForTheTargetIsAnError) {
  // Row 100000 is past the end of an hbm3-pim bank.
  std::string text = kProgram;
  size_t at = text.find("(4 + 2 * d1)");
  text.replace(at, 12, "(100000 + d1)");
  std::optional<std::string> error = serializeError(text);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("row"), std::string::npos) << *error;
}

// Buffers placed by pim-plan-memory keep their references: serialization
// resolves `{buf = @b, off}` and `#pim.data<@b, off>` to bytes of act.
constexpr const char *kPlacedBuffers = R"mlir(
pim.program attributes {target = "hbm3-pim", target_hash = "sha256:0"} {
  pim.region @act {kind = "activations", channels = array<i64: 0, 4>, banks = array<i64: 0, 64>, rows = array<i64: 8, 1>, bytes = 4096 : i64}
  pim.buffer @a0 {bytes = 64 : i64, offset = 0 : i64}
  pim.buffer @a1 {bytes = 2048 : i64, offset = 1024 : i64}
  pim.kernel @add attributes {kind = "elementwise", flops = 4 : i64, bytes = 48 : i64} {
    pim.host_op "add" {a = {buf = @a0, off = 16 : i64, n = 4 : i64, fmt = "f32"}, b = {buf = @a1, off = 16 : i64, n = 4 : i64, fmt = "f32"}, out = {off = 128 : i64, n = 4 : i64, fmt = "f32"}}
  }
  pim.stream @s attributes {channels = array<i64: 0, 4>} {
    pim.macro "wr_gb" {offset = 0 : i64, bytes = 32 : i64, data = #pim.data<@a1, 64 : i64>}
    pim.macro "barrier" {}
    pim.macro "rd_acc" {count = 1 : i64, data = #pim.data<@a1, #pim.index<(d0) -> (256 * d0 + 32), []>>}
  }
  pim.entry @decode [@add, "barrier", @s]
}
)mlir";

TEST_F(SerializeTest, PlacedBuffersAreBytesOfAct) {
  pimsim::Program p = serialize(kPlacedBuffers);
  ASSERT_EQ(p.kernels.size(), 1u);
  ASSERT_EQ(p.kernels[0].ops.size(), 1u);
  std::vector<int64_t> offsets;
  pimsim::forEachHostBuffer(
      p.kernels[0].ops[0],
      [&](const pimsim::ActBuffer &b, bool) { offsets.push_back(b.offset); });
  EXPECT_EQ(offsets, (std::vector<int64_t>{16, 1040, 128}));
  const auto &body = p.streams[0].body;
  ASSERT_EQ(body.size(), 3u);
  EXPECT_EQ(body[0].dataRegion, 0); // @act
  EXPECT_EQ(body[0].dataOffset, 1024 + 64);
  EXPECT_EQ(body[2].at(pimsim::Field::Data, {}, /*channelIndex=*/3),
            1024 + 32 + 3 * 256);
}

TEST_F(SerializeTest, UnplacedBufferIsAnError) {
  std::string text = kPlacedBuffers;
  size_t at = text.find(", offset = 1024 : i64");
  text.erase(at, 21);
  std::optional<std::string> error = serializeError(text);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("buffer @a1 is not placed (run pim-plan-memory)"),
            std::string::npos)
      << *error;
}

} // namespace
