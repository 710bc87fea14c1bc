//===- Passes.td - llm -> llm raising passes ----------------*- tablegen -*-===//
//
// Raising recovers the fused llm primitives (norms, rotary embedding,
// attention, gated MLPs, MoE) from the primitive-op graphs the FX and ONNX
// importers produce. Each pass only fires when the decomposed graph computes
// exactly the fused op's function (see docs/raising.md).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_LLM_TRANSFORMS_PASSES
#define PIMC_LLM_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def RaiseNorms : Pass<"llm-raise-norms"> {
  let summary = "recover llm.rms_norm and llm.layer_norm from their decompositions";
  let description = [{
    RMS norm `x * rsqrt(mean(x^2, -1) + eps) * w` (also `x / sqrt(...)`,
    `x * x` for the square, the weight on either side) becomes
    `llm.rms_norm`; with `(1 + w)` as the factor it is the `gemma` style.
    Layer norm `(x - mean(x)) * rsqrt(mean((x - mean(x))^2) + eps)` (or
    divided by the sqrt) becomes `llm.layer_norm`, and a following multiply
    by a [n] weight and add of a [n] bias fold into it.
  }];
  let dependentDialects = ["::pimc::llm::LLMDialect"];
}

def RaiseGatedMLP : Pass<"llm-raise-gated-mlp"> {
  let summary = "recover llm.gelu and llm.gated_mlp from their decompositions";
  let description = [{
    Spelled-out GELUs (`0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`,
    `0.5 x (1 + erf(x / sqrt 2))`) become `llm.gelu`; then
    `llm.linear(act(llm.linear(x, Wg)) * llm.linear(x, Wu), Wd)` without
    biases, with act one of silu (or `g * sigmoid(g)`), gelu, gelu_tanh,
    becomes `llm.gated_mlp`.
  }];
  let dependentDialects = ["::pimc::llm::LLMDialect"];
}

def RaiseAttention : Pass<"llm-raise-attention"> {
  let summary = "recover llm.attention from matmul-scale-mask-softmax-matmul";
  let description = [{
    `matmul(softmax(matmul(q, k^T) * scale [+ mask], -1), v)` on
    [B = 1, heads, T, hd] (or [heads, T, hd]) tensors becomes
    `llm.attention` on [T, heads, hd] with transposes/reshapes around it.
    GQA through repeat_kv (unsqueeze, expand, reshape) is folded into the
    op's kv heads. A constant additive or select mask must be exactly
    causal (optionally with a sliding window), or all-visible.
  }];
  let options = [
    ListOption<"weightFiles", "weights", "std::string",
               "safetensors files whose llm.weight tensors the pattern may read "
               "as constants (rotary inv_freq and mask buffers)">
  ];
  let dependentDialects = ["::pimc::llm::LLMDialect"];
}

def RaiseRope : Pass<"llm-raise-rope"> {
  let summary = "recover llm.rope from x*cos + rotate_half(x)*sin";
  let description = [{
    Half-split rotary embedding `x * cos + cat(-x2, x1) * sin` on
    [B = 1, heads, T, hd] (or [T, heads, hd]) tensors whose cos/sin tables
    are constant-computable in the graph becomes `llm.rope`. Theta and the
    position offset are recovered from the angle table and every table
    entry is checked against `cos/sin((offset + t) * theta^(-2i/d))`.
    Stored tables (constants or llm.weight read from `weights`, as
    torch.onnx.export leaves registered cos/sin buffers) are recognised
    from their values alone.
  }];
  let options = [
    ListOption<"weightFiles", "weights", "std::string",
               "safetensors files whose llm.weight tensors the pattern may read "
               "as constants (rotary inv_freq and mask buffers)">
  ];
  // The position offset operand is an arith.constant index.
  let dependentDialects = ["::pimc::llm::LLMDialect",
                           "::mlir::arith::ArithDialect"];
}

def RaiseMoE : Pass<"llm-raise-moe"> {
  let summary = "recover llm.moe from the dense MoE formulation";
  let description = [{
    `sum(routing[:, :, None] * stack([expert_e(x)], 1), 1)` with every
    expert an `llm.gated_mlp` on x becomes `llm.moe`, when the routing
    subgraph (router projection of x, then scores, top-k, renormalisation,
    scatter) computes one of llm.moe's routing functions. Run after
    llm-raise-gated-mlp.
  }];
  let options = [
    ListOption<"weightFiles", "weights", "std::string",
               "safetensors files whose llm.weight tensors the pattern may read "
               "as constants">
  ];
  let dependentDialects = ["::pimc::llm::LLMDialect"];
}

def SynthesizeDecode : Pass<"llm-synthesize-decode", "::mlir::ModuleOp"> {
  let summary = "turn a causal LM graph into a decode step with KV caches";
  let description = [{
    A graph traced over T tokens at positions 0..T-1 (token ids [T] or
    [1, T] -> logits), as the FX and ONNX importers write it after raising,
    becomes the decode step the backend compiles: @forward(tokens, offset,
    one !llm.kv_cache per attention) -> (logits, caches), for one token at
    position `offset`. The sequence dimension is tracked through every op;
    each op must act per position (norms, projections, MLPs, MoE,
    element-wise ops, reshapes that keep the sequence dimension), except:
    causal llm.attention, which appends its keys and values to a new cache
    and attends over [0, offset + 1); llm.rope at offset 0, which moves to
    `offset`; the constant arange(T) (learned position tables), which
    becomes llm.positions; and the last-token slice, which becomes the
    identity. Anything else (an op that mixes positions, a constant laid
    out along the sequence, extra graph inputs) is an error naming the op.
    The final projection to the vocabulary becomes llm.lm_head.
  }];
  let options = [
    Option<"maxContext", "max-context", "int64_t", "4096",
           "KV-cache capacity in positions (lowered to the rows of a learned "
           "position table)">
  ];
  let dependentDialects = ["::pimc::llm::LLMDialect"];
}

#endif // PIMC_LLM_TRANSFORMS_PASSES
