"""FLOPs and bytes moved by one op instance, from its recorded input shapes and dtypes.

A model exists for the ops in ``MODELS``; any other op, or a modelled op whose shapes or dtypes
are not what the model needs, has no cost (``None``), never a guess. Counting rules:

* matrix products (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``matmul``, ``linear``,
  ``_scaled_mm``): 2·M·K·N per product (a multiply and an add), bias and beta/alpha terms not
  counted, as torch's ``with_flops=True`` counts them; the cost keeps the GEMM's batch, M, N, K;
* convolution (forward, not transposed): 2·N·C_out·prod(output size)·(C_in/groups)·prod(kernel),
  from the stride, padding and dilation in ``Concrete Inputs`` (no model without them);
  ``convolution_backward``: that count once for the input gradient and once for the weight
  gradient, as ``output_mask`` asks (as ``torch.utils.flop_counter``);
* scaled dot-product attention (flash, efficient, math, cuDNN, CPU flash, and the
  ``_flash_attention`` / ``_efficient_attention`` kernels under them): 2·B·H·L·S·(E + E_v), the
  two products Q·Kᵀ and P·V, whether causal or not (as ``torch.utils.flop_counter``), H the
  query's heads (grouped-query attention shares key and value heads); its backward
  2·B·H·L·S·(3·E + 2·E_v): Q·Kᵀ recomputed, dP, dV, dQ and dK; variable-length (packed 3-D)
  inputs have no model;
* elementwise binary ops (add, sub, mul, div, maximum, minimum and their in-place forms): one
  FLOP per output element; unary ones (relu, gelu, silu, sigmoid, tanh, exp, log, sqrt, rsqrt,
  neg, abs, reciprocal): one per element, a transcendental counted as one;
* reductions (sum, mean, amax, amin, prod): one FLOP per input element, when the reduced dims are
  recorded (or the op reduces everything);
* softmax and log-softmax: 5 FLOPs per element (max, subtract, exp, sum, divide);
* layer norm: 5 per element (mean, subtract, square, sum, scale by 1/σ), plus one each for the
  weight and the bias; RMS norm: 3 per element (square, sum, scale by 1/rms) plus one for the
  weight; batch norm: in training as layer norm, in eval 2 per element (the running statistics,
  weight and bias folded into one scale and shift per channel).

Bytes are every tensor input read once plus the output written once (a lower bound: what an ideal
kernel moves), in the first input's dtype.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

DTYPE_BYTES = {
    "double": 8,
    "float": 4,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1,
    "long int": 8,
    "int": 4,
    "short int": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
}


@dataclass(frozen=True)
class Inputs:
    """One op instance's inputs: dims, dtype names and concrete values, by position."""

    dims: list[list[int]]
    types: list[str]
    concrete: list[str]

    def tensor(self, i: int) -> list[int] | None:
        """The dims of input ``i`` if it is a tensor of a known dtype (a 0-d tensor has ``[]``)."""
        if i >= len(self.dims) or i >= len(self.types) or self.types[i] not in DTYPE_BYTES:
            return None
        dims = self.dims[i]
        return dims if all(isinstance(d, int) for d in dims) else None

    def element_bytes(self, i: int = 0) -> int:
        return DTYPE_BYTES[self.types[i]]

    def tensor_bytes(self, i: int) -> int:
        dims = self.tensor(i)
        return 0 if dims is None else math.prod(dims) * self.element_bytes(i)

    def value(self, i: int) -> object:
        """Concrete input ``i`` parsed (``"[1, 1]"`` -> [1, 1], ``"False"`` -> False); None if absent."""
        if i >= len(self.concrete) or self.concrete[i] == "":
            return None
        text = self.concrete[i]
        if text in ("True", "False"):
            return text == "True"
        try:  # lists of Python booleans ("[True, False]") as JSON
            return json.loads(text.replace("True", "true").replace("False", "false"))
        except ValueError:
            return None


@dataclass(frozen=True)
class Gemm:
    """The shape of a matrix product: ``batch`` products of [M, K] @ [K, N]."""

    batch: int
    m: int
    n: int
    k: int


@dataclass(frozen=True)
class Cost:
    flops: int
    moved_bytes: int
    dtype: str
    gemm: Gemm | None = None


Model = Callable[[Inputs], Cost | None]


