//===- GraphEquivalence.cpp - two graphs on fresh random inputs -----------===//
#include "pimc/Reference/GraphEquivalence.h"

#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Reference/HostTensorIO.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace mlir;

namespace pimc::ref {

namespace {

/// The smallest extent `v` indexes: the gathered axis of an llm.gather it
/// is the indices of, or the vocabulary of an llm.embedding, followed
/// through shape-only ops. 0 when it indexes nothing.
int64_t indexedExtent(Value v, int depth = 0) {
  int64_t best = 0;
  auto take = [&](int64_t n) {
    if (n > 0 && (best == 0 || n < best))
      best = n;
  };
  if (depth > 16)
    return 0;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto g = dyn_cast<llm::GatherOp>(user)) {
      auto t = cast<RankedTensorType>(g.getInput().getType());
      int64_t axis = g.getAxis() < 0 ? g.getAxis() + t.getRank() : g.getAxis();
      if (use.getOperandNumber() == 1 && axis >= 0 && axis < t.getRank())
        take(t.getDimSize(axis));
    } else if (auto e = dyn_cast<llm::EmbeddingOp>(user)) {
      if (use.get() == e.getIds())
        take(cast<ShapedType>(e.getTable().getType()).getDimSize(0));
    } else if (isa<llm::ReshapeOp, llm::BroadcastOp, llm::TransposeOp,
                   llm::SliceOp, llm::ConvertOp>(user)) {
      take(indexedExtent(user->getResult(0), depth + 1));
    }
  }
  return best;
}

/// Output `i`'s mismatch, in the words of `pimc run-ref --expect`.
std::string describeMismatch(size_t i, const HostTensor &got,
                             const TensorComparison &cmp,
                             const EquivalenceOptions &o) {
  return llvm::formatv(
      "output_{0}: {1} of {2} element(s) outside atol {3} + rtol {4}; worst "
      "at {5}: {6} {7}, {8} {9}",
      i, cmp.mismatches, got.numElements(), llvm::format("%g", o.atol),
      llvm::format("%g", o.rtol), positionString(got.shape, cmp.worstIndex),
      o.candidateName, llvm::format("%.9g", cmp.worstGot), o.referenceName,
      llvm::format("%.9g", cmp.worstExpected));
}

std::string firstLine(llvm::StringRef s) { return s.split('\n').first.str(); }

} // namespace

std::string EquivalenceReport::summary() const {
  std::string s =
      llvm::formatv("{0} fresh input(s): {1} compared", samples, compared);
  if (compared)
    s += llvm::formatv(" (max |diff| {0:e})", maxAbsDiff).str();
  if (bothRefused)
    s += llvm::formatv("; {0} refused by both graphs", bothRefused).str();
  if (onlyReferenceRefused)
    s += llvm::formatv("; {0} refused by the {1} graph only, not "
                       "comparable",
                       onlyReferenceRefused, referenceName)
             .str();
  if (!referenceRefusal.empty())
    s += " (" + referenceRefusal + ")";
  return s;
}

llvm::Expected<std::vector<HostTensor>> randomInputs(func::FuncOp func,
                                                     uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<HostTensor> inputs;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape())
      return llvm::createStringError(
          llvm::formatv("argument {0} of @{1} is not a static tensor",
                        arg.getArgNumber(), func.getSymName()));
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    int64_t n = type.getNumElements();
    Type elem = type.getElementType();
    if (elem.isF32()) {
      std::vector<float> data(n);
      for (float &v : data)
        v = normal(rng);
      inputs.push_back(HostTensor::fromF32(shape, std::move(data)));
    } else if (elem.isInteger(1)) {
      std::vector<int64_t> data(n);
      for (int64_t &v : data)
        v = static_cast<int64_t>(rng() & 1);
      inputs.push_back(HostTensor::fromBool(shape, std::move(data)));
    } else if (elem.isInteger(32) || elem.isInteger(64)) {
      int64_t extent = indexedExtent(arg);
      if (extent <= 0)
        return llvm::createStringError(llvm::formatv(
            "argument {0} of @{1} is an integer tensor that indexes nothing "
            "(no llm.gather or llm.embedding reads it): its valid values are "
            "unknown, so no fresh input can be drawn",
            arg.getArgNumber(), func.getSymName()));
      std::uniform_int_distribution<int64_t> pick(0, extent - 1);
      std::vector<int64_t> data(n);
      for (int64_t &v : data)
        v = pick(rng);
      inputs.push_back(HostTensor::fromI64(shape, std::move(data)));
    } else {
      return llvm::createStringError(
          llvm::formatv("argument {0} of @{1} has element type {2}, which the "
                        "check cannot draw",
                        arg.getArgNumber(), func.getSymName(), elem));
    }
  }
  return inputs;
}

llvm::Expected<EquivalenceReport>
checkEquivalence(ModuleOp reference, ModuleOp candidate,
                 const ckpt::WeightStore &weights,
                 const EquivalenceOptions &options) {
  auto func = reference.lookupSymbol<func::FuncOp>("forward");
  if (!func)
    return llvm::createStringError("the imported graph has no @forward");
  auto refInterp = Interpreter::create(reference, weights);
  if (!refInterp)
    return refInterp.takeError();
  auto candInterp = Interpreter::create(candidate, weights);
  if (!candInterp)
    return candInterp.takeError();
  if (!(*refInterp)->takesPlainTensors() || !(*candInterp)->takesPlainTensors())
    return llvm::createStringError(
        "the check runs functions of plain tensors (FX / ONNX graphs)");

  EquivalenceReport report;
  report.referenceName = options.referenceName;
  for (unsigned k = 0; k < options.samples; ++k) {
    uint64_t seed = options.seed + k;
    auto inputs = randomInputs(func, seed);
    if (!inputs)
      return inputs.takeError();
    ++report.samples;
    auto want = (*refInterp)->call(*inputs);
    auto got = (*candInterp)->call(*inputs);
    if (!want) {
      std::string why = firstLine(llvm::toString(want.takeError()));
      if (report.referenceRefusal.empty())
        report.referenceRefusal = options.referenceName + " graph: " + why;
      if (got) {
        ++report.onlyReferenceRefused;
      } else {
        llvm::consumeError(got.takeError());
        ++report.bothRefused;
      }
      continue;
    }
    if (!got)
      return llvm::createStringError(llvm::formatv(
          "fresh input {0} (seed {1:x}): the {2} graph fails where the {3} "
          "graph runs: {4}",
          k, seed, options.candidateName, options.referenceName,
          llvm::toString(got.takeError())));
    if (got->size() != want->size())
      return llvm::createStringError(
          llvm::formatv("the {0} graph returns {1} result(s), the {2} graph "
                        "{3}",
                        options.candidateName, got->size(),
                        options.referenceName, want->size()));
    for (size_t i = 0; i < got->size(); ++i) {
      auto cmp =
          compareHostTensors((*got)[i], (*want)[i], options.atol, options.rtol);
      if (!cmp)
        return llvm::createStringError(
            llvm::formatv("output_{0}: {1}", i, toString(cmp.takeError())));
      if (!cmp->ok())
        return llvm::createStringError(llvm::formatv(
            "fresh input {0} (seed {1:x}): the graphs compute different "
            "functions: {2}",
            k, seed, describeMismatch(i, (*got)[i], *cmp, options)));
      report.maxAbsDiff = std::max(report.maxAbsDiff, cmp->maxAbsDiff);
    }
    ++report.compared;
  }
  return report;
}

} // namespace pimc::ref
