"""A diagnosis pass reads traces a window ahead: a harness db's traces table rarely has an
index, so every read is a scan of the whole table, and one scan must serve many batches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from split_assets.app.session import Session
from split_assets.diagnosis.cases import CaseSource
from split_assets.diagnosis.plan import wrong_to_diagnose
from split_assets.sources import harness_traces


def test_one_read_serves_the_batches_of_its_window(small_workspace: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    ws = Session.open(small_workspace)
    wrong = wrong_to_diagnose(ws.inputs.predictions)
    assert len(wrong) > 60
    reads: list[list[str]] = []
    real = harness_traces.load_traces

    def counting(db: Path, run_id: str, ids: Any) -> Any:
        reads.append(list(ids))
        return real(db, run_id, ids)

    monkeypatch.setattr(harness_traces, "load_traces", counting)
    monkeypatch.setattr(CaseSource, "TRACE_WINDOW", 20)
    source = CaseSource(ws.inputs, wrong, batched=True)
    source.load(wrong[0:8])
    source.load(wrong[10:18])  # claimed after another worker took 8..9: still in the window
    assert len(reads) == 1
    source.load(wrong[24:32])  # past the window: the next one, from 24 on
    assert len(reads) == 2 and {p.question_id for p in wrong[24:44]} <= set(reads[1])
    source.load([wrong[-1]])  # a question far ahead (a lease taken over) is read too
    assert len(reads) == 3 and wrong[-1].question_id in reads[2]

    # what a batch holds is each question's own trace, as the up-front read gives it
    up_front = CaseSource(ws.inputs, wrong)
    for p in wrong[0:8] + wrong[10:18] + wrong[24:32] + [wrong[-1]]:
        assert source.traces[p.question_id] == up_front.traces[p.question_id]
        assert source.traces[p.question_id]
