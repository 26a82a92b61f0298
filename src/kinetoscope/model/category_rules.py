"""Op and kernel categories: the built-in name patterns, as data, decided here once.

``RULES`` lists, in order, each category and the regular expressions (searched anywhere in the
name, case-insensitive) that put an op or a kernel in it; the first category with a matching
pattern wins, and a name that matches none is ``other``. Users' own patterns (``--categories``)
are tried before these when a dataset is read (``analysis.settings.categories``).
"""

from __future__ import annotations

OTHER = "other"
COMMUNICATION = "communication"
MEMORY = "memory copy/set"

Rules = tuple[tuple[str, tuple[str, ...]], ...]
RULES: Rules = (
    (
        COMMUNICATION,
        (
            r"nccl",
            r"rccl",
            r"^gloo:",
            r"c10d",
            r"all_?reduce",
            r"all_?gather",
            r"reduce_?scatter",
            r"all_?to_?all",
            r"broadcast_?kernel",
            r"record_param_comms",
            r"multimem_",
        ),
    ),
    (MEMORY, (r"^memcpy", r"^memset", r"aten::copy_", r"aten::fill_", r"aten::zero_", r"aten::_to_copy")),
    ("attention", (r"attention", r"attn", r"^flash", r"fmha", r"sdpa")),
    ("Triton/compiled", (r"^triton", r"compiledfunction", r"compiledfxgraph", r"torch_compile", r"inductor")),
    ("convolution", (r"conv(olution|_?transpose|\d|_)", r"cudnn_conv", r"implicit_?gemm", r"winograd", r"miopen")),
    (
        "GEMM",
        (
            r"aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|addmv|mv|dot)$",
            r"gemm",
            r"gemv",
            r"cublas",
            r"cutlass",
            r"hipblas",
            r"rocblas",
            r"ampere_.*(sgemm|hgemm|bf16)",
            r"nvjet",
            r"Cijk_",
        ),
    ),
    ("normalisation", (r"(layer|group|batch|instance|rms)_?norm", r"native_\w*norm", r"welford")),
    (
        "reduction",
        (
            r"aten::(sum|mean|max|min|amax|amin|argmax|argmin|prod|var|std|softmax|_softmax|log_softmax|"
            r"_log_softmax|cumsum|logsumexp|norm)\b",
            r"reduce",
            r"softmax",
            r"cub::",
        ),
    ),
    (
        "elementwise",
        (
            r"elementwise",
            r"vectorized",
            r"unrolled_elementwise",
            r"aten::(add|sub|mul|div|relu|gelu|silu|"
            r"sigmoid|tanh|exp|log|sqrt|rsqrt|pow|neg|abs|where|clamp|threshold|dropout|addcmul|addcdiv|"
            r"lerp|maximum|minimum)_?$",
            r"_foreach_",
        ),
    ),
)
CATEGORIES = (*(name for name, _ in RULES), OTHER)
