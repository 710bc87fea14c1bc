//===- RegisterTarget.cpp - pim-register-target ---------------------------===//
//
// Puts the device on the module; see Passes.td.
//
//===----------------------------------------------------------------------===//
#include "pimc/Dialect/PIM/Transforms/Passes.h"

#include "llvm/Support/MemoryBuffer.h"

namespace pimc::pim {
#define GEN_PASS_DEF_PIMREGISTERTARGET
#include "pimc/Dialect/PIM/Transforms/Passes.h.inc"
} // namespace pimc::pim

using namespace mlir;
using namespace pimc::pim;

namespace {

struct RegisterTargetPass
    : public pimc::pim::impl::PIMRegisterTargetBase<RegisterTargetPass> {
  using PIMRegisterTargetBase::PIMRegisterTargetBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (targetFile.empty()) {
      module.emitError("pim-register-target needs a target file "
                       "(target=targets/<name>.json)");
      return signalPassFailure();
    }
    auto bytes = llvm::MemoryBuffer::getFile(targetFile, /*IsText=*/true);
    if (!bytes) {
      module.emitError() << targetFile << ": " << bytes.getError().message();
      return signalPassFailure();
    }
    llvm::Expected<TargetAttr> attr =
        TargetAttr::fromFile(&getContext(), (*bytes)->getBuffer(), targetFile);
    if (!attr) {
      module.emitError() << llvm::toString(attr.takeError());
      return signalPassFailure();
    }
    auto existing =
        module->getAttrOfType<TargetAttr>(TargetAttr::kModuleAttrName);
    if (existing && existing != *attr) {
      module.emitError() << "the module is already compiled for target '"
                         << existing.getName() << "' (" << existing.getHash()
                         << "), not " << targetFile << " ('" << attr->getName()
                         << "', " << attr->getHash() << ")";
      return signalPassFailure();
    }
    module->setAttr(TargetAttr::kModuleAttrName, *attr);
  }
};

} // namespace
