"""# A tour of pyir

Build a model, run passes, follow lineage, diff, compare, draw.  Run it as a script
(``python examples/tour.py``: each shown object prints as text) or as a notebook
(``examples/tour.ipynb``, kept in sync by ``python tools/sync_tour.py``: each shown object
renders as HTML).
"""

# %% Build a small ResNet-style model
import sys
from typing import Any

import pyir
from pyir.analysis.diff import diff
from pyir.analysis.equality import alpha_equal, alpha_hash
from pyir.report import ReportInstrument
from pyir.transform.base import PassContext, Sequential
from pyir.transform.fold_constant import FoldConstant
from pyir.transform.fuse_ops import FuseOps
from pyir.transform.infer_type import InferType
from pyir.transform.simplify_inference import SimplifyInference
from pyir.viz import viz


def show(obj: Any) -> None:
    """Display ``obj``: HTML in a notebook, its text in a terminal."""
    ipython: Any = sys.modules.get("IPython")  # loaded only when running under IPython/Jupyter
    if ipython is None or ipython.get_ipython() is None:
        print(obj)
    else:
        ipython.display.display(obj)


pyir.display.install()
mod = pyir.testing.resnet(2)
show(pyir.summary(mod))

# %% Nodes are hash-consed: building the same thing twice gives the same object
x = mod["main"].params[0]
assert pyir.op.nn.relu(x) is pyir.op.nn.relu(x)
show(pyir.op.nn.relu(x))

# %% Run a pipeline with a report instrument; the input is untouched
before = mod.astext()
report = ReportInstrument()
with PassContext(instruments=[report]):
    simplified = Sequential([InferType(), SimplifyInference(), FoldConstant()])(mod)
    fused = FuseOps()(simplified)
assert mod.astext() == before  # no pass modifies its input
show(report)

# %% The fused module reads top-down, main first, with each binding's type
show(fused.show(show_types=True))

# %% Lineage: where did a conv2d of the input model go?  The representative is the conv itself
conv = next(n for n in pyir.post_order(mod["main"])
            if isinstance(n, pyir.Call) and n.op is pyir.Op("nn.conv2d"))
found = fused.find(conv)
show(found)

# %% ... highlighted in the fused program
show(fused.show(highlight=found))

# %% Where it came from, and the steps that led there
show(fused.origins(found.representative))
show(fused.history(conv))

# %% A table of main's bindings, like torch.fx's print_tabular
show(fused.tabular("main"))

# %% Diff two stages of the pipeline: aligned by lineage, only what changed highlighted
d = diff(simplified, fused)
show(d)

# %% Alpha-equality: an independently built model is alpha-equal, not identical
again = pyir.testing.resnet(2)
assert again["main"] is not mod["main"] and alpha_equal(again, mod)
print("alpha_hash:", alpha_hash(again["main"]).hex())

# %% A picture of the neighbourhood of the conv in the simplified model (SVG, no Graphviz needed)
show(viz(simplified, around=[conv], radius=2, highlight=[conv]))
print("TOUR OK")
