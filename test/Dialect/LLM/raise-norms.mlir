// RUN: pimc-opt %s --split-input-file --llm-raise-norms | FileCheck %s

// Llama's LlamaRMSNorm as the FX importer emits it: pow(x, 2), mean over the
// last axis with keepdim, + eps, rsqrt, x * r, then weight * that.
// CHECK-LABEL: func.func @llama_rms
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8xf32>)
// CHECK: %[[W:.*]] = llm.weight "model.norm.weight" : tensor<8xf32>
// CHECK: %[[Y:.*]] = llm.rms_norm %[[X]], %[[W]] {epsilon = 9.99999997E-7 : f32} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
// CHECK-NOT: llm.rsqrt
// CHECK: return %[[Y]]
func.func @llama_rms(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = llm.weight "model.norm.weight" : tensor<8xf32>
  %c2 = arith.constant dense<2.0> : tensor<f32>
  %c2b = llm.broadcast %c2 : tensor<f32> -> tensor<1x4x8xf32>
  %sq = llm.pow %x, %c2b : tensor<1x4x8xf32>
  %m = llm.reduce mean %sq {axis = 2 : i64, keep_dim = true} : tensor<1x4x8xf32> -> tensor<1x4x1xf32>
  %eps = arith.constant dense<1.0e-6> : tensor<f32>
  %epsb = llm.broadcast %eps : tensor<f32> -> tensor<1x4x1xf32>
  %v = llm.add %m, %epsb : tensor<1x4x1xf32>
  %r = llm.rsqrt %v : tensor<1x4x1xf32>
  %rb = llm.broadcast %r : tensor<1x4x1xf32> -> tensor<1x4x8xf32>
  %n = llm.mul %x, %rb : tensor<1x4x8xf32>
  %wb = llm.broadcast %w : tensor<8xf32> -> tensor<1x4x8xf32>
  %y = llm.mul %wb, %n : tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// x * x for the square, the weight a bf16 parameter widened by llm.cast (the
// fused op reads the bf16 weight and widens it itself), eps a full-shape
// splat, rank 2, weight on the right.
// CHECK-LABEL: func.func @rms_square_bf16
// CHECK: %[[W:.*]] = llm.weight "w" : tensor<8xbf16>
// CHECK: llm.rms_norm %arg0, %[[W]] {epsilon = 9.99999974E-6 : f32} : (tensor<4x8xf32>, tensor<8xbf16>) -> tensor<4x8xf32>
func.func @rms_square_bf16(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = llm.weight "w" : tensor<8xbf16>
  %wf = llm.cast %w : tensor<8xbf16> to tensor<8xf32>
  %sq = llm.mul %x, %x : tensor<4x8xf32>
  %m = llm.reduce mean %sq {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = arith.constant dense<1.0e-5> : tensor<4x1xf32>
  %v = llm.add %eps, %m : tensor<4x1xf32>
  %r = llm.rsqrt %v : tensor<4x1xf32>
  %rb = llm.broadcast %r : tensor<4x1xf32> -> tensor<4x8xf32>
  %n = llm.mul %rb, %x : tensor<4x8xf32>
  %wb = llm.broadcast %wf : tensor<8xf32> -> tensor<4x8xf32>
  %y = llm.mul %n, %wb : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Gemma: x / sqrt(...) form and the (1 + w) factor -> gemma style.
// CHECK-LABEL: func.func @gemma_rms
// CHECK: %[[W:.*]] = llm.weight "gemma.norm" : tensor<8xf32>
// CHECK: llm.rms_norm %arg0, %[[W]] {epsilon = 9.99999997E-7 : f32, style = #llm<norm_style gemma>}
// CHECK-NOT: llm.sqrt
func.func @gemma_rms(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = llm.weight "gemma.norm" : tensor<8xf32>
  %sq = llm.mul %x, %x : tensor<1x4x8xf32>
  %m = llm.reduce mean %sq {axis = 2 : i64, keep_dim = true} : tensor<1x4x8xf32> -> tensor<1x4x1xf32>
  %eps = arith.constant dense<1.0e-6> : tensor<1x4x1xf32>
  %v = llm.add %m, %eps : tensor<1x4x1xf32>
  %s = llm.sqrt %v : tensor<1x4x1xf32>
  %sb = llm.broadcast %s : tensor<1x4x1xf32> -> tensor<1x4x8xf32>
  %n = llm.div %x, %sb : tensor<1x4x8xf32>
  %one = arith.constant dense<1.0> : tensor<8xf32>
  %w1 = llm.add %one, %w : tensor<8xf32>
  %wb = llm.broadcast %w1 : tensor<8xf32> -> tensor<1x4x8xf32>
  %y = llm.mul %n, %wb : tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// Negative: the mean is over the sequence axis, not the features.
// CHECK-LABEL: func.func @rms_wrong_axis
// CHECK-NOT: llm.rms_norm
// CHECK: llm.rsqrt
func.func @rms_wrong_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = llm.weight "w" : tensor<8xf32>
  %sq = llm.mul %x, %x : tensor<4x8xf32>
  %m = llm.reduce mean %sq {axis = 0 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %eps = arith.constant dense<1.0e-5> : tensor<1x8xf32>
  %v = llm.add %m, %eps : tensor<1x8xf32>
  %r = llm.rsqrt %v : tensor<1x8xf32>
  %rb = llm.broadcast %r : tensor<1x8xf32> -> tensor<4x8xf32>
  %n = llm.mul %x, %rb : tensor<4x8xf32>
  %wb = llm.broadcast %w : tensor<8xf32> -> tensor<4x8xf32>
  %y = llm.mul %n, %wb : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Negatives: a sum instead of a mean; the square of another tensor; a
// per-token (not per-feature) scale; a cube instead of a square.
// CHECK-LABEL: func.func @rms_not_a_norm
// CHECK-NOT: llm.rms_norm
func.func @rms_not_a_norm(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>, %t: tensor<4x1xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %w = llm.weight "w" : tensor<8xf32>
  %wb = llm.broadcast %w : tensor<8xf32> -> tensor<4x8xf32>
  %eps = arith.constant dense<1.0e-5> : tensor<4x1xf32>
  %sq = llm.mul %x, %x : tensor<4x8xf32>
  %s = llm.reduce sum %sq {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %v = llm.add %s, %eps : tensor<4x1xf32>
  %r = llm.rsqrt %v : tensor<4x1xf32>
  %rb = llm.broadcast %r : tensor<4x1xf32> -> tensor<4x8xf32>
  %n = llm.mul %x, %rb : tensor<4x8xf32>
  %y = llm.mul %n, %wb : tensor<4x8xf32>
  %sqz = llm.mul %z, %z : tensor<4x8xf32>
  %mz = llm.reduce mean %sqz {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %vz = llm.add %mz, %eps : tensor<4x1xf32>
  %rz = llm.rsqrt %vz : tensor<4x1xf32>
  %rzb = llm.broadcast %rz : tensor<4x1xf32> -> tensor<4x8xf32>
  %nz = llm.mul %x, %rzb : tensor<4x8xf32>
  %y2 = llm.mul %nz, %wb : tensor<4x8xf32>
  %m3 = llm.reduce mean %sq {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %v3 = llm.add %m3, %eps : tensor<4x1xf32>
  %r3 = llm.rsqrt %v3 : tensor<4x1xf32>
  %r3b = llm.broadcast %r3 : tensor<4x1xf32> -> tensor<4x8xf32>
  %n3 = llm.mul %x, %r3b : tensor<4x8xf32>
  %tb = llm.broadcast %t : tensor<4x1xf32> -> tensor<4x8xf32>
  %y3 = llm.mul %n3, %tb : tensor<4x8xf32>
  %c3 = arith.constant dense<3.0> : tensor<4x8xf32>
  %cube = llm.pow %x, %c3 : tensor<4x8xf32>
  %m4 = llm.reduce mean %cube {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %v4 = llm.add %m4, %eps : tensor<4x1xf32>
  %r4 = llm.rsqrt %v4 : tensor<4x1xf32>
  %r4b = llm.broadcast %r4 : tensor<4x1xf32> -> tensor<4x8xf32>
  %n4 = llm.mul %x, %r4b : tensor<4x8xf32>
  %y4 = llm.mul %n4, %wb : tensor<4x8xf32>
  return %y, %y2, %y3, %y4 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Layer norm as torch.onnx.export (opset < 17) decomposes nn.LayerNorm:
// ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add.
// CHECK-LABEL: func.func @layer_norm_onnx
// CHECK-DAG: %[[W:.*]] = llm.weight "ln.weight" : tensor<8xf32>
// CHECK-DAG: %[[B:.*]] = llm.weight "ln.bias" : tensor<8xf32>
// CHECK: %[[Y:.*]] = llm.layer_norm %arg0 weight %[[W]] bias %[[B]] {{{.*}}epsilon = 9.99999974E-6 : f32} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
// CHECK-NOT: llm.sqrt
// CHECK: return %[[Y]]
func.func @layer_norm_onnx(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = llm.weight "ln.weight" : tensor<8xf32>
  %b = llm.weight "ln.bias" : tensor<8xf32>
  %mu = llm.reduce mean %x {axis = 2 : i64, keep_dim = true} : tensor<1x4x8xf32> -> tensor<1x4x1xf32>
  %mub = llm.broadcast %mu : tensor<1x4x1xf32> -> tensor<1x4x8xf32>
  %xc = llm.sub %x, %mub : tensor<1x4x8xf32>
  %c2 = arith.constant dense<2.0> : tensor<1x4x8xf32>
  %sq = llm.pow %xc, %c2 : tensor<1x4x8xf32>
  %var = llm.reduce mean %sq {axis = 2 : i64, keep_dim = true} : tensor<1x4x8xf32> -> tensor<1x4x1xf32>
  %eps = arith.constant dense<1.0e-5> : tensor<1x4x1xf32>
  %ve = llm.add %var, %eps : tensor<1x4x1xf32>
  %sd = llm.sqrt %ve : tensor<1x4x1xf32>
  %sdb = llm.broadcast %sd : tensor<1x4x1xf32> -> tensor<1x4x8xf32>
  %n = llm.div %xc, %sdb : tensor<1x4x8xf32>
  %wb = llm.broadcast %w : tensor<8xf32> -> tensor<1x4x8xf32>
  %nw = llm.mul %n, %wb : tensor<1x4x8xf32>
  %bb = llm.broadcast %b : tensor<8xf32> -> tensor<1x4x8xf32>
  %y = llm.add %nw, %bb : tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// Layer norm without affine terms, rsqrt form, the centering recomputed for
// the variance.
// CHECK-LABEL: func.func @layer_norm_plain
// CHECK: llm.layer_norm %arg0 {{{.*}}epsilon = 9.99999974E-6 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: llm.rms_norm
func.func @layer_norm_plain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %mu = llm.reduce mean %x {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %mub = llm.broadcast %mu : tensor<4x1xf32> -> tensor<4x8xf32>
  %xc = llm.sub %x, %mub : tensor<4x8xf32>
  %xc2 = llm.sub %x, %mub : tensor<4x8xf32>
  %sq = llm.mul %xc2, %xc2 : tensor<4x8xf32>
  %var = llm.reduce mean %sq {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = arith.constant dense<1.0e-5> : tensor<4x1xf32>
  %ve = llm.add %var, %eps : tensor<4x1xf32>
  %r = llm.rsqrt %ve : tensor<4x1xf32>
  %rb = llm.broadcast %r : tensor<4x1xf32> -> tensor<4x8xf32>
  %n = llm.mul %xc, %rb : tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// Negative: centered by the mean of another tensor; variance over the wrong
// axis.
// CHECK-LABEL: func.func @layer_norm_not
// CHECK-NOT: llm.layer_norm
func.func @layer_norm_not(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %eps = arith.constant dense<1.0e-5> : tensor<4x1xf32>
  %muz = llm.reduce mean %z {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %muzb = llm.broadcast %muz : tensor<4x1xf32> -> tensor<4x8xf32>
  %xc = llm.sub %x, %muzb : tensor<4x8xf32>
  %sq = llm.mul %xc, %xc : tensor<4x8xf32>
  %var = llm.reduce mean %sq {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = llm.add %var, %eps : tensor<4x1xf32>
  %r = llm.rsqrt %ve : tensor<4x1xf32>
  %rb = llm.broadcast %r : tensor<4x1xf32> -> tensor<4x8xf32>
  %n = llm.mul %xc, %rb : tensor<4x8xf32>
  %mu = llm.reduce mean %x {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %mub = llm.broadcast %mu : tensor<4x1xf32> -> tensor<4x8xf32>
  %xc2 = llm.sub %x, %mub : tensor<4x8xf32>
  %sq2 = llm.mul %xc2, %xc2 : tensor<4x8xf32>
  %var2 = llm.reduce mean %sq2 {axis = 0 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %eps2 = arith.constant dense<1.0e-5> : tensor<1x8xf32>
  %ve2 = llm.add %var2, %eps2 : tensor<1x8xf32>
  %r2 = llm.rsqrt %ve2 : tensor<1x8xf32>
  %r2b = llm.broadcast %r2 : tensor<1x8xf32> -> tensor<4x8xf32>
  %n2 = llm.mul %xc2, %r2b : tensor<4x8xf32>
  return %n, %n2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// RMS norm as torch.onnx.export writes rsqrt: Div(1, Sqrt(var + eps)), and
// as pow(var + eps, -0.5); the weight multiply first.
// CHECK-LABEL: func.func @rms_onnx_spellings
// CHECK: llm.rms_norm %arg0, %{{.*}} {epsilon = 9.99999974E-6 : f32}
// CHECK: llm.rms_norm %arg0, %{{.*}} {epsilon = 9.99999974E-6 : f32}
// CHECK-NOT: llm.sqrt
// CHECK-NOT: llm.pow
func.func @rms_onnx_spellings(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w = llm.weight "w" : tensor<8xf32>
  %wb = llm.broadcast %w : tensor<8xf32> -> tensor<4x8xf32>
  %c2 = arith.constant dense<2.0> : tensor<4x8xf32>
  %sq = llm.pow %x, %c2 : tensor<4x8xf32>
  %m = llm.reduce mean %sq {axis = 1 : i64, keep_dim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = arith.constant dense<1.0e-5> : tensor<4x1xf32>
  %v = llm.add %m, %eps : tensor<4x1xf32>
  %s = llm.sqrt %v : tensor<4x1xf32>
  %one = arith.constant dense<1.0> : tensor<4x1xf32>
  %r = llm.div %one, %s : tensor<4x1xf32>
  %rb = llm.broadcast %r : tensor<4x1xf32> -> tensor<4x8xf32>
  %n = llm.mul %x, %rb : tensor<4x8xf32>
  %y = llm.mul %wb, %n : tensor<4x8xf32>
  %mh = arith.constant dense<-0.5> : tensor<4x1xf32>
  %r2 = llm.pow %v, %mh : tensor<4x1xf32>
  %r2b = llm.broadcast %r2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %n2 = llm.mul %x, %r2b : tensor<4x8xf32>
  %y2 = llm.mul %n2, %wb : tensor<4x8xf32>
  return %y, %y2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The weight unsqueezed to [1, 1, n] before the broadcast (ONNX Unsqueeze)
// is still the [n] weight.
// CHECK-LABEL: func.func @rms_unsqueezed_weight
// CHECK: llm.rms_norm %arg0, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
func.func @rms_unsqueezed_weight(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = llm.weight "w" : tensor<8xf32>
  %wu = llm.reshape %w : tensor<8xf32> -> tensor<1x1x8xf32>
  %wb = llm.broadcast %wu : tensor<1x1x8xf32> -> tensor<1x4x8xf32>
  %sq = llm.mul %x, %x : tensor<1x4x8xf32>
  %m = llm.reduce mean %sq {axis = 2 : i64, keep_dim = true} : tensor<1x4x8xf32> -> tensor<1x4x1xf32>
  %eps = arith.constant dense<1.0e-5> : tensor<1x4x1xf32>
  %v = llm.add %m, %eps : tensor<1x4x1xf32>
  %r = llm.rsqrt %v : tensor<1x4x1xf32>
  %rb = llm.broadcast %r : tensor<1x4x1xf32> -> tensor<1x4x8xf32>
  %n = llm.mul %x, %rb : tensor<1x4x8xf32>
  %y = llm.mul %n, %wb : tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}
