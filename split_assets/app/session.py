"""``Session``: what the shell (a CLI command, a Dagster run) builds once from a config file and
hands, piece by piece, to the core -- the ``Inputs``, the ``Judge`` (None for a stale
partition: no judge is ever built for one) and the ``Partition``.

Nothing under ``split/``, ``evaluation/``, ``diagnosis/``, ``judge/`` or ``data/`` receives a
Session (``tests/test_layout.py``): core functions take the pieces they use. A Session holds no
signal rows and nothing derived from them, so steps sharing one under the in-process executor
never see stale rows."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from split_assets.settings import LoadedConfig, load_config
from split_assets.workspace.inputs import Inputs
from split_assets.workspace.partition import Partition, stale_partition

if TYPE_CHECKING:
    from split_assets.judge import Judge
    from split_assets.split.problem import SplitProblem


class Session:
    """One config's command or run: its inputs, its judge (or None) and its partition (whose
    fingerprint is computed on first use, as a command that needs none never pays for it)."""

    def __init__(self, inputs: Inputs, judge: Judge | None,
                 partition: Partition | None = None) -> None:
        self.inputs, self.judge = inputs, judge
        if partition is not None:
            self.__dict__["partition"] = partition
        self._views: dict[str, Session] = {}

    @classmethod
    def open(cls, config_path: Path | str | None = None) -> Session:
        """Load and validate the config and build its judge now (a bad config fails here, with
        one line; the openai judge starts its TLS context in the background while the inputs
        load)."""
        from split_assets.judge import build_judge

        loaded = load_config(config_path)
        return cls(Inputs(loaded), build_judge(loaded.config.diag))

    @cached_property
    def partition(self) -> Partition:
        """The config's partition: its judge's fingerprint (computed once)."""
        from split_assets.workspace.fingerprint import compute_fingerprint

        return Partition(self.loaded, compute_fingerprint(self.loaded, self.judge))

    @property
    def loaded(self) -> LoadedConfig:
        return self.inputs.loaded

    def for_partition(self, key: str) -> Session:
        """The session of Dagster partition ``key``: this one when it is the config's
        fingerprint; for another (a stale partition), one without a judge that may only
        re-freeze the split from the diagnoses stored under ``key`` (same inputs, read once)."""
        if key == self.partition.key:
            return self
        if key not in self._views:
            stale = stale_partition(self.partition, key, self.inputs.predictions)
            self._views[key] = Session(self.inputs, None, stale)
        return self._views[key]

    def problem(self) -> SplitProblem:
        """The split problem of the partition's signal rows as they are now."""
        return self.inputs.split_problem(self.partition.rows(), self.partition.key)

    def split_inputs(self) -> tuple[SplitProblem, Callable[[], dict[str, str]]]:
        """The split problem of one read of the partition's signal rows, and the digests of
        what it consumed (computed when called: after the selection, whose errors come first)."""
        rows = self.partition.rows()
        return (self.inputs.split_problem(rows, self.partition.key),
                lambda: self.inputs.input_digests(rows, self.partition.fingerprint,
                                                  cached=True))


def feedback_of(config: Path | str | None, candidate: str) -> dict:
    """The Ladder's feedback on the validation pool for ``candidate`` (``split-assets
    feedback``; ``split_assets.api.feedback`` for a loop in Python), recorded in the ledger."""
    from split_assets.evaluation.feedback import feedback

    s = Session.open(config)
    with s.partition.store() as store:
        evaluation = s.loaded.config.evaluation
        return feedback(s.inputs, s.partition, candidate, store, evaluation.feedback_budget,
                        evaluation.control_run)


def feedback_of_answers(config: Path | str | None, candidate: str,
                        answers: dict[str, str], replace: bool = False,
                        register_run: bool = True) -> dict:
    """A candidate's answers held in memory (question id -> its reply, a letter or text read
    by the workspace's letter rule) recorded as run ``candidate`` (role candidate, through the
    import's gate: no answer to a test question without a look), then the Ladder's feedback
    on it: ``split_assets.api.feedback_answers`` (``register_run`` False: the run is not
    listed in the config, as an optimizer's candidates are not: ``split_assets.loops``)."""
    from split_assets.app.import_gate import import_gate
    from split_assets.errors import UserError
    from split_assets.importing.workspace_runs import finish_import
    from split_assets.importing.workspace_setup import HARNESS_DB, Answer

    loaded = load_config(config)
    workspace = loaded.path.parent
    if loaded.paths.harness_db != workspace / HARNESS_DB:
        raise UserError(f"the harness db {loaded.paths.harness_db} is not {HARNESS_DB} beside "
                        "the config", str(loaded.path), "record the run with split-assets "
                        "import predictions --workspace <the harness db's folder>")
    if not answers or not all(isinstance(k, str) and isinstance(v, str)
                              for k, v in answers.items()):
        raise UserError("the answers are empty or not question id -> reply strings",
                        "answers", "pass a dict such as {'001-1': 'B'}")
    finish_import(Path("<python>"), candidate, workspace,
                  {q: Answer(None, text, None) for q, text in answers.items()},
                  replace=replace, partial=True, role="candidate", built=None,
                  gate=import_gate(workspace), register_run=register_run)
    return feedback_of(loaded.path, candidate)
