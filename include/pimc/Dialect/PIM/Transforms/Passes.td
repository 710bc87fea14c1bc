//===- Passes.td - pim dialect passes -------------------------*- tablegen -*-===//
//
// Device-level passes of the backend pipeline (docs/backend.md).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_PIM_TRANSFORMS_PASSES
#define PIMC_PIM_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def PIMRegisterTarget : Pass<"pim-register-target", "::mlir::ModuleOp"> {
  let summary = "put the target device on the module (#pim.target)";
  let description = [{
    Reads a target file (targets/*.json), checks it with pimsim's target
    reader, and sets the module attribute `pim.target` to a
    `#pim.target<name, hash, spec>` holding the whole description, like
    tt-mlir's register-device. Every later backend pass reads the device
    from there, so a module dumped after this pass compiles further with
    pimc-opt alone. A module that already has a different target is an
    error; the same target is left as it is.
  }];
  let options = [
    Option<"targetFile", "target", "std::string", "",
           "target description file (targets/*.json)">,
  ];
  let dependentDialects = ["::pimc::pim::PIMDialect"];
}

#endif // PIMC_PIM_TRANSFORMS_PASSES
