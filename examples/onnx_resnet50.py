"""Import ResNet-50 from ONNX, run the standard pipeline, and show where each fused group came from.

    python examples/onnx_resnet50.py

The model is the "light" ResNet-50 shipped with the onnx package (its weights are
constants, so the file is tiny).  Every fused primitive function of the result
is traced back, through every pass, to the ONNX nodes it was built from.
"""

import os
import time

import numpy as np
import onnx

import pyir
from pyir.frontend.onnx import from_onnx, onnx_sources
from pyir.transform.base import Sequential
from pyir.transform.dead_code_elimination import DeadCodeElimination
from pyir.transform.fold_constant import FoldConstant
from pyir.transform.fuse_ops import FuseOps
from pyir.transform.simplify_expr import SimplifyExpr
from pyir.transform.simplify_inference import SimplifyInference
from pyir.transform.to_a_normal_form import ToANormalForm
from pyir.transform.to_graph_normal_form import ToGraphNormalForm

path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_resnet50.onnx")
model = onnx.load(path)

t0 = time.perf_counter()
mod = from_onnx(model)
t1 = time.perf_counter()
out_type = mod.type_of(mod["main"].body)
print(f"imported {len(model.graph.node)} ONNX nodes in {t1 - t0:.2f} s; main returns {out_type}")

pipeline = Sequential([SimplifyInference(), FoldConstant(), SimplifyExpr(), FuseOps(), ToANormalForm(),
                       ToGraphNormalForm(), DeadCodeElimination()])
fused = pipeline(mod)
print(f"pipeline ran in {time.perf_counter() - t1:.2f} s: "
      + ", ".join(r.name for r in fused.pass_records))

calls = [n for n in pyir.post_order(fused["main"]) if isinstance(n, pyir.Call)
         and isinstance(n.op, pyir.Function) and n.op.attrs.get("Primitive")]
print(f"{len(calls)} fused groups:")
covered: set[tuple[str, str]] = set()
for i, call in enumerate(calls):
    assert isinstance(call.op, pyir.Function)
    ops = sorted({n.op.name for n in pyir.post_order(call.op.body)
                  if isinstance(n, pyir.Call) and isinstance(n.op, pyir.Op)})
    src = onnx_sources(fused, call)
    covered |= src
    names = ", ".join(f"{name}:{op_type}" for name, op_type in sorted(src, key=lambda s: (len(s[0]), s)))
    print(f"  group {i:2d} [{' + '.join(ops)}] <- {names}")

compute = {(n.name or n.output[0], n.op_type) for n in model.graph.node if n.op_type != "ConstantOfShape"}
print(f"ONNX compute nodes covered by the fused groups: {len(compute & covered)}/{len(compute)}")

x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
same = np.allclose(pyir.evaluate(mod, x), pyir.evaluate(fused, x), rtol=1e-5, atol=1e-7)
print(f"fused module computes the same probabilities: {same}")
