// python/pimc_torch/models.py:MixtralStack(num_layers=1, dispatch="dense"), x: float32 [1, 8, 64], exported with
// torch.onnx.export (opset 17, pimc_torch.export_onnx) and imported by the ONNX
// importer with --no-raise (onnx2 branch, 2026-12-01): the IR the raising passes receive.
// Used by raise-onnx-graphs.test.
module {
  func.func @forward(%arg0: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
    %cst = arith.constant dense<[1.04453599, 1.06903577, 1.18760788, 1.05764866, 1.03858399, 0.966144263, 1.12224483, 1.04483604, 0.847133875, 1.10209131, 0.961112916, 1.04596758, 1.12623286, 1.09710956, 1.09364378, 0.966079831, 1.04195476, 0.984674692, 0.985546886, 0.919020295, 9.247520e-01, 1.06360853, 1.04050946, 0.953500807, 1.12454605, 0.957706093, 0.893134951, 0.993121623, 1.03911936, 1.05576074, 1.03992534, 0.949199914, 1.06710219, 0.924148738, 0.910999238, 1.10177755, 1.00615442, 0.984620451, 0.995236515, 0.865076959, 1.09586978, 1.13406432, 0.939885258, 1.01158655, 1.08337462, 0.788800895, 1.03769803, 0.865989327, 0.987000584, 1.04760385, 1.1253705, 0.995029807, 0.940987349, 0.965151846, 0.978277623, 0.764904975, 1.13593686, 0.861737967, 1.11331928, 0.882861793, 0.812937855, 0.891459763, 0.969650506, 0.929233313]> : tensor<64xf32>
    %cst_0 = arith.constant dense<1.000000e+00> : tensor<f32>
    %cst_1 = arith.constant dense<9.99999974E-6> : tensor<f32>
    %cst_2 = arith.constant dense<2.000000e+00> : tensor<f32>
    %0 = llm.weight "onnx::MatMul_443.T" : tensor<64x96xf32>
    %1 = llm.weight "onnx::MatMul_442.T" : tensor<96x64xf32>
    %2 = llm.weight "onnx::MatMul_441.T" : tensor<96x64xf32>
    %3 = llm.weight "onnx::MatMul_440.T" : tensor<64x96xf32>
    %4 = llm.weight "onnx::MatMul_439.T" : tensor<96x64xf32>
    %5 = llm.weight "onnx::MatMul_438.T" : tensor<96x64xf32>
    %6 = llm.weight "onnx::MatMul_437.T" : tensor<64x96xf32>
    %7 = llm.weight "onnx::MatMul_436.T" : tensor<96x64xf32>
    %8 = llm.weight "onnx::MatMul_435.T" : tensor<96x64xf32>
    %9 = llm.weight "onnx::MatMul_434.T" : tensor<64x96xf32>
    %10 = llm.weight "onnx::MatMul_433.T" : tensor<96x64xf32>
    %11 = llm.weight "onnx::MatMul_432.T" : tensor<96x64xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<8x4xf32>
    %12 = llm.weight "onnx::MatMul_430.T" : tensor<4x64xf32>
    %cst_4 = arith.constant dense<[0.963903188, 1.04115403, 1.13132405, 1.00420737, 1.07148314, 0.877569675, 1.02862239, 1.02102697, 0.946178793, 1.10605657, 1.07320869, 1.06104171, 0.944626092, 0.998156726, 1.07593894, 1.15042591, 0.792178273, 1.06654382, 1.01964486, 1.09732139, 0.982982158, 1.09623694, 1.09087193, 1.12558758, 0.799683988, 1.07696819, 1.04904675, 0.967347443, 0.899345576, 1.09832263, 0.993450939, 1.04227173, 1.20128405, 1.03217614, 1.04914451, 9.034900e-01, 0.772791326, 1.08040798, 0.953770279, 1.11683893, 1.02493858, 0.992945492, 0.934727311, 1.03302681, 0.833711206, 1.19403374, 0.839434087, 0.962610483, 0.927226722, 1.07936525, 0.878291904, 0.871562243, 1.20401573, 1.02277362, 0.950964212, 0.946534812, 0.852554321, 1.03614461, 1.14942026, 1.08492446, 0.993853271, 0.838162064, 0.912344634, 0.882163584]> : tensor<64xf32>
    %cst_5 = arith.constant dense<1.000000e+00> : tensor<f32>
    %cst_6 = arith.constant dense<9.99999974E-6> : tensor<f32>
    %cst_7 = arith.constant dense<2.000000e+00> : tensor<f32>
    %13 = llm.weight "onnx::MatMul_426.T" : tensor<64x64xf32>
    %cst_8 = arith.constant dense<4.000000e+00> : tensor<f32>
    %cst_9 = arith.constant dense<0.000000e+00> : tensor<8x8xf32>
    %cst_10 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_11 = arith.constant dense<true> : tensor<8x8xi1>
    %14 = llm.weight "onnx::MatMul_395.T" : tensor<32x64xf32>
    %15 = llm.weight "onnx::MatMul_384.T" : tensor<32x64xf32>
    %16 = llm.weight "onnx::MatMul_378.T" : tensor<64x64xf32>
    %cst_12 = arith.constant dense<[0.812858641, 0.96000272, 0.8438133, 1.02415061, 0.893164932, 0.972026586, 1.06073904, 0.929855644, 1.03798532, 1.17323983, 0.983782172, 1.00213301, 1.02326548, 1.17441285, 1.00616491, 0.99480623, 1.03151393, 1.04934955, 1.03399932, 0.958818614, 0.923550844, 1.14256155, 0.952629685, 1.21845198, 0.911570191, 1.04308331, 1.08373117, 0.931586563, 0.904562592, 0.944974482, 1.03270447, 1.05869448, 1.06895161, 1.0109303, 0.951703548, 1.07845128, 0.974890172, 0.903909742, 0.911072969, 0.965066909, 0.983479678, 0.814508914, 1.0181036, 1.12076223, 0.937107682, 1.07658124, 0.856167078, 0.948416709, 1.17029476, 1.11292148, 0.924806177, 1.01132059, 1.13038385, 0.993473172, 0.987479865, 1.0000248, 1.10078788, 1.16142023, 0.723327577, 1.17695642, 0.880439758, 0.882856667, 1.06275713, 1.01002729]> : tensor<64xf32>
    %cst_13 = arith.constant dense<1.000000e+00> : tensor<f32>
    %cst_14 = arith.constant dense<9.99999974E-6> : tensor<f32>
    %cst_15 = arith.constant dense<2.000000e+00> : tensor<f32>
    %cst_16 = arith.constant dense<[[[1.000000e+00], [0.177827939], [0.0316227786], [0.00562341325], [1.000000e-03], [1.7782794E-4], [3.16227743E-5], [5.62341347E-6]]]> : tensor<1x8x1xf32>
    %cst_17 = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
    %17 = llm.reshape %cst_17 : tensor<1x8xi64> -> tensor<1x1x8xi64>
    %18 = llm.convert %17 : tensor<1x1x8xi64> -> tensor<1x1x8xf32>
    %19 = llm.matmul %cst_16, %18 : (tensor<1x8x1xf32>, tensor<1x1x8xf32>) -> tensor<1x8x8xf32>
    %20 = llm.transpose %19 {permutation = array<i64: 0, 2, 1>} : tensor<1x8x8xf32> -> tensor<1x8x8xf32>
    %21 = llm.cos %20 : tensor<1x8x8xf32>
    %22 = llm.sin %20 : tensor<1x8x8xf32>
    %23 = llm.broadcast %cst_15 : tensor<f32> -> tensor<1x8x64xf32>
    %24 = llm.pow %arg0, %23 : tensor<1x8x64xf32>
    %25 = llm.reduce  mean %24 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %26 = llm.broadcast %cst_14 : tensor<f32> -> tensor<1x8x1xf32>
    %27 = llm.add %25, %26 : tensor<1x8x1xf32>
    %28 = llm.sqrt %27 : tensor<1x8x1xf32>
    %29 = llm.broadcast %cst_13 : tensor<f32> -> tensor<1x8x1xf32>
    %30 = llm.div %29, %28 : tensor<1x8x1xf32>
    %31 = llm.broadcast %30 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %32 = llm.mul %arg0, %31 : tensor<1x8x64xf32>
    %33 = llm.broadcast %cst_12 : tensor<64xf32> -> tensor<1x8x64xf32>
    %34 = llm.mul %33, %32 : tensor<1x8x64xf32>
    %35 = llm.linear %34, %16 : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
    %36 = llm.reshape %35 : tensor<1x8x64xf32> -> tensor<1x8x4x16xf32>
    %37 = llm.transpose %36 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x16xf32> -> tensor<1x4x8x16xf32>
    %38 = llm.linear %34, %15 : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
    %39 = llm.reshape %38 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
    %40 = llm.transpose %39 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
    %41 = llm.linear %34, %14 : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
    %42 = llm.reshape %41 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
    %43 = llm.transpose %42 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x16xf32> -> tensor<1x2x8x16xf32>
    %44 = llm.concat %21, %21 {axis = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>) -> tensor<1x8x16xf32>
    %45 = llm.reshape %44 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %46 = llm.concat %22, %22 {axis = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>) -> tensor<1x8x16xf32>
    %47 = llm.reshape %46 : tensor<1x8x16xf32> -> tensor<1x1x8x16xf32>
    %48 = llm.broadcast %45 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %49 = llm.mul %37, %48 : tensor<1x4x8x16xf32>
    %50 = llm.slice %37 {axis = 3 : i64, size = 8 : i64, start = 0 : i64} : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
    %51 = llm.slice %37 {axis = 3 : i64, size = 8 : i64, start = 8 : i64} : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
    %52 = llm.neg %51 : tensor<1x4x8x8xf32>
    %53 = llm.concat %52, %50 {axis = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x16xf32>
    %54 = llm.broadcast %47 : tensor<1x1x8x16xf32> -> tensor<1x4x8x16xf32>
    %55 = llm.mul %53, %54 : tensor<1x4x8x16xf32>
    %56 = llm.add %49, %55 : tensor<1x4x8x16xf32>
    %57 = llm.broadcast %45 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %58 = llm.mul %40, %57 : tensor<1x2x8x16xf32>
    %59 = llm.slice %40 {axis = 3 : i64, size = 8 : i64, start = 0 : i64} : tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
    %60 = llm.slice %40 {axis = 3 : i64, size = 8 : i64, start = 8 : i64} : tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
    %61 = llm.neg %60 : tensor<1x2x8x8xf32>
    %62 = llm.concat %61, %59 {axis = 3 : i64} : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x16xf32>
    %63 = llm.broadcast %47 : tensor<1x1x8x16xf32> -> tensor<1x2x8x16xf32>
    %64 = llm.mul %62, %63 : tensor<1x2x8x16xf32>
    %65 = llm.add %58, %64 : tensor<1x2x8x16xf32>
    %66 = llm.reshape %65 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %67 = llm.broadcast %66 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %68 = llm.reshape %67 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %69 = llm.reshape %43 : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
    %70 = llm.broadcast %69 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
    %71 = llm.reshape %70 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
    %cst_18 = arith.constant dense<[[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [true, true, true, true, false, false, false, false], [true, true, true, true, true, false, false, false], [true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true]]> : tensor<8x8xi1>
    %cst_19 = arith.constant dense<false> : tensor<8x8xi1>
    %72 = llm.select %cst_18, %cst_11, %cst_19 : tensor<8x8xi1>, tensor<8x8xi1>
    %cst_20 = arith.constant dense<false> : tensor<8x8xi1>
    %73 = llm.compare  eq %72, %cst_20 : tensor<8x8xi1> -> tensor<8x8xi1>
    %74 = llm.broadcast %cst_10 : tensor<f32> -> tensor<8x8xf32>
    %75 = llm.select %73, %74, %cst_9 : tensor<8x8xi1>, tensor<8x8xf32>
    %76 = llm.transpose %68 {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
    %77 = llm.matmul %56, %76 : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
    %78 = llm.broadcast %cst_8 : tensor<f32> -> tensor<1x4x8x8xf32>
    %79 = llm.div %77, %78 : tensor<1x4x8x8xf32>
    %80 = llm.broadcast %75 : tensor<8x8xf32> -> tensor<1x4x8x8xf32>
    %81 = llm.add %79, %80 : tensor<1x4x8x8xf32>
    %82 = llm.softmax %81 {axis = 3 : i64} : tensor<1x4x8x8xf32>
    %83 = llm.matmul %82, %71 : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
    %84 = llm.transpose %83 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x4x8x16xf32> -> tensor<1x8x4x16xf32>
    %85 = llm.reshape %84 : tensor<1x8x4x16xf32> -> tensor<1x8x64xf32>
    %86 = llm.linear %85, %13 : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
    %87 = llm.add %arg0, %86 : tensor<1x8x64xf32>
    %88 = llm.broadcast %cst_7 : tensor<f32> -> tensor<1x8x64xf32>
    %89 = llm.pow %87, %88 : tensor<1x8x64xf32>
    %90 = llm.reduce  mean %89 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %91 = llm.broadcast %cst_6 : tensor<f32> -> tensor<1x8x1xf32>
    %92 = llm.add %90, %91 : tensor<1x8x1xf32>
    %93 = llm.sqrt %92 : tensor<1x8x1xf32>
    %94 = llm.broadcast %cst_5 : tensor<f32> -> tensor<1x8x1xf32>
    %95 = llm.div %94, %93 : tensor<1x8x1xf32>
    %96 = llm.broadcast %95 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %97 = llm.mul %87, %96 : tensor<1x8x64xf32>
    %98 = llm.broadcast %cst_4 : tensor<64xf32> -> tensor<1x8x64xf32>
    %99 = llm.mul %98, %97 : tensor<1x8x64xf32>
    %100 = llm.reshape %99 : tensor<1x8x64xf32> -> tensor<8x64xf32>
    %101 = llm.linear %100, %12 : (tensor<8x64xf32>, tensor<4x64xf32>) -> tensor<8x4xf32>
    %102 = llm.softmax %101 {axis = 1 : i64} : tensor<8x4xf32>
    %values, %indices = llm.topk %102 {axis = 1 : i64, k = 2 : i64} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi64>
    %103 = llm.reduce  sum %values {axis = 1 : i64, keep_dim = true} : tensor<8x2xf32> -> tensor<8x1xf32>
    %104 = llm.broadcast %103 : tensor<8x1xf32> -> tensor<8x2xf32>
    %105 = llm.div %values, %104 : tensor<8x2xf32>
    %106 = llm.reshape %indices : tensor<8x2xi64> -> tensor<8x1x2xi64>
    %107 = llm.broadcast %106 : tensor<8x1x2xi64> -> tensor<8x4x2xi64>
    %cst_21 = arith.constant dense<[[[0], [1], [2], [3]]]> : tensor<1x4x1xi64>
    %108 = llm.broadcast %cst_21 : tensor<1x4x1xi64> -> tensor<8x4x2xi64>
    %109 = llm.compare  eq %107, %108 : tensor<8x4x2xi64> -> tensor<8x4x2xi1>
    %cst_22 = arith.constant dense<[[[-4], [-3], [-2], [-1]]]> : tensor<1x4x1xi64>
    %110 = llm.broadcast %cst_22 : tensor<1x4x1xi64> -> tensor<8x4x2xi64>
    %111 = llm.compare  eq %107, %110 : tensor<8x4x2xi64> -> tensor<8x4x2xi1>
    %112 = llm.select %109, %109, %111 : tensor<8x4x2xi1>, tensor<8x4x2xi1>
    %113 = llm.reshape %105 : tensor<8x2xf32> -> tensor<8x1x2xf32>
    %114 = llm.broadcast %113 : tensor<8x1x2xf32> -> tensor<8x4x2xf32>
    %cst_23 = arith.constant dense<0.000000e+00> : tensor<8x4x2xf32>
    %115 = llm.select %112, %114, %cst_23 : tensor<8x4x2xi1>, tensor<8x4x2xf32>
    %116 = llm.reduce  sum %115 {axis = 2 : i64, keep_dim = true} : tensor<8x4x2xf32> -> tensor<8x4x1xf32>
    %117 = llm.reshape %116 : tensor<8x4x1xf32> -> tensor<8x4xf32>
    %cst_24 = arith.constant dense<0.000000e+00> : tensor<8x4x2xf32>
    %cst_25 = arith.constant dense<1.000000e+00> : tensor<8x4x2xf32>
    %118 = llm.select %112, %cst_25, %cst_24 : tensor<8x4x2xi1>, tensor<8x4x2xf32>
    %cst_26 = arith.constant dense<0.000000e+00> : tensor<8x4xf32>
    %119 = llm.reduce  sum %118 {axis = 2 : i64, keep_dim = true} : tensor<8x4x2xf32> -> tensor<8x4x1xf32>
    %120 = llm.reshape %119 : tensor<8x4x1xf32> -> tensor<8x4xf32>
    %121 = llm.compare  gt %120, %cst_26 : tensor<8x4xf32> -> tensor<8x4xi1>
    %122 = llm.select %121, %117, %cst_3 : tensor<8x4xi1>, tensor<8x4xf32>
    %123 = llm.linear %100, %11 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %124 = llm.sigmoid %123 : tensor<8x96xf32>
    %125 = llm.mul %123, %124 : tensor<8x96xf32>
    %126 = llm.linear %100, %10 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %127 = llm.mul %125, %126 : tensor<8x96xf32>
    %128 = llm.linear %127, %9 : (tensor<8x96xf32>, tensor<64x96xf32>) -> tensor<8x64xf32>
    %129 = llm.linear %100, %8 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %130 = llm.sigmoid %129 : tensor<8x96xf32>
    %131 = llm.mul %129, %130 : tensor<8x96xf32>
    %132 = llm.linear %100, %7 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %133 = llm.mul %131, %132 : tensor<8x96xf32>
    %134 = llm.linear %133, %6 : (tensor<8x96xf32>, tensor<64x96xf32>) -> tensor<8x64xf32>
    %135 = llm.linear %100, %5 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %136 = llm.sigmoid %135 : tensor<8x96xf32>
    %137 = llm.mul %135, %136 : tensor<8x96xf32>
    %138 = llm.linear %100, %4 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %139 = llm.mul %137, %138 : tensor<8x96xf32>
    %140 = llm.linear %139, %3 : (tensor<8x96xf32>, tensor<64x96xf32>) -> tensor<8x64xf32>
    %141 = llm.linear %100, %2 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %142 = llm.sigmoid %141 : tensor<8x96xf32>
    %143 = llm.mul %141, %142 : tensor<8x96xf32>
    %144 = llm.linear %100, %1 : (tensor<8x64xf32>, tensor<96x64xf32>) -> tensor<8x96xf32>
    %145 = llm.mul %143, %144 : tensor<8x96xf32>
    %146 = llm.linear %145, %0 : (tensor<8x96xf32>, tensor<64x96xf32>) -> tensor<8x64xf32>
    %147 = llm.reshape %128 : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %148 = llm.reshape %134 : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %149 = llm.reshape %140 : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %150 = llm.reshape %146 : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %151 = llm.concat %147, %148, %149, %150 {axis = 1 : i64} : (tensor<8x1x64xf32>, tensor<8x1x64xf32>, tensor<8x1x64xf32>, tensor<8x1x64xf32>) -> tensor<8x4x64xf32>
    %152 = llm.reshape %122 : tensor<8x4xf32> -> tensor<8x4x1xf32>
    %153 = llm.broadcast %152 : tensor<8x4x1xf32> -> tensor<8x4x64xf32>
    %154 = llm.mul %153, %151 : tensor<8x4x64xf32>
    %155 = llm.reduce  sum %154 {axis = 1 : i64, keep_dim = true} : tensor<8x4x64xf32> -> tensor<8x1x64xf32>
    %156 = llm.reshape %155 : tensor<8x1x64xf32> -> tensor<8x64xf32>
    %157 = llm.reshape %156 : tensor<8x64xf32> -> tensor<1x8x64xf32>
    %158 = llm.add %87, %157 : tensor<1x8x64xf32>
    %159 = llm.broadcast %cst_2 : tensor<f32> -> tensor<1x8x64xf32>
    %160 = llm.pow %158, %159 : tensor<1x8x64xf32>
    %161 = llm.reduce  mean %160 {axis = 2 : i64, keep_dim = true} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
    %162 = llm.broadcast %cst_1 : tensor<f32> -> tensor<1x8x1xf32>
    %163 = llm.add %161, %162 : tensor<1x8x1xf32>
    %164 = llm.sqrt %163 : tensor<1x8x1xf32>
    %165 = llm.broadcast %cst_0 : tensor<f32> -> tensor<1x8x1xf32>
    %166 = llm.div %165, %164 : tensor<1x8x1xf32>
    %167 = llm.broadcast %166 : tensor<1x8x1xf32> -> tensor<1x8x64xf32>
    %168 = llm.mul %158, %167 : tensor<1x8x64xf32>
    %169 = llm.broadcast %cst : tensor<64xf32> -> tensor<1x8x64xf32>
    %170 = llm.mul %169, %168 : tensor<1x8x64xf32>
    return %170 : tensor<1x8x64xf32>
  }
}
