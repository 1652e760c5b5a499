func.func @main() -> tensor<1048576xf32> {
  %0 = stablehlo.constant dense<1.5> : tensor<1048576xf32>
  %1 = stablehlo.add %0, %0 : tensor<1048576xf32>
  return %1 : tensor<1048576xf32>
}
