//===- InterpreterTest.cpp - reference interpreter of llm IR --------------===//
//
// Every test parses a small hand-written module, binds it to a safetensors
// file written by the test, runs Interpreter::forward and compares the result
// with values computed by hand (exactly where the arithmetic is exact, within
// a tight tolerance where libm is involved). Activations come from weight
// tables through `llm.embedding %table, %tokens`: with tokens 0..R-1 the
// activation is the table itself.
//
//===----------------------------------------------------------------------===//

#include "pimc/Reference/Interpreter.h"

#include "pimc/Dialect/LLM/IR/LLMBuilders.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Checkpoint/Safetensors.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace mlir;
using namespace pimc;
using llvm::APFloat;
using pimc::ref::Interpreter;

namespace {

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

//===----------------------------------------------------------------------===//
// Checkpoint writing
//===----------------------------------------------------------------------===//

/// One checkpoint tensor: safetensors dtype, shape and raw little-endian bytes.
struct Weight {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Weight f32Weight(const std::string &name, std::vector<int64_t> shape,
                 const std::vector<float> &values) {
  EXPECT_EQ(numElements(shape), static_cast<int64_t>(values.size())) << name;
  Weight w{name, "F32", std::move(shape),
           std::string(values.size() * sizeof(float), '\0')};
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof(bits));
    llvm::support::endian::write32le(&w.bytes[4 * i], bits);
  }
  return w;
}

/// A weight stored as "F32", "F16" or "BF16". 16-bit values are encoded with
/// APFloat and must be exactly representable, so the expected results of a
/// test do not depend on how the interpreter widens them.
Weight weightAs(const std::string &dtype, const std::string &name,
                std::vector<int64_t> shape, const std::vector<float> &values) {
  if (dtype == "F32")
    return f32Weight(name, std::move(shape), values);
  EXPECT_TRUE(dtype == "F16" || dtype == "BF16") << dtype;
  const llvm::fltSemantics &sem =
      dtype == "F16" ? APFloat::IEEEhalf() : APFloat::BFloat();
  EXPECT_EQ(numElements(shape), static_cast<int64_t>(values.size())) << name;
  Weight w{name, dtype, std::move(shape), std::string(values.size() * 2, '\0')};
  for (size_t i = 0; i < values.size(); ++i) {
    APFloat v(values[i]);
    bool lost = false;
    v.convert(sem, APFloat::rmNearestTiesToEven, &lost);
    EXPECT_FALSE(lost) << name << "[" << i << "] = " << values[i]
                       << " is not exact in " << dtype;
    auto bits = static_cast<uint16_t>(v.bitcastToAPInt().getZExtValue());
    llvm::support::endian::write16le(&w.bytes[2 * i], bits);
  }
  return w;
}

/// A safetensors image: u64 LE header length, JSON header padded with
/// spaces to a multiple of 8, then the tensors (each 8-byte aligned).
std::string fileImage(const std::vector<Weight> &weights) {
  std::string header = "{", data;
  for (const Weight &w : weights) {
    while (data.size() % 8)
      data += '\0';
    size_t begin = data.size();
    data += w.bytes;
    if (header.size() > 1)
      header += ",";
    header += "\"" + w.name + "\":{\"dtype\":\"" + w.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < w.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(w.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(begin) + "," +
              std::to_string(data.size()) + "]}";
  }
  header += "}";
  while (header.size() % 8)
    header += ' ';
  char len[8];
  llvm::support::endian::write64le(len, header.size());
  return std::string(len, 8) + header + data;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

std::vector<float> iotaF(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i);
  return v;
}

/// `func.func @forward` whose body starts with `%x`, the f32 table "x" of
/// type tensor<`xShape`xf32> (2-D; run it with tokens 0..rows-1), then `body`,
/// and returns `%r` of type `resultType`.
std::string withInput(const std::string &xShape, const std::string &body,
                      const std::string &resultType) {
  std::string xt = "tensor<" + xShape + "xf32>";
  return "func.func @forward(%tokens: tensor<?xi64>, %offset: index) -> " +
         resultType + " {\n  %wx = llm.weight \"x\" : " + xt +
         "\n  %x = llm.embedding %wx, %tokens : (" + xt +
         ", tensor<?xi64>) -> " + xt + "\n  " + body +
         "\n  return %r : " + resultType + "\n}\n";
}

//===----------------------------------------------------------------------===//
// Result checks
//===----------------------------------------------------------------------===//

void expectExact(const std::vector<float> &actual,
                 const std::vector<float> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_EQ(actual[i], expected[i]) << "element " << i;
}

/// |actual - expected| <= tol * max(1, |expected|).
void expectNear(const std::vector<float> &actual,
                const std::vector<double> &expected, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i],
                tol * std::max(1.0, std::fabs(expected[i])))
        << "element " << i;
}

//===----------------------------------------------------------------------===//
// Fixture
//===----------------------------------------------------------------------===//

class InterpreterTest : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<llm::LLMDialect, func::FuncDialect, arith::ArithDialect,
                        tensor::TensorDialect>();
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("pimc-interp", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  /// Parses `ir`, writes `weights` to a fresh safetensors file and binds
  /// them. Module and store live as long as the fixture.
  llvm::Expected<std::unique_ptr<Interpreter>>
  create(const std::string &ir, const std::vector<Weight> &weights) {
    std::string diags;
    OwningOpRef<ModuleOp> module;
    {
      ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
        llvm::raw_string_ostream os(diags);
        os << d.getLocation() << ": " << d << "\n";
        return success();
      });
      module = parseSourceString<ModuleOp>(ir, &context);
    }
    if (!module)
      return llvm::createStringError("test IR does not parse:\n" + diags + ir);
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path,
                            "w" + std::to_string(files++) + ".safetensors");
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      if (ec)
        return llvm::errorCodeToError(ec);
      os << fileImage(weights);
    }
    auto store = ckpt::WeightStore::openFiles({std::string(path)});
    if (!store)
      return store.takeError();
    ModuleOp m = modules.emplace_back(std::move(module)).get();
    const ckpt::WeightStore &s = *stores.emplace_back(std::move(*store));
    return Interpreter::create(m, s);
  }

  /// create() that must succeed (nullptr and a test failure otherwise).
  std::unique_ptr<Interpreter> load(const std::string &ir,
                                    const std::vector<Weight> &weights) {
    auto interp = create(ir, weights);
    if (!interp) {
      ADD_FAILURE() << llvm::toString(interp.takeError());
      return nullptr;
    }
    return std::move(*interp);
  }

  /// The message of a create() that must fail.
  std::string createError(const std::string &ir,
                          const std::vector<Weight> &weights) {
    auto interp = create(ir, weights);
    if (interp) {
      ADD_FAILURE() << "create() unexpectedly succeeded";
      return "";
    }
    return llvm::toString(interp.takeError());
  }

  static std::vector<float> forward(Interpreter &interp,
                                    const std::vector<int64_t> &tokens,
                                    int64_t offset) {
    auto out = interp.forward(tokens, offset);
    if (!out) {
      ADD_FAILURE() << llvm::toString(out.takeError());
      return {};
    }
    return std::move(*out);
  }

  /// The message of a forward() that must fail.
  static std::string forwardError(Interpreter &interp,
                                  const std::vector<int64_t> &tokens,
                                  int64_t offset) {
    auto out = interp.forward(tokens, offset);
    if (out) {
      ADD_FAILURE() << "forward() unexpectedly succeeded";
      return "";
    }
    return llvm::toString(out.takeError());
  }

  /// One forward call on a fresh interpreter ({} and a failure on error).
  std::vector<float> run(const std::string &ir,
                         const std::vector<Weight> &weights,
                         const std::vector<int64_t> &tokens,
                         int64_t offset = 0) {
    auto interp = load(ir, weights);
    if (!interp)
      return {};
    return forward(*interp, tokens, offset);
  }

  /// The forward() error of a module that binds fine.
  std::string runError(const std::string &ir,
                       const std::vector<Weight> &weights,
                       const std::vector<int64_t> &tokens, int64_t offset = 0) {
    auto interp = load(ir, weights);
    if (!interp)
      return "";
    return forwardError(*interp, tokens, offset);
  }

  MLIRContext context;
  llvm::SmallString<128> dir;
  unsigned files = 0;
  std::vector<OwningOpRef<ModuleOp>> modules;
  std::vector<std::unique_ptr<ckpt::WeightStore>> stores;
};

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, BinaryElementwise) {
  const std::vector<float> a = {1.5f, -2.0f, 3.0f, 0.25f};
  const std::vector<float> b = {0.5f, 4.0f, -3.0f, -0.125f};
  struct Case {
    const char *op;
    std::vector<float> expected;
  };
  const Case cases[] = {
      {"add", {2.0f, 2.0f, 0.0f, 0.125f}},
      {"sub", {1.0f, -6.0f, 6.0f, 0.375f}},
      {"mul", {0.75f, -8.0f, -9.0f, -0.03125f}},
      {"div", {3.0f, -0.5f, -1.0f, -2.0f}},
      {"maximum", {1.5f, 4.0f, 3.0f, 0.25f}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.op);
    std::string ir =
        withInput("2x2",
                  "%wy = llm.weight \"y\" : tensor<2x2xf32>\n"
                  "  %y = llm.embedding %wy, %tokens : "
                  "(tensor<2x2xf32>, tensor<?xi64>) -> "
                  "tensor<2x2xf32>\n"
                  "  %r = llm." +
                      std::string(c.op) + " %x, %y : tensor<2x2xf32>",
                  "tensor<2x2xf32>");
    expectExact(run(ir, {f32Weight("x", {2, 2}, a), f32Weight("y", {2, 2}, b)},
                    iota(2)),
                c.expected);
  }
}

TEST_F(InterpreterTest, UnaryElementwise) {
  const std::vector<float> x = {-2.0f, -0.5f, 0.0f, 0.75f, 1.0f, 3.0f};
  auto map = [&](double (*f)(double)) {
    std::vector<double> out;
    for (float v : x)
      out.push_back(f(v));
    return out;
  };
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  struct Case {
    const char *op;
    std::vector<double> expected;
  };
  const double kSqrt2OverPi = std::sqrt(2.0 / std::acos(-1.0));
  const Case cases[] = {
      {"llm.neg %x", {2.0, 0.5, -0.0, -0.75, -1.0, -3.0}},
      {"llm.exp %x", map([](double v) { return std::exp(v); })},
      {"llm.tanh %x", map([](double v) { return std::tanh(v); })},
      {"llm.sigmoid %x", map(+sigmoid)},
      {"llm.silu %x", map([](double v) { return v / (1.0 + std::exp(-v)); })},
      {"llm.gelu %x", map([](double v) {
         return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
       })},
      {"llm.gelu %x {approximate = false}", map([](double v) {
         return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
       })},
      {"llm.gelu %x {approximate = true}", {}},
      {"llm.scale %x {factor = -2.5 : f32}",
       {5.0, 1.25, -0.0, -1.875, -2.5, -7.5}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.op);
    std::vector<double> expected = c.expected;
    if (expected.empty()) // the tanh form of GELU
      for (float v : x)
        expected.push_back(
            0.5 * v *
            (1.0 + std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v))));
    std::string ir =
        withInput("1x6", "%r = " + std::string(c.op) + " : tensor<1x6xf32>",
                  "tensor<1x6xf32>");
    expectNear(run(ir, {f32Weight("x", {1, 6}, x)}, iota(1)), expected, 2e-6);
  }
  // The two GELU forms differ by ~1e-4 here, far above the tolerance.
  EXPECT_GT(std::fabs(0.5 * (1.0 + std::erf(1.0 / std::sqrt(2.0))) -
                      0.5 * (1.0 + std::tanh(kSqrt2OverPi * 1.044715))),
            1e-4);

  // rsqrt on positive inputs; powers of four are exact.
  std::string ir = withInput("1x4", "%r = llm.rsqrt %x : tensor<1x4xf32>",
                             "tensor<1x4xf32>");
  std::vector<float> got =
      run(ir, {f32Weight("x", {1, 4}, {0.25f, 4.0f, 16.0f, 2.0f})}, iota(1));
  expectNear(got, {2.0, 0.5, 0.25, 1.0 / std::sqrt(2.0)}, 1e-6);
  if (got.size() == 4) {
    EXPECT_EQ(got[0], 2.0f);
    EXPECT_EQ(got[1], 0.5f);
    EXPECT_EQ(got[2], 0.25f);
  }
  // sigmoid(0) and silu(0) are exact.
  for (const char *op : {"llm.sigmoid", "llm.silu"}) {
    std::string ir0 =
        withInput("1x1", "%r = " + std::string(op) + " %x : tensor<1x1xf32>",
                  "tensor<1x1xf32>");
    expectExact(run(ir0, {f32Weight("x", {1, 1}, {0.0f})}, iota(1)),
                {std::string(op) == "llm.sigmoid" ? 0.5f : 0.0f});
  }
}

