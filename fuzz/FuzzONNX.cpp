//===- FuzzONNX.cpp - ONNX models with external data ----------------------===//
//
// The input is an ONNX model, optionally followed by the marker line
// "\n--pimc-external-data--\n" and the bytes of `data.bin`, the external
// data file beside the model. The model is imported (initializers, shape
// inference, every op) and raised. A location outside the model's directory
// must be rejected, never read.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"
#include "pimc/Frontend/ONNX/ONNXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

using namespace pimc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto [model, external] =
      fuzz::asText(data, size).split("\n--pimc-external-data--\n");
  fuzz::writeScratch("data.bin", external);
  std::string path = fuzz::writeScratch("model.onnx", model);
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  onnx::registerImportDialects(ctx);
  auto imported = onnx::importModelFile(ctx, path, onnx::ImportOptions());
  if (!imported) {
    fuzz::ignore(imported);
    return 0;
  }
  uint64_t sum = 0;
  for (const onnx::WeightTensor &w : imported->weights)
    sum += w.bytes.size();
  fuzz::sink(sum);
  (void)llm::raiseGraph(*imported->module, {});
  return 0;
}
