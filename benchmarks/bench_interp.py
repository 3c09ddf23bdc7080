"""pyir.evaluate next to onnxruntime, same process, same inputs: ResNet-50 and a ViT-B/16 encoder.

* ResNet-50: the architecture of onnx's ``backend/test/data/light/light_resnet50.onnx`` with its
  constant weights replaced by seeded random initializers (its logits compared as well as its
  softmax output);
* ViT-B/16: a generated encoder of ViT-B/16's size (224x224 image, 16x16 patches, 197 tokens,
  width 768, 12 layers of 12 heads, MLP 3072, 86 M weights), written with the ONNX operators the
  torch exporters use (Conv patch embedding, LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div, MatMul,
  Softmax, GELU through Erf).

Each round runs onnxruntime then pyir once per model (alternated, best of ``--repeats``) and reports
CPU seconds (``time.process_time``: all threads) and wall seconds, and the ratio pyir / onnxruntime;
"piped" is pyir.evaluate of the module after the standard pipeline (batch norms folded into the
convolutions' constants, FuseOps' primitive functions called as closures). Both run on one thread by
default (onnxruntime ``intra_op_num_threads=1``, BLAS pinned through the usual environment variables
before numpy loads), so the ratio compares the kernels, not the thread pools; ``--threads N``
changes both. The outputs are compared too.

    nice python benchmarks/bench_interp.py [--models resnet50 vit_b16] [--repeats 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys


def _pin_threads(n: int) -> None:
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ[v] = str(n)


if __name__ == "__main__":  # before numpy is imported
    _t = "1"
    for _i, _a in enumerate(sys.argv):
        if _a == "--threads" and _i + 1 < len(sys.argv):
            _t = sys.argv[_i + 1]
        elif _a.startswith("--threads="):
            _t = _a.split("=", 1)[1]
    _pin_threads(int(_t))

import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import pyir  # noqa: E402
from pyir.frontend.onnx import from_onnx  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def resnet50(seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The light ResNet-50 with seeded He-normal weights (vectors uniform in [0.5, 1.5])."""
    m = onnx.load(os.path.join(LIGHT, "light_resnet50.onnx"))
    rng = np.random.default_rng(seed)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    keep = []
    for n in m.graph.node:
        if n.op_type == "ConstantOfShape" and n.input[0] in inits:
            shape = tuple(int(v) for v in inits[n.input[0]])
            if len(shape) >= 2:
                arr = rng.standard_normal(shape, dtype=np.float32)
                arr *= np.float32(np.sqrt(2.0 / int(np.prod(shape[1:]))))
            else:
                arr = rng.uniform(0.5, 1.5, shape).astype(np.float32)
            m.graph.initializer.append(numpy_helper.from_array(arr, n.output[0]))
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    used = {i for n in m.graph.node for i in n.input}
    kept = [t for t in m.graph.initializer if t.name in used]
    del m.graph.initializer[:]
    m.graph.initializer.extend(kept)
    inputs = {i.name for i in m.graph.input}
    x_name = next(i.name for i in m.graph.input if i.name not in {t.name for t in kept})
    keep_in = [i for i in m.graph.input if i.name == x_name]
    del m.graph.input[:]
    m.graph.input.extend(keep_in)
    assert x_name in inputs
    softmax = [n for n in m.graph.node if n.op_type == "Softmax"]
    m.graph.output.append(helper.make_empty_tensor_value_info(softmax[-1].input[0]))  # the logits too
    x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    return m, {x_name: x}


