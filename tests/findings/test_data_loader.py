"""The data_loader_bound rule on real CPU captures: a single-process DataLoader over a slow dataset,
and the same steps fed from a tensor already in memory."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from kinetoscope.findings import RULES, run_rules

from .test_captured_rules import STEPS, capture

pytestmark = pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup")
BATCH = 4
SLEEP_S = 0.005


class SlowDataset(Dataset[torch.Tensor]):
    """Each item sleeps ``SLEEP_S``: decoding or reading from a slow disk."""

    def __len__(self) -> int:
        return BATCH * (STEPS + 1)

    def __getitem__(self, index: int) -> torch.Tensor:
        time.sleep(SLEEP_S)
        return torch.full((8,), float(index))


def test_a_single_process_loader_over_a_slow_dataset_is_named(tmp_path: Path) -> None:
    # GIVEN steps that each take their batch from a num_workers=0 DataLoader whose items sleep 5 ms
    model = torch.nn.Linear(8, 8)
    batches = iter(DataLoader(SlowDataset(), batch_size=BATCH, num_workers=0))
    tables = capture(tmp_path, lambda: model(next(batches)).sum())
    (found,) = run_rules(tables, rules=[RULES["data_loader_bound"]])
    # THEN one batch per step, loaded in the step's thread, and at least the sleeps' time counted
    assert found.seen["batches"] == STEPS and found.seen["single_process"] is True
    assert found.seen["iterators"][0]["name"] == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert found.gain_ns == found.seen["loader_ns"] >= STEPS * BATCH * SLEEP_S * 1e9
    assert found.seen["loader_ns"] <= found.seen["step_ns"] and len(found.evidence) == STEPS
    assert "num_workers" in found.remedy


def test_steps_fed_from_memory_are_silent(tmp_path: Path) -> None:
    # GIVEN the same steps, the batch already a tensor
    model = torch.nn.Linear(8, 8)
    x = torch.randn(BATCH, 8)
    tables = capture(tmp_path, lambda: model(x).sum())
    # THEN no loader finding even with its share threshold at zero
    assert run_rules(tables, {"data_loader_bound": {"min_loader_pct": 0}}, [RULES["data_loader_bound"]]) == []


def test_one_worker_too_slow_for_the_steps_is_waited_for(tmp_path: Path) -> None:
    # GIVEN one DataLoader worker loading the slow items, the step only taking the batch
    model = torch.nn.Linear(8, 8)
    batches = iter(DataLoader(SlowDataset(), batch_size=BATCH, num_workers=1, prefetch_factor=1))
    tables = capture(tmp_path, lambda: model(next(batches)).sum())
    (found,) = run_rules(tables, {"data_loader_bound": {"min_loader_pct": 0}}, [RULES["data_loader_bound"]])
    # THEN the finding says the step waits for workers, not that it loads in its own thread
    assert found.seen["batches"] == STEPS and found.seen["single_process"] is False
    assert found.seen["iterators"][0]["name"] == "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    assert "waiting for DataLoader workers" in found.summary
