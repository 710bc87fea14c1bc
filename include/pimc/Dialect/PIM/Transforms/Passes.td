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

def PIMPlanMemory : Pass<"pim-plan-memory", "::mlir::ModuleOp"> {
  let summary = "place the activation buffers in the act region";
  let description = [{
    Gives each `pim.buffer` of each `pim.program` its byte offset in the
    `act` region (the buffer's `offset`; host ops and macro ops keep naming
    the buffer, and serialization resolves the references). Runs after
    pim-schedule: buffers whose lifetimes (the runs of steps between
    barriers from the first that touches the buffer to the last) do not
    overlap share bytes. A buffer read before a run of its entry writes
    it, used by two entries, touched by no step, or read by the runtime
    after the run (the logits) is live throughout. Offsets are first-fit
    in order of first use, 64-byte aligned. Then places `act` after the
    rows the other regions (KV cache, weights) use, on the weights'
    channels, and checks that the model fits the target: a model that does
    not says by how much and what takes the rows. Records the act bytes as
    `pim.act_bytes` (the program's memory plan). A program that has its
    `act` region already is left as it is.
  }];
}

def PIMSchedule : Pass<"pim-schedule", "::mlir::ModuleOp"> {
  let summary = "insert the barriers each entry needs between its steps";
  let description = [{
    The steps of a `pim.entry` between two barriers run concurrently. For
    each entry of each `pim.program`, in order, a barrier goes before every
    step that reads what a step since the last barrier writes, or writes
    what such a step reads or writes, and one at the end of the entry.
    Footprints: the act-region bytes a kernel's host ops read and write
    (pimsim::forEachHostBuffer), the `data` bytes and the DRAM rows (on the
    stream's channels) of a stream's macro ops, each over every value its
    loop variables, `ch` and the parameters can take. An op this pass
    cannot bound touches everything. Unplaced buffers are distinct bytes
    (pim-plan-memory places them after this pass, by the barriers it
    leaves). Barriers already in an entry stay, so the pass is idempotent.
  }];
}

#endif // PIMC_PIM_TRANSFORMS_PASSES
