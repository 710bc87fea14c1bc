//===- LLMBase.td - llm dialect, enums and types ------------*- tablegen -*-===//
#ifndef PIMC_LLM_BASE
#define PIMC_LLM_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def LLM_Dialect : Dialect {
  let name = "llm";
  let cppNamespace = "::pimc::llm";
  let summary = "Model-level LLM primitives";
  let description = [{
    Faithful, frontend-neutral primitives that language models are made of:
    embedding, linear layers with dense or quantized weights, norms, rotary
    embedding, attention with a KV cache, gated MLPs, element-wise,
    reduction and tensor ops. Weights are not stored in the IR: `llm.weight`
    names a checkpoint tensor. Activations are f32 tensors; each op states
    its accumulation type and rounding in its description. The reference
    interpreter (lib/Reference) implements every op and is the golden model
    for all lowerings.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // `llm.dynamic_dims` on a function (LLM_SymbolicDimAttr).
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The function attribute listing the symbolic input dims a function was
    /// specialised from (an array of #llm.symbolic_dim).
    static constexpr ::llvm::StringLiteral kDynamicDimsAttr = "llm.dynamic_dims";
  }];
}

class LLM_Op<string mnemonic, list<Trait> traits = []>
    : Op<LLM_Dialect, mnemonic, traits>;
class LLM_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<LLM_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def LLM_RopeKind : I32EnumAttr<"RopeKind", "rotary embedding frequency scheme", [
    I32EnumAttrCase<"Default", 0, "default">,
    I32EnumAttrCase<"Linear", 1, "linear">,
    I32EnumAttrCase<"Dynamic", 2, "dynamic">,
    I32EnumAttrCase<"Yarn", 3, "yarn">,
    I32EnumAttrCase<"Llama3", 4, "llama3">,
    I32EnumAttrCase<"LongRope", 5, "longrope">]> {
  let cppNamespace = "::pimc::llm";
  let genSpecializedAttr = 0;
}
def LLM_RopeKindAttr : EnumAttr<LLM_Dialect, LLM_RopeKind, "rope_kind">;

def LLM_RopeLayout : I32EnumAttr<"RopeLayout", "which dimensions form a rotated pair", [
    I32EnumAttrCase<"HalfSplit", 0, "half_split">,
    I32EnumAttrCase<"Interleaved", 1, "interleaved">]> {
  let cppNamespace = "::pimc::llm";
  let genSpecializedAttr = 0;
}
def LLM_RopeLayoutAttr : EnumAttr<LLM_Dialect, LLM_RopeLayout, "rope_layout">;

def LLM_NormStyle : I32EnumAttr<"NormStyle", "RMS norm weight convention", [
    I32EnumAttrCase<"Llama", 0, "llama">,
    I32EnumAttrCase<"Gemma", 1, "gemma">]> {
  let cppNamespace = "::pimc::llm";
  let genSpecializedAttr = 0;
}
def LLM_NormStyleAttr : EnumAttr<LLM_Dialect, LLM_NormStyle, "norm_style">;

def LLM_Activation : I32EnumAttr<"Activation", "gate activation of a gated MLP", [
    I32EnumAttrCase<"Silu", 0, "silu">,
    I32EnumAttrCase<"Gelu", 1, "gelu">,
    I32EnumAttrCase<"GeluTanh", 2, "gelu_tanh">,
    I32EnumAttrCase<"ClampedSwiglu", 3, "clamped_swiglu">]> {
  let cppNamespace = "::pimc::llm";
  let genSpecializedAttr = 0;
}
def LLM_ActivationAttr : EnumAttr<LLM_Dialect, LLM_Activation, "activation">;

def LLM_ReduceKind : I32EnumAttr<"ReduceKind", "reduction", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Mean", 2, "mean">,
    I32EnumAttrCase<"Min", 3, "min">,
    I32EnumAttrCase<"Prod", 4, "prod">]> {
  let cppNamespace = "::pimc::llm";
  let genSpecializedAttr = 0;
}
def LLM_ReduceKindAttr : EnumAttr<LLM_Dialect, LLM_ReduceKind, "reduce_kind">;

