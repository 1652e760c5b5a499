func.func @main() -> tensor<65536xf32> {
  %0 = stablehlo.constant dense<"0x0000803F0000803F"> : tensor<65536xf32>
  return %0 : tensor<65536xf32>
}
