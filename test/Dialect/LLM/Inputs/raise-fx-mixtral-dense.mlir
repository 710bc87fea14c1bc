// python/pimc_torch/models.py:MixtralStack(num_layers=1, dispatch="dense"), x: float32 [1, 8, 64] (top-2 of 4 experts),
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
    %6 = llm.weight "layers.0.mlp.gate.weight" : tensor<4x64xf32>
    %7 = llm.weight "layers.0.mlp.experts.0.w1.weight" : tensor<96x64xf32>
    %8 = llm.weight "layers.0.mlp.experts.0.w2.weight" : tensor<64x96xf32>
    %9 = llm.weight "layers.0.mlp.experts.0.w3.weight" : tensor<96x64xf32>
    %10 = llm.weight "layers.0.mlp.experts.1.w1.weight" : tensor<96x64xf32>
    %11 = llm.weight "layers.0.mlp.experts.1.w2.weight" : tensor<64x96xf32>
    %12 = llm.weight "layers.0.mlp.experts.1.w3.weight" : tensor<96x64xf32>
    %13 = llm.weight "layers.0.mlp.experts.2.w1.weight" : tensor<96x64xf32>
    %14 = llm.weight "layers.0.mlp.experts.2.w2.weight" : tensor<64x96xf32>
    %15 = llm.weight "layers.0.mlp.experts.2.w3.weight" : tensor<96x64xf32>
    %16 = llm.weight "layers.0.mlp.experts.3.w1.weight" : tensor<96x64xf32>
    %17 = llm.weight "layers.0.mlp.experts.3.w2.weight" : tensor<64x96xf32>
    %18 = llm.weight "layers.0.mlp.experts.3.w3.weight" : tensor<96x64xf32>
    %19 = llm.weight "norm.weight" : tensor<64xf32>
    %20 = llm.weight "rotary_emb.inv_freq" : tensor<8xf32>
    %21 = llm.reshape %20 : tensor<8xf32> -> tensor<1x8xf32>
    %22 = llm.reshape %21 : tensor<1x8xf32> -> tensor<1x8x1xf32>
    %cst = arith.constant dense<[[[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00]]]> : tensor<1x1x8xf32>
    %23 = llm.matmul %22, %cst : (tensor<1x8x1xf32>, tensor<1x1x8xf32>) -> tensor<1x8x8xf32>
    %24 = llm.transpose %23 {permutation = array<i64: 0, 2, 1>} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
    %25 = llm.cos %24 : tensor<1x8x8xf32>
    %26 = llm.sin %24 : tensor<1x8x8xf32>
    %27 = llm.mul %arg0, %arg0 : tensor<1x8x64xf32>
    %28 = llm.reduce  mean %27 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %cst_0 = arith.constant dense<9.99999974E-6> : tensor<1x8x1xf32>
    %29 = llm.add %28, %cst_0 : tensor<1x8x1xf32>
    %30 = llm.rsqrt %29 : tensor<1x8x1xf32>
    %31 = llm.broadcast %30 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %32 = llm.mul %arg0, %31 : tensor<1x8x64xf32>
    %33 = llm.broadcast %0 : tensor<64xf32> -> tensor<1x8x64xf32>
    %34 = llm.mul %33, %32 : tensor<1x8x64xf32>
    %35 = llm.reshape %34 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %36 = llm.linear %35, %1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %37 = llm.reshape %36 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %38 = llm.reshape %37 : tensor<1x8x64xf32> -> tensor<1x8x4x16xf32>
    %39 = llm.transpose %38 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x16xf32> -> tensor<1x4x8x16xf32>
    %40 = llm.linear %35, %2 : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
    %41 = llm.reshape %40 : tensor<8x32xf32> -> tensor<1x8x32xf32>
    %42 = llm.reshape %41 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
    %43 = llm.transpose %42 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
    %44 = llm.linear %35, %3 : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
    %45 = llm.reshape %44 : tensor<8x32xf32> -> tensor<1x8x32xf32>
    %46 = llm.reshape %45 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
    %47 = llm.transpose %46 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
    %48 = llm.concat %25, %25 {axis = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>) -> tensor<1x8x16xf32>
    %49 = llm.reshape %48 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %50 = llm.concat %26, %26 {axis = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>) -> tensor<1x8x16xf32>
    %51 = llm.reshape %50 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %52 = llm.broadcast %49 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %53 = llm.mul %39, %52 : tensor<1x4x8x16xf32>
    %54 = llm.slice %39 {axis = 3 : i64, size = 8 : i64, start = 0 : i64} : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
    %55 = llm.slice %39 {axis = 3 : i64, size = 8 : i64, start = 8 : i64} : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
    %56 = llm.neg %55 : tensor<1x4x8x8xf32>
    %57 = llm.concat %56, %54 {axis = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x16xf32>
    %58 = llm.broadcast %51 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %59 = llm.mul %57, %58 : tensor<1x4x8x16xf32>
    %60 = llm.add %53, %59 : tensor<1x4x8x16xf32>
    %61 = llm.broadcast %49 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %62 = llm.mul %43, %61 : tensor<1x2x8x16xf32>
    %63 = llm.slice %43 {axis = 3 : i64, size = 8 : i64, start = 0 : i64} : tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
    %64 = llm.slice %43 {axis = 3 : i64, size = 8 : i64, start = 8 : i64} : tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
    %65 = llm.neg %64 : tensor<1x2x8x8xf32>
    %66 = llm.concat %65, %63 {axis = 3 : i64} : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x16xf32>
    %67 = llm.broadcast %51 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %68 = llm.mul %66, %67 : tensor<1x2x8x16xf32>
    %69 = llm.add %62, %68 : tensor<1x2x8x16xf32>
    %70 = llm.reshape %69 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %71 = llm.broadcast %70 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %72 = llm.reshape %71 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %73 = llm.reshape %47 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %74 = llm.broadcast %73 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %75 = llm.reshape %74 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %cst_1 = arith.constant dense<[[0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<8x8xf32>
    %76 = llm.transpose %72 {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
    %77 = llm.reshape %60 : tensor<1x4x8x16xf32> -> tensor<4x8x16xf32>
    %78 = llm.reshape %76 : tensor<1x4x16x8xf32> -> tensor<4x16x8xf32>
    %79 = llm.matmul %77, %78 : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
    %80 = llm.reshape %79 : tensor<4x8x8xf32> -> tensor<1x4x8x8xf32>
    %cst_2 = arith.constant dense<4.000000e+00> : tensor<1x4x8x8xf32>
    %81 = llm.div %80, %cst_2 : tensor<1x4x8x8xf32>
    %82 = llm.broadcast %cst_1 : tensor<8x8xf32> -> tensor<1x4x8x8xf32>
    %83 = llm.add %81, %82 : tensor<1x4x8x8xf32>
    %84 = llm.softmax %83 {axis = 3 : i64} : tensor<1x4x8x8xf32>
    %85 = llm.reshape %84 : tensor<1x4x8x8xf32> -> tensor<4x8x8xf32>
    %86 = llm.reshape %75 : tensor<1x4x8x16xf32> -> tensor<4x8x16xf32>
    %87 = llm.matmul %85, %86 : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %88 = llm.reshape %87 : tensor<4x8x16xf32> -> tensor<1x4x8x16xf32>
    %89 = llm.transpose %88 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x8x16xf32> -> tensor<1x8x4x16xf32>
    %90 = llm.reshape %89 : tensor<1x8x4x16xf32> -> tensor<1x8x64xf32>
    %91 = llm.reshape %90 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %92 = llm.linear %91, %4 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %93 = llm.reshape %92 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %94 = llm.add %arg0, %93 : tensor<1x8x64xf32>
    %95 = llm.mul %94, %94 : tensor<1x8x64xf32>
    %96 = llm.reduce  mean %95 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %97 = llm.add %96, %cst_0 : tensor<1x8x1xf32>
    %98 = llm.rsqrt %97 : tensor<1x8x1xf32>
    %99 = llm.broadcast %98 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %100 = llm.mul %94, %99 : tensor<1x8x64xf32>
    %101 = llm.broadcast %5 : tensor<64xf32> -> tensor<1x8x64xf32>
    %102 = llm.mul %101, %100 : tensor<1x8x64xf32>
    %103 = llm.reshape %102 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %104 = llm.linear %103, %6 : (tensor<8x64xf32>, tensor<4x64xf32>) -> tensor<8x4xf32>
    %105 = llm.softmax %104 {axis = 1 : i64} : tensor<8x4xf32>
    %values, %indices = llm.topk %105 {axis = 1 : i64, k = 2 : i64} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi64>
    %106 = llm.reduce  sum %values {axis = 1 : i64, keep_dim = true} : tensor<8x2xf32> -> tensor<8x1xf32>
    %107 = llm.broadcast %106 : tensor<8x1xf32> -> tensor<8x2xf32>
    %108 = llm.div %values, %107 : tensor<8x2xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<8x4xf32>
    %cst_4 = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
    %109 = llm.reshape %indices : tensor<8x2xi64> -> tensor<8x2x1xi64>
    %110 = llm.broadcast %109 : tensor<8x2x1xi64> -> tensor<8x2x4xi64>
    %111 = llm.broadcast %cst_4 : tensor<4xi64> -> tensor<8x2x4xi64>
    %112 = llm.compare  eq %110, %111 : tensor<8x2x4xi64> -> tensor<8x2x4xi1>
    %113 = llm.convert %112 : tensor<8x2x4xi1> -> tensor<8x2x4xf32>
    %114 = llm.reduce  max %113 {axis = 1 : i64} : tensor<8x2x4xf32> -> tensor<8x4xf32>
    %115 = llm.compare  ne %114, %cst_3 : tensor<8x4xf32> -> tensor<8x4xi1>
    %116 = llm.reshape %108 : tensor<8x2xf32> -> tensor<8x2x1xf32>
    %117 = llm.broadcast %116 : tensor<8x2x1xf32> -> tensor<8x2x4xf32>
    %118 = llm.mul %113, %117 : tensor<8x2x4xf32>
    %119 = llm.reduce  sum %118 {axis = 1 : i64} : tensor<8x2x4xf32> -> tensor<8x4xf32>
    %120 = llm.select %115, %119, %cst_3 : tensor<8x4xi1>, tensor<8x4xf32>
    %121 = llm.linear %103, %7 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %122 = llm.silu %121 : tensor<8x96xf32>
    %123 = llm.linear %103, %9 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %124 = llm.mul %122, %123 : tensor<8x96xf32>
    %125 = llm.linear %124, %8 : (tensor<8x96xf32>, tensor<64x96xf32>) -> tensor<8x64xf32>
    %126 = llm.linear %103, %10 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %127 = llm.silu %126 : tensor<8x96xf32>
    %128 = llm.linear %103, %12 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %129 = llm.mul %127, %128 : tensor<8x96xf32>
    %130 = llm.linear %129, %11 : (tensor<8x96xf32>, tensor<64x96xf32>) -> tensor<8x64xf32>
    %131 = llm.linear %103, %13 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %132 = llm.silu %131 : tensor<8x96xf32>
    %133 = llm.linear %103, %15 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %134 = llm.mul %132, %133 : tensor<8x96xf32>
    %135 = llm.linear %134, %14 : (tensor<8x96xf32>, tensor<64x96xf32>) -> tensor<8x64xf32>
    %136 = llm.linear %103, %16 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %137 = llm.silu %136 : tensor<8x96xf32>
    %138 = llm.linear %103, %18 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %139 = llm.mul %137, %138 : tensor<8x96xf32>
    %140 = llm.linear %139, %17 : (tensor<8x96xf32>, tensor<64x96xf32>) -> tensor<8x64xf32>
    %141 = llm.reshape %125 : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %142 = llm.reshape %130 : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %143 = llm.reshape %135 : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %144 = llm.reshape %140 : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %145 = llm.concat %141, %142, %143, %144 {axis = 1 : i64} : (tensor<8x1x64xf32>, tensor<8x1x64xf32>, tensor<8x1x64xf32>, tensor<8x1x64xf32>) -> tensor<8x4x64xf32>
    %146 = llm.reshape %120 : tensor<8x4xf32> -> tensor<8x4x1xf32>
    %147 = llm.broadcast %146 : tensor<8x4x1xf32> -> tensor<8x4x64xf32>
    %148 = llm.mul %147, %145 : tensor<8x4x64xf32>
    %149 = llm.reduce  sum %148 {axis = 1 : i64} : tensor<8x4x64xf32> -> tensor<8x64xf32>
    %150 = llm.reshape %149 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %151 = llm.add %94, %150 : tensor<1x8x64xf32>
    %152 = llm.mul %151, %151 : tensor<1x8x64xf32>
    %153 = llm.reduce  mean %152 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %154 = llm.add %153, %cst_0 : tensor<1x8x1xf32>
    %155 = llm.rsqrt %154 : tensor<1x8x1xf32>
    %156 = llm.broadcast %155 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %157 = llm.mul %151, %156 : tensor<1x8x64xf32>
    %158 = llm.broadcast %19 : tensor<64xf32> -> tensor<1x8x64xf32>
    %159 = llm.mul %158, %157 : tensor<1x8x64xf32>
    return %159 : tensor<1x8x64xf32>
  }
}
