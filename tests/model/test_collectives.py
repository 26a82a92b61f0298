"""Communication kernels of libraries other than NCCL/RCCL, by the model's table of name patterns."""

from __future__ import annotations

import pytest

from kinetoscope.model import collectives

# Kernel names as CUPTI writes them (demangled), from each library's kernel definitions.
LIBRARY_KERNELS = [
    ("void deep_ep::internode_ll::dispatch<false, 3, 7168>(void*, float*, int*, long*, int, int, bool)", "alltoall"),
    ("void deep_ep::internode_ll::combine<8, 3, 7168, 9>(void*, void*, int*, void*, int, int)", "alltoall"),
    ("void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*)", "alltoall"),
    ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*)", "alltoall"),
    ("void deep_ep::internode::combine<false, 2, 7168>(int4*, float*)", "alltoall"),
    ("void deep_ep::intranode::barrier<8>(int**, int)", "barrier"),
    ("rdxn_float_sum_on_stream_kernel", "allreduce"),
    ("broadcast64_on_stream_kernel", "broadcast"),
    ("barrier_on_stream_kernel", "barrier"),
    ("alltoall_on_stream_kernel", "alltoall"),
    ("void allreduce7<(Op)0, __half>(__half*, __half*, mscclpp::DeviceHandle<mscclpp::MemoryChannel>*)", "allreduce"),
    ("void allgather6<false>(void*, mscclpp::DeviceHandle<mscclpp::MemoryChannel>*, unsigned long)", "allgather"),
    ("void mori::moe::EpDispatchIntraNodeKernel<__nv_bfloat16>(mori::moe::EpDispatchCombineArgs<float>)", "alltoall"),
    ("void vllm::cross_device_reduce_1stage<half, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*)", "allreduce"),
    ("multimem_all_gather_kernel", "allgather"),
    ("my_all_to_all_kernel", "alltoall"),
]  # fmt: skip
COMPUTE_KERNELS = [
    "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, bool*, int, int)",
    "void deep_ep::internode_ll::clean_low_latency_buffer<32>(int*, int, int*, int)",
    "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)",
    "fused_moe_kernel",
    "ampere_sgemm_128x64_nn",
]


@pytest.mark.parametrize(("name", "collective"), LIBRARY_KERNELS)
def test_library_kernels_are_communication(name: str, collective: str) -> None:
    assert collectives.spelled(name) == collective


@pytest.mark.parametrize("name", COMPUTE_KERNELS)
def test_their_compute_kernels_are_not(name: str) -> None:
    assert collectives.spelled(name) == ""


def test_user_patterns_are_the_communication_category_s() -> None:
    rules = (("attention", ("my_attn",)), ("communication", ("^my_a2a", "ring_exchange")))
    assert collectives.user_patterns(rules) == ("^my_a2a", "ring_exchange")
