"""A tour of pyir: build a model, run passes, follow lineage, diff, compare, draw.

Run it as a script (``python examples/tour.py``) or cell by cell in an editor
that understands ``# %%`` cells (VS Code, PyCharm, Jupytext).  In a notebook
the objects render as HTML (``pyir.display.install()``).
"""

# %% Build a small ResNet-style model
import pyir
from pyir import display
from pyir.analysis.diff import diff
from pyir.analysis.equality import alpha_equal, alpha_hash, structural_equal
from pyir.report import ReportInstrument
from pyir.transform.base import PassContext, Sequential
from pyir.transform.fold_constant import FoldConstant
from pyir.transform.fuse_ops import FuseOps
from pyir.transform.infer_type import InferType
from pyir.transform.simplify_inference import SimplifyInference
from pyir.viz import to_dot

display.install()
mod = pyir.testing.resnet(2)
print(repr(mod))
print(str(mod)[:400])

# %% Nodes are hash-consed: building the same thing twice gives the same object
x = mod["main"].params[0]
print("relu(x) is relu(x):", pyir.op.nn.relu(x) is pyir.op.nn.relu(x))
print("structural_equal:", structural_equal(pyir.op.nn.relu(x), pyir.op.nn.relu(x)))

# %% Run a pipeline with a report instrument
report = ReportInstrument()
with PassContext(instruments=[report]):
    simplified = Sequential([InferType(), SimplifyInference(), FoldConstant()])(mod)
    fused = FuseOps()(simplified)
print(report.report())
print("input untouched:", repr(mod))
print("passes recorded:", [r.name for r in fused.pass_records])

# %% Lineage: where did a conv2d of the input model go?
conv = next(n for n in pyir.post_order(mod["main"])
            if isinstance(n, pyir.Call) and n.op is pyir.Op("nn.conv2d"))
found = fused.find(conv)
print("find:", found[:3])
print("origins of the first:", [i.hex()[:8] for i in fused.origins(found[0])])
print("history:", fused.history(conv)[:4])

# %% Diff two stages of the pipeline
d = diff(simplified, fused)
print(d.summary())
print(str(d)[:600])

# %% Alpha-equality: an independently built model is alpha-equal, not identical
again = pyir.testing.resnet(2)
print("same object:", again["main"] is mod["main"])
print("alpha_equal:", alpha_equal(again, mod))
print("alpha_hash:", alpha_hash(again["main"]).hex())

# %% A picture (DOT text; pyir.viz.viz(...) renders SVG in notebooks with graphviz)
dot = to_dot(fused, highlight=found)
print(dot.splitlines()[0], "...", len(dot.splitlines()), "lines of DOT")

# %% Notebook HTML (what Jupyter shows)
html = display.module_html(fused)  # what fused._repr_html_() returns once display.install() ran
print("module HTML:", len(html), "chars;", "diff HTML:", len(d._repr_html_()), "chars")
print("TOUR OK")
