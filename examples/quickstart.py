"""pyir in one page: build, type, print, run, transform, and track an expression.

    python examples/quickstart.py
"""

import numpy as np

import pyir
from pyir import op

# Build: nodes are hash-consed, so equal structures are the same object.
x = pyir.var("x", shape=(1, 3, 8, 8))
w = pyir.const(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype("float32"))
b = pyir.const(np.zeros(4, "float32"))
conv = op.nn.conv2d(x, w, padding=(1, 1))
y = op.nn.relu(op.nn.bias_add(conv, b))
assert op.nn.conv2d(x, w, padding=[1, 1, 1, 1]) is conv  # same structure, same object
mod = pyir.Module.from_expr(y)

# Types are inferred bottom-up and cached.
print("type of main:", mod["main"].checked_type)

# Relay-like text.
print(mod)

# The numpy reference interpreter.
data = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype("float32")
out = pyir.evaluate(mod, data)
print("output shape:", out.shape, "max:", float(out.max()))

# A pass: a frozen object called on a module; the input is never modified.
relu_to_tanh = pyir.transform.module_pass(
    lambda m: m.with_function("main", pyir.rewrite(
        m["main"], lambda n: op.tanh(n.args[0])
        if isinstance(n, pyir.Call) and n.op is pyir.Op("nn.relu") else None)),
    name="ReluToTanh")
new = relu_to_tanh(mod)
assert new is not mod and mod["main"].body is y  # the input is unchanged

# Lineage: where did the relu go?
(found,) = new.find(y)
print("relu became:", repr(found))
print("history:", new.history(found))
print("unchanged subtree shared:", found.args[0] is y.args[0])
