//===- FuzzFXGraph.cpp - pimc-fx-graph JSON -------------------------------===//
//
// The input is a graph.json (python/pimc_torch's format, without a
// parameters file): parsed, specialised, imported into llm IR and raised.
// A graph with symbolic dims is imported again with each dim at the top of
// its range (capped at 64), which evaluates every size expression at a
// second binding.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"
#include "pimc/Frontend/FX/FXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <algorithm>

using namespace pimc;

static void importAndRaise(const fx::Graph &graph) {
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  auto module = fx::importGraph(ctx, graph, /*weights=*/nullptr);
  if (!module) {
    fuzz::ignore(module);
    return;
  }
  (void)llm::raiseGraph(**module, {});
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text = fuzz::asText(data, size);
  auto graph = fx::parseGraph(text, "graph.json");
  if (!graph) {
    fuzz::ignore(graph);
    return 0;
  }
  importAndRaise(*graph);
  if (graph->dynamicDims.empty())
    return 0;
  fx::DimBindings dims;
  for (const fx::DynamicDim &d : graph->dynamicDims)
    dims[d.name] = std::max(d.min, std::min<int64_t>(d.max.value_or(64), 64));
  auto again = fx::parseGraph(text, "graph.json", dims);
  if (!again) {
    fuzz::ignore(again);
    return 0;
  }
  importAndRaise(*again);
  return 0;
}
