// RUN: %python %S/Inputs/raise-rope-yarn-tables.py %t.safetensors
// RUN: pimc-opt %s --split-input-file --llm-raise-rope="weights=%t.safetensors" | FileCheck %s
//
// YaRN (DeepSeek-V2/V3, Qwen2.5 long context, gpt-oss): inv_freq blended
// between interpolation (/ factor) and extrapolation along a linear ramp
// between the beta_fast / beta_slow correction dims, cos and sin scaled by
// the attention factor. The pattern recovers theta, factor, L0, the betas,
// truncate and the attention factor from the tables and checks every entry
// against the reference kernels. The llm.weight tables come from
// Inputs/raise-rope-yarn-tables.py (HF's _compute_yarn_parameters).

// Computed in the graph as the torch bridge's llama_yarn does: theta 1e4,
// d = 16, factor 4, original context 1024, HF's default betas 32 / 1 (ramp
// over dims 1..5), cos(freqs) and sin(freqs) times 0.1 ln 4 + 1 (HF's
// default attention factor: no attention attributes).
// CHECK-LABEL: func.func @yarn_computed
// CHECK: %[[OFF:.*]] = arith.constant 0 : index
// CHECK: llm.rope %{{.*}}, %[[OFF]] {beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64, factor = 4.000000e+00 : f64, kind = #llm<rope_kind yarn>, layout = #llm<rope_layout half_split>, original_max_position_embeddings = 1024 : i64, rotary_dim = 16 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x16xf32>
// CHECK-NOT: llm.cos
func.func @yarn_computed(%q: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %inv = arith.constant dense<[[[1.0], [0.316227764], [0.0812500045], [0.0197642371], [0.00437500002], [0.000790569466], [0.000250000012], [7.90569466e-05]]]> : tensor<1x8x1xf32>
  %pos = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0]]]> : tensor<1x1x4xf32>
  %af = arith.constant dense<1.1386294> : tensor<1x4x8xf32>
  %zero = arith.constant dense<0.0> : tensor<1x4x8xf32>
  %fr = llm.matmul %inv, %pos : (tensor<1x8x1xf32>, tensor<1x1x4xf32>) -> tensor<1x8x4xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x8x4xf32> -> tensor<1x4x8xf32>
  %cos = llm.cos %frt : tensor<1x4x8xf32>
  %sin = llm.sin %frt : tensor<1x4x8xf32>
  %cs = llm.mul %cos, %af : tensor<1x4x8xf32>
  %ss = llm.mul %sin, %af : tensor<1x4x8xf32>
  %cc = llm.concat %cs, %cs {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %sc = llm.concat %ss, %ss {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %cu = llm.reshape %cc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %su = llm.reshape %sc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %cb = llm.broadcast %cu : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %sb = llm.broadcast %su : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x16xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 8 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x8xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x16xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x16xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x16xf32>
  return %out : tensor<1x2x4x16xf32>
}

// -----

// Negative: the same tables with the attention factor on cos only
// (cos^2 + sin^2 varies with the angle): no parameters reproduce sin.
// CHECK-LABEL: func.func @yarn_attention_factor_on_cos_only
// CHECK-NOT: llm.rope
// CHECK: llm.cos
func.func @yarn_attention_factor_on_cos_only(%q: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %inv = arith.constant dense<[[[1.0], [0.316227764], [0.0812500045], [0.0197642371], [0.00437500002], [0.000790569466], [0.000250000012], [7.90569466e-05]]]> : tensor<1x8x1xf32>
  %pos = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0]]]> : tensor<1x1x4xf32>
  %af = arith.constant dense<1.1386294> : tensor<1x4x8xf32>
  %zero = arith.constant dense<0.0> : tensor<1x4x8xf32>
  %fr = llm.matmul %inv, %pos : (tensor<1x8x1xf32>, tensor<1x1x4xf32>) -> tensor<1x8x4xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x8x4xf32> -> tensor<1x4x8xf32>
  %cos = llm.cos %frt : tensor<1x4x8xf32>
  %sin = llm.sin %frt : tensor<1x4x8xf32>
  %cs = llm.mul %cos, %af : tensor<1x4x8xf32>
  %ss = llm.add %sin, %zero : tensor<1x4x8xf32>
  %cc = llm.concat %cs, %cs {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %sc = llm.concat %ss, %ss {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %cu = llm.reshape %cc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %su = llm.reshape %sc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %cb = llm.broadcast %cu : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %sb = llm.broadcast %su : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x16xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 8 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x8xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x16xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x16xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x16xf32>
  return %out : tensor<1x2x4x16xf32>
}

// -----

// gpt-oss: theta 150000, d = 64, factor 32, original context 4096,
// truncate = false (correction dims 8.09 and 17.40 unrounded), attention
// factor 0.1 ln 32 + 1 = 1.3466, stored [T, d] tables.
// CHECK-LABEL: func.func @gptoss
// CHECK: llm.rope %{{.*}}, %{{.*}} {beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64, factor = 3.200000e+01 : f64, kind = #llm<rope_kind yarn>, layout = #llm<rope_layout half_split>, original_max_position_embeddings = 4096 : i64, rotary_dim = 64 : i64, theta = 1.500000e+05 : f64, truncate = false} : tensor<4x2x64xf32>
// CHECK-NOT: llm.neg
func.func @gptoss(%q: tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32> {
  %cos = llm.weight "gptoss.cos" : tensor<4x64xf32>
  %sin = llm.weight "gptoss.sin" : tensor<4x64xf32>
  %cb = llm.broadcast %cos : tensor<4x64xf32> -> tensor<1x2x4x64xf32>
  %sb = llm.broadcast %sin : tensor<4x64xf32> -> tensor<1x2x4x64xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x64xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 32 : i64} : tensor<1x2x4x64xf32> -> tensor<1x2x4x32xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 32 : i64, size = 32 : i64} : tensor<1x2x4x64xf32> -> tensor<1x2x4x32xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x32xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x32xf32>, tensor<1x2x4x32xf32>) -> tensor<1x2x4x64xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x64xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x64xf32>
  return %out : tensor<1x2x4x64xf32>
}