TEST_F(InterpreterTest, CastRoundsToNearestEven) {
  const float inf = std::numeric_limits<float>::infinity();
  // bf16 has 8 significand bits: ulp(1) = 2^-7.
  {
    std::vector<float> in = {
        0x1.01p+0f,       // 1 + 2^-8: tie, even neighbour is 1.0
        0x1.03p+0f,       // 1 + 3*2^-8: tie, even neighbour is 1 + 2^-6
        0x1.010002p+0f,   // just above the tie: rounds up
        -0x1.01p+0f,      // sign kept
        3.0f,             // exact
        0x1.fffffep+127f, // FLT_MAX overflows to inf
    };
    std::vector<float> expected = {1.0f,  0x1.04p+0f, 0x1.02p+0f,
                                   -1.0f, 3.0f,       inf};
    std::string ir =
        withInput("1x6",
                  "%b = llm.cast %x : tensor<1x6xf32> to tensor<1x6xbf16>\n"
                  "  %r = llm.cast %b : tensor<1x6xbf16> to tensor<1x6xf32>",
                  "tensor<1x6xf32>");
    SCOPED_TRACE("bf16");
    expectExact(run(ir, {f32Weight("x", {1, 6}, in)}, iota(1)), expected);
  }
  // f16 has 11 significand bits: ulp(1) = 2^-10; max 65504; min subnormal
  // 2^-24.
  {
    std::vector<float> in = {
        0x1.002p+0f, // 1 + 2^-11: tie, down to even 1.0
        0x1.006p+0f, // 1 + 3*2^-11: tie, up to even 1 + 2^-9
        65519.0f,    // below 65520: 65504
        65520.0f,    // the tie above 65504 goes to inf
        0x1p-24f,    // smallest subnormal, exact
        0x1.8p-24f,  // 1.5 subnormal ulps: tie, up to even 2^-23
        0x1p-26f,    // underflows to zero
        -2.5f,       // exact
    };
    std::vector<float> expected = {1.0f,     0x1.008p+0f, 65504.0f, inf,
                                   0x1p-24f, 0x1p-23f,    0.0f,     -2.5f};
    std::string ir = withInput("1x8",
                               "%r = llm.cast %x : tensor<1x8xf32> to "
                               "tensor<1x8xf16>",
                               "tensor<1x8xf16>");
    SCOPED_TRACE("f16");
    expectExact(run(ir, {f32Weight("x", {1, 8}, in)}, iota(1)), expected);
  }
}

//===----------------------------------------------------------------------===//
// Reductions, softmax, argmax
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, ReduceAxesAndKeepDim) {
  // [[1, 5, -2], [-4, -1, -3]]: the second row is all negative, so a max
  // starting from 0 would be caught.
  const std::vector<float> x = {1, 5, -2, -4, -1, -3};
  struct Case {
    const char *kind;
    int axis;
    bool keep;
    const char *type;
    std::vector<float> expected;
  };
  const Case cases[] = {
      {"sum", 0, false, "tensor<3xf32>", {-3, 4, -5}},
      {"sum", 1, false, "tensor<2xf32>", {4, -8}},
      {"sum", 0, true, "tensor<1x3xf32>", {-3, 4, -5}},
      {"sum", 1, true, "tensor<2x1xf32>", {4, -8}},
      {"max", 0, false, "tensor<3xf32>", {1, 5, -2}},
      {"max", 1, false, "tensor<2xf32>", {5, -1}},
      {"max", 0, true, "tensor<1x3xf32>", {1, 5, -2}},
      {"max", 1, true, "tensor<2x1xf32>", {5, -1}},
      {"mean", 0, false, "tensor<3xf32>", {-1.5f, 2.0f, -2.5f}},
      {"mean", 1, false, "tensor<2xf32>", {4.0f / 3.0f, -8.0f / 3.0f}},
      {"mean", 0, true, "tensor<1x3xf32>", {-1.5f, 2.0f, -2.5f}},
      {"mean", 1, true, "tensor<2x1xf32>", {4.0f / 3.0f, -8.0f / 3.0f}},
  };
  for (const Case &c : cases) {
    std::string attrs = "{axis = " + std::to_string(c.axis) +
                        (c.keep ? ", keep_dim = true}" : "}");
    std::string ir =
        withInput("2x3",
                  "%r = llm.reduce " + std::string(c.kind) + " %x " + attrs +
                      " : tensor<2x3xf32> -> " + c.type,
                  c.type);
    SCOPED_TRACE(ir);
    expectExact(run(ir, {f32Weight("x", {2, 3}, x)}, iota(2)), c.expected);
  }

  // The middle axis of a 3-D tensor: x[i][j][k] = 6i + 2j + k.
  std::string ir =
      withInput("4x3",
                "%x3 = llm.reshape %x : tensor<4x3xf32> -> tensor<2x3x2xf32>\n"
                "  %r = llm.reduce sum %x3 {axis = 1} : tensor<2x3x2xf32> -> "
                "tensor<2x2xf32>",
                "tensor<2x2xf32>");
  expectExact(run(ir, {f32Weight("x", {4, 3}, iotaF(12))}, iota(4)),
              {0 + 2 + 4, 1 + 3 + 5, 6 + 8 + 10, 7 + 9 + 11});
}

TEST_F(InterpreterTest, SoftmaxBothAxes) {
  // Large logits in row 0 overflow exp() unless the max is subtracted.
  const std::vector<float> x = {1000, 1001, 1002, -1, 0, 1};
  auto softmax = [](std::vector<double> v) {
    double mx = *std::max_element(v.begin(), v.end()), sum = 0;
    for (double &e : v)
      sum += (e = std::exp(e - mx));
    for (double &e : v)
      e /= sum;
    return v;
  };
  // Axis 1: rows.
  std::vector<double> r0 = softmax({1000, 1001, 1002}),
                      r1 = softmax({-1, 0, 1});
  std::vector<double> axis1 = {r0[0], r0[1], r0[2], r1[0], r1[1], r1[2]};
  // Axis 0: columns.
  std::vector<double> c0 = softmax({1000, -1}), c1 = softmax({1001, 0}),
                      c2 = softmax({1002, 1});
  std::vector<double> axis0 = {c0[0], c1[0], c2[0], c0[1], c1[1], c2[1]};
  for (int axis : {0, 1}) {
    SCOPED_TRACE(axis);
    std::string ir =
        withInput("2x3",
                  "%r = llm.softmax %x {axis = " + std::to_string(axis) +
                      "} : tensor<2x3xf32>",
                  "tensor<2x3xf32>");
    std::vector<float> got = run(ir, {f32Weight("x", {2, 3}, x)}, iota(2));
    expectNear(got, axis == 0 ? axis0 : axis1, 1e-6);
  }
}

TEST_F(InterpreterTest, ArgmaxTiesGoToLowestIndex) {
  const std::vector<float> x = {1,  3,  3, 2,  // tie between 1 and 2
                                5,  5,  5, 5,  // all equal
                                -1, -2, 0, 0,  // tie at the end
                                0,  1,  2, 7}; // unique, last
  std::string ir =
      withInput("4x4", "%r = llm.argmax %x : tensor<4x4xf32> -> tensor<4xi64>",
                "tensor<4xi64>");
  expectExact(run(ir, {f32Weight("x", {4, 4}, x)}, iota(4)), {1, 0, 2, 3});
}

//===----------------------------------------------------------------------===//
// Tensor ops
//===----------------------------------------------------------------------===//

/// The dynamic-batch input used by the reshape and slice tests: the table
/// "x" [3, 4] = 0..11 seen as tensor<?x4xf32>.
std::string dynamicInput(const std::string &body, const std::string &type) {
  return "func.func @forward(%tokens: tensor<?xi64>, %offset: index) -> " +
         type +
         " {\n"
         "  %wx = llm.weight \"x\" : tensor<3x4xf32>\n"
         "  %x = llm.embedding %wx, %tokens : (tensor<3x4xf32>, "
         "tensor<?xi64>) -> tensor<?x4xf32>\n  " +
         body + "\n  return %r : " + type + "\n}\n";
}

TEST_F(InterpreterTest, ReshapeInfersDynamicDim) {
  std::vector<Weight> w = {f32Weight("x", {3, 4}, iotaF(12))};
  // 12 elements into [?, 6]: ? = 2. The row sums show the inferred shape.
  expectExact(run(dynamicInput("%y = llm.reshape %x : tensor<?x4xf32> -> "
                               "tensor<?x6xf32>\n"
                               "  %r = llm.reduce sum %y {axis = 1} : "
                               "tensor<?x6xf32> -> tensor<?xf32>",
                               "tensor<?xf32>"),
                  w, iota(3)),
              {0 + 1 + 2 + 3 + 4 + 5, 6 + 7 + 8 + 9 + 10 + 11});
  // The dynamic dimension in second place: [2, ?] with ? = 6.
  expectExact(run(dynamicInput("%y = llm.reshape %x : tensor<?x4xf32> -> "
                               "tensor<2x?xf32>\n"
                               "  %r = llm.reduce sum %y {axis = 0} : "
                               "tensor<2x?xf32> -> tensor<?xf32>",
                               "tensor<?xf32>"),
                  w, iota(3)),
              {6, 8, 10, 12, 14, 16});
  // Two tokens: 8 elements into [?, 2, 2]: ? = 2, data unchanged.
  expectExact(run(dynamicInput("%r = llm.reshape %x : tensor<?x4xf32> -> "
                               "tensor<?x2x2xf32>",
                               "tensor<?x2x2xf32>"),
                  w, {2, 0}),
              {8, 9, 10, 11, 0, 1, 2, 3});
  // 12 elements do not fill rows of 8.
  std::string msg = runError(
      dynamicInput("%r = llm.reshape %x : tensor<?x4xf32> -> tensor<?x8xf32>",
                   "tensor<?x8xf32>"),
      w, iota(3));
  EXPECT_CONTAINS(msg, "llm.reshape");
  EXPECT_CONTAINS(msg, "cannot reshape 12 elements");
}

