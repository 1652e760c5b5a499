func.func @main() -> tensor<4294967296xf32> {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<4294967296xf32>
  return %0 : tensor<4294967296xf32>
}
