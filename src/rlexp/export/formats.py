"""The exported files and the runtimes that read them back: ONNX (torch's dynamo exporter, run by
onnxruntime; int8 by onnxruntime's dynamic quantization) and TorchScript (``torch.jit.trace``, run by
``torch.jit.load``). The parity check runs exactly these readers on the written files."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

from rlexp.builders.torch_settings import unchecked_distributions
from rlexp.errors import ConfigError, one_line_error
from rlexp.export.graph import Graph

FORMATS = ("onnx", "torchscript")
FILES = {"onnx": "policy.onnx", "torchscript": "policy.pt", "int8": "policy.int8.onnx"}
RUNTIME_FILES = {"onnxruntime": "onnx", "torch.jit.load": "torchscript", "onnxruntime_int8": "int8"}  # check -> file

Runner = Callable[[list[np.ndarray]], list[np.ndarray]]


def _batch_axes(graph: Graph) -> tuple[tuple[dict[int, torch.export.Dim], ...]]:
    """One batch dim shared by every input; wrapped once more for the module's ``*inputs``."""
    batch = torch.export.Dim("batch")
    return (tuple({t.shape.index("batch"): batch} for t in graph.inputs),)


def _root(err: BaseException) -> BaseException:
    """The error the exporters wrap theirs around: the one that says what in the policy failed."""
    while err.__cause__ is not None:
        err = err.__cause__
    return err


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporters' progress lines, deprecation warnings and notes on torchvision go nowhere; their
    errors still raise."""
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), unchecked_distributions():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


def write_onnx(graph: Graph, path: Path) -> int:
    """Writes the ONNX file with a dynamic batch axis; returns its opset."""
    import onnx

    try:
        with _quiet(), torch.no_grad():
            torch.onnx.export(
                graph.module,
                graph.example(),
                str(path),
                input_names=[t.name for t in graph.inputs],
                output_names=[t.name for t in graph.outputs],
                dynamic_shapes=_batch_axes(graph),
                dynamo=True,
                external_data=False,
                verbose=False,
            )
    except Exception as err:
        raise ConfigError(f"torch.onnx.export failed on this policy: {one_line_error(_root(err))[:400]}") from None
    model = onnx.load(str(path))
    try:
        onnx.checker.check_model(model)
    except Exception as err:
        raise ConfigError(f"the exported ONNX file fails onnx's checker: {one_line_error(err)[:400]}") from None
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def write_torchscript(graph: Graph, path: Path) -> None:
    try:
        with _quiet(), torch.no_grad():
            traced = torch.jit.trace(graph.module, graph.example(), check_trace=False)
            torch.jit.save(traced, str(path))
    except Exception as err:
        raise ConfigError(f"torch.jit.trace failed on this policy: {one_line_error(_root(err))[:400]}") from None


def quantize_int8(source: Path, dest: Path) -> None:
    """onnxruntime's dynamic quantization: int8 weights, activations quantized as they come."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # the quantizer infers shapes again and trips on those the exporter recorded: it gets the graph without
    model = onnx.load(str(source))
    del model.graph.value_info[:]
    with _quiet():
        quantize_dynamic(model, str(dest), weight_type=QuantType.QInt8)


def onnx_runner(path: Path, threads: int) -> Runner:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: its warnings are not the user's business
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as err:
        raise ConfigError(f"onnxruntime cannot load {path.name}: {one_line_error(err)[:400]}") from None
    names = [i.name for i in session.get_inputs()]
    return lambda inputs: [np.asarray(out) for out in session.run(None, dict(zip(names, inputs, strict=True)))]


def torchscript_runner(path: Path) -> Runner:
    module = torch.jit.load(str(path))

    def run(inputs: list[np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            out = module(*(torch.as_tensor(x) for x in inputs))
        return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]

    return run
