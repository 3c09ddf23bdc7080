"""pyir.parallel.map_pipeline: the Dask map equals the sequential map (issue 16 item 4).

One ``LocalCluster`` (two worker processes, one thread each) serves the whole module.  If it
cannot start (dask missing, no loopback network), the tests fail: they never skip.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from distributed import Client, Future, LocalCluster

import pyir
from pyir import parallel
from pyir.frontend.onnx import from_onnx, onnx_sources
from pyir.parallel import map_pipeline
from pyir.transform import FuseOps, PassContext, Sequential, SimplifyExpr, module_pass, standard_pipeline

onnx = pytest.importorskip("onnx")  # a test dependency: installed in CI, so this never skips there

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
# Six of the nine light models.  The other three (bvlc_alexnet, vgg19, zfnet512) import their
# uniform ConstantOfShape weights as 240-510 MB of constants (1.1 GB of the nine results' 1.2 GB):
# shipping them to and fro costs about a minute of wall time on 2 loaded cores and tests nothing
# the six do not.
MODELS = ["densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet"]


def light_path(name: str) -> str:
    return os.path.join(LIGHT, f"light_{name}.onnx")


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        yield c


class Spy:
    """A client that records what map_pipeline hands to Dask (to check it is bytes and text only)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.submitted: list[tuple] = []
        self.scattered: list = []

    def scatter(self, data, **kw):
        self.scattered.append(data)
        return self.client.scatter(data, **kw)

    def submit(self, fn, *args, **kw):
        self.submitted.append((fn, args))
        return self.client.submit(fn, *args, **kw)


def _calls(mod: pyir.Module, k: int) -> list[pyir.Expr]:
    return [n for n in pyir.post_order(mod["main"]) if isinstance(n, pyir.Call)][:k]


def test_light_models_on_cluster_equal_sequential(client):
    """Over the light ONNX models, imported on the workers: the same modules (ids, text,
    pass records), in input order, with the same lineage, as the in-process map and as a local
    import of each file run here."""
    paths = [light_path(m) for m in MODELS]
    seq = map_pipeline(standard_pipeline(), paths)
    spy = Spy(client)
    par = map_pipeline(standard_pipeline(), paths, spy)
    # what went to Dask: the pipeline pickle and paths (text); nothing else, no node graph
    assert [fn for fn, _ in spy.submitted] == [parallel._work] * len(paths)
    assert [args[2] for _, args in spy.submitted] == paths
    assert all(type(a) is str for _, args in spy.submitted for a in args[1:])
    assert all(isinstance(args[0], Future) for _, args in spy.submitted)
    assert len(spy.scattered) == 1 and type(spy.scattered[0]) is bytes
    assert len(par) == len(seq) == len(MODELS)
    # an import on a worker process is the import here: content ids are equal across processes
    imported = map_pipeline(Sequential([]), paths[-2:], client)
    assert [m["main"] for m in imported] == [from_onnx(p)["main"] for p in paths[-2:]]
    for name, path, a, b in zip(MODELS, paths, seq, par):
        assert b["main"] is a["main"], name          # equal ids: hash-consing gives the same object
        assert str(b) == str(a), name
        assert [r.name for r in b.pass_records] == [r.name for r in a.pass_records], name
        local = from_onnx(path)                        # imported here: the same nodes as on a worker
        for e in _calls(local, 8):
            assert [x.id for x in b.find(e)] == [x.id for x in a.find(e)], (name, e)
            assert b.find(e), (name, e)
            assert onnx_sources(b, b.find(e)[0]) == onnx_sources(a, a.find(e)[0])


