//===- FXOps.cpp - ATen ops -> llm ops (the FX importer's op table) -------===//
//
// One builder per ATen (op, overload). Builders see validated arguments
// (FXImporter.cpp binds them against the schema string of their row) and the
// traced result types, and build llm ops (docs/frontend-graphs.md sections
// 2-3). Conventions:
//  - float values are f32 activations; f16/bf16 weights flow unchanged
//    through data movement (transpose, reshape, slice) and are widened by
//    the op that computes with them (`toF32`);
//  - broadcasting is explicit (llm::broadcastTo, LLMBuilders.h);
//  - ops whose tensor operands are all constants are folded into
//    arith.constant (arange, masks, position ids), so masks stay visible
//    to the raising passes as values.
//
//===----------------------------------------------------------------------===//
#include "FXOpTable.h"

#include "llvm/ADT/StringMap.h"

#include <vector>

using namespace pimc::fx::detail;

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

llvm::StringRef pimc::fx::detail::unsupportedReason(llvm::StringRef op) {
  static const llvm::StringMap<llvm::StringRef> reasons = {
      {"aten.masked_select.default", "data-dependent output shape"},
      {"aten.unique.default", "data-dependent output shape"},
      {"aten._unique2.default", "data-dependent output shape"},
      {"aten.repeat_interleave.Tensor", "data-dependent output shape; use "
                                        "expand + reshape for GQA"},
      {"aten.item.default", "reads a tensor value into Python control flow"},
      {"aten._local_scalar_dense.default",
       "reads a tensor value into Python control flow"},
  };
  auto it = reasons.find(op);
  if (it != reasons.end())
    return it->second;
  // aten.<name>.<overload>: a trailing underscore (add_, __iand__) mutates
  // its input; other dunders (__and__) are functional.
  llvm::StringRef name = op.drop_front(op.find('.') + 1).split('.').first;
  bool dunder = name.starts_with("__") && name.ends_with("__");
  if ((dunder && name.starts_with("__i")) || (!dunder && name.ends_with("_")))
    return "in-place op; export with functionalization (the bridge does)";
  return {};
}

// Schemas are torch's (`torch.ops.aten.<op>.<overload>._schema`), so the
// arguments a graph passes are checked exactly as torch declares them; each
// family of ops keeps its rows next to its builders.
llvm::ArrayRef<OpEntry> pimc::fx::detail::opEntries() {
  static const std::vector<OpEntry> entries = [] {
    std::vector<OpEntry> all;
    for (llvm::ArrayRef<OpEntry> family :
         {elementwiseOpEntries(), compareOpEntries(), creationOpEntries(),
          movementOpEntries(), productOpEntries(), reductionOpEntries()})
      all.insert(all.end(), family.begin(), family.end());
    return all;
  }();
  return entries;
}
