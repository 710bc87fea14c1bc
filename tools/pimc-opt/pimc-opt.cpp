//===- pimc-opt.cpp - MLIR optimizer driver over pimc dialects ------------===//
#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<pimc::llm::LLMDialect, pimc::pim::PIMDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  pimc::llm::registerRaisePasses();
  pimc::pim::registerBackendPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "pimc optimizer driver\n", registry));
}
