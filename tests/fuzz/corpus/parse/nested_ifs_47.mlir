func.func @main(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {
%v0 = "stablehlo.if"(%p) ({
%v1 = "stablehlo.if"(%p) ({
%v2 = "stablehlo.if"(%p) ({
%v3 = "stablehlo.if"(%p) ({
%v4 = "stablehlo.if"(%p) ({
%v5 = "stablehlo.if"(%p) ({
%v6 = "stablehlo.if"(%p) ({
%v7 = "stablehlo.if"(%p) ({
%v8 = "stablehlo.if"(%p) ({
%v9 = "stablehlo.if"(%p) ({
%v10 = "stablehlo.if"(%p) ({
%v11 = "stablehlo.if"(%p) ({
%v12 = "stablehlo.if"(%p) ({
%v13 = "stablehlo.if"(%p) ({
%v14 = "stablehlo.if"(%p) ({
%v15 = "stablehlo.if"(%p) ({
%v16 = "stablehlo.if"(%p) ({
%v17 = "stablehlo.if"(%p) ({
%v18 = "stablehlo.if"(%p) ({
%v19 = "stablehlo.if"(%p) ({
%v20 = "stablehlo.if"(%p) ({
%v21 = "stablehlo.if"(%p) ({
%v22 = "stablehlo.if"(%p) ({
%v23 = "stablehlo.if"(%p) ({
%v24 = "stablehlo.if"(%p) ({
%v25 = "stablehlo.if"(%p) ({
%v26 = "stablehlo.if"(%p) ({
%v27 = "stablehlo.if"(%p) ({
%v28 = "stablehlo.if"(%p) ({
%v29 = "stablehlo.if"(%p) ({
%v30 = "stablehlo.if"(%p) ({
%v31 = "stablehlo.if"(%p) ({
%v32 = "stablehlo.if"(%p) ({
%v33 = "stablehlo.if"(%p) ({
%v34 = "stablehlo.if"(%p) ({
%v35 = "stablehlo.if"(%p) ({
%v36 = "stablehlo.if"(%p) ({
%v37 = "stablehlo.if"(%p) ({
%v38 = "stablehlo.if"(%p) ({
%v39 = "stablehlo.if"(%p) ({
%v40 = "stablehlo.if"(%p) ({
%v41 = "stablehlo.if"(%p) ({
%v42 = "stablehlo.if"(%p) ({
%v43 = "stablehlo.if"(%p) ({
%v44 = "stablehlo.if"(%p) ({
%v45 = "stablehlo.if"(%p) ({
%v46 = "stablehlo.if"(%p) ({
stablehlo.return %x : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v46 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v45 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v44 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v43 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v42 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v41 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v40 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v39 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v38 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v37 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v36 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v35 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v34 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v33 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v32 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v31 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v30 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v29 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v28 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v27 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v26 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v25 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v24 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v23 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v22 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v21 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v20 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v19 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v18 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v17 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v16 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v15 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v14 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v13 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v12 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v11 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v10 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v9 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v8 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v7 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v6 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v5 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v4 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v3 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v2 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
stablehlo.return %v1 : tensor<f32>
}, {
stablehlo.return %x : tensor<f32>
}) : (tensor<i1>) -> tensor<f32>
return %v0 : tensor<f32>
}
