"""FLOPs and bytes of each modelled op, computed by hand here, and no model for the rest."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kinetoscope.analysis.roofline import device_peaks, flops
from kinetoscope.analysis.roofline import device_peaks as devices
from kinetoscope.analysis.settings.user_options import UserOptions, using

F = "float"


def cost(name: str, dims: list, types: list[str], concrete: list[str] | None = None) -> flops.Cost | None:
    return flops.cost(name, json.dumps(dims), json.dumps(types), json.dumps(concrete) if concrete else None)


@pytest.mark.parametrize(
    ("name", "dims", "types", "concrete", "expected_flops", "expected_bytes"),
    [
        # [4,8] @ [8,16]: 2*4*8*16 = 1024; (32 + 128 + 64) floats
        ("aten::mm", [[4, 8], [8, 16]], [F, F], None, 1024, 224 * 4),
        # bias [16] read too, its add not counted (as torch)
        ("aten::addmm", [[16], [4, 8], [8, 16]], [F, F, F], None, 1024, (16 + 224) * 4),
        # 3 x ([2,5] @ [5,7]): 2*3*2*5*7 = 420; 3*(10 + 35 + 14) halves
        ("aten::bmm", [[3, 2, 5], [3, 5, 7]], ["c10::Half"] * 2, None, 420, 3 * 59 * 2),
        ("aten::baddbmm", [[3, 2, 7], [3, 2, 5], [3, 5, 7]], [F] * 3, None, 420, (42 + 3 * 59) * 4),
        # [2,1,4,8] @ [3,8,5] broadcasts to 2*3 products of 4x8x5: 2*6*4*8*5 = 1920
        ("aten::matmul", [[2, 1, 4, 8], [3, 8, 5]], [F, F], None, 1920, (64 + 120 + 6 * 20) * 4),
        ("aten::matmul", [[8], [8, 5]], [F, F], None, 80, (8 + 40 + 5) * 4),
        # x [2,3,8] through a Linear(8, 16): 2*6*8*16 = 1536; x 48 + w 128 + b 16 + out 96
        ("aten::linear", [[2, 3, 8], [16, 8], [16]], [F, F, F], None, 1536, (48 + 128 + 16 + 96) * 4),
        # conv2d x [1,3,8,8], w [4,3,3,3], stride 1, pad 1 -> out [1,4,8,8]: 2*4*64*3*9 = 13824
        (
            "aten::convolution",
            [[1, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], [], [], []],
            [F, F, F, "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
            ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"],
            13824,
            (192 + 108 + 4 + 256) * 4,
        ),
        # stride 2, no padding, 2 groups: x [2,4,9,9], w [6,2,3,3] -> out [2,6,4,4]: 2*2*6*16*2*9 = 6912
        (
            "aten::conv2d",
            [[2, 4, 9, 9], [6, 2, 3, 3], [], [], [], [], []],
            [F, F, "", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
            ["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "2"],
            6912,
            (648 + 108 + 192) * 4,
        ),
        # q [2,4,16,8], k/v [2,4,32,8]: 2*2*4*16*32*(8+8) = 131072; q 1024 + k 2048 + v 2048 + out 1024
        (
            "aten::_scaled_dot_product_flash_attention",
            [[2, 4, 16, 8], [2, 4, 32, 8], [2, 4, 32, 8], [], [], [], []],
            ["c10::BFloat16"] * 3 + ["Scalar", "Scalar", "Scalar", ""],
            None,
            131072,
            6144 * 2,
        ),
        (
            "aten::_scaled_dot_product_efficient_attention",
            [[1, 2, 4, 8], [1, 2, 6, 8], [1, 2, 6, 8], [], []],
            [F, F, F, "", "Scalar"],
            None,
            2 * 1 * 2 * 4 * 6 * 16,
            (64 + 96 + 96 + 64) * 4,
        ),
        # [4,1] + [1,5] broadcasts to 20 elements: 20 FLOPs; 4 + 5 read, 20 written
        ("aten::add", [[4, 1], [1, 5], []], [F, F, "Scalar"], None, 20, 29 * 4),
        ("aten::mul_", [[6], []], [F, "Scalar"], None, 6, 12 * 4),
        ("aten::_softmax", [[2, 10], [], []], [F, "Scalar", "Scalar"], None, 100, 40 * 4),
        # 5 per element + weight + bias: 7 * 24; input read, output written, weight and bias read
        (
            "aten::layer_norm",
            [[4, 6], [], [6], [6], [], []],
            [F, "ScalarList", F, F, "Scalar", "Scalar"],
            None,
            168,
            (48 + 12) * 4,
        ),
        # fp8 [16,32] @ [32,8] with two scales: 2*16*32*8 = 8192; one byte an element, scales not counted
        (
            "aten::_scaled_mm",
            [[16, 32], [32, 8], [], [], [], [], [], []],
            ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", F, F, "", "", "ScalarType", "Scalar"],
            None,
            8192,
            16 * 32 + 32 * 8 + 16 * 8,
        ),
        # grad_out [2,4,8,8], x [2,3,8,8], w [4,3,3,3]: the forward count 2*2*4*64*3*9 = 27648 for dx and dw;
        # reads grad_out 512 + x 384 + w 108, writes dx 384 + dw 108 + db 4
        (
            "aten::convolution_backward",
            [[2, 4, 8, 8], [2, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], [], [], [], []],
            [F, F, F, "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar", ""],
            ["", "", "", "[4]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, True]"],
            2 * 27648,
            (512 + 384 + 108 + 384 + 108 + 4) * 4,
        ),
        # only the input gradient asked for: one forward count, dx written
        (
            "aten::convolution_backward",
            [[2, 4, 8, 8], [2, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], [], [], [], []],
            [F, F, F, "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar", ""],
            ["", "", "", "[4]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, False, False]"],
            27648,
            (512 + 384 + 108 + 384) * 4,
        ),
        # backward of q [2,4,16,8], k/v [2,4,32,8]: 2*8*16*32*(3*8 + 2*8) = 327680;
        # grad_out and out 1024 each, q 1024, k 2048, v 2048 read and their gradients written
        (
            "aten::_scaled_dot_product_flash_attention_backward",
            [[2, 4, 16, 8], [2, 4, 16, 8], [2, 4, 32, 8], [2, 4, 32, 8], [2, 4, 16, 8], [2, 4, 16], [], []],
            ["c10::BFloat16"] * 5 + [F, "", ""],
            None,
            327680,
            (2 * 1024 + 2 * (1024 + 2048 + 2048)) * 2,
        ),
        # the flash kernel's [B, L, H, E] layout, 8 query heads sharing 2 key/value heads:
        # q [2,16,8,8], k/v [2,32,2,8]: 2*(2*8)*16*32*(8+8) = 262144; q 2048 + k 1024 + v 1024 + out 2048
        (
            "aten::_flash_attention_forward",
            [[2, 16, 8, 8], [2, 32, 2, 8], [2, 32, 2, 8], [], [], [], []],
            ["c10::BFloat16"] * 3 + ["", "", "Scalar", "Scalar"],
            None,
            262144,
            (2048 + 1024 + 1024 + 2048) * 2,
        ),
        (
            "aten::_efficient_attention_backward",
            [[2, 16, 8, 8], [2, 16, 8, 8], [2, 32, 2, 8], [2, 32, 2, 8], [], [2, 16, 8, 8]],
            ["c10::Half"] * 4 + ["", "c10::Half"],
            None,
            2 * 16 * 16 * 32 * (3 * 8 + 2 * 8),
            (2 * 2048 + 2 * (2048 + 1024 + 1024)) * 2,
        ),
        ("aten::gelu", [[4, 6], []], [F, ""], None, 24, 48 * 4),
        # full sum of [8,16]: 128 adds, 128 read and 1 written; over dim 1 with keepdim: 8 written
        ("aten::sum", [[8, 16], []], [F, ""], ["", ""], 128, 129 * 4),
        ("aten::sum", [[8, 16], [], [], [], [8, 1]], [F, "", "", "", F], ["", "[1]", "True", "6", ""], 128, 136 * 4),
        ("aten::mean", [[2, 3, 4], [], [], []], [F, "", "", ""], ["", "[-1, 0]", "False", ""], 24, 27 * 4),
        # rms norm of [8,16] with a weight [16]: 4 per element; input read, output written, weight read
        ("aten::rms_norm", [[8, 16], [], [16], []], [F, "ScalarList", F, "Scalar"], None, 512, (256 + 16) * 4),
        ("aten::_fused_rms_norm", [[8, 16], [], [], []], [F, "ScalarList", "", "Scalar"], None, 384, 256 * 4),
        # batch norm [2,4,8,8] training with weight and bias: 7 per element; x read, y written, 4 vectors of 4 read
        (
            "aten::native_batch_norm",
            [[2, 4, 8, 8], [4], [4], [4], [4], [], [], []],
            [F, F, F, F, F, "Scalar", "Scalar", "Scalar"],
            ["", "", "", "", "", "True", "0.1", "1e-05"],
            7 * 512,
            (1024 + 16) * 4,
        ),
        (
            "aten::batch_norm",
            [[2, 4, 8, 8], [4], [4], [4], [4], [], [], [], []],
            [F, F, F, F, F, "Scalar", "Scalar", "Scalar", "Scalar"],
            ["", "", "", "", "", "False", "0.1", "1e-05", "True"],
            2 * 512,
            (1024 + 16) * 4,
        ),
    ],
)
def test_modelled_ops(
    *, name: str, dims: list, types: list[str], concrete: list[str] | None, expected_flops: int, expected_bytes: int
) -> None:
    found = cost(name, dims, types, concrete)
    assert found is not None
    assert (found.flops, found.moved_bytes) == (expected_flops, expected_bytes)


def test_no_model_is_never_a_guess() -> None:
    assert cost("aten::cat", [[2, 3], []], ["TensorList", "Scalar"]) is None  # not modelled
    assert cost("aten::mm", [[4, 8], [7, 16]], [F, F]) is None  # inner dims disagree
    assert cost("aten::mm", [[4, 8], [8, 16]], ["TensorList", F]) is None  # not a tensor of a known dtype
    conv = [[1, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], [], [], []]
    assert cost("aten::convolution", conv, [F] * 3 + [""] * 6) is None  # no stride or padding recorded
    transposed = ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"]
    assert cost("aten::convolution", conv, [F] * 3 + [""] * 6, transposed) is None  # backward-like: no model
    assert flops.cost("aten::mm", None, None, None) is None  # shapes not recorded
    assert cost("aten::sum", [[8, 16], [], [], []], [F, "", "", ""]) is None  # reduced dims not recorded
    assert cost("aten::batch_norm", [[2, 4, 8, 8], [4], [4], [4], [4]], [F] * 5) is None  # training not recorded
    grads = [[2, 4, 8, 8], [2, 3, 8, 8], [4, 3, 3, 3]] + [[]] * 8
    no_mask = ["", "", "", "[4]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", ""]
    assert cost("aten::convolution_backward", grads, [F] * 3 + [""] * 8, no_mask) is None
    assert cost("aten::_scaled_dot_product_efficient_attention_backward", [[2, 4, 16, 8]], [F]) is None
    packed = [[64, 8, 16], [64, 8, 16], [64, 8, 16], [], [], [3], [3]]  # variable-length: per-sequence lengths unknown
    assert cost("aten::_flash_attention_forward", packed, [F] * 3 + ["", "", "long int", "long int"]) is None
    three_heads = [[2, 4, 16, 8], [2, 3, 16, 8], [2, 3, 16, 8]]  # 4 query heads do not share 3 key heads
    assert cost("aten::scaled_dot_product_attention", three_heads, [F] * 3) is None


def test_gemm_shapes_are_kept() -> None:
    # GIVEN the matrix products, WHEN costed, THEN batch, M, N, K are those of the product torch runs
    linear = cost("aten::linear", [[2, 3, 8], [16, 8], [16]], [F, F, F])
    bmm = cost("aten::bmm", [[3, 2, 5], [3, 5, 7]], [F, F])
    assert linear is not None and linear.gemm == flops.Gemm(batch=1, m=6, n=16, k=8)
    assert bmm is not None and bmm.gemm == flops.Gemm(batch=3, m=2, n=7, k=5)
    add = cost("aten::add", [[4, 1], [1, 5], []], [F, F, "Scalar"])
    assert add is not None and add.gemm is None


def test_device_names_pick_their_datasheet_entry() -> None:
    picked = {
        name: device_peaks.pick(name)
        for name in (
            "NVIDIA H100 80GB HBM3",
            "NVIDIA A100-SXM4-80GB",
            "NVIDIA A100-PG509-200",
            "Tesla V100-SXM2-32GB",
            "NVIDIA H100 PCIe",
            "NVIDIA H100 NVL",
            "NVIDIA H200",
            "NVIDIA H200 NVL",
            "NVIDIA B200",
            "NVIDIA GB200",
            "NVIDIA A100 80GB PCIe",
            "AMD Instinct MI300X",
            "AMD Radeon Graphics",
        )
    }
    assert {k: (v.name if v else None) for k, v in picked.items()} == {
        "NVIDIA H100 80GB HBM3": "H100 SXM",
        "NVIDIA A100-SXM4-80GB": "A100 SXM 80GB",
        "NVIDIA A100-PG509-200": "A100 SXM 40GB",
        "Tesla V100-SXM2-32GB": "V100 SXM2",
        "NVIDIA H100 PCIe": "H100 PCIe",
        "NVIDIA H100 NVL": "H100 NVL",
        "NVIDIA H200": "H200 SXM",
        "NVIDIA H200 NVL": "H200 NVL",
        "NVIDIA B200": "B200",
        "NVIDIA GB200": None,  # not an HGX B200: its figures differ
        "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
        "AMD Instinct MI300X": "MI300X",
        "AMD Radeon Graphics": None,  # ROCm's name for an MI250 GCD, and others
    }
    assert all(device.source for device in devices.DEVICES)
    with using(UserOptions(device=devices.named("MI250X"))):
        chosen = devices.pick("AMD Radeon Graphics")
    assert chosen is not None and chosen.memory_tb_per_s == 3.2768 / 2  # one GCD of the package


def test_a_device_file_overrides_the_table(tmp_path: Path) -> None:
    # GIVEN a TOML file of a device's peaks, WHEN named as the user's device, THEN it is the rank's device
    toml = tmp_path / "gpu.toml"
    toml.write_text('name = "lab GPU"\nfp32_tflops = 20.0\nbf16_fp16_tflops = 300.0\nmemory_tb_per_s = 1.5\n')
    with using(UserOptions(device=devices.named(str(toml)))):
        chosen = devices.pick("NVIDIA H100 80GB HBM3")
    assert chosen == devices.Device("lab GPU", 20.0, None, 300.0, None, 1.5, f"user file {toml}")
    # a file with a wrong field, a missing one or a bad value is an error naming the file and the field
    for text, said in [
        ('{"name": "x", "fp32_tflop": 1, "memory_tb_per_s": 1}', "unknown fields ['fp32_tflop']"),
        ('{"name": "x", "fp32_tflops": 1}', "missing fields ['memory_tb_per_s']"),
        ('{"name": "x", "fp32_tflops": "fast", "memory_tb_per_s": 1}', "wrong: ['fp32_tflops']"),
        ("{not json", "not a readable device file"),
    ]:
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ValueError, match=re.escape(said)) as raised:
            devices.named(str(bad))
        assert str(bad) in str(raised.value)