// -----

// DeepSeek-V3: theta 1e4, d = 64, factor 40, original context 4096,
// correction dims 10 / 23, mscale = mscale_all_dim = 1 (cos and sin
// unscaled: the tables say only the ratio, recovered as attention_factor),
// interleaved pairs, [T, h, d] operand at positions 2..4.
// CHECK-LABEL: func.func @deepseek
// CHECK: %[[OFF:.*]] = arith.constant 2 : index
// CHECK: llm.rope %arg0, %[[OFF]] {attention_factor = 1.000000e+00 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64, factor = 4.000000e+01 : f64, kind = #llm<rope_kind yarn>, layout = #llm<rope_layout interleaved>, original_max_position_embeddings = 4096 : i64, rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<3x2x64xf32>
func.func @deepseek(%q: tensor<3x2x64xf32>) -> tensor<3x2x64xf32> {
  %cos = llm.weight "deepseek.cos" : tensor<3x1x64xf32>
  %sin = llm.weight "deepseek.sin" : tensor<3x1x64xf32>
  %cb = llm.broadcast %cos : tensor<3x1x64xf32> -> tensor<3x2x64xf32>
  %sb = llm.broadcast %sin : tensor<3x1x64xf32> -> tensor<3x2x64xf32>
  %even = arith.constant dense<[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62]> : tensor<32xi64>
  %odd = arith.constant dense<[1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63]> : tensor<32xi64>
  %x1 = llm.gather %q, %even {axis = 2 : i64} : (tensor<3x2x64xf32>, tensor<32xi64>) -> tensor<3x2x32xf32>
  %x2 = llm.gather %q, %odd {axis = 2 : i64} : (tensor<3x2x64xf32>, tensor<32xi64>) -> tensor<3x2x32xf32>
  %nx2 = llm.neg %x2 : tensor<3x2x32xf32>
  %a = llm.reshape %nx2 : tensor<3x2x32xf32> -> tensor<3x2x32x1xf32>
  %b = llm.reshape %x1 : tensor<3x2x32xf32> -> tensor<3x2x32x1xf32>
  %st = llm.concat %a, %b {axis = 3 : i64} : (tensor<3x2x32x1xf32>, tensor<3x2x32x1xf32>) -> tensor<3x2x32x2xf32>
  %rot = llm.reshape %st : tensor<3x2x32x2xf32> -> tensor<3x2x64xf32>
  %qc = llm.mul %q, %cb : tensor<3x2x64xf32>
  %qs = llm.mul %rot, %sb : tensor<3x2x64xf32>
  %out = llm.add %qc, %qs : tensor<3x2x64xf32>
  return %out : tensor<3x2x64xf32>
}

// -----