def LLM_ComparePredicate : I32EnumAttr<"ComparePredicate", "element-wise comparison", [
    I32EnumAttrCase<"Eq", 0, "eq">,
    I32EnumAttrCase<"Ne", 1, "ne">,
    I32EnumAttrCase<"Lt", 2, "lt">,
    I32EnumAttrCase<"Le", 3, "le">,
    I32EnumAttrCase<"Gt", 4, "gt">,
    I32EnumAttrCase<"Ge", 5, "ge">]> {
  let cppNamespace = "::pimc::llm";
  let genSpecializedAttr = 0;
}
def LLM_ComparePredicateAttr : EnumAttr<LLM_Dialect, LLM_ComparePredicate, "predicate">;

def LLM_MoEScoring : I32EnumAttr<"MoEScoring", "MoE router scoring function", [
    I32EnumAttrCase<"Softmax", 0, "softmax">,
    I32EnumAttrCase<"Sigmoid", 1, "sigmoid">]> {
  let cppNamespace = "::pimc::llm";
  let genSpecializedAttr = 0;
}
def LLM_MoEScoringAttr : EnumAttr<LLM_Dialect, LLM_MoEScoring, "moe_scoring">;

def LLM_MoERoutingOrder : I32EnumAttr<"MoERoutingOrder",
    "whether the router scores all experts before or after top-k", [
    I32EnumAttrCase<"ScoreThenTopk", 0, "score_then_topk">,
    I32EnumAttrCase<"TopkThenScore", 1, "topk_then_score">]> {
  let cppNamespace = "::pimc::llm";
  let genSpecializedAttr = 0;
}
def LLM_MoERoutingOrderAttr : EnumAttr<LLM_Dialect, LLM_MoERoutingOrder, "moe_order">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def LLM_SymbolicDimAttr : AttrDef<LLM_Dialect, "SymbolicDim"> {
  let mnemonic = "symbolic_dim";
  let summary = "a symbolic input dimension and the size it is specialised to";
  let description = [{
    A graph exported with a symbolic size (torch.export's `Dim("seq")`, the
    symbol `s70`, valid in [min, max]) is imported at one size of that range:
    llm ops and the backend are static-shaped, like a program compiled per
    sequence-length bucket. The function records, in `llm.dynamic_dims`, which
    argument dimension is symbolic, its range, the traced example and the
    `value` it was specialised to, so that the constraint stays in the IR:
    the verifier checks the argument's size is `value`, inside the range, and
    that one symbol has one value. `pimc import graph.json --dim seq=N`
    specialises the same graph to another size.

    Example: `#llm.symbolic_dim<arg = 0, dim = 1, name = "seq", symbol = "s70",
    min = 2, max = 64, example = 8, value = 13>` (`max` is omitted when the
    range is unbounded).
  }];
  let parameters = (ins "int64_t":$arg, "int64_t":$dim,
                        StringRefParameter<>:$name, StringRefParameter<>:$symbol,
                        "int64_t":$min,
                        OptionalParameter<"std::optional<int64_t>">:$max,
                        "int64_t":$example, "int64_t":$value);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def LLM_KVCacheType : LLM_Type<"KVCache", "kv_cache"> {
  let summary = "per-layer key/value cache";
  let description = [{
    The keys and values of one attention layer for up to `max_length`
    positions: two buffers of shape [max_length, kv_heads, head_dim] of
    `element_type`. Keys are stored after RoPE. A cache value is used
    linearly (each append consumes one value and produces the next), so an
    implementation may update it in place.

    Example: `!llm.kv_cache<max_length = 2048, kv_heads = 8, head_dim = 128,
    element_type = f32>`

    A latent cache (`value_prefix` V > 0, MLA) stores the keys only: the
    value of a position is the first V dims of its key. DeepSeek's absorbed
    attention caches [c_KV; k_rope] (kv_lora_rank + qk_rope_head_dim) once
    per token, one head, and reads c_KV as the values.
    `!llm.kv_cache<max_length = 2048, kv_heads = 1, head_dim = 576,
    element_type = f32, value_prefix = 512>`
  }];
  let parameters = (ins "int64_t":$max_length, "int64_t":$kv_heads,
                        "int64_t":$head_dim, "::mlir::Type":$element_type,
                        DefaultValuedParameter<"int64_t", "0">:$value_prefix);
  let skipDefaultBuilders = 1;
  let builders = [
    TypeBuilder<(ins "int64_t":$maxLength, "int64_t":$kvHeads,
                     "int64_t":$headDim, "::mlir::Type":$elementType,
                     CArg<"int64_t", "0">:$valuePrefix), [{
      return $_get($_ctxt, maxLength, kvHeads, headDim, elementType,
                   valuePrefix);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The dims of a cached value: value_prefix, or head_dim.
    int64_t getValueDim() const {
      return getValuePrefix() > 0 ? getValuePrefix() : getHeadDim();
    }
  }];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_RecurrentStateType : LLM_Type<"RecurrentState", "recurrent_state"> {
  let summary = "per-layer state of a recurrent mixer";
  let description = [{
    What a recurrent layer carries from one position to the next: a
    convolution's last inputs ([channels, kernel - 1]) or a scan's state
    ([heads, head_dim, state_size], [value_heads, dk, dv]), of `shape` and
    `element_type`, zero before the first position. Like a KV cache, a
    state value is used linearly (the op that updates it consumes it), so
    an implementation keeps one buffer per layer and updates it in place.
    Example: `!llm.recurrent_state<shape = [16, 64, 16], element_type = f32>`
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$element_type);
  let assemblyFormat = [{
    `<` `shape` `=` `[` $shape `]` `,` struct($element_type) `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getNumElements() const;
  }];
}
def LLM_QuantizedWeightType : LLM_Type<"QuantizedWeight", "qweight"> {
  let summary = "a quantized weight matrix: one value, its scheme in the type";
  let description = [{
    A [N, K] weight (N outputs, K inputs, contraction along axis 1) stored as
    integer codes with per-group scales. Element n, k dequantizes to

      W[n, k] = scale[n, g] * (code[n, k] - zero[n, g]),  g = k / group_size

    computed in f32 (scale widened from `scale_type`).
    - `storage_type`: the code format, unsigned `ui4` or `ui8`.
    - `group_size`: consecutive K elements sharing a scale; `group_size = K`
      is per-channel (one scale per output row).
    - `scale_type`: stored scale format (f16, bf16, f32).
    - `zero_point`: `none` for symmetric schemes (zero is the midpoint
      2^(bits-1) of the code range), else the integer type in which a zero
      point per (n, g) is stored.
    - `packing`: how the codes, scales and zeros are laid out in the
      checkpoint: "gptq" (qweight int32 [K*bits/32, N] packed along K, LSB
      first; qzeros packed along N storing z - 1; scales [K/G, N]) or
      "gptq_v2" (same, zeros stored as z).

    Other formats (FP8, MX, NVFP4, GGUF blocks) are further storage types and
    packings of the same type.

    Example: `!llm.qweight<shape = [512, 256], storage_type = ui4,
    group_size = 64, scale_type = f16, zero_point = ui4, packing = "gptq">`
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$storage_type, "int64_t":$group_size,
                        "::mlir::Type":$scale_type, "::mlir::Type":$zero_point,
                        StringRefParameter<>:$packing);
  let assemblyFormat = [{
    `<` `shape` `=` `[` $shape `]` `,` struct($storage_type, $group_size,
    $scale_type, $zero_point, $packing) `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRows() const { return getShape()[0]; }
    int64_t getCols() const { return getShape()[1]; }
    unsigned getBits() const { return getStorageType().getIntOrFloatBitWidth(); }
    bool isSymmetric() const { return ::mlir::isa<::mlir::NoneType>(getZeroPoint()); }
  }];
}

#endif // PIMC_LLM_BASE
