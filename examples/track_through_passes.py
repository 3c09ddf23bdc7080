"""Track "the same" expression through FuseOps, DefuseOps and more passes, without annotations.

The problem users reported against other IRs: pick an expression inside a fused
function, defuse, keep working on it.  In pyir the lineage side-table answers
``mod.find(expr)`` across the whole pipeline.

    python examples/track_through_passes.py
"""

import numpy as np

import pyir
from pyir import op
from pyir.transform import DefuseOps, FuseOps, InferType, SimplifyExpr, ToANormalForm

rng = np.random.default_rng(0)


def conv_block(h: pyir.Expr, cin: int, cout: int) -> pyir.Expr:
    w = pyir.const(rng.standard_normal((cout, cin, 3, 3)).astype("float32") * 0.1)
    b = pyir.const(rng.standard_normal(cout).astype("float32"))
    return op.nn.relu(op.nn.bias_add(op.nn.conv2d(h, w, padding=(1, 1)), b))


x = pyir.var("x", shape=(1, 3, 16, 16))
net = conv_block(conv_block(x, 3, 8), 8, 8)
net = op.multiply(net, pyir.const(1.0))  # something for SimplifyExpr to remove
mod = pyir.Module.from_expr(net)
original_text = mod.astext()

# 1. Type and fuse.
typed = InferType()(mod)
fused = FuseOps()(typed)
prims = [n for n in pyir.post_order(fused["main"]) if isinstance(n, pyir.Function)
         and n.attrs.get("Primitive")]
print(f"FuseOps made {len(prims)} primitive functions")

# 2. Pick an expression inside a fused function: the bias_add of the first one.
picked = next(n for n in pyir.post_order(prims[0].body)
              if isinstance(n, pyir.Call) and n.op is pyir.Op("nn.bias_add"))
print("picked inside a fused function:", repr(picked))

# 3. Defuse: the expression is found again -- and it is the user's original node.
defused = DefuseOps()(fused)
(back,) = defused.find(picked)
originals = set(pyir.post_order(mod["main"]))
print("after DefuseOps:", repr(back))
print("recovered the very same expression:", back in originals)
print("defused main is the typed original main:", defused["main"] is typed["main"])

# 4. Keep going: A-normal form and simplification rebuild the graph; find still works.
final = SimplifyExpr()(ToANormalForm()(defused))
found = final.find(picked)
print(f"after ToANormalForm + SimplifyExpr, find gives {len(found)} expression(s):")
for n in found:
    print("  ", repr(n))
call = next(n for n in found if isinstance(n, pyir.Call))
print("its history:")
for step in final.history(call):
    print("  ", step)
print("origins of the found call include the original:", back.id in final.origins(call))
assert mod.astext() == original_text, "passes never modify their input"
print("input module unchanged: True")