// Qwen2.5 long context (rope_scaling {"type": "yarn", "factor": 4,
// "original_max_position_embeddings": 32768}, theta 1e6, d = 128): HF's
// default betas and attention factor.
// CHECK-LABEL: func.func @qwen
// CHECK: llm.rope %{{.*}}, %{{.*}} {beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64, factor = 4.000000e+00 : f64, kind = #llm<rope_kind yarn>, layout = #llm<rope_layout half_split>, original_max_position_embeddings = 32768 : i64, rotary_dim = 128 : i64, theta = 1.000000e+06 : f64} : tensor<4x2x128xf32>
func.func @qwen(%q: tensor<1x2x4x128xf32>) -> tensor<1x2x4x128xf32> {
  %cos = llm.weight "qwen.cos" : tensor<4x128xf32>
  %sin = llm.weight "qwen.sin" : tensor<4x128xf32>
  %cb = llm.broadcast %cos : tensor<4x128xf32> -> tensor<1x2x4x128xf32>
  %sb = llm.broadcast %sin : tensor<4x128xf32> -> tensor<1x2x4x128xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x128xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 64 : i64} : tensor<1x2x4x128xf32> -> tensor<1x2x4x64xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 64 : i64, size = 64 : i64} : tensor<1x2x4x128xf32> -> tensor<1x2x4x64xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x64xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x64xf32>, tensor<1x2x4x64xf32>) -> tensor<1x2x4x128xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x128xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x128xf32>
  return %out : tensor<1x2x4x128xf32>
}

// -----

// DeepSeek-V2-Lite's mscale 0.707 / mscale_all_dim 1: attention factor
// (1 + 0.0707 ln 40) / (1 + 0.1 ln 40) = 0.921042.
// CHECK-LABEL: func.func @mscale
// CHECK: llm.rope %{{.*}}, %{{.*}} {attention_factor = 9.210420e-01 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64, factor = 4.000000e+01 : f64, kind = #llm<rope_kind yarn>, layout = #llm<rope_layout half_split>, original_max_position_embeddings = 4096 : i64, rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x64xf32>
func.func @mscale(%q: tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32> {
  %cos = llm.weight "mscale.cos" : tensor<4x64xf32>
  %sin = llm.weight "mscale.sin" : tensor<4x64xf32>
  %cb = llm.broadcast %cos : tensor<4x64xf32> -> tensor<1x2x4x64xf32>
  %sb = llm.broadcast %sin : tensor<4x64xf32> -> tensor<1x2x4x64xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x64xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 32 : i64} : tensor<1x2x4x64xf32> -> tensor<1x2x4x32xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 32 : i64, size = 32 : i64} : tensor<1x2x4x64xf32> -> tensor<1x2x4x32xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x32xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x32xf32>, tensor<1x2x4x32xf32>) -> tensor<1x2x4x64xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x64xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x64xf32>
  return %out : tensor<1x2x4x64xf32>
}

// -----

// Betas other than HF's defaults: beta_fast 16, beta_slow 2, original
// context 2048, d = 32: truncated correction dims 5 / 9, which the default
// betas give for no L0, so they are solved. corr(beta) depends on L0 / beta
// only, and the table fixes just floor / ceil of it: the pattern takes the
// smallest power-of-two L0 with power-of-two betas >= 1, here L0 1024,
// beta_fast 8, beta_slow 1 (the same correction dims 5.24 and 8.85).
// CHECK-LABEL: func.func @betas
// CHECK: llm.rope %{{.*}}, %{{.*}} {beta_fast = 8.000000e+00 : f64, beta_slow = 1.000000e+00 : f64, factor = 8.000000e+00 : f64, kind = #llm<rope_kind yarn>, layout = #llm<rope_layout half_split>, original_max_position_embeddings = 1024 : i64, rotary_dim = 32 : i64, theta = 1.000000e+04 : f64} : tensor<4x2x32xf32>
func.func @betas(%q: tensor<1x2x4x32xf32>) -> tensor<1x2x4x32xf32> {
  %cos = llm.weight "betas.cos" : tensor<4x32xf32>
  %sin = llm.weight "betas.sin" : tensor<4x32xf32>
  %cb = llm.broadcast %cos : tensor<4x32xf32> -> tensor<1x2x4x32xf32>
  %sb = llm.broadcast %sin : tensor<4x32xf32> -> tensor<1x2x4x32xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x32xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 16 : i64} : tensor<1x2x4x32xf32> -> tensor<1x2x4x16xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 16 : i64, size = 16 : i64} : tensor<1x2x4x32xf32> -> tensor<1x2x4x16xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x16xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x4x32xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x32xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x32xf32>
  return %out : tensor<1x2x4x32xf32>
}

