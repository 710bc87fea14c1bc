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

def PIM_IndexAttr : AttrDef<PIM_Dialect, "Index"> {
  let mnemonic = "index";
  let summary = "a macro-op field that varies: an affine map over loops, ch and parameters";
  let description = [{
    The value of an integer field of `pim.macro` (or the count of a
    `pim.loop`) that is not a constant: `map` has one result, linear in its
    inputs (no products of variables, no `mod`, `floordiv` or `ceildiv`).
    Dimension `d0` is `ch`, the executing channel's position in its stream's
    channel set; `d1`, `d2`, ... are the enclosing `pim.loop`s' iteration
    numbers, outermost first (a map may leave trailing loops out). Symbol
    `s<i>` is the runtime parameter `params[i]` (a `pim.param`). pimsim
    stores exactly this form: a base plus one stride per variable
    (docs/pimsim-isa.md).

    Example: row `40 + 8 * i + krow` inside one loop:
    ```mlir
    row = #pim.index<(d0, d1)[s0] -> (d1 * 8 + s0 + 40), [@krow_0]>
    ```
  }];
  let parameters = (ins "::mlir::AffineMap":$map, "::mlir::ArrayAttr":$params);
  let assemblyFormat = "`<` $map `,` $params `>`";
  let genVerifyDecl = 1;
}

def PIM_DataAttr : AttrDef<PIM_Dialect, "Data"> {
  let mnemonic = "data";
  let summary = "a byte address in a host-visible region (the `data` field)";
  let description = [{
    `region` is a `pim.region`; `offset` its byte offset, an integer or a
    `#pim.index`.

    Example: `data = #pim.data<@act, #pim.index<(d0) -> (d0 * 256 + 1024), []>>`
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$region,
                        "::mlir::Attribute":$offset);
  let assemblyFormat = "`<` $region `,` $offset `>`";
}

def PIM_GptqSourceAttr : AttrDef<PIM_Dialect, "GptqSource"> {
  let mnemonic = "gptq";
  let summary = "a weight read from a GPTQ-packed checkpoint tensor";
  let description = [{
    The checkpoint holds `<tensor>.qweight`, `.qzeros` and `.scales`; the
    runtime dequantizes them into the device format when it places the
    weight (docs/backend-abi.md). `group_size` -1: one group over K;
    `packing` `gptq` (zeros stored minus one) or `gptq_v2`; `scale_type`,
    when given, the dtype the checkpoint's scales must have.
  }];
  let parameters = (ins "int64_t":$bits, "int64_t":$group_size, "bool":$sym,
                        StringRefParameter<"gptq or gptq_v2">:$packing,
                        StringRefParameter<"f16, bf16 or f32", "\"\"">:$scale_type);
  let assemblyFormat = "`<` struct(params) `>`";
}

def PIM_GemvRowsAttr : AttrDef<PIM_Dialect, "GemvRows"> {
  let mnemonic = "gemv_rows";
  let summary = "the gemv_rows weight layout (docs/backend-abi.md)";
  let description = [{
    Output rows n0.. of a fused GEMV group over channels [ch0, ch0 + nch) x
    all banks; each output row's elements [k0, k0 + k_len) of K in k_rows
    DRAM rows from row0. Without `gptq` the checkpoint tensor is dense. The
    program's `GemvRows` table is this attribute (pimsim checks the same
    domains: pimsim::gemvRowsProblems).

    Example: `#pim.gemv_rows<n0 = 0, ch0 = 0, nch = 6, row0 = 12, k_rows = 1,
    k0 = 0, k_len = 256>`
  }];
  let parameters = (ins "int64_t":$n0, "int64_t":$ch0, "int64_t":$nch,
                        "int64_t":$row0, "int64_t":$k_rows, "int64_t":$k0,
                        "int64_t":$k_len,
                        OptionalParameter<"GptqSourceAttr">:$gptq);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The program format's form of this layout.
    ::pimsim::GemvRows toABI() const;
  }];
}

#endif // PIMC_PIM_ATTRS
