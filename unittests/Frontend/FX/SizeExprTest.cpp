//===- SizeExprTest.cpp - symbolic size expressions and specialisation ----===//
#include "pimc/Frontend/FX/FXImporter.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "gtest/gtest.h"

#include <string>

using namespace pimc::fx;

namespace {

llvm::StringMap<int64_t> env() {
  llvm::StringMap<int64_t> e;
  e["s70"] = 13;
  e["s1"] = 4;
  return e;
}

int64_t eval(llvm::StringRef text) {
  llvm::Expected<int64_t> v = evaluateSizeExpr(text, env());
  EXPECT_TRUE(static_cast<bool>(v)) << text.str();
  if (!v) {
    llvm::consumeError(v.takeError());
    return INT64_MIN;
  }
  return *v;
}

std::string error(llvm::StringRef text) {
  llvm::Expected<int64_t> v = evaluateSizeExpr(text, env());
  if (v)
    return "no error, value " + std::to_string(*v);
  return llvm::toString(v.takeError());
}

TEST(SizeExpr, FormsTorchPrints) {
  EXPECT_EQ(eval("s70"), 13);
  EXPECT_EQ(eval("7"), 7);
  EXPECT_EQ(eval("s70 + 1"), 14);
  EXPECT_EQ(eval("2*s70 - s1"), 22);
  EXPECT_EQ(eval("(s70//2)"), 6);
  EXPECT_EQ(eval("((s70 + 1)//2)"), 7);
  EXPECT_EQ(eval("Max(1, s70)"), 13);
  EXPECT_EQ(eval("Min(s1, s70, 9)"), 4);
  EXPECT_EQ(eval("Mod(s70, 4)"), 1);
  EXPECT_EQ(eval("s70 % 4"), 1);
  EXPECT_EQ(eval("FloorDiv(s70, s1)"), 3);
  EXPECT_EQ(eval("-s70 + 20"), 7);
  EXPECT_EQ(eval("s70*s1*2"), 104);
}

TEST(SizeExpr, PythonFloorSemantics) {
  EXPECT_EQ(eval("(-7)//2"), -4);
  EXPECT_EQ(eval("Mod(-7, 2)"), 1);
  EXPECT_EQ(eval("Mod(7, -2)"), -1);
  EXPECT_EQ(eval("7//(-2)"), -4);
}

TEST(SizeExpr, Errors) {
  EXPECT_EQ(error("q9"), "unknown symbol 'q9'");
  EXPECT_EQ(error("s70 // 0"), "division by zero");
  EXPECT_EQ(error("Mod(s70, 0)"), "division by zero");
  EXPECT_EQ(error("9223372036854775807 + 1"), "integer overflow");
  EXPECT_EQ(error("99999999999999999999"),
            "integer '99999999999999999999' is too large");
  EXPECT_EQ(error("-9223372036854775807 - 1 - 1"), "integer overflow");
  EXPECT_EQ(error("s70**2"), "unexpected '*' at offset 4");
  EXPECT_EQ(error("s70 / 2"), "unexpected '/' at offset 4");
  EXPECT_EQ(error("sqrt(s70)"), "unsupported function 'sqrt'");
  EXPECT_EQ(error("Mod(s70)"), "Mod takes 2 arguments, got 1");
  EXPECT_EQ(error("(s70 + 1"), "expected ')' at offset 8");
  EXPECT_EQ(error(""), "unexpected end of expression");
  EXPECT_EQ(error("s70 +"), "unexpected end of expression");
  EXPECT_EQ(error(std::string(100, '(') + "1" + std::string(100, ')')),
            "nested deeper than 64");
  EXPECT_EQ(error(std::string(100, '-') + "1"), "nested deeper than 64");
  EXPECT_EQ(error(std::string(5000, '1')),
            "expression longer than 4096 characters");
}

// A two-node graph: input [1, s0] and a view to [s0, 1] whose size
// argument is symbolic.
llvm::json::Value graph(int64_t example, llvm::StringRef range = "[2, 64]") {
  std::string text = R"({"format": "pimc-fx-graph", "version": 1, "nodes": [
    {"name": "x", "op": "placeholder", "kind": "input",
     "meta": {"dtype": "float32", "shape": [1, EX]}, "sym_shape": [1, "s0"]},
    {"name": "v", "op": "call_function", "target": "aten.view",
     "overload": "default",
     "args": [{"node": "x"}, [{"sym": "s0", "example": EX}, 1]],
     "meta": {"dtype": "float32", "shape": [EX, 1]}, "sym_shape": ["s0", 1]},
    {"name": "output", "op": "output", "args": [[{"node": "v"}]]}],
    "dynamic_dims": [{"input": "x", "dim": 1, "name": "seq", "symbol": "s0",
                      "range": RANGE, "example": EX}]})";
  for (size_t p; (p = text.find("EX")) != std::string::npos;)
    text.replace(p, 2, std::to_string(example));
  text.replace(text.find("RANGE"), 5, range.str());
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  EXPECT_TRUE(static_cast<bool>(v));
  return v ? std::move(*v) : llvm::json::Value(nullptr);
}

