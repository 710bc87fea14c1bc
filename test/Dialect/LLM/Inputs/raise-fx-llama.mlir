// python/pimc_torch/models.py:LlamaStack(num_layers=1), x: float32 [1, 8, 64] (GQA 4/2 heads, half-split RoPE from the inv_freq buffer, causal mask, SwiGLU),
// exported by the bridge (make_fx, torch 1.13) and imported by the FX importer
// (fx branch, 2026-12-01): the IR the raising passes receive. Used by
// raise-fx-graphs.test.
module {
  func.func @forward(%arg0: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
    %0 = llm.weight "layers.0.input_layernorm.weight" : tensor<64xf32>
    %1 = llm.weight "layers.0.self_attn.q_proj.weight" : tensor<64x64xf32>
    %2 = llm.weight "layers.0.self_attn.k_proj.weight" : tensor<32x64xf32>
    %3 = llm.weight "layers.0.self_attn.v_proj.weight" : tensor<32x64xf32>
    %4 = llm.weight "layers.0.self_attn.o_proj.weight" : tensor<64x64xf32>
    %5 = llm.weight "layers.0.post_attention_layernorm.weight" : tensor<64xf32>
    %6 = llm.weight "layers.0.mlp.gate_proj.weight" : tensor<128x64xf32>
    %7 = llm.weight "layers.0.mlp.up_proj.weight" : tensor<128x64xf32>
    %8 = llm.weight "layers.0.mlp.down_proj.weight" : tensor<64x128xf32>
    %9 = llm.weight "norm.weight" : tensor<64xf32>
    %10 = llm.weight "rotary_emb.inv_freq" : tensor<8xf32>
    %11 = llm.reshape %10 : tensor<8xf32> -> tensor<1x8xf32>
    %12 = llm.reshape %11 : tensor<1x8xf32> -> tensor<1x8x1xf32>
    %cst = arith.constant dense<[[[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00]]]> : tensor<1x1x8xf32>
    %13 = llm.matmul %12, %cst : (tensor<1x8x1xf32>, tensor<1x1x8xf32>) -> tensor<1x8x8xf32>
    %14 = llm.transpose %13 {permutation = array<i64: 0, 2, 1>} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
    %15 = llm.cos %14 : tensor<1x8x8xf32>
    %16 = llm.sin %14 : tensor<1x8x8xf32>
    %17 = llm.mul %arg0, %arg0 : tensor<1x8x64xf32>
    %18 = llm.reduce  mean %17 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %cst_0 = arith.constant dense<9.99999974E-6> : tensor<1x8x1xf32>
    %19 = llm.add %18, %cst_0 : tensor<1x8x1xf32>
    %20 = llm.rsqrt %19 : tensor<1x8x1xf32>
    %21 = llm.broadcast %20 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %22 = llm.mul %arg0, %21 : tensor<1x8x64xf32>
    %23 = llm.broadcast %0 : tensor<64xf32> -> tensor<1x8x64xf32>
    %24 = llm.mul %23, %22 : tensor<1x8x64xf32>
    %25 = llm.reshape %24 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %26 = llm.linear %25, %1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %27 = llm.reshape %26 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %28 = llm.reshape %27 : tensor<1x8x64xf32> -> tensor<1x8x4x16xf32>
    %29 = llm.transpose %28 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x16xf32> -> tensor<1x4x8x16xf32>
    %30 = llm.linear %25, %2 : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
    %31 = llm.reshape %30 : tensor<8x32xf32> -> tensor<1x8x32xf32>
    %32 = llm.reshape %31 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
    %33 = llm.transpose %32 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
    %34 = llm.linear %25, %3 : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
    %35 = llm.reshape %34 : tensor<8x32xf32> -> tensor<1x8x32xf32>
    %36 = llm.reshape %35 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
    %37 = llm.transpose %36 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
    %38 = llm.concat %15, %15 {axis = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>) -> tensor<1x8x16xf32>
    %39 = llm.reshape %38 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %40 = llm.concat %16, %16 {axis = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>) -> tensor<1x8x16xf32>
    %41 = llm.reshape %40 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %42 = llm.broadcast %39 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %43 = llm.mul %29, %42 : tensor<1x4x8x16xf32>
    %44 = llm.slice %29 {axis = 3 : i64, size = 8 : i64, start = 0 : i64} : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
    %45 = llm.slice %29 {axis = 3 : i64, size = 8 : i64, start = 8 : i64} : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
    %46 = llm.neg %45 : tensor<1x4x8x8xf32>
    %47 = llm.concat %46, %44 {axis = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x16xf32>
    %48 = llm.broadcast %41 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %49 = llm.mul %47, %48 : tensor<1x4x8x16xf32>
    %50 = llm.add %43, %49 : tensor<1x4x8x16xf32>
    %51 = llm.broadcast %39 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %52 = llm.mul %33, %51 : tensor<1x2x8x16xf32>
    %53 = llm.slice %33 {axis = 3 : i64, size = 8 : i64, start = 0 : i64} : tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
    %54 = llm.slice %33 {axis = 3 : i64, size = 8 : i64, start = 8 : i64} : tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
    %55 = llm.neg %54 : tensor<1x2x8x8xf32>
    %56 = llm.concat %55, %53 {axis = 3 : i64} : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x16xf32>
    %57 = llm.broadcast %41 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %58 = llm.mul %56, %57 : tensor<1x2x8x16xf32>
    %59 = llm.add %52, %58 : tensor<1x2x8x16xf32>
    %60 = llm.reshape %59 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %61 = llm.broadcast %60 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %62 = llm.reshape %61 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %63 = llm.reshape %37 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %64 = llm.broadcast %63 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %65 = llm.reshape %64 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %cst_1 = arith.constant dense<[[0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<8x8xf32>
    %66 = llm.transpose %62 {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
    %67 = llm.reshape %50 : tensor<1x4x8x16xf32> -> tensor<4x8x16xf32>
    %68 = llm.reshape %66 : tensor<1x4x16x8xf32> -> tensor<4x16x8xf32>
    %69 = llm.matmul %67, %68 : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
    %70 = llm.reshape %69 : tensor<4x8x8xf32> -> tensor<1x4x8x8xf32>
    %cst_2 = arith.constant dense<4.000000e+00> : tensor<1x4x8x8xf32>
    %71 = llm.div %70, %cst_2 : tensor<1x4x8x8xf32>
    %72 = llm.broadcast %cst_1 : tensor<8x8xf32> -> tensor<1x4x8x8xf32>
    %73 = llm.add %71, %72 : tensor<1x4x8x8xf32>
    %74 = llm.softmax %73 {axis = 3 : i64} : tensor<1x4x8x8xf32>
    %75 = llm.reshape %74 : tensor<1x4x8x8xf32> -> tensor<4x8x8xf32>
    %76 = llm.reshape %65 : tensor<1x4x8x16xf32> -> tensor<4x8x16xf32>
    %77 = llm.matmul %75, %76 : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %78 = llm.reshape %77 : tensor<4x8x16xf32> -> tensor<1x4x8x16xf32>
    %79 = llm.transpose %78 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x8x16xf32> -> tensor<1x8x4x16xf32>
    %80 = llm.reshape %79 : tensor<1x8x4x16xf32> -> tensor<1x8x64xf32>
    %81 = llm.reshape %80 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %82 = llm.linear %81, %4 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %83 = llm.reshape %82 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %84 = llm.add %arg0, %83 : tensor<1x8x64xf32>
    %85 = llm.mul %84, %84 : tensor<1x8x64xf32>
    %86 = llm.reduce  mean %85 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %87 = llm.add %86, %cst_0 : tensor<1x8x1xf32>
    %88 = llm.rsqrt %87 : tensor<1x8x1xf32>
    %89 = llm.broadcast %88 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %90 = llm.mul %84, %89 : tensor<1x8x64xf32>
    %91 = llm.broadcast %5 : tensor<64xf32> -> tensor<1x8x64xf32>
    %92 = llm.mul %91, %90 : tensor<1x8x64xf32>
    %93 = llm.reshape %92 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %94 = llm.linear %93, %6 : (tensor<8x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
    %95 = llm.reshape %94 : tensor<8x128xf32> -> tensor<1x8x128xf32>
    %96 = llm.silu %95 : tensor<1x8x128xf32>
    %97 = llm.linear %93, %7 : (tensor<8x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
    %98 = llm.reshape %97 : tensor<8x128xf32> -> tensor<1x8x128xf32>
    %99 = llm.mul %96, %98 : tensor<1x8x128xf32>
    %100 = llm.reshape %99 : tensor<1x8x128xf32> -> tensor<8x128xf32>
    %101 = llm.linear %100, %8 : (tensor<8x128xf32>, tensor<64x128xf32>) -> tensor<8x64xf32>
    %102 = llm.reshape %101 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %103 = llm.add %84, %102 : tensor<1x8x64xf32>
    %104 = llm.mul %103, %103 : tensor<1x8x64xf32>
    %105 = llm.reduce  mean %104 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %106 = llm.add %105, %cst_0 : tensor<1x8x1xf32>
    %107 = llm.rsqrt %106 : tensor<1x8x1xf32>
    %108 = llm.broadcast %107 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %109 = llm.mul %103, %108 : tensor<1x8x64xf32>
    %110 = llm.broadcast %9 : tensor<64xf32> -> tensor<1x8x64xf32>
    %111 = llm.mul %110, %109 : tensor<1x8x64xf32>
    return %111 : tensor<1x8x64xf32>
  }
}
