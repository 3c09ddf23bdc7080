"""Store every stage of a pipeline in a snapshot store, then query it.

Each stage is a snapshot of one SQLite file; the nodes the stages share are stored once.
Lineage questions (where did this relu go? what happened to it?) are answered from the
stored edges, without rebuilding the stages.

    python examples/store.py
"""

from __future__ import annotations

import os
import tempfile

import pyir
from pyir.transform import FoldConstant, FuseOps, InferType, SimplifyExpr, SimplifyInference

path = os.path.join(tempfile.mkdtemp(), "pipeline.db")
mod = pyir.testing.resnet(2)
relu = next(n for n in pyir.post_order(mod["main"])
            if isinstance(n, pyir.Call) and isinstance(n.op, pyir.Op) and n.op.name == "nn.relu")

with pyir.Store(path) as store:
    stage = mod
    store.put(stage, name="resnet")
    for p in [InferType(), SimplifyInference(), FoldConstant(), SimplifyExpr(), FuseOps()]:
        stage = p(stage)
        store.put(stage, name="resnet")  # each put writes only the nodes the file lacks
    for entry in store.log("resnet"):
        print(entry)

    found = store.find("resnet", relu)  # ids, from SQL over the stored edges
    print("the relu became", len(found), "node(s):", [i.hex()[:8] for i in found])
    for step in store.history("resnet", relu):
        print("  ", step)

    back = store.get("resnet")  # rebuilt through the constructors: the very same objects
    print("get returns the live module's nodes:", back["main"] is stage["main"])
    print("find agrees with the rebuilt module:", found == [n.id for n in back.find(relu)])
    first = store.log("resnet")[-1].id
    d = store.diff(first, "resnet")
    print(f"diff first -> last: {len(d.new)} new nodes, {len(d.dropped)} dropped")
    print(store.check())
print("file size after 6 stages:", os.path.getsize(path), "bytes")  # closed: the WAL is checkpointed
