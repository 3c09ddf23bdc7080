"""Run one pass pipeline over many models on a Dask cluster, with lineage intact.

``pyir.parallel.map_pipeline`` sends each module to a worker as pyir's binary format (a path
is opened on the worker), runs the pipeline there and rebuilds the results here: the nodes
the pipeline kept are this process's own objects, and ``result.find(expr)`` finds an
expression of the input, as after a run in this process.  Needs ``pip install 'pyir[dask]'``.

    python examples/parallel.py

On a real cluster, only the client changes: ``Client("tcp://scheduler:8786")``; paths must
then be readable by the workers (shared storage), or pass the files' bytes instead.
"""

import os
import tempfile
from typing import Any

import distributed

import pyir
from pyir.parallel import map_pipeline
from pyir.transform import FoldConstant, FuseOps, Sequential, SimplifyExpr, SimplifyInference


def main() -> None:
    pipeline = Sequential([SimplifyInference(), FoldConstant(), SimplifyExpr(), FuseOps()])
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "resnet3.pyir")
        pyir.save(pyir.testing.resnet(3), saved)          # a file: loaded on the worker
        items: list[object] = [pyir.testing.resnet(1), pyir.testing.resnet(2), saved]
        reference = map_pipeline(pipeline, items)          # client=None: here, one after the other
        dask: Any = distributed  # untyped: its classes are called through Any
        with dask.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                               dashboard_address=":0") as cluster, dask.Client(cluster) as client:
            print("workers:", len(client.scheduler_info()["workers"]))
            results = map_pipeline(pipeline, items, client)
    print("same modules as in-process, in input order:",
          all(r["main"] is s["main"] for r, s in zip(results, reference)))
    first = items[0]
    assert isinstance(first, pyir.Module)
    relu = next(n for n in pyir.post_order(first["main"])
                if isinstance(n, pyir.Call) and isinstance(n.op, pyir.Op) and n.op.name == "nn.relu")
    found = results[0].find(relu)
    print("a relu of the input found in the result:", bool(found) and found == reference[0].find(relu))
    print("passes:", [r.name for r in results[0].pass_records])


if __name__ == "__main__":  # the workers are new processes: they import this file without running it
    main()