def _mm(x: Inputs, a: int = 0) -> Cost | None:
    lhs, rhs = x.tensor(a), x.tensor(a + 1)
    if lhs is None or rhs is None or len(lhs) != 2 or len(rhs) != 2 or lhs[1] != rhs[0]:
        return None
    (m, k), n = lhs, rhs[1]
    extra = x.tensor_bytes(0) if a else 0
    moved = extra + (m * k + k * n + m * n) * x.element_bytes(a)
    return Cost(2 * m * k * n, moved, x.types[a], Gemm(1, m, n, k))


def _bmm(x: Inputs, a: int = 0) -> Cost | None:
    lhs, rhs = x.tensor(a), x.tensor(a + 1)
    if lhs is None or rhs is None or len(lhs) != 3 or len(rhs) != 3 or lhs[0] != rhs[0] or lhs[2] != rhs[1]:
        return None
    (b, m, k), n = lhs, rhs[2]
    extra = x.tensor_bytes(0) if a else 0
    moved = extra + b * (m * k + k * n + m * n) * x.element_bytes(a)
    return Cost(2 * b * m * k * n, moved, x.types[a], Gemm(b, m, n, k))


def _broadcast(a: list[int], b: list[int]) -> list[int] | None:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        p, q = a[-i] if i <= len(a) else 1, b[-i] if i <= len(b) else 1
        if p != q and 1 not in (p, q):
            return None
        out.append(max(p, q))
    return out[::-1]


def _matmul(x: Inputs) -> Cost | None:
    lhs, rhs = x.tensor(0), x.tensor(1)
    if not lhs or not rhs:
        return None
    a = [1, *lhs] if len(lhs) == 1 else lhs
    b = [*rhs, 1] if len(rhs) == 1 else rhs
    batch = _broadcast(a[:-2], b[:-2])
    if batch is None or a[-1] != b[-2]:
        return None
    m, k, n, count = a[-2], a[-1], b[-1], math.prod(batch)
    moved = (math.prod(lhs) + math.prod(rhs) + count * m * n) * x.element_bytes(0)
    return Cost(2 * count * m * k * n, moved, x.types[0], Gemm(count, m, n, k))


def _linear(x: Inputs) -> Cost | None:
    data, weight = x.tensor(0), x.tensor(1)
    if not data or weight is None or len(weight) != 2 or data[-1] != weight[1]:
        return None
    rows, (n, k) = math.prod(data[:-1]), weight
    moved = x.tensor_bytes(0) + x.tensor_bytes(1) + x.tensor_bytes(2) + rows * n * x.element_bytes(0)
    return Cost(2 * rows * k * n, moved, x.types[0], Gemm(1, rows, n, k))


