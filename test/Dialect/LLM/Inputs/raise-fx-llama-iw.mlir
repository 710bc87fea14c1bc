// python/pimc_torch/models.py:LlamaStack(num_layers=1, rope_layout="interleaved", sliding_window=3), x: float32 [1, 8, 64],
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
    %38 = llm.reshape %15 : tensor<1x8x8xf32> -> tensor<64x1xf32>
    %39 = llm.reshape %38 : tensor<64x1xf32> -> tensor<64x1x1xf32>
    %40 = llm.broadcast %39 : tensor<64x1x1xf32> -> tensor<64x2x1xf32>
    %41 = llm.reshape %40 : tensor<64x2x1xf32> -> tensor<64x2xf32>
    %42 = llm.reshape %41 : tensor<64x2xf32> -> tensor<1x8x16xf32>
    %43 = llm.reshape %42 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %44 = llm.reshape %16 : tensor<1x8x8xf32> -> tensor<64x1xf32>
    %45 = llm.reshape %44 : tensor<64x1xf32> -> tensor<64x1x1xf32>
    %46 = llm.broadcast %45 : tensor<64x1x1xf32> -> tensor<64x2x1xf32>
    %47 = llm.reshape %46 : tensor<64x2x1xf32> -> tensor<64x2xf32>
    %48 = llm.reshape %47 : tensor<64x2xf32> -> tensor<1x8x16xf32>
    %49 = llm.reshape %48 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %50 = llm.broadcast %43 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %51 = llm.mul %29, %50 : tensor<1x4x8x16xf32>
    %cst_1 = arith.constant dense<[0, 2, 4, 6, 8, 10, 12, 14]> : tensor<8xi64>
    %52 = llm.gather %29, %cst_1 {axis = 3 : i64} : (tensor<1x4x8x16xf32>, tensor<8xi64>) -> tensor<1x4x8x8xf32>
    %cst_2 = arith.constant dense<[1, 3, 5, 7, 9, 11, 13, 15]> : tensor<8xi64>
    %53 = llm.gather %29, %cst_2 {axis = 3 : i64} : (tensor<1x4x8x16xf32>, tensor<8xi64>) -> tensor<1x4x8x8xf32>
    %54 = llm.neg %53 : tensor<1x4x8x8xf32>
    %55 = llm.reshape %54 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8x1xf32>
    %56 = llm.reshape %52 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8x1xf32>
    %57 = llm.concat %55, %56 {axis = 4 : i64} : (tensor<1x4x8x8x1xf32>, tensor<1x4x8x8x1xf32>) -> tensor<1x4x8x8x2xf32>
    %58 = llm.reshape %57 : tensor<1x4x8x8x2xf32> -> tensor<1x4x8x16xf32>
    %59 = llm.broadcast %49 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %60 = llm.mul %58, %59 : tensor<1x4x8x16xf32>
    %61 = llm.add %51, %60 : tensor<1x4x8x16xf32>
    %62 = llm.broadcast %43 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %63 = llm.mul %33, %62 : tensor<1x2x8x16xf32>
    %64 = llm.gather %33, %cst_1 {axis = 3 : i64} : (tensor<1x2x8x16xf32>, tensor<8xi64>) -> tensor<1x2x8x8xf32>
    %65 = llm.gather %33, %cst_2 {axis = 3 : i64} : (tensor<1x2x8x16xf32>, tensor<8xi64>) -> tensor<1x2x8x8xf32>
    %66 = llm.neg %65 : tensor<1x2x8x8xf32>
    %67 = llm.reshape %66 : tensor<1x2x8x8xf32> -> tensor<1x2x8x8x1xf32>
    %68 = llm.reshape %64 : tensor<1x2x8x8xf32> -> tensor<1x2x8x8x1xf32>
    %69 = llm.concat %67, %68 {axis = 4 : i64} : (tensor<1x2x8x8x1xf32>, tensor<1x2x8x8x1xf32>) -> tensor<1x2x8x8x2xf32>
    %70 = llm.reshape %69 : tensor<1x2x8x8x2xf32> -> tensor<1x2x8x16xf32>
    %71 = llm.broadcast %49 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %72 = llm.mul %70, %71 : tensor<1x2x8x16xf32>
    %73 = llm.add %63, %72 : tensor<1x2x8x16xf32>
    %74 = llm.reshape %73 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %75 = llm.broadcast %74 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %76 = llm.reshape %75 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %77 = llm.reshape %37 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %78 = llm.broadcast %77 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %79 = llm.reshape %78 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %cst_3 = arith.constant dense<[[0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0xFF800000, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0xFF800000, 0xFF800000, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000], [0xFF800000, 0xFF800000, 0xFF800000, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000], [0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000], [0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<8x8xf32>
    %80 = llm.transpose %76 {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
    %81 = llm.reshape %61 : tensor<1x4x8x16xf32> -> tensor<4x8x16xf32>
    %82 = llm.reshape %80 : tensor<1x4x16x8xf32> -> tensor<4x16x8xf32>
    %83 = llm.matmul %81, %82 : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
    %84 = llm.reshape %83 : tensor<4x8x8xf32> -> tensor<1x4x8x8xf32>
    %cst_4 = arith.constant dense<4.000000e+00> : tensor<1x4x8x8xf32>
    %85 = llm.div %84, %cst_4 : tensor<1x4x8x8xf32>
    %86 = llm.broadcast %cst_3 : tensor<8x8xf32> -> tensor<1x4x8x8xf32>
    %87 = llm.add %85, %86 : tensor<1x4x8x8xf32>
    %88 = llm.softmax %87 {axis = 3 : i64} : tensor<1x4x8x8xf32>
    %89 = llm.reshape %88 : tensor<1x4x8x8xf32> -> tensor<4x8x8xf32>
    %90 = llm.reshape %79 : tensor<1x4x8x16xf32> -> tensor<4x8x16xf32>
    %91 = llm.matmul %89, %90 : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %92 = llm.reshape %91 : tensor<4x8x16xf32> -> tensor<1x4x8x16xf32>
    %93 = llm.transpose %92 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x8x16xf32> -> tensor<1x8x4x16xf32>
    %94 = llm.reshape %93 : tensor<1x8x4x16xf32> -> tensor<1x8x64xf32>
    %95 = llm.reshape %94 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %96 = llm.linear %95, %4 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %97 = llm.reshape %96 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %98 = llm.add %arg0, %97 : tensor<1x8x64xf32>
    %99 = llm.mul %98, %98 : tensor<1x8x64xf32>
    %100 = llm.reduce  mean %99 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %101 = llm.add %100, %cst_0 : tensor<1x8x1xf32>
    %102 = llm.rsqrt %101 : tensor<1x8x1xf32>
    %103 = llm.broadcast %102 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %104 = llm.mul %98, %103 : tensor<1x8x64xf32>
    %105 = llm.broadcast %5 : tensor<64xf32> -> tensor<1x8x64xf32>
    %106 = llm.mul %105, %104 : tensor<1x8x64xf32>
    %107 = llm.reshape %106 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %108 = llm.linear %107, %6 : (tensor<8x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
    %109 = llm.reshape %108 : tensor<8x128xf32> -> tensor<1x8x128xf32>
    %110 = llm.silu %109 : tensor<1x8x128xf32>
    %111 = llm.linear %107, %7 : (tensor<8x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
    %112 = llm.reshape %111 : tensor<8x128xf32> -> tensor<1x8x128xf32>
    %113 = llm.mul %110, %112 : tensor<1x8x128xf32>
    %114 = llm.reshape %113 : tensor<1x8x128xf32> -> tensor<8x128xf32>
    %115 = llm.linear %114, %8 : (tensor<8x128xf32>, tensor<64x128xf32>) -> tensor<8x64xf32>
    %116 = llm.reshape %115 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %117 = llm.add %98, %116 : tensor<1x8x64xf32>
    %118 = llm.mul %117, %117 : tensor<1x8x64xf32>
    %119 = llm.reduce  mean %118 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %120 = llm.add %119, %cst_0 : tensor<1x8x1xf32>
    %121 = llm.rsqrt %120 : tensor<1x8x1xf32>
    %122 = llm.broadcast %121 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %123 = llm.mul %117, %122 : tensor<1x8x64xf32>
    %124 = llm.broadcast %9 : tensor<64xf32> -> tensor<1x8x64xf32>
    %125 = llm.mul %124, %123 : tensor<1x8x64xf32>
    return %125 : tensor<1x8x64xf32>
  }
}
