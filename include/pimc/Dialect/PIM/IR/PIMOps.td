//===- PIMOps.td - the pim dialect ---------------------------*- tablegen -*-===//
//
// Device level: a placed program for one PIM target. Mirrors the pimsim
// program (docs/pimsim-isa.md) one to one so that serialization is a
// translation, not a decision: parameters, regions (placed DRAM ranges),
// weight bindings, host kernels (lists of host ops), per-channel streams of
// ISA macro-ops with loops, and entry points (ordered steps).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_PIM_OPS
#define PIMC_PIM_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

def PIM_Dialect : Dialect {
  let name = "pim";
  let cppNamespace = "::pimc::pim";
  let summary = "Placed PIM programs: regions, bindings, macro-op streams";
  let description = [{
    The backend's device-level IR. Everything is placed: regions name
    channel/bank/row ranges, weight bindings say where each tensor lives,
    streams hold the macro-ops of the target ISA (`pim.macro`, verified
    against pimsim's opcode table) with explicit ordering (`barrier`), and
    entries sequence streams and host kernels. Integer fields of macro-ops
    are integers or `#pim.index` affine maps over `ch` (the channel's
    position in its stream), the enclosing `pim.loop`s and `pim.param`s; a
    `data` field is a `#pim.data` (a region and a byte offset).
  }];
  let useDefaultAttributePrinterParser = 1;
}

include "pimc/Dialect/PIM/IR/PIMAttrs.td"

class PIM_Op<string mnemonic, list<Trait> traits = []>
    : Op<PIM_Dialect, mnemonic, traits>;

def PIM_I64 : TypedSignlessIntegerAttrBase<I64, "int64_t",
    "64-bit signless integer attribute">;

def PIM_ProgramOp : PIM_Op<"program", [SymbolTable, IsolatedFromAbove,
    NoTerminator, SingleBlock]> {
  let summary = "a placed program for one target";
  let arguments = (ins StrAttr:$target, StrAttr:$target_hash);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def PIM_ParamOp : PIM_Op<"param", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "a runtime parameter (input, derived, or set by the device)";
  let description = [{
    Input (no `src`): supplied per run, within [min, max]. Derived:
    `clamp(((src + add) floordiv div) % mod, min, max)` (`mod = 0`: none).
    With `device` (program format 2.3): set during the run by the kernels
    whose `sets` name it (e.g. the expert a MoE router selected), holding
    `timing` until then and in timing-only runs (docs/pimsim-isa.md,
    "Device parameters").
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, PIM_I64:$min, PIM_I64:$max,
                   OptionalAttr<FlatSymbolRefAttr>:$src,
                   DefaultValuedAttr<PIM_I64, "0">:$add,
                   DefaultValuedAttr<PIM_I64, "1">:$div,
                   DefaultValuedAttr<PIM_I64, "0">:$mod,
                   UnitAttr:$device,
                   DefaultValuedAttr<PIM_I64, "0">:$timing);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

def PIM_RegionOp : PIM_Op<"region", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "a placed block of device memory";
  let description = [{
    The same banks and rows in each channel of `channels`. Ranges are
    [first, count]. `kind`: weights, kv_cache, activations or scratch.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$kind,
                   DenseI64ArrayAttr:$channels, DenseI64ArrayAttr:$banks,
                   DenseI64ArrayAttr:$rows, PIM_I64:$bytes);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

def PIM_BufferOp : PIM_Op<"buffer", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "an activation buffer: `bytes` of the `act` region";
  let description = [{
    pim-build-program allocates one per value it keeps in act; host ops
    name it as `{buf = @b3, off = 16, n, fmt}` and macro ops as
    `#pim.data<@b3, offset>` (offsets relative to the buffer).
    pim-plan-memory places it: `offset` is its first byte in `act`.
    Serialization resolves the references with it; a buffer without an
    offset cannot be serialized.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, PIM_I64:$bytes,
                   OptionalAttr<PIM_I64>:$offset);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

def PIM_WeightOp : PIM_Op<"weight", [HasParent<"ProgramOp">]> {
  let summary = "where a weight tensor is placed";
  let description = [{
    `tensor` is the llm IR's weight name; `layout` (today always a
    `#pim.gemv_rows`) says how the runtime places it (docs/backend-abi.md).
  }];
  let arguments = (ins StrAttr:$tensor, FlatSymbolRefAttr:$region,
                   StrAttr:$format, DenseI64ArrayAttr:$shape,
                   PIM_GemvRowsAttr:$layout, DenseI64ArrayAttr:$rows,
                   PIM_I64:$bytes);
  let assemblyFormat = "$tensor attr-dict";
  let hasVerifier = 1;
}

def PIM_KernelOp : PIM_Op<"kernel", [Symbol, HasParent<"ProgramOp">,
    NoTerminator, SingleBlock]> {
  let summary = "a host kernel: host ops run in order on the act region";
  let description = [{
    `kind` is the pimsim kernel kind; `flops` and `bytes` drive the host
    model; `cost_ns` is the estimate the dispatch recorded. With `unit` the
    kernel runs on that near-memory unit of the target (timed from
    `elements`), otherwise on the host. `layer` is the model layer the
    kernel was emitted in ("L0", "head"; pim-fuse-host-kernels names a
    fused kernel after it). `sets` (2.3) lists the device parameters the
    kernel sets when it completes, each `{param = @e0, data =
    #pim.data<@buffer, byte offset>}`: the int32 it left there.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$kind, PIM_I64:$flops,
                   PIM_I64:$bytes, OptionalAttr<F64Attr>:$cost_ns,
                   OptionalAttr<StrAttr>:$unit,
                   DefaultValuedAttr<PIM_I64, "0">:$elements,
                   OptionalAttr<StrAttr>:$layer,
                   OptionalAttr<ArrayAttr>:$sets);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def PIM_HostOp : PIM_Op<"host_op", [HasParent<"KernelOp">]> {
  let summary = "one host op (docs/backend-abi.md)";
  let description = [{
    `name` is a pimsim::HostOpKind, `args` its fields (PIMHostOp.h); the
    enclosing pim.program verifies them.
  }];
  let arguments = (ins StrAttr:$name, DictionaryAttr:$args);
  let assemblyFormat = "$name $args attr-dict";
}

def PIM_StreamOp : PIM_Op<"stream", [Symbol, HasParent<"ProgramOp">,
    NoTerminator, SingleBlock]> {
  let summary = "macro-ops run by every channel of a channel range";
  let description = [{
    `channels` is [first, count]. Optional `dispatch` records why this
    work runs on PIM (op class, estimated PIM and host nanoseconds). The
    program records what the stream computes (pimsim::StreamInfo): the
    model `layer` ("L0", "head") and `op` ("qkv", "attention"), its `part`
    when the op is split over several streams, the dispatch's class and the
    device-memory `bytes` it streams (weights; attention: the KV cache at
    full context).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DenseI64ArrayAttr:$channels,
                   OptionalAttr<DictionaryAttr>:$dispatch,
                   OptionalAttr<StrAttr>:$layer, OptionalAttr<StrAttr>:$op,
                   OptionalAttr<PIM_I64>:$part, OptionalAttr<PIM_I64>:$bytes);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def PIM_LoopOp : PIM_Op<"loop", [NoTerminator, SingleBlock]> {
  let summary = "repeat the body `count` times";
  let description = [{
    `count` is an integer >= 1 or a `#pim.index` (over `ch`, the loops
    around this one and parameters). Inside the body, the iteration number
    is dimension `d<depth>` of the fields' `#pim.index` maps (`d1` for the
    outermost loop).
  }];
  let arguments = (ins AnyAttr:$count);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$count attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def PIM_MacroOp : PIM_Op<"macro"> {
  let summary = "one ISA macro-op (docs/pimsim-isa.md)";
  let description = [{
    `op` is the mnemonic (`mac_ab`, `wr_gb`, `rd_acc`, `mv_sb`, `sfm`,
    `mv_gb`, `st`, `barrier`, ...); `fields` holds the op's fields: an
    integer or a `#pim.index`, `data` a `#pim.data`, `fn` a function name.
    The verifier checks the fields against pimsim's table of the opcode.
  }];
  let arguments = (ins StrAttr:$op, DictionaryAttr:$fields);
  let assemblyFormat = "$op $fields attr-dict";
  let hasVerifier = 1;
}

def PIM_EntryOp : PIM_Op<"entry", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "an entry point: streams, kernels and barriers in order";
  let arguments = (ins SymbolNameAttr:$sym_name, ArrayAttr:$steps);
  let assemblyFormat = "$sym_name $steps attr-dict";
  let hasVerifier = 1;
}

include "pimc/Dialect/PIM/IR/PIMTensorOps.td"

#endif // PIMC_PIM_OPS