def vit_encoder(layers: int = 12, width: int = 768, heads: int = 12, mlp: int = 3072, image: int = 224,
                patch: int = 16, seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A ViT encoder of the given size with seeded weights, as ONNX (opset 17)."""
    rng = np.random.default_rng(seed)
    nodes: list[Any] = []
    inits: list[Any] = []
    tokens = (image // patch) ** 2 + 1
    hd = width // heads

    def w(name: str, shape: tuple[int, ...], scale: float | None = None, mean: float = 0.0) -> str:
        s = scale if scale is not None else 1.0 / np.sqrt(shape[0])
        arr = (rng.standard_normal(shape) * s + mean).astype(np.float32)
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def c(name: str, value: Any, dtype: Any = np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def node(op: str, ins: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def layer_norm(x: str, p: str) -> str:
        mu = node("ReduceMean", [x], f"{p}.mean", axes=[-1], keepdims=1)
        d = node("Sub", [x, mu], f"{p}.d")
        var = node("ReduceMean", [node("Pow", [d, two], f"{p}.sq")], f"{p}.var", axes=[-1], keepdims=1)
        den = node("Sqrt", [node("Add", [var, eps], f"{p}.vareps")], f"{p}.den")
        y = node("Div", [d, den], f"{p}.norm")
        y = node("Mul", [y, w(f"{p}.gamma", (width,), 0.1, 1.0)], f"{p}.scaled")
        return node("Add", [y, w(f"{p}.beta", (width,), 0.1)], f"{p}.out")

    def linear(x: str, p: str, cin: int, cout: int) -> str:
        y = node("MatMul", [x, w(f"{p}.weight", (cin, cout))], f"{p}.mm")
        return node("Add", [y, w(f"{p}.bias", (cout,), 0.02)], f"{p}.out")

    two, eps, half, one = c("two", 2.0), c("eps", 1e-6), c("half", 0.5), c("one", 1.0)
    rsqrt2 = c("rsqrt2", 1 / np.sqrt(2.0))
    scale = c("scale", 1 / np.sqrt(hd))
    pw = w("patch.weight", (width, 3, patch, patch), 1 / np.sqrt(3 * patch * patch))
    x = node("Conv", ["pixel_values", pw, w("patch.bias", (width,), 0.02)], "patch.out",
             kernel_shape=[patch, patch], strides=[patch, patch])
    x = node("Reshape", [x, c("flat", [1, width, tokens - 1], np.int64)], "patch.flat")
    x = node("Transpose", [x], "patch.tokens", perm=[0, 2, 1])
    x = node("Concat", [w("cls", (1, 1, width), 0.02), x], "tokens", axis=1)
    x = node("Add", [x, w("pos", (1, tokens, width), 0.02)], "embedded")
    split = c("heads_shape", [1, tokens, heads, hd], np.int64)
    merge = c("merge_shape", [1, tokens, width], np.int64)
    for i in range(layers):
        p = f"l{i}"
        h = layer_norm(x, f"{p}.ln1")
        q, k, v = (node("Reshape", [linear(h, f"{p}.{n}", width, width), split], f"{p}.{n}.split")
                   for n in "qkv")
        q = node("Transpose", [q], f"{p}.qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"{p}.kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"{p}.vt", perm=[0, 2, 1, 3])
        s = node("Mul", [node("MatMul", [q, k], f"{p}.qk"), scale], f"{p}.scores")
        a = node("Softmax", [s], f"{p}.attn", axis=-1)
        o = node("Transpose", [node("MatMul", [a, v], f"{p}.av")], f"{p}.ot", perm=[0, 2, 1, 3])
        o = linear(node("Reshape", [o, merge], f"{p}.merged"), f"{p}.proj", width, width)
        x = node("Add", [x, o], f"{p}.res1")
        h = linear(layer_norm(x, f"{p}.ln2"), f"{p}.fc1", width, mlp)
        g = node("Erf", [node("Mul", [h, rsqrt2], f"{p}.gs")], f"{p}.erf")
        h = node("Mul", [node("Mul", [h, half], f"{p}.gh"), node("Add", [g, one], f"{p}.g1")], f"{p}.gelu")
        x = node("Add", [x, linear(h, f"{p}.fc2", mlp, width)], f"{p}.res2")
    out = layer_norm(x, "final")
    ins = [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, (1, 3, image, image))]
    outs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, (1, tokens, width))]
    g = helper.make_graph(nodes, "vit_encoder", ins, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((1, 3, image, image)).astype(np.float32)
    return m, {"pixel_values": x}


MODELS = {"resnet50": resnet50, "vit_b16": vit_encoder}


def pipeline() -> Any:
    """The standard pipeline (as in bench_onnx.py)."""
    from pyir.transform import standard_pipeline

    return standard_pipeline()


def measure(name: str, repeats: int, threads: int) -> dict[str, Any]:
    """Best-of-``repeats`` CPU and wall seconds of onnxruntime and pyir on one model."""
    import onnxruntime as ort

    model, feed = MODELS[name]()
    data = model.SerializeToString()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    mod = from_onnx(model)
    fused = pipeline()(mod)
    args = [feed[p.name_hint] for p in mod["main"].params]
    best = dict.fromkeys(("ort_cpu", "ort_wall", "pyir_cpu", "pyir_wall", "piped_cpu"), np.inf)
    want = sess.run(None, feed)  # warm-up of all three
    got = pyir.evaluate(mod, *args)
    piped = pyir.evaluate(fused, *args)
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        want = sess.run(None, feed)
        c1, w1 = time.process_time(), time.perf_counter()
        got = pyir.evaluate(mod, *args)
        c2, w2 = time.process_time(), time.perf_counter()
        best["ort_cpu"] = min(best["ort_cpu"], c1 - c0)
        best["ort_wall"] = min(best["ort_wall"], w1 - w0)
        best["pyir_cpu"] = min(best["pyir_cpu"], c2 - c1)
        best["pyir_wall"] = min(best["pyir_wall"], w2 - w1)
        piped = pyir.evaluate(fused, *args)
        best["piped_cpu"] = min(best["piped_cpu"], time.process_time() - c2)
    best["rel_err"] = max(float(np.abs(g.astype(np.float64) - w).max() / np.abs(w).max())
                          for y in (got, piped) for g, w in zip(y if isinstance(y, tuple) else [y], want))
    best["onnx_nodes"] = len(model.graph.node)
    return best


def main(argv: list[str] | None = None) -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    head = (f"{'model':<10} {'nodes':>6} {'ort cpu s':>10} {'pyir cpu s':>11} {'cpu ratio':>10} "
            f"{'ort wall s':>11} {'pyir wall s':>12} {'wall ratio':>11} {'piped cpu s':>12} {'ratio':>7} "
            f"{'rel err':>9}")
    print(f"threads {a.threads}, best of {a.repeats}, load {os.getloadavg()[0]:.1f}")
    print(head)
    print("-" * len(head))
    for name in a.models:
        r = measure(name, a.repeats, a.threads)
        print(f"{name:<10} {r['onnx_nodes']:>6} {r['ort_cpu']:>10.3f} {r['pyir_cpu']:>11.3f} "
              f"{r['pyir_cpu'] / r['ort_cpu']:>9.2f}x {r['ort_wall']:>11.3f} {r['pyir_wall']:>12.3f} "
              f"{r['pyir_wall'] / r['ort_wall']:>10.2f}x {r['piped_cpu']:>12.3f} "
              f"{r['piped_cpu'] / r['ort_cpu']:>6.2f}x "
              f"{r['rel_err']:>9.1e}", flush=True)


if __name__ == "__main__":
    main()
