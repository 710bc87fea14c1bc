//===- PIMLayout.cpp - #pim.gemv_rows: the weight layout ------------------===//
//
// The layout of a placed weight, as the program format types it
// (pimsim::GemvRows): the attribute converts to it, and its verifier is
// pimsim's domain check, so the IR and the program accept the same values.
//
//===----------------------------------------------------------------------===//
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

using namespace mlir;
using namespace pimc::pim;

static pimsim::GemvRows toABI(int64_t n0, int64_t ch0, int64_t nch,
                              int64_t row0, int64_t kRows, int64_t k0,
                              int64_t kLen, GptqSourceAttr gptq) {
  pimsim::GemvRows g;
  g.n0 = n0;
  g.ch0 = ch0;
  g.nch = nch;
  g.row0 = row0;
  g.kRows = kRows;
  g.k0 = k0;
  g.kLen = kLen;
  if (gptq) {
    g.source = pimsim::GemvRows::Source::Gptq;
    g.bits = gptq.getBits();
    g.groupSize = gptq.getGroupSize();
    g.sym = gptq.getSym();
    g.packing = gptq.getPacking().str();
    g.scaleType = gptq.getScaleType().str();
  }
  return g;
}

pimsim::GemvRows GemvRowsAttr::toABI() const {
  return ::toABI(getN0(), getCh0(), getNch(), getRow0(), getKRows(), getK0(),
                 getKLen(), getGptq());
}

LogicalResult GemvRowsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t n0, int64_t ch0, int64_t nch,
                                   int64_t row0, int64_t kRows, int64_t k0,
                                   int64_t kLen, GptqSourceAttr gptq) {
  std::vector<std::string> problems = pimsim::gemvRowsProblems(
      ::toABI(n0, ch0, nch, row0, kRows, k0, kLen, gptq));
  if (problems.empty())
    return success();
  InFlightDiagnostic d = emitError() << "#pim.gemv_rows: ";
  llvm::interleave(problems, d, "; ");
  return d;
}
