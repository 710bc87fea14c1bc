// python/pimc_torch/models.py:GPT2Stack(n_layer=1), ids: int64 [1, 8] (tril mask buffer, GELU-tanh MLP, tied head),
// exported by the bridge (make_fx, torch 1.13) and imported by the FX importer
// (fx branch, 2026-12-01): the IR the raising passes receive. Used by
// raise-fx-graphs.test.
module {
  func.func @forward(%arg0: tensor<1x8xi64>) -> tensor<1x8x96xf32> {
    %0 = llm.weight "wte.weight" : tensor<96x64xf32>
    %1 = llm.weight "wpe.weight" : tensor<32x64xf32>
    %2 = llm.weight "h.0.ln_1.weight" : tensor<64xf32>
    %3 = llm.weight "h.0.ln_1.bias" : tensor<64xf32>
    %4 = llm.weight "h.0.attn.bias" : tensor<1x1x32x32xf32>
    %5 = llm.weight "h.0.attn.c_attn.weight" : tensor<64x192xf32>
    %6 = llm.weight "h.0.attn.c_attn.bias" : tensor<192xf32>
    %7 = llm.weight "h.0.attn.c_proj.weight" : tensor<64x64xf32>
    %8 = llm.weight "h.0.attn.c_proj.bias" : tensor<64xf32>
    %9 = llm.weight "h.0.ln_2.weight" : tensor<64xf32>
    %10 = llm.weight "h.0.ln_2.bias" : tensor<64xf32>
    %11 = llm.weight "h.0.mlp.c_fc.weight" : tensor<64x256xf32>
    %12 = llm.weight "h.0.mlp.c_fc.bias" : tensor<256xf32>
    %13 = llm.weight "h.0.mlp.c_proj.weight" : tensor<256x64xf32>
    %14 = llm.weight "h.0.mlp.c_proj.bias" : tensor<64xf32>
    %15 = llm.weight "ln_f.weight" : tensor<64xf32>
    %16 = llm.weight "ln_f.bias" : tensor<64xf32>
    %cst = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
    %17 = llm.reshape %arg0 : tensor<1x8xi64> -> tensor<8xi64>
    %18 = llm.embedding %0, %17 : (tensor<96x64xf32>, tensor<8xi64>) -> tensor<8x64xf32>
    %19 = llm.reshape %18 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %20 = llm.embedding %1, %cst : (tensor<32x64xf32>, tensor<8xi64>) -> tensor<8x64xf32>
    %21 = llm.broadcast %20 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %22 = llm.add %19, %21 : tensor<1x8x64xf32>
    %23 = llm.layer_norm %22 weight %2 bias %3 {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<1x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %24 = llm.reshape %23 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %25 = llm.matmul %24, %5 : (tensor<8x64xf32>, tensor<64x192xf32>) -> tensor<8x192xf32>
    %26 = llm.reshape %25 : tensor<8x192xf32> -> tensor<1x8x192xf32>
    %27 = llm.broadcast %6 : tensor<192xf32> -> tensor<1x8x192xf32>
    %28 = llm.add %26, %27 : tensor<1x8x192xf32>
    %29 = llm.slice %28 {axis = 2 : i64, size = 64 : i64, start = 0 : i64} : tensor<1x8x192xf32> -> tensor<1x8x64xf32>
    %30 = llm.slice %28 {axis = 2 : i64, size = 64 : i64, start = 64 : i64} : tensor<1x8x192xf32> -> tensor<1x8x64xf32>
    %31 = llm.slice %28 {axis = 2 : i64, size = 64 : i64, start = 128 : i64} : tensor<1x8x192xf32> -> tensor<1x8x64xf32>
    %32 = llm.reshape %30 : tensor<1x8x64xf32> -> tensor<1x8x4x16xf32>
    %33 = llm.transpose %32 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x16xf32> -> tensor<1x4x8x16xf32>
    %34 = llm.reshape %29 : tensor<1x8x64xf32> -> tensor<1x8x4x16xf32>
    %35 = llm.transpose %34 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x16xf32> -> tensor<1x4x8x16xf32>
    %36 = llm.reshape %31 : tensor<1x8x64xf32> -> tensor<1x8x4x16xf32>
    %37 = llm.transpose %36 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x16xf32> -> tensor<1x4x8x16xf32>
    %38 = llm.transpose %33 {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
    %39 = llm.reshape %35 : tensor<1x4x8x16xf32> -> tensor<4x8x16xf32>
    %40 = llm.reshape %38 : tensor<1x4x16x8xf32> -> tensor<4x16x8xf32>
    %41 = llm.matmul %39, %40 : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
    %42 = llm.reshape %41 : tensor<4x8x8xf32> -> tensor<1x4x8x8xf32>
    %43 = llm.scale %42 {factor = 2.500000e-01 : f32} : tensor<1x4x8x8xf32>
    %44 = llm.slice %4 {axis = 2 : i64, size = 8 : i64, start = 0 : i64} : tensor<1x1x32x32xf32> -> tensor<1x1x8x32xf32>
    %45 = llm.slice %44 {axis = 3 : i64, size = 8 : i64, start = 0 : i64} : tensor<1x1x8x32xf32> -> tensor<1x1x8x8xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<1x1x8x8xf32>
    %46 = llm.compare  eq %45, %cst_0 : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xi1>
    %47 = llm.broadcast %46 : tensor<1x1x8x8xi1> -> tensor<1x4x8x8xi1>
    %cst_1 = arith.constant dense<0xFF800000> : tensor<1x4x8x8xf32>
    %48 = llm.select %47, %cst_1, %43 : tensor<1x4x8x8xi1>, tensor<1x4x8x8xf32>
    %49 = llm.softmax %48 {axis = 3 : i64} : tensor<1x4x8x8xf32>
    %50 = llm.reshape %49 : tensor<1x4x8x8xf32> -> tensor<4x8x8xf32>
    %51 = llm.reshape %37 : tensor<1x4x8x16xf32> -> tensor<4x8x16xf32>
    %52 = llm.matmul %50, %51 : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %53 = llm.reshape %52 : tensor<4x8x16xf32> -> tensor<1x4x8x16xf32>
    %54 = llm.transpose %53 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x8x16xf32> -> tensor<1x8x4x16xf32>
    %55 = llm.reshape %54 : tensor<1x8x4x16xf32> -> tensor<1x8x64xf32>
    %56 = llm.reshape %55 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %57 = llm.matmul %56, %7 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %58 = llm.reshape %57 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %59 = llm.broadcast %8 : tensor<64xf32> -> tensor<1x8x64xf32>
    %60 = llm.add %58, %59 : tensor<1x8x64xf32>
    %61 = llm.add %22, %60 : tensor<1x8x64xf32>
    %62 = llm.layer_norm %61 weight %9 bias %10 {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<1x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %63 = llm.reshape %62 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %64 = llm.matmul %63, %11 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
    %65 = llm.reshape %64 : tensor<8x256xf32> -> tensor<1x8x256xf32>
    %66 = llm.broadcast %12 : tensor<256xf32> -> tensor<1x8x256xf32>
    %67 = llm.add %65, %66 : tensor<1x8x256xf32>
    %68 = llm.gelu %67 {approximate = true} : tensor<1x8x256xf32>
    %69 = llm.reshape %68 : tensor<1x8x256xf32> -> tensor<8x256xf32>
    %70 = llm.matmul %69, %13 : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
    %71 = llm.reshape %70 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %72 = llm.broadcast %14 : tensor<64xf32> -> tensor<1x8x64xf32>
    %73 = llm.add %71, %72 : tensor<1x8x64xf32>
    %74 = llm.add %61, %73 : tensor<1x8x64xf32>
    %75 = llm.layer_norm %74 weight %15 bias %16 {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<1x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %76 = llm.reshape %75 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %77 = llm.linear %76, %0 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %78 = llm.reshape %77 : tensor<8x96xf32> -> tensor<1x8x96xf32>
    return %78 : tensor<1x8x96xf32>
  }
}