def _conv(x: Inputs, transposed_at: int | None, groups_at: int) -> Cost | None:
    data, weight, groups = x.tensor(0), x.tensor(1), x.value(groups_at)
    if data is None or weight is None or len(data) < 3 or len(data) != len(weight):
        return None
    if transposed_at is not None and x.value(transposed_at) is not False:
        return None
    spatial = len(data) - 2
    stride, padding, dilation = (_per_dim(x.value(i), spatial) for i in (3, 4, 5))
    if stride is None or padding is None or dilation is None or not isinstance(groups, int) or groups < 1:
        return None
    sizes = zip(data[2:], weight[2:], stride, padding, dilation, strict=True)
    out = math.prod((size + 2 * p - d * (k - 1) - 1) // s + 1 for size, k, s, p, d in sizes)
    n, c_out = data[0], weight[0]
    moved = x.tensor_bytes(0) + x.tensor_bytes(1) + x.tensor_bytes(2) + n * c_out * out * x.element_bytes()
    return Cost(_conv_flops(n, c_out, out, weight), moved, x.types[0])


def _conv_flops(n: int, c_out: int, out_elements: int, weight: list[int]) -> int:
    """2·N·C_out·prod(out)·(C_in/groups)·prod(kernel): weight is [C_out, C_in/groups, *kernel]."""
    return 2 * n * c_out * out_elements * weight[1] * math.prod(weight[2:])


def _conv_backward(x: Inputs) -> Cost | None:
    """``convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask)``: the forward count per gradient asked for."""
    grad, data, weight, mask = x.tensor(0), x.tensor(1), x.tensor(2), x.value(10)
    if grad is None or data is None or weight is None or not len(grad) == len(data) == len(weight) >= 3:
        return None
    if x.value(7) is not False or not isinstance(mask, list) or len(mask) != 3:
        return None
    forward = _conv_flops(grad[0], weight[0], math.prod(grad[2:]), weight)
    read = x.tensor_bytes(0) + x.tensor_bytes(1) + x.tensor_bytes(2)
    written = (mask[0] is True) * x.tensor_bytes(1) + (mask[1] is True) * x.tensor_bytes(2)
    written += (mask[2] is True) * weight[0] * x.element_bytes()
    return Cost(forward * ((mask[0] is True) + (mask[1] is True)), read + written, x.types[0])


def _per_dim(value: object, spatial: int) -> list[int] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * spatial
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return value * spatial if len(value) == 1 else value if len(value) == spatial else None
    return None


def _qkv(x: Inputs, at: int, heads_axis: int = 1) -> tuple[int, int, int, int, int] | None:
    """(B·H, L, S, E, E_v) of query, key and value at ``at``..``at + 2``: [B, H, L or S, E] when
    ``heads_axis`` is 1 (the ``scaled_dot_product`` ops), [B, L or S, H, E] when 2 (the
    ``_flash_attention`` and ``_efficient_attention`` kernels); key and value may have fewer heads
    than the query (grouped-query attention), H is the query's."""
    q, k, v = x.tensor(at), x.tensor(at + 1), x.tensor(at + 2)
    if q is None or k is None or v is None or not len(q) == len(k) == len(v) == 4:
        return None
    seq_axis = 3 - heads_axis
    b, h, length, e = q[0], q[heads_axis], q[seq_axis], q[3]
    s, h_kv, e_v = k[seq_axis], k[heads_axis], v[3]
    if k[3] != e or v[seq_axis] != s or v[heads_axis] != h_kv or not b == k[0] == v[0] or h_kv < 1 or h % h_kv:
        return None
    return b * h, length, s, e, e_v


def _attention(x: Inputs, heads_axis: int = 1) -> Cost | None:
    found = _qkv(x, 0, heads_axis)
    if found is None:
        return None
    heads, length, s, e, e_v = found
    moved = x.tensor_bytes(0) + x.tensor_bytes(1) + x.tensor_bytes(2) + heads * length * e_v * x.element_bytes()
    return Cost(2 * heads * length * s * (e + e_v), moved, x.types[0])


def _attention_backward(x: Inputs, heads_axis: int = 1) -> Cost | None:
    """``(grad_out, query, key, value, ...)``: reads grad_out, Q, K, V and the output (as large as
    grad_out), writes dQ, dK, dV."""
    found = _qkv(x, 1, heads_axis)
    if found is None or x.tensor(0) is None:
        return None
    heads, length, s, e, e_v = found
    moved = 2 * x.tensor_bytes(0) + 2 * (x.tensor_bytes(1) + x.tensor_bytes(2) + x.tensor_bytes(3))
    return Cost(2 * heads * length * s * (3 * e + 2 * e_v), moved, x.types[1])


def _binary(x: Inputs) -> Cost | None:
    a, b = x.tensor(0), x.tensor(1)
    if a is None:
        return None
    out = a if b is None else _broadcast(a, b)
    if out is None:
        return None
    elements = math.prod(out)
    return Cost(elements, x.tensor_bytes(0) + x.tensor_bytes(1) + elements * x.element_bytes(), x.types[0])


def _unary(x: Inputs) -> Cost | None:
    data = x.tensor(0)
    if data is None:
        return None
    elements = math.prod(data)
    return Cost(elements, 2 * elements * x.element_bytes(), x.types[0])


def _reduction(x: Inputs) -> Cost | None:
    """One FLOP per input element; the output's size from the reduced dims (``dim``, ``keepdim``
    at inputs 1 and 2), or one element for a full reduction (``sum(x, dtype)``, ``dim=[]``)."""
    data, dims = x.tensor(0), x.value(1)
    if data is None:
        return None
    elements = math.prod(data)
    if isinstance(dims, int) and not isinstance(dims, bool):
        dims = [dims]
    if dims is None and len(x.dims) <= 2:
        dims = []
    if not isinstance(dims, list) or not all(isinstance(d, int) and -len(data) <= d < len(data) for d in dims):
        return None
    reduced = {d % len(data) for d in dims} if dims and data else set(range(len(data)))
    out = math.prod(size for i, size in enumerate(data) if i not in reduced)
    return Cost(elements, (elements + out) * x.element_bytes(), x.types[0])


def _softmax(x: Inputs) -> Cost | None:
    data = x.tensor(0)
    if data is None:
        return None
    elements = math.prod(data)
    return Cost(5 * elements, 2 * elements * x.element_bytes(), x.types[0])


def _layer_norm(x: Inputs) -> Cost | None:
    data = x.tensor(0)
    if data is None:
        return None
    elements = math.prod(data)
    affine = (x.tensor(2) is not None) + (x.tensor(3) is not None)
    moved = 2 * x.tensor_bytes(0) + x.tensor_bytes(2) + x.tensor_bytes(3)
    return Cost((5 + affine) * elements, moved, x.types[0])


def _rms_norm(x: Inputs) -> Cost | None:
    """``rms_norm(input, normalized_shape, weight, eps)``."""
    data = x.tensor(0)
    if data is None:
        return None
    elements = math.prod(data)
    weighted = x.tensor(2) is not None and x.tensor(2) != []
    return Cost((3 + weighted) * elements, 2 * x.tensor_bytes(0) + x.tensor_bytes(2), x.types[0])


def _batch_norm(x: Inputs) -> Cost | None:
    """``batch_norm(input, weight, bias, running_mean, running_var, training, ...)``: ``training``
    at input 5 decides the count (no model when it is not recorded)."""
    data, training = x.tensor(0), x.value(5)
    if data is None or not isinstance(training, bool):
        return None
    elements = math.prod(data)
    affine = sum(x.tensor(i) not in (None, []) for i in (1, 2))
    moved = 2 * x.tensor_bytes(0) + sum(x.tensor_bytes(i) for i in range(1, 5))
    return Cost((5 + affine if training else 2) * elements, moved, x.types[0])


_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
_UNARY = ("relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "neg", "abs", "reciprocal")
_REDUCTIONS = ("sum", "mean", "amax", "amin", "prod")
_ATTENTION = ("flash_attention", "efficient_attention", "attention_math", "cudnn_attention", "flash_attention_for_cpu")
_BATCH_NORM = ("batch_norm", "native_batch_norm", "_batch_norm_impl_index", "cudnn_batch_norm", "miopen_batch_norm")
MODELS: dict[str, Model] = {
    "aten::mm": _mm,
    "aten::addmm": lambda x: _mm(x, 1),
    "aten::_scaled_mm": _mm,
    "aten::bmm": _bmm,
    "aten::baddbmm": lambda x: _bmm(x, 1),
    "aten::matmul": _matmul,
    "aten::linear": _linear,
    "aten::convolution": lambda x: _conv(x, 6, 8),
    "aten::_convolution": lambda x: _conv(x, 6, 8),
    **{f"aten::conv{d}d": (lambda x: _conv(x, None, 6)) for d in (1, 2, 3)},
    "aten::convolution_backward": _conv_backward,
    "aten::scaled_dot_product_attention": _attention,
    **{f"aten::_scaled_dot_product_{kind}": _attention for kind in _ATTENTION},
    **{f"aten::_scaled_dot_product_{kind}_backward": _attention_backward for kind in _ATTENTION},
    **{f"aten::_{kind}_forward": (lambda x: _attention(x, 2)) for kind in ("flash_attention", "efficient_attention")},
    **{
        f"aten::_{kind}_backward": (lambda x: _attention_backward(x, 2))
        for kind in ("flash_attention", "efficient_attention")
    },
    **{f"aten::{op}{suffix}": _binary for op in _BINARY for suffix in ("", "_")},
    **{f"aten::{op}{suffix}": _unary for op in _UNARY for suffix in ("", "_")},
    **{f"aten::{op}": _reduction for op in _REDUCTIONS},
    **{f"aten::{op}": _softmax for op in ("softmax", "_softmax", "log_softmax", "_log_softmax")},
    "aten::layer_norm": _layer_norm,
    "aten::native_layer_norm": _layer_norm,
    "aten::rms_norm": _rms_norm,
    "aten::_fused_rms_norm": _rms_norm,
    **{f"aten::{op}": _batch_norm for op in _BATCH_NORM},
}


def cost(name: str, dims: str | None, types: str | None, concrete: str | None) -> Cost | None:
    """The cost of one instance of op ``name`` from its args' JSON text; None without a model."""
    model = MODELS.get(name)
    if model is None or not dims or not types:
        return None
    try:
        inputs = Inputs(json.loads(dims), json.loads(types), json.loads(concrete) if concrete else [])
        return model(inputs)
    except (ValueError, TypeError, IndexError):
        return None
