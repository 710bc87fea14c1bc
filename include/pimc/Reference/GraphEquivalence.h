//===- GraphEquivalence.h - two graphs on fresh random inputs ---*- C++ -*-===//
//
// The raising check (docs/raising.md): an imported graph and its raised
// form are run by the reference interpreter on the same fresh, seeded
// random inputs, and their results compared. A rewrite that changes the
// function on inputs other than the traced ones shows up here, not at the
// user's next prompt.
//
// A graph traced from data-dependent code is specialised to its trace
// (llm.nonzero's traced counts): on a fresh input it may refuse to run. An
// input the reference refuses cannot be compared; the report counts it,
// with the reference's reason, instead of calling it a match.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_REFERENCE_GRAPHEQUIVALENCE_H
#define PIMC_REFERENCE_GRAPHEQUIVALENCE_H

#include "pimc/Reference/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pimc::ref {

struct EquivalenceOptions {
  unsigned samples = 3;   // fresh inputs
  uint64_t seed = 0x5eed; // input k uses seed + k
  double atol = 1e-4, rtol = 1e-4;
  // What the two graphs are called in messages.
  std::string referenceName = "imported", candidateName = "raised";
};

/// What the fresh inputs showed. Inputs where both graphs ran are compared;
/// the others are counted by which graph refused them.
struct EquivalenceReport {
  unsigned samples = 0;
  unsigned compared = 0;    // both ran; results within tolerance
  unsigned bothRefused = 0; // both refused (both specialised to the trace)
  unsigned onlyReferenceRefused =
      0;                 // the candidate generalises: not comparable
  double maxAbsDiff = 0; // over the compared inputs
  std::string referenceName = "imported"; // EquivalenceOptions'
  std::string referenceRefusal;           // the reference's first refusal

  /// One line: "3 fresh input(s): 3 compared (max |diff| 1.2e-06)" plus the
  /// inputs that could not be compared and why.
  std::string summary() const;
};

/// Fresh inputs for `func`'s arguments from `seed`: f32 normal(0, 1), i1
/// fair coins, integers uniform in [0, n) where n is the smallest extent
/// they index (llm.gather indices, llm.embedding ids, followed through
/// shape-only ops). An integer argument that indexes nothing is an error
/// naming it: the check cannot know its valid values.
llvm::Expected<std::vector<HostTensor>> randomInputs(mlir::func::FuncOp func,
                                                     uint64_t seed);

/// Runs `reference` and `candidate` (functions of plain tensors, entry
/// "forward", the same signature) on `options.samples` fresh inputs. Errors
/// when a result differs beyond the tolerance or the candidate refuses an
/// input the reference runs, naming the input's seed, the output, the
/// worst position and both values.
llvm::Expected<EquivalenceReport>
checkEquivalence(mlir::ModuleOp reference, mlir::ModuleOp candidate,
                 const ckpt::WeightStore &weights,
                 const EquivalenceOptions &options);

} // namespace pimc::ref

#endif // PIMC_REFERENCE_GRAPHEQUIVALENCE_H