def test_module_inputs_on_cluster(client):
    """Modules go to the workers as pyir binary bytes and come back with their lineage: nodes the
    pipeline kept are the client's own objects, ``find`` works against the input's nodes."""
    mods = [pyir.testing.resnet(2), from_onnx(light_path("squeezenet")), pyir.testing.resnet(1)]
    pipeline = Sequential([SimplifyExpr(), FuseOps()])
    seq = map_pipeline(pipeline, mods)
    spy = Spy(client)
    par = map_pipeline(pipeline, mods, spy)
    assert [type(d) for d in spy.scattered] == [bytes, list]
    assert all(type(d) is bytes for d in spy.scattered[1])
    assert [pyir.loads(d)["main"] for d in spy.scattered[1]] == [m["main"] for m in mods]
    for m, a, b in zip(mods, seq, par):
        assert b["main"] is a["main"] and b.astext() == a.astext()
        assert b.pass_records[-1].name == "FuseOps"
        for e in _calls(m, 10):
            found = b.find(e)
            assert found and [x.id for x in found] == [x.id for x in a.find(e)]
        consts = {n for n in pyir.post_order(m["main"]) if isinstance(n, pyir.Constant)}
        assert consts <= set(pyir.post_order(b["main"]))  # the very same Constant objects
    # the pass context's options travel to the workers
    with PassContext(opt_level=0, disabled_pass=["FuseOps"]):
        off = map_pipeline(pipeline, mods[:1], client)
    assert [r.name for r in off[0].pass_records] == [r.name for r in mods[0].pass_records]


class FakeStore:
    """The contract of pyir.store.Store that map_pipeline uses: ``put(mod, name=...) -> ref``."""

    def __init__(self) -> None:
        self.puts: list[tuple[str | None, pyir.Module]] = []

    def put(self, mod, name=None, parent=None):
        self.puts.append((name, mod))
        return f"ref{len(self.puts)}"


@pytest.mark.parametrize("distributed", [False, True])
def test_error_item_is_named(client, tmp_path, distributed):
    """A failing item re-raises on the client as a pyir error naming the item (the first failing
    one in input order, with the count of the others); nothing is written to the store."""
    junk = tmp_path / "junk.pyir"
    junk.write_bytes(b"PYIR not a payload")
    items = [pyir.testing.resnet(1), str(junk), str(tmp_path / "missing.onnx")]
    store = FakeStore()
    with pytest.raises(pyir.SerializationError, match=r"item 1 \(.*junk\.pyir\): SerializationError") as ei:
        map_pipeline(FuseOps(), items, client if distributed else None, store=store)
    if distributed:  # all items ran: the other failure is counted
        assert "1 more failed item(s): item 2 (" in str(ei.value)
    with pytest.raises(pyir.FrontendError, match=r"item 0 \(.*missing\.onnx\): FrontendError: cannot load"):
        map_pipeline(FuseOps(), items[2:], client if distributed else None)
    assert store.puts == []


@pytest.mark.parametrize("distributed", [False, True])
def test_store_path(client, tmp_path, distributed):
    """``store=`` puts each result, in input order, named by ``names`` or the file stem; a pyir
    binary file and a module are items too."""
    binary = tmp_path / "resnet_two.pyir"
    pyir.save(pyir.testing.resnet(2), binary)
    items = [light_path("squeezenet"), str(binary), pyir.testing.resnet(1)]
    store = FakeStore()
    out = map_pipeline(FuseOps(), items, client if distributed else None, store=store)
    assert [n for n, _ in store.puts] == ["light_squeezenet", "resnet_two", None]
    assert [m for _, m in store.puts] == out
    assert out[1]["main"] is FuseOps()(pyir.load(binary))["main"]
    store = FakeStore()
    map_pipeline(FuseOps(), items, client if distributed else None, store=store, names=["a", "b", "c"])
    assert [n for n, _ in store.puts] == ["a", "b", "c"]
    real = pyir.Store(str(tmp_path / "results.db"))  # the real store: the same contract
    map_pipeline(FuseOps(), items[:2], client if distributed else None, store=real)
    assert real.get("light_squeezenet")["main"] is out[0]["main"]
    assert [r.name for r in real.get("resnet_two").pass_records] == [r.name for r in out[1].pass_records]