TEST_F(InterpreterTest, Transpose3D) {
  // x[i][j][k] = 12i + 4j + k, shape [2, 3, 4].
  std::vector<Weight> w = {f32Weight("x", {6, 4}, iotaF(24))};
  auto ir = [](const std::string &perm, const std::string &type) {
    return withInput("6x4",
                     "%x3 = llm.reshape %x : tensor<6x4xf32> -> "
                     "tensor<2x3x4xf32>\n"
                     "  %r = llm.transpose %x3 {permutation = array<i64: " +
                         perm + ">} : tensor<2x3x4xf32> -> " + type,
                     type);
  };
  // result[a][b][c] = x[b][c][a], shape [4, 2, 3].
  std::vector<float> expected;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c)
        expected.push_back(12 * b + 4 * c + a);
  expectExact(run(ir("2, 0, 1", "tensor<4x2x3xf32>"), w, iota(6)), expected);
  // result[a][b][c] = x[a][c][b], shape [2, 4, 3].
  expected.clear();
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 3; ++c)
        expected.push_back(12 * a + 4 * c + b);
  expectExact(run(ir("0, 2, 1", "tensor<2x4x3xf32>"), w, iota(6)), expected);
}

TEST_F(InterpreterTest, ConcatAlongBothAxes) {
  std::vector<Weight> w = {f32Weight("a", {2, 3}, {1, 2, 3, 4, 5, 6}),
                           f32Weight("b", {2, 2}, {7, 8, 9, 10}),
                           f32Weight("c", {2, 3}, {11, 12, 13, 14, 15, 16})};
  auto ir = [](const std::string &body, const std::string &type) {
    return "func.func @forward(%tokens: tensor<?xi64>, %offset: index) -> " +
           type +
           " {\n"
           "  %wa = llm.weight \"a\" : tensor<2x3xf32>\n"
           "  %wb = llm.weight \"b\" : tensor<2x2xf32>\n"
           "  %wc = llm.weight \"c\" : tensor<2x3xf32>\n"
           "  %a = llm.embedding %wa, %tokens : (tensor<2x3xf32>, "
           "tensor<?xi64>) -> tensor<2x3xf32>\n"
           "  %b = llm.embedding %wb, %tokens : (tensor<2x2xf32>, "
           "tensor<?xi64>) -> tensor<2x2xf32>\n"
           "  %c = llm.embedding %wc, %tokens : (tensor<2x3xf32>, "
           "tensor<?xi64>) -> tensor<2x3xf32>\n  " +
           body + "\n  return %r : " + type + "\n}\n";
  };
  expectExact(run(ir("%r = llm.concat %a, %b {axis = 1} : (tensor<2x3xf32>, "
                     "tensor<2x2xf32>) -> tensor<2x5xf32>",
                     "tensor<2x5xf32>"),
                  w, iota(2)),
              {1, 2, 3, 7, 8, 4, 5, 6, 9, 10});
  expectExact(
      run(ir("%c1 = llm.slice %c {axis = 0, start = -1, size = 1} : "
             "tensor<2x3xf32> -> tensor<1x3xf32>\n"
             "  %r = llm.concat %a, %c1, %a {axis = 0} : (tensor<2x3xf32>, "
             "tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>",
             "tensor<5x3xf32>"),
          w, iota(2)),
      {1, 2, 3, 4, 5, 6, 14, 15, 16, 1, 2, 3, 4, 5, 6});
}

TEST_F(InterpreterTest, SlicePositiveAndNegativeStart) {
  std::vector<Weight> w = {f32Weight("x", {3, 4}, iotaF(12))};
  struct Case {
    int axis, start, size;
    const char *type;
    std::vector<float> expected;
  };
  const Case cases[] = {
      {0, 1, 2, "tensor<2x4xf32>", {4, 5, 6, 7, 8, 9, 10, 11}},
      {0, -1, 1, "tensor<1x4xf32>", {8, 9, 10, 11}},
      {0, -3, 1, "tensor<1x4xf32>", {0, 1, 2, 3}},
      {1, 1, 2, "tensor<3x2xf32>", {1, 2, 5, 6, 9, 10}},
      {1, -2, 2, "tensor<3x2xf32>", {2, 3, 6, 7, 10, 11}},
      {1, 0, 1, "tensor<3x1xf32>", {0, 4, 8}},
  };
  for (const Case &c : cases) {
    std::string ir =
        withInput("3x4",
                  "%r = llm.slice %x {axis = " + std::to_string(c.axis) +
                      ", start = " + std::to_string(c.start) +
                      ", size = " + std::to_string(c.size) +
                      "} : tensor<3x4xf32> -> " + c.type,
                  c.type);
    SCOPED_TRACE(ir);
    expectExact(run(ir, w, iota(3)), c.expected);
  }
  // Along a dynamic dimension the range is checked at run time.
  for (const char *attrs : {"{axis = 0, start = 2, size = 2}",
                            "{axis = 0, start = -4, size = 2}"}) {
    SCOPED_TRACE(attrs);
    std::string msg =
        runError(dynamicInput("%r = llm.slice %x " + std::string(attrs) +
                                  " : tensor<?x4xf32> -> tensor<2x4xf32>",
                              "tensor<2x4xf32>"),
                 w, iota(3));
    EXPECT_CONTAINS(msg, "llm.slice");
    EXPECT_CONTAINS(msg, "out of range for size 3");
  }
  // The same slice succeeds when the dimension is large enough.
  expectExact(run(dynamicInput("%r = llm.slice %x {axis = 0, start = -4, "
                               "size = 2} : tensor<?x4xf32> -> "
                               "tensor<2x4xf32>",
                               "tensor<2x4xf32>"),
                  w, {0, 1, 2, 0}),
              {0, 1, 2, 3, 4, 5, 6, 7});
}

/// Gathers from x [3, 4] = 0..11 along `axis` with indices computed at run
/// time: row i of the one-hot table "i" [3, width] has its 1 at indices[i],
/// and argmax turns it into an i64 index tensor.
std::string gatherModule(int axis, int width, const std::string &type) {
  std::string it = "tensor<3x" + std::to_string(width) + "xf32>";
  return withInput("3x4",
                   "%wi = llm.weight \"i\" : " + it +
                       "\n"
                       "  %ie = llm.embedding %wi, %tokens : (" +
                       it + ", tensor<?xi64>) -> " + it +
                       "\n"
                       "  %idx = llm.argmax %ie : " +
                       it +
                       " -> tensor<3xi64>\n"
                       "  %r = llm.gather %x, %idx {axis = " +
                       std::to_string(axis) +
                       "} : (tensor<3x4xf32>, tensor<3xi64>) -> " + type,
                   type);
}

std::vector<Weight> gatherWeights(int width, std::vector<int> indices) {
  std::vector<float> oneHot(3 * width, 0.0f);
  for (int i = 0; i < 3; ++i)
    oneHot[i * width + indices[i]] = 1.0f;
  return {f32Weight("x", {3, 4}, iotaF(12)),
          f32Weight("i", {3, width}, oneHot)};
}

TEST_F(InterpreterTest, GatherAlongBothAxes) {
  // Rows 2, 0, 2.
  expectExact(run(gatherModule(0, 3, "tensor<3x4xf32>"),
                  gatherWeights(3, {2, 0, 2}), iota(3)),
              {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  // Columns 3, 0, 1.
  expectExact(run(gatherModule(1, 4, "tensor<3x3xf32>"),
                  gatherWeights(4, {3, 0, 1}), iota(3)),
              {3, 0, 1, 7, 4, 5, 11, 8, 9});
}

TEST_F(InterpreterTest, GatherIndexOutOfRange) {
  std::string msg = runError(gatherModule(0, 4, "tensor<3x4xf32>"),
                             gatherWeights(4, {0, 3, 1}), iota(3));
  EXPECT_CONTAINS(msg, "llm.gather");
  EXPECT_CONTAINS(msg, "index 3 out of range for size 3");
  msg = runError(gatherModule(1, 5, "tensor<3x3xf32>"),
                 gatherWeights(5, {1, 0, 4}), iota(3));
  EXPECT_CONTAINS(msg, "llm.gather");
  EXPECT_CONTAINS(msg, "index 4 out of range for size 4");
}

//===----------------------------------------------------------------------===//
// Model layers
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, LinearSmallExact) {
  // x [2, 3], W [2, 3] (N = 2, K = 3), b [2]; all exact in f16 and bf16.
  const std::vector<float> x = {1, -2, 0.5f, 3, 0.25f, -1};
  const std::vector<float> w = {0.5f, 1, -1.5f, 2, -0.25f, 4};
  const std::vector<float> b = {0.125f, -3};
  for (const char *dtype : {"F32", "F16", "BF16"}) {
    SCOPED_TRACE(dtype);
    std::string elem = dtype == std::string("F32")   ? "f32"
                       : dtype == std::string("F16") ? "f16"
                                                     : "bf16";
    std::string wt = "tensor<2x3x" + elem + ">", bt = "tensor<2x" + elem + ">";
    std::vector<Weight> weights = {f32Weight("x", {2, 3}, x),
                                   weightAs(dtype, "w", {2, 3}, w),
                                   weightAs(dtype, "b", {2}, b)};
    std::string pre = "%w = llm.weight \"w\" : " + wt +
                      "\n  %b = llm.weight \"b\" : " + bt + "\n  ";
    expectExact(run(withInput("2x3",
                              pre +
                                  "%r = llm.linear %x, %w : "
                                  "(tensor<2x3xf32>, " +
                                  wt + ") -> tensor<2x2xf32>",
                              "tensor<2x2xf32>"),
                    weights, iota(2)),
                {-2.25f, 4.5f, 3.25f, 1.9375f});
    expectExact(run(withInput("2x3",
                              pre +
                                  "%r = llm.linear %x, %w, %b : "
                                  "(tensor<2x3xf32>, " +
                                  wt + ", " + bt + ") -> tensor<2x2xf32>",
                              "tensor<2x2xf32>"),
                    weights, iota(2)),
                {-2.125f, 1.5f, 3.375f, -1.0625f});
    expectExact(run(withInput("2x3",
                              pre +
                                  "%r = llm.lm_head %x, %w : "
                                  "(tensor<2x3xf32>, " +
                                  wt + ") -> tensor<2x2xf32>",
                              "tensor<2x2xf32>"),
                    weights, iota(2)),
                {-2.25f, 4.5f, 3.25f, 1.9375f});
  }
}

TEST_F(InterpreterTest, LinearLargerShapesExact) {
  // K = 37 and N = 9 exercise the kernels' lanes and tails; T = 1 is the
  // decode path, T = 3 the tiled one. Multiples of 1/4 and 1/2 keep every
  // partial sum exact, so any summation order gives the same result.
  const int64_t K = 37, N = 9;
  std::vector<float> w(N * K), b(N), x(3 * K);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k)
      w[n * K + k] = static_cast<float>((n * 5 + k) % 9 - 4) * 0.25f;
    b[n] = static_cast<float>(n) - 4.5f;
  }
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t k = 0; k < K; ++k)
      x[t * K + k] = static_cast<float>((t * 7 + k * 3) % 11 - 5) * 0.5f;
  for (const char *dtype : {"F32", "F16", "BF16"}) {
    std::string elem = dtype == std::string("F32")   ? "f32"
                       : dtype == std::string("F16") ? "f16"
                                                     : "bf16";
    std::string wt = "tensor<9x37x" + elem + ">", bt = "tensor<9x" + elem + ">";
    std::string ir =
        "func.func @forward(%tokens: tensor<?xi64>, %offset: index) -> "
        "tensor<?x9xf32> {\n"
        "  %wx = llm.weight \"x\" : tensor<3x37xf32>\n"
        "  %x = llm.embedding %wx, %tokens : (tensor<3x37xf32>, "
        "tensor<?xi64>) -> tensor<?x37xf32>\n"
        "  %w = llm.weight \"w\" : " +
        wt + "\n  %b = llm.weight \"b\" : " + bt +
        "\n  %r = llm.linear %x, %w, %b : (tensor<?x37xf32>, " + wt + ", " +
        bt +
        ") -> tensor<?x9xf32>\n"
        "  return %r : tensor<?x9xf32>\n}\n";
    auto interp =
        load(ir, {f32Weight("x", {3, K}, x), weightAs(dtype, "w", {N, K}, w),
                  weightAs(dtype, "b", {N}, b)});
    ASSERT_TRUE(interp);
    for (std::vector<int64_t> tokens :
         {std::vector<int64_t>{1}, std::vector<int64_t>{0, 1, 2}}) {
      SCOPED_TRACE(std::string(dtype) + " T=" + std::to_string(tokens.size()));
      std::vector<float> expected;
      for (int64_t t : tokens)
        for (int64_t n = 0; n < N; ++n) {
          double acc = b[n];
          for (int64_t k = 0; k < K; ++k)
            acc += double(x[t * K + k]) * double(w[n * K + k]);
          expected.push_back(static_cast<float>(acc));
        }
      expectExact(forward(*interp, tokens, 0), expected);
    }
  }
}

