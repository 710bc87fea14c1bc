//===- PIMAttrs.td - pim dialect attributes ------------------*- tablegen -*-===//
//
// The device in the IR: `#pim.target` on the module says which PIM device
// the module is compiled for, with the whole target description, so that a
// dumped module can be compiled further by pimc-opt with nothing beside it.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_PIM_ATTRS
#define PIMC_PIM_ATTRS

include "mlir/IR/AttrTypeBase.td"

def PIM_TargetAttr : AttrDef<PIM_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "the PIM device a module is compiled for";
  let description = [{
    Set on the module by `pim-register-target` (module attribute
    `pim.target`) and read by every later backend pass. `spec` is the target
    file (targets/*.json, docs/target-schema.md) as an attribute: objects
    are dictionaries, arrays are arrays, numbers are i64 or f64, strings are
    strings. It must be a valid target: the verifier reads it back through
    pimsim's target reader. `hash` is the content hash of the file it came
    from; the program records it and pimsim refuses a different file.

    Example:
    ```mlir
    module attributes {pim.target = #pim.target<name = "hbm3-pim",
        hash = "sha256:...", spec = {clock = {tck_ps = 769 : i64}, ...}>} {
    ```
  }];
  let parameters = (ins StringRefParameter<"the target's name">:$name,
                        StringRefParameter<"content hash of the target file">:$hash,
                        "::mlir::DictionaryAttr":$spec);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The module attribute's name.
    static constexpr ::llvm::StringLiteral kModuleAttrName = "pim.target";
    /// The target description, read back through pimsim's target reader.
    ::llvm::Expected<::pimsim::Target> getTarget() const;
    /// A target attribute from a target file's bytes (validated first);
    /// `source` names the file in errors.
    static ::llvm::Expected<TargetAttr> fromFile(::mlir::MLIRContext *context,
                                                 ::llvm::StringRef fileBytes,
                                                 ::llvm::StringRef source);
    /// The module's target, with an error on `module` when it has none
    /// (run pim-register-target first) or it is invalid.
    static ::mlir::FailureOr<::pimsim::Target> lookup(::mlir::ModuleOp module);
  }];
}

#endif // PIMC_PIM_ATTRS
