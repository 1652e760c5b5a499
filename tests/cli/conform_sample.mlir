// A small interpreter-style file for the runner's own test: a passing case, a failing
// check, an op kiln lacks, and a case without a function.

func.func @passes() {
  %0 = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi64>
  %1 = stablehlo.add %0, %0 : tensor<3xi64>
  check.expect_eq_const %1, dense<[2, 4, 6]> : tensor<3xi64>
  func.return
}

// -----

func.func @fails() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf64>
  check.expect_almost_eq_const %0, dense<[1.0, 2.5]> : tensor<2xf64>
  func.return
}

// -----

func.func @unknown_op() {
  %0 = stablehlo.constant dense<1> : tensor<i64>
  %1 = stablehlo.frobnicate %0 : tensor<i64>
  func.return
}

// -----

// no function here

// -----

func.func @parse_error() {
  %0 = stablehlo.constant dense<1> : tensor<i64>
  %1 = stablehlo.add %0, %nope : tensor<i64>
  func.return
}
