//===- HostTensorIO.h - graph inputs/outputs as safetensors -----*- C++ -*-===//
//
// `pimc run-ref graph.mlir --inputs in.safetensors --expect out.safetensors`
// and the frontend end-to-end tests exchange the tensors of
// Interpreter::call() as safetensors files whose tensors are named by
// position: input_0, input_1, ... and output_0, ... (docs/frontend-graphs.md
// section 4). Comparison follows numpy.allclose.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_REFERENCE_HOSTTENSORIO_H
#define PIMC_REFERENCE_HOSTTENSORIO_H

#include "pimc/Reference/Interpreter.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace pimc::ref {

/// Reads `<prefix>0`, `<prefix>1`, ... from the safetensors file `path`; the
/// file must hold exactly these names, numbered from 0 without gaps. F32
/// becomes DType::F32, I64 and I32 DType::I64, BOOL DType::Bool; any other
/// dtype is an error naming the tensor.
llvm::Expected<std::vector<HostTensor>> readHostTensors(llvm::StringRef path,
                                                        llvm::StringRef prefix);

/// Writes `tensors` as `<prefix>0`, ... (F32, I64 or BOOL) to `path`.
llvm::Error writeHostTensors(llvm::StringRef path, llvm::StringRef prefix,
                             llvm::ArrayRef<HostTensor> tensors);

/// The outcome of comparing a result with its expected value.
struct TensorComparison {
  int64_t mismatches = 0;  // elements outside the tolerance
  double maxAbsDiff = 0;   // over all elements (NaN pairs count as equal)
  int64_t worstIndex = -1; // row-major index of the worst mismatch
  double worstGot = 0, worstExpected = 0;
  bool ok() const { return mismatches == 0; }
};

/// Element-wise |got - expected| <= atol + rtol * |expected| (numpy
/// allclose; NaN matches NaN, infinities must be equal; integers and
/// booleans compare exactly). The worst mismatch is the one furthest beyond
/// its tolerance. Errors when the dtypes or shapes differ.
llvm::Expected<TensorComparison> compareHostTensors(const HostTensor &got,
                                                    const HostTensor &expected,
                                                    double atol, double rtol);

/// "[1, 2]" for row-major index `index` of `shape`.
std::string positionString(llvm::ArrayRef<int64_t> shape, int64_t index);

} // namespace pimc::ref

#endif // PIMC_REFERENCE_HOSTTENSORIO_H
