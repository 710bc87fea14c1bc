// A Llama decoder block (GQA, half-split RoPE from an inv_freq buffer,
// causal mask, SwiGLU) decomposed into primitive ops the way the FX importer
// emits torch 1.13 make_fx traces: mm on [T, H] views, bmm on [h, L, d]
// views, repeat_kv as unsqueeze/expand/reshape, identity slices and
// expands left in. Used by raise-numerics.test.
func.func @forward(%x: tensor<1x6x32xf32>) -> tensor<1x6x32xf32> {
  %ln1 = llm.weight "ln1" : tensor<32xf32>
  %wq = llm.weight "wq" : tensor<32x32xf32>
  %wk = llm.weight "wk" : tensor<16x32xf32>
  %wv = llm.weight "wv" : tensor<16x32xf32>
  %wo = llm.weight "wo" : tensor<32x32xf32>
  %ln2 = llm.weight "ln2" : tensor<32xf32>
  %wg = llm.weight "wg" : tensor<64x32xf32>
  %wu = llm.weight "wu" : tensor<64x32xf32>
  %wd = llm.weight "wd" : tensor<32x64xf32>
  %inv_freq = llm.weight "inv_freq" : tensor<4xf32>
  %pos = arith.constant dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi64>
  %pos1 = llm.reshape %pos : tensor<6xi64> -> tensor<1x1x6xi64>
  %posf = llm.convert %pos1 : tensor<1x1x6xi64> -> tensor<1x1x6xf32>
  %inv1 = llm.reshape %inv_freq : tensor<4xf32> -> tensor<1x4x1xf32>
  %inv2 = llm.slice %inv1 {axis = 1 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x4x1xf32> -> tensor<1x4x1xf32>
  %fr = llm.matmul %inv2, %posf : (tensor<1x4x1xf32>, tensor<1x1x6xf32>) -> tensor<1x4x6xf32>
  %frt = llm.transpose %fr {permutation = array<i64: 0, 2, 1>} : tensor<1x4x6xf32> -> tensor<1x6x4xf32>
  %cos = llm.cos %frt : tensor<1x6x4xf32>
  %sin = llm.sin %frt : tensor<1x6x4xf32>
  %cc = llm.concat %cos, %cos {axis = 2 : i64} : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x8xf32>
  %sc = llm.concat %sin, %sin {axis = 2 : i64} : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x8xf32>
  %cu = llm.reshape %cc : tensor<1x6x8xf32> -> tensor<1x1x6x8xf32>
  %su = llm.reshape %sc : tensor<1x6x8xf32> -> tensor<1x1x6x8xf32>
  %h1_two = arith.constant dense<2.0> : tensor<f32>
  %h1_twob = llm.broadcast %h1_two : tensor<f32> -> tensor<1x6x32xf32>
  %h1_sq = llm.pow %x, %h1_twob : tensor<1x6x32xf32>
  %h1_m = llm.reduce mean %h1_sq {axis = 2 : i64, keep_dim = true} : tensor<1x6x32xf32> -> tensor<1x6x1xf32>
  %h1_eps = arith.constant dense<1.0e-05> : tensor<1x6x1xf32>
  %h1_v = llm.add %h1_m, %h1_eps : tensor<1x6x1xf32>
  %h1_r = llm.rsqrt %h1_v : tensor<1x6x1xf32>
  %h1_rb = llm.broadcast %h1_r : tensor<1x6x1xf32> -> tensor<1x6x32xf32>
  %h1_n = llm.mul %x, %h1_rb : tensor<1x6x32xf32>
  %h1_wb = llm.broadcast %ln1 : tensor<32xf32> -> tensor<1x6x32xf32>
  %h1 = llm.mul %h1_wb, %h1_n : tensor<1x6x32xf32>
  %qp_in = llm.reshape %h1 : tensor<1x6x32xf32> -> tensor<6x32xf32>
  %qp_mm = llm.linear %qp_in, %wq : (tensor<6x32xf32>, tensor<32x32xf32>) -> tensor<6x32xf32>
  %qp = llm.reshape %qp_mm : tensor<6x32xf32> -> tensor<1x6x32xf32>
  %q4 = llm.reshape %qp : tensor<1x6x32xf32> -> tensor<1x6x4x8xf32>
  %qt = llm.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x4x8xf32> -> tensor<1x4x6x8xf32>
  %kp_in = llm.reshape %h1 : tensor<1x6x32xf32> -> tensor<6x32xf32>
  %kp_mm = llm.linear %kp_in, %wk : (tensor<6x32xf32>, tensor<16x32xf32>) -> tensor<6x16xf32>
  %kp = llm.reshape %kp_mm : tensor<6x16xf32> -> tensor<1x6x16xf32>
  %k4 = llm.reshape %kp : tensor<1x6x16xf32> -> tensor<1x6x2x8xf32>
  %kt = llm.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x2x8xf32> -> tensor<1x2x6x8xf32>
  %vp_in = llm.reshape %h1 : tensor<1x6x32xf32> -> tensor<6x32xf32>
  %vp_mm = llm.linear %vp_in, %wv : (tensor<6x32xf32>, tensor<16x32xf32>) -> tensor<6x16xf32>
  %vp = llm.reshape %vp_mm : tensor<6x16xf32> -> tensor<1x6x16xf32>
  %v4 = llm.reshape %vp : tensor<1x6x16xf32> -> tensor<1x6x2x8xf32>
  %vt = llm.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x2x8xf32> -> tensor<1x2x6x8xf32>
  %qr_cb = llm.broadcast %cu : tensor<1x1x6x8xf32> -> tensor<1x4x6x8xf32>
  %qr_sb = llm.broadcast %su : tensor<1x1x6x8xf32> -> tensor<1x4x6x8xf32>
  %qr_xc = llm.mul %qt, %qr_cb : tensor<1x4x6x8xf32>
  %qr_x1 = llm.slice %qt {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x4x6x8xf32> -> tensor<1x4x6x4xf32>
  %qr_x2 = llm.slice %qt {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x4x6x8xf32> -> tensor<1x4x6x4xf32>
  %qr_n2 = llm.neg %qr_x2 : tensor<1x4x6x4xf32>
  %qr_rot = llm.concat %qr_n2, %qr_x1 {axis = 3 : i64} : (tensor<1x4x6x4xf32>, tensor<1x4x6x4xf32>) -> tensor<1x4x6x8xf32>
  %qr_xs = llm.mul %qr_rot, %qr_sb : tensor<1x4x6x8xf32>
  %qr = llm.add %qr_xc, %qr_xs : tensor<1x4x6x8xf32>
  %kr_cb = llm.broadcast %cu : tensor<1x1x6x8xf32> -> tensor<1x2x6x8xf32>
  %kr_sb = llm.broadcast %su : tensor<1x1x6x8xf32> -> tensor<1x2x6x8xf32>
  %kr_xc = llm.mul %kt, %kr_cb : tensor<1x2x6x8xf32>
  %kr_x1 = llm.slice %kt {axis = 3 : i64, start = 0 : i64, size = 4 : i64} : tensor<1x2x6x8xf32> -> tensor<1x2x6x4xf32>
  %kr_x2 = llm.slice %kt {axis = 3 : i64, start = 4 : i64, size = 4 : i64} : tensor<1x2x6x8xf32> -> tensor<1x2x6x4xf32>
  %kr_n2 = llm.neg %kr_x2 : tensor<1x2x6x4xf32>
  %kr_rot = llm.concat %kr_n2, %kr_x1 {axis = 3 : i64} : (tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x6x8xf32>
  %kr_xs = llm.mul %kr_rot, %kr_sb : tensor<1x2x6x8xf32>
  %kr = llm.add %kr_xc, %kr_xs : tensor<1x2x6x8xf32>
  %kx_u = llm.reshape %kr : tensor<1x2x6x8xf32> -> tensor<1x2x1x6x8xf32>
  %kx_e = llm.broadcast %kx_u : tensor<1x2x1x6x8xf32> -> tensor<1x2x2x6x8xf32>
  %kx = llm.reshape %kx_e : tensor<1x2x2x6x8xf32> -> tensor<1x4x6x8xf32>
  %vx_u = llm.reshape %vt : tensor<1x2x6x8xf32> -> tensor<1x2x1x6x8xf32>
  %vx_e = llm.broadcast %vx_u : tensor<1x2x1x6x8xf32> -> tensor<1x2x2x6x8xf32>
  %vx = llm.reshape %vx_e : tensor<1x2x2x6x8xf32> -> tensor<1x4x6x8xf32>
  %kxt = llm.transpose %kx {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x6x8xf32> -> tensor<1x4x8x6xf32>
  %qv = llm.reshape %qr : tensor<1x4x6x8xf32> -> tensor<4x6x8xf32>
  %kv = llm.reshape %kxt : tensor<1x4x8x6xf32> -> tensor<4x8x6xf32>
  %s3 = llm.matmul %qv, %kv : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %s4 = llm.reshape %s3 : tensor<4x6x6xf32> -> tensor<1x4x6x6xf32>
  %scale = arith.constant dense<2.8284271> : tensor<f32>
  %scaleb = llm.broadcast %scale : tensor<f32> -> tensor<1x4x6x6xf32>
  %sd = llm.div %s4, %scaleb : tensor<1x4x6x6xf32>
  %allowed = arith.constant dense<[[true, false, false, false, false, false], [true, true, false, false, false, false], [true, true, true, false, false, false], [true, true, true, true, false, false], [true, true, true, true, true, false], [true, true, true, true, true, true]]> : tensor<6x6xi1>
  %false = arith.constant dense<false> : tensor<6x6xi1>
  %hidden = llm.compare eq %allowed, %false : tensor<6x6xi1> -> tensor<6x6xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<6x6xf32>
  %zeros = arith.constant dense<0.0> : tensor<6x6xf32>
  %mask = llm.select %hidden, %ninf, %zeros : tensor<6x6xi1>, tensor<6x6xf32>
  %maskb = llm.broadcast %mask : tensor<6x6xf32> -> tensor<1x4x6x6xf32>
  %sm = llm.add %sd, %maskb : tensor<1x4x6x6xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x4x6x6xf32>
  %pe = llm.broadcast %p : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf32>
  %pv = llm.reshape %pe : tensor<1x4x6x6xf32> -> tensor<4x6x6xf32>
  %vv = llm.reshape %vx : tensor<1x4x6x8xf32> -> tensor<4x6x8xf32>
  %o3 = llm.matmul %pv, %vv : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %o4 = llm.reshape %o3 : tensor<4x6x8xf32> -> tensor<1x4x6x8xf32>
  %ot = llm.transpose %o4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x6x8xf32> -> tensor<1x6x4x8xf32>
  %of = llm.reshape %ot : tensor<1x6x4x8xf32> -> tensor<1x6x32xf32>
  %attn_in = llm.reshape %of : tensor<1x6x32xf32> -> tensor<6x32xf32>
  %attn_mm = llm.linear %attn_in, %wo : (tensor<6x32xf32>, tensor<32x32xf32>) -> tensor<6x32xf32>
  %attn = llm.reshape %attn_mm : tensor<6x32xf32> -> tensor<1x6x32xf32>
  %r1 = llm.add %x, %attn : tensor<1x6x32xf32>
  %h2_two = arith.constant dense<2.0> : tensor<f32>
  %h2_twob = llm.broadcast %h2_two : tensor<f32> -> tensor<1x6x32xf32>
  %h2_sq = llm.pow %r1, %h2_twob : tensor<1x6x32xf32>
  %h2_m = llm.reduce mean %h2_sq {axis = 2 : i64, keep_dim = true} : tensor<1x6x32xf32> -> tensor<1x6x1xf32>
  %h2_eps = arith.constant dense<1.0e-05> : tensor<1x6x1xf32>
  %h2_v = llm.add %h2_m, %h2_eps : tensor<1x6x1xf32>
  %h2_r = llm.rsqrt %h2_v : tensor<1x6x1xf32>
  %h2_rb = llm.broadcast %h2_r : tensor<1x6x1xf32> -> tensor<1x6x32xf32>
  %h2_n = llm.mul %r1, %h2_rb : tensor<1x6x32xf32>
  %h2_wb = llm.broadcast %ln2 : tensor<32xf32> -> tensor<1x6x32xf32>
  %h2 = llm.mul %h2_wb, %h2_n : tensor<1x6x32xf32>
  %g_in = llm.reshape %h2 : tensor<1x6x32xf32> -> tensor<6x32xf32>
  %g_mm = llm.linear %g_in, %wg : (tensor<6x32xf32>, tensor<64x32xf32>) -> tensor<6x64xf32>
  %g = llm.reshape %g_mm : tensor<6x64xf32> -> tensor<1x6x64xf32>
  %ga = llm.silu %g : tensor<1x6x64xf32>
  %u_in = llm.reshape %h2 : tensor<1x6x32xf32> -> tensor<6x32xf32>
  %u_mm = llm.linear %u_in, %wu : (tensor<6x32xf32>, tensor<64x32xf32>) -> tensor<6x64xf32>
  %u = llm.reshape %u_mm : tensor<6x64xf32> -> tensor<1x6x64xf32>
  %gu = llm.mul %ga, %u : tensor<1x6x64xf32>
  %mlp_in = llm.reshape %gu : tensor<1x6x64xf32> -> tensor<6x64xf32>
  %mlp_mm = llm.linear %mlp_in, %wd : (tensor<6x64xf32>, tensor<32x64xf32>) -> tensor<6x32xf32>
  %mlp = llm.reshape %mlp_mm : tensor<6x32xf32> -> tensor<1x6x32xf32>
  %out = llm.add %r1, %mlp : tensor<1x6x32xf32>
  return %out : tensor<1x6x32xf32>
}