@pytest.mark.parametrize("distributed", [False, True])
def test_bytes_items(client, distributed):
    """Bytes are items too (for a cluster without shared storage): a pyir binary payload, or else a
    serialized ONNX model, imported where the item runs."""
    path = light_path("squeezenet")
    with open(path, "rb") as f:
        model = f.read()
    mod = pyir.testing.resnet(1)
    out = map_pipeline(FuseOps(), [model, pyir.dumps(mod)], client if distributed else None)
    assert out[0]["main"] is FuseOps()(from_onnx(path))["main"]
    assert out[1]["main"] is FuseOps()(mod)["main"]


def test_bad_arguments():
    with pytest.raises(pyir.PassError, match="expected a pass"):
        map_pipeline(lambda m: m, [pyir.testing.resnet(1)])
    with pytest.raises(pyir.PassError, match=r"item 1: expected a Module, a path or bytes, got int"):
        map_pipeline(FuseOps(), [pyir.testing.resnet(1), 3])
    with pytest.raises(pyir.PassError, match="names must be 1 strings"):
        map_pipeline(FuseOps(), [pyir.testing.resnet(1)], names=["a", "b"])
    with pytest.raises(pyir.PassError, match="store must have a put"):
        map_pipeline(FuseOps(), [pyir.testing.resnet(1)], store=object())


def test_worker_task_is_bytes_in_bytes_out():
    """The task function itself: bytes and text in, bytes or an error description out."""
    job = parallel._pack(FuseOps(), parallel._context_options())
    mod = pyir.testing.resnet(1)
    status, data, _ = parallel._work(job, "module", pyir.dumps(mod))
    assert status == "ok" and type(data) is bytes
    assert pyir.loads(data)["main"] is FuseOps()(mod)["main"]
    status, etype, message = parallel._work(job, "module", b"junk")
    assert (status, etype) == ("error", "SerializationError") and "truncated" in message


def test_pyir_works_without_dask():
    """Nothing in pyir imports dask: with dask hidden, pyir imports and the sequential map runs."""
    code = ("import sys\n"
            "for m in ('dask', 'distributed', 'cloudpickle'): sys.modules[m] = None\n"
            "import pyir\n"
            "from pyir.parallel import map_pipeline\n"
            "from pyir.transform import FuseOps\n"
            "out = map_pipeline(FuseOps(), [pyir.testing.resnet(1)])\n"
            "loaded = sorted(m for m in sys.modules\n"
            "                if m.startswith(('dask', 'distributed')) and sys.modules[m])\n"
            "print(out[0].pass_records[-1].name, loaded)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["FuseOps", "[]"], proc.stdout


def test_pass_with_nodes_and_a_local_function_travels(client):
    """A pass made here from a local function whose closure holds a pyir node reaches the workers
    (cloudpickle sends the function by value, the node as pyir binary) and does what it does here."""
    scale = pyir.const(np.float32(2.0))

    def double_output(mod: pyir.Module) -> pyir.Module:
        f = mod["main"]
        return mod.with_function("main", pyir.Function(f.params, pyir.op.multiply(f.body, scale)))

    mod = pyir.testing.resnet(1)
    pipeline = Sequential([module_pass(double_output, name="DoubleOutput"), FuseOps()])
    assert parallel._MAGIC in parallel._pack(pipeline, {})  # the Constant pickles as pyir binary
    seq = map_pipeline(pipeline, [mod])
    par = map_pipeline(pipeline, [mod], client)
    assert par[0]["main"] is seq[0]["main"]
    assert [r.name for r in par[0].pass_records][-2:] == ["DoubleOutput", "FuseOps"]
    assert scale in set(pyir.post_order(par[0]["main"]))  # the client's own Constant object


def test_pipeline_that_does_not_pickle_fails_on_the_client(client):
    """Patterns do not pickle (they refuse attribute writes): a PatternRewrite pipeline is refused
    before any task starts, with a PassError naming the cause."""
    a = pyir.wildcard()
    rule = (pyir.is_op("multiply")(a, pyir.is_constant()), lambda mt: mt[a])
    with pytest.raises(pyir.PassError,
                       match="cannot be sent to workers: ImmutableError: patterns are immutable"):
        map_pipeline(pyir.PatternRewrite([rule]), [pyir.testing.resnet(1)], client)
