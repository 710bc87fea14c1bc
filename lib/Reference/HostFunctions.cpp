//===- HostFunctions.cpp - host calls on the reference interpreter --------===//
#include "pimc/Reference/HostFunctions.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Reference/Interpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace pimc;

namespace {

class InterpreterHostFunctions : public rt::HostFunctionRunner {
public:
  InterpreterHostFunctions() {
    ctx.loadDialect<llm::LLMDialect, func::FuncDialect, arith::ArithDialect,
                    tensor::TensorDialect>();
  }

  llvm::Error load(llvm::ArrayRef<std::string> texts,
                   const ckpt::WeightStore &store) override {
    modules.clear();
    interpreters.clear();
    for (auto [i, text] : llvm::enumerate(texts)) {
      std::string diag;
      ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
        if (diag.empty())
          diag = d.str();
        return success();
      });
      OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(text, &ctx);
      if (!m)
        return llvm::createStringError(
            llvm::formatv("host function {0} does not parse: {1}", i, diag));
      auto interp = ref::Interpreter::create(*m, store, "host", true);
      if (!interp)
        return llvm::createStringError(llvm::formatv(
            "host function {0}: {1}", i, llvm::toString(interp.takeError())));
      modules.push_back(std::move(m));
      interpreters.push_back(std::move(*interp));
    }
    return llvm::Error::success();
  }

  llvm::Expected<std::vector<rt::HostValue>>
  call(int64_t index, llvm::ArrayRef<rt::HostValue> args) const override {
    if (index < 0 || index >= int64_t(interpreters.size()))
      return llvm::createStringError(
          llvm::formatv("host function {0} is not loaded", index));
    std::vector<ref::HostTensor> in;
    for (const rt::HostValue &a : args)
      in.push_back(a.integer ? ref::HostTensor::fromI64(a.shape, a.i64)
                             : ref::HostTensor::fromF32(a.shape, a.f32));
    auto out = interpreters[size_t(index)]->call(in);
    if (!out)
      return llvm::createStringError(llvm::formatv(
          "host function {0}: {1}", index, llvm::toString(out.takeError())));
    std::vector<rt::HostValue> results;
    for (ref::HostTensor &t : *out) {
      rt::HostValue v;
      v.shape = t.shape;
      v.integer = t.isInteger();
      v.f32 = std::move(t.f32);
      v.i64 = std::move(t.i64);
      results.push_back(std::move(v));
    }
    return results;
  }

private:
  MLIRContext ctx;
  std::vector<OwningOpRef<ModuleOp>> modules;
  std::vector<std::unique_ptr<ref::Interpreter>> interpreters;
};

} // namespace

std::unique_ptr<rt::HostFunctionRunner>
pimc::ref::createInterpreterHostFunctions() {
  return std::make_unique<InterpreterHostFunctions>();
}