// -----

// Negative: the gpt-oss tables with one blended frequency (dim 12, inside
// the ramp) 5% off the linear ramp.
// CHECK-LABEL: func.func @bent
// CHECK-NOT: llm.rope
// CHECK: llm.neg
func.func @bent(%q: tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32> {
  %cos = llm.weight "bent.cos" : tensor<4x64xf32>
  %sin = llm.weight "bent.sin" : tensor<4x64xf32>
  %cb = llm.broadcast %cos : tensor<4x64xf32> -> tensor<1x2x4x64xf32>
  %sb = llm.broadcast %sin : tensor<4x64xf32> -> tensor<1x2x4x64xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x64xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 32 : i64} : tensor<1x2x4x64xf32> -> tensor<1x2x4x32xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 32 : i64, size = 32 : i64} : tensor<1x2x4x64xf32> -> tensor<1x2x4x32xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x32xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x32xf32>, tensor<1x2x4x32xf32>) -> tensor<1x2x4x64xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x64xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x64xf32>
  return %out : tensor<1x2x4x64xf32>
}

// -----

// Negative: stored DeepSeek-shaped tables (factor 40, HF's default
// attention factor 1.3689) with the factor on cos only.
// CHECK-LABEL: func.func @cos_only
// CHECK-NOT: llm.rope
// CHECK: llm.neg
func.func @cos_only(%q: tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32> {
  %cos = llm.weight "cos_only.cos" : tensor<4x64xf32>
  %sin = llm.weight "cos_only.sin" : tensor<4x64xf32>
  %cb = llm.broadcast %cos : tensor<4x64xf32> -> tensor<1x2x4x64xf32>
  %sb = llm.broadcast %sin : tensor<4x64xf32> -> tensor<1x2x4x64xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x64xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 32 : i64} : tensor<1x2x4x64xf32> -> tensor<1x2x4x32xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 32 : i64, size = 32 : i64} : tensor<1x2x4x64xf32> -> tensor<1x2x4x32xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x32xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x32xf32>, tensor<1x2x4x32xf32>) -> tensor<1x2x4x64xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x64xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x64xf32>
  return %out : tensor<1x2x4x64xf32>
}

// -----

// Dynamic NTK (HF "dynamic") traced beyond the original context is a
// default table of a rescaled base: theta 1e4, d = 16, factor 2, length
// 8192 over 4096 gives b' = 1e4 * 3^(16/14) = 35097.92. The traced graph
// has fixed positions, so it is raised as kind = default with the base
// snapped to the integer 35098 (the table check holds); at a traced length
// within the original context the table is the default one of theta.
// CHECK-LABEL: func.func @dynamic_ntk_beyond_context
// CHECK: llm.rope %{{.*}}, %{{.*}} {kind = #llm<rope_kind default>, layout = #llm<rope_layout half_split>, rotary_dim = 16 : i64, theta = 3.509800e+04 : f64} : tensor<4x2x16xf32>
func.func @dynamic_ntk_beyond_context(%q: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %inv = arith.constant dense<[[[1.0], [0.270296127], [0.0730599985], [0.0197478328], [0.00533776265], [0.00144277664], [0.000389976922], [0.000105409257]]]> : tensor<1x8x1xf32>
  %pos = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0]]]> : tensor<1x1x4xf32>
  %fr = llm.matmul %inv, %pos : (tensor<1x8x1xf32>, tensor<1x1x4xf32>) -> tensor<1x8x4xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x8x4xf32> -> tensor<1x4x8xf32>
  %cos = llm.cos %frt : tensor<1x4x8xf32>
  %sin = llm.sin %frt : tensor<1x4x8xf32>
  %cc = llm.concat %cos, %cos {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %sc = llm.concat %sin, %sin {axis = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  %cu = llm.reshape %cc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %su = llm.reshape %sc : tensor<1x4x16xf32> -> tensor<1x1x4x16xf32>
  %cb = llm.broadcast %cu : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %sb = llm.broadcast %su : tensor<1x1x4x16xf32> -> tensor<1x2x4x16xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x4x16xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 8 : i64, size = 8 : i64} : tensor<1x2x4x16xf32> -> tensor<1x2x4x8xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x4x8xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x16xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x4x16xf32>
  %out = llm.add %qc, %qs : tensor<1x2x4x16xf32>
  return %out : tensor<1x2x4x16xf32>
}