TEST_F(InterpreterTest, RMSNormLlamaAndGemma) {
  // Row 0: mean(x^2) = 3, + eps = 4, so rsqrt is exactly 0.5.
  // Row 1: mean(x^2) = 7.5, + eps = 8.5.
  const std::vector<float> x = {3, -1, 1, 1, 1, 2, 3, 4};
  const std::vector<float> w = {1, 2, -1, 0.5f};
  const double r1 = 1.0 / std::sqrt(8.5);
  std::vector<double> llama = {1.5, -1, -0.5, 0.25}, gemma = {3, -1.5, 0, 0.75};
  for (int i = 0; i < 4; ++i) {
    llama.push_back(w[i] * (x[4 + i] * r1));
    gemma.push_back(x[4 + i] * r1 * (1.0 + w[i]));
  }
  std::vector<Weight> weights = {f32Weight("x", {2, 4}, x),
                                 weightAs("BF16", "n", {4}, w)};
  struct Case {
    const char *style;
    const std::vector<double> *expected;
  };
  for (Case c :
       {Case{"", &llama}, Case{", style = #llm<norm_style llama>", &llama},
        Case{", style = #llm<norm_style gemma>", &gemma}}) {
    SCOPED_TRACE(c.style);
    std::string attrs = "{epsilon = 1.0 : f32" + std::string(c.style) + "}";
    std::vector<float> got =
        run(withInput("2x4",
                      "%n = llm.weight \"n\" : tensor<4xbf16>\n"
                      "  %r = llm.rms_norm %x, %n " +
                          attrs +
                          " : (tensor<2x4xf32>, tensor<4xbf16>) -> "
                          "tensor<2x4xf32>",
                      "tensor<2x4xf32>"),
            weights, iota(2));
    expectNear(got, *c.expected, 1e-6);
    // Row 0 is exact.
    if (got.size() == 8) {
      for (int i = 0; i < 4; ++i)
        EXPECT_EQ(got[i], static_cast<float>((*c.expected)[i])) << i;
    }
    // Per-head norm: the same rows as [1, 2, 4].
    got = run(withInput("2x4",
                        "%n = llm.weight \"n\" : tensor<4xbf16>\n"
                        "  %x3 = llm.reshape %x : tensor<2x4xf32> -> "
                        "tensor<1x2x4xf32>\n"
                        "  %r = llm.rms_norm %x3, %n " +
                            attrs +
                            " : (tensor<1x2x4xf32>, tensor<4xbf16>) -> "
                            "tensor<1x2x4xf32>",
                        "tensor<1x2x4xf32>"),
              weights, iota(2));
    expectNear(got, *c.expected, 1e-6);
  }
}

TEST_F(InterpreterTest, RopeDefaultAtOffset) {
  // x [T = 2, H = 2, D = 4], theta = 10000: inv_freq = {1, 1/100} for
  // rotary_dim 4, {1} for rotary_dim 2. Positions are offset + t = 2, 3.
  const std::vector<float> x = {1,    2,  3,    4, -1,   0.5f, 2,  -3,
                                0.5f, -2, 1.5f, 1, 2.5f, 1,    -1, 0.25f};
  const int64_t T = 2, H = 2, D = 4, offset = 2;
  auto expected = [&](int64_t d, bool interleaved) {
    std::vector<double> out(x.begin(), x.end());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < d / 2; ++i) {
          double angle =
              double(offset + t) * std::pow(10000.0, -2.0 * i / double(d));
          int64_t base = (t * H + h) * D;
          int64_t ia = base + (interleaved ? 2 * i : i);
          int64_t ib = base + (interleaved ? 2 * i + 1 : i + d / 2);
          out[ia] = x[ia] * std::cos(angle) - x[ib] * std::sin(angle);
          out[ib] = x[ib] * std::cos(angle) + x[ia] * std::sin(angle);
        }
    return out;
  };
  struct Case {
    int64_t rotaryDim;
    bool interleaved;
  };
  for (Case c : {Case{4, false}, Case{4, true}, Case{2, false}}) {
    SCOPED_TRACE("rotary_dim " + std::to_string(c.rotaryDim) +
                 (c.interleaved ? " interleaved" : " half_split"));
    std::string ir = withInput(
        "2x8",
        "%x3 = llm.reshape %x : tensor<2x8xf32> -> tensor<2x2x4xf32>\n"
        "  %r = llm.rope %x3, %offset {kind = #llm<rope_kind default>, "
        "layout = #llm<rope_layout " +
            std::string(c.interleaved ? "interleaved" : "half_split") +
            ">, theta = 1.0e4, rotary_dim = " + std::to_string(c.rotaryDim) +
            "} : tensor<2x2x4xf32>",
        "tensor<2x2x4xf32>");
    std::vector<float> got =
        run(ir, {f32Weight("x", {2, 8}, x)}, iota(2), offset);
    expectNear(got, expected(c.rotaryDim, c.interleaved), 1e-5);
    // Partial rotary: dims 2 and 3 pass through untouched.
    if (c.rotaryDim == 2 && got.size() == x.size())
      for (int64_t i = 0; i < T * H; ++i) {
        EXPECT_EQ(got[i * D + 2], x[i * D + 2]);
        EXPECT_EQ(got[i * D + 3], x[i * D + 3]);
      }
  }
  // Hand values for one element: x = (1, 2, 3, 4) at position 2, half-split
  // rotary_dim 4: out[0] = cos 2 - 3 sin 2.
  std::vector<float> got = run(
      withInput("2x8",
                "%x3 = llm.reshape %x : tensor<2x8xf32> -> tensor<2x2x4xf32>\n"
                "  %r = llm.rope %x3, %offset {kind = #llm<rope_kind default>, "
                "layout = #llm<rope_layout half_split>, theta = 1.0e4, "
                "rotary_dim = 4} : tensor<2x2x4xf32>",
                "tensor<2x2x4xf32>"),
      {f32Weight("x", {2, 8}, x)}, iota(2), offset);
  ASSERT_EQ(got.size(), x.size());
  EXPECT_NEAR(got[0], -3.1440391, 1e-5); // cos 2 - 3 sin 2
  EXPECT_NEAR(got[2], -0.3391431, 1e-5); // 3 cos 2 + sin 2
  EXPECT_NEAR(got[1], 1.9196053, 1e-5);  // 2 cos .02 - 4 sin .02
}

/// q [T, nh, hd], k [S, nkv, hd], v [S, nkv, hdv] in double, query t at
/// position S - T + t.
std::vector<double> refAttention(const std::vector<float> &q,
                                 const std::vector<float> &k,
                                 const std::vector<float> &v, int64_t T,
                                 int64_t S, int64_t nh, int64_t nkv, int64_t hd,
                                 int64_t hdv, double scale, bool causal,
                                 int64_t window, double softcap) {
  std::vector<double> out(T * nh * hdv, 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < nh; ++h) {
      int64_t g = h / (nh / nkv), pos = S - T + t;
      std::vector<double> w(S, 0.0);
      double mx = -INFINITY, sum = 0;
      std::vector<bool> visible(S);
      for (int64_t s = 0; s < S; ++s) {
        visible[s] = (!causal || s <= pos) && (window == 0 || s > pos - window);
        if (!visible[s])
          continue;
        double dot = 0;
        for (int64_t i = 0; i < hd; ++i)
          dot += double(q[(t * nh + h) * hd + i]) * k[(s * nkv + g) * hd + i];
        dot *= scale;
        if (softcap != 0)
          dot = softcap * std::tanh(dot / softcap);
        w[s] = dot;
        mx = std::max(mx, dot);
      }
      for (int64_t s = 0; s < S; ++s)
        if (visible[s])
          sum += (w[s] = std::exp(w[s] - mx));
      for (int64_t s = 0; s < S; ++s)
        if (visible[s])
          for (int64_t i = 0; i < hdv; ++i)
            out[(t * nh + h) * hdv + i] +=
                w[s] / sum * v[(s * nkv + g) * hdv + i];
    }
  return out;
}

TEST_F(InterpreterTest, AttentionCausalAlignsQueriesToLastPositions) {
  // T = 2 queries, S = 3 keys, nh = 2 query heads on nkv = 1 kv head,
  // hd = 2, hdv = 3. The queries are the last two rows of table "q".
  const std::vector<float> qAll = {9, 9,    9,  9, // dropped by the slice
                                   1, 0.5f, -1, 2, 0.25f, -1.5f, 1, 1};
  const std::vector<float> q(qAll.begin() + 4, qAll.end());
  const std::vector<float> k = {1, 2, -1, 0.5f, 0.5f, -2};
  const std::vector<float> v = {1, 0, 2, -1, 3, 0.5f, 4, -2, 1};
  std::vector<Weight> weights = {f32Weight("q", {3, 4}, qAll),
                                 f32Weight("k", {3, 2}, k),
                                 f32Weight("v", {3, 3}, v)};
  auto ir = [](const std::string &attrs) {
    return "func.func @forward(%tokens: tensor<?xi64>, %offset: index) -> "
           "tensor<2x2x3xf32> {\n"
           "  %wq = llm.weight \"q\" : tensor<3x4xf32>\n"
           "  %wk = llm.weight \"k\" : tensor<3x2xf32>\n"
           "  %wv = llm.weight \"v\" : tensor<3x3xf32>\n"
           "  %q0 = llm.embedding %wq, %tokens : (tensor<3x4xf32>, "
           "tensor<?xi64>) -> tensor<3x4xf32>\n"
           "  %q1 = llm.slice %q0 {axis = 0, start = -2, size = 2} : "
           "tensor<3x4xf32> -> tensor<2x4xf32>\n"
           "  %q = llm.reshape %q1 : tensor<2x4xf32> -> tensor<2x2x2xf32>\n"
           "  %k0 = llm.embedding %wk, %tokens : (tensor<3x2xf32>, "
           "tensor<?xi64>) -> tensor<3x2xf32>\n"
           "  %k = llm.reshape %k0 : tensor<3x2xf32> -> tensor<3x1x2xf32>\n"
           "  %v0 = llm.embedding %wv, %tokens : (tensor<3x3xf32>, "
           "tensor<?xi64>) -> tensor<3x3xf32>\n"
           "  %v = llm.reshape %v0 : tensor<3x3xf32> -> tensor<3x1x3xf32>\n"
           "  %r = llm.attention %q, %k, %v " +
           attrs +
           " : (tensor<2x2x2xf32>, tensor<3x1x2xf32>, tensor<3x1x3xf32>) -> "
           "tensor<2x2x3xf32>\n"
           "  return %r : tensor<2x2x3xf32>\n}\n";
  };
  auto ref = [&](bool causal, int64_t window, double softcap) {
    return refAttention(q, k, v, 2, 3, 2, 1, 2, 3, 0.5, causal, window,
                        softcap);
  };
  std::vector<double> causal = ref(true, 0, 0);
  std::vector<float> got = run(ir("{scale = 0.5 : f32}"), weights, iota(3));
  expectNear(got, causal, 1e-6);

  // Hand check of query 0 (position 1), head 0: q = (1, 0.5) sees keys 0
  // and 1 with scores 0.5 * (1 + 1) = 1 and 0.5 * (-1 + 0.25) = -0.375.
  {
    double e0 = std::exp(1.0), e1 = std::exp(-0.375), z = e0 + e1;
    std::vector<double> row = {(e0 * 1 + e1 * -1) / z, (e0 * 0 + e1 * 3) / z,
                               (e0 * 2 + e1 * 0.5) / z};
    ASSERT_EQ(got.size(), 12u);
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(got[i], row[i], 1e-6) << i;
  }

  // Without the mask query 0 also sees key 2, which changes its output.
  std::vector<double> full = ref(false, 0, 0);
  EXPECT_GT(std::fabs(full[0] - causal[0]), 1e-2);
  expectNear(run(ir("{scale = 0.5 : f32, causal = false}"), weights, iota(3)),
             full, 1e-6);
  // A window of 2 hides key 0 from query 1 (position 2).
  std::vector<double> windowed = ref(true, 2, 0);
  EXPECT_GT(std::fabs(windowed[6] - causal[6]), 1e-2);
  expectNear(
      run(ir("{scale = 0.5 : f32, sliding_window = 2}"), weights, iota(3)),
      windowed, 1e-6);
  expectNear(run(ir("{scale = 0.5 : f32, logit_softcap = 0.75 : f32}"), weights,
                 iota(3)),
             ref(true, 0, 0.75), 1e-6);
}

