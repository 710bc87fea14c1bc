//===- Passes.td - llm -> pim backend passes -----------------*- tablegen -*-===//
//
// The backend pipeline `pim-backend` (docs/backend.md): pim-register-target,
// pim-dispatch, pim-check-contract, convert-llm-to-pim, pim-tile,
// pim-fuse-host-calls, pim-build-program, pim-fuse-host-kernels, then
// pim-plan-memory and pim-schedule (include/pimc/Dialect/PIM/Transforms/
// Passes.td).
// Each reads the device from the module's #pim.target.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CONVERSION_LLMTOPIM_PASSES
#define PIMC_CONVERSION_LLMTOPIM_PASSES

include "mlir/Pass/PassBase.td"

def PIMDispatch : Pass<"pim-dispatch", "::mlir::ModuleOp"> {
  let summary = "decide where each llm op of @forward runs (PIM or host)";
  let description = [{
    Annotates every llm op of `@forward` with `pim.dispatch` ("pim" |
    "host") and `pim.cost` ({pim_ns, host_ns}), from the target's cost
    model: memory-bound GEMVs and attention over the KV cache go to the PIM
    units when that is faster, everything else to the host. `force`
    overrides the choice per op class (`linear=host`, `attention=pim`,
    `elementwise=host`, `moe=host`, `router=pim`). An llm.moe also gets
    `pim.router_dispatch`: its router runs on the host in f32 when the PIM
    input format is bf16 (routing is discontinuous), else on the PIM units.
    A
    placement no unit can run is an error on the op,
    once per distinct problem with a count.
  }];
  let options = [
    ListOption<"force", "force", "std::string",
               "per op class a forced unit: class=unit, class one of linear, "
               "attention, elementwise, moe, router; unit pim or host">,
  ];
}

def PIMCheckContract : Pass<"pim-check-contract", "::mlir::ModuleOp"> {
  let summary = "check that @forward is what convert-llm-to-pim accepts";
  let description = [{
    The backend contract: every op of `@forward` has a lowering (one error
    lists every missing op with its count), and `@forward` is a language
    model's decode step as the Hugging Face importer writes it (token ids,
    their offset, one KV cache per layer; logits first) with an embedding
    and a vocabulary head. Without this a graph from another frontend would
    fail deep inside the conversion.
  }];
}

def ConvertLLMToPIM : Pass<"convert-llm-to-pim", "::mlir::ModuleOp"> {
  let summary = "rewrite @forward's device work to pim tensor-level ops";
  let description = [{
    Conversion patterns per op family under one ConversionTarget: the GEMV
    family (llm.linear, fused with the next linears that share its input;
    llm.gated_mlp; llm.lm_head) becomes `pim.gemv` and `pim.gated_act`; a
    KV-cache append, its read and the attention over it become
    `pim.attention`. Every other llm op stays, for the host. The dispatch
    decision (`pim.dispatch`, `pim.cost`) moves onto the new ops.
  }];
  let dependentDialects = ["::pimc::pim::PIMDialect"];
}

def PIMTile : Pass<"pim-tile", "::mlir::ModuleOp"> {
  let summary = "decide how each pim.gemv and pim.attention maps onto the target";
  let description = [{
    The mapping decisions, from the target's cost model, recorded for
    pim-build-program: the module's `pim.max_context` (KV positions to
    provision) and `pim.channels` (channels in use); per pim.gemv on the
    PIM units `pim.k_parts` (K split over disjoint channel sets when that
    balances the work); per pim.attention, after checking that the PIM
    mapping can run it, `pim.split` (sequence parts on their own channels,
    merged by attn_combine). Strategy: docs/backend.md.
  }];
  let options = [
    Option<"maxContext", "max-context", "int64_t", "0",
           "KV-cache positions to provision (0: the model's maximum context "
           "capped by what the attention mapping supports)">,
    Option<"channels", "channels", "int64_t", "0",
           "use only the first N channels of the device (0: all)">,
    Option<"attentionSplit", "attention-split", "int64_t", "0",
           "parts each KV head's attention is split over (0: the cost model "
           "decides; 1: no split)">,
  ];
}

def PIMSelectKernels : Pass<"pim-select-kernels", "::mlir::ModuleOp"> {
  let summary = "choose per pim.gemv / pim.attention: generated lowering or a library kernel";
  let description = [{
    For each pim.gemv and pim.attention on the PIM units (after pim-tile),
    the kernels of the library (kernels/*.pimasm, docs/kernel-library.md)
    for its op kind that serve its shape class are priced with their
    `.cost` against the generated lowering's estimate (CostModel.h); the
    choice is recorded as `pim.kernel = "generated"` or
    `"library:<name>"`, the estimates as `pim.kernel_cycles`.
    pim-build-program instantiates the chosen kernel for the op's stream
    bodies. `kernels=generated|library` overrides the cost: `library` on an
    op no kernel serves keeps the generated lowering and warns, once per
    reason, with the count of ops; `library:a,b` does the same with only
    the kernels a and b.
  }];
  let options = [
    Option<"kernels", "kernels", "std::string", "\"auto\"",
           "generated | library | library:NAME,... (only those kernels) | "
           "auto (by cost)">,
  ];
}

def PIMFuseHostCalls : Pass<"pim-fuse-host-calls", "::mlir::ModuleOp"> {
  let summary = "group consecutive host-fallback ops into one host call";
  let description = [{
    The llm ops of @forward without a device lowering or a dedicated host op
    (HostFallback.h) each become a `call` host op running their own
    function. Consecutive ones (only weights, constants and integer index
    ops between them) are one computation on the host: this pass marks each
    maximal run of two or more with `pim.host_group = N`, and
    pim-build-program outlines the run as one function, one call: values
    used only inside the run get no act buffer, the interpreter is entered
    once. Where ops of a run cannot be outlined the call errors as a single
    op would.
  }];
}

def PIMBuildProgram : Pass<"pim-build-program", "::mlir::ModuleOp"> {
  let summary = "place @forward's device work and emit it as a pim.program";
  let description = [{
    Builds the `pim.program` for the module's #pim.target from the
    converted and tiled @forward, appended to the module: each pim.gemv in
    the gemv_rows layout with the K parts pim-tile chose, each
    pim.attention over the KV cache on the PIM units with softmax on the
    near-memory unit (their rows and the kv and weights regions), each
    activation a `pim.buffer` (pim-plan-memory places them), each host op a
    kernel of its own (pim-fuse-host-kernels fuses them), and the entry
    `decode` with its steps in model order without barriers (pim-schedule
    adds them). Strategy: docs/backend.md.
  }];
  let dependentDialects = ["::pimc::pim::PIMDialect"];
}

def PIMFuseHostKernels : Pass<"pim-fuse-host-kernels", "::mlir::ModuleOp"> {
  let summary = "one host kernel per gap between PIM phases";
  let description = [{
    In each entry of each pim.program, a run of consecutive host kernels
    (barriers between them aside) becomes one kernel: the ops in order, one
    launch, followed by a barrier when any kernel of the run was. The fused
    kernel is named
    `<layer>.host<N>` (N counts fused kernels in entry order), its kind is
    that of its dominant op, and it runs on a near-memory unit of the
    target that has every one of its ops, unless it exchanges data with
    the host (embedding, logits, calls) or the module forces
    `elementwise=host`; otherwise on the host (HostKernels.h).
  }];
  let dependentDialects = ["::pimc::pim::PIMDialect"];
}

#endif // PIMC_CONVERSION_LLMTOPIM_PASSES
