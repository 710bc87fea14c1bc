// python/pimc_torch/models.py:LlamaStack(num_layers=1, rope_layout="interleaved"), x: float32 [1, 8, 64], exported with
// torch.onnx.export (opset 17, pimc_torch.export_onnx) and imported by the ONNX
// importer with --no-raise (onnx2 branch, 2026-12-01): the IR the raising passes receive.
// Used by raise-onnx-graphs.test.
module {
  func.func @forward(%arg0: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
    %cst = arith.constant dense<[1.02338779, 1.01194823, 1.04653108, 8.172970e-01, 0.893375635, 1.05939233, 0.848406612, 1.23438966, 0.828627705, 1.04421914, 0.958474159, 0.979269087, 1.28250837, 1.06720722, 0.813669741, 0.900599956, 1.07167923, 0.943128108, 1.07112598, 1.02214599, 0.92047882, 0.948576748, 0.993009686, 1.1003089, 0.982583701, 0.951054811, 0.827187777, 0.787058353, 1.00082195, 0.886612832, 0.978827774, 1.01271868, 0.852213263, 1.07822049, 0.934906125, 1.12076962, 1.05795181, 1.0343039, 0.980378866, 0.952107071, 0.960361897, 0.80907166, 0.927037954, 1.10221028, 1.00594842, 8.606070e-01, 0.968517243, 0.991579592, 0.992052733, 0.897843778, 1.17059708, 1.13994575, 0.97376883, 1.02213418, 0.813341617, 1.14838219, 1.02175975, 0.906410694, 1.05437028, 0.886033058, 0.867772519, 1.04244852, 1.02891564, 0.865272998]> : tensor<64xf32>
    %cst_0 = arith.constant dense<1.000000e+00> : tensor<f32>
    %cst_1 = arith.constant dense<9.99999974E-6> : tensor<f32>
    %cst_2 = arith.constant dense<2.000000e+00> : tensor<f32>
    %0 = llm.weight "onnx::MatMul_412.T" : tensor<64x128xf32>
    %1 = llm.weight "onnx::MatMul_411.T" : tensor<128x64xf32>
    %2 = llm.weight "onnx::MatMul_410.T" : tensor<128x64xf32>
    %cst_3 = arith.constant dense<[1.28180683, 0.820979952, 1.10279226, 0.898890078, 0.93814671, 0.875552833, 1.13554287, 1.04549372, 0.929820477, 1.05300093, 9.032920e-01, 1.00081706, 1.04089713, 1.04482472, 0.823535681, 0.978445768, 0.952727437, 1.00413942, 1.03366792, 1.12510657, 0.970583558, 0.876366854, 0.936145305, 1.03344786, 0.687620044, 0.954176545, 1.0269196, 0.984138965, 0.953487098, 1.09048843, 0.859937131, 0.780587494, 0.957389235, 1.01933324, 0.98880887, 0.950384438, 8.598850e-01, 1.13862264, 1.12927365, 0.923647761, 0.942974627, 1.14948273, 0.912813127, 0.932708263, 0.86661899, 8.375750e-01, 1.04960585, 1.11237931, 0.952038645, 1.06123447, 1.0737201, 0.96448332, 0.971903264, 1.2039572, 0.963147401, 0.989107966, 1.156440e+00, 0.96115905, 1.03132296, 1.00653517, 0.831710696, 0.987281978, 0.841571569, 0.816132664]> : tensor<64xf32>
    %cst_4 = arith.constant dense<1.000000e+00> : tensor<f32>
    %cst_5 = arith.constant dense<9.99999974E-6> : tensor<f32>
    %cst_6 = arith.constant dense<2.000000e+00> : tensor<f32>
    %3 = llm.weight "onnx::MatMul_409.T" : tensor<64x64xf32>
    %cst_7 = arith.constant dense<4.000000e+00> : tensor<f32>
    %cst_8 = arith.constant dense<0.000000e+00> : tensor<8x8xf32>
    %cst_9 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_10 = arith.constant dense<true> : tensor<8x8xi1>
    %4 = llm.weight "onnx::MatMul_368.T" : tensor<32x64xf32>
    %5 = llm.weight "onnx::MatMul_357.T" : tensor<32x64xf32>
    %6 = llm.weight "onnx::MatMul_351.T" : tensor<64x64xf32>
    %cst_11 = arith.constant dense<[1.03193164, 1.0953207, 1.09074163, 0.967647135, 0.980232596, 0.946157455, 0.93150878, 0.958873987, 1.01029301, 1.0172838, 0.895198166, 0.706085563, 1.10295272, 1.09954381, 0.906954527, 1.1623826, 1.19152892, 0.92474091, 0.858188748, 1.1876899, 0.894743084, 1.4562695, 0.981689274, 0.981863737, 0.951972246, 1.10620356, 1.06441879, 0.945061922, 1.03180456, 1.12009203, 1.10014963, 0.964510262, 0.986567616, 0.882089436, 1.02354276, 0.978875041, 0.975884974, 1.04905665, 1.02714205, 1.08778059, 9.179690e-01, 0.908570826, 1.07654309, 0.949563741, 1.07225811, 1.04946518, 1.07627273, 1.03851759, 1.04177833, 1.04506099, 0.930296123, 0.970003664, 9.830170e-01, 1.05373037, 1.0093112, 0.911846339, 1.15558779, 0.979573965, 1.02199244, 0.858203053, 1.07247889, 1.05314863, 0.959211707, 1.12843156]> : tensor<64xf32>
    %cst_12 = arith.constant dense<1.000000e+00> : tensor<f32>
    %cst_13 = arith.constant dense<9.99999974E-6> : tensor<f32>
    %cst_14 = arith.constant dense<2.000000e+00> : tensor<f32>
    %cst_15 = arith.constant dense<[[[1.000000e+00], [0.316227764], [1.000000e-01], [0.0316227786], [0.00999999977], [0.00316227786], [1.000000e-03], [3.16227786E-4]]]> : tensor<1x8x1xf32>
    %cst_16 = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
    %7 = llm.reshape %cst_16 : tensor<1x8xi64> -> tensor<1x1x8xi64>
    %8 = llm.convert %7 : tensor<1x1x8xi64> -> tensor<1x1x8xf32>
    %9 = llm.matmul %cst_15, %8 : (tensor<1x8x1xf32>, tensor<1x1x8xf32>) -> tensor<1x8x8xf32>
    %10 = llm.transpose %9 {permutation = array<i64: 0, 2, 1>} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
    %11 = llm.cos %10 : tensor<1x8x8xf32>
    %12 = llm.sin %10 : tensor<1x8x8xf32>
    %13 = llm.broadcast %cst_14 : tensor<f32> -> tensor<1x8x64xf32>
    %14 = llm.pow %arg0, %13 : tensor<1x8x64xf32>
    %15 = llm.reduce  mean %14 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %16 = llm.broadcast %cst_13 : tensor<f32> -> tensor<1x8x1xf32>
    %17 = llm.add %15, %16 : tensor<1x8x1xf32>
    %18 = llm.sqrt %17 : tensor<1x8x1xf32>
    %19 = llm.broadcast %cst_12 : tensor<f32> -> tensor<1x8x1xf32>
    %20 = llm.div %19, %18 : tensor<1x8x1xf32>
    %21 = llm.broadcast %20 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %22 = llm.mul %arg0, %21 : tensor<1x8x64xf32>
    %23 = llm.broadcast %cst_11 : tensor<64xf32> -> tensor<1x8x64xf32>
    %24 = llm.mul %23, %22 : tensor<1x8x64xf32>
    %25 = llm.linear %24, %6 : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
    %26 = llm.reshape %25 : tensor<1x8x64xf32> -> tensor<1x8x4x16xf32>
    %27 = llm.transpose %26 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x16xf32> -> tensor<1x4x8x16xf32>
    %28 = llm.linear %24, %5 : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
    %29 = llm.reshape %28 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
    %30 = llm.transpose %29 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
    %31 = llm.linear %24, %4 : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
    %32 = llm.reshape %31 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
    %33 = llm.transpose %32 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
    %34 = llm.reshape %11 : tensor<1x8x8xf32> -> tensor<64x1xf32>
    %35 = llm.reshape %34 : tensor<64x1xf32> -> tensor<64x1x1xf32>
    %36 = llm.broadcast %35 : tensor<64x1x1xf32> -> tensor<64x2x1xf32>
    %37 = llm.reshape %36 : tensor<64x2x1xf32> -> tensor<64x2xf32>
    %38 = llm.reshape %37 : tensor<64x2xf32> -> tensor<1x8x16xf32>
    %39 = llm.reshape %38 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %40 = llm.reshape %12 : tensor<1x8x8xf32> -> tensor<64x1xf32>
    %41 = llm.reshape %40 : tensor<64x1xf32> -> tensor<64x1x1xf32>
    %42 = llm.broadcast %41 : tensor<64x1x1xf32> -> tensor<64x2x1xf32>
    %43 = llm.reshape %42 : tensor<64x2x1xf32> -> tensor<64x2xf32>
    %44 = llm.reshape %43 : tensor<64x2xf32> -> tensor<1x8x16xf32>
    %45 = llm.reshape %44 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %46 = llm.broadcast %39 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %47 = llm.mul %27, %46 : tensor<1x4x8x16xf32>
    %cst_17 = arith.constant dense<[0, 2, 4, 6, 8, 10, 12, 14]> : tensor<8xi64>
    %48 = llm.gather %27, %cst_17 {axis = 3 : i64} : (tensor<1x4x8x16xf32>, tensor<8xi64>) -> tensor<1x4x8x8xf32>
    %cst_18 = arith.constant dense<[1, 3, 5, 7, 9, 11, 13, 15]> : tensor<8xi64>
    %49 = llm.gather %27, %cst_18 {axis = 3 : i64} : (tensor<1x4x8x16xf32>, tensor<8xi64>) -> tensor<1x4x8x8xf32>
    %50 = llm.neg %49 : tensor<1x4x8x8xf32>
    %51 = llm.reshape %50 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8x1xf32>
    %52 = llm.reshape %48 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8x1xf32>
    %53 = llm.concat %51, %52 {axis = 4 : i64} : (tensor<1x4x8x8x1xf32>, tensor<1x4x8x8x1xf32>) -> tensor<1x4x8x8x2xf32>
    %54 = llm.reshape %53 : tensor<1x4x8x8x2xf32> -> tensor<1x4x8x16xf32>
    %55 = llm.broadcast %45 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %56 = llm.mul %54, %55 : tensor<1x4x8x16xf32>
    %57 = llm.add %47, %56 : tensor<1x4x8x16xf32>
    %58 = llm.broadcast %39 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %59 = llm.mul %30, %58 : tensor<1x2x8x16xf32>
    %cst_19 = arith.constant dense<[0, 2, 4, 6, 8, 10, 12, 14]> : tensor<8xi64>
    %60 = llm.gather %30, %cst_19 {axis = 3 : i64} : (tensor<1x2x8x16xf32>, tensor<8xi64>) -> tensor<1x2x8x8xf32>
    %cst_20 = arith.constant dense<[1, 3, 5, 7, 9, 11, 13, 15]> : tensor<8xi64>
    %61 = llm.gather %30, %cst_20 {axis = 3 : i64} : (tensor<1x2x8x16xf32>, tensor<8xi64>) -> tensor<1x2x8x8xf32>
    %62 = llm.neg %61 : tensor<1x2x8x8xf32>
    %63 = llm.reshape %62 : tensor<1x2x8x8xf32> -> tensor<1x2x8x8x1xf32>
    %64 = llm.reshape %60 : tensor<1x2x8x8xf32> -> tensor<1x2x8x8x1xf32>
    %65 = llm.concat %63, %64 {axis = 4 : i64} : (tensor<1x2x8x8x1xf32>, tensor<1x2x8x8x1xf32>) -> tensor<1x2x8x8x2xf32>
    %66 = llm.reshape %65 : tensor<1x2x8x8x2xf32> -> tensor<1x2x8x16xf32>
    %67 = llm.broadcast %45 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %68 = llm.mul %66, %67 : tensor<1x2x8x16xf32>
    %69 = llm.add %59, %68 : tensor<1x2x8x16xf32>
    %70 = llm.reshape %69 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %71 = llm.broadcast %70 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %72 = llm.reshape %71 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %73 = llm.reshape %33 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %74 = llm.broadcast %73 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %75 = llm.reshape %74 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %cst_21 = arith.constant dense<[[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [true, true, true, true, false, false, false, false], [true, true, true, true, true, false, false, false], [true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true]]> : tensor<8x8xi1>
    %cst_22 = arith.constant dense<false> : tensor<8x8xi1>
    %76 = llm.select %cst_21, %cst_10, %cst_22 : tensor<8x8xi1>, tensor<8x8xi1>
    %cst_23 = arith.constant dense<false> : tensor<8x8xi1>
    %77 = llm.compare  eq %76, %cst_23 : tensor<8x8xi1> -> tensor<8x8xi1>
    %78 = llm.broadcast %cst_9 : tensor<f32> -> tensor<8x8xf32>
    %79 = llm.select %77, %78, %cst_8 : tensor<8x8xi1>, tensor<8x8xf32>
    %80 = llm.transpose %72 {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
    %81 = llm.matmul %57, %80 : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
    %82 = llm.broadcast %cst_7 : tensor<f32> -> tensor<1x4x8x8xf32>
    %83 = llm.div %81, %82 : tensor<1x4x8x8xf32>
    %84 = llm.broadcast %79 : tensor<8x8xf32> -> tensor<1x4x8x8xf32>
    %85 = llm.add %83, %84 : tensor<1x4x8x8xf32>
    %86 = llm.softmax %85 {axis = 3 : i64} : tensor<1x4x8x8xf32>
    %87 = llm.matmul %86, %75 : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
    %88 = llm.transpose %87 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x8x16xf32> -> tensor<1x8x4x16xf32>
    %89 = llm.reshape %88 : tensor<1x8x4x16xf32> -> tensor<1x8x64xf32>
    %90 = llm.linear %89, %3 : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
    %91 = llm.add %arg0, %90 : tensor<1x8x64xf32>
    %92 = llm.broadcast %cst_6 : tensor<f32> -> tensor<1x8x64xf32>
    %93 = llm.pow %91, %92 : tensor<1x8x64xf32>
    %94 = llm.reduce  mean %93 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %95 = llm.broadcast %cst_5 : tensor<f32> -> tensor<1x8x1xf32>
    %96 = llm.add %94, %95 : tensor<1x8x1xf32>
    %97 = llm.sqrt %96 : tensor<1x8x1xf32>
    %98 = llm.broadcast %cst_4 : tensor<f32> -> tensor<1x8x1xf32>
    %99 = llm.div %98, %97 : tensor<1x8x1xf32>
    %100 = llm.broadcast %99 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %101 = llm.mul %91, %100 : tensor<1x8x64xf32>
    %102 = llm.broadcast %cst_3 : tensor<64xf32> -> tensor<1x8x64xf32>
    %103 = llm.mul %102, %101 : tensor<1x8x64xf32>
    %104 = llm.linear %103, %2 : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
    %105 = llm.sigmoid %104 : tensor<1x8x128xf32>
    %106 = llm.mul %104, %105 : tensor<1x8x128xf32>
    %107 = llm.linear %103, %1 : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
    %108 = llm.mul %106, %107 : tensor<1x8x128xf32>
    %109 = llm.linear %108, %0 : (tensor<1x8x128xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
    %110 = llm.add %91, %109 : tensor<1x8x64xf32>
    %111 = llm.broadcast %cst_2 : tensor<f32> -> tensor<1x8x64xf32>
    %112 = llm.pow %110, %111 : tensor<1x8x64xf32>
    %113 = llm.reduce  mean %112 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %114 = llm.broadcast %cst_1 : tensor<f32> -> tensor<1x8x1xf32>
    %115 = llm.add %113, %114 : tensor<1x8x1xf32>
    %116 = llm.sqrt %115 : tensor<1x8x1xf32>
    %117 = llm.broadcast %cst_0 : tensor<f32> -> tensor<1x8x1xf32>
    %118 = llm.div %117, %116 : tensor<1x8x1xf32>
    %119 = llm.broadcast %118 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %120 = llm.mul %110, %119 : tensor<1x8x64xf32>
    %121 = llm.broadcast %cst : tensor<64xf32> -> tensor<1x8x64xf32>
    %122 = llm.mul %121, %120 : tensor<1x8x64xf32>
    return %122 : tensor<1x8x64xf32>
  }
}
