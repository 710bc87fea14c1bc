//===- FuzzSizeExpr.cpp - symbolic size expressions -----------------------===//
//
// The input is one expression over the symbols s0 = 7 and s1 = 3 (the
// forms torch.export prints in "sym_shape" and symbolic arguments).
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "pimc/Frontend/FX/FXImporter.h"

using namespace pimc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const llvm::StringMap<int64_t> env = {{"s0", 7}, {"s1", 3}};
  auto v = fx::evaluateSizeExpr(fuzz::asText(data, size), env);
  if (v)
    fuzz::sink(static_cast<uint64_t>(*v));
  fuzz::ignore(v);
  return 0;
}