TEST(Specialise, BindsShapesAndArguments) {
  llvm::json::Value g = graph(8);
  DimBindings dims;
  dims["seq"] = 13;
  auto bound = specialiseGraph(g, "g.json", dims);
  ASSERT_TRUE(static_cast<bool>(bound)) << llvm::toString(bound.takeError());
  ASSERT_EQ(bound->size(), 1u);
  EXPECT_EQ((*bound)[0].value, 13);
  EXPECT_EQ((*bound)[0].example, 8);
  EXPECT_EQ((*bound)[0].max, std::optional<int64_t>(64));
  const llvm::json::Array &nodes = *g.getAsObject()->getArray("nodes");
  EXPECT_EQ(llvm::formatv("{0}", *nodes[0].getAsObject()->get("meta")).str(),
            R"({"dtype":"float32","shape":[1,13]})");
  EXPECT_EQ(llvm::formatv("{0}", *nodes[1].getAsObject()->get("args")).str(),
            R"([{"node":"x"},[13,1]])");
  EXPECT_EQ(llvm::formatv("{0}", *nodes[1].getAsObject()->get("meta")).str(),
            R"({"dtype":"float32","shape":[13,1]})");
}

TEST(Specialise, RejectsOutOfRangeAndUnknownDims) {
  for (auto [name, size, message] :
       {std::tuple<const char *, int64_t, const char *>{
            "seq", 65,
            "g.json: --dim seq=65: outside the range [2, 64] of 'x' dim 1"},
        {"seq", 1,
         "g.json: --dim seq=1: outside the range [2, 64] of 'x' dim 1"},
        {"batch", 2,
         "g.json: --dim batch: the graph has no symbolic dim of that name; "
         "it has seq (s0)"}}) {
    llvm::json::Value g = graph(8);
    DimBindings dims;
    dims[name] = size;
    auto bound = specialiseGraph(g, "g.json", dims);
    ASSERT_FALSE(static_cast<bool>(bound));
    EXPECT_EQ(llvm::toString(bound.takeError()), message);
  }
  llvm::json::Value unbounded = graph(8, "[2, null]");
  DimBindings big;
  big["s0"] = 100000;
  EXPECT_TRUE(static_cast<bool>(specialiseGraph(unbounded, "g.json", big)));
}

TEST(Specialise, SetsOnlyTheNamedInputPlaceholder) {
  // A later node with the input's name (the structural parser rejects the
  // duplicate after specialisation) and a rank-0 shape must not be written
  // (found by fuzzing: it was indexed at the input's dim).
  llvm::json::Value g = graph(8);
  llvm::json::Array &nodes = *g.getAsObject()->getArray("nodes");
  nodes.insert(
      nodes.begin() + 1,
      llvm::json::Object{
          {"name", "x"},
          {"op", "call_function"},
          {"target", "aten.relu"},
          {"overload", "default"},
          {"args", llvm::json::Array{}},
          {"meta", llvm::json::Object{{"dtype", "float32"},
                                      {"shape", llvm::json::Array{}}}}});
  DimBindings dims;
  dims["seq"] = 5;
  auto bound = specialiseGraph(g, "g.json", dims);
  ASSERT_TRUE(static_cast<bool>(bound)) << llvm::toString(bound.takeError());
  EXPECT_EQ(llvm::formatv("{0}", *nodes[0].getAsObject()->get("meta")).str(),
            R"({"dtype":"float32","shape":[1,5]})");
  EXPECT_EQ(llvm::formatv("{0}", *nodes[1].getAsObject()->get("meta")).str(),
            R"({"dtype":"float32","shape":[]})");
}

TEST(Specialise, ChecksTheRecordAgainstTheExample) {
  llvm::json::Value g = graph(8);
  // The view's symbolic argument claims 9 at the example.
  (*(*g.getAsObject()->getArray("nodes"))[1].getAsObject()->getArray("args"))[1]
      .getAsArray()
      ->front() = llvm::json::Object{{"sym", "s0 + 1"}, {"example", 8}};
  auto bound = specialiseGraph(g, "g.json", {});
  ASSERT_FALSE(static_cast<bool>(bound));
  EXPECT_EQ(llvm::toString(bound.takeError()),
            "g.json: node 'v': symbolic argument 's0 + 1' is 9 at the "
            "example, the graph says 8");
}

TEST(Specialise, NonSizeSymbolsOnlyAtTheExample) {
  llvm::json::Value g = graph(8);
  (*(*g.getAsObject()->getArray("nodes"))[1].getAsObject()->getArray("args"))[1]
      .getAsArray()
      ->back() = llvm::json::Object{
      {"sym", "ToFloat(s0)"}, {"example", 8.0}, {"kind", "float"}};
  EXPECT_TRUE(static_cast<bool>(specialiseGraph(g, "g.json", {})));
  llvm::json::Value h = graph(8);
  (*(*h.getAsObject()->getArray("nodes"))[1].getAsObject()->getArray("args"))[1]
      .getAsArray()
      ->back() = llvm::json::Object{
      {"sym", "ToFloat(s0)"}, {"example", 8.0}, {"kind", "float"}};
  DimBindings dims;
  dims["seq"] = 9;
  auto bound = specialiseGraph(h, "g.json", dims);
  ASSERT_FALSE(static_cast<bool>(bound));
  EXPECT_EQ(llvm::toString(bound.takeError()),
            "g.json: node 'v': symbolic argument 'ToFloat(s0)' is not an "
            "integer size; the graph can only be imported at its example "
            "sizes");
}

} // namespace
