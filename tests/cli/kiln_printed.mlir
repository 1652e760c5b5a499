module @kiln {
  // calling convention of @main: 2 arguments, 1 results
  //   donated arguments: none
  //   preserved results (returned unchanged): none
  //   aliased results (may reuse a donated buffer): none
  func.func public @main(%arg0: tensor<2x3xf32> {kiln.path = "x"}, %arg1: tensor<2x3xf32> {kiln.path = "y"}) -> tensor<2x3xf32> {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %1 = stablehlo.multiply %0, %arg0 : tensor<2x3xf32>
    %2 = stablehlo.add %1, %arg1 : tensor<2x3xf32>
    return %2 : tensor<2x3xf32>
  }
}