// -----

// DeepSeek's YaRN at rotary dim 8 (theta 1e4, factor 40, original context
// 4096, betas 32 / 1, mscale = mscale_all_dim = 1), computed in the graph at
// 8 positions. Llama 3's scaling fits these 8 positions within the table
// tolerance (it was raised as llama3 with original context 1571), but drifts
// from the graph at long context: a computed table must hold over the whole
// position range (2^20), so only YaRN is accepted. Original context 2048
// gives the same truncated correction dims (1 and 3), hence the same
// frequencies at every position.
// CHECK-LABEL: func.func @yarn_d8
// CHECK: llm.rope %{{.*}}, %{{.*}} {attention_factor = 1.000000e+00 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64, factor = 4.000000e+01 : f64, kind = #llm<rope_kind yarn>, layout = #llm<rope_layout half_split>, original_max_position_embeddings = 2048 : i64, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : tensor<8x2x8xf32>
// CHECK-NOT: llm.cos
func.func @yarn_d8(%q: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %inv = arith.constant dense<[[[1.0], [0.100000001], [0.0051249997], [2.49999994e-05]]]> : tensor<1x4x1xf32>
  %pos = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]]> : tensor<1x1x8xf32>
  %fr = llm.matmul %inv, %pos : (tensor<1x4x1xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x4x8xf32> -> tensor<1x8x4xf32>
  %cos = llm.cos %frt : tensor<1x8x4xf32>
  %sin = llm.sin %frt : tensor<1x8x4xf32>
  %cc = llm.concat %cos, %cos {axis = 2 : i64} : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x8xf32>
  %sc = llm.concat %sin, %sin {axis = 2 : i64} : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x8xf32>
  %cu = llm.reshape %cc : tensor<1x8x8xf32> -> tensor<1x1x8x8xf32>
  %su = llm.reshape %sc : tensor<1x8x8xf32> -> tensor<1x1x8x8xf32>
  %cb = llm.broadcast %cu : tensor<1x1x8x8xf32> -> tensor<1x2x8x8xf32>
  %sb = llm.broadcast %su : tensor<1x1x8x8xf32> -> tensor<1x2x8x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x8x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x8x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x8x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x8x8xf32>
  return %out : tensor<1x2x8x8xf32>
}

// -----

// Negative: the same table with the lowest frequency 1e-4 off YaRN's
// (2.50025e-5). At the 8 traced positions every kind's table is within
// 2e-8 of it (llama3 was raised); over 2^20 positions no kind is.
// CHECK-LABEL: func.func @yarn_d8_bent
// CHECK-NOT: llm.rope
// CHECK: llm.cos
func.func @yarn_d8_bent(%q: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %inv = arith.constant dense<[[[1.0], [0.100000001], [0.0051249997], [2.50025e-05]]]> : tensor<1x4x1xf32>
  %pos = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]]> : tensor<1x1x8xf32>
  %fr = llm.matmul %inv, %pos : (tensor<1x4x1xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x4x8xf32> -> tensor<1x8x4xf32>
  %cos = llm.cos %frt : tensor<1x8x4xf32>
  %sin = llm.sin %frt : tensor<1x8x4xf32>
  %cc = llm.concat %cos, %cos {axis = 2 : i64} : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x8xf32>
  %sc = llm.concat %sin, %sin {axis = 2 : i64} : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x8xf32>
  %cu = llm.reshape %cc : tensor<1x8x8xf32> -> tensor<1x1x8x8xf32>
  %su = llm.reshape %sc : tensor<1x8x8xf32> -> tensor<1x1x8x8xf32>
  %cb = llm.broadcast %cu : tensor<1x1x8x8xf32> -> tensor<1x2x8x8xf32>
  %sb = llm.broadcast %su : tensor<1x1x8x8xf32> -> tensor<1x2x8x8xf32>
  %qc = llm.mul %q, %cb : tensor<1x2x8x8xf32>
  %x1 = llm.slice %q {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x4xf32>
  %x2 = llm.slice %q {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x4xf32>
  %nx2 = llm.neg %x2 : tensor<1x2x8x4xf32>
  %rot = llm.concat %nx2, %x1 {axis = 3 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x8xf32>
  %qs = llm.mul %rot, %sb : tensor<1x2x8x8xf32>
  %out = llm.add %qc, %qs : tensor<1x2x8x8xf32>
  return %out : tensor<1x2x8x8xf32>
}