TEST_F(InterpreterTest, EmbeddingIdOutOfRange) {
  std::string ir = withInput("3x2",
                             "%r = llm.scale %x {factor = 2.0 : f32} : "
                             "tensor<3x2xf32>",
                             "tensor<3x2xf32>");
  // In range, in any order.
  std::vector<Weight> weights = {f32Weight("x", {3, 2}, {1, 2, 3, 4, 5, 6})};
  expectExact(run(ir, weights, {2, 0, 1}), {10, 12, 2, 4, 6, 8});
  auto interp = load(ir, weights);
  ASSERT_TRUE(interp);
  std::string msg = forwardError(*interp, {0, 3, 1}, 0);
  EXPECT_CONTAINS(msg, "llm.embedding");
  EXPECT_CONTAINS(msg, "token id 3");
  msg = forwardError(*interp, {-1, 0, 1}, 0);
  EXPECT_CONTAINS(msg, "llm.embedding");
  EXPECT_CONTAINS(msg, "token id -1");
}

TEST_F(InterpreterTest, EmbeddingWidens16BitTables) {
  std::string ir16 = "func.func @forward(%tokens: tensor<?xi64>, %offset: "
                     "index) -> tensor<?x2xf32> {\n"
                     "  %w = llm.weight \"x\" : tensor<3x2xbf16>\n"
                     "  %r = llm.embedding %w, %tokens : (tensor<3x2xbf16>, "
                     "tensor<?xi64>) -> tensor<?x2xf32>\n"
                     "  return %r : tensor<?x2xf32>\n}\n";
  expectExact(run(ir16,
                  {weightAs("BF16", "x", {3, 2},
                            {1.5f, -0.0078125f, 256.0f, 4, -5, 0x1.fep+127f})},
                  {2, 1}),
              {-5, 0x1.fep+127f, 256.0f, 4});
}

TEST_F(InterpreterTest, StaticResultShapesAreEnforced) {
  // The table has 3 rows but the result type claims 2 tokens.
  std::string ir = "func.func @forward(%tokens: tensor<?xi64>, %offset: "
                   "index) -> tensor<2x2xf32> {\n"
                   "  %w = llm.weight \"x\" : tensor<3x2xf32>\n"
                   "  %r = llm.embedding %w, %tokens : (tensor<3x2xf32>, "
                   "tensor<?xi64>) -> tensor<2x2xf32>\n"
                   "  return %r : tensor<2x2xf32>\n}\n";
  std::vector<Weight> weights = {f32Weight("x", {3, 2}, iotaF(6))};
  auto interp = load(ir, weights);
  ASSERT_TRUE(interp);
  expectExact(forward(*interp, {2, 0}, 0), {4, 5, 0, 1});
  std::string msg = forwardError(*interp, {0, 1, 2}, 0);
  EXPECT_CONTAINS(msg, "llm.embedding");
  EXPECT_CONTAINS(msg, "[3, 2]");
}

//===----------------------------------------------------------------------===//
// KV caches
//===----------------------------------------------------------------------===//

const char *kCacheAlias =
    "!cache = !llm.kv_cache<max_length = 4, kv_heads = 1, head_dim = 2, "
    "element_type = f32>\n";

/// %k and %v [T, 1, 2]: the tokens' rows of the weights "k" and "v".
const char *kTokenKeysAndValues =
    "  %wk = llm.weight \"k\" : tensor<5x2xf32>\n"
    "  %wv = llm.weight \"v\" : tensor<5x2xf32>\n"
    "  %k0 = llm.embedding %wk, %tokens : (tensor<5x2xf32>, "
    "tensor<?xi64>) -> tensor<?x2xf32>\n"
    "  %k = llm.reshape %k0 : tensor<?x2xf32> -> tensor<?x1x2xf32>\n"
    "  %v0 = llm.embedding %wv, %tokens : (tensor<5x2xf32>, "
    "tensor<?xi64>) -> tensor<?x2xf32>\n"
    "  %v = llm.reshape %v0 : tensor<?x2xf32> -> tensor<?x1x2xf32>\n";

/// Appends k/v of the tokens at %offset and returns the whole cache read
/// back as [offset + T, 1, 4] = (key, value) per position.
std::string cacheModule() {
  return std::string(kCacheAlias) +
         "func.func @forward(%tokens: tensor<?xi64>, %offset: index, "
         "%cache: !cache) -> (tensor<?x1x4xf32>, !cache) {\n" +
         kTokenKeysAndValues +
         "  %c1 = llm.kv_cache_append %cache, %k, %v, %offset : !cache, "
         "tensor<?x1x2xf32>, tensor<?x1x2xf32>\n"
         "  %c0 = arith.constant 0 : index\n"
         "  %t = tensor.dim %tokens, %c0 : tensor<?xi64>\n"
         "  %len = arith.addi %offset, %t : index\n"
         "  %ka, %va = llm.kv_cache_read %c1, %len : !cache -> "
         "tensor<?x1x2xf32>, tensor<?x1x2xf32>\n"
         "  %kv = llm.concat %ka, %va {axis = 2} : (tensor<?x1x2xf32>, "
         "tensor<?x1x2xf32>) -> tensor<?x1x4xf32>\n"
         "  return %kv, %c1 : tensor<?x1x4xf32>, !cache\n}\n";
}

std::vector<Weight> cacheWeights() {
  // Key of token i: (i, 10 + i); value: (-i, 100 + i).
  std::vector<float> k, v;
  for (int i = 0; i < 5; ++i) {
    k.insert(k.end(), {float(i), float(10 + i)});
    v.insert(v.end(), {float(-i), float(100 + i)});
  }
  return {f32Weight("k", {5, 2}, k), f32Weight("v", {5, 2}, v)};
}

/// The expected cache read-back for tokens at positions 0, 1, ...
std::vector<float> cacheRows(const std::vector<int> &tokens) {
  std::vector<float> out;
  for (int i : tokens)
    out.insert(out.end(), {float(i), float(10 + i), float(-i), float(100 + i)});
  return out;
}

TEST_F(InterpreterTest, KVCachePersistsAcrossCalls) {
  auto interp = load(cacheModule(), cacheWeights());
  ASSERT_TRUE(interp);
  EXPECT_EQ(interp->maxContext(), 4);
  EXPECT_EQ(interp->vocabSize(), 4);
  // Prefill two tokens, then decode one: the decode step reads the keys
  // and values the prefill stored.
  expectExact(forward(*interp, {0, 1}, 0), cacheRows({0, 1}));
  expectExact(forward(*interp, {3}, 2), cacheRows({0, 1, 3}));
  expectExact(forward(*interp, {4}, 3), cacheRows({0, 1, 3, 4}));
  // The cache is full: position 4 is past max_length.
  std::string msg = forwardError(*interp, {2}, 4);
  EXPECT_CONTAINS(msg, "llm.kv_cache_append");
  EXPECT_CONTAINS(msg, "max_length 4");
  // Rewriting from an earlier position replaces the tail.
  expectExact(forward(*interp, {2}, 1), cacheRows({0, 2}));
}

TEST_F(InterpreterTest, KVCacheAppendPastMaxLength) {
  auto interp = load(cacheModule(), cacheWeights());
  ASSERT_TRUE(interp);
  std::string msg = forwardError(*interp, {0, 1, 2, 3, 4}, 0);
  EXPECT_CONTAINS(msg, "llm.kv_cache_append");
  EXPECT_CONTAINS(msg, "positions [0, 5) exceed the cache's max_length 4");
  // A failed call leaves the cache usable.
  expectExact(forward(*interp, {0, 1, 2}, 0), cacheRows({0, 1, 2}));
  msg = forwardError(*interp, {3, 4}, 3);
  EXPECT_CONTAINS(msg, "llm.kv_cache_append");
  EXPECT_CONTAINS(msg, "positions [3, 5) exceed the cache's max_length 4");
}

TEST_F(InterpreterTest, KVCacheAppendLeavingAGap) {
  auto interp = load(cacheModule(), cacheWeights());
  ASSERT_TRUE(interp);
  std::string msg = forwardError(*interp, {0}, 1);
  EXPECT_CONTAINS(msg, "llm.kv_cache_append");
  EXPECT_CONTAINS(msg, "gap after the 0 cached positions");
  expectExact(forward(*interp, {0, 1}, 0), cacheRows({0, 1}));
  msg = forwardError(*interp, {3}, 3);
  EXPECT_CONTAINS(msg, "llm.kv_cache_append");
  EXPECT_CONTAINS(msg, "gap after the 2 cached positions");
  // After resetCaches() nothing is cached, so decoding at 2 leaves a gap.
  interp->resetCaches();
  msg = forwardError(*interp, {2}, 2);
  EXPECT_CONTAINS(msg, "gap after the 0 cached positions");
  expectExact(forward(*interp, {4}, 0), cacheRows({4}));
}

TEST_F(InterpreterTest, KVCacheAppendRejectsMismatchedKeyAndValue) {
  // The value has four times the key's rows: dynamic dimensions hide this
  // from the verifier, so the interpreter must catch it before writing.
  std::string module = cacheModule();
  std::string old = "  %c1 = llm.kv_cache_append %cache, %k, %v, %offset";
  ASSERT_NE(module.find(old), std::string::npos);
  module.replace(module.find(old), old.size(),
                 "  %v4 = llm.concat %v, %v, %v, %v {axis = 0} : "
                 "(tensor<?x1x2xf32>, tensor<?x1x2xf32>, tensor<?x1x2xf32>, "
                 "tensor<?x1x2xf32>) -> tensor<?x1x2xf32>\n"
                 "  %c1 = llm.kv_cache_append %cache, %k, %v4, %offset");
  auto interp = load(module, cacheWeights());
  ASSERT_TRUE(interp);
  std::string msg = forwardError(*interp, {1}, 0);
  EXPECT_CONTAINS(msg, "llm.kv_cache_append");
  EXPECT_CONTAINS(msg, "key [1, 1, 2] and value [4, 1, 2] must be [T, 1, 2] "
                       "and [T, 1, 2]");
}

