func.func @main(%x: tensor<f32>) -> tensor<f32> {
%w0 = stablehlo.while(%a0 = %x) : tensor<f32>
 cond {
 %c0 = stablehlo.compare LT, %a0, %a0 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c0 : tensor<i1>
 } do {
%w1 = stablehlo.while(%a1 = %x) : tensor<f32>
 cond {
 %c1 = stablehlo.compare LT, %a1, %a1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c1 : tensor<i1>
 } do {
%w2 = stablehlo.while(%a2 = %x) : tensor<f32>
 cond {
 %c2 = stablehlo.compare LT, %a2, %a2 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c2 : tensor<i1>
 } do {
%w3 = stablehlo.while(%a3 = %x) : tensor<f32>
 cond {
 %c3 = stablehlo.compare LT, %a3, %a3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c3 : tensor<i1>
 } do {
%w4 = stablehlo.while(%a4 = %x) : tensor<f32>
 cond {
 %c4 = stablehlo.compare LT, %a4, %a4 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c4 : tensor<i1>
 } do {
%w5 = stablehlo.while(%a5 = %x) : tensor<f32>
 cond {
 %c5 = stablehlo.compare LT, %a5, %a5 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c5 : tensor<i1>
 } do {
%w6 = stablehlo.while(%a6 = %x) : tensor<f32>
 cond {
 %c6 = stablehlo.compare LT, %a6, %a6 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c6 : tensor<i1>
 } do {
%w7 = stablehlo.while(%a7 = %x) : tensor<f32>
 cond {
 %c7 = stablehlo.compare LT, %a7, %a7 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c7 : tensor<i1>
 } do {
%w8 = stablehlo.while(%a8 = %x) : tensor<f32>
 cond {
 %c8 = stablehlo.compare LT, %a8, %a8 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c8 : tensor<i1>
 } do {
%w9 = stablehlo.while(%a9 = %x) : tensor<f32>
 cond {
 %c9 = stablehlo.compare LT, %a9, %a9 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c9 : tensor<i1>
 } do {
%w10 = stablehlo.while(%a10 = %x) : tensor<f32>
 cond {
 %c10 = stablehlo.compare LT, %a10, %a10 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c10 : tensor<i1>
 } do {
%w11 = stablehlo.while(%a11 = %x) : tensor<f32>
 cond {
 %c11 = stablehlo.compare LT, %a11, %a11 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c11 : tensor<i1>
 } do {
%w12 = stablehlo.while(%a12 = %x) : tensor<f32>
 cond {
 %c12 = stablehlo.compare LT, %a12, %a12 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c12 : tensor<i1>
 } do {
%w13 = stablehlo.while(%a13 = %x) : tensor<f32>
 cond {
 %c13 = stablehlo.compare LT, %a13, %a13 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c13 : tensor<i1>
 } do {
%w14 = stablehlo.while(%a14 = %x) : tensor<f32>
 cond {
 %c14 = stablehlo.compare LT, %a14, %a14 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c14 : tensor<i1>
 } do {
%w15 = stablehlo.while(%a15 = %x) : tensor<f32>
 cond {
 %c15 = stablehlo.compare LT, %a15, %a15 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c15 : tensor<i1>
 } do {
%w16 = stablehlo.while(%a16 = %x) : tensor<f32>
 cond {
 %c16 = stablehlo.compare LT, %a16, %a16 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c16 : tensor<i1>
 } do {
%w17 = stablehlo.while(%a17 = %x) : tensor<f32>
 cond {
 %c17 = stablehlo.compare LT, %a17, %a17 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c17 : tensor<i1>
 } do {
%w18 = stablehlo.while(%a18 = %x) : tensor<f32>
 cond {
 %c18 = stablehlo.compare LT, %a18, %a18 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c18 : tensor<i1>
 } do {
%w19 = stablehlo.while(%a19 = %x) : tensor<f32>
 cond {
 %c19 = stablehlo.compare LT, %a19, %a19 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c19 : tensor<i1>
 } do {
%w20 = stablehlo.while(%a20 = %x) : tensor<f32>
 cond {
 %c20 = stablehlo.compare LT, %a20, %a20 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c20 : tensor<i1>
 } do {
%w21 = stablehlo.while(%a21 = %x) : tensor<f32>
 cond {
 %c21 = stablehlo.compare LT, %a21, %a21 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c21 : tensor<i1>
 } do {
%w22 = stablehlo.while(%a22 = %x) : tensor<f32>
 cond {
 %c22 = stablehlo.compare LT, %a22, %a22 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c22 : tensor<i1>
 } do {
%w23 = stablehlo.while(%a23 = %x) : tensor<f32>
 cond {
 %c23 = stablehlo.compare LT, %a23, %a23 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c23 : tensor<i1>
 } do {
%w24 = stablehlo.while(%a24 = %x) : tensor<f32>
 cond {
 %c24 = stablehlo.compare LT, %a24, %a24 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c24 : tensor<i1>
 } do {
%w25 = stablehlo.while(%a25 = %x) : tensor<f32>
 cond {
 %c25 = stablehlo.compare LT, %a25, %a25 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c25 : tensor<i1>
 } do {
%w26 = stablehlo.while(%a26 = %x) : tensor<f32>
 cond {
 %c26 = stablehlo.compare LT, %a26, %a26 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c26 : tensor<i1>
 } do {
%w27 = stablehlo.while(%a27 = %x) : tensor<f32>
 cond {
 %c27 = stablehlo.compare LT, %a27, %a27 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c27 : tensor<i1>
 } do {
%w28 = stablehlo.while(%a28 = %x) : tensor<f32>
 cond {
 %c28 = stablehlo.compare LT, %a28, %a28 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c28 : tensor<i1>
 } do {
%w29 = stablehlo.while(%a29 = %x) : tensor<f32>
 cond {
 %c29 = stablehlo.compare LT, %a29, %a29 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c29 : tensor<i1>
 } do {
%w30 = stablehlo.while(%a30 = %x) : tensor<f32>
 cond {
 %c30 = stablehlo.compare LT, %a30, %a30 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c30 : tensor<i1>
 } do {
%w31 = stablehlo.while(%a31 = %x) : tensor<f32>
 cond {
 %c31 = stablehlo.compare LT, %a31, %a31 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c31 : tensor<i1>
 } do {
%w32 = stablehlo.while(%a32 = %x) : tensor<f32>
 cond {
 %c32 = stablehlo.compare LT, %a32, %a32 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c32 : tensor<i1>
 } do {
%w33 = stablehlo.while(%a33 = %x) : tensor<f32>
 cond {
 %c33 = stablehlo.compare LT, %a33, %a33 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c33 : tensor<i1>
 } do {
%w34 = stablehlo.while(%a34 = %x) : tensor<f32>
 cond {
 %c34 = stablehlo.compare LT, %a34, %a34 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c34 : tensor<i1>
 } do {
%w35 = stablehlo.while(%a35 = %x) : tensor<f32>
 cond {
 %c35 = stablehlo.compare LT, %a35, %a35 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c35 : tensor<i1>
 } do {
%w36 = stablehlo.while(%a36 = %x) : tensor<f32>
 cond {
 %c36 = stablehlo.compare LT, %a36, %a36 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c36 : tensor<i1>
 } do {
%w37 = stablehlo.while(%a37 = %x) : tensor<f32>
 cond {
 %c37 = stablehlo.compare LT, %a37, %a37 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c37 : tensor<i1>
 } do {
%w38 = stablehlo.while(%a38 = %x) : tensor<f32>
 cond {
 %c38 = stablehlo.compare LT, %a38, %a38 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c38 : tensor<i1>
 } do {
%w39 = stablehlo.while(%a39 = %x) : tensor<f32>
 cond {
 %c39 = stablehlo.compare LT, %a39, %a39 : (tensor<f32>, tensor<f32>) -> tensor<i1>
 stablehlo.return %c39 : tensor<i1>
 } do {
 stablehlo.return %a39 : tensor<f32>
 }
 stablehlo.return %w39 : tensor<f32>
 }
 stablehlo.return %w38 : tensor<f32>
 }
 stablehlo.return %w37 : tensor<f32>
 }
 stablehlo.return %w36 : tensor<f32>
 }
 stablehlo.return %w35 : tensor<f32>
 }
 stablehlo.return %w34 : tensor<f32>
 }
 stablehlo.return %w33 : tensor<f32>
 }
 stablehlo.return %w32 : tensor<f32>
 }
 stablehlo.return %w31 : tensor<f32>
 }
 stablehlo.return %w30 : tensor<f32>
 }
 stablehlo.return %w29 : tensor<f32>
 }
 stablehlo.return %w28 : tensor<f32>
 }
 stablehlo.return %w27 : tensor<f32>
 }
 stablehlo.return %w26 : tensor<f32>
 }
 stablehlo.return %w25 : tensor<f32>
 }
 stablehlo.return %w24 : tensor<f32>
 }
 stablehlo.return %w23 : tensor<f32>
 }
 stablehlo.return %w22 : tensor<f32>
 }
 stablehlo.return %w21 : tensor<f32>
 }
 stablehlo.return %w20 : tensor<f32>
 }
 stablehlo.return %w19 : tensor<f32>
 }
 stablehlo.return %w18 : tensor<f32>
 }
 stablehlo.return %w17 : tensor<f32>
 }
 stablehlo.return %w16 : tensor<f32>
 }
 stablehlo.return %w15 : tensor<f32>
 }
 stablehlo.return %w14 : tensor<f32>
 }
 stablehlo.return %w13 : tensor<f32>
 }
 stablehlo.return %w12 : tensor<f32>
 }
 stablehlo.return %w11 : tensor<f32>
 }
 stablehlo.return %w10 : tensor<f32>
 }
 stablehlo.return %w9 : tensor<f32>
 }
 stablehlo.return %w8 : tensor<f32>
 }
 stablehlo.return %w7 : tensor<f32>
 }
 stablehlo.return %w6 : tensor<f32>
 }
 stablehlo.return %w5 : tensor<f32>
 }
 stablehlo.return %w4 : tensor<f32>
 }
 stablehlo.return %w3 : tensor<f32>
 }
 stablehlo.return %w2 : tensor<f32>
 }
 stablehlo.return %w1 : tensor<f32>
 }
 return %w0 : tensor<f32>
}
