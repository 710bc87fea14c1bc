// A GPT-2 block (pre-LN, MHA, tril mask buffer, GELU-tanh MLP) as the ONNX
// exporter (opset < 17) decomposes LayerNorm and the FX importer lowers
// masked_fill(bias[:, :, :T, :T] == 0, -inf). Used by raise-numerics.test.
func.func @forward(%x: tensor<1x6x32xf32>) -> tensor<1x6x32xf32> {
  %h_0_ln_1_weight = llm.weight "h.0.ln_1.weight" : tensor<32xf32>
  %h_0_ln_1_bias = llm.weight "h.0.ln_1.bias" : tensor<32xf32>
  %h_0_attn_c_attn_weight = llm.weight "h.0.attn.c_attn.weight" : tensor<96x32xf32>
  %h_0_attn_c_attn_bias = llm.weight "h.0.attn.c_attn.bias" : tensor<96xf32>
  %h_0_attn_c_proj_weight = llm.weight "h.0.attn.c_proj.weight" : tensor<32x32xf32>
  %h_0_attn_bias = llm.weight "h.0.attn.bias" : tensor<1x1x16x16xf32>
  %h_0_ln_2_weight = llm.weight "h.0.ln_2.weight" : tensor<32xf32>
  %h_0_ln_2_bias = llm.weight "h.0.ln_2.bias" : tensor<32xf32>
  %h_0_mlp_c_fc_weight = llm.weight "h.0.mlp.c_fc.weight" : tensor<128x32xf32>
  %h_0_mlp_c_proj_weight = llm.weight "h.0.mlp.c_proj.weight" : tensor<32x128xf32>
  %h1_mu = llm.reduce mean %x {axis = 2 : i64, keep_dim = true} : tensor<1x6x32xf32> -> tensor<1x6x1xf32>
  %h1_mub = llm.broadcast %h1_mu : tensor<1x6x1xf32> -> tensor<1x6x32xf32>
  %h1_xc = llm.sub %x, %h1_mub : tensor<1x6x32xf32>
  %h1_two = arith.constant dense<2.0> : tensor<1x6x32xf32>
  %h1_sq = llm.pow %h1_xc, %h1_two : tensor<1x6x32xf32>
  %h1_var = llm.reduce mean %h1_sq {axis = 2 : i64, keep_dim = true} : tensor<1x6x32xf32> -> tensor<1x6x1xf32>
  %h1_eps = arith.constant dense<1.0e-05> : tensor<1x6x1xf32>
  %h1_ve = llm.add %h1_var, %h1_eps : tensor<1x6x1xf32>
  %h1_sd = llm.sqrt %h1_ve : tensor<1x6x1xf32>
  %h1_sdb = llm.broadcast %h1_sd : tensor<1x6x1xf32> -> tensor<1x6x32xf32>
  %h1_n = llm.div %h1_xc, %h1_sdb : tensor<1x6x32xf32>
  %h1_wb = llm.broadcast %h_0_ln_1_weight : tensor<32xf32> -> tensor<1x6x32xf32>
  %h1_nw = llm.mul %h1_n, %h1_wb : tensor<1x6x32xf32>
  %h1_bb = llm.broadcast %h_0_ln_1_bias : tensor<32xf32> -> tensor<1x6x32xf32>
  %h1 = llm.add %h1_nw, %h1_bb : tensor<1x6x32xf32>
  %h1v = llm.reshape %h1 : tensor<1x6x32xf32> -> tensor<6x32xf32>
  %qkv = llm.linear %h1v, %h_0_attn_c_attn_weight, %h_0_attn_c_attn_bias : (tensor<6x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<6x96xf32>
  %qkv3 = llm.reshape %qkv : tensor<6x96xf32> -> tensor<1x6x96xf32>
  %qs = llm.slice %qkv3 {axis = 2 : i64, start = 0 : i64, size = 32 : i64} : tensor<1x6x96xf32> -> tensor<1x6x32xf32>
  %q4 = llm.reshape %qs : tensor<1x6x32xf32> -> tensor<1x6x4x8xf32>
  %qt = llm.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x4x8xf32> -> tensor<1x4x6x8xf32>
  %ks = llm.slice %qkv3 {axis = 2 : i64, start = 32 : i64, size = 32 : i64} : tensor<1x6x96xf32> -> tensor<1x6x32xf32>
  %k4 = llm.reshape %ks : tensor<1x6x32xf32> -> tensor<1x6x4x8xf32>
  %kt = llm.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x4x8xf32> -> tensor<1x4x6x8xf32>
  %vs = llm.slice %qkv3 {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : tensor<1x6x96xf32> -> tensor<1x6x32xf32>
  %v4 = llm.reshape %vs : tensor<1x6x32xf32> -> tensor<1x6x4x8xf32>
  %vt = llm.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x4x8xf32> -> tensor<1x4x6x8xf32>
  %kT = llm.transpose %kt {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x6x8xf32> -> tensor<1x4x8x6xf32>
  %qv = llm.reshape %qt : tensor<1x4x6x8xf32> -> tensor<4x6x8xf32>
  %kv = llm.reshape %kT : tensor<1x4x8x6xf32> -> tensor<4x8x6xf32>
  %s3 = llm.matmul %qv, %kv : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %s4 = llm.reshape %s3 : tensor<4x6x6xf32> -> tensor<1x4x6x6xf32>
  %c = arith.constant dense<0.353553391> : tensor<f32>
  %cb = llm.broadcast %c : tensor<f32> -> tensor<1x4x6x6xf32>
  %ss = llm.mul %s4, %cb : tensor<1x4x6x6xf32>
  %b1 = llm.slice %h_0_attn_bias {axis = 2 : i64, start = 0 : i64, size = 6 : i64} : tensor<1x1x16x16xf32> -> tensor<1x1x6x16xf32>
  %b2 = llm.slice %b1 {axis = 3 : i64, start = 0 : i64, size = 6 : i64} : tensor<1x1x6x16xf32> -> tensor<1x1x6x6xf32>
  %zero = arith.constant dense<0.0> : tensor<1x1x6x6xf32>
  %hid = llm.compare eq %b2, %zero : tensor<1x1x6x6xf32> -> tensor<1x1x6x6xi1>
  %hidb = llm.broadcast %hid : tensor<1x1x6x6xi1> -> tensor<1x4x6x6xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %ninfb = llm.broadcast %ninf : tensor<f32> -> tensor<1x4x6x6xf32>
  %sm = llm.select %hidb, %ninfb, %ss : tensor<1x4x6x6xi1>, tensor<1x4x6x6xf32>
  %p = llm.softmax %sm {axis = 3 : i64} : tensor<1x4x6x6xf32>
  %pv = llm.reshape %p : tensor<1x4x6x6xf32> -> tensor<4x6x6xf32>
  %vv = llm.reshape %vt : tensor<1x4x6x8xf32> -> tensor<4x6x8xf32>
  %o3 = llm.matmul %pv, %vv : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %o4 = llm.reshape %o3 : tensor<4x6x8xf32> -> tensor<1x4x6x8xf32>
  %ot = llm.transpose %o4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x6x8xf32> -> tensor<1x6x4x8xf32>
  %of = llm.reshape %ot : tensor<1x6x4x8xf32> -> tensor<6x32xf32>
  %ap = llm.linear %of, %h_0_attn_c_proj_weight : (tensor<6x32xf32>, tensor<32x32xf32>) -> tensor<6x32xf32>
  %ap3 = llm.reshape %ap : tensor<6x32xf32> -> tensor<1x6x32xf32>
  %r1 = llm.add %x, %ap3 : tensor<1x6x32xf32>
  %h2_mu = llm.reduce mean %r1 {axis = 2 : i64, keep_dim = true} : tensor<1x6x32xf32> -> tensor<1x6x1xf32>
  %h2_mub = llm.broadcast %h2_mu : tensor<1x6x1xf32> -> tensor<1x6x32xf32>
  %h2_xc = llm.sub %r1, %h2_mub : tensor<1x6x32xf32>
  %h2_two = arith.constant dense<2.0> : tensor<1x6x32xf32>
  %h2_sq = llm.pow %h2_xc, %h2_two : tensor<1x6x32xf32>
  %h2_var = llm.reduce mean %h2_sq {axis = 2 : i64, keep_dim = true} : tensor<1x6x32xf32> -> tensor<1x6x1xf32>
  %h2_eps = arith.constant dense<1.0e-05> : tensor<1x6x1xf32>
  %h2_ve = llm.add %h2_var, %h2_eps : tensor<1x6x1xf32>
  %h2_sd = llm.sqrt %h2_ve : tensor<1x6x1xf32>
  %h2_sdb = llm.broadcast %h2_sd : tensor<1x6x1xf32> -> tensor<1x6x32xf32>
  %h2_n = llm.div %h2_xc, %h2_sdb : tensor<1x6x32xf32>
  %h2_wb = llm.broadcast %h_0_ln_2_weight : tensor<32xf32> -> tensor<1x6x32xf32>
  %h2_nw = llm.mul %h2_n, %h2_wb : tensor<1x6x32xf32>
  %h2_bb = llm.broadcast %h_0_ln_2_bias : tensor<32xf32> -> tensor<1x6x32xf32>
  %h2 = llm.add %h2_nw, %h2_bb : tensor<1x6x32xf32>
  %h2v = llm.reshape %h2 : tensor<1x6x32xf32> -> tensor<6x32xf32>
  %fc = llm.linear %h2v, %h_0_mlp_c_fc_weight : (tensor<6x32xf32>, tensor<128x32xf32>) -> tensor<6x128xf32>
  %act = llm.gelu %fc {approximate = true} : tensor<6x128xf32>
  %pr = llm.linear %act, %h_0_mlp_c_proj_weight : (tensor<6x128xf32>, tensor<32x128xf32>) -> tensor<6x32xf32>
  %pr3 = llm.reshape %pr : tensor<6x32xf32> -> tensor<1x6x32xf32>
  %out = llm.add %r1, %pr3 : tensor<1x6x32xf32>
  return %out : tensor<1x6x32xf32>
}