/// A latent cache (value_prefix 1) keyed by token: the key (i, 10 + i) and,
/// as the value, the key's first dim (`prefix` true) or the value table's
/// first dim (-i).
std::string latentCacheModule(bool prefix) {
  std::string cache = "!llm.kv_cache<max_length = 8, kv_heads = 1, head_dim "
                      "= 2, element_type = f32, value_prefix = 1>";
  std::string src = prefix ? "%k" : "%v";
  return "func.func @forward(%tokens: tensor<?xi64>, %offset: index, "
         "%cache: " +
         cache + ") -> (tensor<?x1x3xf32>, " + cache + ") {\n" +
         kTokenKeysAndValues + "  %p = llm.slice " + src +
         " {axis = 2, start = 0, size = 1} : "
         "tensor<?x1x2xf32> -> tensor<?x1x1xf32>\n"
         "  %c1 = llm.kv_cache_append %cache, %k, %p, %offset : " +
         cache +
         ", tensor<?x1x2xf32>, tensor<?x1x1xf32>\n"
         "  %c0 = arith.constant 0 : index\n"
         "  %t = tensor.dim %tokens, %c0 : tensor<?xi64>\n"
         "  %len = arith.addi %offset, %t : index\n"
         "  %ka, %va = llm.kv_cache_read %c1, %len : " +
         cache +
         " -> "
         "tensor<?x1x2xf32>, tensor<?x1x1xf32>\n"
         "  %kv = llm.concat %ka, %va {axis = 2} : (tensor<?x1x2xf32>, "
         "tensor<?x1x1xf32>) -> tensor<?x1x3xf32>\n"
         "  return %kv, %c1 : tensor<?x1x3xf32>, " +
         cache + "\n}\n";
}

TEST_F(InterpreterTest, LatentCacheReadsValuesFromKeys) {
  auto interp = load(latentCacheModule(true), cacheWeights());
  ASSERT_TRUE(interp);
  // Each position reads back its key and, as the value, the key's first dim.
  expectExact(forward(*interp, {3, 1}, 0), {3, 13, 3, 1, 11, 1});
  expectExact(forward(*interp, {4}, 2), {3, 13, 3, 1, 11, 1, 4, 14, 4});
}

TEST_F(InterpreterTest, LatentCacheRejectsAValueThatIsNotTheKeyPrefix) {
  auto interp = load(latentCacheModule(false), cacheWeights());
  ASSERT_TRUE(interp);
  std::string msg = forwardError(*interp, {2}, 0);
  EXPECT_CONTAINS(msg, "llm.kv_cache_append");
  EXPECT_CONTAINS(msg, "the value is not the first 1 dims of the key");
}

//===----------------------------------------------------------------------===//
// Interpreter::create errors
//===----------------------------------------------------------------------===//

std::string oneWeightModule(const std::string &name, const std::string &type) {
  return "func.func @forward(%tokens: tensor<?xi64>, %offset: index) -> "
         "tensor<?x2xf32> {\n"
         "  %w = llm.weight \"" +
         name + "\" : " + type +
         "\n"
         "  %r = llm.embedding %w, %tokens : (" +
         type +
         ", tensor<?xi64>) -> tensor<?x2xf32>\n"
         "  return %r : tensor<?x2xf32>\n}\n";
}

TEST_F(InterpreterTest, CreateFailsOnMissingWeight) {
  std::string msg =
      createError(oneWeightModule("model.missing", "tensor<3x2xf32>"),
                  {f32Weight("x", {3, 2}, iotaF(6))});
  EXPECT_CONTAINS(msg, "weight 'model.missing' is not in the checkpoint");
}

TEST_F(InterpreterTest, CreateFailsOnDTypeMismatch) {
  std::string msg = createError(oneWeightModule("x", "tensor<3x2xbf16>"),
                                {f32Weight("x", {3, 2}, iotaF(6))});
  EXPECT_CONTAINS(msg, "weight 'x'");
  EXPECT_CONTAINS(msg, "dtype F32 in the checkpoint but bf16 in the IR");
  msg = createError(oneWeightModule("x", "tensor<3x2xf32>"),
                    {weightAs("F16", "x", {3, 2}, iotaF(6))});
  EXPECT_CONTAINS(msg, "weight 'x'");
  EXPECT_CONTAINS(msg, "dtype F16 in the checkpoint but f32 in the IR");
}

TEST_F(InterpreterTest, CreateFailsOnShapeMismatch) {
  std::string msg = createError(oneWeightModule("x", "tensor<3x2xf32>"),
                                {f32Weight("x", {2, 3}, iotaF(6))});
  EXPECT_CONTAINS(msg, "weight 'x'");
  EXPECT_CONTAINS(msg, "shape [2, 3] in the checkpoint but [3, 2] in the IR");
}

TEST_F(InterpreterTest, CreateReportsEveryBadWeight) {
  std::string ir =
      "func.func @forward(%tokens: tensor<?xi64>, %offset: index) -> "
      "tensor<?x2xf32> {\n"
      "  %a = llm.weight \"a\" : tensor<3x2xf32>\n"
      "  %b = llm.weight \"b\" : tensor<2xf32>\n"
      "  %r = llm.embedding %a, %tokens : (tensor<3x2xf32>, tensor<?xi64>) "
      "-> tensor<?x2xf32>\n"
      "  return %r : tensor<?x2xf32>\n}\n";
  std::string msg = createError(ir, {f32Weight("a", {2, 3}, iotaF(6))});
  EXPECT_CONTAINS(msg, "2 weight(s) cannot be bound");
  EXPECT_CONTAINS(msg, "weight 'a' has shape");
  EXPECT_CONTAINS(msg, "weight 'b' is not in the checkpoint");
}

TEST_F(InterpreterTest, CreateRejectsNonLinearCacheUse) {
  // The cache argument is appended to and then read through the old value.
  std::string ir =
      std::string(kCacheAlias) +
      "func.func @forward(%tokens: tensor<?xi64>, %offset: index, "
      "%cache: !cache) -> (tensor<?x1x2xf32>, !cache) {\n"
      "  %wk = llm.weight \"k\" : tensor<5x2xf32>\n"
      "  %k0 = llm.embedding %wk, %tokens : (tensor<5x2xf32>, "
      "tensor<?xi64>) -> tensor<?x2xf32>\n"
      "  %k = llm.reshape %k0 : tensor<?x2xf32> -> tensor<?x1x2xf32>\n"
      "  %c1 = llm.kv_cache_append %cache, %k, %k, %offset : !cache, "
      "tensor<?x1x2xf32>, tensor<?x1x2xf32>\n"
      "  %ka, %va = llm.kv_cache_read %cache, %offset : !cache -> "
      "tensor<?x1x2xf32>, tensor<?x1x2xf32>\n"
      "  return %ka, %c1 : tensor<?x1x2xf32>, !cache\n}\n";
  std::string msg = createError(ir, cacheWeights());
  EXPECT_CONTAINS(msg, "KV cache value is used after being appended to");
  EXPECT_CONTAINS(msg, "linear use of caches");

  // Two appends to the same value are rejected too.
  std::string twice =
      std::string(kCacheAlias) +
      "func.func @forward(%tokens: tensor<?xi64>, %offset: index, "
      "%cache: !cache) -> (tensor<?x1x2xf32>, !cache) {\n"
      "  %wk = llm.weight \"k\" : tensor<5x2xf32>\n"
      "  %k0 = llm.embedding %wk, %tokens : (tensor<5x2xf32>, "
      "tensor<?xi64>) -> tensor<?x2xf32>\n"
      "  %k = llm.reshape %k0 : tensor<?x2xf32> -> tensor<?x1x2xf32>\n"
      "  %c1 = llm.kv_cache_append %cache, %k, %k, %offset : !cache, "
      "tensor<?x1x2xf32>, tensor<?x1x2xf32>\n"
      "  %c2 = llm.kv_cache_append %cache, %k, %k, %offset : !cache, "
      "tensor<?x1x2xf32>, tensor<?x1x2xf32>\n"
      "  return %k, %c2 : tensor<?x1x2xf32>, !cache\n}\n";
  msg = createError(twice, cacheWeights());
  EXPECT_CONTAINS(msg, "KV cache value is used after being appended to");
}

TEST_F(InterpreterTest, CreateRejectsBadEntry) {
  std::vector<Weight> weights = {f32Weight("x", {3, 2}, iotaF(6))};
  std::string ir = oneWeightModule("x", "tensor<3x2xf32>");
  auto interp = create(ir, weights);
  ASSERT_TRUE(static_cast<bool>(interp)) << llvm::toString(interp.takeError());
  auto missing = Interpreter::create(*modules.back(), *stores.back(), "main");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_CONTAINS(llvm::toString(missing.takeError()),
                  "module has no function '@main'");
}

//===----------------------------------------------------------------------===//
// call(): functions of plain tensors (graph frontends)
//===----------------------------------------------------------------------===//

using pimc::ref::HostTensor;

Weight i64Weight(const std::string &name, std::vector<int64_t> shape,
                 const std::vector<int64_t> &values) {
  Weight w{name, "I64", std::move(shape),
           std::string(values.size() * sizeof(int64_t), '\0')};
  for (size_t i = 0; i < values.size(); ++i)
    llvm::support::endian::write64le(&w.bytes[8 * i], values[i]);
  return w;
}

Weight boolWeight(const std::string &name, std::vector<int64_t> shape,
                  const std::vector<int64_t> &values) {
  Weight w{name, "BOOL", std::move(shape), std::string()};
  for (int64_t v : values)
    w.bytes.push_back(v ? 1 : 0);
  return w;
}

/// call() that must succeed ({} and a failure otherwise).
std::vector<HostTensor> callOk(Interpreter &interp,
                               const std::vector<HostTensor> &inputs) {
  auto out = interp.call(inputs);
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError());
    return {};
  }
  return std::move(*out);
}

std::string callError(Interpreter &interp,
                      const std::vector<HostTensor> &inputs) {
  auto out = interp.call(inputs);
  if (out) {
    ADD_FAILURE() << "call() unexpectedly succeeded";
    return "";
  }
  return llvm::toString(out.takeError());
}

TEST_F(InterpreterTest, CallMatmulBroadcastAndMasks) {
  // a [2, 1, 2, 3] x b [2, 3, 1] -> [2, 2, 2, 1]; + bias broadcast; a mask
  // from i64 positions through compare/select; convert and cumsum.
  std::string ir = R"(
func.func @forward(%a: tensor<2x1x2x3xf32>, %b: tensor<2x3x1xf32>, %pos: tensor<3xi64>)
    -> (tensor<2x2x2x1xf32>, tensor<3x3xf32>, tensor<3xi64>, tensor<3x3xi1>) {
  %m = llm.matmul %a, %b : (tensor<2x1x2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x2x2x1xf32>
  %c = arith.constant dense<[[[[0.5]]], [[[-1.0]]]]> : tensor<2x1x1x1xf32>
  %cb = llm.broadcast %c : tensor<2x1x1x1xf32> -> tensor<2x2x2x1xf32>
  %y = llm.add %m, %cb : tensor<2x2x2x1xf32>
  %row = llm.broadcast %pos : tensor<3xi64> -> tensor<3x3xi64>
  %pc = llm.reshape %pos : tensor<3xi64> -> tensor<3x1xi64>
  %col = llm.broadcast %pc : tensor<3x1xi64> -> tensor<3x3xi64>
  %gt = llm.compare gt %row, %col : tensor<3x3xi64> -> tensor<3x3xi1>
  %ninf = arith.constant dense<-1.0e9> : tensor<3x3xf32>
  %zero = arith.constant dense<0.0> : tensor<3x3xf32>
  %mask = llm.select %gt, %ninf, %zero : tensor<3x3xi1>, tensor<3x3xf32>
  %ones = arith.constant dense<[true, false, true]> : tensor<3xi1>
  %oi = llm.convert %ones : tensor<3xi1> -> tensor<3xi64>
  %cs = llm.cumsum %oi {axis = 0, reverse = true} : tensor<3xi64>
  return %y, %mask, %cs, %gt : tensor<2x2x2x1xf32>, tensor<3x3xf32>, tensor<3xi64>, tensor<3x3xi1>
}
)";
  auto interp = load(ir, {});
  ASSERT_TRUE(interp);
  EXPECT_TRUE(interp->takesPlainTensors());
  HostTensor a = HostTensor::fromF32({2, 1, 2, 3}, {1, 2, 3, 4, 5, 6, //
                                                    -1, 0, 1, 2, 0, 0});
  HostTensor b = HostTensor::fromF32({2, 3, 1}, {1, 1, 1, /**/ 1, 0, -1});
  HostTensor pos = HostTensor::fromI64({3}, {2, 0, 1});
  std::vector<HostTensor> out = callOk(*interp, {a, b, pos});
  ASSERT_EQ(out.size(), 4u);
  // Batch [2] of a (size 1 in dim 1) against b's batch [2] -> [2, 2]:
  // out[i][j] = a[i][0] @ b[j].
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 2, 2, 1}));
  EXPECT_EQ(out[0].f32, (std::vector<float>{6.5f, 15.5f, -1.5f, -1.5f, //
                                            -1.0f, 1.0f, -3.0f, 1.0f}));
  // mask[q][k] = pos[k] > pos[q].
  EXPECT_EQ(out[1].f32,
            (std::vector<float>{0, 0, 0, -1e9f, 0, -1e9f, -1e9f, 0, 0}));
  EXPECT_EQ(out[2].dtype, HostTensor::DType::I64);
  EXPECT_EQ(out[2].i64, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(out[3].dtype, HostTensor::DType::Bool);
  EXPECT_EQ(out[3].i64, (std::vector<int64_t>{0, 0, 0, 1, 0, 1, 1, 0, 0}));
}

TEST_F(InterpreterTest, CallChecksInputs) {
  std::string ir = R"(
func.func @forward(%a: tensor<2x?xf32>, %i: tensor<2xi64>) -> tensor<2x?xf32> {
  %g = llm.gather %a, %i {axis = 0} : (tensor<2x?xf32>, tensor<2xi64>) -> tensor<2x?xf32>
  return %g : tensor<2x?xf32>
}
)";
  auto interp = load(ir, {});
  ASSERT_TRUE(interp);
  HostTensor a = HostTensor::fromF32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor i = HostTensor::fromI64({2}, {1, -2});
  std::vector<HostTensor> out = callOk(*interp, {a, i});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].f32, (std::vector<float>{4, 5, 6, 1, 2, 3}));
  EXPECT_CONTAINS(callError(*interp, {a}), "takes 2 input(s), got 1");
  EXPECT_CONTAINS(callError(*interp, {i, i}),
                  "input 0: expected f32 elements for argument type "
                  "tensor<2x?xf32>, got i64");
  EXPECT_CONTAINS(callError(*interp, {HostTensor::fromF32({3, 2}, a.f32), i}),
                  "input 0: shape [3, 2] does not match argument type");
  EXPECT_CONTAINS(callError(*interp, {HostTensor::fromF32({2, 4}, a.f32), i}),
                  "input 0: shape [2, 4] has 8 elements but 6 values");
  EXPECT_CONTAINS(callError(*interp, {a, HostTensor::fromI64({2}, {0, 2})}),
                  "index 2 out of range for size 2");
  EXPECT_CONTAINS(forwardError(*interp, {1}, 0),
                  "takes plain tensors; run it with call()");
}

TEST_F(InterpreterTest, CallRefusedOnTheLanguageModelSignature) {
  auto interp = load(cacheModule(), cacheWeights());
  ASSERT_TRUE(interp);
  EXPECT_FALSE(interp->takesPlainTensors());
  EXPECT_CONTAINS(callError(*interp, {}), "run it with forward(), not call()");
}

TEST_F(InterpreterTest, WeightsFlowIntoTensorOps) {
  // A bf16 weight added to an activation and multiplied by a matmul, an
  // i64 and a BOOL buffer feeding gather and select, a weight returned
  // as a result, and a 2-D argument used as the weight of llm.linear.
  std::string ir = R"(
func.func @forward(%x: tensor<2x2xf32>, %w: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xi64>, tensor<2x3xf32>) {
  %p = llm.weight "p" : tensor<2x2xbf16>
  %pf = llm.convert %p : tensor<2x2xbf16> -> tensor<2x2xf32>
  %s = llm.add %x, %pf : tensor<2x2xf32>
  %m = llm.matmul %s, %p : (tensor<2x2xf32>, tensor<2x2xbf16>) -> tensor<2x2xf32>
  %idx = llm.weight "idx" : tensor<2xi64>
  %keep = llm.weight "keep" : tensor<2x2xi1>
  %g = llm.gather %m, %idx {axis = 0} : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  %z = arith.constant dense<0.0> : tensor<2x2xf32>
  %sel = llm.select %keep, %g, %z : tensor<2x2xi1>, tensor<2x2xf32>
  %lin = llm.linear %x, %w : (tensor<2x2xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  return %sel, %pf, %idx, %lin : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xi64>, tensor<2x3xf32>
}
)";
  std::vector<Weight> weights = {
      weightAs("BF16", "p", {2, 2}, {1, 2, 0.5f, -1}),
      i64Weight("idx", {2}, {1, 1}), boolWeight("keep", {2, 2}, {1, 0, 0, 1})};
  auto interp = load(ir, weights);
  ASSERT_TRUE(interp);
  HostTensor x = HostTensor::fromF32({2, 2}, {1, 0, 0, 1});
  HostTensor w = HostTensor::fromF32({3, 2}, {1, 2, 3, 4, 5, 6});
  std::vector<HostTensor> out = callOk(*interp, {x, w});
  ASSERT_EQ(out.size(), 4u);
  // s = x + p = [[2, 2], [0.5, 0]]; m = s @ p = [[3, 2], [0.5, 1]]; rows
  // [1, 1] -> [[0.5, 1], [0.5, 1]]; keep the diagonal.
  EXPECT_EQ(out[0].f32, (std::vector<float>{0.5f, 0, 0, 1}));
  EXPECT_EQ(out[1].f32, (std::vector<float>{1, 2, 0.5f, -1}));
  EXPECT_EQ(out[2].i64, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(out[3].f32, (std::vector<float>{1, 3, 5, 2, 4, 6}));
}

TEST_F(InterpreterTest, IntegerWeightsAreCheckedAtBindTime) {
  std::string ir = R"(
func.func @forward(%x: tensor<2xf32>) -> tensor<2xi64> {
  %i = llm.weight "idx" : tensor<2xi64>
  return %i : tensor<2xi64>
}
)";
  EXPECT_CONTAINS(createError(ir, {f32Weight("idx", {2}, {1, 2})}),
                  "weight 'idx' has dtype F32 in the checkpoint but i64 in "
                  "the IR (needs I64)");
  EXPECT_CONTAINS(createError(ir, {i64Weight("idx", {3}, {1, 2, 3})}),
                  "weight 'idx' has shape [3] in the checkpoint but [2]");
  auto interp = load(ir, {i64Weight("idx", {2}, {-7, 9})});
  ASSERT_TRUE(interp);
  std::vector<HostTensor> out =
      callOk(*interp, {HostTensor::fromF32({2}, {0, 0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].i64, (std::vector<int64_t>{-7, 9}));
}

TEST_F(InterpreterTest, LayerNormOverTrailingDimsAndTopkAxis) {
  std::string ir = R"(
func.func @forward(%x: tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x1x2xf32>, tensor<2x1x2xi64>, tensor<2x2xf32>) {
  %ln = llm.layer_norm %x {epsilon = 0.0 : f32, axis = 1} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %v, %i = llm.topk %x {k = 1, axis = 1, largest = false} : tensor<2x2x2xf32> -> tensor<2x1x2xf32>, tensor<2x1x2xi64>
  %p = llm.reduce prod %x {axis = 2} : tensor<2x2x2xf32> -> tensor<2x2xf32>
  return %ln, %v, %i, %p : tensor<2x2x2xf32>, tensor<2x1x2xf32>, tensor<2x1x2xi64>, tensor<2x2xf32>
}
)";
  auto interp = load(ir, {});
  ASSERT_TRUE(interp);
  // Each [2, 2] block is normalised as one row of 4: [1, 3, 1, 3] and
  // [2, 0, 2, 0] have variance 1. The top-1 smallest along axis 1 ties
  // in every column and takes row 0.
  std::vector<HostTensor> out = callOk(
      *interp, {HostTensor::fromF32({2, 2, 2}, {1, 3, 1, 3, 2, 0, 2, 0})});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].f32, (std::vector<float>{-1, 1, -1, 1, 1, -1, 1, -1}));
  EXPECT_EQ(out[1].f32, (std::vector<float>{1, 3, 2, 0}));
  EXPECT_EQ(out[2].i64, (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(out[3].f32, (std::vector<float>{3, 3, 0, 0}));
}

TEST_F(InterpreterTest, MoEWithExpertWeightsAsArguments) {
  // Two experts of width 1 on H = 2, top-1 softmax routing; weights are
  // function arguments, not checkpoint tensors. Router logits: expert 0
  // x[0], expert 1 x[1]; token 0 = [2, 0] picks expert 0 with weight
  // e^2 / (e^2 + 1), token 1 = [0, 1] expert 1 with e / (e + 1).
  std::string ir = R"(
func.func @forward(%x: tensor<2x2xf32>, %wr: tensor<2x2xf32>, %g0: tensor<1x2xf32>, %g1: tensor<1x2xf32>, %d: tensor<2x1xf32>) -> tensor<2x2xf32> {
  %y = llm.moe %x router %wr experts gate [%g0, %g1] up [%g0, %g1] down [%d, %d] {top_k = 1}
       : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
)";
  auto interp = load(ir, {});
  ASSERT_TRUE(interp);
  std::vector<HostTensor> out =
      callOk(*interp, {HostTensor::fromF32({2, 2}, {2, 0, 0, 1}),
                       HostTensor::fromF32({2, 2}, {1, 0, 0, 1}),
                       HostTensor::fromF32({1, 2}, {1, 0}),
                       HostTensor::fromF32({1, 2}, {0, 1}),
                       HostTensor::fromF32({2, 1}, {1, -1})});
  ASSERT_EQ(out.size(), 1u);
  // Expert e: h = silu(v) * v with v = x[e]; y = [h, -h] * w.
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  double w0 = std::exp(2.0) / (std::exp(2.0) + 1),
         w1 = std::exp(1.0) / (std::exp(1.0) + 1);
  double h0 = silu(2) * 2 * w0, h1 = silu(1) * 1 * w1;
  expectNear(out[0].f32, {h0, -h0, h1, -h1}, 1e-6);
}

TEST_F(InterpreterTest, BroadcastBuildersMakeRunnableIR) {
  // Build f(a [3, 1], b [4]) = a + b with the importers' helpers.
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  auto f32 = builder.getF32Type();
  auto aType = RankedTensorType::get({3, 1}, f32);
  auto bType = RankedTensorType::get({4}, f32);
  auto outType = RankedTensorType::get({3, 4}, f32);
  auto fn =
      func::FuncOp::create(builder, loc, "forward",
                           builder.getFunctionType({aType, bType}, {outType}));
  Block *body = fn.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  Value a = body->getArgument(0), b = body->getArgument(1);
  ASSERT_TRUE(succeeded(llm::broadcastBinaryOperands(builder, loc, a, b)));
  EXPECT_EQ(cast<RankedTensorType>(a.getType()).getShape(),
            ArrayRef<int64_t>({3, 4}));
  // Already the right shape: no new op.
  EXPECT_EQ(llm::broadcastTo(builder, loc, a, {3, 4}), a);
  Value sum = llm::AddOp::create(builder, loc, a, b);
  func::ReturnOp::create(builder, loc, sum);
  ASSERT_TRUE(succeeded(verify(*module)));

  // Incompatible shapes: an error at the location, no IR.
  std::string diag;
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      diag = d.str();
      return success();
    });
    Value bad = llm::broadcastTo(builder, loc, body->getArgument(1), {3, 5});
    EXPECT_FALSE(bad);
    EXPECT_EQ(diag, "cannot broadcast a tensor of shape [4] to [3, 5]");
    // Rank growth needs no reshape: [3, 1] -> [2, 3, 7] is one broadcast.
    Value bigger =
        llm::broadcastTo(builder, loc, body->getArgument(0), {2, 3, 7});
    ASSERT_TRUE(bigger);
    EXPECT_TRUE(isa<llm::BroadcastOp>(bigger.getDefiningOp()));
    bigger.getDefiningOp()->erase();
    // Two incompatible operands: one error naming both shapes.
    diag.clear();
    auto five = arith::ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(RankedTensorType::get({5}, f32), 0.0f));
    Value l = body->getArgument(1), r = five;
    EXPECT_TRUE(failed(llm::broadcastBinaryOperands(builder, loc, l, r)));
    EXPECT_EQ(diag, "operand shapes [4] and [5] do not broadcast");
    EXPECT_EQ(l, body->getArgument(1)); // left untouched
    five->erase();
  }
  EXPECT_EQ(*llm::broadcastShapes({2, 1, 4}, {3, 1}),
            (SmallVector<int64_t>{2, 3, 4}));
  EXPECT_EQ(*llm::broadcastShapes({}, {5}), (SmallVector<int64_t>{5}));
  EXPECT_EQ(*llm::broadcastShapes({ShapedType::kDynamic, 1}, {4, 6}),
            (SmallVector<int64_t>{4, 6}));
  EXPECT_TRUE(failed(llm::broadcastShapes({2, 3}, {4, 3})));

  // No llm.weight: an empty store is enough.
  auto store = ckpt::WeightStore::openFiles({});
  ASSERT_TRUE(static_cast<bool>(store));
  auto interp = Interpreter::create(*module, **store);
  ASSERT_TRUE(static_cast<bool>(interp)) << llvm::toString(interp.takeError());
  std::vector<HostTensor> out =
      callOk(**interp, {HostTensor::fromF32({3, 1}, {0, 10, 20}),
                        HostTensor::fromF32({4}, {1, 2, 3, 4})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].f32,
            (std::vector<float>{1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24}));
}

TEST_F(InterpreterTest, CreateNamesTheExpectedSignatures) {
  // Neither plain tensors nor (tokens, offset, caches...).
  std::string noOffset = R"(
func.func @forward(%n: index) -> tensor<2xf32> {
  %c = arith.constant dense<1.0> : tensor<2xf32>
  return %c : tensor<2xf32>
}
)";
  EXPECT_CONTAINS(createError(noOffset, {}), "or take and return only tensors");
  std::string badCache = R"(
func.func @forward(%ids: tensor<?xi64>, %off: index, %x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
)";
  EXPECT_CONTAINS(createError(badCache, {}),
                  "entry argument 2 must be a !llm.kv_cache");
  std::string f16Arg = R"(
func.func @forward(%x: tensor<2xf16>) -> tensor<2xf16> {
  return %x : tensor<2xf16>
}
)";
  EXPECT_CONTAINS(createError(f16Arg, {}),
                  "entry argument 0 has type tensor<2xf16>; call() takes "
                  "f32, integer and i1 tensors");
}

TEST_F(InterpreterTest, MoEChecksDynamicShapesAtRunTime) {
  std::string ir = R"(
func.func @forward(%x: tensor<?x?xf32>, %wr: tensor<?x?xf32>, %g: tensor<1x2xf32>, %d: tensor<2x1xf32>) -> tensor<?x?xf32> {
  %y = llm.moe %x router %wr experts gate [%g, %g] up [%g, %g] down [%d, %d] {top_k = 1}
       : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
)";
  auto interp = load(ir, {});
  ASSERT_TRUE(interp);
  HostTensor g = HostTensor::fromF32({1, 2}, {1, 0});
  HostTensor d = HostTensor::fromF32({2, 1}, {1, -1});
  // Hidden size 3 against [1, 2] experts.
  EXPECT_CONTAINS(
      callError(*interp,
                {HostTensor::fromF32({1, 3}, {1, 2, 3}),
                 HostTensor::fromF32({2, 3}, {0, 0, 0, 0, 0, 0}), g, d}),
      "expert 0 weights do not fit the hidden size 3");
  // A router for 3 experts.
  EXPECT_CONTAINS(
      callError(*interp,
                {HostTensor::fromF32({1, 2}, {1, 2}),
                 HostTensor::fromF32({3, 2}, {0, 0, 0, 0, 0, 0}), g, d}),
      "router weight is [3, 2], expected [2, 2]");
  std::vector<HostTensor> ok =
      callOk(*interp, {HostTensor::fromF32({1, 2}, {1, 2}),
                       HostTensor::fromF32({2, 2}, {0, 0, 0, 0}), g, d});
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].shape, (std::vector<int64_t>{1, 2}));
}

TEST_F(InterpreterTest, DynamicWeightArgumentsAreCheckedAtRunTime) {
  std::string ir = R"(
func.func @forward(%x: tensor<1x2xf32>, %w: tensor<3x2xf32>, %b: tensor<?xf32>, %g: tensor<?x?xf32>, %d: tensor<?x?xf32>) -> (tensor<1x3xf32>, tensor<1x2xf32>) {
  %y = llm.linear %x, %w, %b : (tensor<1x2xf32>, tensor<3x2xf32>, tensor<?xf32>) -> tensor<1x3xf32>
  %m = llm.gated_mlp %x, %g, %g, %d : (tensor<1x2xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<1x2xf32>
  return %y, %m : tensor<1x3xf32>, tensor<1x2xf32>
}
)";
  auto interp = load(ir, {});
  ASSERT_TRUE(interp);
  HostTensor x = HostTensor::fromF32({1, 2}, {1, 2});
  HostTensor w = HostTensor::fromF32({3, 2}, {1, 0, 0, 1, 1, 1});
  HostTensor g = HostTensor::fromF32({1, 2}, {1, 1});
  HostTensor d = HostTensor::fromF32({2, 1}, {1, 2});
  EXPECT_CONTAINS(
      callError(*interp, {x, w, HostTensor::fromF32({2}, {0, 0}), g, d}),
      "bias has 2 elements, the weight 3 rows");
  EXPECT_CONTAINS(callError(*interp, {x, w, HostTensor::fromF32({3}, {0, 0, 0}),
                                      g, HostTensor::fromF32({1, 2}, {1, 2})}),
                  "gate, up and down weight shapes disagree at run time");
  std::vector<HostTensor> out =
      callOk(*interp, {x, w, HostTensor::fromF32({3}, {1, 1, 1}), g, d});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].f32, (std::vector<float>{2, 3, 4}));
}

TEST_F(InterpreterTest, CallTakesBooleanAndI32Inputs) {
  std::string ir = R"(
func.func @forward(%c: tensor<3xi1>, %i: tensor<3xi32>) -> (tensor<3xi64>, tensor<3xi1>) {
  %ci = llm.convert %c : tensor<3xi1> -> tensor<3xi64>
  %z = arith.constant dense<0> : tensor<3xi64>
  %s = llm.select %c, %ci, %z : tensor<3xi1>, tensor<3xi64>
  %f = arith.constant dense<[1.5, -1.0, 0.0]> : tensor<3xf32>
  %fb = llm.convert %f : tensor<3xf32> -> tensor<3xi1>
  return %s, %fb : tensor<3xi64>, tensor<3xi1>
}
)";
  auto interp = load(ir, {});
  ASSERT_TRUE(interp);
  // Booleans are normalised to 0/1; i32 arguments take I64 data.
  std::vector<HostTensor> out =
      callOk(*interp, {HostTensor::fromBool({3}, {1, 0, 7}),
                       HostTensor::fromI64({3}, {1, 2, 3})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].i64, (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(out[1].dtype, HostTensor::DType::Bool);
  EXPECT_EQ(out[1].i64, (std::vector<int64_t>{1, 1, 0}));
  EXPECT_CONTAINS(callError(*interp, {HostTensor::fromI64({3}, {1, 0, 1}),
                                      HostTensor::fromI64({3}, {1, 2, 3})}),
                  "input 0: expected i1 elements for argument type "
                  "tensor<3xi1>, got i64");
}

} // namespace

namespace {
/// A causal conv (kernel 3, no bias, no SiLU) over the tokens' rows of
/// "u" ([5, 1]: token i is i + 1), its state an entry argument: the output
/// at position p is 1 * u[p-2] + 10 * u[p-1] + 100 * u[p].
std::string convModule(const char *extra = "") {
  return std::string("!state = !llm.recurrent_state<shape = [1, 2], "
                     "element_type = f32>\n"
                     "func.func @forward(%tokens: tensor<?xi64>, %offset: "
                     "index, %s: !state) -> (tensor<?x1xf32>, !state) {\n"
                     "  %wu = llm.weight \"u\" : tensor<5x1xf32>\n"
                     "  %w = llm.weight \"w\" : tensor<1x3xf32>\n"
                     "  %u = llm.embedding %wu, %tokens : (tensor<5x1xf32>, "
                     "tensor<?xi64>) -> tensor<?x1xf32>\n"
                     "  %y, %s1 = llm.causal_conv1d %u, %s, %w, %offset "
                     "{silu = false} : tensor<?x1xf32>, !state, "
                     "tensor<1x3xf32> -> tensor<?x1xf32>\n") +
         extra + "  return %y, %s1 : tensor<?x1xf32>, !state\n}\n";
}

std::vector<Weight> convWeights() {
  return {f32Weight("u", {5, 1}, {1, 2, 3, 4, 5}),
          f32Weight("w", {1, 3}, {1, 10, 100})};
}
} // namespace

// A recurrent state starts at zero, carries across calls, and holds exactly
// the positions before the step: another offset is an error (a recurrence
// cannot be rewound), resetCaches() starts a new sequence.
TEST_F(InterpreterTest, RecurrentStateCarriesAndCannotRewind) {
  auto interp = load(convModule(), convWeights());
  ASSERT_TRUE(interp);
  expectExact(forward(*interp, {0, 1}, 0), {100, 10 + 200});
  expectExact(forward(*interp, {2}, 2), {1 + 20 + 300});
  std::string msg = forwardError(*interp, {3}, 1);
  EXPECT_CONTAINS(msg, "llm.causal_conv1d");
  EXPECT_CONTAINS(msg, "the step starts at position 1 but the recurrent "
                       "state holds 3 positions");
  msg = forwardError(*interp, {3}, 0);
  EXPECT_CONTAINS(msg, "holds 3 positions");
  interp->resetCaches();
  expectExact(forward(*interp, {2}, 0), {300});
}

TEST_F(InterpreterTest, RecurrentStateUsedTwiceIsRefused) {
  std::string ir =
      convModule("  %y2, %s2 = llm.causal_conv1d %u, %s, %w, %offset "
                 "{silu = false} : tensor<?x1xf32>, !state, tensor<1x3xf32> -> "
                 "tensor<?x1xf32>\n");
  EXPECT_CONTAINS(createError(ir, convWeights()),
                  "a recurrent state value has more than one use");
}
